/**
 * The one training loop shared by SFT, RCE and GRPO: seeded shuffling of query groups into
 * batches, AdamW with one parameter group per selector part (so parts can be frozen), a learning-
 * rate schedule, gradient clipping, per-step and per-epoch metrics, validation every epoch and
 * early stopping on a chosen metric. What differs between stages is only the Objective (how a batch
 * becomes a loss, and what validation measures) and the hooks (checkpointing, logging).
 *
 * Randomness: epoch e uses Rng(seed).child(`epoch-${e}`) — its "shuffle" child orders the groups, its
 * "dropout" child feeds dropout (and any other per-step draw of the objective) — so the same seed
 * gives bit-identical weights, and an epoch's draws do not depend on how many draws earlier epochs made.
 *
 * Objective hooks beyond the loss: `prepare` may turn a batch into trainable groups asynchronously
 * (online RL samples and scores trajectories there), `startEpoch` runs before an epoch's first step
 * (behaviour-policy refresh), and `state`/`restore` carry the objective's own state (an adaptive KL
 * coefficient, a behaviour snapshot) through a resume. Epoch metrics are the training loss, the mean
 * of every per-step metric over the epoch, and the objective's validation metrics.
 */
import { z } from "zod";
import type { PointerSelector } from "../../selector/model.js";
import { isDecayedMatrix, PARAM_GROUPS, type ParamSpec } from "../../selector/params.js";
import { AdamW, clipGradNorm } from "../../tensor/optim.js";
import type { Tensor } from "../../tensor/tensor.js";
import { InterruptedError, LeverError } from "../../util/errors.js";
import { Rng } from "../../util/rng.js";
import { chunk } from "./batch.js";
import { EarlyStopping } from "./early-stopping.js";
import { lrMultiplier, scheduleSchema } from "./schedule.js";
import type { LoopState, ObjectiveState } from "./train-state.js";

/** Stage-specific defaults of the optimiser settings (SFT, RCE and GRPO differ). */
export interface OptimDefaults {
  epochs: number;
  lr: number;
  weightDecay: number;
  schedule: { kind: "cosine" | "constant"; warmupRatio: number; minLrRatio: number };
  metric: string;
  /** Per-group learning-rate multipliers (default none). */
  groupLr?: Record<string, number>;
}

/**
 * Default learning-rate multiplier of the `features` group (the per-step score weights u_t of the answer
 * features, docs/selector.md): they start at 0 and must reach O(1) — where a vote share changes a pick —
 * in one run, which at the trunk's learning rate they do not (measured: u ≈ 0.005 after 8 SFT epochs;
 * docs/training.md, "What to expect"). 100× under SFT and RCE, 30× under GRPO's 3× larger base rate.
 * Only this vector is scaled: scaling a matrix (feature_proj) or the cosine prior's weight measured worse.
 */
export const FEATURE_LR = { supervised: 100, grpo: 30 } as const;

/** Metrics where smaller is better; `mode: auto` infers the direction from the name. */
export function lowerIsBetter(metric: string): boolean {
  return /loss|rce|kl/i.test(metric);
}

/** optim.groupLr names only parameter groups (checked when the settings are read, not when training starts). */
function knownGroups(groupLr: Record<string, number>, ctx: z.RefinementCtx): void {
  const strange = Object.keys(groupLr).filter((g) => !(PARAM_GROUPS as readonly string[]).includes(g));
  if (strange.length > 0)
    ctx.addIssue({
      code: "custom",
      message: `unknown parameter group(s): ${strange.join(", ")} (groups: ${PARAM_GROUPS.join(", ")})`,
    });
}

export function optimSchema(d: OptimDefaults) {
  const schedule = scheduleSchema(d.schedule);
  return z
    .object({
      epochs: z.number().int().positive().default(d.epochs).describe("passes over the training queries"),
      batchQueries: z
        .number()
        .int()
        .positive()
        .default(32)
        .describe("queries per batch, each with all its trajectories"),
      lr: z.number().positive().default(d.lr).describe("peak learning rate"),
      weightDecay: z.number().min(0).default(d.weightDecay).describe("AdamW decoupled weight decay"),
      decayScope: z
        .enum(["all", "matrices"])
        .default("all")
        .describe(
          "which parameters weight decay shrinks: all of them (PyTorch's AdamW default), or only the weight matrices of linear maps and embeddings (nanoGPT's configure_optimizers: not biases, LayerNorm gains, the prior's or the features' score weights)",
        ),
      betas: z
        .tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)])
        .default([0.9, 0.999])
        .describe("AdamW betas"),
      eps: z.number().positive().default(1e-8).describe("AdamW epsilon"),
      schedule: schedule.default(schedule.parse({})),
      clipNorm: z.number().positive().nullable().default(1).describe("global gradient-norm clip"),
      groupLr: z
        .record(z.string(), z.number().positive())
        .superRefine(knownGroups)
        .default(d.groupLr ?? {})
        .describe(
          `learning-rate multiplier per parameter group (${PARAM_GROUPS.join(", ")}), e.g. {features: 100}: the small new score weights move as far in a run as the matrices; a record given replaces the default whole (name features again to keep its multiplier)`,
        ),
      frozen: z.array(z.string()).default([]).meta({
        flag: "freeze",
        description:
          "parameter groups not updated, e.g. input_proj,query_proj,cand_proj (lever selector inspect lists them)",
      }),
      earlyStopping: z
        .object({
          metric: z.string().default(d.metric).describe("validation metric that selects the best epoch"),
          mode: z
            .enum(["min", "max", "auto"])
            .default("auto")
            .describe("whether smaller or larger is better (auto: smaller for losses, KL and RCE, larger otherwise)"),
          patience: z
            .number()
            .int()
            .nonnegative()
            .default(0)
            .describe("epochs without improvement before stopping (0 = never stop early)"),
          minDelta: z.number().min(0).default(0).describe("smallest change that counts as an improvement"),
        })
        .strict()
        .default({ metric: d.metric, mode: "auto", patience: 0, minDelta: 0 }),
    })
    .strict();
}

/**
 * The SFT optimiser: Lightning-style cosine with 5 % warm-up, AdamW(1e-4, wd 1e-3), 20 epochs; the answer
 * features' score weights at 100× the learning rate (`FEATURE_LR`).
 */
export const OptimSchema = optimSchema({
  epochs: 20,
  lr: 1e-4,
  weightDecay: 1e-3,
  schedule: { kind: "cosine", warmupRatio: 0.05, minLrRatio: 0 },
  metric: "valLoss",
  groupLr: { features: FEATURE_LR.supervised },
});
export type OptimConfig = z.infer<typeof OptimSchema>;

export interface StepContext {
  epoch: number;
  step: number;
  /** Optimiser steps of the whole run (for schedules of the objective, e.g. the RCE temperature). */
  totalSteps: number;
  /** Dropout (and any other training-time randomness) of this step. */
  rng: Rng;
}

export interface Objective<G> {
  /** Turns a batch into the groups to train on (default: as they are); may call a VLM. */
  prepare?(groups: G[], ctx: StepContext): Promise<G[]>;
  /** Called before the first step of every epoch (also the first epoch after a resume). */
  startEpoch?(epoch: number): void | Promise<void>;
  /** Loss of one batch (training mode) and extra scalar metrics to log for the step. */
  batchLoss(groups: G[], ctx: StepContext): { loss: Tensor; metrics?: Record<string, number> };
  /** Called after the optimiser step (e.g. to adapt a coefficient from the step's metrics). */
  afterStep?(metrics: Record<string, number>): void;
  /** Validation metrics after an epoch (evaluation mode, no gradient). */
  validate(epoch: number): Record<string, number> | Promise<Record<string, number>>;
  /** The objective's own state after an epoch, and its restoration on resume. */
  state?(): ObjectiveState;
  restore?(state: ObjectiveState): void;
}

export interface StepInfo {
  epoch: number;
  step: number;
  totalSteps: number;
  batch: number;
  batches: number;
  metrics: Record<string, number>;
}

export interface EpochInfo {
  epoch: number;
  metrics: Record<string, number>;
  /** Every epoch's metrics so far, this one last (a resumed run's earlier epochs included). */
  history: readonly Record<string, number>[];
  /** The early-stopping metric improved (this epoch is the new best). */
  improved: boolean;
  bestEpoch: number;
}

export interface TrainHooks {
  /**
   * Ctrl-C: checked before every batch (the loop lets the event loop run there, so a signal handler
   * can fire between synchronous steps) and before validation; when aborted, training stops with an
   * InterruptedError and the epoch in progress is dropped (the last finished epoch's state is kept).
   */
  signal?: AbortSignal;
  onStep?(info: StepInfo): void;
  /** After each epoch; `snapshot()` gives the state to resume from after this epoch. */
  onEpoch?(info: EpochInfo, snapshot: () => ResumeState): void | Promise<void>;
}

/** Where a resumed run continues: the loop's state and the objective's. */
export interface ResumeState {
  loop: LoopState;
  objective?: ObjectiveState;
}

export interface TrainResult {
  epochsRun: number;
  bestEpoch: number;
  best: number | null;
  stoppedEarly: boolean;
  history: Record<string, number>[];
}

/** Trains `model` in place on `groups`. */
export async function train<G>(
  model: PointerSelector,
  groups: readonly G[],
  objective: Objective<G>,
  optim: OptimConfig,
  seed: number,
  hooks: TrainHooks = {},
  /** Continue a run from the state saved after an earlier epoch (weights must already be in `model`). */
  resumeFrom?: ResumeState,
): Promise<TrainResult> {
  if (groups.length === 0) throw new LeverError("no training examples");
  const { optimizer, groupScales } = selectorOptimizer(model, optim);
  const steps: StepRunner<G> = {
    objective,
    optimizer,
    trainable: model.specs.filter((s) => !optim.frozen.includes(s.group)).map((s) => model.params.get(s.name)!),
    optim,
    groupScales,
    hooks,
    batches: Math.ceil(groups.length / optim.batchQueries),
    totalSteps: optim.epochs * Math.ceil(groups.length / optim.batchQueries),
  };
  const { mode, metric } = optim.earlyStopping;
  const stopper = new EarlyStopping(
    mode === "auto" ? (lowerIsBetter(metric) ? "min" : "max") : mode,
    optim.earlyStopping.patience,
    optim.earlyStopping.minDelta,
  );
  const root = new Rng(seed);
  const run = { history: [] as Record<string, number>[], step: 0, epoch: 0, stoppedEarly: false };
  if (resumeFrom) restoreRun(run, resumeFrom, objective, optimizer, stopper, optim);
  for (; run.epoch < optim.epochs && !run.stoppedEarly; run.epoch++) {
    const { epoch } = run;
    const epochRng = root.child(`epoch-${epoch}`);
    const order = epochRng.child("shuffle").shuffle([...groups]);
    const dropout = epochRng.child("dropout");
    await objective.startEpoch?.(epoch);
    const batchList = chunk(order, optim.batchQueries);
    const done = await runEpoch(steps, batchList, epoch, run.step, dropout);
    run.step = done.step;
    await stopIfInterrupted(hooks.signal, epoch, "before validation");
    const validation = await objective.validate(epoch);
    const metrics: Record<string, number> = {
      ...done.means,
      ...(done.trained > 0 ? { trainLoss: done.lossSum / done.trained } : {}),
      ...(done.trained < batchList.length ? { skippedBatches: batchList.length - done.trained } : {}),
      ...validation,
    };
    run.history.push(metrics);
    const { improved, stop } = judgeEpoch(metrics, validation, optim.earlyStopping.metric, stopper, epoch);
    const nextEpoch = epoch + 1;
    const stepsDone = run.step;
    await hooks.onEpoch?.({ epoch, metrics, history: run.history, improved, bestEpoch: stopper.bestEpoch }, () => ({
      loop: {
        nextEpoch,
        step: stepsDone,
        history: run.history.map((h) => ({ ...h })),
        stopper: stopper.state(),
        optimizer: optimizer.stateDict(),
      },
      ...(objective.state ? { objective: objective.state() } : {}),
    }));
    if (stop) {
      run.stoppedEarly = true;
      run.epoch++;
      break;
    }
  }
  return {
    epochsRun: Math.min(run.epoch, optim.epochs),
    bestEpoch: stopper.bestEpoch,
    best: stopper.best,
    stoppedEarly: run.stoppedEarly,
    history: run.history,
  };
}

/**
 * AdamW with one parameter group per selector part, so parts can be frozen, and each group's
 * learning-rate multiplier (optim.groupLr, 1 when not named), in the optimiser's group order. With
 * `decayScope: matrices` a part holding both decayed and undecayed tensors (e.g. an attention layer's
 * weights and biases) becomes two optimiser groups, the undecayed one with weight decay 0.
 */
export function selectorOptimizer(
  model: PointerSelector,
  optim: OptimConfig,
): { optimizer: AdamW; groupScales: number[] } {
  const unknown = optim.frozen.filter((g) => !model.specs.some((s) => s.group === g));
  if (unknown.length > 0)
    throw new LeverError(`unknown parameter group(s) to freeze: ${unknown.join(", ")}`, { field: "frozen" });
  const decays = (spec: ParamSpec) => optim.decayScope === "all" || isDecayedMatrix(spec);
  const groups = [...new Set(model.specs.map((s) => s.group))].flatMap((name) =>
    [true, false]
      .map((decayed) => ({
        name,
        decayed,
        specs: model.specs.filter((s) => s.group === name && decays(s) === decayed),
      }))
      .filter((g) => g.specs.length > 0),
  );
  const optimizer = new AdamW(
    groups.map((g) => ({
      params: g.specs.map((s) => model.params.get(s.name)!),
      lr: optim.lr,
      weightDecay: g.decayed ? optim.weightDecay : 0,
      frozen: optim.frozen.includes(g.name),
    })),
    { betas: optim.betas, eps: optim.eps },
  );
  return { optimizer, groupScales: groups.map((g) => optim.groupLr[g.name] ?? 1) };
}

/** The loop's state, the objective's, the optimiser's and early stopping's as saved after an earlier epoch. */
function restoreRun<G>(
  run: { history: Record<string, number>[]; step: number; epoch: number; stoppedEarly: boolean },
  from: ResumeState,
  objective: Objective<G>,
  optimizer: AdamW,
  stopper: EarlyStopping,
  optim: OptimConfig,
): void {
  const resume = from.loop;
  if (from.objective !== undefined) objective.restore?.(from.objective);
  optimizer.loadStateDict(resume.optimizer);
  stopper.restore(resume.stopper);
  run.history.push(...resume.history);
  run.step = resume.step;
  run.epoch = resume.nextEpoch;
  // The run had already stopped early when this state was saved: no epoch is left to run.
  run.stoppedEarly = optim.earlyStopping.patience > 0 && resume.stopper.sinceBest >= optim.earlyStopping.patience;
}

/** What every step of a run uses. */
interface StepRunner<G> {
  objective: Objective<G>;
  optimizer: AdamW;
  /** The parameters that are not frozen (their gradients are clipped). */
  trainable: Tensor[];
  optim: OptimConfig;
  /** Learning-rate multiplier of each optimiser group (optim.groupLr, 1 when not named). */
  groupScales: number[];
  hooks: TrainHooks;
  batches: number;
  totalSteps: number;
}

/**
 * One epoch's optimiser steps over `batchList`, from step `step`: the mean of every finite per-step
 * metric, the loss summed over the batches that made an update and their number, the next step.
 */
async function runEpoch<G>(
  r: StepRunner<G>,
  batchList: G[][],
  epoch: number,
  step: number,
  rng: Rng,
): Promise<{ means: Record<string, number>; lossSum: number; trained: number; step: number }> {
  const { objective, optimizer, optim, batches, totalSteps } = r;
  let lossSum = 0;
  const sums = new Map<string, { total: number; count: number }>();
  let trained = 0; // batches that made an update (skipped ones have no loss)
  for (const [b, batchGroups] of batchList.entries()) {
    await stopIfInterrupted(r.hooks.signal, epoch, `before batch ${b + 1} of ${batches}`);
    const lr = optim.lr * lrMultiplier(optim.schedule, step, totalSteps);
    r.groupScales.forEach((scale, gi) => {
      optimizer.setLr(gi, lr * scale);
    });
    const ctx: StepContext = { epoch, step, totalSteps, rng };
    const trainable = objective.prepare ? await objective.prepare(batchGroups, ctx) : batchGroups;
    if (trainable.length === 0) {
      // Nothing to learn from in this batch (e.g. every sampled group was tied): no update.
      r.hooks.onStep?.({ epoch, step, totalSteps, batch: b, batches, metrics: { lr, skipped: 1 } });
      step++;
      continue;
    }
    trained++;
    optimizer.zeroGrad();
    const { loss, metrics } = objective.batchLoss(trainable, ctx);
    const value = loss.item();
    if (!Number.isFinite(value))
      throw new LeverError(`training diverged: loss is ${value} at epoch ${epoch + 1}, step ${step + 1}`);
    loss.backward();
    const gradNorm = clipGradNorm(r.trainable, optim.clipNorm ?? Number.POSITIVE_INFINITY);
    optimizer.step();
    lossSum += value;
    const stepMetrics = { loss: value, lr, gradNorm, ...(metrics ?? {}) };
    objective.afterStep?.(stepMetrics);
    for (const [name, v] of Object.entries(stepMetrics)) {
      if (name === "loss" || !Number.isFinite(v)) continue;
      const acc = sums.get(name) ?? { total: 0, count: 0 };
      acc.total += v;
      acc.count++;
      sums.set(name, acc);
    }
    r.hooks.onStep?.({ epoch, step, totalSteps, batch: b, batches, metrics: stepMetrics });
    step++;
  }
  const means = Object.fromEntries([...sums].map(([name, { total, count }]) => [name, total / count]));
  return { means, lossSum, trained, step };
}

/**
 * Throws an InterruptedError when `signal` was aborted. With a signal, first lets the event loop run
 * once (a setImmediate turn polls for signals), so Ctrl-C reaches its handler between synchronous steps.
 */
async function stopIfInterrupted(signal: AbortSignal | undefined, epoch: number, where: string): Promise<void> {
  if (signal === undefined) return;
  await new Promise((resolve) => setImmediate(resolve));
  if (signal.aborted) throw new InterruptedError(`stopped in epoch ${epoch + 1}, ${where}`);
}

/**
 * Whether the epoch is the new best and training should stop. No validation metrics at all = no
 * validation split: the latest epoch is the best. Metrics without the chosen one = a setting that
 * cannot choose the best epoch (a typo, or a metric this stage does not compute): an error.
 */
function judgeEpoch(
  metrics: Record<string, number>,
  validation: Record<string, number>,
  metric: string,
  stopper: EarlyStopping,
  epoch: number,
): { improved: boolean; stop: boolean } {
  const watched = metrics[metric];
  if (watched === undefined && Object.keys(validation).length > 0)
    throw new LeverError(
      `the best-epoch metric "${metric}" is not computed by this stage's validation (it has: ${Object.keys(validation).sort().join(", ")})`,
      { field: "optim.earlyStopping.metric" },
    );
  if (watched !== undefined) return stopper.update(watched, epoch);
  stopper.bestEpoch = epoch;
  return { improved: true, stop: false };
}
