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
// 4-row slivers (both k-major, float64, zero-padded), so transposition is handled by packing only
// and a 4×4 register-blocked micro-kernel does the arithmetic in 16 local accumulators.
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
  for (let k0 = 0; k0 < K; k0 += KC) {
    const kc = Math.min(KC, K - k0);
    for (let j0 = 0; j0 < N; j0 += NC) {
      const nc = Math.min(NC, N - j0);
      packB(transB, B, ldb, k0, kc, j0, nc);
      for (let i0 = 0; i0 < M; i0 += MC) {
        const mc = Math.min(MC, M - i0);
        packA(transA, A, lda, alpha, i0, mc, k0, kc);
        for (let is = 0; is < mc; is += 4) {
          for (let js = 0; js < nc; js += 4) {
            microKernel4x4(
              kc,
              is * kc,
              js * kc,
              C,
              (i0 + is) * ldc + j0 + js,
              ldc,
              Math.min(4, mc - is),
              Math.min(4, nc - js),
            );
          }
        }
      }
    }
  }
}

function packB(transB: boolean, B: Data, ldb: number, k0: number, kc: number, j0: number, nc: number): void {
  for (let js = 0; js < nc; js += 4) {
    const base = js * kc;
    const width = Math.min(4, nc - js);
    if (width < 4) packedB.fill(0, base, base + 4 * kc);
    for (let c = 0; c < width; c++) {
      const j = j0 + js + c;
      if (transB) {
        const src = j * ldb + k0;
        for (let k = 0; k < kc; k++) packedB[base + k * 4 + c] = B[src + k];
      } else {
        let src = k0 * ldb + j;
        for (let k = 0; k < kc; k++, src += ldb) packedB[base + k * 4 + c] = B[src];
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
  for (let is = 0; is < mc; is += 4) {
    const base = is * kc;
    const height = Math.min(4, mc - is);
    if (height < 4) packedA.fill(0, base, base + 4 * kc);
    for (let r = 0; r < height; r++) {
      const i = i0 + is + r;
      if (transA) {
        let src = k0 * lda + i;
        for (let k = 0; k < kc; k++, src += lda) packedA[base + k * 4 + r] = alpha * A[src];
      } else {
        const src = i * lda + k0;
        for (let k = 0; k < kc; k++) packedA[base + k * 4 + r] = alpha * A[src + k];
      }
    }
  }
}

const edgeTile = new Float64Array(16);

function microKernel4x4(
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
  let c20 = 0;
  let c21 = 0;
  let c22 = 0;
  let c23 = 0;
  let c30 = 0;
  let c31 = 0;
  let c32 = 0;
  let c33 = 0;
  for (let k = 0; k < kc; k++, pa += 4, pb += 4) {
    const a0 = a[pa];
    const a1 = a[pa + 1];
    const a2 = a[pa + 2];
    const a3 = a[pa + 3];
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
    c20 += a2 * b0;
    c21 += a2 * b1;
    c22 += a2 * b2;
    c23 += a2 * b3;
    c30 += a3 * b0;
    c31 += a3 * b1;
    c32 += a3 * b2;
    c33 += a3 * b3;
  }
  if (mr === 4 && nr === 4) {
    C[co] += c00;
    C[co + 1] += c01;
    C[co + 2] += c02;
    C[co + 3] += c03;
    co += ldc;
    C[co] += c10;
    C[co + 1] += c11;
    C[co + 2] += c12;
    C[co + 3] += c13;
    co += ldc;
    C[co] += c20;
    C[co + 1] += c21;
    C[co + 2] += c22;
    C[co + 3] += c23;
    co += ldc;
    C[co] += c30;
    C[co + 1] += c31;
    C[co + 2] += c32;
    C[co + 3] += c33;
    return;
  }
  const t = edgeTile;
  t[0] = c00;
  t[1] = c01;
  t[2] = c02;
  t[3] = c03;
  t[4] = c10;
  t[5] = c11;
  t[6] = c12;
  t[7] = c13;
  t[8] = c20;
  t[9] = c21;
  t[10] = c22;
  t[11] = c23;
  t[12] = c30;
  t[13] = c31;
  t[14] = c32;
  t[15] = c33;
  for (let r = 0; r < mr; r++) for (let c = 0; c < nr; c++) C[co + r * ldc + c] += t[r * 4 + c];
}
