/**
 * One SFT run from resolved inputs: split by query, build or load the model, train with the shared
 * loop, write a checkpoint per epoch and `best`, report metrics through hooks. Workspace plumbing
 * (run records, artefact registration, metric rows) stays in the caller.
 */
import { join } from "node:path";
import { z } from "zod";
import type { PoolSet } from "../data/pool-set.js";
import type { BeamSet } from "../data/trajectories.js";
import { type Checkpoint, type ProvenanceInput, saveCheckpoint } from "../selector/checkpoint.js";
import { ModelOptionsSchema, SelectorConfigSchema } from "../selector/config.js";
import { PointerSelector } from "../selector/model.js";
import { initParams } from "../selector/params.js";
import { LeverError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import { Rng } from "../util/rng.js";
import { buildSftGroups, type EmbeddingTable, type SftDataStats } from "./data.js";
import { type EpochInfo, OptimSchema, type StepInfo, type TrainResult, train } from "./loop.js";
import { SftLossSchema, sftObjective } from "./sft.js";
import { splitByQuery } from "./split.js";
import { type SavedState, saveTrainState } from "./train-state.js";

/** Resumable training state beside the checkpoints. */
export const STATE_FILE = "state.safetensors";

const SftDataSchema = z
  .object({
    valFraction: z.number().min(0).lt(1).default(0.1).describe("share of queries held out for validation"),
    weighting: z
      .enum(["uniform", "rank"])
      .default("uniform")
      .describe("beam weights: uniform, or rank = 1/(1 + rank by score)"),
    missing: z
      .enum(["error", "skip"])
      .default("error")
      .describe("a beam ICD missing from the query's pool: error, or skip the beam (counted)"),
    shots: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("trajectory length (default: the beams' length; longer beams are cut)"),
  })
  .strict();

export const SftConfigSchema = z
  .object({
    model: ModelOptionsSchema.default(ModelOptionsSchema.parse({})),
    optim: OptimSchema.default(OptimSchema.parse({})),
    loss: SftLossSchema.default(SftLossSchema.parse({})),
    data: SftDataSchema.default(SftDataSchema.parse({})),
    seed: z.number().int().default(42).describe("seed of the initialisation, the split, shuffling and dropout"),
    dtype: z.enum(["float32", "float64"]).default("float32").describe("floating-point type of weights and activations"),
  })
  .strict();
export type SftConfig = z.infer<typeof SftConfigSchema>;
export type SftConfigInput = z.input<typeof SftConfigSchema>;

export interface SftRunInput {
  config: SftConfig;
  beams: BeamSet;
  pools: PoolSet;
  queryEmb: EmbeddingTable;
  indexEmb: EmbeddingTable;
  files: { beams: string; pools: string };
  /** Directory for epoch-NNN.safetensors and best.safetensors (null = no checkpoints). */
  checkpointDir: string | null;
  /** Start from these weights instead of a fresh seeded init (its architecture wins over config.model). */
  init?: Checkpoint;
  /** Continue an interrupted run from its saved training state (checkpointDir/state.safetensors). */
  resume?: SavedState;
  provenance: Omit<ProvenanceInput, "stage" | "epoch" | "metrics" | "createdAt">;
  onStep?(info: StepInfo): void;
  onEpoch?(info: EpochInfo & { checkpoint: string | null }): void;
  /** Clock for provenance timestamps (tests pass a fixed one). */
  now?: () => string;
}

export interface SftRunResult extends TrainResult {
  model: PointerSelector;
  stats: SftDataStats;
  split: { train: number; val: number };
  checkpoints: string[];
  bestCheckpoint: string | null;
}

export function runSft(input: SftRunInput): SftRunResult {
  const { config } = input;
  const { groups, stats } = buildSftGroups(
    input.beams,
    input.pools,
    input.queryEmb,
    input.indexEmb,
    { weighting: config.data.weighting, missing: config.data.missing, shots: config.data.shots },
    input.files,
  );
  if (groups.length === 0)
    throw new LeverError("no usable beams (every query was skipped)", { file: input.files.beams });
  if (input.queryEmb.dim !== input.indexEmb.dim)
    throw new LeverError(`query embeddings have dim ${input.queryEmb.dim}, candidates ${input.indexEmb.dim}`);
  const split = splitByQuery(
    groups.map((g) => g.queryId),
    config.data.valFraction,
    new Rng(config.seed).child("split"),
  );
  const valIds = new Set(split.val);
  const data = {
    train: groups.filter((g) => !valIds.has(g.queryId)),
    val: groups.filter((g) => valIds.has(g.queryId)),
    queryEmb: input.queryEmb,
    indexEmb: input.indexEmb,
  };
  const modelConfig = input.init
    ? input.init.config
    : SelectorConfigSchema.parse({ ...config.model, d: input.queryEmb.dim, shots: stats.shots });
  if (modelConfig.d !== input.queryEmb.dim)
    throw new LeverError(`initial checkpoint expects d=${modelConfig.d}, embeddings have ${input.queryEmb.dim}`);
  const values = input.resume
    ? input.resume.params
    : input.init
      ? input.init.params
      : initParams(modelConfig, new Rng(config.seed).child("init").seed);
  if (input.resume && input.resume.dtype !== config.dtype)
    throw new LeverError(`saved state is ${input.resume.dtype}, the config asks for ${config.dtype}`, {
      field: "dtype",
    });
  const model = new PointerSelector(modelConfig, values, config.dtype);
  const now = input.now ?? (() => new Date().toISOString());
  const epochFile = (epoch: number) => `epoch-${String(epoch + 1).padStart(3, "0")}.safetensors`;
  const checkpoints: string[] = [];
  let bestCheckpoint: string | null = null;
  if (input.resume && input.checkpointDir !== null) {
    // Checkpoints written before the interruption stay part of the run.
    for (let e = 0; e < input.resume.loop.nextEpoch; e++) checkpoints.push(join(input.checkpointDir, epochFile(e)));
    if (input.resume.loop.stopper.bestEpoch >= 0) bestCheckpoint = join(input.checkpointDir, "best.safetensors");
  }
  const save = (name: string, epoch: number, metrics: Record<string, number>) => {
    if (input.checkpointDir === null) return null;
    const path = join(input.checkpointDir, name);
    saveCheckpoint(path, {
      config: modelConfig,
      params: model.values(),
      trainedK: stats.K,
      shots: stats.shots,
      provenance: {
        ...input.provenance,
        stage: "sft",
        epoch,
        metrics,
        seed: config.seed,
        createdAt: now(),
        // Positions are in selection order; how the beams mapped them onto the prompt must be reused at evaluation.
        notes: {
          promptOrder: input.beams.promptOrder,
          configHash: hashValue(config),
          ...(input.provenance.notes ?? {}),
        },
      },
    });
    return path;
  };
  const result = train(
    model,
    data.train,
    sftObjective(model, data, config.loss, config.optim.batchQueries),
    config.optim,
    config.seed,
    {
      onStep: input.onStep,
      onEpoch: (info, snapshot) => {
        const path = save(epochFile(info.epoch), info.epoch, info.metrics);
        if (path !== null) checkpoints.push(path);
        if (info.improved) bestCheckpoint = save("best.safetensors", info.epoch, info.metrics);
        // Written last: a crash before this line resumes from the previous epoch and redoes this one.
        if (input.checkpointDir !== null)
          saveTrainState(
            join(input.checkpointDir, STATE_FILE),
            { loop: snapshot(), params: model.values(), dtype: config.dtype },
            model.specs.map((s) => s.name),
          );
        input.onEpoch?.({ ...info, checkpoint: path });
      },
    },
    input.resume?.loop,
  );
  return {
    ...result,
    model,
    stats,
    split: { train: data.train.length, val: data.val.length },
    checkpoints,
    bestCheckpoint,
  };
}
