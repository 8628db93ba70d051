import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../../src/data/item.js";
import { ciderScores, documentFrequency } from "../../../src/metrics/caption/cider.js";
import { tokenizeCaption } from "../../../src/metrics/caption/ptb-tokenize.js";
import { CaptionOracle, INFORMED_REFERENCES } from "../../../src/sim/caption/oracle.js";
import { SimCaptionVlm } from "../../../src/sim/caption/vlm.js";
import { Rng } from "../../../src/util/rng.js";

const sim = SimCaptionVlm.fromParams({ seed: 5, trainItems: 300, valItems: 20 });
const world = sim.world;
const item = (i: number, shown = 0): VqaItem => ({
  questionId: world.itemIds[i],
  imageId: world.itemIds[i],
  question: "",
  answers: world.references[i].map((answer) => ({ answer })),
  answer: world.references[i][shown],
  questionType: "caption",
  answerType: "caption",
  imagePath: null,
});
const index = world.itemsOf("train").map((i) => item(i, 1));
const queries = world.itemsOf("val").map((i) => item(i));
const df = documentFrequency(index.map((it) => it.answers.map((a) => tokenizeCaption(a.answer))));

/** CIDEr-D of the simulator's greedy caption, computed independently of the oracle (ciderScores, fixed df). */
function scoreOf(query: VqaItem, demoIds: string[], references = query.answers.map((a) => a.answer)): number {
  const byId = new Map(index.map((it) => [it.questionId, it]));
  const caption = sim.caption({
    query: { questionId: query.questionId, imagePath: null, question: "" },
    demonstrations: demoIds.map((id) => ({
      questionId: id,
      imagePath: null,
      question: "",
      answer: (byId.get(id) as VqaItem).answer,
    })),
  });
  const images = [{ hypothesis: tokenizeCaption(caption), references: references.map(tokenizeCaption) }];
  return ciderScores(images, df).corpus;
}

describe("CaptionOracle", () => {
  const pools = queries.map((_, r) => index.slice(10 * r, 10 * r + 12).map((it) => it.questionId));

  it("at one shot picks the pool's best demonstration by brute force, showing the dataset's caption", () => {
    const oracle = new CaptionOracle(sim, index);
    for (const [r, query] of queries.slice(0, 8).entries()) {
      const scores = pools[r].map((id) => scoreOf(query, [id]));
      const best = pools[r][scores.indexOf(Math.max(...scores))];
      expect(oracle.trajectory(query, pools[r], 1)).toEqual([best]);
      expect(oracle.score(query, [best])).toBeCloseTo(Math.max(...scores), 12);
    }
  });

  it("grows outward from the query: each slot is the best addition in front of the nearer ones; one search serves every shot count", () => {
    const oracle = new CaptionOracle(sim, index);
    const fresh = new CaptionOracle(sim, index);
    for (const [r, query] of queries.slice(0, 5).entries()) {
      const three = oracle.trajectory(query, pools[r], 3);
      expect(three).toHaveLength(3);
      expect(new Set(three).size).toBe(3);
      expect(oracle.trajectory(query, pools[r], 2)).toEqual(three.slice(1));
      expect(oracle.trajectory(query, pools[r], 1)).toEqual(three.slice(2));
      // the memo serves the same answer as a fresh search of exactly 2 shots
      expect(fresh.trajectory(query, pools[r], 2)).toEqual(three.slice(1));
      // slot 2 is the best addition in front of slot 1
      const [second, first] = three.slice(1);
      const additions = pools[r].filter((id) => id !== first).map((id) => scoreOf(query, [id, first]));
      expect(scoreOf(query, [second, first])).toBeCloseTo(Math.max(...additions), 12);
    }
  });

  it("refuses a pool candidate outside the index", () => {
    const oracle = new CaptionOracle(sim, index);
    expect(() => oracle.trajectory(queries[0], ["nope", ...pools[0]], 1)).toThrow(/not in the index dataset/);
  });

  it("informed: the same search against references the world writes afresh for the query (seeded, not the real ones)", () => {
    const informed = new CaptionOracle(sim, index, { knows: "world", seed: 3 });
    for (const [r, query] of queries.slice(0, 6).entries()) {
      const q = world.indexOf(query.questionId);
      const drawn = world.drawReferences(q, new Rng(3).child(`informed|${query.questionId}`), INFORMED_REFERENCES);
      expect(drawn).toHaveLength(INFORMED_REFERENCES);
      expect(drawn).not.toEqual(world.references[q].slice(0, drawn.length));
      const scores = pools[r].map((id) => scoreOf(query, [id], drawn));
      expect(informed.trajectory(query, pools[r], 1)).toEqual([pools[r][scores.indexOf(Math.max(...scores))]]);
    }
    // another seed draws other references; the world itself is unchanged by drawing
    const q = world.indexOf(queries[0].questionId);
    const before = world.fingerprint;
    expect(world.drawReferences(q, new Rng(4).child("x"), 5)).not.toEqual(
      world.drawReferences(q, new Rng(5).child("x"), 5),
    );
    expect(world.fingerprint).toBe(before);
  });
});
