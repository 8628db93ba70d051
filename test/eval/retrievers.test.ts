import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import {
  checkDemonstrations,
  createRetriever,
  memoizePools,
  parseRetrieverList,
  parseRetrieverSpec,
  type RetrieverContext,
} from "../../src/eval/retrievers.js";
import type { SelectorHandle } from "../../src/icl/selector.js";
import { LeverError } from "../../src/util/errors.js";
import { makeItem, makeItems, referencePools } from "./helpers.js";

const index = makeItems("t", 40);
const queries = makeItems("v", 10, 5, 1000);
const indexById = new Map(index.map((item) => [item.questionId, item]));

function context(overrides: Partial<RetrieverContext> = {}): RetrieverContext {
  return { pools: memoizePools(referencePools(index, 1)), poolSampler: "mix", k: 8, maxShots: 4, ...overrides };
}

describe("parseRetrieverSpec", () => {
  it("parses every documented retriever name", () => {
    expect(parseRetrieverSpec("zero")).toEqual({ kind: "zero" });
    expect(parseRetrieverSpec("random")).toEqual({ kind: "random" });
    expect(parseRetrieverSpec("topk-image")).toEqual({ kind: "topk", embedding: "image" });
    expect(parseRetrieverSpec("topk-text")).toEqual({ kind: "topk", embedding: "text" });
    expect(parseRetrieverSpec("topk-joint")).toEqual({ kind: "topk", embedding: "joint" });
    // the old name still parses (the CLI warns that it is deprecated)
    expect(parseRetrieverSpec("topk-mix")).toEqual({ kind: "topk", embedding: "joint" });
    expect(parseRetrieverSpec("oracle")).toEqual({ kind: "oracle" });
    expect(parseRetrieverSpec("informed")).toEqual({ kind: "informed" });
    expect(parseRetrieverSpec("vote")).toEqual({ kind: "vote" });
    expect(parseRetrieverSpec("selector:runs/a:b.safetensors")).toEqual({
      kind: "selector",
      checkpoint: "runs/a:b.safetensors",
    });
  });

  it("rejects unknown names, empty checkpoints and duplicates with a one-line error naming the flag", () => {
    expect(() => parseRetrieverSpec("topk")).toThrow(/--retriever.*unknown retriever "topk"/);
    expect(() => parseRetrieverSpec("selector:")).toThrow(LeverError);
    expect(() => parseRetrieverList("random,zero,random")).toThrow(/listed twice/);
    expect(parseRetrieverList("zero, random").map((s) => s.kind)).toEqual(["zero", "random"]);
  });
});

describe("retrievers", () => {
  it("zero-shot runs only at shot 0 and never shows a demonstration", async () => {
    const zero = await createRetriever({ kind: "zero" }, context());
    expect(zero.shots([1, 2, 3, 4])).toEqual([0]);
    expect(await zero.select(queries, 0)).toEqual(queries.map(() => []));
  });

  it("random draws distinct index items, never the query or its image, identically per query whatever the batch", async () => {
    const random = await createRetriever({ kind: "random" }, context());
    expect(random.shots([0, 1, 4])).toEqual([1, 4]);
    const all = await random.select(queries, 4);
    all.forEach((ids, i) => {
      checkDemonstrations("random", queries[i], 4, ids, indexById);
    });
    // Same query in a different batch (alone, reversed order) → same draw.
    const alone = await (await createRetriever({ kind: "random" }, context())).select([queries[3]], 4);
    expect(alone[0]).toEqual(all[3]);
    const reversed = await random.select([...queries].reverse(), 4);
    expect(reversed.reverse()).toEqual(all);
    // Different queries get different draws (not one fixed list for everyone).
    expect(new Set(all.map((ids) => ids.join(","))).size).toBeGreaterThan(1);
  });

  it("random never returns a same-image index item even when the query's image is in the index", async () => {
    // A query that shares its image with index items t0/t1 (image "timg0").
    const query = makeItem("5000", "timg0", "answer0");
    const random = await createRetriever({ kind: "random" }, context());
    for (const shots of [1, 2, 3, 4]) {
      const [ids] = await random.select([query], shots);
      expect(ids).not.toContain("0");
      expect(ids).not.toContain("1");
      checkDemonstrations("random", query, shots, ids, indexById);
    }
  });

  it("top-k returns the most similar items first, as a prefix of one similarity pool fetched once with K = max shots", async () => {
    const calls: string[] = [];
    const ctx = context({ pools: memoizePools(referencePools(index, 1, calls)) });
    const topk = await createRetriever({ kind: "topk", embedding: "image" }, ctx);
    expect(topk.name).toBe("topk-image");
    const full = await referencePools(index, 1)(queries, "image-sim", 4);
    for (const shots of [1, 2, 3, 4]) {
      const chosen = await topk.select(queries, shots);
      expect(chosen).toEqual(full.map((pool) => pool.slice(0, shots)));
    }
    expect(calls.filter((c) => c.startsWith("image-sim:4:")).length).toBe(queries.length);
    expect(calls.length).toBe(queries.length);
    const mix = await createRetriever({ kind: "topk", embedding: "joint" }, ctx);
    expect(mix.name).toBe("topk-joint");
    await mix.select(queries.slice(0, 1), 2);
    expect(calls.at(-1)).toBe(`joint-sim:4:${queries[0].questionId}`);
  });

  it("the oracle chooses within the query's pool of the configured sampler and K", async () => {
    const seen: { query: string; pool: readonly string[]; shots: number }[] = [];
    const oracle = (query: VqaItem, pool: readonly string[], shots: number) => {
      seen.push({ query: query.questionId, pool, shots });
      return pool.slice(-shots); // any rule: the last ones
    };
    const ctx = context({ oracle, poolSampler: "text-sim", k: 6 });
    const retriever = await createRetriever({ kind: "oracle" }, ctx);
    const chosen = await retriever.select(queries, 3);
    const pools = await referencePools(index, 1)(queries, "text-sim", 6);
    expect(seen.map((s) => s.pool)).toEqual(pools);
    expect(chosen).toEqual(pools.map((pool) => pool.slice(-3)));
    await expect(createRetriever({ kind: "oracle" }, context())).rejects.toThrow(/--vlm sim/);
    // The informed ceiling takes the same path with its own function, never the oracle's.
    const informed = await createRetriever(
      { kind: "informed" },
      context({ oracle, informed: (_q, pool, n) => pool.slice(0, n), poolSampler: "text-sim", k: 6 }),
    );
    expect(informed.name).toBe("informed");
    expect(await informed.select(queries, 2)).toEqual(pools.map((pool) => pool.slice(0, 2)));
    await expect(createRetriever({ kind: "informed" }, context({ oracle }))).rejects.toThrow(
      /informed retriever needs the simulated VLM/,
    );
  });

  it("a selector chooses positions in ITS OWN query's pool (its sampler and K), mapped back to question ids", async () => {
    const calls: string[] = [];
    const handle: SelectorHandle = {
      label: "selector:ckpt.safetensors@abc",
      sampler: "random",
      k: 12,
      choose: async (qs, pools, shots) => {
        expect(pools.every((p) => p.length === 12)).toBe(true);
        return qs.map((_, i) => Array.from({ length: shots }, (_, s) => (i + 3 * s) % 12));
      },
    };
    const ctx = context({ pools: memoizePools(referencePools(index, 1, calls)), loadSelector: async () => handle });
    const retriever = await createRetriever({ kind: "selector", checkpoint: "ckpt.safetensors" }, ctx);
    expect(retriever.name).toBe("selector:ckpt.safetensors@abc");
    const chosen = await retriever.select(queries, 2);
    const pools = await referencePools(index, 1)(queries, "random", 12);
    expect(chosen).toEqual(pools.map((pool, i) => [pool[i % 12], pool[(i + 3) % 12]]));
    // Per-query pools: not one fixed set of rows for every query (docs/selector.md, "Differences").
    expect(new Set(pools.map((p) => p.join(","))).size).toBe(queries.length);
    expect(calls.every((c) => c.startsWith("random:12:"))).toBe(true);

    const bad = { ...handle, choose: async () => queries.map(() => [12]) };
    const broken = await createRetriever(
      { kind: "selector", checkpoint: "x" },
      { ...ctx, loadSelector: async () => bad },
    );
    await expect(broken.select(queries, 1)).rejects.toThrow(/position 12, outside the pool of 12/);
  });

  it("memoizePools rejects a provider whose pool size is not K", async () => {
    const pools = memoizePools(async (qs) => qs.map(() => ["1"]));
    await expect(pools(queries.slice(0, 1), "random", 2)).rejects.toThrow(/1 candidates, expected 2/);
  });
});

describe("checkDemonstrations", () => {
  const query = makeItem("9000", "timg3", "answer0"); // shares its image with index items 6 and 7
  it("accepts a valid selection and names query, retriever and problem for each violation", () => {
    expect(() => checkDemonstrations("r", query, 2, ["0", "2"], indexById)).not.toThrow();
    expect(() => checkDemonstrations("r", query, 3, ["0", "2"], indexById)).toThrow(
      /record "9000", field "r@3": retriever returned 2 demonstrations, expected 3/,
    );
    expect(() => checkDemonstrations("r", query, 2, ["0", "0"], indexById)).toThrow(/chosen twice/);
    expect(() => checkDemonstrations("r", query, 1, ["nope"], indexById)).toThrow(/not in the index/);
    expect(() => checkDemonstrations("r", query, 1, ["6"], indexById)).toThrow(/shares the query's image timg3/);
    const self = makeItem("3", "elsewhere", "x");
    expect(() => checkDemonstrations("r", self, 1, ["3"], indexById)).toThrow(/its own demonstration/);
  });
});
