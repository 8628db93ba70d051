import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import {
  answerSupport,
  calibrateVoteScale,
  poolVote,
  supportsOf,
  voteOrder,
  voteWeights,
} from "../../src/metrics/answer-vote.js";

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

describe("voteOrder and voteWeights", () => {
  it("orders by vote, ties by similarity, then by pool position", () => {
    expect(voteOrder([0.5, 0.5, 0.2, 0.9], [0.1, 0.9, 0.5, -0.3])).toEqual([3, 1, 0, 2]);
    expect(voteOrder([0, 0, 0], [0.2, 0.2, 0.3])).toEqual([2, 0, 1]);
    expect(voteOrder([], [])).toEqual([]);
  });

  it("linear: weighs a candidate by its cosine to the query, 0 when it points away", () => {
    expect([...voteWeights([0.7, -0.2], { kind: "linear" })]).toEqual([0.7, 0]);
  });

  it("rank: exp(−rank/ρ) by the cosine order (ties by position), the same under any monotone change", () => {
    const w = voteWeights([0.2, 0.9, 0.5, 0.5], { kind: "rank", scale: 2 });
    // ranks: 0.9 → 0, 0.5 (pos 2) → 1, 0.5 (pos 3) → 2, 0.2 → 3
    expect([...w]).toEqual([Math.exp(-1.5), 1, Math.exp(-0.5), Math.exp(-1)]);
    const squeezed = [0.2, 0.9, 0.5, 0.5].map((c) => 0.8 + 0.1 * c ** 3);
    expect([...voteWeights(squeezed, { kind: "rank", scale: 2 })]).toEqual([...w]);
    expect(() => voteWeights([0.1], { kind: "rank", scale: 0 })).toThrow(/scale/);
  });
});

describe("calibrateVoteScale", () => {
  const support = (answer: string, counts: Record<string, number>) =>
    answerSupport(
      Object.entries(counts).flatMap(([a, n]) => Array.from({ length: n }, () => a)),
      answer,
    );
  // A query whose nearest candidates agree on "cat" while the pool's majority (far away) says "dog".
  const query = {
    candidates: [
      support("cat", { cat: 10 }),
      support("cat", { cat: 10 }),
      support("dog", { dog: 10 }),
      support("dog", { dog: 10 }),
      support("dog", { dog: 10 }),
      support("dog", { dog: 10 }),
    ],
    shown: ["cat", "cat", "dog", "dog", "dog", "dog"],
    cosines: [0.9, 0.8, 0.3, 0.2, 0.1, 0.0],
    annotators: Array.from({ length: 10 }, () => "cat"),
  };

  it("scores each scale by the VQA accuracy of the vote's first pick's answer and keeps the best", () => {
    // ρ 0.5: weights 1, e^−2, e^−4 … → the two cats support each other: vote(cat₀) = e^−2·1/(Σ_{j≠0}) vs
    // dogs supported only by far dogs → a cat first (accuracy 1). ρ 64: nearly uniform → dogs (4 of 6) win.
    const c = calibrateVoteScale([query], [0.5, 64]);
    expect(c.accuracy).toEqual([
      { scale: 0.5, accuracy: 1 },
      { scale: 64, accuracy: 0 },
    ]);
    expect(c.scale).toBe(0.5);
    expect(c.queries).toBe(1);
  });

  it("breaks ties towards the larger (smoother) scale and refuses an empty calibration", () => {
    const agreeing = {
      ...query,
      annotators: Array.from({ length: 10 }, () => "dog"),
      cosines: [0, 0.1, 0.9, 0.8, 0.7, 0.6],
    };
    expect(calibrateVoteScale([agreeing], [1, 4, 16]).scale).toBe(16);
    expect(() => calibrateVoteScale([])).toThrow(/no calibration queries/);
  });
});
