/**
 * VLM client overhead: requests/s and main-thread busy time per request against the mock vLLM server
 * (own worker thread, zero added latency), 4-shot prompts = 5 images of 100 KB each sent as data URLs
 * (read once, then served from the image LRU). Uncached = real HTTP round trips; cached = every
 * request answered by the response cache (memory and SQLite).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { Rng } from "../src/util/rng.js";
import { cachedVlm, ensureCacheTable, MemoryResponseCache, SqliteResponseCache } from "../src/vlm/cache.js";
import { OpenAiVlm } from "../src/vlm/openai-client.js";
import { isFailure, type Vlm, type VlmPrompt } from "../src/vlm/types.js";
// Imported so tsc compiles the mock next to this file; it runs in a worker thread (see MOCK_MODULE).
import type { MockVllmOptions } from "../test/helpers/mock-vllm.js";
import { sized } from "./common.js";

const REQUESTS = sized(400, 8);
const IMAGE_BYTES = 100 * 1024;
const MOCK_MODULE = fileURLToPath(new URL("../test/helpers/mock-vllm.js", import.meta.url));

interface Row {
  scenario: string;
  requests: number;
  seconds: number;
  perSecond: number;
  busyMsPerRequest: number;
  failures: number;
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lever-vlm-bench-"));
  const rng = new Rng(7);
  const images = Array.from({ length: 5 }, (_, i) => {
    const bytes = Buffer.alloc(IMAGE_BYTES);
    for (let j = 0; j < bytes.length; j++) bytes[j] = rng.int(256);
    bytes.set([0xff, 0xd8, 0xff, 0xe0]);
    const path = join(dir, `img${i}.jpg`);
    writeFileSync(path, bytes);
    return path;
  });
  const prompts: VlmPrompt[] = Array.from({ length: REQUESTS }, (_, i) => ({
    demonstrations: images.slice(0, 4).map((imagePath, d) => ({
      questionId: `d${d}`,
      imagePath,
      question: `What is happening in demonstration picture number ${d}?`,
      answer: ["two", "a red bus", "yes", "tennis racket"][d],
    })),
    query: {
      questionId: `q${i}`,
      imagePath: images[4],
      question: `Question ${i}: how many people are in the picture?`,
    },
  }));
  const scores = prompts.map((prompt, i) => ({ prompt, answer: `answer ${i % 20}` }));

  const mockOptions: MockVllmOptions = { keepBodies: false };
  const worker = new Worker(MOCK_MODULE, { workerData: { mockVllm: mockOptions } });
  const url = await new Promise<string>((resolve) => worker.once("message", (m: { url: string }) => resolve(m.url)));
  const rows: Row[] = [];
  try {
    const openai = () => new OpenAiVlm({ baseUrls: [url], model: "mock-vl", concurrencyPerEndpoint: 8 });
    const warm = openai();
    await warm.generate(prompts.slice(0, 16)); // JIT, connections, image reads

    const http = openai();
    await warm.generate(prompts.slice(0, 1));
    rows.push(await measure("generate, uncached (HTTP)", () => http.generate(prompts)));
    rows.push(await measure("scoreAnswer, uncached (HTTP + /tokenize)", () => http.scoreAnswer(scores)));

    const memory = cachedVlm(openai(), new MemoryResponseCache());
    await memory.generate(prompts);
    rows.push(await measure("generate, cached (memory hit)", () => memory.generate(prompts)));

    const db = new Database(":memory:");
    ensureCacheTable(db);
    const sqlite = cachedVlm(openai(), new SqliteResponseCache(db));
    await sqlite.generate(prompts);
    rows.push(await measure("generate, cached (SQLite hit)", () => sqlite.generate(prompts)));
    const stats = http.getStats();
    console.log(
      `uncached latency (ms): p50 ${stats.latencyMs.p50.toFixed(2)}, p90 ${stats.latencyMs.p90.toFixed(2)}, p99 ${stats.latencyMs.p99.toFixed(2)}; HTTP requests ${stats.httpRequests}, failures ${stats.failures.total}`,
    );
  } finally {
    worker.postMessage({ close: true });
    await worker.terminate();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `${REQUESTS} requests per scenario, 5 images × ${IMAGE_BYTES / 1024} KB as data URLs, concurrency 8, mock server on its own thread`,
  );
  console.log("| scenario | req/s | client busy ms/request | wall s | failures |");
  console.log("|---|---:|---:|---:|---:|");
  for (const r of rows)
    console.log(
      `| ${r.scenario} | ${r.perSecond.toFixed(0)} | ${r.busyMsPerRequest.toFixed(3)} | ${r.seconds.toFixed(2)} | ${r.failures} |`,
    );
}

/** Wall time and main-thread busy time (event-loop utilisation × wall) for one batch call. */
async function measure(scenario: string, call: () => ReturnType<Vlm["generate"]> | ReturnType<Vlm["scoreAnswer"]>) {
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const results = await call();
  const seconds = (performance.now() - t0) / 1000;
  const elu = performance.eventLoopUtilization(elu0);
  const failures = results.filter((r) => isFailure(r)).length;
  return {
    scenario,
    requests: results.length,
    seconds,
    perSecond: results.length / seconds,
    busyMsPerRequest: elu.active / results.length,
    failures,
  };
}
