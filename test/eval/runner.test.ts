import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { createRetriever, memoizePools, type Retriever, type RetrieverContext } from "../../src/eval/retrievers.js";
import { type RunnerDeps, runEvaluation } from "../../src/eval/runner.js";
import { MemoryPredictionStore } from "../../src/eval/types.js";
import { buildPrompt } from "../../src/icl/answer.js";
import { LeverError } from "../../src/util/errors.js";
import {
  type CallOptions,
  type GenerateResult,
  type Outcome,
  type Vlm,
  type VlmPrompt,
  vlmFailure,
} from "../../src/vlm/types.js";
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

/**
 * A backend that answers one prompt at a time (every `delayMs`) and reports each outcome through
 * `onResult` as it arrives, like the OpenAI client; `outcome` decides each prompt's result by its
 * position in the whole run (0, 1, 2, …). An abort rejects the batch, as the OpenAI client does.
 */
class ArrivingVlm implements Vlm {
  readonly id = "arriving";
  sent = 0;
  constructor(
    private readonly outcome: (n: number, prompt: VlmPrompt) => Outcome<GenerateResult>,
    private readonly delayMs = 1,
  ) {}

  async generate(prompts: VlmPrompt[], options: CallOptions<GenerateResult> = {}) {
    const out: Outcome<GenerateResult>[] = [];
    for (let i = 0; i < prompts.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      options.signal?.throwIfAborted();
      out.push(this.outcome(this.sent++, prompts[i]));
      options.onResult?.(i, out[i]);
    }
    return out;
  }

  async scoreAnswer(): Promise<never> {
    throw new Error("not used");
  }
}

function deps(vlm: Vlm, store: MemoryPredictionStore, extra: Partial<RunnerDeps> = {}): RunnerDeps {
  return { vlm, store, postprocess, score, gtAnswerSet: (s) => s, batchSize: 7, concurrency: 2, ...extra };
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
      if (first.calls === 5) controller.abort(); // stop midway, after this batch's answers came back
      return out;
    };
    const stats1 = await runEvaluation(await plan(), deps(first, store, { signal: controller.signal, concurrency: 1 }));
    expect(stats1.aborted).toBe(true);
    // Batches of 7 per (retriever, shot): zero@0 gives 7 + 7 + 6, then random@1 gives 7 + 7 → 5 batches,
    // all stored: the 5th batch's answers had arrived before the abort.
    expect(stats1.evaluated).toBe(34);
    expect(store.list("run1").length).toBe(34);

    const second = new CountingVlm();
    const stats2 = await runEvaluation(await plan(), deps(second, store));
    expect(stats2).toMatchObject({ planned: 180, skipped: 34, evaluated: 146, aborted: false });
    expect(second.prompts).toBe(180 - 34); // nothing stored is recomputed

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
      Number(prompt.query.questionId) % 4 === 0 ? vlmFailure("http-5xx", "HTTP 500 (4 attempts)") : null,
    );
    const stats = await runEvaluation(await plan(["random"]), deps(failing, store));
    const failed = store.list("run1").filter((r) => r.failure !== null);
    expect(stats.failures).toBe(5 * 4); // 5 of 20 queries × 4 shots
    expect(stats.failuresByReason).toEqual({ "http-5xx": 20 });
    expect(stats.failuresByCell).toEqual({ "random@1": 5, "random@2": 5, "random@3": 5, "random@4": 5 });
    expect(failed.length).toBe(20);
    for (const row of failed) {
      expect(row).toMatchObject({
        failure: "http-5xx: HTTP 500 (4 attempts)",
        accuracy: null,
        answer: null,
        rawAnswer: null,
      });
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

  it("stores each answer as it arrives: an abort mid-batch keeps the answers that came back", async () => {
    const store = new MemoryPredictionStore();
    const controller = new AbortController();
    const vlm = new ArrivingVlm((n) => {
      if (n === 9) setImmediate(() => controller.abort()); // after the 10th answer, in the middle of batch 2
      return { text: " answer0", tokens: 1 };
    });
    const stats = await runEvaluation(
      await plan(["random"]),
      deps(vlm, store, { signal: controller.signal, batchSize: 7, concurrency: 1 }),
    );
    expect(stats).toMatchObject({ aborted: true, evaluated: 10 });
    expect(store.list("run1").length).toBe(10); // 7 of batch 1 + 3 of batch 2, none dropped

    const rerun = new ArrivingVlm(() => ({ text: " answer0", tokens: 1 }));
    const stats2 = await runEvaluation(await plan(["random"]), deps(rerun, store));
    expect(rerun.sent).toBe(80 - 10); // nothing stored is sent again
    expect(stats2).toMatchObject({ skipped: 10, evaluated: 70, aborted: false });
  });

  it("does not store failures that arrive after an abort (they may be caused by it)", async () => {
    const store = new MemoryPredictionStore();
    const controller = new AbortController();
    const first = new CountingVlm();
    const generate = first.generate.bind(first);
    first.generate = (prompts, options) => {
      controller.abort(); // the stand-in then fails every prompt of this batch with "aborted by the caller"
      return generate(prompts, options);
    };
    const stats = await runEvaluation(await plan(["random"]), deps(first, store, { signal: controller.signal }));
    expect(stats).toMatchObject({ aborted: true, evaluated: 0, failures: 0 });
    expect(store.list("run1")).toEqual([]);
  });

  it("stops with one LeverError when the VLM's circuit breaker opens, keeping what was stored", async () => {
    const store = new MemoryPredictionStore();
    const breaker = vlmFailure(
      "circuit-open",
      "the VLM endpoint has been failing for 20 s with no successful answer (breakerMs 20000); last failure: http://h:8000 (http-5xx: HTTP 500)",
    );
    const vlm = new ArrivingVlm((n) => (n < 12 ? { text: " answer0", tokens: 1 } : breaker));
    const run = runEvaluation(await plan(["random"]), deps(vlm, store, { batchSize: 7, concurrency: 2 }));
    await expect(run).rejects.toThrow(LeverError);
    await expect(
      runEvaluation(await plan(["random"]), deps(new ArrivingVlm(() => breaker), new MemoryPredictionStore())),
    ).rejects.toThrow(
      /^stopped: the VLM endpoint has been failing for 20 s .*http-5xx: HTTP 500\)\. 0 of 80 predictions are stored; rerun the same command to resume$/,
    );
    const rows = store.list("run1");
    expect(rows.length).toBe(12); // the successes; circuit-open outcomes are not stored as failures
    expect(rows.every((r) => r.failure === null)).toBe(true);
    expect(vlm.sent).toBeLessThan(7 * 4); // no new batch starts once the breaker is open
  });

  it("runs beforeWork (the preflight) once before anything is sent, and not at all when nothing is left to do", async () => {
    const store = new MemoryPredictionStore();
    const order: string[] = [];
    const vlm = new CountingVlm();
    const generate = vlm.generate.bind(vlm);
    vlm.generate = (prompts, options) => {
      order.push("generate");
      return generate(prompts, options);
    };
    const beforeWork = async () => {
      order.push("preflight");
    };
    await runEvaluation(await plan(["random"]), deps(vlm, store, { beforeWork }));
    expect(order[0]).toBe("preflight");
    expect(order.filter((o) => o === "preflight")).toHaveLength(1);
    order.length = 0;
    await runEvaluation(await plan(["random"]), deps(vlm, store, { beforeWork }));
    expect(order).toEqual([]);

    const refused = new CountingVlm();
    const failing = async () => {
      throw new LeverError("cannot reach the VLM server at http://h:1");
    };
    await expect(
      runEvaluation(await plan(["zero"]), deps(refused, new MemoryPredictionStore(), { beforeWork: failing })),
    ).rejects.toThrow("cannot reach the VLM server at http://h:1");
    expect(refused.prompts).toBe(0);
  });
});
