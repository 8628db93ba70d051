/**
 * Lever-Plus sampler caches (docs/provenance.md#samplers) → PoolSet. File
 * `<ds>-<SamplerName>-anchor_sample_num: <N>:<K>.json` = `{"<anchor idx>": [K candidate idx]}`;
 * anchors are rows of the query dataset, candidates rows of the index dataset (both the train
 * split in Lever-Plus). The pool contract (docs/architecture.md) forbids the query itself and items sharing
 * its image; Lever-Plus samplers did not enforce that, so such candidates are an error unless the
 * caller asks to drop them. Pool sets hold exactly K per query, so dropping cuts every pool to the
 * shortest remaining length (sampler order kept; counts recorded in the pool set's settings).
 */
import { z } from "zod";
import { LeverError } from "../../util/errors.js";
import { minOf } from "../../util/extent.js";
import { parseOrThrow } from "../../util/validate.js";
import { type PoolSet, PoolSetSchema } from "../pool-set.js";
import { type DatasetIndex, findDuplicate, idOfRow, parseRowKey } from "./common.js";

const RawPoolSchema = z.array(z.number().int());

export interface SamplerPoolImportOptions {
  /** Sampler name, e.g. "RandSampler" (see samplerFromFileName). */
  sampler: string;
  /** Pool size; by default the length of the first pool. Every pool must have it. */
  k?: number;
  /** The seed the cache was drawn with (Lever-Plus samplers use 42). */
  seed?: number;
  file?: string;
  sha256?: string;
  /** "drop": remove candidates that are the query or share its image (then cut all pools to the shortest). */
  onConflict?: "error" | "drop";
}

/** Sampler name and K from a cache file name such as `okvqa-RandSampler-anchor_sample_num: 800:64.json`. */
export function samplerFromFileName(name: string): { sampler?: string; k?: number } {
  const match = /-([A-Za-z0-9_]+)-anchor_sample_num:\s*\d+:(\d+)/.exec(name);
  return match === null ? {} : { sampler: match[1], k: Number(match[2]) };
}

export interface PoolImportResult {
  set: PoolSet;
  warnings: string[];
  /** Candidates removed by onConflict "drop". */
  dropped: number;
}

export function importSamplerPools(
  json: unknown,
  indexItems: DatasetIndex,
  queryItems: DatasetIndex,
  options: SamplerPoolImportOptions,
): PoolImportResult {
  const file = options.file ?? "<sampler cache>";
  if (json === null || typeof json !== "object" || Array.isArray(json))
    throw new LeverError("sampler cache must be a JSON object keyed by anchor idx", { file });
  const sameDataset = indexItems.name === queryItems.name;
  let k = options.k;
  let dropped = 0;
  const pools: Record<string, string[]> = {};
  for (const [key, raw] of Object.entries(json as Record<string, unknown>)) {
    const queryRow = parseRowKey(key, file);
    const queryId = idOfRow(queryItems, queryRow, { file, record: key, field: "(key)" });
    const rows = parseOrThrow(RawPoolSchema, raw, { file, record: key });
    k ??= rows.length;
    if (rows.length !== k)
      throw new LeverError(
        `pool has ${rows.length} candidates, expected K = ${k}${options.k === undefined ? " (the size of the first pool)" : ""}`,
        { file, record: key },
      );
    const duplicate = findDuplicate(rows);
    if (duplicate !== undefined)
      throw new LeverError(`${rows[duplicate[1]]} appears twice (also at [${duplicate[0]}])`, {
        file,
        record: key,
        field: `[${duplicate[1]}]`,
      });
    const queryImage = queryItems.imageIds?.[queryRow];
    const kept: string[] = [];
    rows.forEach((r, i) => {
      const id = idOfRow(indexItems, r, { file, record: key, field: `[${i}]` });
      const conflict =
        sameDataset && r === queryRow
          ? "is the query itself"
          : queryImage !== undefined && indexItems.imageIds?.[r] === queryImage
            ? `shares image ${queryImage} with the query`
            : undefined;
      if (conflict === undefined) kept.push(id);
      else if (options.onConflict === "drop") dropped++;
      else
        throw new LeverError(
          `candidate ${r} (question ${id}) ${conflict}; the pool contract forbids it (use --drop-conflicts to remove such candidates)`,
          { file, record: key, field: `[${i}]` },
        );
    });
    pools[queryId] = kept;
  }
  if (k === undefined) throw new LeverError("sampler cache holds no pools", { file });
  // Pool sets hold exactly K candidates per query: after dropping, cut every pool to the shortest
  // (keeping the sampler's order) and record it.
  const finalK = dropped > 0 ? minOf(Object.values(pools).map((p) => p.length)) : k;
  if (finalK === 0) throw new LeverError("dropping conflicting candidates left an empty pool", { file });
  if (finalK < k) for (const key of Object.keys(pools)) pools[key] = pools[key].slice(0, finalK);
  const set: PoolSet = {
    format: "lever.pools/1",
    sampler: options.sampler,
    settings: {
      importedFrom: "leverplus.sampler_cache",
      ...(options.file !== undefined ? { file: options.file } : {}),
      ...(options.sha256 !== undefined ? { sha256: options.sha256 } : {}),
      droppedConflicts: dropped,
      ...(finalK < k ? { originalK: k } : {}),
    },
    k: finalK,
    seed: options.seed ?? 42,
    indexDataset: indexItems.name,
    queryDataset: queryItems.name,
    pools,
  };
  const warnings =
    dropped > 0
      ? [
          `${file}: dropped ${dropped} candidates that were the query or shared its image; every pool cut to K = ${finalK} (was ${k})`,
        ]
      : [];
  return { set: PoolSetSchema.parse(set), warnings, dropped };
}
