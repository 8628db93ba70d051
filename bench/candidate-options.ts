/**
 * Cost of the selector's candidate options (docs/selector.md, "Candidate features, identity, pool
 * attention"), shared by bench/train.bench.ts (a training step) and bench/selector.bench.ts (4-shot
 * inference): the same model (d = 512, H = 256, 1 layer, gate, float32, K = 64 pools drawn from a
 * 9,009-row index, OKVQA train size) without options, with features [vote, agreement] + identity
 * (a 9,009-row item table), and with those + one pool-attention layer. The step is measured at the
 * model level (encode + teacher forcing + SFT loss + backward + clip + AdamW over all parameters,
 * the identity table included), with the features (a column per CANDIDATE_FEATURES, as the data side
 * packs them) and items passed as `SelectorInput` fields.
 */
import {
  CANDIDATE_FEATURES,
  ModelOptionsSchema,
  type SelectorConfigInput,
  SelectorConfigSchema,
} from "../src/selector/config.js";
import { predict } from "../src/selector/decode.js";
import { PointerSelector, type SelectorInput, sftLoss } from "../src/selector/model.js";
import { initParams } from "../src/selector/params.js";
import { AdamW, clipGradNorm } from "../src/tensor/optim.js";
import { Rng } from "../src/util/rng.js";
import { median, sized } from "./common.js";

const D = sized(512, 32);
const H = sized(256, 16);
const SHOTS = 4;
const K = sized(64, 8);
const INDEX_ROWS = sized(9009, 50);

/** The features a training run gets by default (the schema's, so the bench measures what a run uses). */
const FEATURES = ModelOptionsSchema.parse({}).features;

export const VARIANTS: { name: string; options: Partial<SelectorConfigInput> }[] = [
  { name: "no options", options: {} },
  { name: `features [${FEATURES.join(", ")}] (the training default)`, options: { features: FEATURES } },
  {
    name: `features [${FEATURES.join(", ")}] + identity`,
    options: { features: FEATURES, identity: "embedding", indexItems: INDEX_ROWS },
  },
  {
    name: "features + identity + pool attention (1 layer)",
    options: { features: FEATURES, identity: "embedding", indexItems: INDEX_ROWS, poolAttention: 1 },
  },
];

function selector(options: Partial<SelectorConfigInput>): PointerSelector {
  const config = SelectorConfigSchema.parse({ d: D, hidden: H, layers: 1, shots: SHOTS, ...options });
  const values = initParams(config, 1);
  // Nonzero values for the zero-initialised tensors, so no multiplication by zero is cheaper than in training.
  const rng = new Rng(2);
  for (const name of ["feature_weight", "feature_proj.weight", "item_emb.weight", "item_bias"]) {
    const v = values.get(name);
    if (v) for (let i = 0; i < v.length; i++) v[i] = 0.01 * rng.normal();
  }
  return new PointerSelector(config, values, "float32");
}

/**
 * Q queries with K-slot pools from the index, per-slot features, and items = the rows' index numbers.
 * `compact`: packed as the training stages pack a batch (src/selector/inputs.ts), a table of the
 * batch's candidate rows; otherwise the slots point into the whole index (evaluation, `predict`).
 */
function batch(Q: number, seed: number, index: Float32Array, compact: boolean): SelectorInput {
  const rng = new Rng(seed);
  const items = new Int32Array(Q * K);
  for (let q = 0; q < Q; q++) items.set(rng.sampleWithoutReplacement(INDEX_ROWS, K), q * K);
  let table = index;
  if (compact) {
    table = new Float32Array(Q * K * D);
    items.forEach((row, s) => {
      table.set(index.subarray(row * D, (row + 1) * D), s * D);
    });
  }
  return {
    queries: Float32Array.from({ length: Q * D }, () => 0.05 * rng.normal()),
    table,
    slots: compact ? Int32Array.from({ length: Q * K }, (_, s) => s) : Int32Array.from(items),
    K,
    features: Float32Array.from({ length: Q * K * CANDIDATE_FEATURES.length }, () => rng.next()),
    items,
  };
}

function indexTable(): Float32Array {
  const rng = new Rng(5);
  return Float32Array.from({ length: INDEX_ROWS * D }, () => 0.05 * rng.normal());
}

/** A training-step runner for one variant: each call times one step (wall and process CPU ms). */
function stepRunner(options: Partial<SelectorConfigInput>, B: number, G: number, index: Float32Array) {
  const m = selector(options);
  const optimizer = new AdamW([{ params: m.parameters(), lr: 1e-4 }]);
  const rng = new Rng(7);
  const labels = new Int32Array(B * G * SHOTS);
  for (let r = 0; r < B * G; r++) labels.set(rng.sampleWithoutReplacement(K, SHOTS), r * SHOTS);
  const weights = new Float32Array(B * G).fill(1);
  let i = 0;
  return (): { wall: number; cpu: number } => {
    const input = batch(B, 100 + i, index, true);
    const dropout = rng.child(`step${i++}`);
    return timedMs(() => {
      optimizer.zeroGrad();
      const enc = m.encode(input, { training: true, rng: dropout });
      sftLoss(m.teacherForce(enc, G, labels, SHOTS), labels, weights, 0).backward();
      clipGradNorm(m.parameters(), 1);
      optimizer.step();
    });
  };
}

/** Wall and process CPU milliseconds of one call. */
function timedMs(f: () => void): { wall: number; cpu: number } {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  f();
  const c = process.cpuUsage(c0);
  return { wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 };
}

/**
 * The runners take turns (`warmup` rounds, then `runs` timed), so a change of machine load during the
 * measurement hits every variant alike; per runner the median wall and CPU time.
 */
function inTurn(
  runners: readonly (() => { wall: number; cpu: number })[],
  warmup: number,
  runs: number,
): { wall: number[]; cpu: number[] } {
  const wall: number[][] = runners.map(() => []);
  const cpu: number[][] = runners.map(() => []);
  for (let i = 0; i < warmup + runs; i++)
    runners.forEach((run, v) => {
      const t = run();
      if (i >= warmup) {
        wall[v].push(t.wall);
        cpu[v].push(t.cpu);
      }
    });
  return { wall: wall.map(median), cpu: cpu.map(median) };
}

/**
 * Per variant the median wall and CPU milliseconds of a training step, B queries × G trajectories.
 * The variants take their steps in turn (3 warm-up rounds, then `runs`), so a change of machine load
 * during the measurement hits all of them alike.
 */
export function candidateStepMs(B: number, G: number, runs = 10): { wall: number[]; cpu: number[] } {
  const index = indexTable();
  return inTurn(
    VARIANTS.map((v) => stepRunner(v.options, B, G, index)),
    3,
    runs,
  );
}

/**
 * Per variant the median seconds (wall and process CPU) to greedily decode `Q` queries × K = 64
 * (4 shots), the index projected once per call; variants in turn (1 warm-up round) as for the step.
 */
export function candidateInferenceS(Q = 2000, runs = 5): { wall: number[]; cpu: number[] } {
  const input = batch(Q, 11, indexTable(), false);
  const ms = inTurn(
    VARIANTS.map((v) => selector(v.options)).map((m) => () => timedMs(() => predict(m, input, { shots: SHOTS }))),
    1,
    runs,
  );
  return { wall: ms.wall.map((t) => t / 1000), cpu: ms.cpu.map((t) => t / 1000) };
}

/** One table row per variant: wall and CPU time and their ratios to the first (no options). */
export function ratioTable(unit: string, t: { wall: number[]; cpu: number[] }): string {
  const digits = unit === "ms" ? 1 : 3;
  const lines = [`| variant | wall ${unit} | × no options | CPU ${unit} | × no options |`, "|---|---|---|---|---|"];
  VARIANTS.forEach((v, i) => {
    const cells = [t.wall[i].toFixed(digits), (t.wall[i] / t.wall[0]).toFixed(2)];
    cells.push(t.cpu[i].toFixed(digits), (t.cpu[i] / t.cpu[0]).toFixed(2));
    lines.push(`| ${v.name} | ${cells.join(" | ")} |`);
  });
  return lines.join("\n");
}
