import { describe, expect, it } from "vitest";
import { dgemm, gemm, gemmTypeScript, kernelPath, native } from "../../src/tensor/index.js";
import { Rng } from "../../src/util/rng.js";

/** Textbook triple loop in float64: C = alpha·op(A)·op(B) + beta·C (beta = 0 ignores C). */
function referenceGemm(
  transA: boolean,
  transB: boolean,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: ArrayLike<number>,
  lda: number,
  B: ArrayLike<number>,
  ldb: number,
  beta: number,
  C: ArrayLike<number>,
  ldc: number,
): Float64Array {
  const out = Float64Array.from(C);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++)
        s += (transA ? A[k * lda + i] : A[i * lda + k]) * (transB ? B[j * ldb + k] : B[k * ldb + j]);
      out[i * ldc + j] = alpha * s + (beta === 0 ? 0 : beta * C[i * ldc + j]);
    }
  }
  return out;
}

function random(n: number, rng: Rng): Float64Array {
  return Float64Array.from({ length: n }, () => rng.next() * 2 - 1);
}

type Gemm32 = typeof gemm;
type Gemm64 = typeof dgemm;

interface Problem {
  transA: boolean;
  transB: boolean;
  M: number;
  N: number;
  K: number;
  alpha: number;
  beta: number;
  pad: number;
}

// Odd sizes cross every block and micro-tile edge (TS: 4×4 tiles, KC = NC = 256, MC = 64).
const shapes: [number, number, number][] = [
  [1, 1, 1],
  [3, 5, 7],
  [17, 9, 33],
  [70, 260, 5],
  [65, 67, 300],
  [1, 300, 513],
  [2, 7, 9],
  [129, 1, 64],
];

function problems(): Problem[] {
  const out: Problem[] = [];
  let n = 0;
  for (const [M, N, K] of shapes) {
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        n++;
        out.push({
          transA,
          transB,
          M,
          N,
          K,
          alpha: n % 3 === 0 ? -0.5 : 1,
          beta: [0, 1, 0.25][n % 3],
          pad: n % 2 === 0 ? 3 : 0,
        });
      }
    }
  }
  return out;
}

type Runner = (
  A: Float64Array,
  B: Float64Array,
  C: Float64Array,
  lda: number,
  ldb: number,
  ldc: number,
) => { before: ArrayLike<number>; after: ArrayLike<number> };

function runCase(p: Problem, run: Runner, tol: number) {
  const rng = new Rng(p.M * 1000 + p.N * 10 + p.K);
  const lda = (p.transA ? p.M : p.K) + p.pad;
  const ldb = (p.transB ? p.K : p.N) + p.pad;
  const ldc = p.N + p.pad;
  const A = random((p.transA ? p.K : p.M) * lda, rng);
  const B = random((p.transB ? p.N : p.K) * ldb, rng);
  const C = random(p.M * ldc, rng);
  if (p.beta === 0) C[0] = Number.NaN; // BLAS: beta = 0 must overwrite, not propagate
  const expected = referenceGemm(p.transA, p.transB, p.M, p.N, p.K, p.alpha, A, lda, B, ldb, p.beta, C, ldc);
  const { before, after: actual } = run(A, B, C, lda, ldb, ldc);
  let worst = 0;
  for (let i = 0; i < p.M; i++) {
    for (let j = 0; j < p.N; j++) {
      const o = i * ldc + j;
      worst = Math.max(worst, Math.abs(actual[o] - expected[o]) / Math.max(1, Math.abs(expected[o])));
    }
    // padding columns of C are untouched
    for (let j = p.N; j < ldc; j++) expect(actual[i * ldc + j]).toBe(before[i * ldc + j]);
  }
  expect(worst, JSON.stringify(p)).toBeLessThan(tol);
}

function suite(name: string, g32: Gemm32, g64: Gemm64) {
  describe(name, () => {
    for (const p of problems()) {
      const label = `${p.transA ? "T" : "N"}${p.transB ? "T" : "N"} ${p.M}×${p.N}×${p.K} alpha ${p.alpha} beta ${p.beta} pad ${p.pad}`;
      it(`float64 ${label} matches the reference`, () => {
        runCase(
          p,
          (A, B, C, lda, ldb, ldc) => {
            const c = Float64Array.from(C);
            g64(p.transA, p.transB, p.M, p.N, p.K, p.alpha, A, lda, B, ldb, p.beta, c, ldc);
            return { before: C, after: c };
          },
          1e-12,
        );
      });
      it(`float32 ${label} matches the reference`, () => {
        runCase(
          p,
          (A, B, C, lda, ldb, ldc) => {
            const c = Float32Array.from(C);
            const before = Float32Array.from(C);
            g32(
              p.transA,
              p.transB,
              p.M,
              p.N,
              p.K,
              p.alpha,
              Float32Array.from(A),
              lda,
              Float32Array.from(B),
              ldb,
              p.beta,
              c,
              ldc,
            );
            return { before, after: c };
          },
          1e-4 * Math.sqrt(p.K),
        );
      });
    }
  });
}

suite("TypeScript GEMM", gemmTypeScript, gemmTypeScript);
suite(`active GEMM path (${kernelPath()})`, gemm, dgemm);

describe("gemm arguments", () => {
  it("rejects buffers too small for the given sizes and leading dimensions", () => {
    const a = new Float32Array(6);
    const c = new Float32Array(4);
    expect(() => gemm(false, false, 2, 2, 3, 1, a, 3, new Float32Array(5), 2, 0, c, 2)).toThrow(/B has 5/);
    expect(() => gemm(false, false, 2, 2, 3, 1, a, 2, new Float32Array(6), 2, 0, c, 2)).toThrow(/lda/);
    expect(() => gemm(false, false, 2, 2, 3, 1, a, 3, new Float32Array(6), 2, 0, new Float32Array(3), 2)).toThrow(
      /C has 3/,
    );
    expect(() => gemm(false, false, 2, 2, 3.5, 1, a, 3, new Float32Array(6), 2, 0, c, 2)).toThrow(/K/);
  });

  it("honours subarray views (byte offsets) of larger buffers", () => {
    const big = Float32Array.from({ length: 20 }, (_, i) => i);
    const A = big.subarray(2, 8); // [2,3]: 2 3 4 / 5 6 7
    const B = big.subarray(10, 16); // [3,2]: 10 11 / 12 13 / 14 15
    const C = new Float32Array(8).subarray(4, 8);
    gemm(false, false, 2, 2, 3, 1, A, 3, B, 2, 0, C, 2);
    expect(Array.from(C)).toEqual([
      2 * 10 + 3 * 12 + 4 * 14,
      2 * 11 + 3 * 13 + 4 * 15,
      5 * 10 + 6 * 12 + 7 * 14,
      5 * 11 + 6 * 13 + 7 * 15,
    ]);
  });

  it("reports the kernel path consistently with the loaded addon", () => {
    const path = kernelPath();
    if (native.addon === null) expect(path).toBe("typescript");
    else expect(["openblas", "native"]).toContain(path);
  });
});
