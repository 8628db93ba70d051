/**
 * Selector inputs, assembled in this one place for every stage that runs the selector: SFT, rollouts,
 * RCE, GRPO offline and online, RL validation, evaluation and `lever selector predict/logprob`. What
 * the selector is shown about a query and its candidates comes from `SelectorSources`, in two steps:
 *
 *  - `resolvePool` looks a query and its pool (question ids, pool order = position order) up in the
 *    sources once — a missing row is an error naming the query and the pool entry — and gives a
 *    `ResolvedPool`, which training groups carry for the whole run;
 *  - `selectorInput` packs a batch of resolved pools into the model's `SelectorInput`: the queries'
 *    embeddings, a compact table of the distinct candidate rows (a row shared by several pools is
 *    stored and projected once, so memory stays bounded by queries × K rows however large the index)
 *    and each pool's slots in it, padded with −1 to the largest pool; `selectorInputOnIndex` packs the
 *    same batch against a whole-index table instead (`indexTableData`, projected once by `lever serve`).
 *
 * What the selector may see about a candidate beyond its embedding — its answer features and its
 * identity (docs/selector.md, "Candidate features, identity, pool attention") — comes from the
 * optional `CandidateSource` of the sources (built from the index dataset by src/icl/candidate-data.ts):
 * `resolvePool` computes each pool's features once, from the candidates' cosines to the query, and
 * `selectorInput` packs them with the identity rows. Only the candidates' (index items') data is
 * read, never the query's own annotations. A new per-candidate feature is added in
 * src/icl/candidate-data.ts, CANDIDATE_FEATURES and the model; stages build the sources with
 * `selectorSources`, resolve pools with `resolvePool` and pass both through unchanged.
 */
import { cosine, type EmbeddingMatrix, rowIndex } from "../data/embeddings.js";
import type { Data, DType } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import { normalQuantile } from "../util/normal.js";
import type { IndexIdentity } from "./checkpoint.js";
import { CANDIDATE_FEATURES } from "./config.js";
import type { SelectorInput } from "./model.js";

/** Features per candidate in every packed input (CANDIDATE_FEATURES order; the model picks its columns). */
export const FEATURE_COUNT = CANDIDATE_FEATURES.length;

/** Row-major float32 embeddings with the row of each question id. */
export interface EmbeddingTable {
  dim: number;
  data: Float32Array;
  rowOf: ReadonlyMap<string, number>;
}

/** Everything the selector can be shown about queries and candidates. */
export interface SelectorSources {
  /** Embeddings of the query dataset. */
  query: EmbeddingTable;
  /** Embeddings of the index dataset (the candidates). */
  index: EmbeddingTable;
  /** The index items' answers and identities, when the selector reads them. */
  candidates?: CandidateSource;
  /**
   * The index's mean embedding, when the selector reads centred embeddings (config.center "index-mean"):
   * `selectorInput` packs every query and candidate row as normalise(x − mean). Cosines of the prior's
   * ranks and of the features stay those of the stored embeddings.
   */
  center?: Float32Array;
}

/** The index dataset an identity table was built from (its schema is the checkpoint's `IndexIdentitySchema`). */
export type { IndexIdentity };

/** What the selector can be shown about index items besides their embeddings (src/icl/candidate-data.ts). */
export interface CandidateSource {
  /** Features [K·FEATURE_COUNT] of a pool's candidates (index-table rows) given their cosines to the query. */
  features(candRows: Int32Array, cosines: Float64Array, at: { queryId: string }): Float32Array;
  /** Identity-table row of each index-table row (−1: none). */
  identity: Int32Array;
  /** The index the identity rows belong to. */
  index: IndexIdentity;
  /** The vote feature's scale ρ the features are computed with (0: linear weights; config.voteScale). */
  voteScale: number;
}

/** One query and its pool, looked up in the sources: what every selector batch is built from. */
export interface ResolvedPool {
  queryId: string;
  /** The candidates' question ids, in pool order (= position order). */
  poolIds: readonly string[];
  /** Row of the query in the query table. */
  queryRow: number;
  /** Row of each candidate in the index table, in pool order. */
  candRows: Int32Array;
  /** Candidate features [K·FEATURE_COUNT] (only with candidate data). */
  features?: Float32Array;
  /** Each candidate's rank score in the pool by its cosine to the query (`rankScores`), for prior "rank". */
  prior: Float32Array;
}

/** Where a missing row is reported: the file that names the query, the file and field that list its pool. */
export interface PoolLocation {
  queryFile?: string;
  poolFile?: string;
  /** The pool's field in `poolFile` (default "pools"); entry j is reported as `field[j]`. */
  poolField?: string;
}

/** An embedding matrix as a table (rows by question id). */
export function embeddingTable(matrix: EmbeddingMatrix): EmbeddingTable {
  return { dim: matrix.dim, data: matrix.data, rowOf: rowIndex(matrix) };
}

/** The sources of a query and an index embedding matrix (one table when they are the same matrix). */
export function selectorSources(
  query: EmbeddingMatrix,
  index: EmbeddingMatrix,
  candidates?: CandidateSource,
  options: { center?: boolean } = {},
): SelectorSources {
  if (query.dim !== index.dim) throw new LeverError(`query embeddings have dim ${query.dim}, candidates ${index.dim}`);
  const indexTable = embeddingTable(index);
  if (candidates !== undefined && candidates.identity.length !== index.ids.length)
    throw new LeverError(
      `candidate data covers ${candidates.identity.length} index rows, the index embeddings have ${index.ids.length}`,
    );
  const sources: SelectorSources = { query: query === index ? indexTable : embeddingTable(query), index: indexTable };
  if (candidates !== undefined) sources.candidates = candidates;
  if (options.center) sources.center = meanRow(index);
  return sources;
}

/** The mean of a matrix's rows (float64 sums). */
export function meanRow(matrix: { dim: number; data: Float32Array }): Float32Array {
  const { dim, data } = matrix;
  const rows = data.length / dim;
  const sum = new Float64Array(dim);
  for (let r = 0; r < rows; r++) for (let k = 0; k < dim; k++) sum[k] += data[r * dim + k];
  return Float32Array.from(sum, (v) => (rows > 0 ? v / rows : 0));
}

/** The spread of `rankScores` (its normal scores times this). */
export const RANK_PRIOR_SCALE = 0.25;

/**
 * The prior "rank" scores of a pool: candidate k at rank r (0 = the highest cosine; ties by pool
 * position) among n gets g(r) = 0.25·Φ⁻¹(1 − (r + ½)/n) — the normal score of its rank quantile, so
 * the most similar of 32 gets +0.54, the median 0, the least similar −0.54; the scale is fixed in rank
 * space, the same for every embedding model. Depends on the cosines' order only.
 */
export function rankScores(cosines: ArrayLike<number>): Float32Array {
  const n = cosines.length;
  const order = Array.from({ length: n }, (_, k) => k).sort((a, b) => cosines[b] - cosines[a] || a - b);
  const out = new Float32Array(n);
  order.forEach((k, r) => {
    out[k] = RANK_PRIOR_SCALE * normalQuantile(1 - (r + 0.5) / n);
  });
  return out;
}

/** A query and its pool of candidate question ids, looked up in the sources. */
export function resolvePool(
  sources: SelectorSources,
  queryId: string,
  poolIds: readonly string[],
  at: PoolLocation = {},
): ResolvedPool {
  const queryRow = sources.query.rowOf.get(queryId);
  if (queryRow === undefined)
    throw new LeverError("query has no embedding row", { file: at.queryFile, record: queryId });
  const candRows = Int32Array.from(poolIds, (id, j) => {
    const row = sources.index.rowOf.get(id);
    if (row === undefined)
      throw new LeverError(`candidate "${id}" has no embedding row`, {
        file: at.poolFile,
        record: queryId,
        field: `${at.poolField ?? "pools"}[${j}]`,
      });
    return row;
  });
  const cosines = poolCosines(sources, queryRow, candRows);
  const resolved: ResolvedPool = { queryId, poolIds, queryRow, candRows, prior: rankScores(cosines) };
  if (sources.candidates !== undefined) resolved.features = sources.candidates.features(candRows, cosines, { queryId });
  return resolved;
}

/** cos(query, candidate) of each candidate over the input embeddings (`cosine`: float64, 0 for a zero row). */
export function poolCosines(sources: SelectorSources, queryRow: number, candRows: Int32Array): Float64Array {
  const d = sources.query.dim;
  const q = sources.query.data.subarray(queryRow * d, (queryRow + 1) * d);
  return Float64Array.from(candRows, (row) => cosine(q, sources.index.data.subarray(row * d, (row + 1) * d)));
}

function alloc(dtype: DType, n: number): Data {
  return dtype === "float64" ? new Float64Array(n) : new Float32Array(n);
}

/** The selector's input for a batch of resolved pools, in the model's floating-point type. */
export function selectorInput(
  pools: readonly ResolvedPool[],
  sources: SelectorSources,
  dtype: DType = "float32",
): SelectorInput {
  const d = sources.query.dim;
  const put = rowWriter(sources.center);
  const compact = new Map<number, number>();
  const input = packPools(pools, sources, dtype, (row) => {
    let c = compact.get(row);
    if (c === undefined) {
      c = compact.size;
      compact.set(row, c);
    }
    return c;
  });
  const table = alloc(dtype, compact.size * d);
  for (const [row, c] of compact) put(table, c * d, sources.index.data.subarray(row * d, (row + 1) * d));
  input.table = table;
  return input;
}

/**
 * Every index row as `selectorInput` packs a candidate (centred when the sources say so), row r = index
 * row r: the table a whole-index `TableEncoding` is built from once (`lever serve`), so a batch need not
 * project its candidates again. Each row's values are the ones `selectorInput` would copy into its table.
 */
export function indexTableData(sources: SelectorSources, dtype: DType = "float32"): Data {
  const { dim, data } = sources.index;
  if (sources.center === undefined && dtype === "float32") return data; // copied as it is: no copy needed
  const rows = data.length / dim;
  const put = rowWriter(sources.center);
  const table = alloc(dtype, rows * dim);
  for (let r = 0; r < rows; r++) put(table, r * dim, data.subarray(r * dim, (r + 1) * dim));
  return table;
}

/**
 * `selectorInput` over a whole-index table (`indexTableData`, or its `TableEncoding`): the same queries,
 * features, identities and prior, with each slot naming its candidate's index row instead of a row of
 * a compact table.
 */
export function selectorInputOnIndex(
  pools: readonly ResolvedPool[],
  sources: SelectorSources,
  table: SelectorInput["table"],
  dtype: DType = "float32",
): SelectorInput {
  const input = packPools(pools, sources, dtype, (row) => row);
  input.table = table;
  return input;
}

/** The queries, slots (each candidate row through `slotOf`), prior and candidate data of a batch; the table is the caller's. */
function packPools(
  pools: readonly ResolvedPool[],
  sources: SelectorSources,
  dtype: DType,
  slotOf: (indexRow: number) => number,
): SelectorInput {
  const B = pools.length;
  const d = sources.query.dim;
  const K = pools.reduce((max, p) => Math.max(max, p.candRows.length), 0);
  const queries = alloc(dtype, B * d);
  const put = rowWriter(sources.center);
  pools.forEach((p, b) => {
    put(queries, b * d, sources.query.data.subarray(p.queryRow * d, (p.queryRow + 1) * d));
  });
  const slots = new Int32Array(B * K).fill(-1);
  for (let b = 0; b < B; b++) {
    const rows = pools[b].candRows;
    for (let k = 0; k < rows.length; k++) slots[b * K + k] = slotOf(rows[k]);
  }
  const prior = alloc(dtype, B * K);
  pools.forEach((p, b) => {
    prior.set(p.prior, b * K);
  });
  const input: SelectorInput = { queries, table: alloc(dtype, 0), slots, K, prior };
  if (sources.candidates !== undefined) packCandidateData(input, pools, sources.candidates, dtype);
  return input;
}

/** Copies a row into `out` at `offset`: as it is, or as normalise(row − center) (a zero row stays zero). */
function rowWriter(center: Float32Array | undefined): (out: Data, offset: number, row: Float32Array) => void {
  if (center === undefined) return (out, offset, row) => out.set(row, offset);
  return (out, offset, row) => {
    let norm = 0;
    for (let k = 0; k < row.length; k++) norm += (row[k] - center[k]) ** 2;
    const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    for (let k = 0; k < row.length; k++) out[offset + k] = (row[k] - center[k]) * inv;
  };
}

/** Features [B·K·FEATURE_COUNT] (0 on padding) and identity rows [B·K] (−1 on padding) of a batch. */
function packCandidateData(
  input: SelectorInput,
  pools: readonly ResolvedPool[],
  candidates: CandidateSource,
  dtype: DType,
): void {
  const { K } = input;
  const F = FEATURE_COUNT;
  const features = alloc(dtype, pools.length * K * F);
  const items = new Int32Array(pools.length * K).fill(-1);
  pools.forEach((p, b) => {
    if (p.features === undefined)
      throw new Error(`selectorInput: pool of "${p.queryId}" was resolved without features`);
    features.set(p.features, b * K * F);
    for (let k = 0; k < p.candRows.length; k++) items[b * K + k] = candidates.identity[p.candRows[k]];
  });
  input.features = features;
  input.items = items;
}

/** `resolvePool` of every (query, pool) and their `selectorInput`: a batch straight from question ids. */
export function selectorInputOf(
  sources: SelectorSources,
  queries: readonly { queryId: string; poolIds: readonly string[] }[],
  dtype: DType = "float32",
): SelectorInput {
  return selectorInput(
    queries.map((q) => resolvePool(sources, q.queryId, q.poolIds)),
    sources,
    dtype,
  );
}
