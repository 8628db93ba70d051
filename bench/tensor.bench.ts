/**
 * `npm run bench -- tensor`: float32 GEMM GFLOP/s for typical shapes on every available path
 * (OpenBLAS and our own C++ GEMM run in child processes because the choice is fixed per process),
 * the TypeScript kernels, their ratio, and one selector-sized training step through the autograd
 * engine. Times are the best of several repetitions (the machine is shared). "own" is our C++
 * GEMM with its CPU-selected micro-kernels (AVX2+FMA here) on all CPUs, "own ×1" on one thread,
 * "own generic" with the portable micro-kernels.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as T from "../src/tensor/index.js";
import { AdamW, gemm, gemmTypeScript, kernelPath, native, Tensor } from "../src/tensor/index.js";
import { Rng } from "../src/util/rng.js";
import { sized } from "./common.js";

type Shape = [m: number, n: number, k: number, transB: boolean];
const SHAPES: Shape[] = sized(
  [
    [256, 256, 512, false],
    [2048, 256, 256, false],
    [128, 256, 256, true],
    [8, 256, 256, false],
    [5000, 8192, 512, true], // cosine search: queries × index chunkᵀ
  ],
  [
    [16, 32, 24, false],
    [8, 16, 32, true],
  ],
);

/** Best-of timing in ms: repeats until `budgetMs` is spent (at least `minReps` runs). */
function bestMs(run: () => void, budgetMs = 400, minReps = 3): number {
  budgetMs = sized(budgetMs, 0);
  minReps = sized(minReps, 1);
  run();
  let best = Number.POSITIVE_INFINITY;
  const start = performance.now();
  for (let r = 0; r < minReps || performance.now() - start < budgetMs; r++) {
    const t = performance.now();
    run();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

function gemmGflops(impl: typeof gemm, [m, n, k, transB]: Shape, budgetMs: number): number {
  const rng = new Rng(1);
  const a = Float32Array.from({ length: m * k }, () => rng.next() - 0.5);
  const b = Float32Array.from({ length: k * n }, () => rng.next() - 0.5);
  const c = new Float32Array(m * n);
  const ms = bestMs(
    () => impl(false, transB, m, n, k, 1, a, k, b, transB ? k : n, 0, c, n),
    budgetMs,
    m >= 5000 ? 1 : 5,
  );
  return (2 * m * n * k) / (ms * 1e6);
}

const label = ([m, n, k, tb]: Shape) => `${m}×${n}×${k}${tb ? " (Bᵀ)" : ""}`;

/** Child-process mode: print this process's GEMM GFLOP/s per shape as JSON. */
export function measureActive(includeHuge: boolean): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of SHAPES) if (includeHuge || s[0] < 5000) out[label(s)] = gemmGflops(gemm, s, s[0] >= 5000 ? 1 : 400);
  return out;
}

function childMeasure(env: Record<string, string>): { path: string; results: Record<string, number> } | null {
  const self = fileURLToPath(import.meta.url);
  const code = `import(${JSON.stringify(self)}).then(async (m) => { const k = await import(${JSON.stringify(
    fileURLToPath(new URL("../src/tensor/kernels.js", import.meta.url)),
  )}); console.log(JSON.stringify({ path: k.kernelPath(), results: m.measureActive(true) })); });`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], {
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
  if (r.status !== 0) return null;
  return JSON.parse(r.stdout.trim().split("\n").pop() ?? "null");
}

/**
 * One training step of a selector-like model (docs/architecture.md): 8 queries × 16 trajectories, K = 32
 * candidates of d = 512, H = 256, 3 cross-attention layers, 4 teacher-forced GRU-gated shots;
 * per-query work (projections, attention) is computed once and shared by the trajectories.
 */
export function trainingStepMs(): { ms: number; cpuMs: number; params: number } {
  const rng = new Rng(5);
  const [Q, M, K, d, H, layers, S] = sized([8, 16, 32, 512, 256, 3, 4], [2, 2, 4, 16, 8, 1, 2]);
  const w = (r: number, c: number) => T.xavierUniformParam([r, c], rng);
  const vec = (n: number, v: number) => Tensor.param(new Float32Array(n).fill(v), [n]);
  const params = {
    inputProj: w(H, d),
    attn: Array.from({ length: layers }, () => ({
      wq: w(H, H),
      wk: w(H, H),
      wv: w(H, H),
      wo: w(H, H),
      lnW: vec(H, 1),
      lnB: vec(H, 0),
    })),
    queryProj: w(H, H),
    candProj: w(H, H),
    gate: w(H, 2 * H),
    gateB: vec(H, 0),
  };
  const all = [
    params.inputProj,
    ...params.attn.flatMap((l) => [l.wq, l.wk, l.wv, l.wo, l.lnW, l.lnB]),
    params.queryProj,
    params.candProj,
    params.gate,
    params.gateB,
  ];
  const opt = new AdamW([{ params: all, lr: 1e-4 }]);
  const queryEmb = Tensor.from(
    Float32Array.from({ length: Q * d }, () => rng.normal()),
    [Q, 1, d],
  );
  const candEmb = Tensor.from(
    Float32Array.from({ length: Q * K * d }, () => rng.normal()),
    [Q, K, d],
  );
  const labels = Int32Array.from({ length: Q * M * S }, (_, i) => (i * 7 + (i >> 2)) % K);
  const dropRng = new Rng(9);

  const step = () => {
    let q = T.linear(queryEmb, params.inputProj); // [Q,1,H]
    const c = T.linear(candEmb, params.inputProj); // [Q,K,H]
    for (const l of params.attn) {
      const scores = T.scale(T.matmul(T.linear(q, l.wq), T.linear(c, l.wk), { transB: true }), 1 / Math.sqrt(H));
      const att = T.matmul(T.softmax(scores), T.linear(c, l.wv)); // [Q,1,H]
      q = T.layerNorm(T.add(q, T.linear(att, l.wo)), l.lnW, l.lnB);
    }
    q = T.dropout(q, 0.1, dropRng, true);
    const cand = T.l2Normalize(T.linear(T.dropout(c, 0.1, dropRng, true), params.candProj)); // [Q,K,H]
    let h = T.l2Normalize(T.broadcastTo(T.linear(q, params.queryProj), [Q, M, H])); // [Q,M,H]
    const mask = new Uint8Array(Q * M * K);
    const stepLogits: Tensor[] = [];
    for (let t = 0; t < S; t++) {
      const logits = T.scale(T.matmul(h, cand, { transB: true }), 10); // [Q,M,K]
      stepLogits.push(T.maskedFill(logits, mask.slice(), -100));
      const chosen = new Int32Array(Q * M);
      for (let i = 0; i < Q * M; i++) {
        chosen[i] = labels[i * S + t];
        mask[i * K + chosen[i]] = 1;
      }
      const flatIdx = Int32Array.from(chosen, (k, i) => Math.floor(i / M) * K + k);
      const e = T.reshape(T.indexSelect(T.reshape(cand, [Q * K, H]), flatIdx), [Q, M, H]);
      const g = T.sigmoid(T.linear(T.concat([h, e], 2), params.gate, params.gateB));
      h = T.l2Normalize(T.add(T.mul(g, h), T.mul(T.addScalar(T.neg(g), 1), e)));
    }
    const all4 = T.stack(stepLogits, 2); // [Q,M,S,K]
    const loss = T.crossEntropy(T.reshape(all4, [-1, K]), labels);
    opt.zeroGrad();
    loss.backward();
    T.clipGradNorm(all, 1);
    opt.step();
  };
  const count = all.reduce((s, p) => s + p.size, 0);
  step();
  const cpu0 = process.cpuUsage();
  const reps = sized(5, 1);
  for (let r = 0; r < reps; r++) step();
  const cpu = process.cpuUsage(cpu0);
  return { ms: bestMs(step, 4000, 10), cpuMs: (cpu.user + cpu.system) / 1000 / reps, params: count };
}

export async function run(): Promise<void> {
  console.log(`active path: ${kernelPath()} (${native.detail})`);
  const rows: string[][] = [];
  const variants: [string, Record<string, string>][] = [];
  if (native.addon !== null) {
    if (native.addon.info().openblas !== "") variants.push(["openblas", {}]);
    variants.push(
      ["own", { LEVER_OPENBLAS: "0" }],
      ["own ×1", { LEVER_OPENBLAS: "0", LEVER_THREADS: "1" }],
      ["own generic", { LEVER_OPENBLAS: "0", LEVER_SIMD: "generic" }],
    );
  }
  const measured = variants.map(([name, env]) => [name, childMeasure(env)?.results ?? {}] as const);
  for (const s of SHAPES) {
    const huge = s[0] >= 5000;
    const ts = huge ? Number.NaN : gemmGflops(gemmTypeScript, s, 2000); // JIT tier-up needs a few calls
    const own = measured.find(([name]) => name === "own ×1")?.[1][label(s)];
    rows.push([
      label(s),
      ...measured.map(([, r]) => (r[label(s)] ?? Number.NaN).toFixed(2)),
      huge ? "(skipped)" : ts.toFixed(2),
      huge || own === undefined ? "-" : `${(own / ts).toFixed(1)}×`,
    ]);
  }
  const header = ["f32 GEMM M×N×K (GFLOP/s)", ...measured.map(([n]) => n), "typescript", "own×1/ts"];
  printTable(header, rows);
  const stepResult = trainingStepMs();
  console.log(
    `\ntraining step (8 queries × 16 trajectories, K=32, 3 layers, 4 shots, ${stepResult.params} params, ${kernelPath()}): ${stepResult.ms.toFixed(1)} ms wall (best), ${stepResult.cpuMs.toFixed(1)} ms CPU (mean, all threads)`,
  );
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i])).join("  ");
  console.log(line(header));
  for (const r of rows) console.log(line(r));
}
