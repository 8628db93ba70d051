/**
 * `lever pools` as a function: every query of a dataset gets its K candidates from the index through
 * the pool contract, with the inputs' identities (items and embedding hashes) recorded in the pool
 * set, stored as `artifacts/pools/NAME.json` (identical content is a no-op, other content needs
 * `replace`, and a pool set a run read is never replaced). Used by the CLI and by `lever run`.
 */
import { z } from "zod";
import type { EmbeddingKind } from "../data/embeddings.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { poolArtifactPath, writePoolSet } from "../store/sets.js";
import type { ArtifactRef, Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { buildPoolSet, embeddingKindsFor } from "./artifact.js";
import {
  DEFAULT_MIX_RATIOS,
  DEFAULT_POOL,
  type EmbeddingSet,
  type MixRatios,
  poolSampler,
  SAMPLERS,
} from "./samplers.js";
import { defaultGemm } from "./search.js";

const share = z.number().min(0).max(1);

/** The fields (other schemas spread or omit them); `PoolsSettingsSchema` adds the cross-field checks. */
export const PoolsFieldsSchema = z
  .object({
    queries: z.string().min(1).describe("dataset whose items get a pool"),
    index: z.string().min(1).describe("dataset the candidates come from (the train split)"),
    sampler: z.enum(SAMPLERS).default(DEFAULT_POOL.sampler).describe("how candidates are chosen"),
    k: z.number().int().positive().default(DEFAULT_POOL.k).describe("candidates per query"),
    seed: z.number().int().default(0).describe("seed of the random draws"),
    ratios: z
      .tuple([share, share, share])
      .optional()
      .describe(
        `mix sampler: shares of random, text-similar and image-similar candidates (default ${DEFAULT_MIX_RATIOS.random},${DEFAULT_MIX_RATIOS.text},${DEFAULT_MIX_RATIOS.image})`,
      ),
    out: z
      .string()
      .min(1)
      .optional()
      .describe("artefact name: artifacts/pools/NAME.json (default <queries>.<sampler>.k<K>.s<seed>)"),
    replace: z.boolean().default(false).describe("overwrite an existing pool set of that name that has other content"),
  })
  .strict();

/** Mix shares only for the mix sampler, and they sum to 1. */
export function checkPoolsSettings(s: { sampler: string; ratios?: readonly number[] }, ctx: z.RefinementCtx): void {
  if (s.ratios !== undefined && s.sampler !== "mix")
    ctx.addIssue({ code: "custom", path: ["ratios"], message: "ratios only apply to the mix sampler" });
  if (s.ratios !== undefined && Math.abs(s.ratios[0] + s.ratios[1] + s.ratios[2] - 1) > 1e-9)
    ctx.addIssue({ code: "custom", path: ["ratios"], message: "the three shares must sum to 1" });
}

export const PoolsSettingsSchema = PoolsFieldsSchema.superRefine(checkPoolsSettings);
export type PoolsSettings = z.output<typeof PoolsSettingsSchema>;

export interface PoolsSummary {
  name: string;
  path: string;
  sha256: string;
  queries: number;
  index: number;
  sampler: string;
  k: number;
  seed: number;
  /** The mix sampler's shares as used (defaults filled in). */
  ratios?: MixRatios;
  /** The GEMM path of the similarity search (null for the random sampler). */
  gemm: string | null;
  seconds: number;
}

export function poolSetName(s: Pick<PoolsSettings, "out" | "queries" | "sampler" | "k" | "seed">): string {
  return s.out ?? `${s.queries}.${s.sampler}.k${s.k}.s${s.seed}`;
}

/**
 * Builds and writes a pool set. `queryKind` maps a kind the sampler ranks by to the QUERY embedding
 * it compares with the index's (src/task/query-embedding.ts: a caption query is its image, so its
 * "text" similarity is image → caption); the identity by default.
 */
export function makePools(
  ws: Workspace,
  s: PoolsSettings,
  queryKind: (kind: EmbeddingKind) => EmbeddingKind = (kind) => kind,
): PoolsSummary & { ref: ArtifactRef } {
  const started = performance.now();
  const name = poolSetName(s);
  poolArtifactPath(name); // validate the name before any work
  const queryRecord = ws.requireDataset(s.queries);
  const indexRecord = ws.requireDataset(s.index);
  const queries = ws.loadItems(queryRecord.name);
  const index = ws.loadItems(indexRecord.name);
  if (queries.length === 0) throw new LeverError(`dataset "${s.queries}" has no items`, { field: "--queries" });
  const pool = poolSampler(s.sampler, s.ratios);
  const kinds = embeddingKindsFor(pool, s.k);
  const queryEmbeddings: EmbeddingSet = {};
  const indexEmbeddings: EmbeddingSet = {};
  const embeddingHashes: Record<string, string> = {};
  for (const kind of kinds) {
    queryEmbeddings[kind] = loadDatasetEmbedding(ws, s.queries, queryKind(kind));
    indexEmbeddings[kind] = loadDatasetEmbedding(ws, s.index, kind);
    embeddingHashes[`${s.queries}/${queryKind(kind)}`] = ws.getEmbedding(s.queries, queryKind(kind))?.sha256 ?? "";
    embeddingHashes[`${s.index}/${kind}`] = ws.getEmbedding(s.index, kind)?.sha256 ?? "";
  }
  const { gemm, path: gemmPath } = defaultGemm();
  const poolSet = buildPoolSet({
    queryDataset: s.queries,
    queries,
    indexDataset: s.index,
    index,
    pool,
    k: s.k,
    seed: s.seed,
    queryEmbeddings,
    indexEmbeddings,
    gemm,
    provenance: {
      itemsHashes: { [s.queries]: queryRecord.itemsHash, [s.index]: indexRecord.itemsHash },
      ...(kinds.length > 0 ? { embeddings: embeddingHashes } : {}),
    },
  });
  const ref = writePoolSet(ws, name, poolSet, { replace: s.replace });
  return {
    ref,
    name,
    path: ref.path,
    sha256: ref.sha256,
    queries: queries.length,
    index: index.length,
    sampler: s.sampler,
    k: s.k,
    seed: s.seed,
    ...(pool.sampler === "mix" ? { ratios: pool.ratios } : {}),
    gemm: kinds.length > 0 ? gemmPath : null,
    seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
  };
}
