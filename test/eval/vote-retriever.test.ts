import { describe, expect, it } from "vitest";
import type { EmbeddingMatrix } from "../../src/data/embeddings.js";
import type { VqaItem } from "../../src/data/item.js";
import { createRetriever, memoizePools } from "../../src/eval/retrievers.js";
import { voteChooser } from "../../src/eval/vote-retriever.js";

/** An index item whose ten annotators give `counts` and which shows `shown`. */
function item(questionId: string, counts: Record<string, number>, shown: string): VqaItem {
  const answers = Object.entries(counts).flatMap(([answer, n]) => Array.from({ length: n }, () => ({ answer })));
  return {
    questionId,
    imageId: `img-${questionId}`,
    question: "what?",
    answers,
    answer: shown,
    questionType: "what",
    answerType: "other",
    imagePath: null,
  };
}

/** Rows with a given cosine to the query row [1, 0, 0] (not unit length: the vote normalises). */
function matrix(ids: string[], cosines: number[], scale = 2): EmbeddingMatrix {
  const data = new Float32Array(ids.length * 3);
  cosines.forEach((c, r) => {
    data.set([scale * c, scale * Math.sqrt(1 - c * c), 0], r * 3);
  });
  return { ids, dim: 3, data };
}

// Cosines 0.95, 0.9, 0.6, 0.5, −0.5, 0.3 → weights 0.95, 0.9, 0.6, 0.5, 0, 0.3. Votes by hand:
//   a red:  (0.6·0.2 + 0.3·1) / 2.3  = 0.183     b blue: (0.6·0.8) / 2.35 = 0.204
//   c blue: (0.9·1) / 2.65           = 0.340     d "2":  0 (only e shows it, with weight 0)
//   e Two:  (0.5·1) / 3.25           = 0.154     f red:  (0.95·1 + 0.6·0.2) / 2.95 = 0.363
const linear = () => ({ kind: "linear" }) as const;
const index = [
  item("a", { red: 10 }, "red"),
  item("b", { blue: 10 }, "blue"),
  item("c", { blue: 8, red: 2 }, "blue"),
  item("d", { two: 6, "2": 4 }, "2"),
  item("e", { Two: 10 }, "Two"),
  item("f", { red: 10 }, "red"),
];
const pool = index.map((i) => i.questionId);
const indexMatrix = matrix(pool, [0.95, 0.9, 0.6, 0.5, -0.5, 0.3]);
const queryMatrix: EmbeddingMatrix = { ids: ["q"], dim: 3, data: Float32Array.of(3, 0, 0) };
const choose = voteChooser({ query: () => queryMatrix, index: () => indexMatrix, items: index, weighting: linear });

describe("the vote retriever", () => {
  it("ranks the pool by the answer vote, ties by similarity, and returns the first `shots` in selection order", () => {
    const query = item("q", { green: 10 }, "green");
    expect(choose(query, pool, 1)).toEqual(["f"]);
    expect(choose(query, pool, 3)).toEqual(["f", "c", "b"]);
    expect(choose(query, pool, 6)).toEqual(["f", "c", "b", "a", "e", "d"]);
    // Candidates whose answers nobody else gives tie at 0: the more similar first.
    const lonely = [item("a", { red: 10 }, "red"), item("b", { blue: 10 }, "blue"), item("c", { gray: 10 }, "gray")];
    const lonelyChoose = voteChooser({
      query: () => queryMatrix,
      index: () => indexMatrix,
      items: lonely,
      weighting: linear,
    });
    expect(lonelyChoose(query, ["c", "a", "b"], 3)).toEqual(["a", "b", "c"]);
  });

  it("never reads the query's own annotations: its choice is the same whatever they say", () => {
    // Were the query's annotators counted as a voter (say with its self-similarity 1), "blue" would
    // put b first, "red" a or f, "two" d or e.
    const chosen = choose(item("q", { green: 10 }, "green"), pool, 3);
    // A fresh pool array each time: the chooser ranks each pool array once and would not look again.
    for (const [counts, shown] of [
      [{ blue: 10 }, "blue"],
      [{ red: 10 }, "red"],
      [{ two: 10 }, "two"],
      [{ blue: 5, red: 5 }, "blue"],
    ] as const)
      expect(choose(item("q", counts, shown), [...pool], 3)).toEqual(chosen);
  });

  it("chooses within the query's pool of the configured sampler and K, and needs the index's data", async () => {
    const seen: string[] = [];
    const pools = memoizePools(async (queries, sampler, k) => {
      seen.push(`${sampler}:${k}`);
      return queries.map(() => pool.slice(0, k));
    });
    const ctx = { pools, poolSampler: "text-sim" as const, k: 6, maxShots: 4, vote: choose };
    const retriever = await createRetriever({ kind: "vote" }, ctx);
    expect(retriever.name).toBe("vote");
    expect(retriever.shots([0, 1, 2])).toEqual([1, 2]);
    expect(await retriever.select([item("q", { green: 10 }, "green")], 2)).toEqual([["f", "c"]]);
    expect(seen).toEqual(["text-sim:6"]);
    await expect(createRetriever({ kind: "vote" }, { ...ctx, vote: undefined })).rejects.toThrow(
      /vote retriever needs the index's annotations and joint embeddings/,
    );
  });

  it("names the item when a candidate or its embedding is missing", () => {
    const query = item("q", { green: 10 }, "green");
    expect(() => choose(query, ["a", "zz"], 1)).toThrow(/zz/);
    expect(() => choose(item("other", {}, "x"), pool, 1)).toThrow(/other/);
  });
});
