/**
 * The run tables of a workspace — `runs`, `leases` and `run_inputs` (SQL: src/store/runs.ts,
 * src/store/leases.ts): runs created with their stored config, held by one process at a time (a lease
 * with a heartbeat; a dead holder's run is taken over), finished, and the artefacts, datasets and
 * embeddings a run read, which are never replaced from then on. Stages open, resume and finish runs
 * through src/store/stage-run.ts; these are its primitives.
 */
import { LeverError } from "../util/errors.js";
import { redactUrlPasswords } from "../util/redact.js";
import { portablePath } from "./files.js";
import type { RunLease } from "./leases.js";
import * as leases from "./leases.js";
import * as runs from "./runs.js";
import type { ArtifactRef, RunInput, RunRecord, RunStatus } from "./types.js";
import { WorkspaceBase } from "./workspace-base.js";

/** Run ids for a message: the first five, then how many more. */
function listRuns(ids: readonly string[]): string {
  return ids.length <= 5 ? ids.join(", ") : `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more`;
}

/** A workspace's runs, the leases this process holds on them, and what each run read. */
export abstract class RunTables extends WorkspaceBase {
  /** The runs this workspace holds, by id (released on `close`). */
  protected readonly leases = new Map<string, RunLease>();

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
}
