/**
 * The pool contract (docs/architecture.md): `pool(query, index, sampler, K, seed) → itemId[]`, the single way
 * candidate demonstrations are chosen everywhere.
 *
 * - The query itself and every index item sharing its image id are never in its pool.
 * - A pool has exactly K distinct index question ids.
 * - `random`: K items drawn uniformly without replacement from the eligible index items, from the
 *   stream `Rng(seed).child("pool:random").child(queryId)`, so a query's pool never depends on which
 *   other queries are built with it.
 * - `text-sim` / `image-sim` / `joint-sim`: exact cosine top-K on that embedding, most similar first.
 * - `mix`: quotas by ratio (random, text, image; floor for all but the last, which takes the rest,
 *   as the Python MixSimSampler), filled in that order; a sampler whose next item is already in the
 *   pool skips it and takes its next one, so the pool is de-duplicated and every quota is met.
 *   Order inside the pool: the random part, then the text part (by similarity), then the image part.
 */
import type { EmbeddingKind, EmbeddingMatrix } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { LeverError } from "../util/errors.js";
import { Rng } from "../util/rng.js";
import { cosineTopK, type Gemm, unitRows } from "./search.js";

export const SAMPLERS = ["random", "text-sim", "image-sim", "joint-sim", "mix"] as const;
export type SamplerName = (typeof SAMPLERS)[number];

/**
 * "The query's pool" when nothing says otherwise: the 32 most similar index items on the joint embedding.
 * Chosen by measurement (docs/training.md, "What to expect"): with a mix pool (half random) the chain fell
 * below top-k on an outside world and was worse on the simulator too; a similarity pool holds top-k's
 * own choices, so the selector can at worst keep them.
 */
export const DEFAULT_POOL = { sampler: "joint-sim", k: 32 } as const satisfies { sampler: SamplerName; k: number };

/** The embedding each similarity sampler ranks by. */
export const SIMILARITY_KIND: Record<Exclude<SamplerName, "random" | "mix">, EmbeddingKind> = {
  "text-sim": "text",
  "image-sim": "image",
  "joint-sim": "joint",
};

/** Shares of the mix sampler; must be non-negative and sum to 1. */
export interface MixRatios {
  random: number;
  text: number;
  image: number;
}

export const DEFAULT_MIX_RATIOS: MixRatios = { random: 0.5, text: 0.25, image: 0.25 };

export type EmbeddingSet = Partial<Record<EmbeddingKind, EmbeddingMatrix>>;

/** A sampler with its settings resolved: the mix sampler always carries its shares (`poolSampler`). */
export type PoolSampler = { sampler: Exclude<SamplerName, "mix"> } | { sampler: "mix"; ratios: MixRatios };

/**
 * A sampler name and its settings' shares ([random, text, image] or as recorded in a pool set; absent: the defaults) as a
 * PoolSampler: the one place the mix shares get their default, called where settings are read.
 */
export function poolSampler(sampler: SamplerName, ratios?: readonly number[] | MixRatios): PoolSampler {
  if (sampler !== "mix") return { sampler };
  if (ratios === undefined) return { sampler, ratios: DEFAULT_MIX_RATIOS };
  return { sampler, ratios: "random" in ratios ? ratios : { random: ratios[0], text: ratios[1], image: ratios[2] } };
}

export type PoolRequest = PoolSampler & {
  k: number;
  seed: number;
  /** Embeddings of the queries, by kind (needed by similarity samplers and mix). */
  queryEmbeddings?: EmbeddingSet;
};

export interface PoolBuilderOptions {
  /** The candidate universe: every item of the index dataset. */
  index: readonly VqaItem[];
  /** Index embeddings by kind; every index item needs a row in each kind that is used. */
  indexEmbeddings?: EmbeddingSet;
  gemm?: Gemm;
  /** Name of the index dataset, for error messages. */
  indexName?: string;
}

/** Mix quotas: floor(K·ratio) for random and text, the remainder for image. */
export function mixQuotas(k: number, ratios: MixRatios): [random: number, text: number, image: number] {
  const shares = [ratios.random, ratios.text, ratios.image];
  if (shares.some((r) => !(r >= 0)) || Math.abs(shares[0] + shares[1] + shares[2] - 1) > 1e-9)
    throw new LeverError(`mix ratios must be non-negative and sum to 1, got ${shares.join(",")}`, {
      field: "ratios",
    });
  const random = Math.floor(k * ratios.random + 1e-9);
  const text = Math.floor(k * ratios.text + 1e-9);
  return [random, text, k - random - text];
}

/**
 * Builds pools against one index. Preparing the index (image groups, unit-length embedding rows
 * in index order) happens once per builder, so evaluation and data generation can reuse it.
 */
export class PoolBuilder {
  private readonly index: readonly VqaItem[];
  private readonly positionById = new Map<string, number>();
  private readonly positionsByImage = new Map<string, number[]>();
  private readonly unitIndex = new Map<EmbeddingKind, { data: Float32Array; dim: number }>();
  private readonly indexEmbeddings: EmbeddingSet;
  private readonly gemm?: Gemm;
  private readonly indexName: string;

  constructor(options: PoolBuilderOptions) {
    this.index = options.index;
    this.indexEmbeddings = options.indexEmbeddings ?? {};
    this.gemm = options.gemm;
    this.indexName = options.indexName ?? "index";
    options.index.forEach((item, position) => {
      if (this.positionById.has(item.questionId))
        throw new LeverError("duplicate question id in the index", {
          file: this.indexName,
          record: item.questionId,
          field: "questionId",
        });
      this.positionById.set(item.questionId, position);
      const group = this.positionsByImage.get(item.imageId);
      if (group) group.push(position);
      else this.positionsByImage.set(item.imageId, [position]);
    });
  }

  /** Prepares the index rows of these kinds now (unit length, index order) instead of at the first pool that needs them. */
  prepare(kinds: readonly EmbeddingKind[]): void {
    for (const kind of kinds) this.unitIndexRows(kind);
  }

  /** Index positions a query may never receive: itself (if in the index) and its same-image items. */
  excludedPositions(query: VqaItem): number[] {
    const out = [...(this.positionsByImage.get(query.imageId) ?? [])];
    const self = this.positionById.get(query.questionId);
    if (self !== undefined && !out.includes(self)) out.push(self);
    return out;
  }

  /** One pool per query, in query order. */
  build(queries: readonly VqaItem[], request: PoolRequest): string[][] {
    const { sampler, k, seed } = request;
    if (!SAMPLERS.includes(sampler))
      throw new LeverError(`unknown sampler "${sampler}" (expected ${SAMPLERS.join(", ")})`, { field: "sampler" });
    if (!Number.isInteger(k) || k < 1) throw new LeverError(`K must be a positive integer, got ${k}`, { field: "k" });
    if (!Number.isSafeInteger(seed)) throw new LeverError(`seed must be an integer, got ${seed}`, { field: "seed" });
    const excluded = queries.map((q) => this.excludedPositions(q));
    queries.forEach((query, i) => {
      const eligible = this.index.length - excluded[i].length;
      if (k > eligible)
        throw new LeverError(
          `K=${k} is larger than the ${eligible} eligible candidates (index "${this.indexName}" has ${this.index.length} items; the query and its ${excluded[i].length} same-image item(s) are excluded)`,
          { record: query.questionId, field: "k" },
        );
    });

    if (request.sampler === "random") {
      return queries.map((q, i) => this.positionsToIds(this.randomPositions(q, k, seed, excluded[i])));
    }
    if (request.sampler !== "mix") {
      const ranked = this.similarityRanking(
        queries,
        SIMILARITY_KIND[request.sampler],
        k,
        excluded,
        request.queryEmbeddings,
      );
      return ranked.map((positions) => this.positionsToIds(positions));
    }
    const [nRandom, nText, nImage] = mixQuotas(k, request.ratios);
    // Each similarity list is ranked K deep: enough to fill its quota after skipping every item
    // already taken by the samplers before it.
    const textRanked = nText > 0 ? this.similarityRanking(queries, "text", k, excluded, request.queryEmbeddings) : [];
    const imageRanked =
      nImage > 0 ? this.similarityRanking(queries, "image", k, excluded, request.queryEmbeddings) : [];
    return queries.map((q, i) => {
      const chosen = new Set<number>(nRandom > 0 ? this.randomPositions(q, nRandom, seed, excluded[i]) : []);
      takeUnseen(chosen, textRanked[i] ?? [], nText);
      takeUnseen(chosen, imageRanked[i] ?? [], nImage);
      return this.positionsToIds([...chosen]);
    });
  }

  private positionsToIds(positions: readonly number[]): string[] {
    return positions.map((p) => this.index[p].questionId);
  }

  private randomPositions(query: VqaItem, count: number, seed: number, excluded: readonly number[]): number[] {
    const rng = new Rng(seed).child("pool:random").child(query.questionId);
    const n = this.index.length;
    const banned = new Set(excluded);
    const eligible = n - banned.size;
    if (count * 4 > eligible) {
      // Dense draw: shuffle the eligible positions and keep a prefix.
      const all: number[] = [];
      for (let p = 0; p < n; p++) if (!banned.has(p)) all.push(p);
      return rng.shuffle(all).slice(0, count);
    }
    const chosen = new Set<number>();
    const order: number[] = [];
    while (order.length < count) {
      const p = rng.int(n);
      if (banned.has(p) || chosen.has(p)) continue;
      chosen.add(p);
      order.push(p);
    }
    return order;
  }

  private similarityRanking(
    queries: readonly VqaItem[],
    kind: EmbeddingKind,
    k: number,
    excluded: readonly number[][],
    queryEmbeddings: EmbeddingSet | undefined,
  ): number[][] {
    const index = this.unitIndexRows(kind);
    const matrix = queryEmbeddings?.[kind];
    if (matrix === undefined)
      throw new LeverError(`the queries have no "${kind}" embedding (needed by the ${kind} similarity sampler)`, {
        field: "embeddings",
      });
    if (matrix.dim !== index.dim)
      throw new LeverError(`query "${kind}" embeddings have dim ${matrix.dim} but the index has ${index.dim}`, {
        field: "dim",
      });
    const gathered = gatherRows(matrix, queries, `query ${kind} embeddings`);
    const unitQueries = unitRows(
      gathered,
      matrix.dim,
      queries.map((q) => q.questionId),
      `query ${kind} embeddings`,
    );
    const { rows } = cosineTopK(unitQueries, index.data, index.dim, { k, exclude: excluded, gemm: this.gemm });
    return queries.map((_, q) => Array.from(rows.subarray(q * k, (q + 1) * k)));
  }

  private unitIndexRows(kind: EmbeddingKind): { data: Float32Array; dim: number } {
    const cached = this.unitIndex.get(kind);
    if (cached) return cached;
    const matrix = this.indexEmbeddings[kind];
    if (matrix === undefined)
      throw new LeverError(`index "${this.indexName}" has no "${kind}" embedding`, { field: "embeddings" });
    const label = `index ${kind} embeddings`;
    const gathered = gatherRows(matrix, this.index, label);
    const prepared = {
      data: unitRows(
        gathered,
        matrix.dim,
        this.index.map((item) => item.questionId),
        label,
      ),
      dim: matrix.dim,
    };
    this.unitIndex.set(kind, prepared);
    return prepared;
  }
}

/** Adds up to `quota` entries of `ranked` not yet in `chosen`, in rank order. */
function takeUnseen(chosen: Set<number>, ranked: readonly number[], quota: number): void {
  let taken = 0;
  for (const p of ranked) {
    if (taken === quota) return;
    if (chosen.has(p)) continue;
    chosen.add(p);
    taken++;
  }
  if (taken < quota) throw new Error(`mix: similarity ranking too short (${ranked.length}) for quota ${quota}`);
}

/**
 * The matrix rows of `items`, in item order. Returns the matrix data itself when its ids are
 * exactly the items in order (the usual case: no copy of a large index).
 */
function gatherRows(matrix: EmbeddingMatrix, items: readonly VqaItem[], label: string): Float32Array {
  const { dim } = matrix;
  if (matrix.ids.length === items.length && items.every((item, i) => matrix.ids[i] === item.questionId))
    return matrix.data.subarray(0, items.length * dim);
  const rowOf = new Map(matrix.ids.map((id, row) => [id, row]));
  const out = new Float32Array(items.length * dim);
  items.forEach((item, i) => {
    const row = rowOf.get(item.questionId);
    if (row === undefined)
      throw new LeverError(`no embedding row for this item`, { file: label, record: item.questionId });
    out.set(matrix.data.subarray(row * dim, (row + 1) * dim), i * dim);
  });
  return out;
}

/** The pool contract for one query (convenience over PoolBuilder). */
export function pool(
  query: VqaItem,
  index: readonly VqaItem[],
  sampler: PoolSampler,
  k: number,
  seed: number,
  extra: Pick<PoolRequest, "queryEmbeddings"> & Omit<PoolBuilderOptions, "index"> = {},
): string[] {
  const builder = new PoolBuilder({ index, indexEmbeddings: extra.indexEmbeddings, gemm: extra.gemm });
  return builder.build([query], { ...sampler, k, seed, queryEmbeddings: extra.queryEmbeddings })[0];
}
