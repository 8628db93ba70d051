/**
 * Loads the optional native kernels (build/Release/lever_native.node, built by node-gyp from native/).
 * Missing addon, a failed load or LEVER_NATIVE=0 all mean "use the TypeScript kernels".
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
  sgemm: GemmFn<Float32Array>;
  dgemm: GemmFn<Float64Array>;
  /** Fused AdamW element update; see adamwKernel in optim.ts for the exact formula. */
  adamw(
    w: Float32Array | Float64Array,
    g: Float32Array | Float64Array,
    m: Float64Array,
    v: Float64Array,
    b1: number,
    b2: number,
    eps: number,
    decay: number,
    stepSize: number,
    invSqrtBc2: number,
  ): void;
  /** Σ x² accumulated in float64 (four partial sums). */
  sumSquares(x: Float32Array | Float64Array): number;
  /** x *= s in place. */
  scaleInPlace(x: Float32Array | Float64Array, s: number): void;
  /** Forward of the selector's fused gate update; see gateUpdate in src/selector/gate-op.ts for the formula. */
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
  info(): NativeInfo;
  /** GEMMs with M·N·K below this go to our own kernels even with OpenBLAS loaded (default 64³; Infinity = never OpenBLAS). */
  setOpenBlasMinWork(work: number): void;
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

function load(): NativeLoad {
  if (process.env.LEVER_NATIVE === "0") return { addon: null, detail: "disabled by LEVER_NATIVE=0" };
  const path = findAddon();
  if (path === null) return { addon: null, detail: "build/Release/lever_native.node not found (run npm run install)" };
  try {
    const addon = createRequire(import.meta.url)(path) as NativeAddon;
    return { addon, detail: path };
  } catch (error) {
    return { addon: null, detail: `failed to load ${path}: ${(error as Error).message}` };
  }
}

export const native: NativeLoad = load();
