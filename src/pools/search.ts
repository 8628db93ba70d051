/**
 * Exact cosine top-K of every query against a whole index, for the similarity samplers.
 *
 * Rows must be unit length (see unitRows), so cosine = dot product. Scores come from a blocked
 * GEMM (query block × index block) and each query keeps a running min-heap of its best
 * K + margin rows, skipping its excluded rows (itself, its same-image items). The survivors are
 * re-scored in float64 and the final order is (score desc, row asc): membership and order are then
 * independent of which GEMM produced the float32 screening scores (TypeScript or native), and
 * exact ties always go to the lower row.
 */

import { availableParallelism } from "node:os";
import { kernelPath, gemm as tensorGemm } from "../tensor/kernels.js";
import { native } from "../tensor/native.js";
import { LeverError } from "../util/errors.js";

/** C = A·Bᵀ, row-major float32: A is M×K, B is N×K, C is M×N (overwritten). */
export type Gemm = (M: number, N: number, K: number, A: Float32Array, B: Float32Array, C: Float32Array) => void;

/**
 * C = A·Bᵀ through src/tensor's sgemm: the native addon (OpenBLAS or our C++ GEMM) when it loaded,
 * else the engine's TypeScript kernels. One GEMM for the whole product; no copy of it here.
 */
export const gemmNT: Gemm = (M, N, K, A, B, C) => tensorGemm(false, true, M, N, K, 1, A, K, B, K, 0, C, N);

/**
 * C = A·Bᵀ for screening few queries against a large index (`lever serve`'s batches): the native
 * unpacked kernel (`scoreRows`) when the addon has an AVX2 one and there are at least 3 queries, else
 * `gemmNT`. Its float32 scores round differently from `gemmNT`'s; the search's results do not depend on
 * which GEMM screens (see the header).
 */
export const gemmScreen: Gemm = (M, N, K, A, B, C) => {
  const addon = native.addon;
  if (addon !== null && M >= 3 && addon.scoreRows(M, N, K, A, B, C, N)) return;
  gemmNT(M, N, K, A, B, C);
};

/** The GEMM cosine search uses, and which kernel path serves it. */
export function defaultGemm(): { gemm: Gemm; path: string } {
  return { gemm: gemmNT, path: kernelPath() };
}

export interface TopKOptions {
  k: number;
  /** Per query: index rows it must never receive (any order; a handful per query). */
  exclude?: readonly (readonly number[] | undefined)[];
  gemm?: Gemm;
  /** Queries per GEMM block (default 512). */
  queryBlock?: number;
  /** Index rows per GEMM block (default 8192). */
  indexBlock?: number;
  /** Extra candidates kept beyond K for the float64 re-scoring (default 8). */
  margin?: number;
  /** Which top-K scan folds score blocks into the heaps (default: native when the addon has it). */
  scan?: ScanPath;
}

export type ScanPath = "native" | "typescript";

/**
 * Running top-`cap` heaps of every query (row-major, `cap` slots per query) plus the
 * exclusions in CSR form: query q must skip excludeRows[excludeStart[q] .. excludeStart[q+1]).
 */
interface ScanState {
  cap: number;
  heapScore: Float32Array;
  heapRow: Int32Array;
  heapSize: Int32Array;
  excludeRows: Int32Array;
  excludeStart: Int32Array;
}

/** Folds the qb × nb score block C (index rows n0.., queries q0..) into the heaps. */
type ScanBlock = (C: Float32Array, qb: number, nb: number, n0: number, q0: number, state: ScanState) => void;

/** The native scan (native/pool_topk.cc), or null when the addon did not load. */
function nativeScan(): ScanBlock | null {
  const addon = native.addon;
  if (addon === null) return null;
  const threads = Math.min(2, availableParallelism());
  return (C, qb, nb, n0, q0, st) =>
    addon.topkScan(
      C,
      qb,
      nb,
      nb,
      n0,
      q0,
      st.cap,
      st.heapScore,
      st.heapRow,
      st.heapSize,
      st.excludeRows,
      st.excludeStart,
      threads,
    );
}

/** Which scan `cosineTopK` uses by default. */
export function defaultScanPath(): ScanPath {
  return nativeScan() === null ? "typescript" : "native";
}

const scanBlockTypeScript: ScanBlock = (C, qb, nb, n0, q0, st) => {
  const { cap, heapScore, heapRow, heapSize, excludeRows, excludeStart } = st;
  for (let i = 0; i < qb; i++) {
    const q = q0 + i;
    const base = q * cap;
    const exBegin = excludeStart[q];
    const exEnd = excludeStart[q + 1];
    let size = heapSize[q];
    // Rows arrive in increasing order, so a candidate tying the heap's worst never beats it
    // (the heap's entry has the lower row): strict ">" is the tie rule.
    let worst = size < cap ? Number.NEGATIVE_INFINITY : heapScore[base];
    const rowOffset = i * nb;
    for (let j = 0; j < nb; j++) {
      const s = C[rowOffset + j];
      if (!(s > worst)) continue;
      const row = n0 + j;
      if (exBegin < exEnd && isExcluded(excludeRows, exBegin, exEnd, row)) continue;
      if (size < cap) {
        heapPush(heapScore, heapRow, base, size, s, row);
        size++;
        if (size === cap) worst = heapScore[base];
      } else {
        heapReplaceRoot(heapScore, heapRow, base, cap, s, row);
        worst = heapScore[base];
      }
    }
    heapSize[q] = size;
  }
};

function isExcluded(rows: Int32Array, begin: number, end: number, row: number): boolean {
  for (let e = begin; e < end; e++) if (rows[e] === row) return true;
  return false;
}

export interface TopKResult {
  k: number;
  /** queries × k index rows, best first. */
  rows: Int32Array;
  /** queries × k cosine similarities (float64 re-scored), matching `rows`. */
  scores: Float64Array;
}

/**
 * For each of the Q query rows (Q×dim) its k most similar index rows (N×dim), best first,
 * never an excluded row. Throws when a query has fewer than k eligible rows.
 */
/** Default block sizes of the search's products: query rows and index rows per GEMM. */
export const QUERY_BLOCK = 512;
export const INDEX_BLOCK = 8192;

export function cosineTopK(queries: Float32Array, index: Float32Array, dim: number, options: TopKOptions): TopKResult {
  const { k } = options;
  const Q = queries.length / dim;
  const N = index.length / dim;
  if (!Number.isInteger(Q) || !Number.isInteger(N))
    throw new LeverError(`matrix sizes are not multiples of dim ${dim}`);
  if (!Number.isInteger(k) || k < 1) throw new LeverError(`K must be a positive integer, got ${k}`);
  const exclude = options.exclude ?? [];
  for (let q = 0; q < Q; q++) {
    const excluded = exclude[q]?.length ?? 0;
    if (k > N - excluded)
      throw new LeverError(
        `K=${k} but the index has only ${N - excluded} eligible items for query row ${q} (${N} minus ${excluded} excluded)`,
        { field: "k" },
      );
  }
  const gemm = options.gemm ?? defaultGemm().gemm;
  const scan = options.scan === "typescript" ? scanBlockTypeScript : (nativeScan() ?? scanBlockTypeScript);
  if (options.scan === "native" && scan === scanBlockTypeScript)
    throw new LeverError("the native top-K scan is not available (the native addon did not load)");
  const qBlock = options.queryBlock ?? QUERY_BLOCK;
  const nBlock = options.indexBlock ?? INDEX_BLOCK;
  const cap = Math.min(k + (options.margin ?? 8), N);
  const excludeStart = new Int32Array(Q + 1);
  for (let q = 0; q < Q; q++) excludeStart[q + 1] = excludeStart[q] + (exclude[q]?.length ?? 0);
  const excludeRows = new Int32Array(excludeStart[Q]);
  for (let q = 0; q < Q; q++) excludeRows.set(exclude[q] ?? [], excludeStart[q]);
  const state: ScanState = {
    cap,
    heapScore: new Float32Array(Q * cap),
    heapRow: new Int32Array(Q * cap),
    heapSize: new Int32Array(Q),
    excludeRows,
    excludeStart,
  };
  const block = new Float32Array(Math.min(qBlock, Q) * Math.min(nBlock, N));

  // Index blocks outside, query blocks inside: the big matrix is streamed through the cache once.
  for (let n0 = 0; n0 < N; n0 += nBlock) {
    const nb = Math.min(nBlock, N - n0);
    const B = index.subarray(n0 * dim, (n0 + nb) * dim);
    for (let q0 = 0; q0 < Q; q0 += qBlock) {
      const qb = Math.min(qBlock, Q - q0);
      const C = block.subarray(0, qb * nb);
      gemm(qb, nb, dim, queries.subarray(q0 * dim, (q0 + qb) * dim), B, C);
      scan(C, qb, nb, n0, q0, state);
    }
  }

  const { heapRow, heapSize } = state;
  const rows = new Int32Array(Q * k);
  const scores = new Float64Array(Q * k);
  for (let q = 0; q < Q; q++) {
    const size = heapSize[q];
    const candidates: { row: number; score: number }[] = [];
    for (let h = 0; h < size; h++) {
      const row = heapRow[q * cap + h];
      candidates.push({ row, score: dot64(queries, q * dim, index, row * dim, dim) });
    }
    candidates.sort((a, b) => b.score - a.score || a.row - b.row);
    for (let r = 0; r < k; r++) {
      rows[q * k + r] = candidates[r].row;
      scores[q * k + r] = candidates[r].score;
    }
  }
  return { k, rows, scores };
}

function dot64(A: Float32Array, a: number, B: Float32Array, b: number, K: number): number {
  let s = 0;
  for (let i = 0; i < K; i++) s += A[a + i] * B[b + i];
  return s;
}

/** Min-heap order: lower score is worse; at equal score the higher row is worse. */
function worse(sa: number, ra: number, sb: number, rb: number): boolean {
  return sa < sb || (sa === sb && ra > rb);
}

function heapPush(score: Float32Array, row: Int32Array, base: number, size: number, s: number, r: number): void {
  let i = size;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!worse(s, r, score[base + parent], row[base + parent])) break;
    score[base + i] = score[base + parent];
    row[base + i] = row[base + parent];
    i = parent;
  }
  score[base + i] = s;
  row[base + i] = r;
}

function heapReplaceRoot(score: Float32Array, row: Int32Array, base: number, size: number, s: number, r: number): void {
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= size) break;
    const right = left + 1;
    let child = left;
    if (right < size && worse(score[base + right], row[base + right], score[base + left], row[base + left]))
      child = right;
    if (!worse(score[base + child], row[base + child], s, r)) break;
    score[base + i] = score[base + child];
    row[base + i] = row[base + child];
    i = child;
  }
  score[base + i] = s;
  row[base + i] = r;
}

/**
 * Unit-length rows for cosine search: returns `data` itself when every row already has norm 1
 * (within 1e-4), else a normalised copy. A zero or non-finite row is an error naming its id.
 */
export function unitRows(data: Float32Array, dim: number, ids: readonly string[], file?: string): Float32Array {
  const rows = data.length / dim;
  let normalised = true;
  const norms = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let c = r * dim, end = c + dim; c < end; c++) s += data[c] * data[c];
    const norm = Math.sqrt(s);
    if (!(norm > 0) || !Number.isFinite(norm))
      throw new LeverError(`embedding row has norm ${norm}; cosine similarity is undefined`, {
        file,
        record: ids[r],
      });
    norms[r] = norm;
    if (Math.abs(norm - 1) > 1e-4) normalised = false;
  }
  if (normalised) return data;
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) {
    const scale = 1 / norms[r];
    for (let c = r * dim, end = c + dim; c < end; c++) out[c] = data[c] * scale;
  }
  return out;
}
