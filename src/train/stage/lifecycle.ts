/**
 * The workspace side of a training stage (SFT, RCE, GRPO), one implementation for all three: the
 * run held and its stage begun, completed or failed through the one stage lifecycle
 * (src/store/stage-run.ts), the files the run reads (so they cannot be replaced under it), per-epoch
 * progress, every step's and epoch's metrics as rows, progress on stderr, health warnings (RL) printed
 * and kept in `health.json` beside the checkpoints, and the checkpoints registered as the stage's
 * artefacts when it completes. A throw marks the stage and the run failed. A run whose stage is done
 * is not trained again: its result is handed back. The training itself is the caller's `train`
 * function (src/train/loop/run.ts). Every metric row is also written to the run's TensorBoard event file
 * (src/store/tensorboard.ts, `<workspace>/tensorboard/<run id>/`). A resumed run first drops what an
 * earlier process logged of the epoch it resumes at and later (rows and event files), so every step is
 * stored and shown once.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describeHealthWarning, HEALTH_FILE, healthFileContent, readHealthFile } from "../../data/health-file.js";
import { checkpointDirOf } from "../../icl/checkpoint-ref.js";
import { hashFileSync } from "../../store/files.js";
import { holdStageRun } from "../../store/stage-run.js";
import { EventFileWriter, metricScalar, tensorboardDirOf } from "../../store/tensorboard.js";
import type { MetricRow } from "../../store/types.js";
import type { ArtifactRef, Workspace } from "../../store/workspace.js";
import { writeFileAtomic } from "../../util/atomic.js";
import { InterruptedError, LeverError } from "../../util/errors.js";
import type { EpochInfo, StepInfo } from "../loop/loop.js";
import { BEST_FILE, epochFile, type TrainingRunResult } from "../loop/run.js";
import type { HealthWarning } from "../objective/health.js";
import { type ProgressStream, TrainingProgress } from "./progress.js";

export interface StageHooks {
  /** Ctrl-C (the stage's `signal`): training stops before the next batch. */
  signal?: AbortSignal;
  /** Informational lines of the training (absent when a done run's result is handed back). */
  note?: (text: string) => void;
  onStep(info: StepInfo): void;
  onEpoch(info: EpochInfo & { checkpoint: string | null }): void;
}

/** Where a training stage reports (progress, notes) and what stops it (Ctrl-C). */
export interface StageIo {
  progress?: ProgressStream | null;
  /** Informational lines (a resumed run, a lease taken over from a dead process, the validation split). */
  note?: (text: string) => void;
  /** Ctrl-C: training stops before the next batch, the run is left interrupted (resumable), and an InterruptedError says what was kept. */
  signal?: AbortSignal;
}

export interface StageOptions extends StageIo {
  /** Stage name = run kind: "sft", "rce", "grpo". */
  stage: string;
  runId: string;
  epochs: number;
  /** The files the run reads (recorded; replacing them is refused afterwards). */
  inputs: readonly ArtifactRef[];
  /** Metric names shown on the per-epoch progress line (default: all). */
  display?: readonly string[];
  /** Health checks of an epoch's metrics (with every epoch's so far, this one last). */
  health?: (
    epoch: number,
    metrics: Record<string, number>,
    history: readonly Record<string, number>[],
  ) => HealthWarning[];
}

export interface StageResult<R> {
  runId: string;
  checkpointDir: string;
  result: R;
  warnings: HealthWarning[];
}

/** The note saying which queries validate a run (`dropped`: left out before the split, and why). */
export function splitNote(
  stage: string,
  split: { train: number; val: number },
  seed: number,
  dropped?: { count: number; why: string },
): string {
  const all = split.train + split.val + (dropped?.count ?? 0);
  return (
    `${stage} validates on ${split.val} of ${all} queries (held out by image, seed ${seed})` +
    (dropped !== undefined && dropped.count > 0
      ? `; ${dropped.count} queries ${dropped.why} are left out of training and validation, so this split differs from that of another stage on the same data`
      : "")
  );
}

/** Directory of a run's checkpoints and state (src/icl/checkpoint-ref.ts, which also resolves RUN to a file there). */
export { checkpointDirOf };

/**
 * Trains the run's stage, or hands back the result of a run whose stage is done: its saved state is
 * the final one, so training resumed from it runs no epoch and returns what the run produced.
 */
export async function executeStage<R extends TrainingRunResult>(
  ws: Workspace,
  opts: StageOptions,
  train: (checkpointDir: string, hooks: StageHooks) => Promise<R>,
): Promise<StageResult<R>> {
  const { runId, stage } = opts;
  const run = holdStageRun(ws, runId, stage, "epochs", opts.note);
  const tensorboard = new EventFileWriter(tensorboardDirOf(ws.dir, runId)); // opens its file on the first write
  let first = true;
  const logMetrics = (rows: MetricRow[]) => {
    // The first rows of this process: a resumed run logs their epoch (and later ones) again, so what an
    // earlier process logged of them goes, here and in TensorBoard (whose files start over with what is kept).
    const epoch = rows[0]?.epoch;
    if (first && typeof epoch === "number") {
      first = false;
      if (ws.dropMetricsFrom(runId, stage, epoch) > 0 || existsSync(tensorboardDirOf(ws.dir, runId)))
        tensorboard.restart(ws.getMetrics(runId).map(metricScalar));
    }
    ws.logMetrics(rows);
    tensorboard.logMetrics(rows);
  };
  const checkpointDir = checkpointDirOf(ws, runId, stage);
  try {
    ws.recordRunInputs(runId, opts.inputs);
    // A resumed run keeps the warnings its earlier epochs stored (an epoch that runs again replaces its own).
    const warnings: HealthWarning[] = storedWarnings(join(checkpointDir, HEALTH_FILE), opts.note);
    if (run.opened === "done")
      return { runId, checkpointDir, result: await train(checkpointDir, finishedHooks(runId)), warnings };
    const printed = new Set<string>();
    const progress =
      opts.progress === null
        ? null
        : new TrainingProgress(stage, opts.epochs, opts.progress ?? undefined, opts.display);
    const result = await run.produce(async () => {
      const result = await train(checkpointDir, {
        ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
        ...(opts.note !== undefined ? { note: opts.note } : {}),
        onStep: (info) => {
          run.beat(); // steps run synchronously: the heartbeat timer cannot fire meanwhile
          logMetrics(
            Object.entries(info.metrics).map(([name, value]) => ({
              runId,
              stage,
              step: info.step,
              epoch: info.epoch,
              name,
              value,
            })),
          );
          progress?.step(info);
        },
        onEpoch: (info) => {
          const found = opts.health?.(info.epoch, info.metrics, info.history) ?? [];
          const earlier = warnings.filter((w) => w.epoch < info.epoch);
          warnings.splice(0, warnings.length, ...earlier, ...found);
          logMetrics([
            ...Object.entries(info.metrics).map(([name, value]) => ({
              runId,
              stage,
              epoch: info.epoch,
              name: `epoch.${name}`,
              value,
            })),
            ...found.map((w) => ({ runId, stage, epoch: info.epoch, name: `health.${w.code}`, value: 1 })),
          ]);
          if (opts.health !== undefined) writeFileAtomic(join(checkpointDir, HEALTH_FILE), healthFileContent(warnings));
          run.progress(info.epoch + 1, opts.epochs);
          progress?.epoch(info);
          // A warning is printed the first time its check fires; later epochs' repeats are only stored.
          for (const w of found) {
            if (printed.has(w.code)) continue;
            printed.add(w.code);
            progress?.warn(
              `${describeHealthWarning(w)} (not repeated for later epochs; ${HEALTH_FILE} lists every epoch)`,
            );
          }
        },
      });
      const files = [
        ...result.checkpoints,
        ...(result.bestCheckpoint ? [result.bestCheckpoint] : []),
        ...(opts.health !== undefined && result.epochsRun > 0 ? [join(checkpointDir, HEALTH_FILE)] : []),
      ];
      return { artifacts: files.map((path) => ({ path, sha256: hashFileSync(path).sha256 })), value: result };
    });
    return { runId, checkpointDir, result, warnings };
  } catch (error) {
    if (error instanceof InterruptedError) throw interruptedTraining(ws, opts, checkpointDir, error);
    throw error;
  } finally {
    tensorboard.close();
    run.release();
  }
}

/** What an interrupted run kept (its finished epochs, from the stage record) and how to resume it. */
function interruptedTraining(
  ws: Workspace,
  opts: StageOptions,
  dir: string,
  error: InterruptedError,
): InterruptedError {
  const { runId, stage, epochs } = opts;
  const done = ws.getStage(runId, stage)?.progressDone ?? 0;
  const kept =
    done === 0
      ? "no finished epoch (it starts again from its first)"
      : `${done} finished epoch${done === 1 ? "" : "s"} of ${epochs}: checkpoints ${epochFile(0)}${done > 1 ? `…${epochFile(done - 1)}` : ""}, ${BEST_FILE} and the resumable state in ${dir}`;
  return new InterruptedError(
    `${stage} run ${runId} ${error.message}; kept: ${kept}; resume: lever train resume ${runId} (or run the same command again)`,
  );
}

/** The hooks of a done run's replay: an epoch that would run means its saved state is not the final one. */
function finishedHooks(runId: string): StageHooks {
  const refuse = (): never => {
    throw new LeverError(
      `run ${runId} is done, but its saved training state is missing or not its last epoch's; its result cannot be handed back`,
      { record: runId },
    );
  };
  return { onStep: refuse, onEpoch: refuse };
}

/** Question id → image id of a dataset's items: training splits validation by image (split.ts). */
export function imagesOf(ws: Workspace, dataset: string): Map<string, string> {
  return new Map(ws.loadItems(dataset).map((item) => [item.questionId, item.imageId]));
}

/**
 * The warnings of a health file written by an earlier process of the run ([] when there is none). An
 * unreadable one is said (`note`) and replaced by the epochs that run now.
 */
function storedWarnings(file: string, note?: (text: string) => void): HealthWarning[] {
  if (!existsSync(file)) return [];
  const stored = readHealthFile(file);
  if (stored === null) note?.(`${file} is unreadable: the earlier epochs' health warnings are not kept`);
  return (stored?.warnings ?? []) as HealthWarning[];
}

/** A resumed run must read what it started with: the first input whose sha256 changed is an error. */
export function checkInputsUnchanged(
  runId: string,
  recorded: Readonly<Record<string, string>>,
  now: Readonly<Record<string, string>>,
): void {
  for (const [name, hash] of Object.entries(recorded))
    if (now[name] !== hash)
      throw new LeverError(`input "${name}" changed since the run started (sha256 ${now[name]}, recorded ${hash})`, {
        record: runId,
        field: name,
      });
}
