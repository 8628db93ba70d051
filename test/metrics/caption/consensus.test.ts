import { describe, expect, it } from "vitest";
import { consensusChooser } from "../../../src/eval/consensus.js";
import { candidateData } from "../../../src/icl/candidate-data.js";
import { ciderScores, documentFrequency } from "../../../src/metrics/caption/cider.js";
import { poolConsensus } from "../../../src/metrics/caption/consensus.js";
import { tokenizeCaption } from "../../../src/metrics/caption/ptb-tokenize.js";

const captions: Record<string, { shown: string; refs: string[] }> = {
  a: { shown: "a dog sitting on a couch", refs: ["a dog sitting on a couch", "a brown dog on a sofa"] },
  b: { shown: "a dog lying on a sofa", refs: ["a dog lying on a sofa", "dog resting on a couch"] },
  c: { shown: "The image shows a canine in a living room.", refs: ["The image shows a canine in a living room."] },
  d: { shown: "a brown dog on a couch", refs: ["a brown dog on a couch", "a puppy on the sofa"] },
};
const items = Object.entries(captions).map(([id, c]) => ({
  questionId: id,
  imageId: id,
  question: "",
  answers: c.refs.map((answer) => ({ answer })),
  answer: c.shown,
  questionType: "",
  answerType: "caption",
  imagePath: null,
}));

describe("caption consensus", () => {
  it("is each shown caption's CIDEr-D against the pool's other shown captions (index document frequencies)", () => {
    const pool = ["a", "b", "c", "d"];
    const df = documentFrequency(items.map((i) => i.answers.map((a) => tokenizeCaption(a.answer))));
    const expected = pool.map(
      (id) =>
        ciderScores(
          [
            {
              hypothesis: tokenizeCaption(captions[id].shown),
              references: pool.filter((o) => o !== id).map((o) => tokenizeCaption(captions[o].shown)),
            },
          ],
          df,
        ).perImage[0],
    );
    const scores = poolConsensus(items).scores(pool) as number[];
    for (const [k, s] of scores.entries()) expect(s).toBeCloseTo(expected[k], 12);
    // The chatty caption agrees with nobody; a set of one caption has consensus 0.
    expect(scores[2]).toBe(Math.min(...scores));
    expect(poolConsensus(items).scores(["a"])).toEqual([0]);
    expect(poolConsensus(items).scores(["a", "zz"])).toBeUndefined();
    // one scorer per item list
    expect(poolConsensus(items)).toBe(poolConsensus(items));
  });

  it("the retriever takes the most typical first, ties in pool order; the feature is the rank, 1 the most typical", () => {
    const pool = ["c", "a", "b", "d"];
    const scores = poolConsensus(items).scores(pool) as number[];
    const order = pool.map((id, p) => ({ id, s: scores[p], p })).sort((x, y) => y.s - x.s || x.p - y.p);
    const choose = consensusChooser(items);
    expect(choose(items[0], pool, 2)).toEqual(order.slice(0, 2).map((o) => o.id));
    const index = { ids: pool, dim: 1, data: new Float32Array(4) };
    const features = candidateData("idx", index, items, { kind: "linear" }, ["consensus"]).features(
      Int32Array.from([0, 1, 2, 3]),
      new Float64Array(4),
      { queryId: "q" },
    );
    const F = features.length / 4;
    const consensusColumn = Array.from({ length: 4 }, (_, k) => features[k * F + 2]);
    expect(consensusColumn[pool.indexOf(order[0].id)]).toBe(1);
    expect(consensusColumn[pool.indexOf(order[3].id)]).toBe(0);
    // the VQA columns stay 0 when only consensus is read
    expect(Array.from({ length: 4 }, (_, k) => features[k * F] + features[k * F + 1])).toEqual([0, 0, 0, 0]);
  });
});
