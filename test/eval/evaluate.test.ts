import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EvalOptions, parseEvalOptions } from "../../src/eval/config.js";
import { evalInterrupted, evaluate } from "../../src/eval/evaluate.js";
import { EmbeddingCache, workspacePools } from "../../src/eval/setup.js";
import { fromPromptOrder } from "../../src/eval/types.js";
import { voteChooser } from "../../src/eval/vote-retriever.js";
import { InformedSelector } from "../../src/sim/informed.js";
import { SimOracle } from "../../src/sim/oracle.js";
import { SimVlm } from "../../src/sim/vlm.js";
import { type Vlm, vlmFailure } from "../../src/vlm/types.js";
import { summaryCells } from "../helpers/summary.js";
import { type SimWorkspace, simWorkspace } from "./sim-workspace.js";

let sim: SimWorkspace;
beforeAll(() => {
  sim = simWorkspace();
});
afterAll(() => sim.ws.close());

function options(overrides: Partial<Record<keyof EvalOptions, unknown>> = {}): EvalOptions {
  return parseEvalOptions({
    dataset: "val",
    index: "train",
    queries: "first:50",
    shots: [1, 2, 3, 4],
    retrievers: ["zero", "random", "topk-image", "topk-text", "oracle"],
    vlm: "sim",
    world: sim.worldFile,
    k: 16,
    poolSampler: "mix",
    seed: 5,
    resamples: 500,
    ...overrides,
  });
}

/** Counts the prompts that reach the backend (under the cache) and optionally fails some. */
function counting(fail: (questionId: string) => boolean = () => false) {
  const counter = { prompts: 0 };
  const wrap = (backend: Vlm): Vlm => ({
    id: backend.id,
    generate: async (prompts, opts) => {
      counter.prompts += prompts.length;
      // Outcomes are changed below, so the backend's per-arrival reports are not passed on.
      const out = await backend.generate(prompts, { signal: opts?.signal });
      return out.map((o, i) => (fail(prompts[i].query.questionId) ? vlmFailure("http-5xx", "injected") : o));
    },
    scoreAnswer: (requests, opts) => backend.scoreAnswer(requests, opts),
  });
  return { counter, wrap };
}

describe("evaluate on the simulator", () => {
  it("evaluates every query × retriever × shot, stores each prediction, and ranks oracle > top-k, random", async () => {
    const { counter, wrap } = counting();
    const started = performance.now();
    const result = await evaluate(sim.ws, options({ run: "e2e" }), { progress: null, wrapBackend: wrap });
    const seconds = (performance.now() - started) / 1000;
    expect(seconds).toBeLessThan(10);
    expect(result.stats).toMatchObject({ planned: 50 * 17, skipped: 0, evaluated: 850, failures: 0, aborted: false });
    const rows = sim.ws.getPredictions(result.runId);
    expect(rows.length).toBe(850);

    // Exclusions hold in what was actually shown: never the query's image.
    const val = new Map(sim.ws.loadItems("val").map((i) => [i.questionId, i]));
    const train = new Map(sim.ws.loadItems("train").map((i) => [i.questionId, i]));
    for (const row of rows) {
      const query = val.get(row.questionId)!;
      expect(new Set(row.demonstrations).size).toBe(row.shot);
      for (const id of row.demonstrations) expect(train.get(id)!.imageId).not.toBe(query.imageId);
    }

    const cells = summaryCells(result.summary);
    const acc = (retriever: string, shot: number) =>
      cells.find((c) => c.retriever === retriever && c.shot === shot)!.accuracy!;
    for (const shot of [1, 2, 3, 4]) {
      expect(acc("oracle", shot)).toBeGreaterThan(acc("random", shot));
      expect(acc("oracle", shot)).toBeGreaterThanOrEqual(acc("topk-image", shot));
    }
    // Paired comparisons with random exist for every other cell at its own shot (lever compare's rule):
    // zero-shot has no random cell at shot 0, so it is shown with its interval and a note, untested.
    expect(cells.filter((c) => c.comparison !== null).length).toBe(4 + 4 + 4);
    expect(result.summary?.baseline).toBe(`${result.runId}/random`);
    expect(result.summary?.notes).toContain(
      "zero at shot 0 is not compared: the baseline has no predictions at that shot",
    );
    // The oracle is a reference: compared, outside the Holm family of topk-image and topk-text.
    expect(result.summary?.tables[0].comparisons).toBe(4 + 4);
    expect(result.artifact?.path).toMatch(/^eval\/eval-\d+\/summary-[0-9a-f]{12}\.json$/);
    expect(sim.ws.getRun(result.runId)?.status).toBe("done");
    expect(counter.prompts).toBeGreaterThan(0);
  });

  it("scores oracle rows with exactly the accuracy the oracle promised (prompt order mapped correctly)", async () => {
    for (const order of ["nearest", "farthest"] as const) {
      const result = await evaluate(
        sim.ws,
        options({ run: `oracle-${order}`, order, retrievers: ["oracle"], queries: "first:15", shots: [1, 3, 4] }),
        { progress: null },
      );
      const oracle = new SimOracle(SimVlm.fromWorldFile(sim.worldFile));
      for (const row of sim.ws.getPredictions(result.runId)) {
        // Stored demonstrations are in prompt order, which is what the oracle's trajectory is in.
        expect(oracle.expectedAccuracy(row.questionId, row.demonstrations)).toBe(row.accuracy);
        expect(fromPromptOrder(row.demonstrations, order).length).toBe(row.shot);
      }
      const best = sim.ws
        .getPredictions(result.runId)
        .filter((r) => r.shot === 4)
        .map((r) => r.accuracy);
      expect(best.every((a) => a !== null)).toBe(true);
    }
  });

  it("scores informed rows as the simulator answers the informed selector's prompts, in both prompt orders", async () => {
    const informed = new InformedSelector(SimVlm.fromWorldFile(sim.worldFile));
    const oracle = new SimOracle(SimVlm.fromWorldFile(sim.worldFile));
    for (const order of ["nearest", "farthest"] as const) {
      const result = await evaluate(
        sim.ws,
        options({ run: `informed-${order}`, order, retrievers: ["informed"], queries: "first:15", shots: [1, 2] }),
        { progress: null },
      );
      const rows = sim.ws.getPredictions(result.runId);
      expect(rows.length).toBe(30);
      const val = new Map(sim.ws.loadItems("val").map((i) => [i.questionId, i]));
      const pools = workspacePools(
        new EmbeddingCache(sim.ws),
        options({ order }),
        "val",
        "train",
        sim.ws.loadItems("train"),
      );
      for (const row of rows) {
        // The stored prompt is the one the informed search built from the query's own pool.
        const [pool] = await pools([val.get(row.questionId)!], "mix", 16);
        expect(row.demonstrations).toEqual(informed.trajectory(row.questionId, pool, row.shot).demoIds);
        expect(oracle.expectedAccuracy(row.questionId, row.demonstrations)).toBe(row.accuracy);
      }
    }
  });

  it("vote rows: the vote's choice in the query's own pool, the best-supported demonstration next to the query", async () => {
    const embeddings = new EmbeddingCache(sim.ws);
    const index = sim.ws.loadItems("train");
    const choose = voteChooser({
      query: (kind) => embeddings.get("val", kind),
      index: (kind) => embeddings.get("train", kind),
      items: index,
      weighting: () => ({ kind: "rank", scale: 4 }),
    });
    const val = new Map(sim.ws.loadItems("val").map((i) => [i.questionId, i]));
    const pools = workspacePools(embeddings, options(), "val", "train", index);
    for (const order of ["nearest", "farthest"] as const) {
      const result = await evaluate(
        sim.ws,
        options({
          run: `vote-${order}`,
          order,
          voteScale: 4,
          retrievers: ["vote", "topk-joint"],
          queries: "first:15",
          shots: [1, 3],
        }),
        { progress: null },
      );
      const rows = sim.ws.getPredictions(result.runId).filter((r) => r.retriever === "vote");
      expect(rows.length).toBe(30);
      let differs = 0;
      for (const row of rows) {
        const query = val.get(row.questionId)!;
        const [pool] = await pools([query], "mix", 16);
        const selected = choose(query, pool, row.shot);
        expect(fromPromptOrder(row.demonstrations, order)).toEqual(selected);
        const nearest = order === "nearest" ? row.demonstrations.at(-1) : row.demonstrations[0];
        expect(nearest).toBe(choose(query, pool, 1)[0]);
        const [topk] = await pools([query], "joint-sim", row.shot);
        if (selected.join() !== topk.join()) differs++;
      }
      expect(differs).toBeGreaterThan(10);
    }
  });

  it("re-running the same command makes zero VLM calls and reports the same table", async () => {
    const first = await evaluate(sim.ws, options({ run: "e2e" }), { progress: null });
    const { counter, wrap } = counting();
    const again = await evaluate(sim.ws, options({ run: "e2e" }), { progress: null, wrapBackend: wrap });
    expect(again.resumed).toBe(true);
    expect(again.stats).toMatchObject({ skipped: 850, evaluated: 0, prompts: 0 });
    expect(counter.prompts).toBe(0);
    expect(again.summary).toEqual(first.summary);
  });

  it("a new run with the same prompts is served entirely from the workspace cache", async () => {
    const { counter, wrap } = counting();
    // The cache is off for the simulator by default; on, a second run is served by it alone.
    const first = await evaluate(sim.ws, options({ run: "e2e-cached", cache: "on" }), { progress: null });
    expect(first.stats.evaluated).toBe(850);
    const result = await evaluate(sim.ws, options({ run: "e2e-copy", cache: "on" }), {
      progress: null,
      wrapBackend: wrap,
    });
    expect(result.stats.evaluated).toBe(850);
    expect(counter.prompts).toBe(0);
    expect(result.vlm?.calls).toBe(0);
    const original = sim.ws.getPredictions(sim.ws.listRuns().find((r) => r.name === "e2e")!.id);
    const copy = sim.ws.getPredictions(result.runId);
    expect(copy.map(({ runId: _, ...r }) => r)).toEqual(original.map(({ runId: _, ...r }) => r));
  });

  it("resumes an interrupted run without recomputing what was stored", async () => {
    const controller = new AbortController();
    const { counter, wrap } = counting();
    const stopping = (backend: Vlm): Vlm => {
      const inner = wrap(backend);
      return {
        ...inner,
        generate: async (prompts, opts) => {
          const out = await inner.generate(prompts, opts);
          if (counter.prompts >= 100) controller.abort();
          return out;
        },
      };
    };
    const small = { queries: "first:30", retrievers: ["zero", "random", "topk-image"], batchSize: 25, concurrency: 1 };
    const opts = options({ ...small, run: "interrupted", cache: "off" });
    const cut = await evaluate(sim.ws, opts, { progress: null, wrapBackend: stopping, signal: controller.signal });
    expect(cut.stats.aborted).toBe(true);
    expect(cut.artifact).toBeNull();
    // Batches of ≤ 25 per (retriever, shot) over 30 queries: 25, 5, 25, 5, 25, 5, then the 7th batch
    // reaches 115 ≥ 100 prompts and the abort comes after its answers: all 115 are stored.
    expect(sim.ws.getPredictions(cut.runId).length).toBe(115);
    expect(sim.ws.getRun(cut.runId)?.status).toBe("interrupted");
    expect(evalInterrupted(cut).message).toBe(
      `evaluation run ${cut.runId} stopped after 115 of 270 predictions (those are stored)`,
    );

    const rest = counting();
    const resumed = await evaluate(sim.ws, opts, { progress: null, wrapBackend: rest.wrap });
    expect(resumed.resumed).toBe(true);
    expect(resumed.stats).toMatchObject({ planned: 270, skipped: 115, evaluated: 155, aborted: false });
    expect(rest.counter.prompts).toBe(155);
    // Interrupted + resumed = one uninterrupted run.
    const whole = await evaluate(sim.ws, options({ ...small, run: "uninterrupted", cache: "off" }), { progress: null });
    expect(sim.ws.getPredictions(resumed.runId).map(({ runId: _, ...r }) => r)).toEqual(
      sim.ws.getPredictions(whole.runId).map(({ runId: _, ...r }) => r),
    );
  });

  it("stores failed calls as failures, excludes them from accuracy with a visible count, and retries them", async () => {
    const failing = counting((id) => Number(id) % 5 === 0);
    // Without the cache, so every prompt reaches the failing backend.
    const opts = options({ run: "flaky", retrievers: ["random", "topk-text"], shots: [1, 2], cache: "off" });
    const result = await evaluate(sim.ws, opts, { progress: null, wrapBackend: failing.wrap });
    const failedQueries = sim.ws
      .loadItems("val")
      .slice(0, 50)
      .filter((q) => Number(q.questionId) % 5 === 0).length;
    expect(failedQueries).toBeGreaterThan(0);
    expect(result.stats.failures).toBe(failedQueries * 4);
    for (const cell of summaryCells(result.summary)) {
      expect(cell.failures).toBe(failedQueries);
      expect(cell.n).toBe(50 - failedQueries);
    }
    const failedRows = sim.ws.getPredictions(result.runId).filter((r) => r.failure !== null);
    expect(failedRows.every((r) => r.accuracy === null && r.failure === "http-5xx: injected")).toBe(true);
    expect(result.stats.failuresByReason).toEqual({ "http-5xx": failedQueries * 4 });

    const healthy = counting();
    const retried = await evaluate(sim.ws, opts, { progress: null, wrapBackend: healthy.wrap });
    expect(retried.stats).toMatchObject({ evaluated: failedQueries * 4, failures: 0 });
    expect(summaryCells(retried.summary).every((c) => c.failures === 0 && c.n === 50)).toBe(true);
  });

  it("refuses to reuse a run name with other settings, naming what differs", async () => {
    await expect(evaluate(sim.ws, options({ run: "e2e", seed: 6 }), { progress: null })).rejects.toThrow(
      /run "e2e" \(eval-\d+\) was made with other settings \(seed\)/,
    );
  });
});

describe("evaluate without images", () => {
  it("keeps text-identical questions apart in the response cache (keys include question ids)", async () => {
    const bare = simWorkspace({ trainItems: 120, valItems: 20, concepts: 4 }, { images: false });
    try {
      const opts = parseEvalOptions({
        dataset: "val",
        index: "train",
        queries: "all",
        shots: [1],
        retrievers: ["zero", "random"],
        vlm: "sim",
        world: bare.worldFile,
        resamples: 200,
      });
      const result = await evaluate(bare.ws, opts, { progress: null });
      expect(result.warnings).toEqual([]);
      // Every answer is the simulator's own answer for that question id.
      const fresh = SimVlm.fromWorldFile(bare.worldFile);
      const items = new Map(bare.ws.loadItems("val").map((i) => [i.questionId, i]));
      for (const row of bare.ws.getPredictions(result.runId).filter((r) => r.retriever === "zero")) {
        const q = items.get(row.questionId)!;
        const [out] = await fresh.generate([
          { demonstrations: [], query: { questionId: q.questionId, imagePath: null, question: q.question } },
        ]);
        expect(row.rawAnswer).toBe((out as { text: string }).text);
      }
    } finally {
      bare.ws.close();
    }
  });
});
