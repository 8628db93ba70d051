/**
 * Dense kernels with row-major BLAS semantics: C = alpha·op(A)·op(B) + beta·C, op(X) = X or Xᵀ,
 * A is M×K (stored K×M when transA), B is K×N (stored N×K when transB), leading dimensions in elements.
 * As in BLAS, beta = 0 overwrites C (NaNs in C are not propagated). The native addon (OpenBLAS or our
 * own C++ GEMM) is used when it loaded; otherwise the cache-blocked TypeScript GEMM below.
 */
import { native } from "./native.js";
import type { Data } from "./tensor.js";

export type KernelPath = "openblas" | "native" | "typescript";

/** Which GEMM implementation `gemm`/`dgemm` use in this process. */
export function kernelPath(): KernelPath {
  if (native.addon === null) return "typescript";
  return native.addon.info().openblas !== "" ? "openblas" : "native";
}

function requiredLength(rows: number, cols: number, ld: number): number {
  return rows === 0 || cols === 0 ? 0 : (rows - 1) * ld + cols;
}

function checkArgs(
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  A: Data,
  lda: number,
  B: Data,
  ldb: number,
  C: Data,
  ldc: number,
): void {
  for (const [name, v] of [
    ["M", M],
    ["N", N],
    ["K", K],
    ["lda", lda],
    ["ldb", ldb],
    ["ldc", ldc],
  ] as const) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`gemm: ${name} = ${v} is not a non-negative integer`);
  }
  const [aRows, aCols] = transA ? [K, M] : [M, K];
  const [bRows, bCols] = transB ? [N, K] : [K, N];
  if (lda < Math.max(1, aCols)) throw new RangeError(`gemm: lda = ${lda} < ${aCols}`);
  if (ldb < Math.max(1, bCols)) throw new RangeError(`gemm: ldb = ${ldb} < ${bCols}`);
  if (ldc < Math.max(1, N)) throw new RangeError(`gemm: ldc = ${ldc} < ${N}`);
  if (A.length < requiredLength(aRows, aCols, lda))
    throw new RangeError(`gemm: A has ${A.length} elements, needs ${requiredLength(aRows, aCols, lda)}`);
  if (B.length < requiredLength(bRows, bCols, ldb))
    throw new RangeError(`gemm: B has ${B.length} elements, needs ${requiredLength(bRows, bCols, ldb)}`);
  if (C.length < requiredLength(M, N, ldc))
    throw new RangeError(`gemm: C has ${C.length} elements, needs ${requiredLength(M, N, ldc)}`);
}

/** float32 GEMM (sgemm), row-major BLAS semantics. */
export function gemm(
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: Float32Array,
  lda: number,
  B: Float32Array,
  ldb: number,
  beta: number,
  C: Float32Array,
  ldc: number,
): void {
  checkArgs(transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
  if (M === 0 || N === 0) return;
  if (native.addon !== null) native.addon.sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else gemmTypeScript(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/** float64 GEMM (dgemm), row-major BLAS semantics. */
export function dgemm(
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: Float64Array,
  lda: number,
  B: Float64Array,
  ldb: number,
  beta: number,
  C: Float64Array,
  ldc: number,
): void {
  checkArgs(transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
  if (M === 0 || N === 0) return;
  if (native.addon !== null) native.addon.dgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else gemmTypeScript(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/** GEMM on either dtype (all three arrays must share it); what the tensor ops call. */
export function gemmData(
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: Data,
  lda: number,
  B: Data,
  ldb: number,
  beta: number,
  C: Data,
  ldc: number,
): void {
  if (C instanceof Float32Array) {
    if (!(A instanceof Float32Array) || !(B instanceof Float32Array)) throw new TypeError("gemm: mixed dtypes");
    gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
    if (!(A instanceof Float64Array) || !(B instanceof Float64Array)) throw new TypeError("gemm: mixed dtypes");
    dgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

// ---------------------------------------------------------------------------------------------
// TypeScript GEMM: GotoBLAS-style blocking. B is packed into 4-column slivers and alpha·A into
// 2-row slivers (both k-major, float64, zero-padded), so transposition is handled by packing only
// and a 2×4 register-blocked micro-kernel does the arithmetic in 8 local accumulators (a 4×4 tile
// is slower in V8: its 16 accumulators + 8 operands spill out of the 16 SIMD registers).
const MR = 2;
const NR = 4;
const KC = 256;
const NC = 256;
const MC = 64;
const packedB = new Float64Array(KC * NC);
const packedA = new Float64Array(KC * MC);

export function gemmTypeScript(
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: Data,
  lda: number,
  B: Data,
  ldb: number,
  beta: number,
  C: Data,
  ldc: number,
): void {
  if (beta !== 1) {
    for (let i = 0; i < M; i++) {
      const row = i * ldc;
      if (beta === 0) C.fill(0, row, row + N);
      else for (let j = 0; j < N; j++) C[row + j] *= beta;
    }
  }
  if (alpha === 0 || K === 0) return;
  if (M <= 2) {
    gemmFewRows(transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc);
    return;
  }
  for (let k0 = 0; k0 < K; k0 += KC) {
    const kc = Math.min(KC, K - k0);
    for (let j0 = 0; j0 < N; j0 += NC) {
      const nc = Math.min(NC, N - j0);
      packB(transB, B, ldb, k0, kc, j0, nc);
      for (let i0 = 0; i0 < M; i0 += MC) {
        const mc = Math.min(MC, M - i0);
        packA(transA, A, lda, alpha, i0, mc, k0, kc);
        for (let js = 0; js < nc; js += NR) {
          const nr = Math.min(NR, nc - js);
          for (let is = 0; is < mc; is += MR) {
            microKernel(kc, is * kc, js * kc, C, (i0 + is) * ldc + j0 + js, ldc, Math.min(MR, mc - is), nr);
          }
        }
      }
    }
  }
}

/** One or two rows of C: packing B would cost as much as the arithmetic (mirrors native/gemm.cc). */
function gemmFewRows(
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: Data,
  lda: number,
  B: Data,
  ldb: number,
  C: Data,
  ldc: number,
): void {
  const sa = transA ? lda : 1;
  for (let i = 0; i < M; i++) {
    const a0 = transA ? i : i * lda;
    const c0 = i * ldc;
    if (transB) {
      for (let j = 0; j < N; j++) {
        const b0 = j * ldb;
        let s0 = 0;
        let s1 = 0;
        let k = 0;
        for (; k + 2 <= K; k += 2) {
          s0 += A[a0 + k * sa] * B[b0 + k];
          s1 += A[a0 + (k + 1) * sa] * B[b0 + k + 1];
        }
        if (k < K) s0 += A[a0 + k * sa] * B[b0 + k];
        C[c0 + j] += alpha * (s0 + s1);
      }
    } else {
      const row = fewRowsAccumulator.length >= N ? fewRowsAccumulator : (fewRowsAccumulator = new Float64Array(N));
      row.fill(0, 0, N);
      for (let k = 0; k < K; k++) {
        const ak = A[a0 + k * sa];
        const b0 = k * ldb;
        for (let j = 0; j < N; j++) row[j] += ak * B[b0 + j];
      }
      for (let j = 0; j < N; j++) C[c0 + j] += alpha * row[j];
    }
  }
}
let fewRowsAccumulator = new Float64Array(256);

function packB(transB: boolean, B: Data, ldb: number, k0: number, kc: number, j0: number, nc: number): void {
  for (let js = 0; js < nc; js += NR) {
    const base = js * kc;
    const width = Math.min(NR, nc - js);
    if (width < NR) packedB.fill(0, base, base + NR * kc);
    for (let c = 0; c < width; c++) {
      const j = j0 + js + c;
      if (transB) {
        const src = j * ldb + k0;
        for (let k = 0; k < kc; k++) packedB[base + k * NR + c] = B[src + k];
      } else {
        let src = k0 * ldb + j;
        for (let k = 0; k < kc; k++, src += ldb) packedB[base + k * NR + c] = B[src];
      }
    }
  }
}

function packA(
  transA: boolean,
  A: Data,
  lda: number,
  alpha: number,
  i0: number,
  mc: number,
  k0: number,
  kc: number,
): void {
  for (let is = 0; is < mc; is += MR) {
    const base = is * kc;
    const height = Math.min(MR, mc - is);
    if (height < MR) packedA.fill(0, base, base + MR * kc);
    for (let r = 0; r < height; r++) {
      const i = i0 + is + r;
      if (transA) {
        let src = k0 * lda + i;
        for (let k = 0; k < kc; k++, src += lda) packedA[base + k * MR + r] = alpha * A[src];
      } else {
        const src = i * lda + k0;
        for (let k = 0; k < kc; k++) packedA[base + k * MR + r] = alpha * A[src + k];
      }
    }
  }
}

function microKernel(
  kc: number,
  pa: number,
  pb: number,
  C: Data,
  co: number,
  ldc: number,
  mr: number,
  nr: number,
): void {
  const a = packedA;
  const b = packedB;
  let c00 = 0;
  let c01 = 0;
  let c02 = 0;
  let c03 = 0;
  let c10 = 0;
  let c11 = 0;
  let c12 = 0;
  let c13 = 0;
  for (let k = 0; k < kc; k++, pa += MR, pb += NR) {
    const a0 = a[pa];
    const a1 = a[pa + 1];
    const b0 = b[pb];
    const b1 = b[pb + 1];
    const b2 = b[pb + 2];
    const b3 = b[pb + 3];
    c00 += a0 * b0;
    c01 += a0 * b1;
    c02 += a0 * b2;
    c03 += a0 * b3;
    c10 += a1 * b0;
    c11 += a1 * b1;
    c12 += a1 * b2;
    c13 += a1 * b3;
  }
  if (nr === NR) {
    C[co] += c00;
    C[co + 1] += c01;
    C[co + 2] += c02;
    C[co + 3] += c03;
    if (mr === MR) {
      co += ldc;
      C[co] += c10;
      C[co + 1] += c11;
      C[co + 2] += c12;
      C[co + 3] += c13;
    }
    return;
  }
  // Right edge: fewer than NR columns (mr rows of them).
  for (let r = 0; r < mr; r++, co += ldc) {
    const v0 = r === 0 ? c00 : c10;
    const v1 = r === 0 ? c01 : c11;
    const v2 = r === 0 ? c02 : c12;
    C[co] += v0;
    if (nr > 1) C[co + 1] += v1;
    if (nr > 2) C[co + 2] += v2;
  }
}
