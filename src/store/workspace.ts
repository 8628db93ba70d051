import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import type { VqaItem } from "../data/item.js";
import { writeFileAtomic } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import { READ_ONLY_WORKSPACE, sqliteError, systemError } from "../util/files.js";
import { hashValue } from "../util/hash.js";
import { redactUrlPasswords } from "../util/redact.js";
import * as datasets from "./datasets.js";
import {
  fromStored,
  hashData,
  hashFileSync,
  mapStrings,
  portablePath,
  resolveInside,
  storedForm,
  toStored,
  WORKSPACE_MARK,
} from "./files.js";
import type { RunLease } from "./leases.js";
import * as leases from "./leases.js";
import { migrate, SCHEMA_VERSION, schemaVersion } from "./migrations.js";
import * as predictions from "./predictions.js";
import * as runs from "./runs.js";
import * as stageItems from "./stage-items.js";
import type {
  ArtifactRef,
  DatasetInput,
  DatasetRecord,
  EmbeddingRecord,
  MetricRecord,
  MetricRow,
  PredictionFilter,
  PredictionRow,
  RunInput,
  RunRecord,
  RunStatus,
  StageItemRow,
  StageRecord,
} from "./types.js";

export type * from "./types.js";
export type { RunLease };

export const DB_FILE = "lever.db";
export const ARTIFACTS_DIR = "artifacts";
/** How long a statement waits for another process's write transaction before "database is locked". */
export const BUSY_TIMEOUT_MS = 10_000;

/** Whether this process may write the database and create its WAL files beside it. */
function canWrite(root: string, dbPath: string): boolean {
  try {
    accessSync(root, constants.W_OK);
    if (existsSync(dbPath)) accessSync(dbPath, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Run ids for a message: the first five, then how many more. */
function listRuns(ids: readonly string[]): string {
  return ids.length <= 5 ? ids.join(", ") : `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more`;
}

/**
 * A lever workspace: `lever.db` (SQLite, WAL, foreign keys on) plus an `artifacts/` folder.
 * Every write is one transaction; artefact files are written atomically before any record
 * points at them. Opening migrates the schema; a newer schema is refused.
 */
export class Workspace {
  readonly dir: string;
  /** The database file (lever.db). */
  readonly dbFile: string;
  readonly db: BetterSqlite3.Database;
  readonly artifactsDir: string;
  /** Opened with `readOnly`: every write fails with a "read-only" error. */
  readonly readOnly: boolean;
  private readonly leases = new Map<string, RunLease>();

  private constructor(dir: string, db: BetterSqlite3.Database, readOnly: boolean) {
    this.dir = dir;
    this.dbFile = join(dir, DB_FILE);
    this.db = db;
    this.readOnly = readOnly;
    this.artifactsDir = join(dir, ARTIFACTS_DIR);
  }

  /** Whether `dir` already holds a workspace database. */
  static exists(dir: string): boolean {
    return existsSync(join(resolve(dir), DB_FILE));
  }

  /**
   * Opens (and by default creates) the workspace in `dir`, applying pending migrations. With
   * `readOnly` the database is opened read-only and never created or written: what read commands
   * use, so a workspace on a read-only disk (or without write permission) can still be read.
   */
  static open(dir: string, options: { create?: boolean; readOnly?: boolean } = {}): Workspace {
    const root = resolve(dir);
    const dbPath = join(root, DB_FILE);
    const readOnly = options.readOnly === true;
    if (!existsSync(dbPath)) {
      if (readOnly || options.create === false) {
        throw new LeverError("no lever workspace here (import a dataset to create one, or pass --workspace)", {
          file: dbPath,
        });
      }
      if (existsSync(root) && !statSync(root).isDirectory()) {
        throw new LeverError("workspace path exists and is not a directory", { file: root });
      }
      try {
        mkdirSync(root, { recursive: true });
      } catch (error) {
        throw systemError(error, root);
      }
    }
    if (readOnly) return Workspace.openReadOnly(root, dbPath);
    if (!canWrite(root, dbPath)) throw new LeverError(READ_ONLY_WORKSPACE, { file: dbPath });
    let db: BetterSqlite3.Database;
    try {
      db = new BetterSqlite3(dbPath);
    } catch (error) {
      throw sqliteError(error, dbPath, "cannot open workspace database");
    }
    try {
      // First: every later step may have to wait for another process's write transaction.
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      migrate(db, dbPath); // before any pragma that writes, so a too-new database is left untouched
      db.pragma("journal_mode = WAL");
      db.pragma("foreign_keys = ON");
      // WAL + NORMAL: a commit survives a killed process (it is in the WAL file); only an OS crash or
      // power loss can lose the last commits, never corrupt the database. FULL would fsync every small
      // transaction — every arriving VLM answer — and made caching simulator answers 7× slower.
      db.pragma("synchronous = NORMAL");
      db.pragma("cache_size = -65536"); // 64 MiB page cache: a VQAv2 import touches ~300 MB of pages
      mkdirSync(join(root, ARTIFACTS_DIR), { recursive: true });
    } catch (error) {
      db.close();
      if (error instanceof LeverError) throw error;
      throw sqliteError(systemError(error, join(root, ARTIFACTS_DIR)), dbPath, "not a usable lever workspace database");
    }
    return new Workspace(root, db, false);
  }

  private static openReadOnly(root: string, dbPath: string): Workspace {
    let db: BetterSqlite3.Database | undefined;
    let version: number;
    try {
      db = new BetterSqlite3(dbPath, { readonly: true, fileMustExist: true });
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      version = schemaVersion(db);
    } catch (error) {
      db?.close();
      db = undefined;
      const code = (error as { code?: string }).code ?? "";
      if (!/^SQLITE_(READONLY_DIRECTORY|CANTOPEN)/.test(code))
        throw sqliteError(systemError(error, dbPath), dbPath, "not a usable lever workspace database");
      // A WAL database in a directory nobody may write: SQLite cannot create the shared-memory
      // index beside it. The file as it is (cleanly closed, so complete) is read from memory
      // instead, marked as a rollback-journal database (header bytes 18-19: 1 = legacy, 2 = WAL),
      // since an in-memory database has no WAL.
      try {
        const bytes = readFileSync(dbPath);
        if (bytes.length >= 20) bytes.fill(1, 18, 20);
        db = new BetterSqlite3(bytes, { readonly: true });
        version = schemaVersion(db);
      } catch (inner) {
        db?.close();
        throw sqliteError(systemError(inner, dbPath), dbPath, "not a usable lever workspace database");
      }
    }
    if (version === SCHEMA_VERSION) return new Workspace(root, db, true);
    db.close();
    if (version < SCHEMA_VERSION && canWrite(root, dbPath)) {
      Workspace.open(root).close(); // an older workspace: upgrade it once, then read
      return Workspace.openReadOnly(root, dbPath);
    }
    if (version > SCHEMA_VERSION)
      throw new LeverError(
        `workspace schema version ${version} is newer than this lever supports (${SCHEMA_VERSION}); upgrade lever to open it`,
        { file: dbPath, field: "schema_version" },
      );
    throw new LeverError(
      `workspace schema version ${version} needs upgrading to ${SCHEMA_VERSION}, but the workspace is read-only; run any lever command on it once with write access`,
      { file: dbPath },
    );
  }

  /**
   * Runs `fn` in one write transaction (nested calls become savepoints). `fn` must be synchronous
   * and short. BEGIN IMMEDIATE takes the write lock up front: a transaction that reads first and
   * writes later could not wait for another process's writer and would fail with "database is locked".
   */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  /** Releases the runs this workspace holds and closes the database. */
  close(): void {
    for (const lease of [...this.leases.values()]) lease.release();
    if (this.db.open) this.db.close();
  }

  // ── artefact files ────────────────────────────────────────────────────────────────────────

  /** Absolute path of `relative` under artifacts/; refuses paths that would leave it. */
  artifactPath(relative: string): string {
    return resolveInside(this.artifactsDir, relative);
  }

  /** Writes an artefact atomically (temp + fsync + rename). Returns its stored (relative) path and sha256. */
  writeArtifact(relative: string, data: string | Uint8Array | Uint8Array[]): ArtifactRef {
    const full = this.artifactPath(relative);
    writeFileAtomic(full, data);
    return { path: portablePath(this.artifactsDir, full), sha256: hashData(data) };
  }

  /** Absolute path of a stored artefact path (relative to artifacts/, or already absolute). */
  resolveArtifact(stored: string): string {
    return isAbsolute(stored) ? stored : this.artifactPath(stored);
  }

  // ── paths inside the workspace (stored workspace-relative: src/store/files.ts) ─────────────

  /**
   * The stored form of a value: every absolute path inside the workspace in it made workspace-relative,
   * every password in a URL (a `--base-url` with basic auth) replaced by `***` (src/util/redact.ts).
   */
  stored<T>(value: T): T {
    return storedForm(this.dir, value);
  }

  /** The inverse of `stored`: workspace-relative paths resolved in this workspace's folder. */
  resolved<T>(value: T): T {
    return mapStrings(value, (text) => fromStored(this.dir, text));
  }

  /** A path a user gave, as an artefact records it: workspace-relative when inside the workspace, else as given. */
  storedPath(path: string): string {
    const stored = toStored(this.dir, resolve(path));
    return stored.startsWith(WORKSPACE_MARK) ? stored : path;
  }

  /** A run config's hash, as `createRun` stores it: of its stored form, so it does not depend on where the workspace is. */
  configHash(config: unknown): string {
    return hashValue(this.stored(config));
  }

  // ── datasets, items, embeddings ────────────────────────────────────────────────────────────

  /**
   * Stores a dataset and its items in one transaction; an existing name is refused unless `replace`,
   * and always once a run read it (`refuseReplacingDataset`).
   */
  putDataset(record: DatasetInput, items: readonly VqaItem[], options: { replace?: boolean } = {}): DatasetRecord {
    if (options.replace === true) this.refuseReplacingDataset(record.name);
    const imagePath = (item: VqaItem) => (item.imagePath === null ? null : toStored(this.dir, item.imagePath));
    const stored = items.map((item) => ({ ...item, imagePath: imagePath(item) }));
    return this.resolved(datasets.putDataset(this.db, this.stored(record), stored, options));
  }

  getDataset(name: string): DatasetRecord | undefined {
    return this.resolved(datasets.getDataset(this.db, name));
  }

  /** Like getDataset but throws a LeverError naming the missing dataset. */
  requireDataset(name: string): DatasetRecord {
    return this.resolved(datasets.requireDataset(this.db, name));
  }

  listDatasets(): DatasetRecord[] {
    return this.resolved(datasets.listDatasets(this.db));
  }

  /** All items of a dataset ordered by question id (compareQuestionIds). */
  loadItems(name: string): VqaItem[] {
    const items = datasets.loadItems(this.db, name);
    for (const item of items) if (item.imagePath !== null) item.imagePath = fromStored(this.dir, item.imagePath);
    return items;
  }

  deleteDataset(name: string): boolean {
    return datasets.deleteDataset(this.db, name);
  }

  putEmbedding(e: EmbeddingRecord): EmbeddingRecord {
    return datasets.putEmbedding(this.db, e);
  }

  getEmbedding(dataset: string, kind: string): EmbeddingRecord | undefined {
    return datasets.getEmbedding(this.db, dataset, kind);
  }

  listEmbeddings(dataset?: string): EmbeddingRecord[] {
    return datasets.listEmbeddings(this.db, dataset);
  }

  // ── runs and stages ───────────────────────────────────────────────────────────────────────
  // The primitives of a stage's run; stages open, resume and finish runs through stage-run.ts.

  /**
   * Takes the run for this process until `release()` or `close()`: refuses (naming the holder) a run
   * another live process works on, takes over one whose holder died (`note` says so). Holding a
   * run this workspace already holds returns the same lease.
   */
  holdRun(runId: string): RunLease & { note: string | null } {
    const held = this.leases.get(runId);
    if (held !== undefined) return { ...held, note: null };
    const lease = leases.acquireLease(this.db, runId);
    const owned: RunLease = {
      runId,
      tookOver: lease.tookOver,
      beat: () => lease.beat(),
      release: () => {
        this.leases.delete(runId);
        lease.release();
      },
    };
    this.leases.set(runId, owned);
    const note =
      lease.tookOver === null
        ? null
        : `took run ${runId} over from ${leases.describeHolder(lease.tookOver)}, which stopped without finishing it`;
    return { ...owned, note };
  }

  /**
   * After a command failed (not Ctrl-C): every run it still holds — one that failed before its stage
   * could fail it, e.g. while the command set up its VLM — is recorded failed with the message (its
   * running stages too) and let go, so it neither reads as running or interrupted forever nor blocks its
   * name (src/store/stage-run.ts).
   */
  failHeldRuns(message: string): void {
    for (const [runId, lease] of [...this.leases]) {
      if (this.getRun(runId)?.status === "running") {
        for (const stage of this.listStages(runId))
          if (stage.status === "running") this.failStage(runId, stage.name, message);
        this.finishRun(runId, "failed", message);
      }
      lease.release();
    }
  }

  /** Records the artefacts a run reads; `replace` of any of them is refused from then on. */
  recordRunInputs(runId: string, inputs: readonly ArtifactRef[]): void {
    runs.recordRunInputs(
      this.db,
      runId,
      inputs.map((input) => ({ path: portablePath(this.artifactsDir, input.path), sha256: input.sha256 })),
    );
  }

  /**
   * Refuses to replace a dataset that a run read (its items or embeddings): the run could no longer be
   * resumed, and `lever run` would find its stages' runs made with other data.
   */
  refuseReplacingDataset(name: string): void {
    const readers = runs.runsReadingDataset(this.db, name);
    if (readers.length > 0)
      throw new LeverError(
        `dataset "${name}" was read by run ${listRuns(readers)}, so it is never replaced; import the new data under another name (--name)`,
        { field: "--replace" },
      );
  }

  /** Refuses to replace an embedding (stored at `path`) that a run read; see `refuseReplacingDataset`. */
  refuseReplacingEmbedding(dataset: string, kind: string, path: string): void {
    const readers = runs.runsReadingEmbedding(this.db, dataset, kind, portablePath(this.artifactsDir, path));
    if (readers.length > 0)
      throw new LeverError(
        `the "${kind}" embedding of dataset "${dataset}" was read by run ${listRuns(readers)}, so it is never replaced; import the data under another dataset name`,
        { field: "--replace" },
      );
  }

  /** Runs that read the artefact stored as `path` (relative to artifacts/, or absolute). */
  runsReading(path: string): string[] {
    return runs.runsReading(this.db, portablePath(this.artifactsDir, path));
  }

  /** Creates a run (status "running") storing the resolved config and its hash; returns its id. */
  createRun(input: RunInput): string {
    return runs.createRun(this.db, { ...input, config: this.stored(input.config) });
  }

  getRun(id: string): RunRecord | undefined {
    const run = runs.getRun(this.db, id);
    return run === undefined ? undefined : { ...run, config: this.resolved(run.config) };
  }

  listRuns(filter: { kind?: string; configHash?: string; status?: RunStatus } = {}): RunRecord[] {
    return runs.listRuns(this.db, filter).map((run) => ({ ...run, config: this.resolved(run.config) }));
  }

  finishRun(id: string, status: "done" | "failed", error?: string): void {
    runs.finishRun(this.db, id, status, error === undefined ? undefined : redactUrlPasswords(error));
  }

  clearRunName(runId: string): void {
    runs.clearRunName(this.db, runId);
  }

  beginStage(runId: string, name: string, options: { restart?: boolean } = {}): void {
    runs.beginStage(this.db, runId, name, options);
  }

  updateStageProgress(runId: string, name: string, done: number, total: number): void {
    runs.updateStageProgress(this.db, runId, name, done, total);
  }

  /**
   * Marks a stage done. Each artefact is re-hashed from disk first: a missing or different file
   * (e.g. a crash mid-write) leaves the stage not done, so a re-run redoes it.
   */
  completeStage(runId: string, name: string, artifacts: ArtifactRef[]): void {
    const stored = artifacts.map((a) => {
      const full = this.resolveArtifact(a.path);
      let actual: string;
      try {
        actual = hashFileSync(full).sha256;
      } catch (error) {
        throw new LeverError(`artefact is missing: ${(error as Error).message}`, { file: full, record: runId });
      }
      if (actual !== a.sha256) {
        throw new LeverError(`artefact sha256 is ${actual}, expected ${a.sha256}`, { file: full, record: runId });
      }
      return { path: portablePath(this.artifactsDir, full), sha256: a.sha256 };
    });
    runs.completeStage(this.db, runId, name, stored);
  }

  failStage(runId: string, name: string, error: string): void {
    runs.failStage(this.db, runId, name, redactUrlPasswords(error));
  }

  getStage(runId: string, name: string): StageRecord | undefined {
    return runs.getStage(this.db, runId, name);
  }

  listStages(runId: string): StageRecord[] {
    return runs.listStages(this.db, runId);
  }

  /** Stores finished (or failed) items of a resumable stage; a row with the same key replaces the old one. */
  putStageItems(rows: readonly StageItemRow[]): void {
    stageItems.putStageItems(
      this.db,
      rows.map((row) => (row.status === "failed" ? { ...row, error: redactUrlPasswords(row.error) } : row)),
    );
  }

  /** The stored items of a run's stage, in key (question-id) order. */
  getStageItems(runId: string, stage: string): StageItemRow[] {
    return stageItems.getStageItems(this.db, runId, stage);
  }

  // ── metrics and predictions ───────────────────────────────────────────────────────────────

  logMetrics(rows: readonly MetricRow[]): void {
    runs.logMetrics(this.db, rows);
  }

  /** Deletes a stage's metric rows of `epoch` and later (a resumed run logs them again); returns the count. */
  dropMetricsFrom(runId: string, stage: string, epoch: number): number {
    return runs.dropMetricsFrom(this.db, runId, stage, epoch);
  }

  getMetrics(runId: string, filter: { stage?: string; name?: string } = {}): MetricRecord[] {
    return runs.getMetrics(this.db, runId, filter);
  }

  putPredictions(rows: readonly PredictionRow[]): void {
    predictions.putPredictions(
      this.db,
      rows.map((row) => ({
        ...row,
        retriever: toStored(this.dir, row.retriever),
        failure: row.failure === null ? null : redactUrlPasswords(row.failure),
      })),
    );
  }

  getPredictions(runId: string, filter: PredictionFilter = {}): PredictionRow[] {
    const stored =
      filter.retriever === undefined ? filter : { ...filter, retriever: toStored(this.dir, filter.retriever) };
    return predictions
      .getPredictions(this.db, runId, stored)
      .map((row) => ({ ...row, retriever: fromStored(this.dir, row.retriever) }));
  }

  hasPrediction(runId: string, retriever: string, shot: number, questionId: string): boolean {
    return predictions.hasPrediction(this.db, runId, toStored(this.dir, retriever), shot, questionId);
  }

  predictedQuestionIds(runId: string, retriever: string, shot: number): Set<string> {
    return predictions.predictedQuestionIds(this.db, runId, toStored(this.dir, retriever), shot);
  }
}
