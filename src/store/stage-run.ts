/**
 * The one lifecycle of a stage's run, used by every stage (beams, rollouts, SFT, RCE, GRPO, evaluation):
 *
 * - **open** (`openStageRun`): the run for this command is the newest run of this kind with the same
 *   identity — with a name, the run of that name (one made with other settings is refused, naming what
 *   differs, unless it failed before its stage began: then the name passes to a new run, and is taken from it); without one, the newest run with the same config hash (settings and inputs) — else a new
 *   run. An existing run whose stage is not done (interrupted, failed, or stopped) is resumed, with a
 *   note saying which run and why; one whose stage is done is reopened by an item stage (done items are
 *   kept, failed ones retried, the artefact assembled again) and handed back as it is by a training
 *   stage (nothing is trained twice). So running a command again continues its work, never starts a
 *   copy that redoes finished work and leaves the first run's files orphaned.
 * - **hold**: the run's lease, taken when the run is opened (`holdStageRun` for a run named by its id):
 *   re-entrant in this process, refused while another live process holds it (naming pid@host), taken
 *   over from a holder that died, with a note.
 * - **begin / progress / complete / fail**: the stage record, and the run finished with its stage
 *   (done, or failed with the message). Beginning a stage makes its run running again.
 */
import { InterruptedError, LeverError } from "../util/errors.js";
import { canonicalJson } from "../util/hash.js";
import type { ArtifactRef, RunRecord } from "./types.js";
import type { Workspace } from "./workspace.js";

/**
 * How a stage resumes: `items` (beams, rollouts, evaluation) skip stored items and retry failed ones,
 * and reopen a done run; `epochs` (training) continue from the last finished epoch, and a done run is
 * the result.
 */
export type StageWork = "items" | "epochs";

/** What opening found: a run created now, an unfinished one to resume, or one whose stage is done. */
export type Opened = "new" | "resumed" | "done";

export interface StageRunSpec {
  /** The run kind (`sft`, `beams`, `eval`, …). */
  kind: string;
  /** The stage's name in the run (default: the kind). */
  stage?: string;
  /** The resolved configuration, inputs included: its hash is the run's identity. */
  config: Record<string, unknown>;
  seed: number;
  /** A user's name for the run; refused when the run of that name has other settings. */
  name?: string;
  /** The option that gave the name, for the refusal (default `--name`). */
  nameFlag?: string;
  work: StageWork;
  /** Informational lines: which run is resumed or returned and why, a lease taken over. */
  note?: (text: string) => void;
}

/** A held run at one stage. Complete and fail finish the run and give the lease up. */
export interface StageRun {
  readonly runId: string;
  readonly stage: string;
  readonly opened: Opened;
  /** Marks the stage running (an item stage restarts a done one) and its run running. */
  begin(): void;
  progress(done: number, total: number): void;
  /** Refreshes the lease (cheap to call per step); throws if another process took the run over. */
  beat(): void;
  /** The stage done with its artefacts; the run done, or failed with `runError`. */
  complete(artifacts: ArtifactRef[], runError?: string): void;
  /** The stage and the run failed with the message. */
  fail(message: string): void;
  /** Begin, produce the artefacts, complete; a throw fails the stage and the run (an InterruptedError leaves them unfinished) and is rethrown. */
  produce<T>(fn: () => Promise<{ artifacts: ArtifactRef[]; value: T }>): Promise<T>;
  release(): void;
}

/** Finds or creates the run of this command (the policy above), holds it and says what it found. */
export function openStageRun(ws: Workspace, spec: StageRunSpec): StageRun {
  const stage = spec.stage ?? spec.kind;
  const found = findRun(ws, spec);
  if (found === undefined) {
    const runId = ws.createRun({
      kind: spec.kind,
      config: spec.config,
      seed: spec.seed,
      ...(spec.name !== undefined ? { name: spec.name } : {}),
    });
    return hold(ws, runId, stage, "new", spec);
  }
  // Held first: a run another live process works on is refused before anything is said about it.
  const run = hold(ws, found.id, stage, openedAt(ws, found.id, stage), spec);
  const note = spec.note ?? (() => {});
  if (run.opened === "resumed")
    note(`run ${found.id} with these settings and inputs ${why(found)}; ${resuming(spec.work, found.id)}`);
  if (run.opened === "done" && spec.work === "epochs")
    note(
      `run ${found.id} with these settings and inputs is already done (finished ${found.finishedAt ?? "earlier"}); ` +
        "nothing to train, its checkpoints are the result",
    );
  return run;
}

/** Holds an existing run at `stage` (e.g. `lever train resume RUN`): resumed, or done when its stage is. */
export function holdStageRun(
  ws: Workspace,
  runId: string,
  stage: string,
  work: StageWork,
  note?: (text: string) => void,
): StageRun {
  return hold(ws, runId, stage, openedAt(ws, runId, stage), { work, note });
}

function openedAt(ws: Workspace, runId: string, stage: string): Opened {
  return ws.getStage(runId, stage)?.status === "done" ? "done" : "resumed";
}

function hold(
  ws: Workspace,
  runId: string,
  stage: string,
  opened: Opened,
  spec: Pick<StageRunSpec, "work" | "note">,
): StageRun {
  const lease = ws.holdRun(runId);
  if (lease.note !== null) spec.note?.(lease.note);
  const run: StageRun = {
    runId,
    stage,
    opened,
    begin: () => ws.beginStage(runId, stage, { restart: spec.work === "items" }),
    progress: (done, total) => ws.updateStageProgress(runId, stage, done, total),
    beat: () => lease.beat(),
    complete(artifacts, runError) {
      ws.completeStage(runId, stage, artifacts);
      ws.finishRun(runId, runError === undefined ? "done" : "failed", runError);
      lease.release();
    },
    fail(message) {
      ws.failStage(runId, stage, message);
      ws.finishRun(runId, "failed", message);
      lease.release();
    },
    async produce(fn) {
      run.begin();
      try {
        const { artifacts, value } = await fn();
        run.complete(artifacts);
        return value;
      } catch (error) {
        // Ctrl-C is no failure: the stage stays unfinished and, its lease released, reads as interrupted.
        if (!(error instanceof InterruptedError)) run.fail(error instanceof Error ? error.message : String(error));
        throw error;
      }
    },
    release: () => lease.release(),
  };
  return run;
}

/** The newest run of this kind with this identity (by name when named), or undefined. */
function findRun(ws: Workspace, spec: StageRunSpec): RunRecord | undefined {
  const hash = ws.configHash(spec.config);
  if (spec.name === undefined) return ws.listRuns({ kind: spec.kind, configHash: hash }).at(-1);
  const named = ws
    .listRuns({ kind: spec.kind })
    .filter((run) => run.name === spec.name)
    .at(-1);
  // A run that failed before its stage began did no work: its name goes to the run with other settings
  // (taken from it, so the name keeps naming one run).
  if (named !== undefined && named.configHash !== hash && stoppedInSetup(ws, named)) {
    ws.clearRunName(named.id);
    return undefined;
  }
  if (named !== undefined && named.configHash !== hash) {
    const differs = configDifferences(named.config as Record<string, unknown>, spec.config);
    throw new RunSettingsConflict(spec.name, named.id, differs, spec.nameFlag ?? "--name");
  }
  return named;
}

/** A run that failed before any of its stages began (e.g. while its command set up the VLM). */
function stoppedInSetup(ws: Workspace, run: RunRecord): boolean {
  return run.status === "failed" && ws.listStages(run.id).length === 0;
}

/** A name given to a run whose run has other settings (`differs`: the config's top-level keys that differ). */
export class RunSettingsConflict extends LeverError {
  constructor(
    readonly runName: string,
    readonly runId: string,
    readonly differs: readonly string[],
    flag: string,
  ) {
    super(`run "${runName}" (${runId}) was made with other settings (${differs.join(", ")}); choose another name`, {
      field: flag,
    });
  }
}

/** Top-level keys whose values differ between two configs (for "this run has other settings" errors). */
export function configDifferences(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.filter((key) => canonicalJson(a[key]) !== canonicalJson(b[key]));
}

/** Why an unfinished run is resumed, as read before this process held it. */
function why(run: RunRecord): string {
  if (run.status === "interrupted") return "was interrupted (its process stopped)";
  if (run.status === "failed") return `failed (${(run.error ?? "no message").split("\n")[0]})`;
  return "did not finish";
}

function resuming(work: StageWork, runId: string): string {
  return work === "epochs"
    ? `resuming it (the same as: lever train resume ${runId})`
    : "resuming it (done items are kept, failed ones retried)";
}
