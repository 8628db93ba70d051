/**
 * Pool sets as workspace artefacts (`artifacts/pools/<name>.json`, schema in ./types.ts): built
 * through the pool contract, checked against its invariants when written and when read back.
 */
import { existsSync, readFileSync } from "node:fs";
import type { VqaItem } from "../data/item.js";
import { NAME_PATTERN } from "../store/datasets.js";
import type { ArtifactRef } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { canonicalJson } from "../util/hash.js";
import {
  DEFAULT_MIX_RATIOS,
  type EmbeddingSet,
  type MixRatios,
  mixQuotas,
  PoolBuilder,
  type SamplerName,
  SIMILARITY_KIND,
  type SimilarityKind,
} from "./samplers.js";
import type { Gemm } from "./search.js";
import { type PoolSet, PoolSetSchema } from "./types.js";

export interface BuildPoolSetInput {
  queryDataset: string;
  queries: readonly VqaItem[];
  indexDataset: string;
  index: readonly VqaItem[];
  sampler: SamplerName;
  k: number;
  seed: number;
  ratios?: MixRatios;
  queryEmbeddings?: EmbeddingSet;
  indexEmbeddings?: EmbeddingSet;
  gemm?: Gemm;
  /** Extra provenance recorded in `settings` (input hashes, …). */
  provenance?: Record<string, unknown>;
}

/** Embedding kinds a sampler reads for pools of size k. */
export function embeddingKindsFor(
  sampler: SamplerName,
  k: number,
  ratios: MixRatios = DEFAULT_MIX_RATIOS,
): SimilarityKind[] {
  if (sampler === "random") return [];
  if (sampler !== "mix") return [SIMILARITY_KIND[sampler]];
  const [, text, image] = mixQuotas(k, ratios);
  return [...(text > 0 ? (["text"] as const) : []), ...(image > 0 ? (["image"] as const) : [])];
}

export function buildPoolSet(input: BuildPoolSetInput): PoolSet {
  const builder = new PoolBuilder({
    index: input.index,
    indexEmbeddings: input.indexEmbeddings,
    gemm: input.gemm,
    indexName: input.indexDataset,
  });
  const ratios = input.sampler === "mix" ? (input.ratios ?? DEFAULT_MIX_RATIOS) : undefined;
  const built = builder.build(input.queries, {
    sampler: input.sampler,
    k: input.k,
    seed: input.seed,
    ratios,
    queryEmbeddings: input.queryEmbeddings,
  });
  const pools: Record<string, string[]> = {};
  input.queries.forEach((query, i) => {
    pools[query.questionId] = built[i];
  });
  const settings: Record<string, unknown> = {
    exclusions: "query and same-image items",
    ...(input.sampler === "random" ? { stream: "Rng(seed).child('pool:random').child(questionId)" } : {}),
    ...(input.sampler !== "random" ? { similarity: "exact cosine, float64 re-scored, ties to lower index row" } : {}),
    ...(ratios !== undefined ? { ratios, quotas: mixQuotas(input.k, ratios), order: "random, text, image" } : {}),
    ...(input.provenance ?? {}),
  };
  const poolSet: PoolSet = {
    format: "lever.pools/1",
    sampler: input.sampler,
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

/** Throws unless every pool has exactly k distinct ids. */
export function checkPoolSet(poolSet: PoolSet, file: string): void {
  for (const [queryId, ids] of Object.entries(poolSet.pools)) {
    if (ids.length !== poolSet.k)
      throw new LeverError(`pool has ${ids.length} candidates, expected k=${poolSet.k}`, {
        file,
        record: queryId,
        field: "pools",
      });
    if (new Set(ids).size !== ids.length)
      throw new LeverError("pool contains a duplicate candidate", { file, record: queryId, field: "pools" });
    if (ids.includes(queryId))
      throw new LeverError("pool contains the query itself", { file, record: queryId, field: "pools" });
  }
}

export function poolArtifactPath(name: string): string {
  if (!NAME_PATTERN.test(name))
    throw new LeverError(`pool set name must be letters, digits, ".", "_", "-" (got "${name}")`, { field: "--out" });
  return `pools/${name}.json`;
}

export function writePoolSet(ws: Workspace, name: string, poolSet: PoolSet): ArtifactRef {
  checkPoolSet(poolSet, poolArtifactPath(name));
  return ws.writeArtifact(poolArtifactPath(name), `${canonicalJson(poolSet)}\n`);
}

export function readPoolSet(ws: Workspace, name: string): PoolSet {
  const path = ws.artifactPath(poolArtifactPath(name));
  if (!existsSync(path)) throw new LeverError("no such pool set", { file: path });
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new LeverError(`not valid JSON (${(error as Error).message})`, { file: path });
  }
  const parsed = PoolSetSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new LeverError(issue.message, { file: path, field: issue.path.join(".") || undefined });
  }
  checkPoolSet(parsed.data, path);
  return parsed.data;
}
