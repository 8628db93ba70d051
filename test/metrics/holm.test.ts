import { describe, expect, test } from "vitest";
import { holmAdjust } from "../../src/metrics/holm.js";
import { LeverError } from "../../src/util/errors.js";

describe("Holm step-down correction", () => {
  test("hand-computed family of four, returned in input order", () => {
    // Sorted: .005 ×4 = .02; .01 ×3 = .03; .03 ×2 = .06; .04 ×1 = .04 → max(.06, .04) = .06 (monotone).
    const adjusted = holmAdjust([0.01, 0.04, 0.03, 0.005]);
    expect(adjusted[0]).toBeCloseTo(0.03, 15);
    expect(adjusted[1]).toBeCloseTo(0.06, 15);
    expect(adjusted[2]).toBeCloseTo(0.06, 15);
    expect(adjusted[3]).toBeCloseTo(0.02, 15);
  });

  test("caps at 1 and keeps the adjusted values monotone in the raw ones", () => {
    expect(holmAdjust([0.5, 0.6])).toEqual([1, 1]);
    const raw = [0.2, 0.001, 0.04, 0.3, 0.012, 0.9];
    const adjusted = holmAdjust(raw);
    const order = raw.map((_, i) => i).sort((a, b) => raw[a] - raw[b]);
    for (let k = 1; k < order.length; k++) expect(adjusted[order[k]]).toBeGreaterThanOrEqual(adjusted[order[k - 1]]);
    for (const [i, p] of adjusted.entries()) {
      expect(p).toBeGreaterThanOrEqual(raw[i]);
      expect(p).toBeLessThanOrEqual(1);
    }
  });

  test("one test is unchanged; ties get equal adjusted values; an empty family is empty", () => {
    expect(holmAdjust([0.03])).toEqual([0.03]);
    expect(holmAdjust([0.02, 0.02, 0.5])).toEqual([0.06, 0.06, 0.5]);
    expect(holmAdjust([])).toEqual([]);
  });

  test("rejects p-values outside [0, 1]", () => {
    expect(() => holmAdjust([0.1, 1.2])).toThrow(LeverError);
    expect(() => holmAdjust([Number.NaN])).toThrow(LeverError);
  });
});
