/**
 * Our own C++ GEMM in every variant this machine can run, checked in child processes because the
 * variant is chosen once per process (LEVER_OPENBLAS=0 bypasses OpenBLAS, LEVER_SIMD=generic
 * forces the portable micro-kernels). Without a built addon there is nothing to check.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { NATIVE_EXPORTS, native } from "../../src/tensor/native.js";
import { adamwKernel, sumSquares } from "../../src/tensor/optim.js";

const script = `
const addon = require(process.env.ADDON);
let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
let worst = 0;
let hash = 2166136261;
// Small shapes are checked against a reference (unless REF=0: a run only compared by its hash); the
// big ones (above the threading threshold, split by rows and by columns) only feed the hash that
// compares thread counts.
const small = [[1, 1, 1], [2, 33, 70], [37, 29, 41], [7, 300, 260], [97, 17, 513], [200, 130, 3]];
const big = process.env.BIG === "1" ? [[300, 100, 300], [90, 310, 300]] : [];
for (const [M, N, K] of [...small, ...big]) {
  for (const tA of [false, true]) for (const tB of [false, true]) for (const [T, f] of [[Float32Array, "sgemm"], [Float64Array, "dgemm"]]) {
    const lda = (tA ? M : K) + 1, ldb = (tB ? K : N) + 2, ldc = N + 3;
    const A = T.from({ length: (tA ? K : M) * lda }, rand), B = T.from({ length: (tB ? N : K) * ldb }, rand);
    const C = T.from({ length: M * ldc }, rand), C0 = T.from(C);
    addon[f](tA, tB, M, N, K, 0.75, A, lda, B, ldb, -0.5, C, ldc);
    for (const byte of new Uint8Array(C.buffer)) hash = Math.imul(hash ^ byte, 16777619) >>> 0;
    if (M * N * K > 1e6 || process.env.REF === "0") continue;
    for (let i = 0; i < M; i++) for (let j = 0; j < ldc; j++) {
      let s = 0;
      if (j < N) for (let k = 0; k < K; k++) s += (tA ? A[k * lda + i] : A[i * lda + k]) * (tB ? B[j * ldb + k] : B[k * ldb + j]);
      const want = j < N ? 0.75 * s - 0.5 * C0[i * ldc + j] : C0[i * ldc + j];
      const err = Math.abs(C[i * ldc + j] - want) / Math.max(1, Math.abs(want)) / (T === Float32Array ? 1e-4 * Math.sqrt(K) : 1e-12);
      worst = Math.max(worst, err);
    }
  }
}
console.log(JSON.stringify({ simd: addon.info().simd, openblas: addon.info().openblas, threads: addon.info().threads, worst, hash }));
`;

function runVariant(env: Record<string, string>): {
  simd: string;
  openblas: string;
  threads: number;
  worst: number;
  hash: number;
} {
  const result = spawnSync(process.execPath, ["-e", script], {
    env: { ...process.env, ...env, ADDON: native.detail },
    encoding: "utf8",
  });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

describe.skipIf(native.addon === null)("native addon: exports", () => {
  it("exports exactly the functions of the typed NativeAddon interface", () => {
    // N-API defines them non-enumerable, so list own property names rather than keys.
    const raw = createRequire(import.meta.url)(native.detail) as Record<string, unknown>;
    expect(Object.getOwnPropertyNames(raw).sort()).toEqual([...NATIVE_EXPORTS].sort());
  });

  it("lists every export in the header comment of native/lever_native.cc", () => {
    const source = readFileSync("native/lever_native.cc", "utf8");
    const header = source.slice(0, source.indexOf("#define"));
    expect(NATIVE_EXPORTS.filter((name) => !new RegExp(`\\b${name}\\(`).test(header))).toEqual([]);
  });
});

describe.skipIf(native.addon === null)("native addon: our own GEMM", () => {
  it("portable (SSE2/generic) micro-kernels match a reference GEMM for all transposes, alpha, beta and padding", () => {
    const r = runVariant({ LEVER_OPENBLAS: "0", LEVER_SIMD: "generic" });
    expect(r.simd).toBe("generic");
    expect(r.openblas).toBe("");
    expect(r.worst).toBeLessThan(1);
  });

  it("the CPU-selected micro-kernels (AVX2+FMA when available) match a reference GEMM, threaded or not", () => {
    const threaded = runVariant({ LEVER_OPENBLAS: "0", LEVER_THREADS: "2", BIG: "1" });
    expect(threaded.openblas).toBe("");
    expect(threaded.threads).toBe(2);
    expect(threaded.worst).toBeLessThan(1);
    // Splitting C into stripes keeps each element's summation order: bit-identical results.
    // Its results are the threaded run's, bit for bit: the hash is the check, no second reference.
    const single = runVariant({ LEVER_OPENBLAS: "0", LEVER_THREADS: "1", BIG: "1", REF: "0" });
    expect(single.threads).toBe(1);
    expect(single.hash).toBe(threaded.hash);
  });

  it("rejects wrong array types and undersized buffers instead of reading out of bounds", () => {
    const addon = native.addon!;
    const a = new Float32Array(4);
    expect(() => addon.sgemm(false, false, 2, 2, 2, 1, new Float64Array(4) as never, 2, a, 2, 0, a, 2)).toThrow(
      /Float32Array/,
    );
    expect(() => addon.sgemm(false, false, 3, 2, 2, 1, a, 2, a, 2, 0, new Float32Array(6), 2)).toThrow(/too small/);
    expect(() =>
      addon.dgemm(false, false, -1, 2, 2, 1, new Float64Array(4), 2, new Float64Array(4), 2, 0, new Float64Array(4), 2),
    ).toThrow(/M/);
  });
});

describe.skipIf(native.addon === null)("native addon: fused AdamW", () => {
  it("gives bit-identical results to the TypeScript AdamW kernel for float32 and float64 weights", () => {
    for (const Arr of [Float32Array, Float64Array]) {
      const n = 1000;
      const w0 = Arr.from(Array.from({ length: n }, (_, i) => Math.sin(i) * 0.3));
      const g = Arr.from(Array.from({ length: n }, (_, i) => Math.cos(i * 1.7) * 1e-2));
      const states = [0, 1].map(() => ({ w: Arr.from(w0), m: new Float64Array(n), v: new Float64Array(n) }));
      for (let t = 1; t <= 3; t++) {
        const args = [0.9, 0.999, 1e-8, 1 - 1e-3 * 0.01, 1e-3 / (1 - 0.9 ** t), 1 / Math.sqrt(1 - 0.999 ** t)] as const;
        native.addon!.adamw(states[0].w, g, states[0].m, states[0].v, ...args);
        adamwKernel(states[1].w, g, states[1].m, states[1].v, ...args);
      }
      expect(Array.from(states[0].w)).toEqual(Array.from(states[1].w));
      expect(Array.from(states[0].v)).toEqual(Array.from(states[1].v));
      expect(states[0].w[3]).not.toBe(w0[3]);
    }
  });

  it("computes the gradient-norm pieces (Σx², x·s) exactly like the TypeScript fallback", () => {
    for (const Arr of [Float32Array, Float64Array]) {
      const x = Arr.from(Array.from({ length: 1003 }, (_, i) => Math.sin(i * 0.37) * 3));
      expect(native.addon!.sumSquares(x)).toBe(sumSquares(x));
      const a = Arr.from(x);
      native.addon!.scaleInPlace(a, 0.3);
      expect(Array.from(a)).toEqual(Array.from(x, (v) => (Arr === Float32Array ? Math.fround(v * 0.3) : v * 0.3)));
    }
  });
});
