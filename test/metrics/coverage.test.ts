/**
 * Coverage of the 95 % paired bootstrap interval on simulated paired samples with a known
 * population difference. With T trials the observed coverage has binomial SE √(.95·.05/T); for
 * T = 400 that is 1.09 points, so a correct interval lands in .95 ± 3·SE = [.917, .983] except with
 * probability ≈ 0.003. (Percentile intervals run a little short at small n; that stays inside.)
 */
import { describe, expect, test } from "vitest";
import { pairedBootstrap } from "../../src/metrics/stats.js";
import { Rng } from "../../src/util/rng.js";

const TRIALS = 400;
const TOLERANCE = 3 * Math.sqrt((0.95 * 0.05) / TRIALS);

describe("paired bootstrap coverage", () => {
  test("independent questions: correlated 0/1 pairs with Δ = 0.1 are covered ≈ 95 %", () => {
    // a = 1[u < .6], b = 1[v < .5] with v = u (probability .7) or a fresh uniform: E[a − b] = .1 exactly.
    const rng = new Rng(20_240_601);
    let covered = 0;
    for (let t = 0; t < TRIALS; t++) {
      const a: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < 120; i++) {
        const u = rng.next();
        const v = rng.next() < 0.7 ? u : rng.next();
        a.push(u < 0.6 ? 1 : 0);
        b.push(v < 0.5 ? 1 : 0);
      }
      const r = pairedBootstrap(a, b, { seed: t, resamples: 500 });
      if (r.lower <= 0.1 && 0.1 <= r.upper) covered++;
    }
    expect(Math.abs(covered / TRIALS - 0.95)).toBeLessThanOrEqual(TOLERANCE);
  });

  test("questions sharing an image: the image-clustered interval covers ≈ 95 %, the naive one far less", () => {
    // 40 images × 5 questions. Each image favours A (p_A .9, p_B .3) or B (.3, .7) with probability ½,
    // so E[a − b] = ½·.6 + ½·(−.4) = .1 and differences on one image move together: per image the
    // mean difference has variance .36/5 + .25 = .322, while treating questions as independent
    // assumes (.36 + .25)/5 = .122, an SE too small by √(.322/.122) ≈ 1.62, i.e. nominal 95 % covers ≈ 77 %.
    const rng = new Rng(77);
    let clustered = 0;
    let naive = 0;
    for (let t = 0; t < TRIALS; t++) {
      const a: number[] = [];
      const b: number[] = [];
      const images: number[] = [];
      for (let g = 0; g < 40; g++) {
        const [pa, pb] = rng.next() < 0.5 ? [0.9, 0.3] : [0.3, 0.7];
        for (let q = 0; q < 5; q++) {
          a.push(rng.next() < pa ? 1 : 0);
          b.push(rng.next() < pb ? 1 : 0);
          images.push(g);
        }
      }
      const c = pairedBootstrap(a, b, { seed: t, resamples: 500, clusters: images });
      if (c.lower <= 0.1 && 0.1 <= c.upper) clustered++;
      const n = pairedBootstrap(a, b, { seed: t, resamples: 500 });
      if (n.lower <= 0.1 && 0.1 <= n.upper) naive++;
    }
    expect(Math.abs(clustered / TRIALS - 0.95)).toBeLessThanOrEqual(TOLERANCE);
    expect(naive / TRIALS).toBeLessThan(0.95 - TOLERANCE);
    // …and close to the predicted P(|Z| < 1.96/1.62) = .774 (binomial SE there √(.774·.226/400) = 2.1 points).
    expect(Math.abs(naive / TRIALS - 0.774)).toBeLessThanOrEqual(3 * Math.sqrt((0.774 * 0.226) / TRIALS));
  });
});
