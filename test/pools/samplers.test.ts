import { describe, expect, test } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { mixQuotas, PoolBuilder, pool, poolSampler, type SamplerName } from "../../src/pools/samplers.js";
import { bruteForceTopK, makeEmbedding, makeItems } from "./helpers.js";

const DIM = 8;
const index = makeItems("t", 40, 3); // 120 items, 3 questions per image
const indexEmb = {
  text: makeEmbedding(index, DIM, 1),
  image: makeEmbedding(index, DIM, 2),
  joint: makeEmbedding(index, DIM, 3, true),
};
// Queries: 6 from the index itself (data generation) and 4 from another split.
const outside = makeItems("v", 4, 1);
const queries: VqaItem[] = [...index.filter((_, i) => i % 20 === 1), ...outside];
const byId = new Map([...index, ...outside].map((item) => [item.questionId, item]));
const queryEmb = {
  text: makeEmbedding(queries, DIM, 0),
  image: makeEmbedding(queries, DIM, 0),
  joint: makeEmbedding(queries, DIM, 0),
};
// Query rows that are index items must carry the index's vectors (same item, same embedding).
for (const kind of ["text", "image", "joint"] as const) {
  queries.forEach((q, r) => {
    const row = index.findIndex((item) => item.questionId === q.questionId);
    if (row >= 0) queryEmb[kind].data.set(indexEmb[kind].data.subarray(row * DIM, (row + 1) * DIM), r * DIM);
  });
}
const builder = new PoolBuilder({ index, indexEmbeddings: indexEmb, indexName: "train" });
const SAMPLERS: SamplerName[] = ["random", "text-sim", "image-sim", "joint-sim", "mix"];
const build = (sampler: SamplerName, k = 12, seed = 5, qs: VqaItem[] = queries) =>
  builder.build(qs, { ...poolSampler(sampler), k, seed, queryEmbeddings: queryEmb });

describe("pool contract", () => {
  test.each(SAMPLERS)("%s: K distinct index items, never the query or an item of its image", (sampler) => {
    const pools = build(sampler);
    queries.forEach((q, i) => {
      expect(pools[i]).toHaveLength(12);
      expect(new Set(pools[i]).size).toBe(12);
      for (const id of pools[i]) {
        const item = byId.get(id)!;
        expect(item.questionId.startsWith("t")).toBe(true);
        expect(id).not.toBe(q.questionId);
        expect(item.imageId).not.toBe(q.imageId);
      }
    });
  });

  test.each(SAMPLERS)("%s: deterministic by seed, and a query's pool does not depend on the batch", (sampler) => {
    const all = build(sampler);
    expect(build(sampler)).toEqual(all);
    const alone = queries.map((q) => build(sampler, 12, 5, [q])[0]);
    expect(alone).toEqual(all);
    const reversed = build(sampler, 12, 5, [...queries].reverse()).reverse();
    expect(reversed).toEqual(all);
  });

  test("random pools change with the seed; similarity pools do not", () => {
    expect(build("random", 12, 6)).not.toEqual(build("random", 12, 5));
    expect(build("text-sim", 12, 6)).toEqual(build("text-sim", 12, 5));
  });

  test("random pools are uniform over eligible items (every item drawn, counts near expectation)", () => {
    const counts = new Map<string, number>();
    const q = outside[0];
    for (let seed = 0; seed < 400; seed++)
      for (const id of builder.build([q], { sampler: "random", k: 12, seed })[0])
        counts.set(id, (counts.get(id) ?? 0) + 1);
    // 400 draws × 12 / 120 items = 40 expected per item; binomial SD ≈ 6 → all within 40 ± 25.
    expect(counts.size).toBe(120);
    for (const c of counts.values()) {
      expect(c).toBeGreaterThan(15);
      expect(c).toBeLessThan(65);
    }
  });

  test.each([
    ["text-sim", "text"],
    ["image-sim", "image"],
    ["joint-sim", "joint"],
  ] as const)("%s equals the float64 brute-force cosine top-K, most similar first", (sampler, kind) => {
    const pools = build(sampler);
    queries.forEach((q, i) => {
      const excluded = new Set(builder.excludedPositions(q));
      const expected = bruteForceTopK(
        queryEmb[kind].data.subarray(i * DIM, (i + 1) * DIM),
        indexEmb[kind],
        12,
        excluded,
      );
      expect(pools[i]).toEqual(expected.map((row) => index[row].questionId));
    });
  });

  test("mix: quotas 6/3/3 of K=12, random part first, then text and image rankings skipping taken items", () => {
    const pools = build("mix");
    const text = build("text-sim");
    const image = build("image-sim");
    queries.forEach((_, i) => {
      const p = pools[i];
      const randomPart = p.slice(0, 6);
      const expectedText = text[i].filter((id) => !randomPart.includes(id)).slice(0, 3);
      expect(p.slice(6, 9)).toEqual(expectedText);
      const taken = p.slice(0, 9);
      expect(p.slice(9)).toEqual(image[i].filter((id) => !taken.includes(id)).slice(0, 3));
    });
  });

  test("mix de-duplicates when two samplers rank the same items: the later one takes its next items", () => {
    const same = { text: indexEmb.text, image: indexEmb.text };
    const b = new PoolBuilder({ index, indexEmbeddings: same });
    const q = outside[1];
    const pools = b.build([q], {
      sampler: "mix",
      k: 10,
      seed: 1,
      ratios: { random: 0, text: 0.5, image: 0.5 },
      queryEmbeddings: { text: queryEmb.text, image: queryEmb.text },
    })[0];
    const textTop = b.build([q], { sampler: "text-sim", k: 10, seed: 1, queryEmbeddings: { text: queryEmb.text } })[0];
    expect(pools).toEqual(textTop); // image part = text ranks 6..10, not duplicates of 1..5
  });

  test("mix ratios: floor for random and text, the remainder for image", () => {
    expect(mixQuotas(64, { random: 0.5, text: 0.25, image: 0.25 })).toEqual([32, 16, 16]);
    expect(mixQuotas(10, { random: 0.5, text: 0.25, image: 0.25 })).toEqual([5, 2, 3]);
    expect(mixQuotas(10, { random: 0.3, text: 0.3, image: 0.4 })).toEqual([3, 3, 4]);
    expect(mixQuotas(7, { random: 1, text: 0, image: 0 })).toEqual([7, 0, 0]);
    expect(() => mixQuotas(10, { random: 0.5, text: 0.5, image: 0.5 })).toThrow(/sum to 1/);
    expect(() => mixQuotas(10, { random: -0.5, text: 1, image: 0.5 })).toThrow(/non-negative/);
  });

  test("K up to the eligible count works; one more is a clear error naming the query", () => {
    // 120 items; an index query excludes its 3 same-image items → 117 eligible.
    const q = queries[0];
    expect(build("random", 117, 1, [q])[0]).toHaveLength(117);
    expect(build("text-sim", 117, 1, [q])[0]).toHaveLength(117);
    expect(() => build("random", 118, 1, [q])).toThrow(
      `record "${q.questionId}", field "k": K=118 is larger than the 117 eligible candidates`,
    );
    expect(() => build("mix", 500)).toThrow(/K=500 is larger than the/);
  });

  test("missing embeddings and unknown samplers are reported clearly", () => {
    const noImage = new PoolBuilder({ index, indexEmbeddings: { text: indexEmb.text }, indexName: "train" });
    expect(() => noImage.build(queries, { sampler: "image-sim", k: 5, seed: 1, queryEmbeddings: queryEmb })).toThrow(
      'index "train" has no "image" embedding',
    );
    expect(() => builder.build(queries, { sampler: "text-sim", k: 5, seed: 1 })).toThrow(
      'the queries have no "text" embedding',
    );
    const partial = {
      ...queryEmb.text,
      ids: queryEmb.text.ids.slice(0, 3),
      data: queryEmb.text.data.slice(0, 3 * DIM),
    };
    expect(() =>
      builder.build(queries, { sampler: "text-sim", k: 5, seed: 1, queryEmbeddings: { text: partial } }),
    ).toThrow(`record "${queries[3].questionId}": no embedding row for this item`);
    expect(() => builder.build(queries, { sampler: "nearest" as never, k: 5, seed: 1 })).toThrow(/unknown sampler/);
  });

  test("pool() is the one-query form of the contract", () => {
    const q = outside[2];
    expect(pool(q, index, { sampler: "random" }, 12, 5)).toEqual(build("random", 12, 5, [q])[0]);
    expect(
      pool(q, index, { sampler: "text-sim" }, 12, 5, { indexEmbeddings: indexEmb, queryEmbeddings: queryEmb }),
    ).toEqual(build("text-sim", 12, 5, [q])[0]);
  });
});
