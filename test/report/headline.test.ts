import { describe, expect, it } from "vitest";
import type { ComparedRow, MethodInput } from "../../src/metrics/compare.js";
import { finalSources } from "../../src/report/headline.js";

const rows = (shot: number, picks: string[], accuracy: number[]): ComparedRow[] =>
  picks.map((p, i) => ({ shot, questionId: `q${i}`, accuracy: accuracy[i], failure: null, demonstrations: [p] }));
const method = (id: string, rowsOf: ComparedRow[]): MethodInput => ({ id, label: id, rows: rowsOf });

describe("what a final method is at each shot", () => {
  it("names the method whose rows it copies question by question, and nothing where none is equal", () => {
    const selector = [...rows(1, ["a", "b"], [1, 0]), ...rows(2, ["c", "d"], [1, 1])];
    const vote = [...rows(1, ["e", "f"], [1, 1]), ...rows(2, ["c", "g"], [1, 1])];
    const prior = [...rows(1, ["a", "h"], [1, 0]), ...rows(2, ["i", "j"], [0, 1])];
    const final = [
      ...rows(1, ["e", "f"], [1, 1]), // the vote's shot-1 rows
      ...rows(2, ["c", "d"], [1, 1]), // the selector's shot-2 rows
      ...rows(3, ["k", "l"], [0, 0]), // nobody's
    ];
    const sources = finalSources([
      method("sel", selector),
      method("vote", vote),
      method("topk-joint", prior),
      method("final:online", final),
    ]);
    expect([...(sources.get("final:online") ?? [])]).toEqual([
      [1, "vote"],
      [2, "sel"],
    ]);
    // One differing demonstration (same accuracy) is not a copy.
    const changed = [...rows(1, ["e", "x"], [1, 1])];
    expect(finalSources([method("vote", vote), method("final:x", changed)]).get("final:x")?.size).toBe(0);
  });
});
