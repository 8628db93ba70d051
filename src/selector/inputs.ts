/**
 * Selector inputs from files: query embeddings Q.npy [Q, d] and candidates either as C.npy
 * [Q, K, d] (each query's own pool) or as an index C.npy [N, d] plus a JSON list of per-query row
 * lists (pools of any size ≤ K are padded). Every problem names the file and the record.
 */
import { z } from "zod";
import { readNpy } from "../data/npy.js";
import { LeverError } from "../util/errors.js";
import { maxOf } from "../util/extent.js";
import { readJsonFile } from "../util/files.js";
import { parseOrThrow } from "../util/validate.js";
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

export function loadSelectorInput(
  files: { queryEmb: string; candEmb: string; pools?: string },
  d: number,
): SelectorInput {
  const q = floatMatrix(files.queryEmb);
  if (q.shape.length !== 2 || q.shape[1] !== d)
    throw new LeverError(`query embeddings must be [queries, ${d}], got [${q.shape.join(", ")}]`, {
      file: files.queryEmb,
    });
  const Q = q.shape[0];
  const c = floatMatrix(files.candEmb);
  if (files.pools === undefined) {
    if (c.shape.length !== 3 || c.shape[0] !== Q || c.shape[2] !== d)
      throw new LeverError(
        `candidates must be [${Q}, K, ${d}] (or an index [N, ${d}] with --pools), got [${c.shape.join(", ")}]`,
        { file: files.candEmb },
      );
    const K = c.shape[1];
    return { queries: q.data, table: c.data, slots: Int32Array.from({ length: Q * K }, (_, i) => i), K };
  }
  if (c.shape.length !== 2 || c.shape[1] !== d)
    throw new LeverError(`with --pools the candidates must be an index [N, ${d}], got [${c.shape.join(", ")}]`, {
      file: files.candEmb,
    });
  const N = c.shape[0];
  const pools = parseOrThrow(PoolListSchema, readJsonFile(files.pools), { file: files.pools, recordsAt: true });
  if (pools.length !== Q) throw new LeverError(`${pools.length} pools for ${Q} queries`, { file: files.pools });
  const K = maxOf(pools.map((p) => p.length));
  const slots = new Int32Array(Q * K).fill(-1);
  pools.forEach((pool, i) => {
    if (new Set(pool).size !== pool.length)
      throw new LeverError("pool lists a row twice", { file: files.pools, record: i });
    pool.forEach((row, k) => {
      if (row >= N)
        throw new LeverError(`row ${row} is outside the index of ${N} rows`, {
          file: files.pools,
          record: i,
          field: `[${k}]`,
        });
      slots[i * K + k] = row;
    });
  });
  return { queries: q.data, table: c.data, slots, K };
}

const TrajectoriesSchema = z.array(
  z
    .object({ query: z.number().int().nonnegative(), positions: z.array(z.number().int().nonnegative()).min(1) })
    .strict(),
);

export function loadTrajectories(path: string): { query: number; positions: number[] }[] {
  return parseOrThrow(TrajectoriesSchema, readJsonFile(path), { file: path, recordsAt: true });
}
