import { describe, expect, it } from "vitest";
import { parseBeamSet, parseRolloutSet } from "../../src/data/trajectories.js";

const set = (gtLogprob: unknown) => ({
  format: "lever.rollouts/1",
  dataset: "d",
  promptOrder: "farthest",
  queries: { q1: { trajectories: [{ selected: ["a", "b"], vqaAccScore: 1, vqaGtProb: 0.7, gtLogprob }] } },
});

describe("rollout trajectories", () => {
  it("store gtLogprob, the log-probability of the majority answer (≤ 0, null or absent)", () => {
    expect(parseRolloutSet(set(-0.25), "r.json").queries.q1.trajectories[0].gtLogprob).toBe(-0.25);
    expect(parseRolloutSet(set(null), "r.json").queries.q1.trajectories[0].gtLogprob).toBeNull();
    expect(parseRolloutSet(set(undefined), "r.json").queries.q1.trajectories[0].gtLogprob).toBeUndefined();
    expect(() => parseRolloutSet(set(0.5), "r.json")).toThrow(
      'r.json, record "q1", field "trajectories[0].gtLogprob": a log-probability must be ≤ 0',
    );
  });
});

describe("empty artefacts", () => {
  it("refuses a beam set without beams and a rollout set without trajectories", () => {
    const beams = { format: "lever.beams/1", dataset: "d", promptOrder: "nearest", queries: { q1: { beams: [] } } };
    expect(() => parseBeamSet(beams, "b.json")).toThrow('b.json, field "queries": the beam set holds no beams');
    expect(() => parseBeamSet({ ...beams, queries: {} }, "b.json")).toThrow("holds no beams");
    expect(() => parseRolloutSet({ ...set(-1), queries: {} }, "r.json")).toThrow(
      'r.json, field "queries": the rollout set holds no trajectories',
    );
  });
});

describe("the pool contract", () => {
  it("refuses a rollout set whose query is in its own pool or among its own demonstrations", () => {
    const withPool = (pool: string[], selected: string[], positions: number[]) => ({
      ...set(-1),
      queries: { q1: { pool, trajectories: [{ selected, positions, vqaAccScore: 1, vqaGtProb: 0.7 }] } },
    });
    expect(parseRolloutSet(withPool(["a", "b"], ["b", "a"], [1, 0]), "r.json").queries.q1.pool).toEqual(["a", "b"]);
    expect(() => parseRolloutSet(withPool(["a", "q1", "b"], ["b", "a"], [2, 0]), "r.json")).toThrow(
      'r.json, record "q1", field "pool[1]": "q1" is the query itself: a query is never its own candidate',
    );
    const noPool = { ...set(-1), queries: { q1: { trajectories: [{ selected: ["a", "q1"], vqaAccScore: 1 }] } } };
    expect(() => parseRolloutSet(noPool, "r.json")).toThrow(
      'r.json, record "q1", field "trajectories[0].selected[1]": "q1" is the query itself: a query is never its own demonstration',
    );
  });
});
