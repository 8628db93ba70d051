/**
 * What every training stage (SFT, RCE, GRPO) reads besides its own data, resolved once for all three:
 * the selector sources — the query and index datasets' embeddings of one kind (src/selector/inputs.ts)
 * — and every file the run reads with its sha256, in the order recorded: the stage's data files (beam
 * or rollout set, pool set), the index and query embeddings, the checkpoints it starts from. The
 * files are recorded as the run's inputs (so none is replaced under it); their hashes, `dataHashes`,
 * are part of the run's identity and checked again when it resumes.
 *
 * When the model trained (or a checkpoint read) sees its candidates' answers or identities
 * (docs/selector.md, "Candidate features, identity, pool attention"), the sources also carry the
 * index dataset's candidate data (src/icl/candidate-data.ts), and a hash of the index's annotations joins
 * `dataHashes` as `indexAnswers` (so an annotation change is a different run).
 *
 * The embedding kind read is the one given, else the one the starting checkpoint was trained on (its
 * provenance notes), else joint; every checkpoint read (init, reference) must have been trained on that
 * kind and on pools of the run's pool set's sampler (src/icl/trained-with.ts), else one line refuses it.
 */

import { resolve } from "node:path";
import { z } from "zod";
import { EMBEDDING_KINDS, type EmbeddingKind } from "../../data/embeddings.js";
import type { VqaItem } from "../../data/item.js";
import type { PoolSet } from "../../data/pool-set.js";
import { candidateData, voteWeightingOf } from "../../icl/candidate-data.js";
import { checkTrainedWith, trainedWith } from "../../icl/trained-with.js";
import { voteCalibration } from "../../icl/vote-calibration.js";
import { DEFAULT_POOL, type MixRatios, poolSampler, SAMPLERS, type SamplerName } from "../../pools/samplers.js";
import { checkpointConfig, checkpointProvenance } from "../../selector/checkpoint.js";
import type { CandidateFeature } from "../../selector/config.js";
import { type ModelOptionsSchema, readsCandidateData } from "../../selector/config.js";
import { type SelectorSources, selectorSources } from "../../selector/inputs.js";
import { hashFileSync } from "../../store/files.js";
import { loadDatasetEmbedding } from "../../store/ingest/embeddings.js";
import type { ResolvedSet } from "../../store/sets.js";
import type { ArtifactRef, Workspace } from "../../store/workspace.js";
import { stageTask } from "../../task/guard.js";
import { loadQueryEmbedding } from "../../task/query-embedding.js";
import { LeverError } from "../../util/errors.js";
import { hashValue } from "../../util/hash.js";

/** The embedding kind a run reads when neither --embedding nor its starting checkpoint says. */
export const TRAINING_EMBEDDING_DEFAULT: EmbeddingKind = "joint";

/** The inputs every training stage names the same way, declared once; each stage places them in its schema. */
export const TrainingInputFields = {
  dataset: z.string().min(1).describe("index dataset (the candidates)"),
  embedding: z
    .enum(EMBEDDING_KINDS)
    .optional()
    .describe(
      `embedding kind the selector reads (default: the one the --init checkpoint was trained on, else ${TRAINING_EMBEDDING_DEFAULT})`,
    ),
};

export interface TrainingInputRefs {
  /** The stage reading them (which its datasets' task must implement, src/task/guard.ts). */
  stage: "sft" | "rl";
  /** RL: the reward mode, which the datasets' task must list (src/task/types.ts `rewardModes`). */
  rewardMode?: string;
  /** The stage's data files by name (e.g. beams, pools), in the order they are recorded. */
  data: Record<string, string>;
  /** The pool set read, if any: it must draw its candidates from the index dataset. */
  pools: ResolvedSet<PoolSet> | null;
  queryDataset: string;
  indexDataset: string;
  /** Embedding kind the selector reads, if given (else the init checkpoint's, else the default). */
  embedding?: EmbeddingKind;
  /** Checkpoints read by name (init, reference), recorded after the embeddings. */
  checkpoints: Record<string, string | undefined>;
  /** The architecture a fresh init would have (used when no `init` checkpoint is given), resolved by the stage's schema. */
  model: z.output<typeof ModelOptionsSchema>;
}

export interface TrainingInputs {
  /** The embedding kind read, resolved (what the run stores and its checkpoints record). */
  embedding: EmbeddingKind;
  sources: SelectorSources;
  dataHashes: Record<string, string>;
  /** Every file the run reads, recorded with the run. */
  files: ArtifactRef[];
}

export function trainingInputs(ws: Workspace, given: TrainingInputRefs): TrainingInputs {
  const embedding = trainingEmbedding(given);
  const refs = { ...given, embedding };
  const { pools, indexDataset, queryDataset } = refs;
  if (pools !== null && pools.set.indexDataset !== indexDataset)
    throw new LeverError(`pools draw candidates from "${pools.set.indexDataset}", not --dataset "${indexDataset}"`, {
      file: pools.file,
      field: "indexDataset",
    });
  const task = stageTask(refs.stage, {
    index: ws.requireDataset(indexDataset),
    query: ws.requireDataset(queryDataset),
  });
  if (refs.rewardMode !== undefined && !task.rewardModes.includes(refs.rewardMode))
    throw new LeverError(
      `reward mode "${refs.rewardMode}" does not score ${task.name} trajectories (use one of: ${task.rewardModes.join(", ")})`,
      { field: "reward.mode" },
    );
  const index = loadDatasetEmbedding(ws, indexDataset, embedding);
  const queryKind = task.queryEmbedding(embedding);
  const query =
    queryDataset === indexDataset && queryKind === embedding ? index : loadQueryEmbedding(ws, queryDataset, embedding);
  const file = (path: string): ArtifactRef => ({ path: resolve(path), sha256: hashFileSync(path).sha256 });
  const stored = (dataset: string, kind = embedding): ArtifactRef => {
    const record = ws.getEmbedding(dataset, kind);
    if (record === undefined) throw new LeverError(`dataset "${dataset}" has no ${kind} embedding`);
    return { path: ws.resolveArtifact(record.path), sha256: record.sha256 };
  };
  const checkpoints = Object.entries(refs.checkpoints).filter((e): e is [string, string] => e[1] !== undefined);
  const files: Record<string, ArtifactRef> = {
    ...Object.fromEntries(Object.entries(refs.data).map(([name, path]) => [name, file(path)])),
    indexEmbedding: stored(indexDataset),
    queryEmbedding: stored(queryDataset, queryKind),
    ...Object.fromEntries(checkpoints.map(([name, path]) => [name, file(path)])),
  };
  const dataHashes = Object.fromEntries(Object.entries(files).map(([name, f]) => [name, f.sha256]));
  if (!readsCandidates(refs))
    return {
      embedding,
      sources: selectorSources(query, index, undefined, readOptions(refs)),
      dataHashes,
      files: Object.values(files),
    };
  const features = readFeatures(refs);
  const foreign = features.filter((f) => !(task.candidateFeatures as readonly string[]).includes(f));
  if (foreign.length > 0)
    throw new LeverError(
      `the selector reads candidate features (${foreign.join(", ")}) that ${task.name} items do not have: the ${task.name} task's are ${task.candidateFeatures.join(", ") || "none"}`,
      { field: "model.features" },
    );
  const items = ws.loadItems(indexDataset);
  const voteScale = trainingVoteScale(ws, refs, items);
  const candidates = candidateData(indexDataset, index, items, voteWeightingOf({ voteScale }), features);
  dataHashes.indexAnswers = hashValue(items.map((i) => [i.questionId, i.answer, i.answers.map((a) => a.answer)]));
  // The vote feature's scale (calibrated from those answers): a resumed run must read the same features.
  if (voteScale > 0) dataHashes.voteScale = String(voteScale);
  return {
    embedding,
    sources: selectorSources(query, index, candidates, readOptions(refs)),
    dataHashes,
    files: Object.values(files),
  };
}

/**
 * The embedding kind the run reads (given, else the init checkpoint's, else the default); every
 * checkpoint read must have been trained on it, and on pools of the run's pool set's sampler.
 */
function trainingEmbedding(refs: TrainingInputRefs): EmbeddingKind {
  const trained = readCheckpoints(refs).map(([name, path]) => {
    return { name, path, with: trainedWith(checkpointProvenance(path), path) };
  });
  const init = trained.find((c) => c.name === "init");
  const embedding = refs.embedding ?? init?.with.embedding ?? TRAINING_EMBEDDING_DEFAULT;
  const pools = refs.pools;
  for (const c of trained)
    checkTrainedWith(c.with, c.path, {
      embedding: { value: embedding, from: refs.embedding !== undefined ? "--embedding" : "the --init checkpoint's" },
      poolSampler: { value: pools?.set.sampler, from: `--pools ${pools?.file}` },
    });
  return embedding;
}

/** What the run's models read of the embeddings (centred or not): the starting checkpoint's, else the model's. */
function readOptions(refs: TrainingInputRefs): { center: boolean } {
  const init = refs.checkpoints.init;
  const center = init !== undefined ? checkpointConfig(init).center : refs.model.center;
  for (const [name, path] of readCheckpoints(refs))
    if (checkpointConfig(path).center !== center)
      throw new LeverError(
        `the ${name} checkpoint reads embeddings with center "${checkpointConfig(path).center}", this run's model with "${center}"`,
        { file: path, field: "config.center" },
      );
  return { center: center === "index-mean" };
}

/** The checkpoints a run reads (init, reference), by name. */
function readCheckpoints(refs: TrainingInputRefs): [string, string][] {
  return Object.entries(refs.checkpoints).filter((e): e is [string, string] => e[1] !== undefined);
}

/**
 * The vote feature's scale for this run: the starting checkpoint's, else the model's setting, else
 * calibrated on the index's annotations with the run's pool sampler and K (src/icl/vote-calibration.ts —
 * the `vote` retriever's rule, so both read the same weights). Every checkpoint read that reads the vote
 * feature must have the same scale.
 */
function trainingVoteScale(ws: Workspace, refs: TrainingInputRefs, items: readonly VqaItem[]): number {
  const scale = ownVoteScale(ws, refs, items);
  for (const [name, path] of readCheckpoints(refs)) {
    const config = checkpointConfig(path);
    if (config.features.includes("vote") && config.voteScale !== scale)
      throw new LeverError(
        `the ${name} checkpoint weighs its vote feature with scale ${config.voteScale}, this run's model with ${scale}: they read different features`,
        { file: path, field: "config.voteScale" },
      );
  }
  return scale;
}

function ownVoteScale(ws: Workspace, refs: TrainingInputRefs, items: readonly VqaItem[]): number {
  if (refs.checkpoints.init !== undefined) return checkpointConfig(refs.checkpoints.init).voteScale;
  if (refs.model.voteScale !== undefined) return refs.model.voteScale;
  if (!refs.model.features.includes("vote")) return 0;
  const set = refs.pools?.set;
  const sampler = SAMPLERS.find((s) => s === set?.sampler) ?? (`${refs.embedding}-sim` as SamplerName);
  const ratios = set?.settings.ratios as MixRatios | undefined; // recorded with the defaults filled in
  return voteCalibration({
    dataset: refs.indexDataset,
    items,
    embedding: (kind) => loadDatasetEmbedding(ws, refs.indexDataset, kind),
    kind: refs.embedding as EmbeddingKind,
    pool: poolSampler(sampler, ratios),
    k: set?.k ?? DEFAULT_POOL.k,
  }).scale;
}

/**
 * Whether the model trained, or any checkpoint the run reads, sees candidate answers or identities
 * (a checkpoint's config read from its header: the stage loads its weights once, later).
 */
/** The candidate features the model trained, or any checkpoint the run reads, sees (their union). */
function readFeatures(refs: TrainingInputRefs): CandidateFeature[] {
  const { init, ...others } = refs.checkpoints;
  const configs = [init !== undefined ? checkpointConfig(init) : refs.model, ...Object.values(others)];
  const out = new Set<CandidateFeature>();
  for (const c of configs)
    if (c !== undefined) for (const f of (typeof c === "string" ? checkpointConfig(c) : c).features) out.add(f);
  return [...out];
}

function readsCandidates(refs: TrainingInputRefs): boolean {
  const { init, ...others } = refs.checkpoints;
  const configs = [init !== undefined ? checkpointConfig(init) : refs.model, ...Object.values(others)];
  return configs.some((c) => c !== undefined && readsCandidateData(typeof c === "string" ? checkpointConfig(c) : c));
}
