/**
 * `lever train sft` against a workspace: resolves the beam/pool artefacts and embeddings, records a
 * run (resolved config + seed), streams per-step and per-epoch metrics into the workspace, writes
 * per-epoch and best checkpoints as run artefacts and marks the stage done (or failed).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { checkPoolSet, type PoolSet, PoolSetSchema } from "../data/pool-set.js";
import { type BeamSet, parseBeamSet } from "../data/trajectories.js";
import { type Checkpoint, loadCheckpoint } from "../selector/checkpoint.js";
import { hashFileSync } from "../store/files.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { readPoolSet } from "../store/sets.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import type { EmbeddingTable } from "./data.js";
import { type ProgressStream, TrainingProgress } from "./progress.js";
import { STATE_FILE } from "./run.js";
import { runSft, type SftConfig, SftConfigSchema, type SftRunResult } from "./sft-run.js";
import { loadTrainState, type SavedState } from "./train-state.js";

/** What an SFT run reads (not part of the hashed training config). */
export const SftInputsSchema = z
  .object({
    beams: z.string().min(1).describe("beam artefact: a file, or a name under artifacts/beams/"),
    pools: z.string().min(1).describe("pool set the beams were searched in: a file, or a name under artifacts/pools/"),
    dataset: z.string().min(1).describe("index dataset (the candidates)"),
    embedding: z.enum(EMBEDDING_KINDS).default("joint").describe("embedding kind the selector reads"),
    init: z.string().min(1).optional().describe("start from this selector checkpoint instead of a fresh init"),
    name: z.string().min(1).optional().describe("run name"),
  })
  .strict();
export type SftInputs = z.output<typeof SftInputsSchema>;

export interface SftStageOptions extends SftInputs {
  config: SftConfig;
  progress?: ProgressStream | null;
}

export interface SftStageResult extends Omit<SftRunResult, "model"> {
  runId: string;
  checkpointDir: string;
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new LeverError(`not valid JSON (${(error as Error).message})`, { file: path });
  }
}

function resolveBeams(ws: Workspace, ref: string): { set: BeamSet; file: string } {
  const file = existsSync(ref) ? ref : ws.artifactPath(`beams/${ref}.json`);
  if (!existsSync(file))
    throw new LeverError("no such beam artefact (a file path or a name under artifacts/beams/)", { file });
  return { set: parseBeamSet(readJson(file), file), file };
}

function resolvePools(ws: Workspace, ref: string): { set: PoolSet; file: string } {
  if (!existsSync(ref)) return { set: readPoolSet(ws, ref), file: ws.artifactPath(`pools/${ref}.json`) };
  const parsed = PoolSetSchema.safeParse(readJson(ref));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new LeverError(issue.message, { file: ref, field: issue.path.join(".") || undefined });
  }
  checkPoolSet(parsed.data, ref);
  return { set: parsed.data, file: ref };
}

function table(ws: Workspace, dataset: string, kind: string): EmbeddingTable {
  const m = loadDatasetEmbedding(ws, dataset, kind);
  return { dim: m.dim, data: m.data, rowOf: new Map(m.ids.map((id, i) => [id, i])) };
}

interface ResolvedInputs {
  beams: { set: BeamSet; file: string };
  pools: { set: PoolSet; file: string };
  indexEmb: EmbeddingTable;
  queryEmb: EmbeddingTable;
  dataHashes: Record<string, string>;
}

function resolveInputs(
  ws: Workspace,
  refs: { beams: string; pools: string; dataset: string; embedding: string; init?: string },
): ResolvedInputs {
  const beams = resolveBeams(ws, refs.beams);
  const pools = resolvePools(ws, refs.pools);
  if (pools.set.indexDataset !== refs.dataset)
    throw new LeverError(`pools draw candidates from "${pools.set.indexDataset}", not --dataset "${refs.dataset}"`, {
      file: pools.file,
      field: "indexDataset",
    });
  if (beams.set.dataset !== pools.set.queryDataset)
    throw new LeverError(
      `beams are for dataset "${beams.set.dataset}" but the pools' queries are from "${pools.set.queryDataset}"`,
      {
        file: beams.file,
        field: "dataset",
      },
    );
  const indexEmb = table(ws, refs.dataset, refs.embedding);
  const queryEmb =
    pools.set.queryDataset === refs.dataset ? indexEmb : table(ws, pools.set.queryDataset, refs.embedding);
  const dataHashes: Record<string, string> = {
    beams: hashFileSync(beams.file).sha256,
    pools: hashFileSync(pools.file).sha256,
    indexEmbedding: ws.getEmbedding(refs.dataset, refs.embedding)!.sha256,
    queryEmbedding: ws.getEmbedding(pools.set.queryDataset, refs.embedding)!.sha256,
    ...(refs.init !== undefined ? { init: hashFileSync(refs.init).sha256 } : {}),
  };
  return { beams, pools, indexEmb, queryEmb, dataHashes };
}

/** The run config stored in the workspace (what `resume` reads back). */
const StoredRunSchema = z.object({
  stage: z.literal("sft"),
  beams: z.string(),
  pools: z.string(),
  dataset: z.string(),
  embedding: z.string(),
  init: z.string().optional(),
  dataHashes: z.record(z.string(), z.string()),
  sft: SftConfigSchema,
});

export async function runSftStage(ws: Workspace, opts: SftStageOptions): Promise<SftStageResult> {
  const inputs = resolveInputs(ws, opts);
  const stored: z.input<typeof StoredRunSchema> = {
    stage: "sft",
    beams: existsSync(opts.beams) ? resolve(opts.beams) : opts.beams,
    pools: existsSync(opts.pools) ? resolve(opts.pools) : opts.pools,
    dataset: opts.dataset,
    embedding: opts.embedding,
    ...(opts.init !== undefined ? { init: resolve(opts.init) } : {}),
    dataHashes: inputs.dataHashes,
    sft: opts.config,
  };
  const runId = ws.createRun({
    kind: "sft",
    config: stored,
    seed: opts.config.seed,
    ...(opts.name ? { name: opts.name } : {}),
  });
  const init = opts.init !== undefined ? loadCheckpoint(opts.init) : undefined;
  return execute(ws, runId, inputs, opts.config, { init, progress: opts.progress });
}

/**
 * Continues an interrupted SFT run from the state saved after its last finished epoch. The inputs
 * must be unchanged (same sha256 as recorded); the result is the same as an uninterrupted run.
 */
export async function resumeSftStage(
  ws: Workspace,
  runId: string,
  progress?: ProgressStream | null,
): Promise<SftStageResult> {
  const run = ws.getRun(runId);
  if (run === undefined) throw new LeverError(`no run "${runId}" in this workspace`, { field: "run" });
  const parsed = StoredRunSchema.safeParse(run.config);
  if (run.kind !== "sft" || !parsed.success) throw new LeverError(`run ${runId} is not an SFT run`, { record: runId });
  if (ws.getStage(runId, "sft")?.status === "done")
    throw new LeverError(`run ${runId} is already done`, { record: runId });
  const stored = parsed.data;
  const inputs = resolveInputs(ws, stored);
  for (const [name, hash] of Object.entries(stored.dataHashes)) {
    if (inputs.dataHashes[name] !== hash)
      throw new LeverError(
        `input "${name}" changed since the run started (sha256 ${inputs.dataHashes[name]}, recorded ${hash})`,
        {
          record: runId,
          field: name,
        },
      );
  }
  const statePath = join(ws.artifactPath(`runs/${runId}/sft`), STATE_FILE);
  const resume = existsSync(statePath) ? loadTrainState(statePath) : undefined;
  const init = resume === undefined && stored.init !== undefined ? loadCheckpoint(stored.init) : undefined;
  return execute(ws, runId, inputs, stored.sft, { init, resume, progress });
}

async function execute(
  ws: Workspace,
  runId: string,
  inputs: ResolvedInputs,
  config: SftConfig,
  extra: { init?: Checkpoint; resume?: SavedState; progress?: ProgressStream | null },
): Promise<SftStageResult> {
  ws.beginStage(runId, "sft");
  const checkpointDir = ws.artifactPath(`runs/${runId}/sft`);
  const progress = extra.progress === null ? null : new TrainingProgress("sft", config.optim.epochs, extra.progress);
  try {
    const result = await runSft({
      config,
      beams: inputs.beams.set,
      pools: inputs.pools.set,
      queryEmb: inputs.queryEmb,
      indexEmb: inputs.indexEmb,
      files: { beams: inputs.beams.file, pools: inputs.pools.file },
      checkpointDir,
      init: extra.init,
      resume: extra.resume,
      provenance: { runId, dataHashes: inputs.dataHashes },
      onStep: (info) => {
        ws.logMetrics(
          Object.entries(info.metrics).map(([name, value]) => ({
            runId,
            stage: "sft",
            step: info.step,
            epoch: info.epoch,
            name,
            value,
          })),
        );
        progress?.step(info);
      },
      onEpoch: (info) => {
        ws.logMetrics(
          Object.entries(info.metrics).map(([name, value]) => ({
            runId,
            stage: "sft",
            epoch: info.epoch,
            name: `epoch.${name}`,
            value,
          })),
        );
        ws.updateStageProgress(runId, "sft", info.epoch + 1, config.optim.epochs);
        progress?.epoch(info);
      },
    });
    const artifacts = [...result.checkpoints, ...(result.bestCheckpoint ? [result.bestCheckpoint] : [])].map(
      (path) => ({
        path,
        sha256: hashFileSync(path).sha256,
      }),
    );
    ws.completeStage(runId, "sft", artifacts);
    ws.finishRun(runId, "done");
    const { model: _model, ...rest } = result;
    return { ...rest, runId, checkpointDir };
  } catch (error) {
    ws.failStage(runId, "sft", (error as Error).message);
    ws.finishRun(runId, "failed", (error as Error).message);
    throw error;
  }
}
