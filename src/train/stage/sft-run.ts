/**
 * One SFT run from resolved inputs: the query groups from beam data (labels = the positions of each
 * beam's ICDs in the query's pool) trained by `runTraining` (src/train/loop/run.ts) with the SFT objective.
 * Workspace plumbing (run records, artefact registration, metric rows) stays in the caller.
 */
import { z } from "zod";
import type { PoolSet } from "../../data/pool-set.js";
import type { BeamSet } from "../../data/trajectories.js";
import type { Checkpoint, ProvenanceInput } from "../../selector/checkpoint.js";
import type { SelectorSources } from "../../selector/inputs.js";
import { LeverError } from "../../util/errors.js";
import { hashValue } from "../../util/hash.js";
import { buildSftGroups, type SftDataStats } from "../data/groups.js";
import { type EpochInfo, OptimSchema, type StepInfo } from "../loop/loop.js";
import { runTraining, startingPoint, TrainingFields, type TrainingRunResult } from "../loop/run.js";
import type { SavedState } from "../loop/train-state.js";
import { SftLossSchema, sftObjective } from "../objective/sft.js";

const SftDataSchema = z
  .object({
    valFraction: TrainingFields.valFraction,
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
    model: TrainingFields.model,
    optim: OptimSchema.default(OptimSchema.parse({})),
    loss: SftLossSchema.default(SftLossSchema.parse({})),
    data: SftDataSchema.default(SftDataSchema.parse({})),
    seed: TrainingFields.seed,
    dtype: TrainingFields.dtype,
  })
  .strict();
export type SftConfig = z.infer<typeof SftConfigSchema>;
export type SftConfigInput = z.input<typeof SftConfigSchema>;

export interface SftRunInput {
  config: SftConfig;
  beams: BeamSet;
  pools: PoolSet;
  sources: SelectorSources;
  /** Where the inputs came from, for errors (init: the starting checkpoint's file). */
  files: { beams: string; pools: string; init?: string };
  /** Each query's image id: validation then holds out whole images (src/train/loop/split.ts). */
  imageOf?: ReadonlyMap<string, string>;
  /** Directory for epoch-NNN.safetensors and best.safetensors (null = no checkpoints). */
  checkpointDir: string | null;
  /** Start from these weights instead of a fresh seeded init (its architecture wins over config.model). */
  init?: Checkpoint;
  /** Continue an interrupted run from its saved training state (checkpointDir/state.safetensors; needs the same `init`). */
  resume?: SavedState;
  provenance: Omit<ProvenanceInput, "stage" | "epoch" | "metrics" | "createdAt" | "seed">;
  /** Ctrl-C: training stops before the next batch. */
  signal?: AbortSignal;
  /** Told the train/validation split (query counts) before the first epoch. */
  onSplit?(split: { train: number; val: number }): void;
  onStep?(info: StepInfo): void;
  onEpoch?(info: EpochInfo & { checkpoint: string | null }): void;
  /** Clock for provenance timestamps (tests pass a fixed one). */
  now?: () => string;
}

export interface SftRunResult extends TrainingRunResult {
  stats: SftDataStats;
}

export async function runSft(input: SftRunInput): Promise<SftRunResult> {
  const { config } = input;
  const { groups, stats } = buildSftGroups(
    input.beams,
    input.pools,
    input.sources,
    { weighting: config.data.weighting, missing: config.data.missing, shots: config.data.shots },
    input.files,
  );
  if (groups.length === 0)
    throw new LeverError("no usable beams (every query was skipped)", { file: input.files.beams });
  const start = startingPoint({
    init: input.init,
    initFile: input.files.init,
    model: config.model,
    d: input.sources.query.dim,
    shots: stats.shots,
    seed: config.seed,
    index: input.sources.candidates?.index,
    voteScale: input.sources.candidates?.voteScale,
  });
  const result = await runTraining({
    stage: "sft",
    groups,
    valFraction: config.data.valFraction,
    imageOf: input.imageOf,
    seed: config.seed,
    dtype: config.dtype,
    optim: config.optim,
    start,
    resume: input.resume,
    objective: (model, data) =>
      sftObjective(model, { ...data, sources: input.sources }, config.loss, config.optim.batchQueries),
    checkpointDir: input.checkpointDir,
    checkpoint: {
      trainedK: stats.K,
      shots: stats.shots,
      provenance: {
        ...input.provenance,
        // Positions are in selection order; how the beams mapped them onto the prompt must be reused at evaluation.
        notes: {
          promptOrder: input.beams.promptOrder,
          configHash: hashValue(config),
          ...(input.provenance.notes ?? {}),
        },
      },
    },
    signal: input.signal,
    onSplit: input.onSplit,
    onStep: input.onStep,
    onEpoch: input.onEpoch,
    now: input.now,
  });
  return { ...result, stats };
}
