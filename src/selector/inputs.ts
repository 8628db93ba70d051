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
 * A new per-candidate feature (say the share of the pool that answers like the candidate, or a
 * per-item identity) is added here and in the model only: its data as a field of `SelectorSources`,
 * its per-pool value computed in `resolvePool` (a field of `ResolvedPool`), its packing in
 * `selectorInput`, its use in `PointerSelector.encode`. Stages build the sources with
 * `selectorSources`, resolve pools with `resolvePool` and pass both through unchanged.
 */
import { type EmbeddingMatrix, rowIndex } from "../data/embeddings.js";
import type { Data, DType } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import type { SelectorInput } from "./model.js";

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
export function selectorSources(query: EmbeddingMatrix, index: EmbeddingMatrix): SelectorSources {
  if (query.dim !== index.dim) throw new LeverError(`query embeddings have dim ${query.dim}, candidates ${index.dim}`);
  const indexTable = embeddingTable(index);
  return { query: query === index ? indexTable : embeddingTable(query), index: indexTable };
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
  return { queryId, poolIds, queryRow, candRows };
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
  return { queries, table, slots, K };
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
