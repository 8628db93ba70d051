import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { candidateData, indexIdentity } from "../../src/icl/candidate-data.js";
import { CANDIDATE_FEATURES, SelectorConfigSchema } from "../../src/selector/config.js";
import { predict } from "../../src/selector/decode.js";
import { FEATURE_COUNT, resolvePool, selectorInput, selectorSources } from "../../src/selector/inputs.js";
import { PointerSelector } from "../../src/selector/model.js";
import { initParams } from "../../src/selector/params.js";

const item = (questionId: string, shown: string, annotators: string[]): VqaItem => ({
  questionId,
  imageId: `img-${questionId}`,
  question: "?",
  answers: annotators.map((answer) => ({ answer })),
  answer: shown,
  questionType: "",
  answerType: "other",
  imagePath: null,
});
const LINEAR = { kind: "linear" } as const;
const repeat = (answer: string, n: number) => Array.from({ length: n }, () => answer);

// Index items in question-id order (the identity table's order); "q" is an index item too, as a
// training query is.
const items = [
  item("a", "yes", repeat("yes", 10)),
  item("b", "yes", [...repeat("yes", 5), ...repeat("no", 5)]),
  item("c", "no", repeat("no", 10)),
  item("d", "Two", [...repeat("Two", 6), ...repeat("2", 4)]),
  item("q", "yes", repeat("yes", 10)),
];
// Embedding rows in another order than the items: identity rows must follow the items.
const index = {
  ids: ["d", "a", "c", "b", "q"],
  dim: 2,
  // cos to the query [1, 0]: d −1 (weight 0), a 1, c 1/√2, b 0.6, q 1.
  data: Float32Array.from([-1, 0, 1, 0, 1, 1, 0.6, 0.8, 1, 0]),
};
const queries = { ids: ["q"], dim: 2, data: Float32Array.from([1, 0]) };
const column = (f: Float32Array, k: number, name: (typeof CANDIDATE_FEATURES)[number]) =>
  f[k * FEATURE_COUNT + CANDIDATE_FEATURES.indexOf(name)];

describe("candidate data (vote, agreement, identity)", () => {
  const data = candidateData("train", index, items, LINEAR);
  const sources = selectorSources(queries, index, data);

  it("computes the vote and agreement of a pool by hand", () => {
    // Weights: a 1, b 0.6, c 1/√2, d 0 (cos −1). Answers: a yes (1.0), b yes (0.5 yes / 0.5 no), c no, d "2" (Two ≡ 2).
    const pool = resolvePool(sources, "q", ["a", "b", "c", "d"]);
    const f = pool.features as Float32Array;
    const c = Math.SQRT1_2;
    // vote_a = (0.6·0.5 + c·0) / (0.6 + c); vote_b = (1·1 + c·0) / (1 + c); vote_c = (1·0 + 0.6·0.5) / 1.6; vote_d = 0.
    expect(column(f, 0, "vote")).toBeCloseTo(0.3 / (0.6 + c), 6);
    expect(column(f, 1, "vote")).toBeCloseTo(1 / (1 + c), 6);
    expect(column(f, 2, "vote")).toBeCloseTo(0.3 / 1.6, 6);
    expect(column(f, 3, "vote")).toBe(0);
    expect([0, 1, 2, 3].map((k) => column(f, k, "agreement"))).toEqual([1, 0.5, 1, 1]);
  });

  it("with rank weights at scale ρ, the features depend only on the order of the cosines (any monotone change keeps them)", () => {
    // cos to q: a 1, c 1/√2, b 0.6, d −1 → ranks a 0, c 1, b 2, d 3; weights e^0, e^−1/2, e^−2/2, e^−3/2 at ρ = 2.
    const rank = selectorSources(queries, index, candidateData("train", index, items, { kind: "rank", scale: 2 }));
    const f = resolvePool(rank, "q", ["a", "b", "c", "d"]).features as Float32Array;
    const [wa, wc, wb, wd] = [1, Math.exp(-0.5), Math.exp(-1), Math.exp(-1.5)];
    // a yes (1.0), b yes (0.5 yes, 0.5 no), c no (1.0), d "2": vote_a = wb·0.5 / (wb + wc + wd).
    expect(column(f, 0, "vote")).toBeCloseTo((wb * 0.5) / (wb + wc + wd), 6);
    expect(column(f, 1, "vote")).toBeCloseTo(wa / (wa + wc + wd), 6);
    expect(column(f, 2, "vote")).toBeCloseTo((wb * 0.5) / (wa + wb + wd), 6);
    expect(column(f, 3, "vote")).toBe(0);
    // The same index with every cosine to q compressed and shifted (rows rotated towards one shared
    // direction keep their order): the features are bit-identical; the linear weighting's are not.
    const squeezed = { ...index, data: Float32Array.from([-0.2, 1, 1, 1, 1, 1.3, 0.6, 1.4, 1, 1]) };
    const g = resolvePool(
      selectorSources(queries, squeezed, candidateData("train", squeezed, items, { kind: "rank", scale: 2 })),
      "q",
      ["a", "b", "c", "d"],
    ).features as Float32Array;
    expect([...g]).toEqual([...f]);
    const linear = (m: typeof index) =>
      resolvePool(selectorSources(queries, m, candidateData("train", m, items, LINEAR)), "q", ["a", "b", "c", "d"])
        .features as Float32Array;
    expect([...linear(squeezed)]).not.toEqual([...linear(index)]);
  });

  it("gives identity rows in the index items' order, −1 for rows outside it, and names the index", () => {
    const withStranger = { ids: [...index.ids, "z"], dim: 2, data: Float32Array.from([...index.data, 0, 1]) };
    const d = candidateData("train", withStranger, items, LINEAR);
    expect([...d.identity]).toEqual([3, 0, 2, 1, 4, -1]);
    expect(d.index).toEqual(indexIdentity("train", items));
    expect(d.index.items).toBe(5);
    const s = selectorSources(queries, withStranger, d);
    expect(() => resolvePool(s, "q", ["a", "z"])).toThrow(
      /record "q".*"z" is not an item of the index dataset "train"/,
    );
  });

  it("packs features and identity rows with the batch (0 and −1 on padding)", () => {
    const pools = [resolvePool(sources, "q", ["a", "b"]), resolvePool(sources, "q", ["c", "d", "a"])];
    const input = selectorInput(pools, sources, "float64");
    expect(input.K).toBe(3);
    expect([...(input.items as Int32Array)]).toEqual([0, 1, -1, 2, 3, 0]);
    const features = input.features as Float64Array;
    expect(features.length).toBe(2 * 3 * FEATURE_COUNT);
    expect([...features.subarray(0, 2 * FEATURE_COUNT)]).toEqual([...(pools[0].features as Float32Array)]);
    expect([...features.subarray(2 * FEATURE_COUNT, 3 * FEATURE_COUNT)]).toEqual(new Array(FEATURE_COUNT).fill(0));
    expect([...features.subarray(3 * FEATURE_COUNT)]).toEqual([...(pools[1].features as Float32Array)]);
    // Without candidate data nothing is packed.
    const plain = selectorInput(
      [resolvePool(selectorSources(queries, index), "q", ["a"])],
      selectorSources(queries, index),
    );
    expect(plain.features).toBeUndefined();
    expect(plain.items).toBeUndefined();
  });

  it("never reads the query's own annotations (no leakage), and refuses a pool that contains the query", () => {
    const changed = items.map((i) => (i.questionId === "q" ? item("q", "no", repeat("no", 10)) : i));
    const other = selectorSources(queries, index, candidateData("train", index, changed, LINEAR));
    const pool = ["a", "b", "c", "d"];
    const before = selectorInput([resolvePool(sources, "q", pool)], sources, "float64");
    const after = selectorInput([resolvePool(other, "q", pool)], other, "float64");
    expect(after.features).toEqual(before.features);
    expect(after.items).toEqual(before.items);
    // And so the choices of a selector that reads the features (its feature weights made nonzero).
    const config = SelectorConfigSchema.parse({ d: 2, hidden: 2, shots: 2, features: ["vote", "agreement"] });
    const params = initParams(config, 7);
    params.set("feature_weight", Float64Array.from([3, -1, 2, 1]));
    const model = new PointerSelector(config, params, "float64");
    const choose = (input: typeof before) => predict(model, input, { shots: 2 }).map((t) => t.positions);
    expect(choose(after)).toEqual(choose(before));
    expect(() => resolvePool(sources, "q", ["a", "q"])).toThrow(/record "q".*the query is in its own pool/);
  });
});
