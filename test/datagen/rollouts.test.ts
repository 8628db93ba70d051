import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { isBalanced, type RolloutSettings, rolloutQuery } from "../../src/datagen/rollouts.js";
import { rolloutStats } from "../../src/datagen/stats.js";
import { scoredTrajectories } from "../../src/icl/rewards.js";
import { distinctGtAnswers, isCorrect, scoreTrajectories } from "../../src/icl/trajectory-scorer.js";
import { vqaAnswering } from "../../src/task/vqa.js";
import { Rng } from "../../src/util/rng.js";
import type { CallOptions, GenerateResult, Outcome, ScoreResult, Vlm, VlmPrompt } from "../../src/vlm/types.js";
import { makeItem } from "../eval/helpers.js";

/** Ten annotators: "red" ×6, "Red" ×1 (the same answer after normalisation), "blue" ×3. */
const query: VqaItem = {
  ...makeItem("q", "img-q", "red"),
  answers: [
    ..."rrrrrr".split("").map(() => ({ answer: "red" })),
    { answer: "Red" },
    ...[1, 2, 3].map(() => ({ answer: "blue" })),
  ],
};
const colours = ["red", "red", "red", "red", "blue", "blue", "green", "green"];
const pool = colours.map((c, i) => makeItem(`d${i}`, `img-${i}`, c));
const indexById = new Map(pool.map((item) => [item.questionId, item]));
const answering = vqaAnswering("official");

/**
 * Answers with the answer of the demonstration next to the query ("unknown" with none); scores
 * P(red) = 0.5, P(blue) = 0.25, anything else 0.01. `fail` names demonstrations whose prompts fail.
 */
class FakeVlm implements Vlm {
  readonly id = "fake";
  generated = 0;
  scored = 0;
  constructor(private readonly fail: ReadonlySet<string> = new Set()) {}

  private failure(prompt: VlmPrompt): string | null {
    return prompt.demonstrations.some((d) => this.fail.has(d.questionId)) ? "http-5xx: injected" : null;
  }

  async generate(prompts: VlmPrompt[], _options?: CallOptions): Promise<Outcome<GenerateResult>[]> {
    this.generated += prompts.length;
    return prompts.map((p) => {
      const failure = this.failure(p);
      if (failure !== null) return { reason: "http-5xx" as const, message: "injected" };
      const last = p.demonstrations[p.demonstrations.length - 1];
      return { text: `${last?.answer ?? "unknown"}\nQuestion: what`, tokens: 3 };
    });
  }

  async scoreAnswer(requests: { prompt: VlmPrompt; answer: string }[]): Promise<Outcome<ScoreResult>[]> {
    this.scored += requests.length;
    return requests.map(({ prompt, answer }) => {
      const failure = this.failure(prompt);
      if (failure !== null) return { reason: "http-5xx" as const, message: "injected" };
      const logprobSum = Math.log(answer === "red" ? 0.5 : answer === "blue" ? 0.25 : 0.01);
      return { logprobSum, logprobMean: logprobSum, tokens: 1 };
    });
  }
}

const deps = (vlm: Vlm) => ({ vlm, ...answering });

describe("scoring trajectories", () => {
  it("groups annotator answers by official normalisation and weighs each by its accuracy as a prediction", () => {
    // red: 7 of 10 agree → 1.0; blue: each blue annotator sees 2 others, the rest see 3 → (3·2/3 + 7)/10 = 0.9.
    expect(distinctGtAnswers(query, answering)).toEqual([
      { answer: "red", accuracy: 1 },
      { answer: "blue", accuracy: 0.9 },
    ]);
  });

  it("stores the eval path's answer and accuracy, gtLogprob of the majority answer and vqaGtProb", async () => {
    const vlm = new FakeVlm();
    const [blue, green] = await scoreTrajectories(
      query,
      [["d0", "d4"], ["d6"]],
      indexById,
      { gtAnswers: "all", correctThreshold: 0, order: "farthest" },
      deps(vlm),
    );
    expect(blue).toEqual({
      rawGeneration: "blue\nQuestion: what",
      predAnswer: "blue",
      vqaAccScore: 0.9,
      vqaCorrect: 1,
      gtLogprob: Math.log(0.5),
      vqaGtProb: 1 * 0.5 + 0.9 * 0.25,
      failure: null,
    });
    expect(green).toMatchObject({ predAnswer: "green", vqaAccScore: 0, vqaCorrect: 0 });
    expect(vlm.generated).toBe(2);
    expect(vlm.scored).toBe(4); // two distinct answers per trajectory, the majority among them

    // A selection listed again is sent once and its result repeated (as a copy).
    const once = new FakeVlm();
    const twice = await scoreTrajectories(
      query,
      [["d0", "d4"], ["d6"], ["d0", "d4"], ["d4", "d0"]],
      indexById,
      { gtAnswers: "all", correctThreshold: 0, order: "farthest" },
      deps(once),
    );
    expect(once.generated).toBe(3);
    expect(once.scored).toBe(6);
    expect(twice[2]).toEqual(blue);
    expect(twice[2]).not.toBe(twice[0]);
    expect(twice[3]).toMatchObject({ predAnswer: "red" }); // another order is another prompt

    const majority = new FakeVlm();
    const [only] = await scoreTrajectories(
      query,
      [["d0"]],
      indexById,
      { gtAnswers: "majority", correctThreshold: 0, order: "farthest" },
      deps(majority),
    );
    expect(only).toMatchObject({ gtLogprob: Math.log(0.5), vqaGtProb: null });
    expect(majority.scored).toBe(1);
    const none = new FakeVlm();
    await scoreTrajectories(
      query,
      [["d0"]],
      indexById,
      { gtAnswers: "none", correctThreshold: 0, order: "farthest" },
      deps(none),
    );
    expect(none.scored).toBe(0);
  });

  it("counts an answer correct above 0 by default (Lever-Plus), at or above the threshold otherwise", () => {
    expect([0, 0.3, 0.9].map((a) => isCorrect(a, 0))).toEqual([0, 1, 1]);
    expect([0.3, 0.6, 0.9, 1].map((a) => isCorrect(a, 0.9))).toEqual([0, 0, 1, 1]);
  });
});

const settings = (over: Partial<RolloutSettings["topup"]> = {}, random = 2): RolloutSettings => ({
  proposals: {
    shots: 1,
    greedy: false,
    beamWidth: 0,
    temperatures: [],
    samples: 0,
    retrieval: 1,
    retrievalReversed: false,
    random,
  },
  scoring: { gtAnswers: "all", correctThreshold: 0, order: "nearest" },
  topup: { min: 0, budget: 16, temperature: 1, ...over },
});
// Similarity ranks d0 (red) first.
const similarity = [0.9, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1];

describe("rolloutQuery", () => {
  it("marks trajectories whose requests failed, keeps them out of every reward and counts them", async () => {
    const vlm = new FakeVlm(new Set(["d0"]));
    const result = await rolloutQuery(
      { query, pool, similarity, rng: new Rng(1).child("q") },
      settings({}, 3),
      indexById,
      deps(vlm),
    );
    const failed = result.trajectories.filter((t) => t.evalFailed);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      selected: ["d0"],
      vqaAccScore: null,
      evalMode: "error",
      extra: { failure: "http-5xx: injected" },
    });
    expect(failed[0].vqaCorrect).toBeUndefined();
    expect(result.failed).toBe(1);
    const { kept, failed: left } = scoredTrajectories(result.trajectories);
    expect(left).toBe(1);
    expect(kept.every(({ trajectory }) => trajectory.vqaAccScore !== null)).toBe(true);
    const stats = rolloutStats([{ trajectories: result.trajectories }]);
    expect(stats.failed).toEqual({ trajectories: 1, queries: 1 });
    expect(Object.values(stats.accuracyHistogram).reduce((s, n) => s + n, 0)).toBe(result.trajectories.length - 1);
  });

  it("tops a group up until P rewards lie above and P below its median, or the budget is spent", async () => {
    expect(isBalanced([1, 1, 1], 1)).toBe(false);
    expect(isBalanced([1, 0.9, 0], 1)).toBe(true); // median 0.9
    expect(isBalanced([1, 0, 1, 0], 2)).toBe(true); // median 0.5
    expect(isBalanced([1, 1, 0], 1)).toBe(false); // median 1: nothing above

    const vlm = new FakeVlm();
    const balanced = await rolloutQuery(
      { query, pool, similarity, rng: new Rng(1).child("q") },
      settings({ min: 1, budget: 7 }, 0),
      indexById,
      deps(vlm),
    );
    const accuracies = balanced.trajectories.map((t) => t.vqaAccScore as number);
    expect(balanced.trajectories[0]).toMatchObject({ genMethod: "retrieval", selected: ["d0"] });
    expect(balanced.trajectories.slice(1).every((t) => t.genMethod === "topup")).toBe(true);
    expect(balanced.topup).toEqual({ added: balanced.trajectories.length - 1, balanced: true });
    expect(isBalanced(accuracies, 1)).toBe(true);
    // It stopped at the first balanced round: before the last round's two additions the group was not balanced.
    expect(isBalanced(accuracies.slice(0, -2), 1)).toBe(false);
    const keys = balanced.trajectories.map((t) => t.selected.join());
    expect(new Set(keys).size).toBe(keys.length);

    const spent = await rolloutQuery(
      { query, pool, similarity, rng: new Rng(1).child("q") },
      settings({ min: 1, budget: 0 }, 0),
      indexById,
      deps(new FakeVlm()),
    );
    expect(spent.topup).toEqual({ added: 0, balanced: false });
    const stats = rolloutStats(
      [{ trajectories: balanced.trajectories }, { trajectories: spent.trajectories }],
      [balanced.topup, spent.topup],
    );
    expect(stats.topup).toEqual({ queries: 2, balanced: 1, added: balanced.topup!.added });
    expect(stats.allEqualGroups).toBe(1);
  });
});
