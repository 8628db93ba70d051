/**
 * The selection pipeline of `lever serve`, made of evaluation's own pieces so a served prompt is the one
 * `lever eval` sends for the same question: the query's pool through the pool contract (`PoolBuilder`,
 * same sampler, K, seed and mix ratios as evaluation), the selector's inputs from src/selector/inputs.ts
 * with the checkpoint opened by src/icl/selector.ts, greedy decoding (`predict`), the runner's
 * demonstration check (`checkDemonstrations`) and the one prompt builder (`buildPrompt`, prompt order).
 *
 * Requests that arrive together are batched (`SelectionBatcher`): one pool search (one GEMM over the
 * index) and one selector pass per batch and shot count, instead of one per request. The selector's
 * candidate projections are computed for the whole index once at start-up (`encodeIndex`), the same
 * rows `lever eval` projects per batch (src/selector/inputs.ts `indexTableData`), so a batch projects
 * only its queries.
 */
import { createHash } from "node:crypto";
import { cosine, type EmbeddingKind, type EmbeddingMatrix } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import type { PromptOrder } from "../data/trajectories.js";
import { checkDemonstrations } from "../eval/retrievers.js";
import { buildPrompt } from "../icl/answer.js";
import type { OpenedSelector } from "../icl/selector.js";
import {
  type EmbeddingSet,
  type PoolBuilder,
  poolSampler,
  type SamplerName,
  SIMILARITY_KIND,
} from "../pools/samplers.js";
import { predict } from "../selector/decode.js";
import { indexTableData, resolvePool, selectorInput, selectorInputOnIndex } from "../selector/inputs.js";
import type { TableEncoding } from "../selector/model.js";
import type { VlmPrompt } from "../vlm/types.js";

/** One request's query: its question, the image key its prompt names, and its embedding of each kind needed. */
export interface ServedQuery {
  question: string;
  /** The key the prompt's query image is rendered under (its data: URL is supplied by the upstream step); null: no image. */
  imageKey: string | null;
  embeddings: Partial<Record<EmbeddingKind, Float32Array>>;
  shots: number;
}

export interface ChosenDemonstration {
  /** The index item's question id. */
  id: string;
  image: string | null;
  question: string;
  /** The answer the prompt shows. */
  answer: string;
  /** Cosine between the query and the demonstration on the selector's embedding. */
  score: number;
}

export interface Selection {
  /** Demonstrations in PROMPT order (the order the upstream sees them). */
  demonstrations: ChosenDemonstration[];
  /** Σ log p of the greedy trajectory under the selector (null at zero shots). */
  logprob: number | null;
  prompt: VlmPrompt;
  poolMs: number;
  selectMs: number;
}

export interface SelectionContext {
  selector: OpenedSelector;
  builder: PoolBuilder;
  indexById: ReadonlyMap<string, VqaItem>;
  sampler: SamplerName;
  k: number;
  seed: number;
  order: PromptOrder;
  /** The selector's projections of every index row (`encodeIndex`); without it each batch projects its candidates. */
  table?: TableEncoding;
}

/** Largest whole-index projections `lever serve` computes at start-up (bytes); above it each batch projects its own. */
export const PROJECTION_BUDGET = 2 ** 30;

/**
 * Bytes the whole-index projections may take, at most: per row the projected and normalised rows, the
 * linear parts of candidate options (H each) and the cosine prior's input rows (d).
 */
export function projectionBytes(selector: OpenedSelector): number {
  const { d, hidden } = selector.model.config;
  return 4 * selector.inputSources.index.rowOf.size * (3 * hidden + d);
}

/**
 * The selector's candidate projections of the whole index, computed once: row r is index row r as
 * `selectorInput` packs it (centred when the selector reads centred embeddings), so a slot's projection
 * is the one evaluation computes for the same candidate in its own batch.
 */
export function encodeIndex(selector: OpenedSelector): TableEncoding {
  return selector.model.encodeTable(indexTableData(selector.inputSources));
}

/** Bytes the whole-index projections hold (for the start-up notes). */
export function tableBytes(table: TableEncoding): number {
  const parts = [table.projected, table.candHat, table.inputHat, table.linear?.rows, table.linear?.items];
  return parts.reduce((sum, t) => sum + (t ? t.data.byteLength : 0), 0);
}

/** The embedding kinds a request must bring (or be given in-process): the selector's and its pool sampler's. */
export function neededKinds(sampler: SamplerName, selectorKind: EmbeddingKind): EmbeddingKind[] {
  return [...new Set<EmbeddingKind>([selectorKind, ...poolKinds(sampler)])];
}

/** The embedding kinds a pool sampler ranks by. */
export function poolKinds(sampler: SamplerName): EmbeddingKind[] {
  if (sampler === "mix") return ["text", "image"];
  return sampler === "random" ? [] : [SIMILARITY_KIND[sampler]];
}

/**
 * The query as an item of the pool contract: its question id is a hash of its content (so the random
 * part of a random or mix pool is the same for the same request), its image id too, so no index item
 * shares it and nothing is excluded from its pool — a served image is never looked up in the index.
 */
export function servedItem(query: ServedQuery): VqaItem {
  const hash = createHash("sha256").update(JSON.stringify([query.question, query.imageKey]));
  for (const kind of Object.keys(query.embeddings).sort() as EmbeddingKind[]) {
    const row = query.embeddings[kind] as Float32Array;
    hash.update(kind).update(new Uint8Array(row.buffer, row.byteOffset, row.byteLength));
  }
  const id = `serve:${hash.digest("hex").slice(0, 24)}`;
  return {
    questionId: id,
    imageId: `${id}:image`,
    question: query.question,
    answers: [],
    answer: "",
    questionType: "",
    answerType: "",
    imagePath: query.imageKey,
  };
}

/** Selections for a batch of queries, in input order. */
export function selectBatch(ctx: SelectionContext, queries: readonly ServedQuery[]): Selection[] {
  const started = performance.now();
  const items = queries.map(servedItem);
  const selecting = queries.map((q, i) => ({ q, i })).filter(({ q }) => q.shots > 0);
  const pools =
    selecting.length === 0
      ? []
      : ctx.builder.build(
          selecting.map(({ i }) => items[i]),
          {
            ...poolSampler(ctx.sampler),
            k: ctx.k,
            seed: ctx.seed,
            queryEmbeddings: queryMatrices(
              selecting.map(({ i }) => items[i].questionId),
              selecting.map(({ q }) => q),
            ),
          },
        );
  const poolMs = performance.now() - started;
  const chosen = new Map<number, { ids: string[]; logprob: number }>();
  const byShots = new Map<number, number[]>();
  selecting.forEach(({ q }, j) => {
    byShots.set(q.shots, [...(byShots.get(q.shots) ?? []), j]);
  });
  const kind = ctx.selector.embedding;
  for (const [shots, group] of byShots) {
    const ids = group.map((j) => items[selecting[j].i].questionId);
    const rows = queryMatrices(
      ids,
      group.map((j) => selecting[j].q),
    )[kind] as EmbeddingMatrix;
    const sources = {
      ...ctx.selector.inputSources,
      query: { dim: rows.dim, data: rows.data, rowOf: new Map(ids.map((id, r) => [id, r])) },
    };
    const resolved = group.map((j, r) => resolvePool(sources, ids[r], pools[j]));
    const input =
      ctx.table === undefined ? selectorInput(resolved, sources) : selectorInputOnIndex(resolved, sources, ctx.table);
    predict(ctx.selector.model, input, { shots }).forEach((t, r) => {
      const j = group[r];
      chosen.set(selecting[j].i, { ids: t.positions.map((p) => pools[j][p]), logprob: t.logprob });
    });
  }
  const selectMs = performance.now() - started - poolMs;
  return queries.map((query, i) => {
    const pick = chosen.get(i) ?? { ids: [], logprob: null };
    checkDemonstrations(ctx.selector.label, items[i], query.shots, pick.ids, ctx.indexById);
    const prompt = buildPrompt(items[i], pick.ids, ctx.indexById, ctx.order);
    const own = query.embeddings[kind];
    const indexRows = ctx.selector.inputSources.index;
    const demonstrations = prompt.demonstrations.map((d): ChosenDemonstration => {
      const row = indexRows.rowOf.get(d.questionId) as number;
      const score =
        own === undefined
          ? Number.NaN
          : cosine(own, indexRows.data.subarray(row * indexRows.dim, (row + 1) * indexRows.dim));
      return { id: d.questionId, image: d.imagePath, question: d.question, answer: d.answer, score };
    });
    return { demonstrations, logprob: pick.logprob, prompt, poolMs, selectMs };
  });
}

/** The queries' embeddings as matrices by kind, one row per query (ids as given). */
function queryMatrices(ids: readonly string[], queries: readonly ServedQuery[]): EmbeddingSet {
  const set: EmbeddingSet = {};
  const kinds = new Set(queries.flatMap((q) => Object.keys(q.embeddings) as EmbeddingKind[]));
  for (const kind of kinds) {
    const dim = (queries[0].embeddings[kind] as Float32Array).length;
    const data = new Float32Array(queries.length * dim);
    queries.forEach((q, r) => {
      data.set(q.embeddings[kind] as Float32Array, r * dim);
    });
    set[kind] = { ids: [...ids], dim, data };
  }
  return set;
}
