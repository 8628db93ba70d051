import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { answerSupport, poolVote, supportsOf, voteOrder, voteWeight } from "../../src/metrics/vote.js";

/** A candidate whose annotators give `counts` (answer → how many) and who shows `shown`. */
function candidate(counts: Record<string, number>, shown: string) {
  const annotators = Object.entries(counts).flatMap(([answer, n]) => Array<string>(n).fill(answer));
  return answerSupport(annotators, shown);
}

describe("answerSupport", () => {
  it("keys answers by the official normalisation and shares by annotator", () => {
    const s = candidate({ Two: 5, two: 2, "2": 1, "the park": 2 }, "Two");
    expect(s.answer).toBe("2");
    expect(s.shares.get("2")).toBeCloseTo(0.8, 15);
    expect(s.shares.get("park")).toBeCloseTo(0.2, 15);
    expect(answerSupport([], "red")).toEqual({ answer: "red", shares: new Map() });
  });
});

describe("supportsOf", () => {
  const item = (questionId: string, answers: string[], answer: string): VqaItem => ({
    questionId,
    imageId: "1",
    question: "?",
    answers: answers.map((a) => ({ answer: a })),
    answer,
    questionType: "",
    answerType: "",
    imagePath: null,
  });

  it("is each item's support from its annotators and shown answer, computed once, undefined for an unknown id", () => {
    const support = supportsOf([item("1", ["Two", "2", "three", "2"], "two"), item("2", [], "red")]);
    const first = support("1")!;
    expect(first.answer).toBe("2");
    expect([...first.shares]).toEqual([
      ["2", 0.75],
      ["3", 0.25],
    ]);
    expect(support("1")).toBe(first);
    expect(support("2")).toEqual({ answer: "red", shares: new Map() });
    expect(support("3")).toBeUndefined();
  });
});

describe("poolVote", () => {
  it("is the similarity-weighted share of the OTHER candidates' annotators giving each one's answer (hand case)", () => {
    const pool = [
      candidate({ red: 10 }, "red"),
      candidate({ red: 7, blue: 3 }, "red"),
      candidate({ blue: 10 }, "blue"),
    ];
    const { vote, agreement } = poolVote(pool, [1, 1, 1]);
    expect([...vote]).toEqual([(0.7 + 0) / 2, (1 + 0) / 2, (0.3 + 1 * 0) / 2]);
    expect([...agreement]).toEqual([1, 0.7, 1]);
    // Weights 2, 1, 0.5: vote_0 = (1·0.7 + 0.5·0) / 1.5, vote_1 = (2·1 + 0.5·0) / 2.5, vote_2 = (2·0 + 1·0.3) / 3.
    const weighted = poolVote(pool, [2, 1, 0.5]).vote;
    expect(weighted[0]).toBeCloseTo(0.7 / 1.5, 15);
    expect(weighted[1]).toBeCloseTo(2 / 2.5, 15);
    expect(weighted[2]).toBeCloseTo(0.3 / 3, 15);
  });

  it('matches answers after normalisation: "Two" shown is supported by annotators writing "2" or "two"', () => {
    const pool = [
      candidate({ Two: 10 }, "Two"),
      candidate({ "2": 6, two: 4 }, "2"),
      candidate({ "the park": 10 }, "park"),
    ];
    const { vote, agreement } = poolVote(pool, [1, 1, 1]);
    expect(vote[0]).toBe(0.5);
    expect(vote[1]).toBe(0.5);
    expect(vote[2]).toBe(0);
    expect([...agreement]).toEqual([1, 1, 1]);
  });

  it("counts the annotators, not only each candidate's majority string", () => {
    // Candidate 1 shows "blue", but 4 of its 10 annotators said "red": it supports "red" with 0.4.
    const pool = [candidate({ red: 10 }, "red"), candidate({ blue: 6, red: 4 }, "blue")];
    const { vote, agreement } = poolVote(pool, [1, 1]);
    expect(vote[0]).toBeCloseTo(0.4, 15);
    expect(vote[1]).toBe(0);
    expect(agreement[1]).toBeCloseTo(0.6, 15);
  });

  it("never lets a candidate vote for itself: one candidate, and zero weights, give vote 0", () => {
    const alone = poolVote([candidate({ red: 10 }, "red")], [0.9]);
    expect([...alone.vote]).toEqual([0]);
    expect([...alone.agreement]).toEqual([1]);
    const twins = [candidate({ red: 10 }, "red"), candidate({ red: 10 }, "red"), candidate({ red: 10 }, "red")];
    expect([...poolVote(twins, [0, 0, 0]).vote]).toEqual([0, 0, 0]);
    // Only candidate 0 weighs: it supports the others fully, and nobody with weight is left to support it.
    expect([...poolVote(twins, [1, 0, 0]).vote]).toEqual([0, 1, 1]);
  });

  it("rejects weights that do not fit the pool", () => {
    const pool = [candidate({ red: 10 }, "red"), candidate({ red: 10 }, "red")];
    expect(() => poolVote(pool, [1])).toThrow(/1 similarity weights for 2 candidates/);
    expect(() => poolVote(pool, [1, -0.1])).toThrow(/weights\[1\]/);
    expect(() => poolVote(pool, [Number.NaN, 1])).toThrow(/weights\[0\]/);
  });
});

describe("voteOrder and voteWeight", () => {
  it("orders by vote, ties by similarity, then by pool position", () => {
    expect(voteOrder([0.5, 0.5, 0.2, 0.9], [0.1, 0.9, 0.5, -0.3])).toEqual([3, 1, 0, 2]);
    expect(voteOrder([0, 0, 0], [0.2, 0.2, 0.3])).toEqual([2, 0, 1]);
    expect(voteOrder([], [])).toEqual([]);
  });

  it("weighs a candidate by its cosine to the query, 0 when it points away", () => {
    expect(voteWeight(0.7)).toBe(0.7);
    expect(voteWeight(-0.2)).toBe(0);
  });
});
