/**
 * The simulated VLM: prompts/s for `generate` and `scoreAnswer` (single core, 0-4 shots, batches of
 * 1024 as the RL loop sends them), world build time, and the oracle's exact best-trajectory search
 * per query at 4 shots with K = 32 and K = 64 random pools. Target: ≥ 50k prompts/s.
 */

import { SimOracle } from "../src/sim/oracle.js";
import { SimVlm } from "../src/sim/vlm.js";
import { Rng } from "../src/util/rng.js";
import type { VlmPrompt } from "../src/vlm/types.js";
import { sized } from "./common.js";

const PROMPTS = sized(200_000, 2048);
const BATCH = 1024;
const ORACLE_QUERIES = sized(200, 2);

export async function run(): Promise<void> {
  const built = performance.now();
  const sim = SimVlm.fromParams(sized({}, { trainItems: 100, valItems: 20 }));
  const buildMs = performance.now() - built;
  const world = sim.world;
  const train = world.itemsOf("train");
  const val = world.itemsOf("val");
  const rng = new Rng(99);
  const prompts: VlmPrompt[] = Array.from({ length: 4096 }, () => {
    const q = val[rng.int(val.length)];
    return {
      query: { questionId: world.questionIds[q], imagePath: null, question: world.questions[q] },
      demonstrations: Array.from({ length: rng.int(5) }, () => {
        const d = train[rng.int(train.length)];
        return {
          questionId: world.questionIds[d],
          imagePath: null,
          question: world.questions[d],
          answer: world.shownAnswer[d],
        };
      }),
    };
  });
  const scoreRequests = prompts.map((prompt, i) => ({ prompt, answer: world.shownAnswer[train[i % train.length]] }));

  const rows: [string, string, string][] = [["world build (4000 + 1000 items)", `${buildMs.toFixed(0)} ms`, ""]];
  const generateRate = await rate(async (start) => {
    await sim.generate(batchAt(prompts, start));
  });
  rows.push(["generate", `${fmt(generateRate)} prompts/s`, generateRate >= 50_000 ? "ok (≥ 50k)" : "BELOW 50k"]);
  const scoreRate = await rate(async (start) => {
    await sim.scoreAnswer(batchAt(scoreRequests, start));
  });
  rows.push(["scoreAnswer", `${fmt(scoreRate)} prompts/s`, scoreRate >= 50_000 ? "ok (≥ 50k)" : "BELOW 50k"]);

  const oracle = new SimOracle(sim);
  for (const k of [32, 64]) {
    const times: number[] = [];
    let nodes = 0;
    for (let t = 0; t < ORACLE_QUERIES; t++) {
      const q = world.questionIds[val[rng.int(val.length)]];
      const pool = rng.sampleWithoutReplacement(train.length, k).map((r) => world.questionIds[train[r]]);
      const started = performance.now();
      nodes += oracle.bestTrajectory(q, pool, 4).nodes;
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    rows.push([
      `oracle best 4-shot, K=${k}`,
      `${mean.toFixed(2)} ms/query (p50 ${times[times.length >> 1].toFixed(2)}, max ${times.at(-1)?.toFixed(1)})`,
      `${fmt(nodes / ORACLE_QUERIES)} nodes/query vs ${fmt(k * (k - 1) * (k - 2) * (k - 3))} orderings`,
    ]);
  }
  const width = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(width[c])).join("  "));
}

function batchAt<T>(items: T[], start: number): T[] {
  const begin = start % (items.length - BATCH);
  return items.slice(begin, begin + BATCH);
}

/** Items per second over PROMPTS items, after a warm-up. */
async function rate(step: (start: number) => Promise<void>): Promise<number> {
  for (let i = 0; i < sized(20, 1); i++) await step(i * BATCH);
  const started = performance.now();
  for (let done = 0; done < PROMPTS; done += BATCH) await step(done);
  return (Math.ceil(PROMPTS / BATCH) * BATCH) / ((performance.now() - started) / 1000);
}

function fmt(x: number): string {
  return Math.round(x).toLocaleString("en-US");
}
