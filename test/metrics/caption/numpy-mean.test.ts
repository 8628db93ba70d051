import { describe, expect, test } from "vitest";
import { numpyMean } from "../../../src/metrics/caption/numpy-mean.js";

describe("numpyMean", () => {
  test("sums in numpy's pairwise order, not left to right", () => {
    // 1e16 absorbs the 1s when added one by one; eight accumulators keep them.
    const values = [1e16, 1, 1, 1, 1, 1, 1, 1, -1e16, 1, 1, 1, 1, 1, 1, 1];
    let leftToRight = 0;
    for (const v of values) leftToRight += v;
    // numpy: r_j = v_j + v_{j+8}: r0 = 0, r1..r7 = 2 → 14; mean 14/16.
    expect(numpyMean(values)).toBe(14 / 16);
    expect(leftToRight / 16).not.toBe(14 / 16);
  });

  test("small vectors are summed left to right from 0; the empty vector is NaN", () => {
    expect(numpyMean([0.1, 0.2, 0.3])).toBe((0 + 0.1 + 0.2 + 0.3) / 3);
    expect(numpyMean([])).toBeNaN();
  });
});
