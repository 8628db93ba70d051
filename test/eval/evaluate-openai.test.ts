/**
 * `evaluate` against the mock vLLM server: work is stored as it arrives (predictions and cache
 * entries), and a busy evaluation adds no listener per request to the run's AbortSignal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EvalOptions, parseEvalOptions } from "../../src/eval/config.js";
import { evaluate } from "../../src/eval/evaluate.js";
import { MAX_COMPLETION_CHARS } from "../../src/vlm/openai-client.js";
import { preflight, type Vlm } from "../../src/vlm/types.js";
import { MockVllm } from "../helpers/mock-vllm.js";
import { type SimWorkspace, simWorkspace } from "./sim-workspace.js";

let sim: SimWorkspace;
const mocks: MockVllm[] = [];

async function startMock(options: Parameters<typeof MockVllm.start>[0] = {}): Promise<MockVllm> {
  const m = await MockVllm.start(options);
  mocks.push(m);
  return m;
}

beforeAll(() => {
  sim = simWorkspace({ trainItems: 120, valItems: 40, concepts: 6 });
});
afterAll(async () => {
  sim.ws.close();
  await Promise.all(mocks.map((m) => m.close()));
});

function options(urls: string[], overrides: Record<string, unknown> = {}): EvalOptions {
  return parseEvalOptions({
    dataset: "val",
    index: "train",
    vlm: "openai",
    baseUrls: urls,
    model: "mock-vl",
    resamples: 200,
    backoffBaseMs: 5,
    ...overrides,
  });
}

/** Passes the backend through, counting the prompts it is sent and calling `onArrival` after each outcome. */
function observe(onArrival: (n: number) => void = () => {}) {
  const seen = { prompts: 0, arrivals: 0 };
  const wrap = (backend: Vlm): Vlm => ({
    id: backend.id,
    preflight: (o) => preflight(backend, o),
    generate: (prompts, opts) => {
      seen.prompts += prompts.length;
      return backend.generate(prompts, {
        signal: opts?.signal,
        onResult: (i, outcome) => {
          opts?.onResult?.(i, outcome);
          onArrival(++seen.arrivals);
        },
      });
    },
    scoreAnswer: (requests, opts) => backend.scoreAnswer(requests, opts),
  });
  return { seen, wrap };
}

describe("evaluate against an OpenAI-compatible server", () => {
  it("stores predictions and cache entries as answers arrive: a run stopped mid-batch keeps them", async () => {
    const slow = await startMock({ latencyMs: 30 });
    const controller = new AbortController();
    const first = observe((n) => n === 5 && controller.abort());
    // One batch of 20 prompts, two requests in flight at a time: stopped after the 5th answer.
    const opts = options([slow.url], {
      run: "arrivals",
      queries: "first:20",
      shots: [1],
      retrievers: ["random"],
      concurrencyPerEndpoint: 2,
    });
    const cut = await evaluate(sim.ws, opts, { progress: null, signal: controller.signal, wrapBackend: first.wrap });
    expect(cut.stats).toMatchObject({ planned: 20, evaluated: 5, aborted: true });
    expect(sim.ws.getPredictions(cut.runId).length).toBe(5);
    expect(sim.ws.getPredictions(cut.runId).every((r) => r.failure === null)).toBe(true);
    const cached = sim.ws.db
      .prepare("SELECT COUNT(*) AS n FROM vlm_cache WHERE model = ? AND kind = 'generate'")
      .get(cut.config.vlm) as { n: number };
    expect(cached.n).toBe(5);

    slow.clearLog();
    const rest = observe();
    const resumed = await evaluate(sim.ws, opts, { progress: null, wrapBackend: rest.wrap });
    expect(resumed.stats).toMatchObject({ skipped: 5, evaluated: 15, failures: 0, aborted: false });
    expect(rest.seen.prompts).toBe(15); // the stored five are not sent again
    expect(slow.count("/v1/chat/completions")).toBe(15 + 1); // + the preflight's image request
  });

  it("keeps a megabyte-long completion to its first 16 KiB in the predictions and the cache; the answer is unchanged", async () => {
    // A server that ignores max_tokens: "yes, " and then 1 MB of text.
    const chatty = await startMock({ answer: () => `yes, ${"and so on ".repeat(100_000)}` });
    const result = await evaluate(
      sim.ws,
      options([chatty.url], {
        run: "chatty",
        queries: "first:2",
        shots: [1],
        retrievers: ["random"],
        maxTokens: 10_000_000,
      }),
      { progress: null },
    );
    expect(result.stats).toMatchObject({ planned: 2, evaluated: 2, failures: 0 });
    // … and says so: the run's VLM summary counts the completions it cut (lever eval prints them).
    expect(result.vlm?.completionsCut).toBe(2);
    const rows = sim.ws.getPredictions(result.runId);
    expect(rows.map((r) => [r.rawAnswer?.length, r.answer])).toEqual([
      [MAX_COMPLETION_CHARS, "yes"],
      [MAX_COMPLETION_CHARS, "yes"],
    ]);
    const stored = sim.ws.db
      .prepare("SELECT MAX(LENGTH(response)) AS n FROM vlm_cache WHERE model = ? AND kind = 'generate'")
      .get(result.config.vlm) as { n: number };
    expect(stored.n).toBeLessThan(MAX_COMPLETION_CHARS + 200);
  });

  it("a hung server stops the evaluation within about max(timeoutMs, breakerMs), with and without the preflight (docs/vlm.md)", async () => {
    const hung = await startMock();
    hung.faultFor = (path) => (path === "/v1/chat/completions" ? { kind: "hang" } : null);
    // The defaults (60 s, 20 s) scaled down by 30: long enough that the evaluation's own set-up on a busy
    // machine (parallel test files) cannot blur one timeout into two.
    for (const preflight of [true, false]) {
      const start = performance.now();
      const run = evaluate(
        sim.ws,
        options([hung.url], {
          run: `hung-${preflight}`,
          cache: "off", // earlier tests cached these prompts' answers
          queries: "first:8",
          shots: [1],
          retrievers: ["random"],
          timeoutMs: 2000,
          breakerMs: 666,
          preflight,
        }),
        { progress: null },
      );
      await expect(run, `preflight ${preflight}`).rejects.toThrow(preflight ? /within 2000 ms/ : /breakerMs 666/);
      // One timeout, not two (the preflight used to retry its timed-out check).
      expect(performance.now() - start, `preflight ${preflight}`).toBeLessThan(3600);
    }
  });

  it("emits no MaxListenersExceededWarning with many concurrent requests, retries and replicas", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const a = await startMock({ latencyMs: 5 });
      const b = await startMock({ latencyMs: 5 });
      // The first dozen evaluation requests on each server fail once (the preflight's pass: max_tokens 1).
      for (const m of [a, b]) {
        let failed = 0;
        m.faultFor = (path, body) =>
          path === "/v1/chat/completions" && body?.max_tokens !== 1 && failed++ < 12
            ? { kind: "status", status: 503 }
            : null;
      }
      const controller = new AbortController(); // a run signal, as the CLI passes one
      const result = await evaluate(
        sim.ws,
        options([a.url, b.url], {
          run: "listeners",
          queries: "first:40",
          shots: [1, 2],
          retrievers: ["zero", "random"],
          batchSize: 8,
          concurrency: 12,
          concurrencyPerEndpoint: 8,
          cooldownAfterFailures: 100,
        }),
        { progress: null, signal: controller.signal },
      );
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(result.stats).toMatchObject({ planned: 120, evaluated: 120, failures: 0 });
      expect(result.vlm?.retries).toBeGreaterThan(0);
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message)).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
