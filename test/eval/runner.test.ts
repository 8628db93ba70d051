import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { buildPrompt } from "../../src/eval/answer.js";
import { createRetriever, memoizePools, type Retriever, type RetrieverContext } from "../../src/eval/retrievers.js";
import { type RunnerDeps, runEvaluation } from "../../src/eval/runner.js";
import { MemoryPredictionStore } from "../../src/eval/types.js";
import { CountingVlm, makeItems, referencePools } from "./helpers.js";

const index = makeItems("t", 60);
const queries = makeItems("v", 20, 5, 1000);
const indexById = new Map(index.map((item) => [item.questionId, item]));

/** Stand-ins for the one post-processor and scorer: text before ", ", and exact match with the majority. */
const postprocess = (text: string) => text.split(", ")[0].trim();
const score = (answer: string, query: VqaItem) => (answer === query.answer ? 1 : 0);

async function retrievers(names: ("zero" | "random" | "topk-image")[]): Promise<Retriever[]> {
  const ctx: RetrieverContext = {
    pools: memoizePools(referencePools(index, 3)),
    poolSampler: "random",
    k: 8,
    maxShots: 4,
  };
  return Promise.all(
    names.map((n) => createRetriever(n === "topk-image" ? { kind: "topk", embedding: "image" } : { kind: n }, ctx)),
  );
}

async function plan(names: ("zero" | "random" | "topk-image")[] = ["zero", "random", "topk-image"]) {
  return {
    runId: "run1",
    queries,
    index,
    retrievers: await retrievers(names),
    shots: [1, 2, 3, 4],
    order: "nearest" as const,
  };
}

function deps(vlm: CountingVlm, store: MemoryPredictionStore, extra: Partial<RunnerDeps> = {}): RunnerDeps {
  return { vlm, store, postprocess, score, batchSize: 7, concurrency: 2, ...extra };
}

describe("runEvaluation", () => {
  it("stores one scored prediction per retriever × shot × query, zero-shot only at shot 0", async () => {
    const vlm = new CountingVlm();
    const store = new MemoryPredictionStore();
    const stats = await runEvaluation(await plan(), deps(vlm, store));
    const rows = store.list("run1");
    expect(stats).toMatchObject({
      planned: 20 * 9,
      skipped: 0,
      evaluated: 180,
      failures: 0,
      prompts: 180,
      aborted: false,
    });
    expect(rows.length).toBe(180);
    expect(rows.filter((r) => r.retriever === "zero").every((r) => r.shot === 0 && r.demonstrations.length === 0)).toBe(
      true,
    );
    for (const row of rows) {
      const query = queries.find((q) => q.questionId === row.questionId) as VqaItem;
      expect(row.demonstrations.length).toBe(row.shot);
      // The stand-in VLM answers with the majority demonstration answer, post-processed from " x, maybe".
      expect(row.rawAnswer?.endsWith(", maybe")).toBe(true);
      expect(row.answer).toBe(row.rawAnswer?.split(", ")[0].trim());
      expect(row.accuracy).toBe(row.answer === query.answer ? 1 : 0);
      expect(row.failure).toBeNull();
      expect(row.promptHash).toMatch(/^[0-9a-f]{64}$/);
    }
    // With concept-aligned embeddings, top-k beats zero-shot (which always answers "unknown").
    const mean = (name: string) => {
      const r = rows.filter((x) => x.retriever === name);
      return r.reduce((a, x) => a + (x.accuracy ?? 0), 0) / r.length;
    };
    expect(mean("zero")).toBe(0);
    expect(mean("topk-image")).toBeGreaterThan(mean("random"));
  });

  it("places the first-selected demonstration next to the query with order=nearest and first with order=farthest", () => {
    const selection = ["0", "1", "2"];
    const near = buildPrompt(queries[0], selection, indexById, "nearest");
    const far = buildPrompt(queries[0], selection, indexById, "farthest");
    expect(near.demonstrations.map((d) => d.questionId)).toEqual(["2", "1", "0"]);
    expect(far.demonstrations.map((d) => d.questionId)).toEqual(["0", "1", "2"]);
    expect(near.demonstrations[2]).toEqual({
      questionId: "0",
      imagePath: null,
      question: index[0].question,
      answer: "answer0",
    });
    expect(near.query).toEqual({ questionId: queries[0].questionId, imagePath: null, question: queries[0].question });
  });

  it("resumes after an abort without recomputing stored predictions; a finished run sends nothing", async () => {
    const store = new MemoryPredictionStore();
    const controller = new AbortController();
    const first = new CountingVlm();
    const originalGenerate = first.generate.bind(first);
    first.generate = async (prompts, options) => {
      const out = await originalGenerate(prompts, options);
      if (first.calls === 5) controller.abort(); // stop midway; this batch's results are dropped
      return out;
    };
    const stats1 = await runEvaluation(await plan(), deps(first, store, { signal: controller.signal, concurrency: 1 }));
    expect(stats1.aborted).toBe(true);
    // Batches of 7 per (retriever, shot): zero@0 gives 7 + 7 + 6, then random@1 gives 7 → 4 batches stored.
    expect(stats1.evaluated).toBe(27);
    expect(store.list("run1").length).toBe(27);

    const second = new CountingVlm();
    const stats2 = await runEvaluation(await plan(), deps(second, store));
    expect(stats2).toMatchObject({ planned: 180, skipped: 27, evaluated: 153, aborted: false });
    expect(second.prompts).toBe(180 - 27); // nothing stored is recomputed

    const third = new CountingVlm();
    const stats3 = await runEvaluation(await plan(), deps(third, store));
    expect(third.prompts).toBe(0);
    expect(stats3).toMatchObject({ planned: 180, skipped: 180, evaluated: 0 });

    // The resumed result equals an uninterrupted run.
    const fresh = new MemoryPredictionStore();
    await runEvaluation(await plan(), deps(new CountingVlm(), fresh));
    const sort = (rows: ReturnType<MemoryPredictionStore["list"]>) =>
      [...rows].sort((a, b) => (a.retriever + a.shot + a.questionId < b.retriever + b.shot + b.questionId ? -1 : 1));
    expect(sort(store.list("run1"))).toEqual(sort(fresh.list("run1")));
  });

  it("stores failed VLM calls as failures without accuracy and retries only them on the next run", async () => {
    const store = new MemoryPredictionStore();
    const failing = new CountingVlm((prompt) =>
      Number(prompt.query.questionId) % 4 === 0 ? "HTTP 500 after 3 retries" : null,
    );
    const stats = await runEvaluation(await plan(["random"]), deps(failing, store));
    const failed = store.list("run1").filter((r) => r.failure !== null);
    expect(stats.failures).toBe(5 * 4); // 5 of 20 queries × 4 shots
    expect(failed.length).toBe(20);
    for (const row of failed) {
      expect(row).toMatchObject({ failure: "HTTP 500 after 3 retries", accuracy: null, answer: null, rawAnswer: null });
      expect(row.demonstrations.length).toBe(row.shot); // the choice is still recorded
    }
    const healthy = new CountingVlm();
    const stats2 = await runEvaluation(await plan(["random"]), deps(healthy, store));
    expect(healthy.prompts).toBe(20);
    expect(stats2).toMatchObject({ skipped: 60, evaluated: 20, failures: 0 });
    expect(store.list("run1").every((r) => r.failure === null && r.accuracy !== null)).toBe(true);
  });

  it("refuses a retriever that breaks the exclusion invariant before anything reaches the VLM", async () => {
    const cheat: Retriever = {
      name: "cheat",
      shots: (s) => [...s],
      select: async (qs, shots) => qs.map(() => Array.from({ length: shots }, () => "0")),
    };
    const vlm = new CountingVlm();
    const store = new MemoryPredictionStore();
    await expect(
      runEvaluation({ ...(await plan([])), retrievers: [cheat], shots: [2] }, deps(vlm, store)),
    ).rejects.toThrow(/record "1000", field "cheat@2": demonstration 0 is chosen twice/);
    expect(vlm.prompts).toBe(0);
    expect(store.list("run1")).toEqual([]);
  });
});
