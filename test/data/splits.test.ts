import { describe, expect, it } from "vitest";
import { formatSubsetSpec, parseSubsetSpec, selectSubset, subsetRecord } from "../../src/data/splits.js";

const ids = (xs: { questionId: string }[]) => xs.map((x) => x.questionId);
const items = ["30", "4", "1000", "7", "12", "5", "200", "9", "11", "10"].map((questionId) => ({ questionId }));

describe("parseSubsetSpec", () => {
  it("parses first:N, random:N and all, and formats them back", () => {
    expect(parseSubsetSpec("first:800")).toEqual({ kind: "first", n: 800 });
    expect(parseSubsetSpec(" random:5 ")).toEqual({ kind: "random", n: 5 });
    expect(parseSubsetSpec("all")).toEqual({ kind: "all" });
    for (const s of ["first:800", "random:5", "all"]) expect(formatSubsetSpec(parseSubsetSpec(s))).toBe(s);
  });

  it("rejects anything else, naming the option", () => {
    for (const bad of ["first", "first:", "first:-1", "first:0", "top:5", "random:1.5", "first:5x"]) {
      expect(() => parseSubsetSpec(bad, "--subset")).toThrow(/field "--subset"/);
    }
  });
});

describe("selectSubset", () => {
  it("first:N keeps the N lowest question ids numerically, whatever the input order", () => {
    expect(ids(selectSubset(items, "first:4", 0))).toEqual(["4", "5", "7", "9"]);
    expect(ids(selectSubset([...items].reverse(), "first:4", 99))).toEqual(["4", "5", "7", "9"]);
  });

  it("all returns every item in question-id order", () => {
    expect(ids(selectSubset(items, { kind: "all" }, 0))).toEqual([
      "4",
      "5",
      "7",
      "9",
      "10",
      "11",
      "12",
      "30",
      "200",
      "1000",
    ]);
  });

  it("random:N is reproducible for a seed, independent of input order, sorted and without repeats", () => {
    const a = ids(selectSubset(items, "random:4", 5));
    expect(ids(selectSubset([...items].reverse(), "random:4", 5))).toEqual(a);
    expect(new Set(a).size).toBe(4);
    expect([...a].sort((x, y) => Number(x) - Number(y))).toEqual(a);
    const others = [1, 2, 3, 4, 6, 7].map((seed) => ids(selectSubset(items, "random:4", seed)).join());
    expect(new Set([...others, a.join()]).size).toBeGreaterThan(1);
  });

  it("random:N picks every item with probability N/size (frequency check over 2000 seeds)", () => {
    const counts = new Map<string, number>();
    const seeds = 2000;
    for (let seed = 0; seed < seeds; seed++) {
      for (const id of ids(selectSubset(items, "random:3", seed))) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    const expected = (seeds * 3) / items.length; // 600
    const sd = Math.sqrt(seeds * 0.3 * 0.7); // ≈ 20.5
    for (const item of items) expect(Math.abs((counts.get(item.questionId) ?? 0) - expected)).toBeLessThan(4.5 * sd);
  });

  it("refuses a subset larger than the split", () => {
    expect(() => selectSubset(items, "first:11", 0)).toThrow(/first:11 asks for more items than the 10 available/);
    expect(() => selectSubset(items, "random:11", 0)).toThrow(/random:11/);
  });
});

describe("subsetRecord", () => {
  it("records the seed only for random subsets and nothing for all", () => {
    expect(subsetRecord({ kind: "first", n: 3 }, 7, 10)).toEqual({ spec: "first:3", seed: null, of: 10 });
    expect(subsetRecord({ kind: "random", n: 3 }, 7, 10)).toEqual({ spec: "random:3", seed: 7, of: 10 });
    expect(subsetRecord({ kind: "all" }, 7, 10)).toBeNull();
  });
});
