/** What `lever doctor` reports about the numeric engine: which kernels run and how fast. */
import { gemm, gemmTypeScript, kernelPath } from "./kernels.js";
import { native } from "./native.js";

export interface EngineReport {
  node: string;
  kernelPath: string;
  nativeAddon: string;
  openblas: string | null;
  threads: number;
  simd: string | null;
  /** GFLOP/s of a 256×256×256 float32 GEMM on the active path and on the TypeScript kernels. */
  gemmGflops: { active: number; typescript: number; shape: string };
}

/** Best-of timing (the machine may be shared), after warm-up calls for the JIT and thread pools. */
function timeGflops(run: () => void, flops: number, budgetMs = 250): number {
  for (let i = 0; i < 3; i++) run();
  let best = Number.POSITIVE_INFINITY;
  const start = performance.now();
  do {
    const t = performance.now();
    run();
    best = Math.min(best, performance.now() - t);
  } while (performance.now() - start < budgetMs);
  return flops / (best / 1000) / 1e9;
}

export function engineReport(): EngineReport {
  const n = 256;
  const a = new Float32Array(n * n).map((_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
  const b = new Float32Array(n * n).map((_, i) => ((i * 104729) % 1000) / 1000 - 0.5);
  const c = new Float32Array(n * n);
  const flops = 2 * n * n * n;
  const info = native.addon?.info() ?? null;
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    node: process.version,
    kernelPath: kernelPath(),
    nativeAddon: native.detail,
    openblas: info ? info.openblas || null : null,
    threads: info?.threads ?? 1,
    simd: info?.simd ?? null,
    gemmGflops: {
      shape: `${n}x${n}x${n} float32`,
      active: round(timeGflops(() => gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n), flops)),
      typescript: round(timeGflops(() => gemmTypeScript(false, false, n, n, n, 1, a, n, b, n, 0, c, n), flops)),
    },
  };
}
