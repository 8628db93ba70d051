import { describe, expect, test } from "vitest";
import { selectionOverlap } from "../../src/metrics/overlap.js";

describe("selectionOverlap", () => {
  test("counts identical lists (same order) and same sets on the shared questions only", () => {
    const a = new Map([
      ["1", ["10", "11"]],
      ["2", ["12", "13"]],
      ["3", ["14", "15"]],
      ["4", ["16", "17"]],
    ]);
    const b = new Map([
      ["1", ["10", "11"]], // identical
      ["2", ["13", "12"]], // same set, other order
      ["3", ["14", "99"]], // different
      ["5", ["16", "17"]], // not in a
    ]);
    expect(selectionOverlap(a, b)).toEqual({ n: 3, identical: 1, sameSet: 2, share: 1 / 3 });
    expect(selectionOverlap(b, a)).toEqual({ n: 3, identical: 1, sameSet: 2, share: 1 / 3 });
  });

  test("a prefix is not identical; duplicates count as a multiset; no shared question gives share null", () => {
    const a = new Map([
      ["1", ["10"]],
      ["2", ["10", "10", "11"]],
    ]);
    const b = new Map([
      ["1", ["10", "11"]],
      ["2", ["10", "11", "11"]],
    ]);
    expect(selectionOverlap(a, b)).toEqual({ n: 2, identical: 0, sameSet: 0, share: 0 });
    expect(selectionOverlap(a, new Map()).share).toBeNull();
  });
});
