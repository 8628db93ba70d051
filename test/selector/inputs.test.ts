import { describe, expect, it } from "vitest";
import { rankScores, resolvePool, selectorInput, selectorInputOf, selectorSources } from "../../src/selector/inputs.js";

/** A matrix whose row r is [r, r + 0.5] under id `${prefix}${r}`. */
const matrix = (prefix: string, rows: number) => ({
  ids: Array.from({ length: rows }, (_, r) => `${prefix}${r}`),
  dim: 2,
  data: Float32Array.from({ length: rows * 2 }, (_, i) => Math.floor(i / 2) + (i % 2) * 0.5),
});

const sources = selectorSources(matrix("q", 3), matrix("c", 6));

describe("selector inputs", () => {
  it("resolves a query and its pool to rows of the sources once, keeping the pool's ids in pool order", () => {
    const pool = resolvePool(sources, "q2", ["c4", "c0", "c5"]);
    expect(pool).toEqual({
      queryId: "q2",
      poolIds: ["c4", "c0", "c5"],
      queryRow: 2,
      candRows: Int32Array.from([4, 0, 5]),
      prior: pool.prior,
    });
    // The rank prior: the candidates' normal scores by their cosine order (the same values in some order).
    expect([...pool.prior].sort((a, b) => a - b)).toEqual([...rankScores([3, 2, 1])].sort((a, b) => a - b));
  });

  it("rank scores: 0.25·Φ⁻¹(1 − (r + ½)/n) by the cosine order, ties by position (published normal quantiles)", () => {
    // Φ⁻¹(0.875) = 1.150349, Φ⁻¹(0.625) = 0.318639 (standard normal table).
    const s = rankScores([0.2, 0.9, 0.5, 0.5]);
    expect(s[1]).toBeCloseTo(0.25 * 1.150349, 6); // rank 0
    expect(s[2]).toBeCloseTo(0.25 * 0.318639, 6); // rank 1 (the first of the tie)
    expect(s[3]).toBeCloseTo(-0.25 * 0.318639, 6); // rank 2
    expect(s[0]).toBeCloseTo(-0.25 * 1.150349, 6); // rank 3
    // Any monotone change of the cosines gives the same scores.
    expect([...rankScores([0.2, 0.9, 0.5, 0.5].map((c) => Math.exp(5 * c)))]).toEqual([...s]);
  });

  it("names the query, the file and the pool entry of a missing row", () => {
    const at = { queryFile: "r.json", poolFile: "p.json", poolField: "pool" };
    expect(() => resolvePool(sources, "q9", ["c1"], at)).toThrow(/r\.json, record "q9".*query has no embedding row/);
    expect(() => resolvePool(sources, "q1", ["c1", "x"], at)).toThrow(
      /p\.json, record "q1", field "pool\[1\]".*candidate "x" has no embedding row/,
    );
    expect(() => resolvePool(sources, "q1", ["x"])).toThrow(/record "q1", field "pools\[0\]"/);
  });

  it("packs a batch: query rows, each distinct candidate row once (first seen first), slots padded with −1", () => {
    const pools = [resolvePool(sources, "q1", ["c3", "c1"]), resolvePool(sources, "q0", ["c1", "c5", "c3"])];
    const input = selectorInput(pools, sources, "float64");
    expect(input.K).toBe(3);
    expect(input.queries).toEqual(Float64Array.from([1, 1.5, 0, 0.5]));
    expect(input.table).toEqual(Float64Array.from([3, 3.5, 1, 1.5, 5, 5.5]));
    expect([...input.slots]).toEqual([0, 1, -1, 1, 2, 0]);
    expect(selectorInput(pools, sources).queries).toBeInstanceOf(Float32Array);
    expect(
      selectorInputOf(sources, [
        { queryId: "q1", poolIds: ["c3", "c1"] },
        { queryId: "q0", poolIds: ["c1", "c5", "c3"] },
      ]),
    ).toEqual(selectorInput(pools, sources));
    expect(selectorInput([], sources)).toMatchObject({ K: 0, slots: new Int32Array(0) });
  });

  it("refuses query and candidate embeddings of different widths; one matrix gives one shared table", () => {
    expect(() => selectorSources({ ...matrix("q", 2), dim: 1 }, matrix("c", 2))).toThrow(
      /query embeddings have dim 1, candidates 2/,
    );
    const both = matrix("x", 4);
    const shared = selectorSources(both, both);
    expect(shared.query).toBe(shared.index);
  });
});
