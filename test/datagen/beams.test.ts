import { describe, expect, it } from "vitest";
import { type BeamSearchSettings, rankByPrior, searchAnchor } from "../../src/datagen/beams.js";
import type { Outcome, ScoreResult, VlmPrompt } from "../../src/vlm/types.js";
import { makeItem } from "../eval/helpers.js";

const query = makeItem("q", "imgq", "yes");
const pool = ["a", "b", "c", "d", "e"].map((id) => makeItem(id, `img-${id}`, `ans-${id}`));

/**
 * A scorer with hand-set log P(y | prompt), keyed by the demonstrations in PROMPT order ("" for none);
 * records every batch it receives. Unlisted prompts score `fallback`.
 */
function fakeScorer(table: Record<string, number>, fallback = -10, fail?: (key: string) => string | null) {
  const batches: { key: string; answer: string }[][] = [];
  const score = async (requests: { prompt: VlmPrompt; answer: string }[]): Promise<Outcome<ScoreResult>[]> => {
    const keys = requests.map((r) => ({
      key: r.prompt.demonstrations.map((d) => d.questionId).join(","),
      answer: r.answer,
    }));
    batches.push(keys);
    return keys.map(({ key }) => {
      const reason = fail?.(key) ?? null;
      if (reason !== null) return { reason: "http-5xx" as const, message: reason.replace(/^http-5xx: /, "") };
      const logprobSum = table[key] ?? fallback;
      return { logprobSum, logprobMean: logprobSum, tokens: 1 };
    });
  };
  return { score, batches };
}

const farthest = (over: Partial<BeamSearchSettings> = {}): BeamSearchSettings => ({
  beamSize: 2,
  shots: 2,
  order: "farthest",
  budget: null,
  ...over,
});

describe("searchAnchor", () => {
  // Pool a, b, c. Step 1 gains: a +1, b +2, c +0.5 → beams b, a. Step 2 (prompt order = selection order):
  //   [b,a] −1.5 (total 2.5, gain 0.5)   [b,c] −1.2 (total 2.8, gain 0.8)
  //   [a,b] −1.0 (total 3.0, gain 2.0)   [a,c] −1.6 (total 2.4, gain 1.4)
  // Ranking by the cumulative score keeps [a,b] and [b,c]; ranking by the last gain (Lever-Plus) would keep [a,c].
  const table = { "": -4, a: -3, b: -2, c: -3.5, "b,a": -1.5, "b,c": -1.2, "a,b": -1, "a,c": -1.6 };
  const small = pool.slice(0, 3);

  it("ranks by the cumulative InfoScore, largest first, with per-step gains that sum to it", async () => {
    const { score } = fakeScorer(table);
    const result = await searchAnchor({ query, pool: small }, farthest(), score);
    if (!result.ok) throw new Error(result.error);
    expect(result.baseLogprob).toBe(-4);
    expect(result.beams.map((b) => b.selected)).toEqual([
      ["a", "b"],
      ["b", "c"],
    ]);
    expect(result.beams.map((b) => b.positions)).toEqual([
      [0, 1],
      [1, 2],
    ]);
    expect(result.beams[0].score).toBeCloseTo(3, 12);
    expect(result.beams[0].shotScores[0]).toBeCloseTo(1, 12);
    expect(result.beams[0].shotScores[1]).toBeCloseTo(2, 12);
    expect(result.beams[1].score).toBeCloseTo(2.8, 12);
    expect(result.beams[1].shotScores[0]).toBeCloseTo(2, 12);
    expect(result.beams[1].shotScores[1]).toBeCloseTo(0.8, 12);
  });

  it("sends one batched call per step, the empty prompt once (with step 1) and no parent prompt again", async () => {
    const { score, batches } = fakeScorer(table);
    const result = await searchAnchor({ query, pool: small }, farthest(), score);
    expect(batches.map((b) => b.map((r) => r.key))).toEqual([
      ["", "a", "b", "c"],
      ["b,a", "b,c", "a,b", "a,c"],
    ]);
    expect(batches.flat().every((r) => r.answer === "yes")).toBe(true); // the anchor's multiple_choice_answer
    expect(result.requests).toBe(8);
  });

  it("places each new demonstration by the prompt order: farthest appends next to the query, nearest prepends", async () => {
    const near = fakeScorer({});
    await searchAnchor({ query, pool: small }, farthest({ order: "nearest", beamSize: 1, shots: 3 }), near.score);
    const far = fakeScorer({});
    await searchAnchor({ query, pool: small }, farthest({ beamSize: 1, shots: 3 }), far.score);
    // All scores tie, so the single beam grows a → a,b → a,b,c (by pool position); each step's first
    // expansion adds the next pool position, its last one c.
    expect(near.batches.map((b) => b.map((r) => r.key))).toEqual([["", "a", "b", "c"], ["b,a", "c,a"], ["c,b,a"]]);
    expect(far.batches.map((b) => b.map((r) => r.key))).toEqual([["", "a", "b", "c"], ["a,b", "a,c"], ["a,b,c"]]);
  });

  it("breaks ties by beam index, then pool position", async () => {
    const { score } = fakeScorer({});
    const result = await searchAnchor({ query, pool }, farthest({ beamSize: 3 }), score);
    if (!result.ok) throw new Error(result.error);
    // Step 1 keeps a, b, c; step 2 expands beam 0 (a) first: a,b  a,c  a,d.
    expect(result.beams.map((b) => b.selected.join(""))).toEqual(["ab", "ac", "ad"]);
    expect(result.beams.every((b) => b.score === 0)).toBe(true);
  });

  it("with a budget M scores only each beam's M remaining candidates with the highest prior", async () => {
    // Prior ranks e, c, a, d, b (c and a tie: the lower position first).
    const prior = [0.5, 0.1, 0.5, 0.2, 0.9];
    expect(rankByPrior(5, prior)).toEqual([4, 0, 2, 3, 1]);
    const { score, batches } = fakeScorer({ e: -1, a: -2, "e,a": -0.5, "e,c": -0.7, "a,e": -0.9, "a,c": -3 });
    const result = await searchAnchor({ query, pool, prior }, farthest({ budget: 2 }), score);
    if (!result.ok) throw new Error(result.error);
    expect(batches.map((b) => b.map((r) => r.key))).toEqual([
      ["", "e", "a"],
      ["e,a", "e,c", "a,e", "a,c"],
    ]);
    expect(result.beams.map((b) => b.selected.join(""))).toEqual(["ea", "ec"]);
    // M ≥ K is exhaustive and needs no prior.
    const all = fakeScorer({});
    await searchAnchor({ query, pool }, farthest({ budget: 5 }), all.score);
    expect(all.batches[0]).toHaveLength(6);
  });

  it("fails the anchor on a failed request (never a score of 0), naming the reason and how many failed", async () => {
    const { score } = fakeScorer({}, -10, (key) => (key === "b,a" || key === "b,c" ? "http-5xx: injected" : null));
    const result = await searchAnchor({ query, pool: pool.slice(0, 3) }, farthest({ beamSize: 3 }), score);
    expect(result).toEqual({ ok: false, error: "http-5xx: injected (2 of 6 requests failed)", requests: 10 });
  });

  it("rejects impossible settings with the setting named", async () => {
    const { score } = fakeScorer({});
    await expect(searchAnchor({ query, pool: pool.slice(0, 2) }, farthest({ shots: 3 }), score)).rejects.toThrow(
      'record "q", field "shots": must be an integer in [1, K = 2], got 3',
    );
    await expect(searchAnchor({ query, pool }, farthest({ budget: 2 }), score)).rejects.toThrow(
      "a budget of 2 < K = 5 needs a prior for every candidate",
    );
  });
});
