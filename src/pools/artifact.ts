/**
 * Builds a pool set (src/data/pool-set.ts) through the pool contract: every query's K candidates from
 * one sampler, with the settings that made them recorded for reproducibility. Stored with
 * `writePoolSet` (src/store/sets.ts).
 */

import type { EmbeddingKind } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { checkPoolSet, type PoolSet } from "../data/pool-set.js";
import { type EmbeddingSet, mixQuotas, PoolBuilder, type PoolSampler, SIMILARITY_KIND } from "./samplers.js";
import type { Gemm } from "./search.js";

export interface BuildPoolSetInput {
  queryDataset: string;
  queries: readonly VqaItem[];
  indexDataset: string;
  index: readonly VqaItem[];
  pool: PoolSampler;
  k: number;
  seed: number;
  queryEmbeddings?: EmbeddingSet;
  indexEmbeddings?: EmbeddingSet;
  gemm?: Gemm;
  /** Extra provenance recorded in `settings` (input hashes, …). */
  provenance?: Record<string, unknown>;
}

/** Embedding kinds a sampler reads for pools of size k. */
export function embeddingKindsFor(pool: PoolSampler, k: number): EmbeddingKind[] {
  if (pool.sampler === "random") return [];
  if (pool.sampler !== "mix") return [SIMILARITY_KIND[pool.sampler]];
  const [, text, image] = mixQuotas(k, pool.ratios);
  return [...(text > 0 ? (["text"] as const) : []), ...(image > 0 ? (["image"] as const) : [])];
}

export function buildPoolSet(input: BuildPoolSetInput): PoolSet {
  const builder = new PoolBuilder({
    index: input.index,
    indexEmbeddings: input.indexEmbeddings,
    gemm: input.gemm,
    indexName: input.indexDataset,
  });
  const ratios = input.pool.sampler === "mix" ? input.pool.ratios : undefined;
  const built = builder.build(input.queries, {
    ...input.pool,
    k: input.k,
    seed: input.seed,
    queryEmbeddings: input.queryEmbeddings,
  });
  const pools: Record<string, string[]> = {};
  input.queries.forEach((query, i) => {
    pools[query.questionId] = built[i];
  });
  const settings: Record<string, unknown> = {
    exclusions: "query and same-image items",
    ...(input.pool.sampler === "random" ? { stream: "Rng(seed).child('pool:random').child(questionId)" } : {}),
    ...(input.pool.sampler !== "random"
      ? { similarity: "exact cosine, float64 re-scored, ties to lower index row" }
      : {}),
    ...(ratios !== undefined ? { ratios, quotas: mixQuotas(input.k, ratios), order: "random, text, image" } : {}),
    ...(input.provenance ?? {}),
  };
  const poolSet: PoolSet = {
    format: "lever.pools/1",
    sampler: input.pool.sampler,
    settings,
    k: input.k,
    seed: input.seed,
    indexDataset: input.indexDataset,
    queryDataset: input.queryDataset,
    pools,
  };
  checkPoolSet(poolSet, "pool set");
  return poolSet;
}
