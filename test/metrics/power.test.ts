import { describe, expect, test } from "vitest";
import { mdeMultiplier, observedMde, plannedMde } from "../../src/metrics/power.js";
import { LeverError } from "../../src/util/errors.js";

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
