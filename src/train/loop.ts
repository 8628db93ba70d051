/**
 * The one training loop shared by SFT, RCE and GRPO: seeded shuffling of query groups into
 * batches, AdamW with one parameter group per selector part (so parts can be frozen), a learning-
 * rate schedule, gradient clipping, per-step and per-epoch metrics, validation every epoch and
 * early stopping on a chosen metric. What differs between stages is only the Objective (how a batch
 * becomes a loss, and what validation measures) and the hooks (checkpointing, logging).
 *
 * Randomness: epoch e uses Rng(seed).child(`epoch-${e}`) — its "shuffle" child orders the groups, its
 * "dropout" child feeds dropout — so the same seed gives bit-identical weights, and an epoch's draws
 * do not depend on how many draws earlier epochs made.
 */
import { z } from "zod";
import type { PointerSelector } from "../selector/model.js";
import { AdamW, clipGradNorm, gradNorm } from "../tensor/optim.js";
import type { Tensor } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import { Rng } from "../util/rng.js";
import { chunk } from "./batch.js";
import { EarlyStopping } from "./early-stopping.js";
import { lrMultiplier, ScheduleSchema } from "./schedule.js";
import type { LoopState } from "./train-state.js";

export const OptimSchema = z
  .object({
    epochs: z.number().int().positive().default(20).describe("passes over the training queries"),
    batchQueries: z.number().int().positive().default(32).describe("queries per batch, each with all its trajectories"),
    lr: z.number().positive().default(1e-4).describe("peak learning rate"),
    weightDecay: z.number().min(0).default(1e-3).describe("AdamW decoupled weight decay"),
    betas: z
      .tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)])
      .default([0.9, 0.999])
      .describe("AdamW betas"),
    eps: z.number().positive().default(1e-8).describe("AdamW epsilon"),
    schedule: ScheduleSchema.default(ScheduleSchema.parse({})),
    clipNorm: z.number().positive().nullable().default(1).describe("global gradient-norm clip"),
    frozen: z.array(z.string()).default([]).meta({
      flag: "freeze",
      description:
        "parameter groups not updated, e.g. input_proj,query_proj,cand_proj (lever selector inspect lists them)",
    }),
    earlyStopping: z
      .object({
        metric: z.string().default("valLoss").describe("validation metric that selects the best epoch"),
        mode: z.enum(["min", "max"]).default("min").describe("whether smaller or larger is better"),
        patience: z
          .number()
          .int()
          .nonnegative()
          .default(0)
          .describe("epochs without improvement before stopping (0 = never stop early)"),
        minDelta: z.number().min(0).default(0).describe("smallest change that counts as an improvement"),
      })
      .strict()
      .default({ metric: "valLoss", mode: "min", patience: 0, minDelta: 0 }),
  })
  .strict();
export type OptimConfig = z.infer<typeof OptimSchema>;

export interface StepContext {
  epoch: number;
  step: number;
  /** Dropout (and any other training-time randomness) of this step. */
  rng: Rng;
}

export interface Objective<G> {
  /** Loss of one batch (training mode) and extra scalar metrics to log for the step. */
  batchLoss(groups: G[], ctx: StepContext): { loss: Tensor; metrics?: Record<string, number> };
  /** Validation metrics after an epoch (evaluation mode, no gradient). */
  validate(epoch: number): Record<string, number>;
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
  /** The early-stopping metric improved (this epoch is the new best). */
  improved: boolean;
  bestEpoch: number;
}

export interface TrainHooks {
  onStep?(info: StepInfo): void;
  /** After each epoch; `snapshot()` gives the state to resume from after this epoch. */
  onEpoch?(info: EpochInfo, snapshot: () => LoopState): void;
}

export interface TrainResult {
  epochsRun: number;
  bestEpoch: number;
  best: number | null;
  stoppedEarly: boolean;
  history: Record<string, number>[];
}

/** Trains `model` in place on `groups`. */
export function train<G>(
  model: PointerSelector,
  groups: readonly G[],
  objective: Objective<G>,
  optim: OptimConfig,
  seed: number,
  hooks: TrainHooks = {},
  /** Continue a run from the state saved after an earlier epoch (weights must already be in `model`). */
  resume?: LoopState,
): TrainResult {
  if (groups.length === 0) throw new LeverError("no training examples");
  const unknown = optim.frozen.filter((g) => !model.specs.some((s) => s.group === g));
  if (unknown.length > 0)
    throw new LeverError(`unknown parameter group(s) to freeze: ${unknown.join(", ")}`, { field: "frozen" });
  const groupNames = [...new Set(model.specs.map((s) => s.group))];
  const optimizer = new AdamW(
    groupNames.map((name) => ({
      params: model.specs.filter((s) => s.group === name).map((s) => model.params.get(s.name)!),
      lr: optim.lr,
      weightDecay: optim.weightDecay,
      frozen: optim.frozen.includes(name),
    })),
    { betas: optim.betas, eps: optim.eps },
  );
  const trainable = model.specs.filter((s) => !optim.frozen.includes(s.group)).map((s) => model.params.get(s.name)!);
  const batches = Math.ceil(groups.length / optim.batchQueries);
  const totalSteps = optim.epochs * batches;
  const stopper = new EarlyStopping(
    optim.earlyStopping.mode,
    optim.earlyStopping.patience,
    optim.earlyStopping.minDelta,
  );
  const root = new Rng(seed);
  const history: Record<string, number>[] = [];
  let step = 0;
  let stoppedEarly = false;
  let epoch = 0;
  if (resume) {
    optimizer.loadStateDict(resume.optimizer);
    stopper.restore(resume.stopper);
    history.push(...resume.history);
    step = resume.step;
    epoch = resume.nextEpoch;
    // The run had already stopped early when this state was saved.
    if (optim.earlyStopping.patience > 0 && resume.stopper.sinceBest >= optim.earlyStopping.patience) {
      stoppedEarly = true;
      epoch = Math.max(epoch, optim.epochs);
    }
  }
  for (; epoch < optim.epochs; epoch++) {
    const epochRng = root.child(`epoch-${epoch}`);
    const order = epochRng.child("shuffle").shuffle([...groups]);
    const dropout = epochRng.child("dropout");
    let lossSum = 0;
    chunk(order, optim.batchQueries).forEach((batchGroups, b) => {
      const lr = optim.lr * lrMultiplier(optim.schedule, step, totalSteps);
      optimizer.groups.forEach((_, gi) => {
        optimizer.setLr(gi, lr);
      });
      optimizer.zeroGrad();
      const { loss, metrics } = objective.batchLoss(batchGroups, { epoch, step, rng: dropout });
      const value = loss.item();
      if (!Number.isFinite(value))
        throw new LeverError(`training diverged: loss is ${value} at epoch ${epoch + 1}, step ${step + 1}`);
      loss.backward();
      const norm = optim.clipNorm === null ? gradNorm(trainable) : clipGradNorm(trainable, optim.clipNorm);
      optimizer.step();
      lossSum += value;
      hooks.onStep?.({
        epoch,
        step,
        totalSteps,
        batch: b,
        batches,
        metrics: { loss: value, lr, gradNorm: norm, ...(metrics ?? {}) },
      });
      step++;
    });
    const metrics: Record<string, number> = { trainLoss: lossSum / batches, ...objective.validate(epoch) };
    history.push(metrics);
    const watched = metrics[optim.earlyStopping.metric];
    const { improved, stop } =
      watched === undefined
        ? { improved: true, stop: false } // no validation split: the latest epoch is the best
        : stopper.update(watched, epoch);
    if (watched === undefined) {
      stopper.bestEpoch = epoch;
    }
    const nextEpoch = epoch + 1;
    const stepsDone = step;
    hooks.onEpoch?.({ epoch, metrics, improved, bestEpoch: stopper.bestEpoch }, () => ({
      nextEpoch,
      step: stepsDone,
      history: history.map((h) => ({ ...h })),
      stopper: stopper.state(),
      optimizer: optimizer.stateDict(),
    }));
    if (stop) {
      stoppedEarly = true;
      epoch++;
      break;
    }
  }
  return {
    epochsRun: Math.min(epoch, optim.epochs),
    bestEpoch: stopper.bestEpoch,
    best: stopper.best,
    stoppedEarly,
    history,
  };
}
