import { describe, expect, test } from "vitest";
import {
  averageRanks,
  binomialHalfCdf,
  bootstrapMeanCI,
  comparePaired,
  mcnemarExact,
  meanStd,
  meanStdMaxAbsHot,
  pairedBootstrap,
  pairedMcNemar,
  quantileSorted,
  signFlipTest,
} from "../../src/metrics/stats.js";
import { Rng } from "../../src/util/rng.js";

/** Exact P(X ≤ k), X ~ Bin(n, 1/2), with BigInt binomial coefficients: an independent reference. */
function exactHalfCdf(n: number, k: number): number {
  let c = 1n;
  let total = 0n;
  for (let i = 0; i <= k; i++) {
    total += c;
    c = (c * BigInt(n - i)) / BigInt(i + 1);
  }
  // total / 2^n to double precision: scale the numerator before dividing.
  return Number((total * 10n ** 18n) / 2n ** BigInt(n)) / 1e18;
}

function bernoulli(rng: Rng, n: number, p: number): number[] {
  return Array.from({ length: n }, () => (rng.next() < p ? 1 : 0));
}

describe("exact McNemar", () => {
  test("b=3, c=0 gives p = 2·(1/2)^3 = 0.25", () => {
    expect(mcnemarExact(3, 0).pValue).toBeCloseTo(0.25, 15);
    expect(mcnemarExact(0, 3).pValue).toBeCloseTo(0.25, 15);
  });

  test("b=10, c=2 gives p = 2·(1+12+66)/4096 = 0.0386", () => {
    expect(mcnemarExact(10, 2).pValue).toBeCloseTo((2 * 79) / 4096, 15);
    expect(mcnemarExact(10, 2).pValue).toBeCloseTo(0.0386, 4);
  });

  test("no or balanced discordant pairs give p = 1", () => {
    expect(mcnemarExact(0, 0).pValue).toBe(1);
    expect(mcnemarExact(7, 7).pValue).toBe(1);
  });

  test("the binomial tail matches exact BigInt arithmetic, also for large n", () => {
    for (const [n, k] of [
      [12, 2],
      [60, 20],
      [200, 80],
      [1000, 470],
      [3000, 1400],
    ]) {
      expect(binomialHalfCdf(n, k) / exactHalfCdf(n, k)).toBeCloseTo(1, 9);
    }
    // Symmetry of Bin(n, 1/2): P(X ≤ k) + P(X ≤ n−k−1) = 1.
    expect(binomialHalfCdf(101, 40) + binomialHalfCdf(101, 60)).toBeCloseTo(1, 12);
  });

  test("binarises per-question scores at the given threshold", () => {
    const a = [1, 1, 1, 0.9, 0.3, 0];
    const b = [0, 0.6, 1, 0.9, 1, 0];
    // threshold 1: A-only = q0, q1 → 2; B-only = q4 → 1
    expect(pairedMcNemar(a, b, 1)).toMatchObject({ onlyA: 2, onlyB: 1 });
    // threshold .6: q1 is right for both; A-only = q0, B-only = q4
    expect(pairedMcNemar(a, b, 0.6)).toMatchObject({ onlyA: 1, onlyB: 1, pValue: 1 });
  });

  test("rejects negative or fractional counts", () => {
    expect(() => mcnemarExact(-1, 2)).toThrow(/non-negative integers/);
    expect(() => mcnemarExact(1.5, 2)).toThrow(/non-negative integers/);
  });
});

describe("sign-flip permutation test", () => {
  test("enumerates exactly: three wins and no losses give p = 2/8 = 0.25", () => {
    const r = signFlipTest([1, 1, 1], [0, 0, 0], { seed: 1 });
    expect(r.exact).toBe(true);
    expect(r.pValue).toBe(0.25);
    expect(r.meanDifference).toBe(1);
  });

  test("d = [2,1,1,1,1]: only the all-plus and all-minus vectors reach |Σ| = 6, p = 2/32", () => {
    expect(signFlipTest([2, 1, 1, 1, 1], [0, 0, 0, 0, 0], { seed: 1 }).pValue).toBe(2 / 32);
  });

  test("sampled p agrees with the exact p on 16 questions", () => {
    const a = [1, 1, 0.9, 1, 0.3, 1, 1, 0, 1, 0.6, 1, 1, 0.9, 0, 1, 1];
    const b = [0.6, 1, 0.3, 0, 0.3, 1, 0.9, 0.3, 0, 0.6, 1, 0.3, 0.9, 0, 0.6, 1];
    const exact = signFlipTest(a, b, { seed: 5, permutations: 2 ** 16 });
    const sampled = signFlipTest(a, b, { seed: 5, permutations: 20_000 });
    expect(exact.exact).toBe(true);
    expect(sampled.exact).toBe(false);
    expect(Math.abs(sampled.pValue - exact.pValue)).toBeLessThan(0.01);
  });

  test("flips whole clusters: one cluster means the data cannot reject anything", () => {
    const r = signFlipTest([1, 1, 1, 1], [0, 0, 0, 0], { seed: 1, clusters: ["img", "img", "img", "img"] });
    expect(r.units).toBe(1);
    expect(r.pValue).toBe(1);
  });
});

describe("bootstrap", () => {
  test("is deterministic by seed and reports its settings", () => {
    const values = bernoulli(new Rng(3), 200, 0.4);
    const r1 = bootstrapMeanCI(values, { seed: 42, resamples: 500 });
    const r2 = bootstrapMeanCI(values, { seed: 42, resamples: 500 });
    const r3 = bootstrapMeanCI(values, { seed: 43, resamples: 500 });
    expect(r1).toEqual(r2);
    expect(r3.lower === r1.lower && r3.upper === r1.upper).toBe(false);
    expect(r1).toMatchObject({ seed: 42, resamples: 500, confidence: 0.95, units: 200 });
    expect(r1.lower).toBeLessThan(r1.estimate);
    expect(r1.upper).toBeGreaterThan(r1.estimate);
  });

  test("matches the normal approximation on a large Bernoulli sample", () => {
    // n=2000, p̂ ≈ .4: SE = sqrt(p̂(1−p̂)/n) ≈ 0.011; 95% half-width ≈ 1.96·SE.
    const values = bernoulli(new Rng(9), 2000, 0.4);
    const r = bootstrapMeanCI(values, { seed: 1, resamples: 4000 });
    const p = r.estimate;
    const se = Math.sqrt((p * (1 - p)) / values.length);
    expect(r.standardError / se).toBeGreaterThan(0.95);
    expect(r.standardError / se).toBeLessThan(1.05);
    expect((r.upper - r.lower) / (2 * 1.96 * se)).toBeGreaterThan(0.93);
    expect((r.upper - r.lower) / (2 * 1.96 * se)).toBeLessThan(1.07);
  });

  test("95% intervals cover the true mean about 95% of the time (fixed seed, 300 datasets)", () => {
    const rng = new Rng(2024);
    let covered = 0;
    const trials = 300;
    for (let t = 0; t < trials; t++) {
      const values = bernoulli(rng, 80, 0.3);
      const r = bootstrapMeanCI(values, { seed: t, resamples: 400 });
      if (r.lower <= 0.3 && 0.3 <= r.upper) covered++;
    }
    // Binomial(300, .95) has SD ≈ 3.8 → ±3 SD ≈ [0.91, 0.99]; percentile intervals run slightly short.
    expect(covered / trials).toBeGreaterThan(0.9);
    expect(covered / trials).toBeLessThan(0.99);
  });

  test("singleton clusters reproduce the unclustered bootstrap exactly", () => {
    const values = bernoulli(new Rng(4), 50, 0.5);
    const plain = bootstrapMeanCI(values, { seed: 8, resamples: 300 });
    const clustered = bootstrapMeanCI(values, { seed: 8, resamples: 300, clusters: values.map((_, i) => i) });
    expect(clustered).toEqual(plain);
  });

  test("clustering by image widens the interval when questions of an image agree", () => {
    // 100 images × 5 identical outcomes: the effective sample is 100, not 500 → width × ≈ sqrt(5).
    const perImage = bernoulli(new Rng(6), 100, 0.5);
    const values = perImage.flatMap((v) => [v, v, v, v, v]);
    const images = perImage.flatMap((_, i) => [i, i, i, i, i]);
    const plain = bootstrapMeanCI(values, { seed: 1, resamples: 2000 });
    const clustered = bootstrapMeanCI(values, { seed: 1, resamples: 2000, clusters: images });
    const ratio = (clustered.upper - clustered.lower) / (plain.upper - plain.lower);
    expect(ratio).toBeGreaterThan(1.9);
    expect(ratio).toBeLessThan(2.6);
    expect(clustered.units).toBe(100);
  });

  test("paired bootstrap: identical systems give CI [0, 0] and p = 1; a uniform win gives a tiny p", () => {
    const a = bernoulli(new Rng(1), 100, 0.5);
    const same = pairedBootstrap(a, a, { seed: 3, resamples: 999 });
    expect([same.estimate, same.lower, same.upper, same.pValue]).toEqual([0, 0, 0, 1]);
    const ones = new Array(100).fill(1);
    const zeros = new Array(100).fill(0);
    const win = pairedBootstrap(ones, zeros, { seed: 3, resamples: 999 });
    expect([win.estimate, win.lower, win.upper]).toEqual([1, 1, 1]);
    expect(win.pValue).toBeCloseTo(2 / 1000, 15); // no draw ≤ 0: 2·(0+1)/(R+1)
  });

  test("paired bootstrap and sign-flip agree roughly on a moderate effect, and the CI brackets the difference", () => {
    const rng = new Rng(77);
    const b = bernoulli(rng, 400, 0.5);
    const a = b.map((v) => (v === 0 && rng.next() < 0.12 ? 1 : v)); // A fixes ~6% of questions
    const c = comparePaired(a, b, { seed: 11, resamples: 3000, permutations: 3000, threshold: 1 });
    expect(c.difference.estimate).toBeCloseTo(c.meanA - c.meanB, 15);
    expect(c.difference.lower).toBeLessThan(c.difference.estimate);
    expect(c.difference.upper).toBeGreaterThan(c.difference.estimate);
    expect(c.mcnemar.onlyB).toBe(0);
    expect(c.mcnemar.onlyA).toBe(Math.round((c.meanA - c.meanB) * 400));
    expect(c.difference.pValue).toBeLessThan(0.01);
    expect(c.signFlip.pValue).toBeLessThan(0.01);
    expect(c.mcnemar.pValue).toBeLessThan(0.01);
  });

  test("rejects unpaired inputs, empty inputs and non-finite values", () => {
    expect(() => pairedBootstrap([1, 0], [1], { seed: 1 })).toThrow(/differ in length/);
    expect(() => bootstrapMeanCI([], { seed: 1 })).toThrow(/no values/);
    expect(() => bootstrapMeanCI([1, Number.NaN], { seed: 1 })).toThrow(/not a finite number/);
    expect(() => bootstrapMeanCI([1, 0], { seed: 1, clusters: ["x"] })).toThrow(/clusters has 1 keys/);
  });
});

describe("quantileSorted", () => {
  test("interpolates linearly like numpy's default", () => {
    expect(quantileSorted([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantileSorted([1, 2, 3, 4], 0.25)).toBe(1.75);
    expect(quantileSorted([1, 2, 3, 4], 1)).toBe(4);
    expect(quantileSorted([5], 0.025)).toBe(5);
  });
});

describe("mean, spread and ranks", () => {
  test("meanStd: the mean and the sample standard deviation (n − 1), 0 below two values", () => {
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squares 32 → sample variance 32/7.
    expect(meanStd([2, 4, 4, 4, 5, 5, 7, 9])).toEqual({ mean: 5, std: Math.sqrt(32 / 7) });
    expect(meanStd([3])).toEqual({ mean: 3, std: 0 });
    expect(meanStd([]).mean).toBeNaN();
  });

  test("meanStdMaxAbsHot: the population standard deviation (n) and the largest |x|; 0s for no values", () => {
    expect(meanStdMaxAbsHot([2, 4, 4, 4, 5, 5, 7, 9])).toEqual({ mean: 5, std: 2, maxAbs: 9 });
    expect(meanStdMaxAbsHot([-3, 1])).toEqual({ mean: -1, std: 2, maxAbs: 3 });
    expect(meanStdMaxAbsHot([])).toEqual({ mean: 0, std: 0, maxAbs: 0 });
  });

  test("averageRanks: 1…n ascending, ties share their average rank", () => {
    expect([...averageRanks([10, 30, 20, 30, 5])]).toEqual([2, 4.5, 3, 4.5, 1]);
  });
});
