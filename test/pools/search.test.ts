import { describe, expect, test } from "vitest";
import { cosineTopK, defaultGemm, defaultScanPath, gemmNT, gemmScreen, unitRows } from "../../src/pools/search.js";
import { Rng } from "../../src/util/rng.js";
import { bruteForceTopK, makeEmbedding, makeItems } from "./helpers.js";

function randomMatrix(rows: number, cols: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: rows * cols }, () => rng.normal());
}

function naiveNT(M: number, N: number, K: number, A: Float32Array, B: Float32Array): Float64Array {
  const C = new Float64Array(M * N);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += A[i * K + k] * B[j * K + k];
      C[i * N + j] = s;
    }
  return C;
}

describe("GEMM C = A·Bᵀ", () => {
  test.each([
    [1, 1, 1],
    [4, 4, 8],
    [7, 9, 5],
    [13, 6, 33],
    [9, 14, 31],
    [70, 90, 65],
  ])("matches a naive triple loop for M=%i N=%i K=%i (edges and the OpenBLAS size range included)", (M, N, K) => {
    const A = randomMatrix(M, K, 1);
    const B = randomMatrix(N, K, 2);
    const C = new Float32Array(M * N).fill(Number.NaN);
    gemmNT(M, N, K, A, B, C);
    const ref = naiveNT(M, N, K, A, B);
    for (let i = 0; i < C.length; i++) expect(C[i]).toBeCloseTo(ref[i], 4);
    expect(["typescript", "native", "openblas"]).toContain(defaultGemm().path);
  });
});

describe("the screening GEMM (lever serve's unpacked kernel)", () => {
  test.each([
    [1, 5, 16],
    [3, 3, 8],
    [4, 7, 512],
    [5, 8, 24],
    [9, 1000, 64],
    [32, 3001, 40],
    [6, 10, 13],
  ])("matches a naive triple loop for M=%i N=%i K=%i (blocks of 3 rows × 4 queries and every remainder)", (M, N, K) => {
    const A = randomMatrix(M, K, 3);
    const B = randomMatrix(N, K, 4);
    const C = new Float32Array(M * N).fill(Number.NaN);
    gemmScreen(M, N, K, A, B, C);
    const ref = naiveNT(M, N, K, A, B);
    for (let i = 0; i < C.length; i++) expect(C[i]).toBeCloseTo(ref[i], 3);
  });

  test("gives cosineTopK the rows and scores gemmNT gives it", () => {
    const dim = 64;
    const index = randomMatrix(5000, dim, 5);
    const queries = randomMatrix(13, dim, 6);
    const ids = (n: number) => Array.from({ length: n }, (_, i) => String(i));
    const unitIndex = unitRows(index, dim, ids(5000));
    const unitQueries = unitRows(queries, dim, ids(13));
    const exclude = Array.from({ length: 13 }, (_, q) => [q, q * 7]);
    const options = { k: 40, exclude, indexBlock: 1024 };
    const screened = cosineTopK(unitQueries, unitIndex, dim, { ...options, gemm: gemmScreen });
    const packed = cosineTopK(unitQueries, unitIndex, dim, { ...options, gemm: gemmNT });
    expect(Array.from(screened.rows)).toEqual(Array.from(packed.rows));
    expect(Array.from(screened.scores)).toEqual(Array.from(packed.scores));
  });
});

describe("cosineTopK", () => {
  const items = makeItems("x", 60, 3); // 180 index rows
  const index = makeEmbedding(items, 12, 7);
  const queries = makeEmbedding(makeItems("q", 11, 1), 12, 8);
  const unitIndex = unitRows(index.data, 12, index.ids);
  const unitQueries = unitRows(queries.data, 12, queries.ids);
  const exclude = Array.from({ length: 11 }, (_, q) => [q * 3, q * 3 + 1, (q * 17) % 180]);

  test.each([
    [256, 4096, 8],
    [3, 17, 8],
    [4, 16, 0],
    [1, 1, 2],
  ])(
    "equals float64 brute force with exclusions (query block %i, index block %i, margin %i)",
    (queryBlock, indexBlock, margin) => {
      const k = 10;
      const result = cosineTopK(unitQueries, unitIndex, 12, { k, exclude, queryBlock, indexBlock, margin });
      for (let q = 0; q < 11; q++) {
        const expected = bruteForceTopK(queries.data.subarray(q * 12, (q + 1) * 12), index, k, new Set(exclude[q]));
        expect(Array.from(result.rows.subarray(q * k, (q + 1) * k))).toEqual(expected);
        for (let r = 1; r < k; r++) expect(result.scores[q * k + r]).toBeLessThanOrEqual(result.scores[q * k + r - 1]);
      }
    },
  );

  test("breaks exact ties toward the lower index row", () => {
    const dim = 4;
    const rows = [1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0];
    const result = cosineTopK(new Float32Array([1, 0, 0, 0]), new Float32Array(rows), dim, { k: 3, indexBlock: 2 });
    expect(Array.from(result.rows)).toEqual([0, 2, 3]); // rows 0, 2, 3 tie at cosine 1
  });

  test("rejects K larger than the eligible rows", () => {
    expect(() => cosineTopK(unitQueries, unitIndex, 12, { k: 178, exclude })).toThrow(
      /K=178 but the index has only 177 eligible items/,
    );
  });
});

describe.skipIf(defaultScanPath() !== "native")("native top-K scan", () => {
  // Coordinates in {-1, 0, 1}: every dot product is a small integer, exact in float32 and
  // float64, so hundreds of rows tie and the (score desc, row asc) rule decides membership.
  function ternary(rows: number, dim: number, seed: number): Float32Array {
    const rng = new Rng(seed);
    return Float32Array.from({ length: rows * dim }, () => rng.int(3) - 1);
  }
  const dim = 8;
  const [Q, N] = [37, 1003];
  const queries = ternary(Q, dim, 11);
  const index = ternary(N, dim, 12);
  const exclude = Array.from({ length: Q }, (_, q) => (q % 5 === 4 ? undefined : [q, (q * 31) % N, 500 + q, 17]));

  function naiveTopK(q: number, k: number): number[] {
    const banned = new Set(exclude[q]);
    const ranked: { row: number; score: number }[] = [];
    for (let r = 0; r < N; r++) {
      if (banned.has(r)) continue;
      let s = 0;
      for (let c = 0; c < dim; c++) s += queries[q * dim + c] * index[r * dim + c];
      ranked.push({ row: r, score: s });
    }
    ranked.sort((a, b) => b.score - a.score || a.row - b.row);
    return ranked.slice(0, k).map((x) => x.row);
  }

  test.each([
    [37, 1003, 0, 64], // one block, two scan threads, index tail not a multiple of the 16-score chunk
    [16, 50, 0, 64], // many blocks: heaps carried across calls
    [5, 7, 8, 10], // fewer than 8 query rows per block: single-threaded scan
    [37, 256, 8, 200],
  ])(
    "gives the same rows and scores as the TypeScript scan, with ties and exclusions (query block %i, index block %i, margin %i, K %i)",
    (queryBlock, indexBlock, margin, k) => {
      const options = { k, exclude, queryBlock, indexBlock, margin };
      const fast = cosineTopK(queries, index, dim, { ...options, scan: "native" });
      const slow = cosineTopK(queries, index, dim, { ...options, scan: "typescript" });
      expect(Array.from(fast.rows)).toEqual(Array.from(slow.rows));
      expect(Array.from(fast.scores)).toEqual(Array.from(slow.scores));
      for (const q of [0, 4, 36]) expect(Array.from(fast.rows.subarray(q * k, (q + 1) * k))).toEqual(naiveTopK(q, k));
    },
  );

  test("never keeps a NaN score, like the TypeScript scan", () => {
    const withNaN = index.slice();
    withNaN[3 * dim] = Number.NaN; // row 3 scores NaN against every query
    const options = { k: 20, exclude, queryBlock: 37, indexBlock: 64, margin: 0 };
    const fast = cosineTopK(queries, withNaN, dim, { ...options, scan: "native" });
    const slow = cosineTopK(queries, withNaN, dim, { ...options, scan: "typescript" });
    expect(Array.from(fast.rows)).toEqual(Array.from(slow.rows));
    expect(Array.from(fast.rows)).not.toContain(3);
  });
});

describe("unitRows", () => {
  test("returns the same array when rows are unit length and a normalised copy otherwise", () => {
    const items = makeItems("u", 3, 1);
    const unit = makeEmbedding(items, 5, 1, true);
    expect(unitRows(unit.data, 5, unit.ids)).toBe(unit.data);
    const raw = makeEmbedding(items, 5, 1);
    const copy = unitRows(raw.data, 5, raw.ids);
    expect(copy).not.toBe(raw.data);
    for (let r = 0; r < 3; r++) expect(Math.hypot(...copy.subarray(r * 5, r * 5 + 5))).toBeCloseTo(1, 6);
  });

  test("names the item whose row is zero", () => {
    expect(() => unitRows(new Float32Array([1, 0, 0, 0]), 2, ["a", "b"], "E.npy")).toThrow(
      'E.npy, record "b": embedding row has norm 0',
    );
  });
});
