/**
 * `lever train sft` against a workspace: resolves the beam/pool artefacts and embeddings, records a
 * run (resolved config + seed) and the files it reads, holds the run while training (one process
 * per run), streams per-step and per-epoch metrics into the workspace, writes per-epoch and best
 * checkpoints as run artefacts and marks the stage and the run done (or failed).
 */

import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { EMBEDDING_KINDS, type EmbeddingKind } from "../../data/embeddings.js";
import type { PoolSet } from "../../data/pool-set.js";
import type { BeamSet } from "../../data/trajectories.js";
import { CHECKPOINT_REF_HELP, resolveCheckpoint } from "../../icl/checkpoint-ref.js";
import { type Checkpoint, loadCheckpoint } from "../../selector/checkpoint.js";
import { RunNameSchema } from "../../store/runs.js";
import { resolveBeamSet, resolvePoolSet } from "../../store/sets.js";
import { openStageRun } from "../../store/stage-run.js";
import type { Workspace } from "../../store/workspace.js";
import { LeverError } from "../../util/errors.js";
import { parseOrThrow } from "../../util/validate.js";
import { STATE_FILE } from "../loop/run.js";
import { loadTrainState, type SavedState } from "../loop/train-state.js";
import { type HealthWarning, sftHealthWarnings } from "../objective/health.js";
import { TrainingInputFields, type TrainingInputs, trainingInputs } from "./inputs.js";
import { checkInputsUnchanged, checkpointDirOf, executeStage, imagesOf, type StageIo, splitNote } from "./lifecycle.js";
import { runSft, type SftConfig, SftConfigSchema, type SftRunResult } from "./sft-run.js";

/** What an SFT run reads (not part of the hashed training config). */
export const SftInputsSchema = z
  .object({
    beams: z.string().min(1).describe("beam artefact: a file, or a name under artifacts/beams/"),
    pools: z.string().min(1).describe("pool set the beams were searched in: a file, or a name under artifacts/pools/"),
    ...TrainingInputFields,
    init: z
      .string()
      .min(1)
      .optional()
      .describe(`start from this selector checkpoint (${CHECKPOINT_REF_HELP}) instead of a fresh init`),
    name: RunNameSchema.optional().describe("run name"),
  })
  .strict();
export type SftInputs = z.output<typeof SftInputsSchema>;

/** The inputs, the training config, and where the stage reports and what stops it (`StageIo`). */
export interface SftStageOptions extends SftInputs, StageIo {
  config: SftConfig;
}

export interface SftStageResult extends Omit<SftRunResult, "model"> {
  runId: string;
  checkpointDir: string;
  /** Health warnings of its epochs (src/train/objective/health.ts), also in health.json beside the checkpoints. */
  warnings: HealthWarning[];
}

interface ResolvedInputs extends TrainingInputs {
  beams: { set: BeamSet; file: string };
  pools: { set: PoolSet; file: string };
}

function resolveInputs(
  ws: Workspace,
  refs: {
    beams: string;
    pools: string;
    dataset: string;
    embedding?: EmbeddingKind;
    init?: string;
    model: SftConfig["model"];
  },
): ResolvedInputs {
  const beams = resolveBeamSet(ws, refs.beams);
  const pools = resolvePoolSet(ws, refs.pools);
  if (beams.set.dataset !== pools.set.queryDataset)
    throw new LeverError(
      `beams are for dataset "${beams.set.dataset}" but the pools' queries are from "${pools.set.queryDataset}"`,
      { file: beams.file, field: "dataset" },
    );
  const inputs = trainingInputs(ws, {
    stage: "sft",
    data: { beams: beams.file, pools: pools.file },
    pools,
    queryDataset: pools.set.queryDataset,
    indexDataset: refs.dataset,
    embedding: refs.embedding,
    checkpoints: { init: refs.init },
    model: refs.model,
  });
  return { ...inputs, beams, pools };
}

/** The run config stored in the workspace (what `resume` reads back). */
const StoredRunSchema = z.object({
  stage: z.literal("sft"),
  beams: z.string(),
  pools: z.string(),
  dataset: z.string(),
  embedding: z.enum(EMBEDDING_KINDS),
  init: z.string().optional(),
  dataHashes: z.record(z.string(), z.string()),
  sft: SftConfigSchema,
});

/**
 * Trains a new SFT run, or continues the run of these settings and inputs (src/store/stage-run.ts): one
 * that did not finish (its process died, or training failed) is resumed from its last finished epoch,
 * which gives the same result as an uninterrupted run (the inputs are part of the config hash, and
 * resuming re-checks them); a done one is not trained again, its result is handed back. A run another
 * live process is training is refused, naming that process.
 */
export async function runSftStage(ws: Workspace, given: SftStageOptions): Promise<SftStageResult> {
  // The starting checkpoint as a file (a training run RUN[:best|last|epoch-N] resolved to its file).
  const opts = given.init === undefined ? given : { ...given, init: resolveCheckpoint(ws, given.init, "--init") };
  const inputs = resolveInputs(ws, { ...opts, model: opts.config.model });
  const stored: z.input<typeof StoredRunSchema> = {
    stage: "sft",
    beams: existsSync(opts.beams) ? resolve(opts.beams) : opts.beams,
    pools: existsSync(opts.pools) ? resolve(opts.pools) : opts.pools,
    dataset: opts.dataset,
    // As resolved (given, else the --init checkpoint's): what the run's identity holds.
    embedding: inputs.embedding,
    ...(opts.init !== undefined ? { init: resolve(opts.init) } : {}),
    dataHashes: inputs.dataHashes,
    sft: opts.config,
  };
  const run = openStageRun(ws, {
    kind: "sft",
    config: stored,
    seed: opts.config.seed,
    name: opts.name,
    work: "epochs",
    note: opts.note,
  });
  if (run.opened !== "new") return continueSftStage(ws, run.runId, opts);
  const init = opts.init !== undefined ? loadCheckpoint(opts.init) : undefined;
  return execute(ws, run.runId, inputs, opts.config, {
    init,
    initFile: opts.init,
    progress: opts.progress,
    note: opts.note,
    signal: opts.signal,
  });
}

/**
 * Continues an interrupted SFT run from the state saved after its last finished epoch. The inputs
 * must be unchanged (same sha256 as recorded); the result is the same as an uninterrupted run.
 */
export async function resumeSftStage(ws: Workspace, runId: string, how: StageIo = {}): Promise<SftStageResult> {
  if (ws.getStage(runId, "sft")?.status === "done")
    throw new LeverError(`run ${runId} is already done`, { record: runId });
  return continueSftStage(ws, runId, how);
}

/** Trains an existing SFT run on from its saved state (a done run's state is final: its result). */
async function continueSftStage(ws: Workspace, runId: string, how: StageIo): Promise<SftStageResult> {
  const run = ws.getRun(runId);
  if (run === undefined) throw new LeverError(`no run "${runId}" in this workspace`, { field: "run" });
  if (run.kind !== "sft") throw new LeverError(`run ${runId} is not an SFT run`, { record: runId });
  const stored = parseOrThrow(StoredRunSchema, run.config, { record: runId, fieldPrefix: "config" });
  const inputs = resolveInputs(ws, { ...stored, model: stored.sft.model });
  checkInputsUnchanged(runId, stored.dataHashes, inputs.dataHashes);
  const statePath = join(checkpointDirOf(ws, runId, "sft"), STATE_FILE);
  const resume = existsSync(statePath) ? loadTrainState(statePath) : undefined;
  const init = stored.init !== undefined ? loadCheckpoint(stored.init) : undefined;
  return execute(ws, runId, inputs, stored.sft, { init, initFile: stored.init, resume, ...how });
}

/** Holds the run, records its inputs and trains it as the run's one stage ("sft"). */
async function execute(
  ws: Workspace,
  runId: string,
  inputs: ResolvedInputs,
  config: SftConfig,
  extra: {
    init?: Checkpoint;
    /** The starting checkpoint's file (for errors). */
    initFile?: string;
    resume?: SavedState;
  } & StageIo,
): Promise<SftStageResult> {
  const done = await executeStage(
    ws,
    {
      stage: "sft",
      runId,
      epochs: config.optim.epochs,
      inputs: inputs.files,
      progress: extra.progress,
      note: extra.note,
      signal: extra.signal,
      health: (epoch, _metrics, history) => sftHealthWarnings(epoch, history),
    },
    (checkpointDir, hooks) =>
      runSft({
        config,
        beams: inputs.beams.set,
        pools: inputs.pools.set,
        sources: inputs.sources,
        files: {
          beams: inputs.beams.file,
          pools: inputs.pools.file,
          ...(extra.initFile !== undefined ? { init: extra.initFile } : {}),
        },
        imageOf: imagesOf(ws, inputs.pools.set.queryDataset),
        checkpointDir,
        init: extra.init,
        resume: extra.resume,
        // What every reader of its checkpoints must repeat (src/icl/trained-with.ts).
        provenance: {
          runId,
          dataHashes: inputs.dataHashes,
          notes: { poolSampler: inputs.pools.set.sampler, embedding: inputs.embedding },
        },
        signal: hooks.signal,
        onSplit: (split) => hooks.note?.(splitNote("sft", split, config.seed)),
        onStep: hooks.onStep,
        onEpoch: hooks.onEpoch,
      }),
  );
  const { model: _model, ...rest } = done.result;
  return { ...rest, runId, checkpointDir: done.checkpointDir, warnings: done.warnings };
}
