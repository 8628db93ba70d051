import type { Database } from "better-sqlite3";
import { z } from "zod";
import { check, LeverError } from "../util/errors.js";
import { canonicalJson, hashValue } from "../util/hash.js";
import { NAME_PATTERN } from "./datasets.js";
import { isStale, toHolder } from "./leases.js";
import type {
  ArtifactRef,
  MetricRecord,
  MetricRow,
  RunInput,
  RunRecord,
  RunStatus,
  StageRecord,
  StageStatus,
} from "./types.js";

const ArtifactsSchema = z.array(z.object({ path: z.string(), sha256: z.string() }));

interface RunRow {
  id: string;
  kind: string;
  name: string | null;
  config: string;
  config_hash: string;
  seed: number;
  status: StageStatus;
  parent_run: string | null;
  created_at: string;
  finished_at: string | null;
  error: string | null;
  /** From the run's lease, when a process holds (or held and died holding) it. */
  pid: number | null;
  host: string | null;
  lease_started_at: string | null;
  heartbeat_at: string | null;
}

/** Runs with their lease (if any); a WHERE clause may follow. */
const SELECT_RUNS = `SELECT runs.*, leases.pid, leases.host, leases.started_at AS lease_started_at, leases.heartbeat_at
  FROM runs LEFT JOIN leases ON leases.run = runs.id`;

function toRun(row: RunRow): RunRecord {
  const holder =
    row.pid === null
      ? null
      : toHolder({
          pid: row.pid,
          host: row.host!,
          started_at: row.lease_started_at!,
          heartbeat_at: row.heartbeat_at!,
        });
  // Unfinished and no live process works on it: its holder died, or let it go unfinished (Ctrl-C).
  const interrupted = row.status === "running" && (holder === null || isStale(holder));
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    config: JSON.parse(row.config),
    configHash: row.config_hash,
    seed: row.seed,
    status: interrupted ? "interrupted" : row.status,
    parentRunId: row.parent_run,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    error: row.error,
    holder,
  };
}

/** The shape of every run id, `<kind>-NNNN` (`sft-0003`): a name of that shape would lose to the id. */
const RUN_ID_SHAPE = /^[a-z]+-\d{4,}$/;

/**
 * A run's name (`--name`, `eval --run`): one every run reference can name — a safe name (no space, no
 * `:` that would read as RUN:best|last|epoch-N, no `/` that would read as RUN/RETRIEVER) that is not
 * shaped like a run id.
 */
export const RunNameSchema = z
  .string()
  .regex(
    NAME_PATTERN,
    "a run name is letters, digits, '.', '_' and '-', starting with a letter or digit (no ':', '/' or spaces)",
  )
  .refine((name) => !RUN_ID_SHAPE.test(name), "a run name must not look like a run id (<kind>-NNNN); choose another");

/**
 * Starts a run record with its resolved config (canonical JSON) and config hash. Ids are
 * `<kind>-<NNNN>` from a never-reused sequence: readable, unique, and free of randomness.
 */
export function createRun(db: Database, input: RunInput): string {
  check(NAME_PATTERN.test(input.kind), `run kind "${input.kind}" must match ${NAME_PATTERN}`, { field: "kind" });
  check(Number.isSafeInteger(input.seed), `seed must be an integer, got ${input.seed}`, { field: "seed" });
  const config = canonicalJson(input.config);
  const configHash = hashValue(input.config);
  return db
    .transaction(() => {
      if (input.parentRunId !== undefined) requireRun(db, input.parentRunId);
      const last = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'runs'").get() as
        | { seq: number }
        | undefined;
      const seq = (last?.seq ?? 0) + 1;
      const id = `${input.kind}-${String(seq).padStart(4, "0")}`;
      db.prepare(
        `INSERT INTO runs (seq, id, kind, name, config, config_hash, seed, status, parent_run, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)`,
      ).run(
        seq,
        id,
        input.kind,
        input.name ?? null,
        config,
        configHash,
        input.seed,
        input.parentRunId ?? null,
        new Date().toISOString(),
      );
      return id;
    })
    .immediate();
}

export function getRun(db: Database, id: string): RunRecord | undefined {
  const row = db.prepare(`${SELECT_RUNS} WHERE runs.id = ?`).get(id) as RunRow | undefined;
  return row === undefined ? undefined : toRun(row);
}

export function requireRun(db: Database, id: string): RunRecord {
  const run = getRun(db, id);
  if (run === undefined) throw new LeverError(`no run "${id}" in this workspace`, { field: "run" });
  return run;
}

/** Runs in creation order, optionally only those of one kind / config hash / status (as read: "interrupted" too). */
export function listRuns(
  db: Database,
  filter: { kind?: string; configHash?: string; status?: RunStatus } = {},
): RunRecord[] {
  const rows = db
    .prepare(
      `${SELECT_RUNS} WHERE (@kind IS NULL OR kind = @kind) AND (@hash IS NULL OR config_hash = @hash) ORDER BY seq`,
    )
    .all({ kind: filter.kind ?? null, hash: filter.configHash ?? null }) as RunRow[];
  const all = rows.map(toRun);
  return filter.status === undefined ? all : all.filter((run) => run.status === filter.status);
}

/** Records the files a run reads (stored artefact paths), so they are never replaced under it. */
export function recordRunInputs(db: Database, runId: string, inputs: readonly ArtifactRef[]): void {
  const insert = db.prepare("INSERT OR REPLACE INTO run_inputs (run, path, sha256) VALUES (?, ?, ?)");
  db.transaction(() => {
    for (const input of inputs) insert.run(runId, input.path, input.sha256);
  }).immediate();
}

/** Ids of the runs that read the file stored as `path`, in creation order. */
export function runsReading(db: Database, path: string): string[] {
  return db
    .prepare("SELECT runs.id FROM run_inputs JOIN runs ON runs.id = run_inputs.run WHERE path = ? ORDER BY runs.seq")
    .pluck()
    .all(path) as string[];
}

/**
 * Ids of the runs that read a dataset, in creation order: those whose config names it — as beams,
 * rollouts and evaluation runs record their datasets (`dataset.name`, `index.name`), SFT its `dataset`
 * and RCE/GRPO `inputs.dataset` — and those that read one of its embeddings.
 */
export function runsReadingDataset(db: Database, name: string): string[] {
  return db
    .prepare(
      `SELECT id FROM runs WHERE json_extract(config, '$.dataset.name') = @name
         OR json_extract(config, '$.index.name') = @name OR json_extract(config, '$.dataset') = @name
         OR json_extract(config, '$.inputs.dataset') = @name
         OR id IN (SELECT run FROM run_inputs WHERE substr(path, 1, length(@prefix)) = @prefix)
       ORDER BY seq`,
    )
    .pluck()
    .all({ name, prefix: `embeddings/${name}/` }) as string[];
}

/**
 * Ids of the runs that read an embedding (stored at `path`), in creation order: beams, rollouts and
 * evaluation runs record its sha256 under `embeddings["<dataset>/<kind>"]`, training runs its file.
 */
export function runsReadingEmbedding(db: Database, dataset: string, kind: string, path: string): string[] {
  return db
    .prepare(
      `SELECT id FROM runs WHERE json_type(config, '$.embeddings."' || @key || '"') IS NOT NULL
         OR id IN (SELECT run FROM run_inputs WHERE path = @path)
       ORDER BY seq`,
    )
    .pluck()
    .all({ key: `${dataset}/${kind}`, path }) as string[];
}

export function finishRun(db: Database, id: string, status: "done" | "failed", error?: string): void {
  const changes = db
    .prepare("UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE id = ?")
    .run(status, new Date().toISOString(), error ?? null, id).changes;
  if (changes === 0) throw new LeverError(`no run "${id}" in this workspace`, { field: "run" });
}

/** Takes a run's name away (its id still names it), so a new run can have the name alone. */
export function clearRunName(db: Database, id: string): void {
  db.prepare("UPDATE runs SET name = NULL WHERE id = ?").run(id);
}

interface StageRow {
  run: string;
  name: string;
  status: StageStatus;
  progress_done: number;
  progress_total: number;
  artifacts: string;
  started_at: string;
  finished_at: string | null;
  error: string | null;
}

function toStage(row: StageRow): StageRecord {
  return {
    runId: row.run,
    name: row.name,
    status: row.status,
    progressDone: row.progress_done,
    progressTotal: row.progress_total,
    artifacts: ArtifactsSchema.parse(JSON.parse(row.artifacts)),
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    error: row.error,
  };
}

export function getStage(db: Database, runId: string, name: string): StageRecord | undefined {
  const row = db.prepare("SELECT * FROM stages WHERE run = ? AND name = ?").get(runId, name) as StageRow | undefined;
  return row === undefined ? undefined : toStage(row);
}

export function listStages(db: Database, runId: string): StageRecord[] {
  const rows = db.prepare("SELECT * FROM stages WHERE run = ? ORDER BY started_at, name").all(runId) as StageRow[];
  return rows.map(toStage);
}

/**
 * Marks a stage as running, and its run running again (a failed or finished run that works again is
 * neither). A stage that was interrupted (still "running") or failed is simply restarted; a finished
 * one is only restarted with `restart: true`, so finished work is never silently redone or overwritten.
 */
export function beginStage(db: Database, runId: string, name: string, options: { restart?: boolean } = {}): void {
  db.transaction(() => {
    requireRun(db, runId);
    const existing = getStage(db, runId, name);
    if (existing?.status === "done" && !options.restart) {
      throw new LeverError(`stage "${name}" of run ${runId} is already done`, { record: runId, field: name });
    }
    db.prepare(
      `INSERT OR REPLACE INTO stages (run, name, status, progress_done, progress_total, artifacts, started_at, finished_at, error)
       VALUES (?, ?, 'running', 0, 0, '[]', ?, NULL, NULL)`,
    ).run(runId, name, new Date().toISOString());
    db.prepare("UPDATE runs SET status = 'running', finished_at = NULL, error = NULL WHERE id = ?").run(runId);
  }).immediate();
}

function requireRunningStage(db: Database, runId: string, name: string): StageRecord {
  const stage = getStage(db, runId, name);
  if (stage === undefined || stage.status !== "running") {
    throw new LeverError(`stage "${name}" of run ${runId} is not running (${stage?.status ?? "not started"})`, {
      record: runId,
      field: name,
    });
  }
  return stage;
}

export function updateStageProgress(db: Database, runId: string, name: string, done: number, total: number): void {
  db.transaction(() => {
    requireRunningStage(db, runId, name);
    db.prepare("UPDATE stages SET progress_done = ?, progress_total = ? WHERE run = ? AND name = ?").run(
      done,
      total,
      runId,
      name,
    );
  }).immediate();
}

/**
 * Marks a stage done with the artefacts it produced. Call only after the files are durably
 * written; Workspace.completeStage re-hashes each file before calling this.
 */
export function completeStage(db: Database, runId: string, name: string, artifacts: ArtifactRef[]): void {
  db.transaction(() => {
    const stage = requireRunningStage(db, runId, name);
    db.prepare(
      `UPDATE stages SET status = 'done', artifacts = ?, progress_done = MAX(progress_done, progress_total),
       finished_at = ?, error = NULL WHERE run = ? AND name = ?`,
    ).run(JSON.stringify(artifacts), new Date().toISOString(), stage.runId, stage.name);
  }).immediate();
}

export function failStage(db: Database, runId: string, name: string, error: string): void {
  db.prepare("UPDATE stages SET status = 'failed', finished_at = ?, error = ? WHERE run = ? AND name = ?").run(
    new Date().toISOString(),
    error,
    runId,
    name,
  );
}

interface MetricDbRow {
  run: string;
  stage: string;
  step: number | null;
  epoch: number | null;
  name: string;
  /** NULL stands for NaN (SQLite has no NaN); a diverged loss stays visible as NaN. */
  value: number | null;
  created_at: string;
}

export function logMetrics(db: Database, rows: readonly MetricRow[]): void {
  const insert = db.prepare(
    "INSERT INTO metrics (run, stage, step, epoch, name, value, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  );
  const now = new Date().toISOString();
  db.transaction(() => {
    for (const [i, row] of rows.entries()) {
      check(typeof row.value === "number", "metric value must be a number", { record: i, field: row.name });
      insert.run(row.runId, row.stage, row.step ?? null, row.epoch ?? null, row.name, row.value, now);
    }
  }).immediate();
}

/**
 * Deletes a stage's metric rows of `epoch` and later (a resumed run logs those epochs again, so no
 * step is stored twice); returns how many rows it deleted.
 */
export function dropMetricsFrom(db: Database, runId: string, stage: string, epoch: number): number {
  return db.prepare("DELETE FROM metrics WHERE run = ? AND stage = ? AND epoch >= ?").run(runId, stage, epoch).changes;
}

/** Metrics of a run in logging order, optionally of one stage and/or name. */
export function getMetrics(
  db: Database,
  runId: string,
  filter: { stage?: string; name?: string } = {},
): MetricRecord[] {
  const rows = db
    .prepare(
      `SELECT run, stage, step, epoch, name, value, created_at FROM metrics
       WHERE run = @run AND (@stage IS NULL OR stage = @stage) AND (@name IS NULL OR name = @name) ORDER BY id`,
    )
    .all({ run: runId, stage: filter.stage ?? null, name: filter.name ?? null }) as MetricDbRow[];
  return rows.map((r) => ({
    runId: r.run,
    stage: r.stage,
    step: r.step,
    epoch: r.epoch,
    name: r.name,
    value: r.value ?? Number.NaN,
    createdAt: r.created_at,
  }));
}
