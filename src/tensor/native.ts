/**
 * Loads the optional native kernels (build/Release/lever_native.node, built by node-gyp from native/)
 * and types everything they export (`NativeAddon`, the one interface callers use; the C++ side lists
 * the same exports in native/lever_native.cc). Missing addon, a failed load or LEVER_NATIVE=0 all
 * mean "use the TypeScript kernels": every native function has a TypeScript twin with the same
 * results (named in its comment below).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

type Data = Float32Array | Float64Array;

type GemmFn<T> = (
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: T,
  lda: number,
  B: T,
  ldb: number,
  beta: number,
  C: T,
  ldc: number,
) => void;

export interface NativeInfo {
  /** Path of the OpenBLAS library in use, or "" when our own C++ GEMM is used. */
  openblas: string;
  /** OpenBLAS thread count (1 for our own GEMM). */
  threads: number;
  /** Instruction set of our own GEMM micro-kernel: "avx2+fma" or "generic". */
  simd: string;
}

export interface NativeAddon {
  /** Row-major BLAS sgemm C = α·op(A)·op(B) + β·C (twin: gemmTypeScript in kernels.ts). */
  sgemm: GemmFn<Float32Array>;
  /** Row-major BLAS dgemm, as sgemm in float64. */
  dgemm: GemmFn<Float64Array>;
  /**
   * GEMMs with M·N·K below this go to our own kernels even with OpenBLAS loaded (default 64³;
   * Infinity = never OpenBLAS).
   */
  setOpenBlasMinWork(work: number): void;
  /** Which GEMM serves the calls (for `lever doctor`). */
  info(): NativeInfo;
  /** Fused AdamW element update (twin: adamwKernel in optim.ts, bit-identical). */
  adamw(
    w: Data,
    g: Data,
    m: Float64Array,
    v: Float64Array,
    b1: number,
    b2: number,
    eps: number,
    decay: number,
    stepSize: number,
    invSqrtBc2: number,
  ): void;
  /** Gradient norm, first half: Σ x² accumulated in float64 with four partial sums (twin: sumSquares in optim.ts). */
  sumSquares(x: Data): number;
  /** Gradient norm, second half: x *= s in place (clipping). */
  scaleInPlace(x: Data, s: number): void;
  /** Forward of the selector's fused gate update (twin: gateForwardTypeScript in src/selector/gate-op.ts). */
  gateForward(
    a: Data,
    b: Data,
    h: Data,
    c: Data,
    H: number,
    out: Data,
    g: Float64Array,
    y: Float64Array,
    norms: Float64Array,
  ): void;
  /**
   * Folds one qb × nb block of similarity scores C (row stride ldc; index rows n0.., queries q0..)
   * into each query's running top-`cap` min-heap (heapScore/heapRow: `cap` slots per query,
   * heapSize: filled slots), skipping query q's rows excludeRows[excludeStart[q] .. excludeStart[q+1]);
   * query rows are split over `threads` (1 or 2) threads (twin: scanBlockTypeScript in
   * src/pools/search.ts, same heap order and tie rule).
   */
  topkScan(
    C: Float32Array,
    qb: number,
    nb: number,
    ldc: number,
    n0: number,
    q0: number,
    cap: number,
    heapScore: Float32Array,
    heapRow: Int32Array,
    heapSize: Int32Array,
    excludeRows: Int32Array,
    excludeStart: Int32Array,
    threads: number,
  ): void;
  /**
   * Cosine-search screening scores C[i·ldc + j] = A_i · B_j (A: M×K, B: N×K, row-major), no packing, over
   * the GEMM's threads; false (C untouched) when the CPU has no AVX2+FMA. Not bit-identical to sgemm (its
   * own summation order): only src/pools/search.ts screens with it, whose results do not depend on the
   * screening GEMM (twin: gemmNT there).
   */
  scoreRows(M: number, N: number, K: number, A: Float32Array, B: Float32Array, C: Float32Array, ldc: number): boolean;
}

export interface NativeLoad {
  addon: NativeAddon | null;
  /** Where we looked, or why the addon is not used (for `lever doctor`). */
  detail: string;
}

function findAddon(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, "build", "Release", "lever_native.node");
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  return null;
}

/** Every export of the addon (the compiler keeps this list equal to NativeAddon's members). */
const EXPORTS: Record<keyof NativeAddon, true> = {
  sgemm: true,
  dgemm: true,
  setOpenBlasMinWork: true,
  info: true,
  adamw: true,
  sumSquares: true,
  scaleInPlace: true,
  gateForward: true,
  topkScan: true,
  scoreRows: true,
};
export const NATIVE_EXPORTS = Object.keys(EXPORTS) as (keyof NativeAddon)[];

function load(): NativeLoad {
  if (process.env.LEVER_NATIVE === "0") return { addon: null, detail: "disabled by LEVER_NATIVE=0" };
  const path = findAddon();
  if (path === null) return { addon: null, detail: "build/Release/lever_native.node not found (run npm run install)" };
  try {
    const addon = createRequire(import.meta.url)(path) as Record<string, unknown>;
    const missing = NATIVE_EXPORTS.filter((name) => typeof addon[name] !== "function");
    if (missing.length > 0)
      return { addon: null, detail: `${path} lacks ${missing.join(", ")} (stale build: run npm run install)` };
    return { addon: addon as unknown as NativeAddon, detail: path };
  } catch (error) {
    return { addon: null, detail: `failed to load ${path}: ${(error as Error).message}` };
  }
}

export const native: NativeLoad = load();
