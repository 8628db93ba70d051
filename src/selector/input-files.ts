/**
 * Selector inputs from files (`lever selector predict/logprob`): query embeddings Q.npy [Q, d] and
 * candidates either as C.npy [Q, K, d] (each query's own pool) or as an index C.npy [N, d] plus a
 * JSON list of per-query row lists (pools of any size ≤ K are padded). The files are checked here —
 * every problem names the file and the record — and assembled by the one selector-input module
 * (src/selector/inputs.ts), with each row's number as its item's id. A selector that reads centred
 * embeddings (config.center "index-mean") is centred on the mean of the index file's rows, and refuses
 * per-query candidates [Q, K, d], which do not tell the index's mean.
 */
import { z } from "zod";
import { readNpy } from "../data/npy.js";
import { LeverError } from "../util/errors.js";
import { readJsonFile } from "../util/files.js";
import { parseOrThrow } from "../util/validate.js";
import { selectorInputOf, selectorSources } from "./inputs.js";
import type { SelectorInput } from "./model.js";

function floatMatrix(path: string): { shape: number[]; data: Float32Array } {
  const arr = readNpy(path);
  if (!(arr.data instanceof Float32Array || arr.data instanceof Float64Array))
    throw new LeverError(`expected floating-point embeddings, got dtype ${arr.dtype}`, { file: path });
  const data = arr.data instanceof Float32Array ? arr.data : Float32Array.from(arr.data);
  for (let i = 0; i < data.length; i++)
    if (!Number.isFinite(data[i])) throw new LeverError(`non-finite value at flat index ${i}`, { file: path });
  return { shape: arr.shape, data };
}

const PoolListSchema = z.array(z.array(z.number().int().nonnegative()).min(1), {
  error: "expected an array of row lists (one per query)",
});

/** Rows 0…n−1 named by their numbers. */
const rowIds = (n: number) => Array.from({ length: n }, (_, row) => String(row));

export function loadSelectorInput(
  files: { queryEmb: string; candEmb: string; pools?: string },
  d: number,
  options: { center?: boolean } = {},
): SelectorInput {
  const q = floatMatrix(files.queryEmb);
  if (q.shape.length !== 2 || q.shape[1] !== d)
    throw new LeverError(`query embeddings must be [queries, ${d}], got [${q.shape.join(", ")}]`, {
      file: files.queryEmb,
    });
  const Q = q.shape[0];
  const c = floatMatrix(files.candEmb);
  if (options.center && files.pools === undefined)
    throw new LeverError(
      "this selector reads embeddings centred on its index's mean: give the index [N, d] as the candidates and the pools with --pools (per-query candidates [Q, K, d] do not tell the index's mean)",
      { file: files.candEmb },
    );
  const pools =
    files.pools === undefined
      ? ownPools(c.shape, Q, d, files.candEmb)
      : indexPools(c.shape, Q, d, files.candEmb, files.pools);
  const candidates = c.data.length / d;
  const sources = selectorSources(
    { ids: rowIds(Q), dim: d, data: q.data },
    { ids: rowIds(candidates), dim: d, data: c.data },
    undefined,
    options,
  );
  return selectorInputOf(
    sources,
    pools.map((rows, i) => ({ queryId: String(i), poolIds: rows.map(String) })),
  );
}

/** Candidates [Q, K, d]: query i's pool is rows i·K … i·K + K − 1 of the flattened candidates. */
function ownPools(shape: number[], Q: number, d: number, file: string): number[][] {
  if (shape.length !== 3 || shape[0] !== Q || shape[2] !== d)
    throw new LeverError(
      `candidates must be [${Q}, K, ${d}] (or an index [N, ${d}] with --pools), got [${shape.join(", ")}]`,
      { file },
    );
  const K = shape[1];
  return Array.from({ length: Q }, (_, i) => Array.from({ length: K }, (_, k) => i * K + k));
}

/** An index [N, d] and a pool file of row lists, one per query. */
function indexPools(shape: number[], Q: number, d: number, candFile: string, file: string): number[][] {
  if (shape.length !== 2 || shape[1] !== d)
    throw new LeverError(`with --pools the candidates must be an index [N, ${d}], got [${shape.join(", ")}]`, {
      file: candFile,
    });
  const N = shape[0];
  const pools = parseOrThrow(PoolListSchema, readJsonFile(file), { file, recordsAt: true });
  if (pools.length !== Q) throw new LeverError(`${pools.length} pools for ${Q} queries`, { file });
  pools.forEach((pool, i) => {
    if (new Set(pool).size !== pool.length) throw new LeverError("pool lists a row twice", { file, record: i });
    pool.forEach((row, k) => {
      if (row >= N)
        throw new LeverError(`row ${row} is outside the index of ${N} rows`, { file, record: i, field: `[${k}]` });
    });
  });
  return pools;
}

const TrajectoriesSchema = z.array(
  z
    .object({ query: z.number().int().nonnegative(), positions: z.array(z.number().int().nonnegative()).min(1) })
    .strict(),
);

export function loadTrajectories(path: string): { query: number; positions: number[] }[] {
  return parseOrThrow(TrajectoriesSchema, readJsonFile(path), { file: path, recordsAt: true });
}
