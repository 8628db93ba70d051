import { describe, expect, test } from "vitest";
import { mdeMultiplier, normalCdf, normalQuantile, observedMde, plannedMde } from "../../src/metrics/power.js";
import { LeverError } from "../../src/util/errors.js";

/** Φ(z) by Simpson integration of the density from −40 (an independent check of the quantile). */
function simpsonCdf(z: number): number {
  const lo = Math.min(-40, z - 1);
  const steps = 200_000;
  const h = (z - lo) / steps;
  const f = (x: number) => Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
  let s = f(lo) + f(z);
  for (let i = 1; i < steps; i++) s += (i % 2 === 1 ? 4 : 2) * f(lo + i * h);
  return (s * h) / 3;
}

describe("normalQuantile", () => {
  test("matches published values (scipy.stats.norm.ppf) in all three branches", () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 14);
    expect(normalQuantile(0.8)).toBeCloseTo(0.8416212335729143, 14);
    expect(normalQuantile(0.5)).toBe(0);
    expect(normalQuantile(0.3)).toBeCloseTo(-0.5244005127080409, 14);
    expect(normalQuantile(0.999)).toBeCloseTo(3.090232306167813, 13);
    expect(normalQuantile(1e-5)).toBeCloseTo(-4.264890793922825, 12);
    expect(normalQuantile(1e-12)).toBeCloseTo(-7.034483825301131, 12);
  });

  test("inverts an independently integrated normal CDF", () => {
    for (const p of [0.01, 0.1, 0.42, 0.77, 0.995]) expect(simpsonCdf(normalQuantile(p))).toBeCloseTo(p, 9);
  });

  test("rejects p outside (0, 1)", () => {
    for (const p of [0, 1, -0.1, Number.NaN]) expect(() => normalQuantile(p)).toThrow(LeverError);
  });
});

describe("normalCdf", () => {
  test("matches published values (scipy.stats.norm.cdf) and the integrated density to 1.2e-7 relative", () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(1.959963984540054)).toBeCloseTo(0.975, 7);
    expect(normalCdf(-1)).toBeCloseTo(0.15865525393145707, 7);
    for (const z of [-8, -5, -2.5, -0.3, 0.7, 3, 6]) {
      const exact = simpsonCdf(z);
      expect(Math.abs(normalCdf(z) - exact) / exact).toBeLessThan(1.2e-7);
    }
  });

  test("is monotone and symmetric: Φ(−x) = 1 − Φ(x)", () => {
    let previous = 0;
    for (let x = -10; x <= 10; x += 0.05) {
      const p = normalCdf(x);
      expect(p).toBeGreaterThanOrEqual(previous);
      expect(p + normalCdf(-x)).toBeCloseTo(1, 12);
      previous = p;
    }
  });
});

describe("minimum detectable difference", () => {
  test("α = 0.05 two-sided with power 0.8 multiplies the SE by z.975 + z.8 = 2.8016", () => {
    expect(mdeMultiplier()).toBeCloseTo(2.8015852181129683, 12);
    // α = 0.01, power 0.9: 2.5758 + 1.2816.
    expect(mdeMultiplier({ alpha: 0.01, power: 0.9 })).toBeCloseTo(2.5758293035489 + 1.2815515655446, 10);
  });

  test("planning: N = 800 with 2 / 5 / 10 / 20 % discordant gives 1.40 / 2.21 / 3.13 / 4.43 points", () => {
    // SE = √(p/800): 2 % → 0.5 pp exactly.
    expect(plannedMde(0.02, 800).standardError).toBeCloseTo(0.005, 15);
    expect(100 * plannedMde(0.02, 800).mde).toBeCloseTo(1.4008, 4);
    expect(100 * plannedMde(0.05, 800).mde).toBeCloseTo(2.2148, 4);
    expect(100 * plannedMde(0.1, 800).mde).toBeCloseTo(3.1323, 4);
    expect(100 * plannedMde(0.2, 800).mde).toBeCloseTo(4.4297, 4);
  });

  test("observed: sd(d)/√n of hand-made differences, and it equals the planning value when wins = losses", () => {
    // d = [1, -1, 0, 0]: mean 0, sample variance 2/3, SE = √(2/3)/2.
    const r = observedMde([1, -1, 0, 0]);
    expect(r.standardError).toBeCloseTo(Math.sqrt(2 / 3) / 2, 15);
    expect(r.mde).toBeCloseTo(2.8015852181129683 * (Math.sqrt(2 / 3) / 2), 12);
    expect(r).toMatchObject({ n: 4, units: 4 });
    // 800 questions, 8 wins and 8 losses (2 % discordant, Δ = 0): sample variance 16/799 vs p = 0.02.
    const d = Array.from({ length: 800 }, (_, i) => (i < 8 ? 1 : i < 16 ? -1 : 0));
    expect(observedMde(d).standardError).toBeCloseTo(Math.sqrt(16 / 799 / 800), 15);
    expect(observedMde(d).mde / plannedMde(0.02, 800).mde).toBeCloseTo(Math.sqrt(800 / 799), 12);
  });

  test("clusters: questions of one image move together, so the SE is that of the image sums", () => {
    // Two images × two questions, d = [1, 1 | -1, -1]: cluster sums ±2, mean 0,
    // SE = √(2/1 · (4 + 4)) / 4 = 1; unclustered SE = sd([1,1,-1,-1])/2 = √(4/3)/2.
    const d = [1, 1, -1, -1];
    expect(observedMde(d, { clusters: ["a", "a", "b", "b"] }).standardError).toBeCloseTo(1, 15);
    expect(observedMde(d).standardError).toBeCloseTo(Math.sqrt(4 / 3) / 2, 15);
    // Singleton clusters reproduce the unclustered SE.
    expect(observedMde(d, { clusters: [0, 1, 2, 3] }).standardError).toBeCloseTo(observedMde(d).standardError, 15);
  });

  test("rejects too few differences, bad shares and bad levels", () => {
    expect(() => observedMde([1])).toThrow(LeverError);
    expect(() => plannedMde(1.5, 800)).toThrow(LeverError);
    expect(() => plannedMde(0.1, 0)).toThrow(LeverError);
    expect(() => mdeMultiplier({ alpha: 0 })).toThrow(LeverError);
  });
});
