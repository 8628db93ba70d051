import { describe, expect, it } from "vitest";
import { maxOf, minOf } from "../../src/util/extent.js";

describe("maxOf / minOf", () => {
  it("agree with Math.max / Math.min, including no values and NaN (signed zeros aside)", () => {
    for (const xs of [[], [3], [2, -1, 7, 7, 0], [1, Number.NaN, 2], [Number.POSITIVE_INFINITY, 1]]) {
      expect(maxOf(xs)).toBe(Math.max(...xs));
      expect(minOf(xs)).toBe(Math.min(...xs));
    }
  });

  it("take more values than a call may have arguments (where Math.max(...values) overflows the stack)", () => {
    const values = Array.from({ length: 500_000 }, (_, i) => (i * 7919) % 500_003);
    expect(() => Math.max(...values)).toThrow(RangeError);
    expect(maxOf(values)).toBe(values.reduce((m, v) => (v > m ? v : m), -1));
    expect(minOf(values)).toBe(0);
  });
});
