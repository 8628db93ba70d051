/**
 * `lever run`: executes a plan (src/experiment/plan.ts) — every distinct stage once, in the order of
 * the stage table, each through its entry's `run` (src/experiment/stages.ts); a stage whose record
 * exists is reused (src/experiment/records.ts). Inside a stage the stage's own resumability applies
 * (per anchor, per query, per epoch, per prediction), so a crash or Ctrl-C resumes where it stopped.
 * Then one evaluation per evaluation identity (src/experiment/evaluate.ts) and one comparison and HTML
 * report of the methods evaluated now (src/experiment/compare.ts).
 */
import { RunSettingsConflict } from "../store/stage-run.js";
import type { Workspace } from "../store/workspace.js";
import { InterruptedError, LeverError } from "../util/errors.js";
import type { ProgressStream } from "../util/progress.js";
import { compareAndReport } from "./compare.js";
import { evaluateVariants } from "./evaluate.js";
import type { PlannedStage, RunPlan } from "./plan.js";
import { adoptStageRecord, readStageRecord, writeStageRecord } from "./records.js";
import type { Experiment } from "./schema.js";
import {
  type AnyStageOutputs,
  interruptedError,
  STAGE_TABLE,
  STAGES,
  type StageContext,
  type StageEntry,
  type StageName,
  type StageOutputMap,
  type StageOutputs,
} from "./stages.js";

export interface RunReport {
  /** Per stage name: stages run now and stages reused (done earlier or shared). */
  counts: Record<StageName, { run: number; reused: number }>;
  evalRuns: string[];
  trainingRuns: string[];
  comparison: string | null;
  reportPath: string | null;
}

export interface RunHooks {
  /** One line per event (stage starts, reuse, results). */
  log(line: string): void;
  /** Progress stream of the stages (null = silent). */
  progress: NodeJS.WritableStream | null;
  signal?: AbortSignal;
}

/** Executes the plan (resuming and reusing what is done). */
export async function execute(ws: Workspace, p: RunPlan, hooks: RunHooks): Promise<RunReport> {
  const stages = await runStages(ws, p, hooks).catch(inThisRun);
  const progress = hooks.progress as unknown as ProgressStream | null;
  const evaluation = await interruptible(`${p.unique.length} stages done`, () =>
    evaluateVariants(ws, p, stages.outputs, {
      log: (line) => hooks.log(line),
      progress,
      signal: hooks.signal,
    }),
  ).catch(inThisRun);
  // Ctrl-C during the last predictions' bookkeeping: stop before the comparison, which does not watch the signal.
  await new Promise((resolve) => setImmediate(resolve));
  if (hooks.signal?.aborted)
    throw new InterruptedError(
      `stopped before the comparison and report; kept: ${p.unique.length} stages done and every evaluation; run the same command again to write them (done stages are reused)`,
    );
  const { comparison, reportPath } = await compareAndReport(ws, p, evaluation, stages.runLabels);
  const trainingRuns = Object.keys(stages.runLabels);
  return { counts: stages.counts, evalRuns: evaluation.evalRuns, trainingRuns, comparison, reportPath };
}

/**
 * A stage's or the evaluation's run, named by `lever run`, found made with other settings: its inputs
 * changed under it (the names are the stages' identities, so the user cannot choose another one).
 */
function inThisRun(error: unknown): never {
  if (!(error instanceof RunSettingsConflict)) throw error;
  throw new LeverError(
    `this experiment's run "${error.runName}" (${error.runId}) was made with other ${error.differs.join(", ")}: ` +
      "what it read changed since; restore it, or run the experiment in a new workspace",
  );
}

/** Runs or reuses every distinct stage; the training runs of the chain (run id → the stage's label), in order. */
async function runStages(ws: Workspace, p: RunPlan, hooks: RunHooks) {
  const counts = Object.fromEntries(STAGES.map((s) => [s, { run: 0, reused: 0 }])) as RunReport["counts"];
  const outputs: StageOutputMap = new Map();
  const runLabels: Record<string, string> = {};
  for (const { stage, variants } of p.unique) {
    if (hooks.signal?.aborted)
      throw chainInterrupted(interruptedError(), `${outputs.size} of ${p.unique.length} stages done`);
    const record = readStageRecord(ws, stage);
    let out: AnyStageOutputs;
    if (record !== null && "outputs" in record) {
      out = record.outputs;
      counts[stage.stage].reused += variants.length;
      if (record.adoptedFrom !== undefined) adoptStageRecord(ws, stage, record.adoptedFrom);
      const earlier = record.adoptedFrom !== undefined ? ` (by an earlier lever, as ${record.adoptedFrom})` : "";
      hooks.log(`${stageTitle(p, stage, variants)}: done earlier${earlier}, reused`);
    } else {
      hooks.log(
        `${stageTitle(p, stage, variants)}: ${record === null ? "running" : `done earlier, but ${record.redo}: running it again`}`,
      );
      const progress =
        p.variants.length > 1 && hooks.progress !== null ? labelledStream(hooks.progress, stage.label) : hooks.progress;
      const kept = `${outputs.size} of ${p.unique.length} stages done`;
      out = await interruptible(kept, () =>
        runStage(ws, stage, p.variants[variants[0]].variant.experiment, outputs, { ...hooks, progress }),
      );
      writeStageRecord(ws, stage, out);
      counts[stage.stage].run += 1;
      counts[stage.stage].reused += variants.length - 1;
    }
    outputs.set(`${stage.stage}-${stage.id}`, out);
    if ("runId" in out) runLabels[out.runId] = stage.label;
  }
  return { counts, outputs, runLabels };
}

/**
 * A stage as the log names it: its kind and id and, in a sweep, its label (the swept values that reach
 * it) and the variants it serves — "grpo 1a2b3c4d5e grpo_beta-0.12_seed-2 (variant 4 of 9)".
 */
export function stageTitle(p: RunPlan, stage: PlannedStage, variants: readonly number[]): string {
  const head = `${stage.stage} ${stage.id}`;
  if (p.variants.length <= 1) return head;
  const which =
    variants.length > 1 ? `variants ${variants.map((i) => i + 1).join(", ")}` : `variant ${variants[0] + 1}`;
  return `${head} ${stage.label} (${which} of ${p.variants.length}${variants.length > 1 ? ", shared" : ""})`;
}

/** A progress stream whose lines start with `[label]`, so a sweep's progress says which variant it is. */
export function labelledStream(stream: NodeJS.WritableStream, label: string): NodeJS.WritableStream {
  const tty = (stream as { isTTY?: boolean }).isTTY;
  const proxy = {
    isTTY: tty,
    write(text: string | Uint8Array): boolean {
      const line = String(text);
      return stream.write(line.startsWith("\r") ? `\r[${label}] ${line.slice(1)}` : `[${label}] ${line}`);
    },
  };
  return proxy as unknown as NodeJS.WritableStream;
}

/**
 * Runs `fn`; Ctrl-C inside it (an InterruptedError saying what the stage at work kept) is said again
 * with what the chain kept and how to resume.
 */
async function interruptible<T>(kept: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw error instanceof InterruptedError ? chainInterrupted(error, kept) : error;
  }
}

/** A stage's InterruptedError said again with what the chain kept and how to resume. */
function chainInterrupted(error: InterruptedError, kept: string): InterruptedError {
  return new InterruptedError(
    `${error.message}; kept: ${kept} and every finished item and epoch; run the same command again to resume (done stages are reused)`,
  );
}

/** Runs one stage through its entry, with the outputs of the stages it reads. */
function runStage(
  ws: Workspace,
  stage: PlannedStage,
  e: Experiment,
  outputs: StageOutputMap,
  hooks: RunHooks,
): Promise<AnyStageOutputs> | AnyStageOutputs {
  const optional = <I extends StageName>(name: I) => {
    const id = stage.deps[name];
    return id === undefined ? undefined : (outputs.get(`${name}-${id}`) as StageOutputs[I] | undefined);
  };
  const input = <I extends StageName>(name: I) => {
    const out = optional(name);
    if (out === undefined) throw new Error(`stage ${name} of ${stage.stage}-${stage.id} has no outputs`);
    return out;
  };
  const entry: StageEntry<StageName> = STAGE_TABLE[stage.stage];
  const ctx: StageContext<StageName> = {
    ws,
    experiment: e,
    settings: e[stage.stage] as NonNullable<Experiment[StageName]>,
    tag: `x${stage.id}`,
    input,
    optional,
    progress: hooks.progress as unknown as ProgressStream | null,
    note: (text) => hooks.log(`note: ${text}`),
    signal: hooks.signal,
  };
  return entry.run(ctx);
}
