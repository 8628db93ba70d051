/**
 * `lever train sft` against a workspace: resolves the beam/pool artefacts and embeddings, records a
 * run (resolved config + seed), streams per-step and per-epoch metrics into the workspace, writes
 * per-epoch and best checkpoints as run artefacts and marks the stage done (or failed).
 */
import { existsSync, readFileSync } from "node:fs";
import { relative } from "node:path";
import { loadDatasetEmbedding } from "../data/embeddings.js";
import { type BeamSet, parseBeamSet } from "../data/trajectories.js";
import { checkPoolSet, readPoolSet } from "../pools/artifact.js";
import { type PoolSet, PoolSetSchema } from "../pools/types.js";
import { loadCheckpoint } from "../selector/checkpoint.js";
import { hashFileSync } from "../store/files.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import type { EmbeddingTable } from "./data.js";
import { type ProgressStream, TrainingProgress } from "./progress.js";
import { runSft, type SftConfig, type SftRunResult } from "./sft-run.js";

export interface SftStageOptions {
  /** Beam artefact: a file path, or a name under artifacts/beams/ (NAME → beams/NAME.json). */
  beams: string;
  /** Pool artefact: a file path, or a pool set name under artifacts/pools/. */
  pools: string;
  /** The index dataset (candidates' embeddings). */
  dataset: string;
  /** Embedding kind (image, text, joint). */
  embedding: string;
  config: SftConfig;
  /** Initial weights (a selector checkpoint) instead of a fresh init. */
  init?: string;
  name?: string;
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

export function runSftStage(ws: Workspace, opts: SftStageOptions): SftStageResult {
  const beams = resolveBeams(ws, opts.beams);
  const pools = resolvePools(ws, opts.pools);
  if (pools.set.indexDataset !== opts.dataset)
    throw new LeverError(`pools draw candidates from "${pools.set.indexDataset}", not --dataset "${opts.dataset}"`, {
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
  const indexEmb = table(ws, opts.dataset, opts.embedding);
  const queryEmb =
    pools.set.queryDataset === opts.dataset ? indexEmb : table(ws, pools.set.queryDataset, opts.embedding);
  const init = opts.init !== undefined ? loadCheckpoint(opts.init) : undefined;
  const dataHashes: Record<string, string> = {
    beams: hashFileSync(beams.file).sha256,
    pools: hashFileSync(pools.file).sha256,
    indexEmbedding: ws.getEmbedding(opts.dataset, opts.embedding)!.sha256,
    queryEmbedding: ws.getEmbedding(pools.set.queryDataset, opts.embedding)!.sha256,
    ...(opts.init !== undefined ? { init: hashFileSync(opts.init).sha256 } : {}),
  };
  const resolved = {
    stage: "sft",
    beams: relative(ws.dir, beams.file),
    pools: relative(ws.dir, pools.file),
    dataset: opts.dataset,
    embedding: opts.embedding,
    dataHashes,
    ...opts.config,
  };
  const runId = ws.createRun({
    kind: "sft",
    config: resolved,
    seed: opts.config.seed,
    ...(opts.name ? { name: opts.name } : {}),
  });
  ws.beginStage(runId, "sft");
  const checkpointDir = ws.artifactPath(`runs/${runId}/sft`);
  const progress = opts.progress === null ? null : new TrainingProgress("sft", opts.config.optim.epochs, opts.progress);
  try {
    const result = runSft({
      config: opts.config,
      beams: beams.set,
      pools: pools.set,
      queryEmb,
      indexEmb,
      files: { beams: beams.file, pools: pools.file },
      checkpointDir,
      init,
      provenance: { runId, dataHashes },
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
        ws.updateStageProgress(runId, "sft", info.epoch + 1, opts.config.optim.epochs);
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
