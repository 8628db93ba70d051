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
 *    and each pool's slots in it, padded with −1 to the largest pool.
 *
 * What the selector may see about a candidate beyond its embedding — its answer features and its
 * identity (docs/selector.md, "Candidate features, identity, pool attention") — comes from the
 * optional `CandidateSource` of the sources (built from the index dataset by src/icl/candidates.ts):
 * `resolvePool` computes each pool's features once, from the candidates' cosines to the query, and
 * `selectorInput` packs them with the identity rows. Only the candidates' (index items') data is
 * read, never the query's own annotations. A new per-candidate feature is added in
 * src/icl/candidates.ts, CANDIDATE_FEATURES and the model; stages build the sources with
 * `selectorSources`, resolve pools with `resolvePool` and pass both through unchanged.
 */
import { cosine, type EmbeddingMatrix, rowIndex } from "../data/embeddings.js";
import type { Data, DType } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
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
}

/** The index dataset an identity table was built from (its schema is the checkpoint's `IndexIdentitySchema`). */
export type { IndexIdentity };

/** What the selector can be shown about index items besides their embeddings (src/icl/candidates.ts). */
export interface CandidateSource {
  /** Features [K·FEATURE_COUNT] of a pool's candidates (index-table rows) given their cosines to the query. */
  features(candRows: Int32Array, cosines: Float64Array, at: { queryId: string }): Float32Array;
  /** Identity-table row of each index-table row (−1: none). */
  identity: Int32Array;
  /** The index the identity rows belong to. */
  index: IndexIdentity;
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
): SelectorSources {
  if (query.dim !== index.dim) throw new LeverError(`query embeddings have dim ${query.dim}, candidates ${index.dim}`);
  const indexTable = embeddingTable(index);
  if (candidates !== undefined && candidates.identity.length !== index.ids.length)
    throw new LeverError(
      `candidate data covers ${candidates.identity.length} index rows, the index embeddings have ${index.ids.length}`,
    );
  const sources: SelectorSources = { query: query === index ? indexTable : embeddingTable(query), index: indexTable };
  if (candidates !== undefined) sources.candidates = candidates;
  return sources;
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
  const resolved: ResolvedPool = { queryId, poolIds, queryRow, candRows };
  if (sources.candidates !== undefined)
    resolved.features = sources.candidates.features(candRows, poolCosines(sources, queryRow, candRows), { queryId });
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
  const B = pools.length;
  const d = sources.query.dim;
  const K = pools.reduce((max, p) => Math.max(max, p.candRows.length), 0);
  const queries = alloc(dtype, B * d);
  pools.forEach((p, b) => {
    queries.set(sources.query.data.subarray(p.queryRow * d, (p.queryRow + 1) * d), b * d);
  });
  const compact = new Map<number, number>();
  const slots = new Int32Array(B * K).fill(-1);
  for (let b = 0; b < B; b++) {
    const rows = pools[b].candRows;
    for (let k = 0; k < rows.length; k++) {
      let c = compact.get(rows[k]);
      if (c === undefined) {
        c = compact.size;
        compact.set(rows[k], c);
      }
      slots[b * K + k] = c;
    }
  }
  const table = alloc(dtype, compact.size * d);
  for (const [row, c] of compact) table.set(sources.index.data.subarray(row * d, (row + 1) * d), c * d);
  const input: SelectorInput = { queries, table, slots, K };
  if (sources.candidates !== undefined) packCandidateData(input, pools, sources.candidates, dtype);
  return input;
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
