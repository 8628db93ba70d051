/**
 * Everything `lever serve` checks and loads before it listens, each refusal one LeverError line: the
 * checkpoint (RUN[:best] or a file, resolved as `lever eval` resolves `selector:CKPT`), opened strictly
 * with the pool sampler, K and embedding from flags, else the checkpoint, else the defaults (as
 * evaluation does); a selector trained for another index or embedding kind; an index without the
 * embeddings the selector and its pool read; an embedding model that is not the one the index was
 * embedded with; an upstream that fails the preflight.
 */

import { readFileSync } from "node:fs";
import type { EmbeddingKind, EmbeddingMatrix } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import type { PromptOrder } from "../data/trajectories.js";
import { resolveCheckpoint } from "../icl/checkpoint-ref.js";
import { type OpenedSelector, openSelector } from "../icl/selector.js";
import { PoolBuilder } from "../pools/samplers.js";
import { gemmScreen } from "../pools/search.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import type { Workspace } from "../store/workspace.js";
import { datasetTask } from "../task/dataset-task.js";
import { VQA_TASK } from "../task/vqa.js";
import { LeverError } from "../util/errors.js";
import { sha256 } from "../util/hash.js";
import { backendSettings } from "../vlm/settings.js";
import { checkRecordedModel, type Embedder, openEmbedder } from "./embedder.js";
import type { ServeOptions } from "./options.js";
import {
  encodeIndex,
  neededKinds,
  PROJECTION_BUDGET,
  poolKinds,
  projectionBytes,
  type SelectionContext,
  tableBytes,
} from "./selection.js";
import { Upstream } from "./upstream.js";

export interface ServeSetup {
  options: ServeOptions;
  selection: SelectionContext;
  /** The checkpoint file and the first 12 hex digits of its sha256. */
  checkpoint: { file: string; hash: string };
  /** Kinds a request's embeddings must cover, and each kind's width. */
  kinds: { kind: EmbeddingKind; dim: number }[];
  embedder: Embedder | null;
  upstream: Upstream;
  /** Resolved settings worth printing (where the pool settings came from). */
  notes: string[];
}

export async function prepareServe(ws: Workspace, options: ServeOptions): Promise<ServeSetup> {
  const task = datasetTask(ws.requireDataset(options.index));
  if (task.name !== VQA_TASK.name)
    throw new LeverError(`lever serve answers questions (VQA); index "${options.index}" is a ${task.name} dataset`, {
      field: "--index",
    });
  const index = ws.loadItems(options.index);
  const file = resolveCheckpoint(ws, options.checkpoint, "--checkpoint");
  const matrices = new Map<EmbeddingKind, EmbeddingMatrix>();
  const matrix = (kind: EmbeddingKind) => {
    let m = matrices.get(kind);
    if (m === undefined) matrices.set(kind, (m = loadDatasetEmbedding(ws, options.index, kind)));
    return m;
  };
  const selector = openSelector(
    file,
    { poolSampler: options.poolSampler, k: options.k, embedding: options.selectorEmbedding },
    { query: matrix, index: matrix, indexItems: () => ({ dataset: options.index, items: index }) },
  );
  checkTrainedFor(ws, selector, options, file);
  const kinds = neededKinds(selector.sampler, selector.embedding).map((kind) => ({ kind, dim: matrix(kind).dim }));
  const selection = selectionContext(selector, index, matrix, options);
  const embedder = await embedderFor(
    ws,
    options,
    kinds.map((k) => k.kind),
  );
  const upstream = new Upstream(upstreamOptions(options), options.requestTimeoutMs);
  try {
    await upstream.vlm.preflight({ scoring: false });
  } catch (error) {
    await embedder?.dispose();
    upstream.close();
    throw error;
  }
  const { sources } = selector;
  const projections =
    selection.table === undefined
      ? `the selector projects each batch's candidates (the whole index's projections would pass ${PROJECTION_BUDGET / 2 ** 20} MB)`
      : `the selector's projections of the index's ${index.length} candidates computed once (${(tableBytes(selection.table) / 2 ** 20).toFixed(0)} MB)`;
  return {
    options,
    selection,
    checkpoint: { file, hash: sha256(readFileSync(file)).slice(0, 12) },
    kinds,
    embedder,
    upstream,
    notes: [
      `${selector.label}: pool ${selector.sampler} (${sources.poolSampler}), K=${selector.k} (${sources.k}), ` +
        `embedding ${selector.embedding} (${sources.embedding})`,
      projections,
    ],
  };
}

/**
 * A selector trained on another index's (or another kind's) embeddings is refused: its training
 * recorded the sha256 of the index embedding it read (`dataHashes.indexEmbedding`), which must be this
 * index's embedding of the kind it reads. (An explicit --selector-embedding or --pool-sampler other than
 * the one it was trained with is refused when it is opened: src/icl/trained-with.ts.)
 */
function checkTrainedFor(ws: Workspace, selector: OpenedSelector, options: ServeOptions, file: string): void {
  const trained = selector.checkpoint.provenance.dataHashes.indexEmbedding;
  const record = ws.getEmbedding(options.index, selector.embedding);
  if (trained !== undefined && record !== undefined && trained !== record.sha256)
    throw new LeverError(
      `the selector was trained on another index or embedding: its index ${selector.embedding} embedding had sha256 ${trained.slice(0, 12)}, index "${options.index}"'s has ${record.sha256.slice(0, 12)}`,
      { file },
    );
}

function selectionContext(
  selector: OpenedSelector,
  index: VqaItem[],
  matrix: (kind: EmbeddingKind) => EmbeddingMatrix,
  options: ServeOptions,
): SelectionContext {
  const indexEmbeddings: Partial<Record<EmbeddingKind, EmbeddingMatrix>> = {};
  const kinds = neededKinds(selector.sampler, selector.embedding);
  for (const kind of kinds) indexEmbeddings[kind] = matrix(kind);
  const builder = new PoolBuilder({ index, indexEmbeddings, gemm: gemmScreen, indexName: options.index });
  builder.prepare(poolKinds(selector.sampler));
  return {
    selector,
    builder,
    ...(projectionBytes(selector) <= PROJECTION_BUDGET ? { table: encodeIndex(selector) } : {}),
    indexById: new Map(index.map((item) => [item.questionId, item])),
    sampler: selector.sampler,
    k: selector.k,
    seed: options.seed,
    order: options.order as PromptOrder,
  };
}

async function embedderFor(ws: Workspace, options: ServeOptions, kinds: EmbeddingKind[]): Promise<Embedder | null> {
  if (options.embedModel === undefined) {
    if (options.clientEmbeddings) return null;
    const record = ws.getEmbedding(options.index, kinds[0]);
    const model = (record?.details as { computedBy?: { model?: string } } | undefined)?.computedBy?.model;
    throw new LeverError(
      `lever serve embeds requests with the model the index was embedded with: pass --embed-model DIR${model !== undefined ? ` (lever embed compute recorded "${model}" for index "${options.index}")` : ""}, or --client-embeddings to serve only requests that carry their own embedding`,
      { field: "--embed-model" },
    );
  }
  checkRecordedModel(ws, options.index, kinds, options.embedModel);
  return openEmbedder(options.embedModel, kinds);
}

/** The OpenAI client's own settings out of the serve options (as src/icl/backend.ts picks them). */
function upstreamOptions(options: ServeOptions) {
  const { vlm: _openai, ...client } = backendSettings({ ...options, vlm: "openai" as const });
  return { ...client, seed: options.seed };
}
