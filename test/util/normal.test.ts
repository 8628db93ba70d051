import { describe, expect, test } from "vitest";
import { LeverError } from "../../src/util/errors.js";
import { normalCdf, normalQuantile } from "../../src/util/normal.js";

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

  test("is monotone, 0 and 1 in the far tails, and inverts the quantile", () => {
    let previous = 0;
    for (let x = -10; x <= 10; x += 0.05) {
      const p = normalCdf(x);
      expect(p).toBeGreaterThanOrEqual(previous);
      previous = p;
    }
    expect(normalCdf(-Infinity)).toBe(0);
    expect(normalCdf(Infinity)).toBe(1);
    for (const p of [0.001, 0.2, 0.5, 0.9, 0.999]) expect(normalCdf(normalQuantile(p))).toBeCloseTo(p, 7);
  });
});
