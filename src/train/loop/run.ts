/**
 * One training run of any stage (SFT, RCE, GRPO) from resolved inputs: split the query groups into
 * train/validation (by query, seeded), build the model from its starting point (a fresh seeded init or
 * a starting checkpoint, `startingPoint` — the one place starting weights are made) or a saved state to
 * resume, train with the one loop and the stage's objective, and write a checkpoint per epoch, `best`
 * by the early-stopping metric, and the resumable state after every epoch. What differs between
 * stages is only the groups and the objective; workspace plumbing (run records, metric rows) stays in
 * the caller.
 */
import { join } from "node:path";
import { z } from "zod";
import { BEST_FILE, epochFile } from "../../icl/checkpoint-ref.js";
import {
  type Checkpoint,
  checkIndexFits,
  checkpointFits,
  type ProvenanceInput,
  saveCheckpoint,
} from "../../selector/checkpoint.js";
import { ModelOptionsSchema, type SelectorConfig, SelectorConfigSchema } from "../../selector/config.js";
import type { IndexIdentity } from "../../selector/inputs.js";
import { PointerSelector } from "../../selector/model.js";
import { initParams, type ParamValues } from "../../selector/params.js";
import type { DType } from "../../tensor/tensor.js";
import { LeverError } from "../../util/errors.js";
import { Rng } from "../../util/rng.js";
import type { QueryGroup } from "../data/groups.js";
import { type EpochInfo, type Objective, type OptimConfig, type StepInfo, type TrainResult, train } from "./loop.js";
import { splitByQuery } from "./split.js";
import { type SavedState, saveTrainState } from "./train-state.js";

/** The settings every training stage (SFT, RCE, GRPO) has, declared once; each stage places them in its schema. */
export const TrainingFields = {
  model: ModelOptionsSchema.default(ModelOptionsSchema.parse({})),
  seed: z.number().int().default(42).describe("seed of the initialisation, the split, shuffling and dropout"),
  dtype: z.enum(["float32", "float64"]).default("float32").describe("floating-point type of weights and activations"),
  valFraction: z.number().min(0).lt(1).default(0.1).describe("share of queries held out for validation (whole images)"),
};

/** Resumable training state beside the checkpoints. */
export const STATE_FILE = "state.safetensors";

export { BEST_FILE, epochFile };

/** The architecture and weights a run starts from, before any resume. */
export interface StartingPoint {
  config: SelectorConfig;
  values: ParamValues;
  /** The index whose items the identity table rows are (only when the architecture has one). */
  index?: IndexIdentity;
}

/** A fresh seeded init of an architecture: what a run without a starting checkpoint starts from. */
export function seededStart(config: SelectorConfig, seed: number): StartingPoint {
  return { config, values: initParams(config, new Rng(seed).child("init").seed) };
}

/**
 * The starting point of a run: the starting checkpoint's architecture and weights (`init`, read from
 * `initFile`), else a fresh seeded init of the configured `model` for embeddings of width `d` and
 * `shots` steps; checked to fit both, and — with an identity table — the run's index (`index`, the
 * sources' candidate data): a fresh table has one row per index item, a checkpoint's must be of this index.
 */
export function startingPoint(s: {
  init?: Checkpoint;
  initFile?: string;
  model: z.output<typeof ModelOptionsSchema>;
  d: number;
  shots: number;
  seed: number;
  index?: IndexIdentity;
  /** The vote feature's scale of the run's candidate data (`CandidateSource.voteScale`), recorded in a fresh config. */
  voteScale?: number;
}): StartingPoint {
  if (s.init) {
    checkpointFits(s.init.config, s.d, s.shots, "starting", s.initFile);
    checkIndexFits(s.init, s.index, s.initFile ?? "the starting checkpoint");
    const { config, params: values, index } = s.init;
    return config.identity === "embedding" ? { config, values, index } : { config, values };
  }
  const identity = s.model.identity === "embedding";
  const config = SelectorConfigSchema.parse({
    ...s.model,
    d: s.d,
    shots: s.shots,
    ...(identity ? { indexItems: s.index?.items ?? 0 } : {}),
    ...(s.voteScale !== undefined ? { voteScale: s.voteScale } : {}),
  });
  const start = seededStart(config, s.seed);
  return identity && s.index !== undefined ? { ...start, index: s.index } : start;
}

export interface TrainingData<G> {
  train: G[];
  val: G[];
}

export interface TrainingRunInput<G extends QueryGroup> {
  /** "sft", "rce", "grpo": recorded in checkpoint provenance. */
  stage: string;
  groups: G[];
  valFraction: number;
  /** Each query's image id: the validation split then keeps whole images apart (split.ts). */
  imageOf?: ReadonlyMap<string, string>;
  seed: number;
  dtype: DType;
  optim: OptimConfig;
  /** The architecture and weights the run starts from (`startingPoint`). */
  start: StartingPoint;
  /** Continue an interrupted run from its saved training state (its weights replace the start's). */
  resume?: SavedState;
  /** The stage's objective over the split data. */
  objective(model: PointerSelector, data: TrainingData<G>): Objective<G>;
  /** Directory for epoch-NNN.safetensors, best.safetensors and the state (null = none). */
  checkpointDir: string | null;
  checkpoint: {
    trainedK: number;
    shots: number;
    provenance: Omit<ProvenanceInput, "stage" | "epoch" | "metrics" | "createdAt" | "seed">;
  };
  /** Ctrl-C: training stops before the next batch (src/train/loop/loop.ts). */
  signal?: AbortSignal;
  /** Told the train/validation split (query counts) before the first epoch. */
  onSplit?(split: { train: number; val: number }): void;
  onStep?(info: StepInfo): void;
  onEpoch?(info: EpochInfo & { checkpoint: string | null }): void | Promise<void>;
  /** Clock for provenance timestamps (tests pass a fixed one). */
  now?: () => string;
}

export interface TrainingRunResult extends TrainResult {
  model: PointerSelector;
  split: { train: number; val: number };
  checkpoints: string[];
  bestCheckpoint: string | null;
}

export async function runTraining<G extends QueryGroup>(input: TrainingRunInput<G>): Promise<TrainingRunResult> {
  const { groups, seed } = input;
  if (groups.length === 0) throw new LeverError("no training queries");
  const split = splitByQuery(
    groups.map((g) => g.queryId),
    input.valFraction,
    new Rng(seed).child("split"),
    input.imageOf,
  );
  const valIds = new Set(split.val);
  const data: TrainingData<G> = {
    train: groups.filter((g) => !valIds.has(g.queryId)),
    val: groups.filter((g) => valIds.has(g.queryId)),
  };
  input.onSplit?.({ train: data.train.length, val: data.val.length });
  const modelConfig = input.start.config;
  if (input.resume && input.resume.dtype !== input.dtype)
    throw new LeverError(`saved state is ${input.resume.dtype}, the config asks for ${input.dtype}`, {
      field: "dtype",
    });
  const model = new PointerSelector(modelConfig, input.resume?.params ?? input.start.values, input.dtype);
  const now = input.now ?? (() => new Date().toISOString());
  const dir = input.checkpointDir;
  const checkpoints: string[] = [];
  let bestCheckpoint: string | null = null;
  if (input.resume && dir !== null) {
    // Checkpoints written before the interruption stay part of the run.
    for (let e = 0; e < input.resume.loop.nextEpoch; e++) checkpoints.push(join(dir, epochFile(e)));
    if (input.resume.loop.stopper.bestEpoch >= 0) bestCheckpoint = join(dir, BEST_FILE);
  }
  const save = (name: string, epoch: number, metrics: Record<string, number>) => {
    if (dir === null) return null;
    const path = join(dir, name);
    saveCheckpoint(path, {
      config: modelConfig,
      params: model.values(),
      trainedK: input.checkpoint.trainedK,
      shots: input.checkpoint.shots,
      ...(input.start.index !== undefined ? { index: input.start.index } : {}),
      provenance: { ...input.checkpoint.provenance, stage: input.stage, epoch, metrics, seed, createdAt: now() },
    });
    return path;
  };
  const result = await train(
    model,
    data.train,
    input.objective(model, data),
    input.optim,
    seed,
    {
      signal: input.signal,
      onStep: input.onStep,
      onEpoch: async (info, snapshot) => {
        const path = save(epochFile(info.epoch), info.epoch, info.metrics);
        if (path !== null) checkpoints.push(path);
        if (info.improved) bestCheckpoint = save(BEST_FILE, info.epoch, info.metrics);
        // Written last: a crash before this line resumes from the previous epoch and redoes this one.
        if (dir !== null) {
          const { loop, objective } = snapshot();
          saveTrainState(
            join(dir, STATE_FILE),
            { loop, ...(objective !== undefined ? { objective } : {}), params: model.values(), dtype: input.dtype },
            model.specs.map((s) => s.name),
          );
        }
        await input.onEpoch?.({ ...info, checkpoint: path });
      },
    },
    input.resume ? { loop: input.resume.loop, objective: input.resume.objective } : undefined,
  );
  return {
    ...result,
    model,
    split: { train: data.train.length, val: data.val.length },
    checkpoints,
    bestCheckpoint,
  };
}
