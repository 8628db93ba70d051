/**
 * `lever serve` (issue 25, point 5): a 100,000-item index (synthetic 512-d joint embeddings, CLIP
 * ViT-B/32's width), a seeded selector with the default architecture, joint-sim pools of K = 64, 4 shots,
 * in front of the zero-latency mock vLLM server (own worker thread); clients on their own worker thread
 * send requests carrying their embedding (`lever.embedding`) and a 30 KB image, 1 and 32 at a time.
 * Printed: p50 / p99 of each step (waiting for the selection batch, pool, selection, pool + selection,
 * upstream, whole request as the client sees it), the mean selection batch, throughput, the server
 * process's CPU per request against the mock upstream path's (the OpenAI client sending the same prompts
 * directly + the mock server), heap before/after 20,000 requests, and a verdict (PASS / FAIL) per
 * target. The selector's projections of the index are computed once, as `lever serve` does at start-up.
 * Then the same with in-process embedding (requests carry a JPEG and no embedding; 1 and 32 clients,
 * `LEVER_BENCH_SERVE_EMBED_REQUESTS`, default 1,000) with the tiny CLIP test fixture, or a CLIP export
 * given by `LEVER_CLIP_B32` (bench/clip_shaped.py writes one), the index and selector at its width.
 * `LEVER_BENCH_SERVE_REQUESTS` changes the 20,000.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { RawImage } from "@huggingface/transformers";
import type { EmbeddingMatrix } from "../src/data/embeddings.js";
import type { VqaItem } from "../src/data/item.js";
import { openSelector } from "../src/icl/selector.js";
import { quantileSorted } from "../src/metrics/stats.js";
import { PoolBuilder } from "../src/pools/samplers.js";
import { gemmScreen } from "../src/pools/search.js";
import { saveCheckpoint } from "../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../src/selector/config.js";
import { initParams } from "../src/selector/params.js";
import { type Embedder, openEmbedder } from "../src/serve/embedder.js";
import { parseServeOptions } from "../src/serve/options.js";
import { encodeIndex } from "../src/serve/selection.js";
import { type ServeApp, startServer } from "../src/serve/server.js";
import type { ServeSetup } from "../src/serve/startup.js";
import { Upstream } from "../src/serve/upstream.js";
import { Rng } from "../src/util/rng.js";
import { OpenAiVlm } from "../src/vlm/openai-client.js";
// Imported so tsc compiles the mock next to this file; it runs in its own process (mockScript).
import type { MockVllmOptions } from "../test/helpers/mock-vllm.js";
import { loadAverage, sized } from "./common.js";

const INDEX = Number(process.env.LEVER_BENCH_SERVE_INDEX ?? sized(100_000, 500));
const DIM = sized(512, 32);
const K = 64;
const SHOTS = 4;
const IMAGES = 64;
const IMAGE_BYTES = 30 * 1024;
const REQUESTS = Number(process.env.LEVER_BENCH_SERVE_REQUESTS ?? sized(20_000, 8));
/** Requests at 32 clients with in-process embedding (`LEVER_BENCH_SERVE_EMBED_REQUESTS`, at most REQUESTS). */
const EMBED_REQUESTS = Math.min(REQUESTS, Number(process.env.LEVER_BENCH_SERVE_EMBED_REQUESTS ?? sized(1_000, 4)));
/** The embedding model of the in-process runs: `LEVER_CLIP_B32` (a CLIP export, see bench/embed.bench.ts), else the tiny test fixture. */
const EMBED_MODEL =
  process.env.LEVER_CLIP_B32 ?? fileURLToPath(new URL("../../test/fixtures/tiny-clip/model", import.meta.url));
/**
 * Question texts are made of these words, not of item numbers: the mock's tokenizer hashes text pieces
 * into 150,000 ids and refuses (HTTP 500) two pieces with one id, which 100,000 distinct numbers hit.
 */
const WORDS = ["yes", "no", "two", "red", "dog", "tennis", "bus", "pizza", "snow", "cat"];
const queryText = (q: number) => `How many ${WORDS[q % 10]} things are near the ${WORDS[Math.floor(q / 10) % 10]}?`;
const MOCK_MODULE = fileURLToPath(new URL("../test/helpers/mock-vllm.js", import.meta.url));

interface ClientJob {
  url: string;
  total: number;
  width: number;
  bodies: string[];
}

interface Sample {
  status: number;
  ms: number;
  embed: number;
  queue: number;
  pool: number;
  select: number;
  upstream: number;
  error?: string;
}

/**
 * The clients, a child process: sends the requests `width` at a time and reports each one's status,
 * latency, lever's timings and its error message, if any.
 */
const CLIENT_SCRIPT = `
process.once("message", async (job) => {
  const samples = [];
  let next = 0;
  const worker = async () => {
    while (next < job.total) {
      const i = next++;
      const started = performance.now();
      const res = await fetch(job.url + "/v1/chat/completions", {
        method: "POST", headers: { "content-type": "application/json" }, body: job.bodies[i % job.bodies.length],
      });
      const json = await res.json();
      const t = (json.lever && json.lever.timings) || {};
      const sample = { status: res.status, ms: performance.now() - started, embed: t.embed_ms ?? NaN, queue: t.queue_ms ?? NaN, pool: t.pool_ms ?? NaN, select: t.select_ms ?? NaN, upstream: t.upstream_ms ?? NaN };
      if (json.error) sample.error = String(json.error.message);
      samples.push(sample);
    }
  };
  await Promise.all(Array.from({ length: job.width }, worker));
  process.send(samples, () => process.exit(0));
});
`;

const MOCK_OPTIONS: MockVllmOptions = { keepBodies: false };

/** The mock vLLM server, a child process: reports its URL, then its CPU time (µs) whenever asked. */
const mockScript = (module: string) => `
import { MockVllm } from ${JSON.stringify(module)};
const mock = await MockVllm.start(${JSON.stringify(MOCK_OPTIONS)});
process.send({ url: mock.url });
process.on("message", (m) => {
  if (m === "cpu") { const u = process.cpuUsage(); process.send({ cpu: u.user + u.system }); }
  if (m === "close") mock.close().then(() => process.exit(0));
});
`;

function unitRows(rng: Rng, rows: number, dim: number): Float32Array {
  const data = new Float32Array(rows * dim);
  for (let r = 0; r < rows; r++) {
    let norm = 0;
    for (let c = 0; c < dim; c++) {
      const v = rng.normal();
      data[r * dim + c] = v;
      norm += v * v;
    }
    const inv = 1 / Math.sqrt(norm);
    for (let c = 0; c < dim; c++) data[r * dim + c] *= inv;
  }
  return data;
}

/** In-process embedding: the model folder and its opened embedder (the index is `dim`-d, as the model's rows). */
interface InProcess {
  modelDir: string;
  embedder: Embedder;
  dim: number;
}

/** The index, its embeddings, a seeded selector and the upstream: what `prepareServe` builds from a workspace. */
function benchSetup(dir: string, url: string, inProcess: InProcess | null = null): ServeSetup {
  const dim = inProcess?.dim ?? DIM;
  const rng = new Rng(25).child("serve-bench");
  const images = Array.from({ length: IMAGES }, (_, i) => {
    const bytes = Buffer.alloc(IMAGE_BYTES);
    for (let j = 0; j < bytes.length; j++) bytes[j] = rng.int(256);
    bytes.set([0xff, 0xd8, 0xff, 0xe0]);
    const path = join(dir, `img${i}.jpg`);
    writeFileSync(path, bytes);
    return path;
  });
  const items: VqaItem[] = Array.from({ length: INDEX }, (_, i) => {
    const answers = Array.from({ length: 10 }, () => ({ answer: WORDS[rng.int(WORDS.length)] }));
    return {
      questionId: String(i),
      imageId: String(i),
      question: `What is the ${WORDS[i % 10]} ${WORDS[Math.floor(i / 10) % 10]} next to the ${WORDS[Math.floor(i / 100) % 10]}?`,
      answers,
      answer: answers[0].answer,
      questionType: "what",
      answerType: "other",
      imagePath: images[i % IMAGES],
    };
  });
  const matrix: EmbeddingMatrix = { ids: items.map((i) => i.questionId), dim, data: unitRows(rng, INDEX, dim) };
  const config = SelectorConfigSchema.parse({ d: dim, shots: SHOTS });
  const file = join(dir, `selector-${dim}.safetensors`);
  saveCheckpoint(file, {
    config,
    params: initParams(config, 3),
    trainedK: K,
    shots: SHOTS,
    provenance: {
      stage: "init",
      createdAt: "2026-01-01T00:00:00Z",
      notes: { poolSampler: "joint-sim", embedding: "joint" },
    },
  });
  const selector = openSelector(
    file,
    {},
    { query: () => matrix, index: () => matrix, indexItems: () => ({ dataset: "bench", items }) },
  );
  const options = parseServeOptions({
    checkpoint: file,
    index: "bench",
    shots: SHOTS,
    vlm: "openai",
    baseUrls: [url],
    model: "mock-vl",
    ...(inProcess === null ? { clientEmbeddings: true } : { embedModel: inProcess.modelDir }),
    port: 0,
    concurrencyPerEndpoint: 32,
  });
  const builder = new PoolBuilder({ index: items, indexEmbeddings: { joint: matrix }, gemm: gemmScreen });
  builder.prepare(["joint"]);
  return {
    options,
    selection: {
      selector,
      builder,
      table: encodeIndex(selector),
      indexById: new Map(items.map((i) => [i.questionId, i])),
      sampler: selector.sampler,
      k: selector.k,
      seed: 0,
      order: "nearest",
    },
    checkpoint: { file, hash: "bench" },
    kinds: [{ kind: "joint", dim }],
    embedder: inProcess?.embedder ?? null,
    upstream: new Upstream({ baseUrls: [url], model: "mock-vl", concurrencyPerEndpoint: 32 }, 60_000),
    notes: [],
  };
}

/** Request bodies: 256 distinct queries, each with its embedding and a 30 KB image. */
function requestBodies(): string[] {
  const rng = new Rng(26).child("serve-bench-queries");
  const rows = unitRows(rng, 256, DIM);
  const image = Buffer.alloc(IMAGE_BYTES);
  for (let j = 0; j < image.length; j++) image[j] = rng.int(256);
  image.set([0xff, 0xd8, 0xff, 0xe0]);
  const url = `data:image/jpeg;base64,${image.toString("base64")}`;
  return Array.from({ length: 256 }, (_, q) =>
    JSON.stringify({
      model: "mock-vl",
      messages: [
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url } },
            { type: "text", text: queryText(q) },
          ],
        },
      ],
      lever: { embedding: Array.from(rows.subarray(q * DIM, (q + 1) * DIM)) },
    }),
  );
}

/** Request bodies without embeddings, for in-process embedding: 32 decodable 96×72 JPEGs and their questions. */
async function embedBodies(dir: string): Promise<{ bodies: string[]; first: Uint8Array }> {
  const rng = new Rng(27).child("serve-bench-embed");
  const images: Buffer[] = [];
  for (let i = 0; i < 32; i++) {
    const rgb = Uint8ClampedArray.from({ length: 96 * 72 * 3 }, () => rng.int(256));
    const path = join(dir, `query${i}.jpg`);
    await new RawImage(rgb, 96, 72, 3).save(path);
    images.push(readFileSync(path));
  }
  const bodies = Array.from({ length: 256 }, (_, q) =>
    JSON.stringify({
      model: "mock-vl",
      messages: [
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url: `data:image/jpeg;base64,${images[q % 32].toString("base64")}` } },
            { type: "text", text: queryText(q) },
          ],
        },
      ],
    }),
  );
  return { bodies, first: images[0] };
}

/** 1 and 32 clients whose requests carry no embedding: the server embeds them with EMBED_MODEL (index and selector of its width). */
async function inProcessRuns(dir: string, url: string, mock: ChildProcess): Promise<{ dim: number; runs: Scenario[] }> {
  const embedder = await openEmbedder(EMBED_MODEL, ["joint"]);
  const { bodies, first } = await embedBodies(dir);
  const probe = (await embedder.embed([{ image: first, question: queryText(0) }]))[0];
  if (probe instanceof Error) throw probe;
  const dim = (probe.joint as Float32Array).length;
  const app = await startServer(benchSetup(dir, url, { modelDir: EMBED_MODEL, embedder, dim }));
  try {
    await clients(dir, { url: app.url, total: sized(64, 8), width: 32, bodies }); // warm-up
    const one = await scenario(dir, app, mock, 1, Math.min(100, EMBED_REQUESTS), bodies);
    const many = await scenario(dir, app, mock, 32, EMBED_REQUESTS, bodies);
    return { dim, runs: [one, many] };
  } finally {
    await app.close(); // disposes the embedder
  }
}

async function clients(dir: string, job: ClientJob): Promise<Sample[]> {
  const child = fork(join(dir, "clients.cjs"), { stdio: "ignore" });
  child.send(job);
  return new Promise<Sample[]>((resolve) => child.once("message", (m) => resolve(m as Sample[])));
}

/** CPU time (ms) the mock server process has used so far. */
function mockCpu(mock: ChildProcess): Promise<number> {
  mock.send("cpu");
  return new Promise((resolve) => mock.once("message", (m) => resolve((m as { cpu: number }).cpu / 1000)));
}

/** CPU time (ms) this process (the server: every thread, the GEMM's included) has used so far. */
const ownCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const pct = (xs: number[], q: number) =>
  quantileSorted(
    xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b),
    q,
  );

function gc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

interface Scenario {
  width: number;
  samples: Sample[];
  seconds: number;
  cpuMsPerRequest: number;
  mockCpuMsPerRequest: number;
  /** Requests per selection batch (mean). */
  batchSize: number;
}

async function scenario(
  dir: string,
  app: ServeApp,
  mock: ChildProcess,
  width: number,
  total: number,
  bodies: string[],
): Promise<Scenario> {
  const cpu0 = ownCpu();
  const mock0 = await mockCpu(mock);
  const batches0 = app.context.selections.batches;
  const t0 = performance.now();
  const samples = await clients(dir, { url: app.url, total, width, bodies });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = ownCpu() - cpu0;
  const mockMs = (await mockCpu(mock)) - mock0;
  const batchSize = total / (app.context.selections.batches - batches0);
  return { width, samples, seconds, cpuMsPerRequest: cpu / total, mockCpuMsPerRequest: mockMs / total, batchSize };
}

/** The mock upstream path alone: the OpenAI client sending the same kind of 4-shot prompts directly (CPU per request here and in the mock). */
async function upstreamPath(
  setup: ServeSetup,
  mock: ChildProcess,
  total: number,
): Promise<{ clientMs: number; mockMs: number }> {
  const vlm = new OpenAiVlm({
    baseUrls: setup.options.baseUrls as string[],
    model: "mock-vl",
    concurrencyPerEndpoint: 32,
  });
  const index = [...setup.selection.indexById.values()];
  const prompts = Array.from({ length: total }, (_, i) => ({
    demonstrations: [0, 1, 2, 3].map((d) => {
      const item = index[(i * 7 + d * 13) % index.length];
      return { questionId: item.questionId, imagePath: item.imagePath, question: item.question, answer: item.answer };
    }),
    query: {
      questionId: `q${i}`,
      imagePath: index[0].imagePath,
      question: queryText(i),
    },
  }));
  await vlm.generate(prompts.slice(0, 64));
  const cpu0 = ownCpu();
  const mock0 = await mockCpu(mock);
  await vlm.generate(prompts);
  return { clientMs: (ownCpu() - cpu0) / total, mockMs: ((await mockCpu(mock)) - mock0) / total };
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lever-serve-bench-"));
  writeFileSync(join(dir, "clients.cjs"), CLIENT_SCRIPT);
  writeFileSync(join(dir, "mock.mjs"), mockScript(pathToFileURL(MOCK_MODULE).href));
  const mock = fork(join(dir, "mock.mjs"), { stdio: "ignore" });
  const url = await new Promise<string>((resolve) => mock.once("message", (m) => resolve((m as { url: string }).url)));
  try {
    const setup = benchSetup(dir, url);
    const app = await startServer(setup);
    const bodies = requestBodies();
    await clients(dir, { url: app.url, total: sized(256, 8), width: 32, bodies }); // warm-up: JIT, connections, image reads
    const one = await scenario(dir, app, mock, 1, Math.min(300, REQUESTS), bodies);
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const warm = await scenario(dir, app, mock, 32, Math.min(1_000, REQUESTS), bodies);
    gc();
    const heap2k = process.memoryUsage().heapUsed;
    const many = await scenario(dir, app, mock, 32, REQUESTS, bodies);
    gc();
    const heapEnd = process.memoryUsage().heapUsed;
    await app.close();
    const path = await upstreamPath(setup, mock, sized(1_000, 8));
    const embedded = await inProcessRuns(dir, url, mock);
    report([one, warm, many], path, { heap0, heap2k, heapEnd, total: REQUESTS });
    console.log(
      `\nwith in-process embedding (${process.env.LEVER_CLIP_B32 === undefined ? "the tiny CLIP test fixture: decoding, preprocessing and batching, not a real model's cost" : `LEVER_CLIP_B32=${EMBED_MODEL}`}; index 100,000 × ${embedded.dim}-d, the selector at that width; requests carry a 96×72 JPEG and no embedding):`,
    );
    printTable(embedded.runs, true);
  } finally {
    mock.send("close");
    await new Promise((resolve) => mock.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One row per run: p50 / p99 of each step (with the embedding step when `embed`), throughput, CPU, errors. */
function printTable(scenarios: Scenario[], embed: boolean): void {
  const head = embed ? "| embed p50/p99 ms " : "";
  console.log(
    `| clients | requests | req/s | batch ${head}| queue p50/p99 ms | pool p50/p99 | selection p50/p99 | pool+selection p50/p99 | upstream p50/p99 | request p50/p99 | lever CPU ms/req | mock CPU ms/req | errors |`,
  );
  console.log(`|---:|---:|---:|---:|${embed ? "---|" : ""}---|---|---|---|---|---|---:|---:|---:|`);
  for (const s of scenarios) {
    const col = (f: (x: Sample) => number) =>
      `${pct(s.samples.map(f), 0.5).toFixed(2)} / ${pct(s.samples.map(f), 0.99).toFixed(2)}`;
    console.log(
      `| ${s.width} | ${s.samples.length} | ${(s.samples.length / s.seconds).toFixed(0)} | ${s.batchSize.toFixed(1)} | ${embed ? `${col((x) => x.embed)} | ` : ""}${col((x) => x.queue)} | ${col((x) => x.pool)} | ${col((x) => x.select)} | ${col((x) => x.pool + x.select)} | ${col((x) => x.upstream)} | ${col((x) => x.ms)} | ${s.cpuMsPerRequest.toFixed(3)} | ${s.mockCpuMsPerRequest.toFixed(3)} | ${s.samples.filter((x) => x.status !== 200).length} |`,
    );
  }
  const errors = new Map<string, number>();
  for (const s of scenarios)
    for (const x of s.samples) if (x.error) errors.set(x.error, (errors.get(x.error) ?? 0) + 1);
  for (const [message, n] of errors) console.log(`error ×${n}: ${message}`);
}

function report(
  scenarios: Scenario[],
  path: { clientMs: number; mockMs: number },
  heap: { heap0: number; heap2k: number; heapEnd: number; total: number },
): void {
  console.log(
    `index ${INDEX.toLocaleString("en")} × ${DIM}-d (joint-sim), K ${K}, ${SHOTS} shots, seeded default selector; mock vLLM (zero latency) and the clients in their own processes; CPU = process CPU time (user + system); load ${loadAverage()}`,
  );
  printTable(scenarios, false);
  const at32 = scenarios[2];
  const both = at32.samples.map((x) => x.pool + x.select);
  const p50 = pct(both, 0.5);
  const p99 = pct(both, 0.99);
  const upstreamCpu = path.clientMs + path.mockMs;
  const overhead = at32.cpuMsPerRequest - path.clientMs;
  const growth = (heap.heapEnd - heap.heap2k) / 1024 / 1024;
  const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
  console.log(
    `mock upstream path alone (the OpenAI client sending 4-shot prompts directly): client ${path.clientMs.toFixed(3)} + mock ${path.mockMs.toFixed(3)} = ${upstreamCpu.toFixed(3)} CPU ms/request`,
  );
  console.log(`targets at 32 concurrent clients:`);
  console.log(`- pool + selection p50 ${p50.toFixed(2)} ms ≤ 5 ms: ${verdict(p50 <= 5)}`);
  console.log(`- pool + selection p99 ${p99.toFixed(2)} ms ≤ 20 ms: ${verdict(p99 <= 20)}`);
  const waited = at32.samples.map((x) => x.queue + x.pool + x.select);
  console.log(
    `  (with the wait for the batch to start: p50 ${pct(waited, 0.5).toFixed(2)} ms, p99 ${pct(waited, 0.99).toFixed(2)} ms; a batch of ${at32.batchSize.toFixed(1)} requests on average)`,
  );
  console.log(
    `- lever's own CPU per request (server process ${at32.cpuMsPerRequest.toFixed(3)} CPU ms − the client's forwarding ${path.clientMs.toFixed(3)} ms = ${overhead.toFixed(3)} ms) ≤ 10 % of the upstream path's ${upstreamCpu.toFixed(3)} ms: ${((100 * overhead) / upstreamCpu).toFixed(0)} %, ${verdict(overhead <= 0.1 * upstreamCpu)}`,
  );
  console.log(
    `- memory: heap ${(heap.heap0 / 1048576).toFixed(0)} MB before, ${(heap.heap2k / 1048576).toFixed(0)} MB after 1,000 requests, ${(heap.heapEnd / 1048576).toFixed(0)} MB after ${heap.total.toLocaleString("en")} more (after GC): growth ${growth.toFixed(1)} MB, ${verdict(growth < 32)} (bounded: < 32 MB)`,
  );
}
