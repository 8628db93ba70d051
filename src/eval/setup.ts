import { EMBEDDING_KINDS, type EmbeddingKind, type EmbeddingMatrix } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { selectSubset } from "../data/splits.js";
import { createVlm, type VlmSetup } from "../icl/backend.js";
import { resolveCheckpoint } from "../icl/checkpoint-ref.js";
import { loadSelector } from "../icl/selector.js";
import { calibrationText, voteCalibration } from "../icl/vote-calibration.js";
import type { VoteCalibration } from "../metrics/answer-vote.js";
import { type EmbeddingSet, PoolBuilder, poolSampler } from "../pools/samplers.js";
import { defaultGemm } from "../pools/search.js";
import { CaptionOracle } from "../sim/caption/oracle.js";
import { SimCaptionVlm } from "../sim/caption/vlm.js";
import { InformedSelector } from "../sim/informed.js";
import { SimOracle } from "../sim/oracle.js";
import type { SimVlm } from "../sim/vlm.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { openStageRun, type StageRun } from "../store/stage-run.js";
import type { Workspace } from "../store/workspace.js";
import { stageTask } from "../task/guard.js";
import { queryKindOf } from "../task/query-embedding.js";
import type { AnswerScoring, Task } from "../task/types.js";
import { LeverError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import type { Vlm } from "../vlm/types.js";
import { EVAL_STAGE, type EvalOptions, type EvalRunConfig, evalPool, evalRunConfig } from "./config.js";
import { consensusChooser } from "./consensus.js";
import {
  createRetriever,
  DEPRECATED_RETRIEVERS,
  memoizePools,
  type PoolChooser,
  type PoolProvider,
  parseRetrieverList,
  type Retriever,
  type RetrieverSpec,
} from "./retrievers.js";
import type { EvalPrediction, PredictionStore, PromptOrder } from "./types.js";
import { fromPromptOrder } from "./types.js";
import { VOTE_EMBEDDING, voteChooser } from "./vote-retriever.js";

/** The workspace's predictions table as a PredictionStore. */
export function workspacePredictionStore(ws: Workspace): PredictionStore {
  return {
    list: (runId) => ws.getPredictions(runId).map(({ runId: _run, ...row }): EvalPrediction => row),
    put: (runId, rows) => ws.putPredictions(rows.map((row) => ({ runId, ...row }))),
  };
}

/**
 * A simulator search (the oracle, the informed ceiling) as a retriever function: its prompt-order
 * trajectory returned in SELECTION order under the run's prompt-order setting.
 */
function inSelectionOrder(
  search: (queryId: string, pool: readonly string[], shots: number) => { demoIds: string[] },
  order: PromptOrder,
): PoolChooser {
  return (query, pool, shots) => fromPromptOrder(search(query.questionId, pool, shots).demoIds, order);
}

/** The simulator's oracle and informed-ceiling retrievers. */
export function simRetrievers(sim: SimVlm, order: PromptOrder): { oracle: PoolChooser; informed: PoolChooser } {
  const oracle = new SimOracle(sim);
  const informed = new InformedSelector(sim);
  return {
    oracle: inSelectionOrder((q, pool, shots) => oracle.bestTrajectory(q, pool, shots), order),
    informed: inSelectionOrder((q, pool, shots) => informed.trajectory(q, pool, shots), order),
  };
}

/** The caption simulator's oracle and informed ceiling (greedy searches, src/sim/caption/oracle.ts). */
export function captionSimRetrievers(
  sim: SimCaptionVlm,
  index: readonly VqaItem[],
  order: PromptOrder,
  seed: number,
): { oracle: PoolChooser; informed: PoolChooser } {
  const chooser = (search: CaptionOracle): PoolChooser => {
    return (query, pool, shots) => fromPromptOrder(search.trajectory(query, pool, shots), order);
  };
  return {
    oracle: chooser(new CaptionOracle(sim, index, { knows: "references", seed })),
    informed: chooser(new CaptionOracle(sim, index, { knows: "world", seed })),
  };
}

/** The references of the evaluation's backend when it is a simulator (VQA or caption), else none. */
function simulatorRetrievers(vlm: VlmSetup, index: readonly VqaItem[], order: PromptOrder, seed: number) {
  if (vlm.sim) return simRetrievers(vlm.sim, order);
  return vlm.backend instanceof SimCaptionVlm ? captionSimRetrievers(vlm.backend, index, order, seed) : {};
}

/** Lazily loaded embeddings of the query and index datasets, by kind. */
export class EmbeddingCache {
  private readonly loaded = new Map<string, EmbeddingMatrix>();
  constructor(private readonly ws: Workspace) {}

  get(dataset: string, kind: EmbeddingKind): EmbeddingMatrix {
    const key = `${dataset}\u0000${kind}`;
    let matrix = this.loaded.get(key);
    if (!matrix) this.loaded.set(key, (matrix = loadDatasetEmbedding(this.ws, dataset, kind)));
    return matrix;
  }

  /** Every registered kind's embeddings, as a set that loads on first access (`as` maps a kind to the one loaded). */
  lazySet(dataset: string, as: (kind: EmbeddingKind) => EmbeddingKind = (kind) => kind): EmbeddingSet {
    const set: EmbeddingSet = {};
    for (const kind of EMBEDDING_KINDS)
      Object.defineProperty(set, kind, { enumerable: true, get: () => this.get(dataset, as(kind)) });
    return set;
  }

  /** A query dataset's embedding compared with the index's `kind` (src/task/query-embedding.ts). */
  query(dataset: string, kind: EmbeddingKind): EmbeddingMatrix {
    return this.get(dataset, queryKindOf(this.record(dataset))(kind));
  }

  record(dataset: string) {
    return this.ws.requireDataset(dataset);
  }
}

/**
 * The pool contract over the index dataset, with embeddings loaded only when a sampler needs them
 * and pools memoised per (sampler, K, query).
 */
export function workspacePools(
  embeddings: EmbeddingCache,
  options: EvalOptions,
  queryDataset: string,
  indexDataset: string,
  index: readonly VqaItem[],
): PoolProvider {
  const builder = new PoolBuilder({
    index,
    indexEmbeddings: embeddings.lazySet(indexDataset),
    gemm: defaultGemm().gemm,
    indexName: indexDataset,
  });
  const queryEmbeddings = embeddings.lazySet(queryDataset, queryKindOf(embeddings.record(queryDataset)));
  return memoizePools(async (queries, sampler, k) =>
    builder.build(queries, { ...poolSampler(sampler), k, seed: options.seed, queryEmbeddings }),
  );
}

/** A warning per deprecated retriever name, saying what to use instead. */
function deprecationWarnings(names: readonly string[]): string[] {
  return names
    .filter((name) => DEPRECATED_RETRIEVERS[name] !== undefined)
    .map((name) => {
      const { replacement, reason } = DEPRECATED_RETRIEVERS[name];
      return `retriever "${name}" is deprecated: use "${replacement}" (${reason})`;
    });
}

/** What decides an evaluation's vote scale. */
export type VoteScaleOptions = Pick<EvalOptions, "dataset" | "index" | "poolSampler" | "k" | "voteScale">;

/**
 * The scale the vote of an evaluation with these settings uses (what its `vote` retriever will read):
 * `lever run`'s guard validates the vote the evaluation will run, so it asks here (a cached calibration).
 */
export function evaluationVoteScale(ws: Workspace, options: VoteScaleOptions): VoteScale {
  return voteScaleOf(options, ws.loadItems(options.index), [], new EmbeddingCache(ws));
}

/** The vote retriever's scale: --vote-scale, else calibrated on the index (src/icl/vote-calibration.ts). */
function voteScaleOf(
  options: VoteScaleOptions,
  index: readonly VqaItem[],
  queries: readonly VqaItem[],
  embeddings: EmbeddingCache,
): VoteScale {
  if (options.voteScale !== undefined) return { scale: options.voteScale, calibration: null };
  const calibration = voteCalibration({
    dataset: options.index,
    items: index,
    embedding: (kind) => embeddings.get(options.index, kind),
    kind: VOTE_EMBEDDING,
    pool: poolSampler(evalPool(options).sampler),
    k: evalPool(options).k,
    // Evaluating on the index's own split: its questions never calibrate the vote that answers them.
    ...(options.dataset === options.index ? { avoid: new Set(queries.map((q) => q.questionId)) } : {}),
  });
  return { scale: calibration.scale, calibration };
}

/** The vote's scale and, when calibrated, the calibration behind it. */
export interface VoteScale {
  scale: number;
  calibration: VoteCalibration | null;
}

/** sha256 of every registered similarity embedding of a dataset ("dataset/kind" → sha256). */
function embeddingIdentities(ws: Workspace, dataset: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const record of ws.listEmbeddings(dataset))
    if ((EMBEDDING_KINDS as readonly string[]).includes(record.kind)) out[`${dataset}/${record.kind}`] = record.sha256;
  return out;
}

export interface PreparedEvaluation {
  /** The evaluation's run, held (src/store/stage-run.ts). */
  run: StageRun;
  runId: string;
  resumed: boolean;
  config: EvalRunConfig;
  queries: VqaItem[];
  index: VqaItem[];
  retrievers: Retriever[];
  specs: RetrieverSpec[];
  vlm: VlmSetup;
  store: PredictionStore;
  /** The task's scorer of the evaluated items (`Task.answering`). */
  answering: AnswerScoring;
  /** Things the user should know (printed on stderr by the CLI). */
  warnings: string[];
  /** Resolved settings worth showing (e.g. where a selector's pool settings came from). */
  notes: string[];
  /** The vote retriever's scale, when it is evaluated. */
  vote: VoteScale | null;
}

/** Refuses, before any work, a no-training retriever the datasets' task does not have (the vote on captions). */
function checkTaskRetrievers(task: Task<unknown>, specs: RetrieverSpec[]): RetrieverSpec[] {
  for (const spec of specs)
    if (spec.kind !== "selector" && ![...task.baselines, ...task.references].includes(spec.kind))
      throw new LeverError(
        `the ${spec.kind} retriever does not run on ${task.name} data (its retrievers: ${[...task.baselines, ...task.references, "selector:CKPT"].join(", ")})`,
        { field: "--retriever" },
      );
  return specs;
}

/**
 * Loads a `selector:CKPT` retriever: its pool and embedding are the ones given, else its checkpoint's
 * (noted, with where each came from).
 */
function selectorLoader(
  ws: Workspace,
  options: EvalOptions,
  embeddings: EmbeddingCache,
  index: VqaItem[],
  notes: string[],
): (checkpoint: string) => Promise<ReturnType<typeof loadSelector>> {
  return async (checkpoint) => {
    const selector = loadSelector(
      resolveCheckpoint(ws, checkpoint, "--retriever"),
      { poolSampler: options.poolSampler, k: options.k, embedding: options.selectorEmbedding },
      {
        query: (kind) => embeddings.query(options.dataset, kind),
        index: (kind) => embeddings.get(options.index, kind),
        indexItems: () => ({ dataset: options.index, items: index }),
      },
    );
    const { sources } = selector;
    notes.push(
      `${selector.label}: pool ${selector.sampler} (${sources.poolSampler}), K=${selector.k} (${sources.k}), ` +
        `embedding ${selector.embedding} (${sources.embedding})`,
    );
    return selector;
  };
}

/** Resolves data, VLM, pools and retrievers, and finds (or creates) the run. */
export async function prepareEvaluation(
  ws: Workspace,
  options: EvalOptions,
  hooks: { wrapBackend?: (backend: Vlm) => Vlm; exclude?: ReadonlySet<string> } = {},
): Promise<PreparedEvaluation> {
  const dataset = ws.requireDataset(options.dataset);
  const indexRecord = ws.requireDataset(options.index);
  const task = stageTask("eval", { evaluation: dataset, index: indexRecord });
  const { exclude } = hooks;
  const candidates = ws.loadItems(options.dataset).filter((item) => !exclude?.has(item.questionId));
  const queries = selectSubset(candidates, options.queries, options.seed);
  const index = ws.loadItems(options.index);
  const specs = checkTaskRetrievers(task, parseRetrieverList(options.retrievers));
  const maxShots = Math.max(0, ...options.shots);
  const warnings = deprecationWarnings(options.retrievers);
  const vlm = createVlm(ws, options, dataset, { seed: options.seed, wrapBackend: hooks.wrapBackend });

  const config = evalRunConfig(options, {
    datasetItemsHash: dataset.itemsHash,
    indexItemsHash: indexRecord.itemsHash,
    vlmId: vlm.backend.id,
    metric: task.metricRecord(options.metricVariant),
    embeddings: { ...embeddingIdentities(ws, options.dataset), ...embeddingIdentities(ws, options.index) },
    ...(exclude !== undefined ? { excluded: hashValue([...exclude].sort()) } : {}),
  });
  const notes: string[] = [];
  const embeddings = new EmbeddingCache(ws);
  const pools = workspacePools(embeddings, options, options.dataset, options.index, index);
  const order = options.order as PromptOrder;
  const vote = specs.some((s) => s.kind === "vote") ? voteScaleOf(options, index, queries, embeddings) : null;
  if (vote !== null)
    notes.push(vote.calibration ? calibrationText(vote.calibration) : `vote scale ρ = ${vote.scale} (--vote-scale)`);
  const retrievers: Retriever[] = [];
  for (const spec of specs)
    retrievers.push(
      await createRetriever(spec, {
        pools,
        // The pool the run's identity holds (`evalPool`): pool retrievers read what was hashed.
        poolSampler: config.pool.sampler,
        k: config.pool.k,
        maxShots,
        vote: voteChooser({
          query: (kind) => embeddings.query(options.dataset, kind),
          index: (kind) => embeddings.get(options.index, kind),
          items: index,
          weighting: () => {
            if (vote === null) throw new Error("prepareEvaluation: the vote's weighting was not resolved");
            return { kind: "rank", scale: vote.scale };
          },
        }),
        ...(specs.some((s) => s.kind === "consensus") ? { consensus: consensusChooser(index) } : {}),
        ...simulatorRetrievers(vlm, index, order, options.seed),
        loadSelector: selectorLoader(ws, options, embeddings, index, notes),
      }),
    );

  // The run is found or created (and held) only once every retriever could be built (no orphan runs).
  const run = openStageRun(ws, {
    kind: "eval",
    stage: EVAL_STAGE,
    config,
    seed: options.seed,
    name: options.run,
    nameFlag: "--run",
    work: "items",
    note: (text) => notes.push(text),
  });

  return {
    run,
    runId: run.runId,
    resumed: run.opened !== "new",
    config,
    queries,
    index,
    retrievers,
    specs,
    vlm,
    store: workspacePredictionStore(ws),
    answering: task.answering({ references: queries, variant: options.metricVariant }),
    warnings,
    notes,
    vote,
  };
}
