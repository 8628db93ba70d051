/**
 * Pointer-selector throughput (d = 512, H = 256, V4-1 gate, float32, dropout on):
 *  - one training step = pack the batch + forward + backward + clip + AdamW, for B queries × G
 *    trajectories, K candidates, 1 or 3 cross-attention layers, 4 shots;
 *  - inference: greedy 4-shot decoding of 5,000 queries with K = 64 pools drawn from a 9,009-row
 *    index (OKVQA train size), including the one-off projection of the index.
 * Median of ≥ 10 timed runs after warm-up; rows/s = trajectories per second. The key configuration
 * (8×16, K = 32, 3 layers) and inference are re-run in a child process with LEVER_NATIVE=0 to
 * measure the TypeScript-only fallback. Then 4-shot inference with the candidate options (features +
 * identity, + pool attention) against the same model without them (bench/candidate-options.ts).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { SelectorConfigSchema } from "../src/selector/config.js";
import { predict } from "../src/selector/decode.js";
import { type EmbeddingTable, resolvePool } from "../src/selector/inputs.js";
import { PointerSelector } from "../src/selector/model.js";
import { initParams } from "../src/selector/params.js";
import { kernelPath } from "../src/tensor/kernels.js";
import type { QueryGroup } from "../src/train/data/groups.js";
import { OptimSchema, train } from "../src/train/loop/loop.js";
import { sftObjective } from "../src/train/objective/sft.js";
import { Rng } from "../src/util/rng.js";
import { candidateInferenceS, ratioTable } from "./candidate-options.js";
import { median, SMOKE, sized } from "./common.js";

const D = sized(512, 32);
const H = sized(256, 16);
const SHOTS = 4;
/** Timed runs per measurement. */
const RUNS = sized(10, 1);
/** The key training configuration, also timed on the TypeScript-only fallback. */
const KEY = sized({ B: 8, G: 16, K: 32, layers: 3 }, { B: 2, G: 2, K: 8, layers: 1 });

function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/** Random rows, each named by its number. */
function table(rows: number, seed: number): EmbeddingTable {
  const rng = new Rng(seed);
  const data = new Float32Array(rows * D);
  for (let i = 0; i < data.length; i++) data[i] = rng.normal() * 0.05;
  return { dim: D, data, rowOf: new Map(Array.from({ length: rows }, (_, r) => [String(r), r])) };
}

function model(layers: number): PointerSelector {
  const config = SelectorConfigSchema.parse({ d: D, hidden: H, layers, shots: SHOTS, stateUpdate: "gate" });
  return new PointerSelector(config, initParams(config, 1), "float32");
}

/** Milliseconds per training step (median) for B queries × G trajectories. */
export async function measureStep(B: number, G: number, K: number, layers: number, runs = RUNS): Promise<number> {
  const rng = new Rng(7);
  const emb = table(B * K + B, 3);
  const sources = { query: emb, index: emb };
  const groups: QueryGroup[] = Array.from({ length: B }, (_, b) => ({
    ...resolvePool(
      sources,
      String(B * K + b),
      Array.from({ length: K }, (_, k) => String(b * K + k)),
    ),
    trajectories: Array.from({ length: G }, () => Int32Array.from(rng.sampleWithoutReplacement(K, SHOTS))),
    weights: Array(G).fill(1),
    best: 0,
  }));
  const m = model(layers);
  const data = { train: groups, val: [], sources };
  const objective = sftObjective(m, data, { labelSmoothing: 0 }, B);
  const times: number[] = [];
  const optim = OptimSchema.parse({ epochs: runs + 3, batchQueries: B, lr: 1e-4 });
  let last = performance.now();
  // One batch per epoch: each epoch is exactly one optimiser step; the first 3 are warm-up.
  await train(m, groups, objective, optim, 1, {
    onStep: (info) => {
      const now = performance.now();
      if (info.epoch >= 3) times.push(now - last);
      last = now;
    },
  });
  return median(times);
}

/** Seconds (median) to greedily decode 5,000 queries × K = 64 pools from a 9,009-row index. */
export function measureInference(layers: number, runs = RUNS): number {
  const Q = sized(5000, 20);
  const K = sized(64, 8);
  const N = sized(9009, 50);
  const rng = new Rng(11);
  const index = table(N, 5).data;
  const queries = table(Q, 6).data;
  const slots = new Int32Array(Q * K);
  for (let q = 0; q < Q; q++) slots.set(rng.sampleWithoutReplacement(N, K), q * K);
  const m = model(layers);
  const input = { queries, table: index, slots, K };
  predict(m, input, { shots: SHOTS });
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    predict(m, input, { shots: SHOTS });
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

export async function run(): Promise<void> {
  const path = kernelPath();
  console.log(`kernel path: ${path}; d=${D}, H=${H}, gate, float32, ${SHOTS} shots, median of 10 after 3 warm-up`);
  console.log("| B×G | K | layers | step ms | rows/s | peak RSS MB |");
  console.log("|---|---|---|---|---|---|");
  const key = { ms: 0 };
  for (const [B, G] of sized(
    [
      [8, 16],
      [32, 32],
    ],
    [[KEY.B, KEY.G]],
  )) {
    for (const K of sized([32, 64], [KEY.K])) {
      for (const layers of sized([1, 3], [KEY.layers])) {
        const ms = await measureStep(B, G, K, layers);
        if (B === KEY.B && G === KEY.G && K === KEY.K && layers === KEY.layers) key.ms = ms;
        console.log(
          `| ${B}×${G} | ${K} | ${layers} | ${ms.toFixed(1)} | ${Math.round((B * G) / (ms / 1000))} | ${peakRssMb().toFixed(0)} |`,
        );
      }
    }
  }
  console.log("\n| inference: 5,000 queries, K=64, greedy 4 shots | seconds | queries/s | peak RSS MB |");
  console.log("|---|---|---|---|");
  let inf3 = 0;
  for (const layers of sized([1, 3], [KEY.layers])) {
    const s = measureInference(layers);
    if (layers === KEY.layers) inf3 = s;
    console.log(`| ${layers} layer(s) | ${s.toFixed(3)} | ${Math.round(5000 / s)} | ${peakRssMb().toFixed(0)} |`);
  }
  console.log("\ncandidate options: greedy 4-shot inference of 2,000 queries, K=64, 9,009-row index\n");
  const options = SMOKE ? candidateInferenceS(10, 1) : candidateInferenceS();
  console.log(ratioTable("s", options));
  const ratio = options.cpu[1] / options.cpu[0];
  console.log(
    `verdict: the default features cost ${ratio.toFixed(2)}× the CPU time of inference without — ` +
      `${ratio <= 1.3 ? "within" : "OVER"} the 1.3× target (issue 17)`,
  );
  if (path === "typescript") return;
  // TypeScript-only fallback in a child process (the kernel choice is made at load time).
  const here = fileURLToPath(import.meta.url);
  const child = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const m = await import(${JSON.stringify(`file://${here}`)}); console.log(JSON.stringify({ path: (await import(${JSON.stringify(`file://${here.replace(/bench\/selector\.bench\.js$/, "src/tensor/kernels.js")}`)})).kernelPath(), step: await m.measureStep(${KEY.B}, ${KEY.G}, ${KEY.K}, ${KEY.layers}), inference: m.measureInference(${KEY.layers}, ${sized(3, 1)}) }));`,
    ],
    { env: { ...process.env, LEVER_NATIVE: "0" }, encoding: "utf8" },
  );
  if (child.status !== 0) {
    if (SMOKE) throw new Error(`TS-only fallback run failed: ${child.stderr}`);
    console.log(`TS-only fallback run failed: ${child.stderr}`);
    return;
  }
  const ts = JSON.parse(child.stdout.trim().split("\n").pop() ?? "{}") as {
    path: string;
    step: number;
    inference: number;
  };
  console.log(`\nTS-only fallback (LEVER_NATIVE=0, kernel path ${ts.path}):`);
  console.log(`  8×16, K=32, 3 layers step: ${ts.step.toFixed(1)} ms (${(ts.step / key.ms).toFixed(1)}× native)`);
  console.log(
    `  inference 5,000 queries, 3 layers: ${ts.inference.toFixed(3)} s (${(ts.inference / inf3).toFixed(1)}× native)`,
  );
}
