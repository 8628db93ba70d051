/**
 * RL training throughput of the pointer selector (d = 512, H = 256, 1 layer, gate state update,
 * float32, 4 shots), through `runTraining` + `grpoObjective` exactly as `lever train grpo` uses them:
 *  (a) offline GRPO: one epoch over 800 training queries × 15 trajectories, K = 64 (a held-out 10 %
 *      validated after the epoch, as the stage does by default), batches of 32 queries; the behaviour
 *      refresh at the epoch start and the reference log-probabilities (once per run) reported apart.
 *      Target: the epoch (refresh + steps + validation) ≤ 1.5 s (issue 26; 8 s before), printed with a verdict.
 *  (b) online GRPO: one iteration = one `prepare` (sample 8 trajectories per query from the policy,
 *      answer and score them with the simulator) + one update, over 256 queries with K = 64 pools on
 *      a synthetic world (`lever data synth`, 4,000 train questions, 512-dim embeddings), cache off
 *      (the product default for the simulator).
 * Phases are measured from outside src/: a wrapper Objective times the loop's calls to it, the
 * loss's `backward` is wrapped on the returned tensor, the optimiser (clip + AdamW step) is the time
 * from the end of backward to `afterStep`, and the VLM is wrapped around the backend. Best and median
 * of several runs after a smaller warm-up run; the load average is printed with the numbers. The
 * SHA-256 of the trained weights is printed so code changes can be checked to leave results bit-identical.
 *  (c) the candidate options (features + identity, pool attention): one training step at the model
 *      level against the same step without them (bench/candidate-options.ts); `LEVER_BENCH_TRAIN=features`
 *      runs only this part.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EmbeddingMatrix } from "../src/data/embeddings.js";
import type { VqaItem } from "../src/data/item.js";
import { createVlm } from "../src/icl/backend.js";
import { candidateData, voteWeightingOf } from "../src/icl/candidate-data.js";
import { buildPoolSet } from "../src/pools/artifact.js";
import { renderTable } from "../src/report/table.js";
import { SelectorConfigSchema } from "../src/selector/config.js";
import { resolvePool, type SelectorSources, selectorSources } from "../src/selector/inputs.js";
import { PointerSelector } from "../src/selector/model.js";
import { importSynthSplit } from "../src/sim/ingest.js";
import { writeSynthDataset } from "../src/sim/synth.js";
import { loadDatasetEmbedding } from "../src/store/ingest/embeddings.js";
import { Workspace } from "../src/store/workspace.js";
import { vqaAnswering } from "../src/task/vqa.js";
import { kernelPath } from "../src/tensor/kernels.js";
import type { RlGroup } from "../src/train/data/rl-groups.js";
import type { Objective, StepContext } from "../src/train/loop/loop.js";
import { runTraining, seededStart } from "../src/train/loop/run.js";
import { grpoObjective } from "../src/train/objective/grpo.js";
import { resolveModeDefaults } from "../src/train/objective/grpo-settings.js";
import { OnlineSampler, OnlineSchema } from "../src/train/objective/online.js";
import { RlValidator } from "../src/train/objective/rl-validate.js";
import { GrpoStageConfigSchema, resolveSettings } from "../src/train/stage/rl-settings.js";
import { Rng } from "../src/util/rng.js";
import { VlmSettingsSchema } from "../src/vlm/settings.js";
import type { Vlm } from "../src/vlm/types.js";
import { candidateStepMs, ratioTable } from "./candidate-options.js";
import { loadAverage, median, sized } from "./common.js";

const D = sized(512, 32);
const H = sized(256, 16);
const SHOTS = 4;
const K = sized(64, 8);
const TRAIN_QUERIES = sized(800, 18);
const TRAJECTORIES = sized(15, 4);
const VAL_FRACTION = 0.1;
const INDEX_ROWS = sized(9009, 50); // OKVQA train size
const ONLINE_QUERIES = sized(256, 8);
const ONLINE_SAMPLES = 8;
const TARGET_S = 1.5;
const RUNS = Number(process.env.LEVER_BENCH_RUNS ?? sized(3, 1));

/** The stage's GRPO config (product defaults, best-epoch metric resolved as the stage does) with the benchmark's architecture and one epoch. */
function stageConfig(batchQueries: number) {
  return resolveSettings({
    stage: "grpo",
    config: GrpoStageConfigSchema.parse({
      model: { hidden: H, layers: 1, stateUpdate: "gate" },
      optim: { epochs: 1, batchQueries },
      data: { valFraction: VAL_FRACTION },
      validation: { answers: false },
    }),
  }).config;
}

/** Process CPU time (all threads: JavaScript, GEMM threads, GC) in ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Accumulated wall and CPU time per phase (ms). */
class Phases {
  readonly wall = new Map<string, number>();
  readonly cpu = new Map<string, number>();
  add(name: string, wallMs: number, cpu = 0): void {
    this.wall.set(name, (this.wall.get(name) ?? 0) + wallMs);
    this.cpu.set(name, (this.cpu.get(name) ?? 0) + cpu);
  }
  get(name: string): number {
    return this.wall.get(name) ?? 0;
  }
  getCpu(name: string): number {
    return this.cpu.get(name) ?? 0;
  }
  async time<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    const t0 = performance.now();
    const c0 = cpuMs();
    try {
      return await fn();
    } finally {
      this.add(name, performance.now() - t0, cpuMs() - c0);
    }
  }
  timeSync<T>(name: string, fn: () => T): T {
    const t0 = performance.now();
    const c0 = cpuMs();
    try {
      return fn();
    } finally {
      this.add(name, performance.now() - t0, cpuMs() - c0);
    }
  }
}

/**
 * Wraps the objective so the loop's calls are timed into `phases()` (the current epoch's): `prepare`,
 * `startEpoch` (behaviour refresh), `batchLoss` (forward), the returned loss's `backward`, clip +
 * AdamW (end of backward → `afterStep`) and `validate`. The policy's encoding and teacher forcing
 * are timed inside the forward too.
 */
function instrument(inner: Objective<RlGroup>, model: PointerSelector, phases: () => Phases): Objective<RlGroup> {
  let backwardEnd = { wall: 0, cpu: 0 };
  let inForward = false;
  for (const method of ["encode", "teacherForce"] as const) {
    const original = model[method].bind(model) as (...args: unknown[]) => unknown;
    (model as unknown as Record<string, unknown>)[method] = (...args: unknown[]) =>
      inForward ? phases().timeSync(`forward.${method}`, () => original(...args)) : original(...args);
  }
  const prepare = inner.prepare?.bind(inner);
  return {
    ...inner,
    ...(prepare ? { prepare: (groups, ctx) => phases().time("prepare", () => prepare(groups, ctx)) } : {}),
    startEpoch: (epoch) => phases().time("refresh", () => inner.startEpoch?.(epoch)),
    batchLoss(groups, ctx) {
      inForward = true;
      const out = phases().timeSync("forward", () => inner.batchLoss(groups, ctx));
      inForward = false;
      const backward = out.loss.backward.bind(out.loss);
      out.loss.backward = (options) => {
        phases().timeSync("backward", () => backward(options));
        backwardEnd = { wall: performance.now(), cpu: cpuMs() };
      };
      return out;
    },
    afterStep(metrics) {
      phases().add("optimiser", performance.now() - backwardEnd.wall, cpuMs() - backwardEnd.cpu);
      inner.afterStep?.(metrics);
    },
    validate: (epoch) => phases().time("validation", () => inner.validate(epoch)),
  };
}

function weightsHash(model: PointerSelector): string {
  const hash = createHash("sha256");
  for (const p of model.parameters()) hash.update(new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength));
  return hash.digest("hex").slice(0, 16);
}

/**
 * What a training run shows the stage's model (src/train/inputs.ts): with the training defaults the
 * candidates' answer features (vote, agreement) from the index items and the index's mean row (center
 * "index-mean"). The vote feature weighs by max(0, cos) (ρ = 0) where a run first calibrates ρ on the
 * index's answers: the same work per step.
 */
function trainingSources(query: EmbeddingMatrix, index: EmbeddingMatrix, items: readonly VqaItem[]): SelectorSources {
  const model = stageConfig(32).model;
  const weighting = voteWeightingOf({ voteScale: model.voteScale ?? 0 });
  const candidates =
    model.features.length > 0 ? candidateData("bench", index, items, weighting, model.features) : undefined;
  return selectorSources(query, index, candidates, { center: model.center === "index-mean" });
}

/** Index items with 10 annotator answers each, drawn from a few words (the vote and agreement features read them). */
function answeredItems(ids: readonly string[], seed: number): VqaItem[] {
  const rng = new Rng(seed);
  const words = ["yes", "no", "two", "red", "dog", "tennis"];
  return ids.map((questionId) => {
    const answers = Array.from({ length: 10 }, () => ({ answer: words[rng.int(words.length)] }));
    return {
      questionId,
      imageId: questionId,
      question: "",
      answers,
      answer: answers[0].answer,
      questionType: "",
      answerType: "other",
      imagePath: null,
    };
  });
}

/** Unit rows named `id(row)`. */
function randomTable(rows: number, seed: number, id: (row: number) => string): EmbeddingMatrix {
  const rng = new Rng(seed);
  const data = new Float32Array(rows * D);
  for (let r = 0; r < rows; r++) {
    let norm = 0;
    for (let i = 0; i < D; i++) {
      const v = rng.normal();
      data[r * D + i] = v;
      norm += v * v;
    }
    for (let i = 0; i < D; i++) data[r * D + i] /= Math.sqrt(norm);
  }
  return { dim: D, data, ids: Array.from({ length: rows }, (_, r) => id(r)) };
}

const queryId = (q: number) => String(100000 + q);

/** `queries` groups with K-candidate pools and distinct trajectories with continuous (never tied) rewards. */
function offlineGroups(queries: number, sources: SelectorSources): RlGroup[] {
  const rng = new Rng(17);
  const indexRows = sources.index.data.length / D;
  return Array.from({ length: queries }, (_, q) => {
    const seen = new Set<string>();
    const trajectories: Int32Array[] = [];
    while (trajectories.length < TRAJECTORIES) {
      const t = Int32Array.from(rng.sampleWithoutReplacement(K, SHOTS));
      if (!seen.has(t.join())) {
        seen.add(t.join());
        trajectories.push(t);
      }
    }
    const rewards = trajectories.map(() => 2 * rng.next());
    const pool = rng.sampleWithoutReplacement(indexRows, K).map(String);
    return {
      ...resolvePool(sources, queryId(q), pool),
      trajectories,
      weights: trajectories.map(() => 1),
      rewards,
      methods: trajectories.map(() => "sample"),
      best: rewards.reduce((b, r, i) => (r > rewards[b] ? i : b), 0),
    };
  });
}

interface OfflineRun {
  /** Per epoch: its phases, with "epoch" = first startEpoch to the end of validation. */
  epochs: Phases[];
  /** Once per run: reference log-probabilities, validator setup, the whole runTraining call. */
  once: Phases;
  hash: string;
  steps: number;
}

async function offlineRun(
  trainQueries: number,
  epochs: number,
  sources: SelectorSources,
  dir: string,
): Promise<OfflineRun> {
  const groups = offlineGroups(Math.round(trainQueries / (1 - VAL_FRACTION)), sources);
  const config = { ...stageConfig(32) };
  config.optim = { ...config.optim, epochs };
  const initial = seededStart(SelectorConfigSchema.parse({ ...config.model, d: D, shots: SHOTS }), config.seed);
  const start = new PointerSelector(initial.config, initial.values, config.dtype);
  const once = new Phases();
  const perEpoch = Array.from({ length: epochs }, () => new Phases());
  let current = 0;
  let epochStart = { wall: 0, cpu: 0 };
  let steps = 0;
  let trained: PointerSelector | null = null;
  const result = await once.time("run", () =>
    runTraining<RlGroup>({
      stage: "grpo",
      groups,
      valFraction: config.data.valFraction,
      seed: config.seed,
      dtype: config.dtype,
      optim: config.optim,
      start: initial,
      objective: (model, data) => {
        trained = model;
        const validator = once.timeSync(
          "validator setup",
          () =>
            new RlValidator(
              { groups: data.val, sources, shots: SHOTS, batchQueries: config.optim.batchQueries },
              start,
            ),
        );
        const objData = { train: data.train, sources, batchQueries: config.optim.batchQueries, validator };
        const inner = once.timeSync("reference", () => grpoObjective(model, objData, config, start));
        const timed = instrument(inner, model, () => perEpoch[current]);
        return {
          ...timed,
          startEpoch: (epoch: number) => {
            current = epoch;
            epochStart = { wall: performance.now(), cpu: cpuMs() };
            return timed.startEpoch?.(epoch);
          },
          validate: async (epoch: number) => {
            const metrics = await timed.validate(epoch);
            perEpoch[epoch].add("epoch", performance.now() - epochStart.wall, cpuMs() - epochStart.cpu);
            return metrics;
          },
        };
      },
      checkpointDir: dir,
      checkpoint: { trainedK: K, shots: SHOTS, provenance: {} },
      onStep: () => {
        steps++;
      },
      now: () => "bench",
    }),
  );
  if (result.split.train !== trainQueries) throw new Error(`expected ${trainQueries} training queries`);
  return { epochs: perEpoch, once, hash: weightsHash(trained as unknown as PointerSelector), steps: steps / epochs };
}

/** One row per phase: wall time best and median over the runs, share of the total, median CPU time. */
function phaseTable(rows: [string, (p: Phases) => number, (p: Phases) => number][], runs: Phases[]): string {
  const fmt = (ms: number) => (ms / 1000).toFixed(2);
  const total = median(runs.map((p) => p.get("epoch")));
  return renderTable(
    [
      { header: "phase" },
      { header: "best s", align: "right" },
      { header: "median s", align: "right" },
      { header: "share", align: "right" },
      { header: "CPU s", align: "right" },
    ],
    rows.map(([name, wall, cpu]) => {
      const ms = runs.map(wall);
      return [
        name,
        fmt(Math.min(...ms)),
        fmt(median(ms)),
        `${((100 * median(ms)) / total).toFixed(0)} %`,
        fmt(median(runs.map(cpu))),
      ];
    }),
  );
}

/** A phase's wall and CPU time, and derived rows (differences of phases). */
const phase = (name: string): [(p: Phases) => number, (p: Phases) => number] => [
  (p) => p.get(name),
  (p) => p.getCpu(name),
];
const rest = (whole: string, parts: string[]): [(p: Phases) => number, (p: Phases) => number] => [
  (p) => p.get(whole) - parts.reduce((s, n) => s + p.get(n), 0),
  (p) => p.getCpu(whole) - parts.reduce((s, n) => s + p.getCpu(n), 0),
];

export async function offline(): Promise<void> {
  const index = randomTable(INDEX_ROWS, 5, String);
  const sources = trainingSources(
    randomTable(Math.round(TRAIN_QUERIES / (1 - VAL_FRACTION)), 3, queryId),
    index,
    answeredItems(index.ids, 6),
  );
  const dir = mkdtempSync(join(tmpdir(), "lever-bench-train-"));
  try {
    await offlineRun(sized(96, TRAIN_QUERIES), 2, sources, dir); // warm-up (JIT, kernels)
    const runs: OfflineRun[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await offlineRun(TRAIN_QUERIES, 2, sources, dir));
    const steps = runs[0].steps;
    const rows = (epoch: number): [string, (p: Phases) => number, (p: Phases) => number][] => [
      [
        epoch === 0 ? "behaviour refresh (= reference: reused)" : "behaviour refresh (log-probs of all trajectories)",
        ...phase("refresh"),
      ],
      [`forward (${steps} steps)`, ...phase("forward")],
      ["  of which encode", ...phase("forward.encode")],
      ["  of which teacher forcing", ...phase("forward.teacherForce")],
      [
        "  of which batch, log-probs, loss, diagnostics",
        ...rest("forward", ["forward.encode", "forward.teacherForce"]),
      ],
      ["backward", ...phase("backward")],
      ["optimiser (clip + AdamW)", ...phase("optimiser")],
      ["validation (valRce + greedy, 89 queries)", ...phase("validation")],
      [
        "loop (shuffle, lr, zeroGrad, metrics)",
        ...rest("epoch", ["refresh", "forward", "backward", "optimiser", "validation"]),
      ],
      ["epoch", ...phase("epoch")],
    ];
    console.log(
      `kernel path: ${kernelPath()}; d=${D}, H=${H}, 1 layer, gate, float32, ${SHOTS} shots, K=${K}; ` +
        `${TRAIN_QUERIES} train queries × ${TRAJECTORIES} trajectories, batches of 32; ` +
        `best/median of ${RUNS} runs after a warm-up; CPU = process CPU time (all threads)`,
    );
    for (const epoch of [0, 1]) {
      console.log(
        epoch === 0
          ? "\n(a) offline GRPO, epoch 1 (the behaviour snapshot equals the reference: its log-probs are reused)\n"
          : "\n(a) offline GRPO, epoch 2 (the behaviour refresh recomputes the log-probs of all trajectories)\n",
      );
      console.log(
        phaseTable(
          rows(epoch),
          runs.map((r) => r.epochs[epoch]),
        ),
      );
    }
    const onceMedian = (name: string) => `${(median(runs.map((r) => r.once.get(name))) / 1000).toFixed(2)} s`;
    console.log(
      `\nonce per run: reference log-probs ${onceMedian("reference")}, validator setup (starting model's greedy ` +
        `choices) ${onceMedian("validator setup")}; the whole 2-epoch runTraining incl. checkpoints ${onceMedian("run")}`,
    );
    console.log(`weights after 2 epochs: sha256 ${[...new Set(runs.map((r) => r.hash))].join(", ")}`);
    const worst = runs.map((r) => Math.max(r.epochs[0].get("epoch"), r.epochs[1].get("epoch")) / 1000);
    console.log(
      `verdict: an epoch with its refresh takes ${Math.min(...worst).toFixed(2)} s best, ${median(worst).toFixed(2)} s median — ` +
        `${median(worst) <= TARGET_S ? "PASS" : "FAIL"} against the ${TARGET_S} s target (load average ${loadAverage()})`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A synthetic world in a workspace: train split, joint embeddings (512-d), pools of K = 64. */
function simSetup(dir: string) {
  const out = join(dir, "synth");
  const wsDir = join(dir, "ws");
  writeSynthDataset({
    out,
    params: { ...sized({ trainItems: 4000 }, { trainItems: 100, valItems: 10 }), embedding: { dim: D } },
    images: true,
  });
  const ws = Workspace.open(wsDir);
  importSynthSplit(ws, out, "train");
  const items = ws.loadItems("train");
  const joint = loadDatasetEmbedding(ws, "train", "joint");
  const pools = buildPoolSet({
    queryDataset: "train",
    queries: items,
    indexDataset: "train",
    index: items,
    pool: { sampler: "random" },
    k: K,
    seed: 0,
    queryEmbeddings: { joint },
    indexEmbeddings: { joint },
  });
  return { ws, items, pools, sources: trainingSources(joint, joint, items), worldFile: join(out, "world.json") };
}

interface OnlineRun {
  phases: Phases;
  calls: number;
  kept: number;
}

async function onlineRun(sim: ReturnType<typeof simSetup>, queries: number): Promise<OnlineRun> {
  const config = stageConfig(queries);
  // Online settings resolved for online mode (prefix credit); the objective keeps the stage config's β.
  const { online } = resolveModeDefaults({
    ...config,
    online: OnlineSchema.parse({ enabled: true, queries: `first:${queries}`, samples: ONLINE_SAMPLES }),
  });
  const initial = seededStart(SelectorConfigSchema.parse({ ...config.model, d: D, shots: SHOTS }), config.seed);
  const start = new PointerSelector(initial.config, initial.values, config.dtype);
  const phases = new Phases();
  let firstCall: { wall: number; cpu: number } | null = null;
  let calls = 0;
  const note = <T>(p: Promise<T>) => {
    calls++;
    firstCall ??= { wall: performance.now(), cpu: cpuMs() };
    return p;
  };
  // The stage's VLM: the simulator, response cache "auto" (= off for the simulator).
  const { vlm } = createVlm(
    sim.ws,
    VlmSettingsSchema.parse({ vlm: "sim", world: sim.worldFile }),
    sim.ws.requireDataset("train"),
    {
      seed: config.seed,
      wrapBackend: (backend: Vlm): Vlm => ({
        id: backend.id,
        generate: (prompts, options) => note(backend.generate(prompts, options)),
        scoreAnswer: (requests, options) => note(backend.scoreAnswer(requests, options)),
      }),
    },
  );
  const byId = new Map(sim.items.map((item) => [item.questionId, item]));
  const sampler = new OnlineSampler(online, {
    sources: sim.sources,
    shots: SHOTS,
    reward: config.reward,
    queryById: byId,
    indexById: byId,
    answer: { vlm, ...vqaAnswering("official") },
  });
  // As the stage's online groups: the chosen queries with their pools, no trajectories yet.
  const groups: RlGroup[] = sim.items.slice(0, queries).map((item) => ({
    ...resolvePool(sim.sources, item.questionId, sim.pools.pools[item.questionId]),
    trajectories: [],
    rewards: [],
    methods: [],
    weights: [],
    best: 0,
  }));
  let kept = 0;
  await runTraining<RlGroup>({
    stage: "grpo",
    groups,
    valFraction: 0, // one iteration: no validation split
    seed: config.seed,
    dtype: config.dtype,
    optim: config.optim,
    start: initial,
    objective: (model, data) => {
      const validator = new RlValidator(
        { groups: data.val, sources: sim.sources, shots: SHOTS, batchQueries: queries },
        start,
      );
      const objData = { train: data.train, sources: sim.sources, batchQueries: queries, validator };
      const timed = instrument(grpoObjective(model, objData, config, start, sampler), model, () => phases);
      const prepare = timed.prepare as NonNullable<typeof timed.prepare>;
      return {
        ...timed,
        prepare: async (batch: RlGroup[], ctx: StepContext) => {
          const t0 = { wall: performance.now(), cpu: cpuMs() };
          const out = await prepare(batch, ctx);
          kept = out.length;
          // Sampling (encode + sampled decoding) runs before the first VLM request; the rest is the VLM's.
          const split = firstCall ?? t0;
          phases.add("sampling", split.wall - t0.wall, split.cpu - t0.cpu);
          phases.add("vlm", performance.now() - split.wall, cpuMs() - split.cpu);
          return out;
        },
      };
    },
    checkpointDir: null,
    checkpoint: { trainedK: K, shots: SHOTS, provenance: {} },
  });
  const iteration = ["prepare", "forward", "backward", "optimiser"];
  phases.add(
    "epoch",
    iteration.reduce((s, n) => s + phases.get(n), 0),
    iteration.reduce((s, n) => s + phases.getCpu(n), 0),
  );
  return { phases, calls, kept };
}

export async function onlineBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lever-bench-online-"));
  const sim = simSetup(dir);
  try {
    await onlineRun(sim, sized(32, ONLINE_QUERIES)); // warm-up
    const runs: OnlineRun[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await onlineRun(sim, ONLINE_QUERIES));
    const rows: [string, (p: Phases) => number, (p: Phases) => number][] = [
      ["sampling (policy encode + sampled decoding)", ...phase("sampling")],
      ["VLM (answering + gt scoring, sim)", ...phase("vlm")],
      ["forward (policy + reference log-probs, loss)", ...phase("forward")],
      ["  of which encode", ...phase("forward.encode")],
      ["  of which teacher forcing", ...phase("forward.teacherForce")],
      ["backward", ...phase("backward")],
      ["optimiser (clip + AdamW)", ...phase("optimiser")],
      ["iteration", ...phase("epoch")],
    ];
    console.log(
      `\n(b) online GRPO, one iteration: ${ONLINE_QUERIES} queries × ${ONLINE_SAMPLES} samples, K=${K}, ` +
        `sim VLM (4,000-question world, ${D}-d embeddings, cache off)\n`,
    );
    console.log(
      phaseTable(
        rows,
        runs.map((r) => r.phases),
      ),
    );
    const iteration = median(runs.map((r) => r.phases.get("epoch")));
    console.log(
      `\nVLM requests per iteration: ${runs[0].calls}; queries kept for the update (≥ 2 scored samples, ` +
        `rewards not all equal): ${runs[0].kept} of ${ONLINE_QUERIES}; ` +
        `${Math.round((ONLINE_QUERIES * ONLINE_SAMPLES) / (iteration / 1000))} sampled trajectories/s ` +
        `(load average ${loadAverage()})`,
    );
  } finally {
    sim.ws.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** (c) The candidate options' cost per training step (bench/candidate-options.ts); target ≤ 1.3× for the default features. */
export function featuresBench(): void {
  const B = sized(32, 2);
  const t = candidateStepMs(B, TRAJECTORIES, sized(10, 1));
  console.log(
    `\n(c) candidate options: one training step (encode + teacher forcing + SFT loss + backward + clip + AdamW), ` +
      `${B} queries × ${TRAJECTORIES} trajectories, K=${K}, ${SHOTS} shots, identity table of 9,009 items; ` +
      `variants in turn, median of 10 after 3 warm-up rounds (load average ${loadAverage()})\n`,
  );
  console.log(ratioTable("ms", t));
  const ratio = (i: number) => (t.cpu[i] / t.cpu[0]).toFixed(2);
  console.log(
    `verdict: the default features cost ${ratio(1)}× the CPU time of a step without — ` +
      `${t.cpu[1] / t.cpu[0] <= 1.3 ? "within" : "OVER"} the 1.3× target; with identity ${ratio(2)}×, ` +
      `and pool attention ${ratio(3)}×`,
  );
}

/** `LEVER_BENCH_TRAIN=features` runs only (c). */
export async function run(): Promise<void> {
  if (process.env.LEVER_BENCH_TRAIN === "features") return featuresBench();
  await offline();
  await onlineBench();
  featuresBench();
}
