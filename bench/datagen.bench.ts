/**
 * `lever beams` and `lever rollouts` on the default synthetic world (4,000 train questions), through
 * the same stage functions as the CLI (workspace, response cache, per-item storage), with the
 * simulator behind a latency-injecting wrapper that behaves like a served VLM: every request takes
 * 5 ms and at most 8 are in flight. Beams: 200 anchors, K = 32, beam 5, 4 shots, M = K (exhaustive).
 * Rollouts: 800 queries × about 16 trajectories from a freshly initialised selector checkpoint
 * (greedy, beam 5, 2 × 2 samples, 3 retrieval windows + reversed, 3 random), every distinct
 * annotator answer scored. Reports wall time, VLM requests/s and the share of time outside the VLM:
 * 1 − (calls × 5 ms / 8) / wall, how much longer the run took than the VLM needed at full capacity
 * (see LatencyVlm). Target: below 20 %.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BeamsSettingsSchema, runBeams } from "../src/datagen/beams-stage.js";
import { RolloutsSettingsSchema, runRollouts } from "../src/datagen/rollouts-stage.js";
import { buildPoolSet } from "../src/pools/artifact.js";
import { poolSampler } from "../src/pools/samplers.js";
import { renderTable } from "../src/report/table.js";
import { saveCheckpoint } from "../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../src/selector/config.js";
import { initParams } from "../src/selector/params.js";
import { importSynthSplit } from "../src/sim/ingest.js";
import { writeSynthDataset } from "../src/sim/synth.js";
import { loadDatasetEmbedding } from "../src/store/ingest/embeddings.js";
import { writePoolSet } from "../src/store/sets.js";
import { Workspace } from "../src/store/workspace.js";
import { VlmSettingsSchema } from "../src/vlm/settings.js";
import type { Vlm } from "../src/vlm/types.js";
import { sized } from "./common.js";

const LATENCY_MS = 5;
const SLOTS = 8;

/**
 * A served VLM with SLOTS request slots: a request arriving at time t is served by the slot that
 * frees first, from max(t, that time) for exactly LATENCY_MS of server time (requests beyond SLOTS
 * queue at the server, as in vLLM), and its answer is delivered then (by the simulator). The server's
 * schedule does not depend on how promptly this process reads answers, so the capacity left unused,
 * 1 − (requests × LATENCY_MS / SLOTS) / wall, is time the VLM waited for us.
 */
class LatencyVlm {
  requests = 0;
  /** When the first request arrived and the last answer was due (ms, performance.now()). */
  first = Number.NaN;
  last = 0;
  private readonly slotFree = new Float64Array(SLOTS);

  wrap(inner: Vlm): Vlm {
    return {
      id: inner.id,
      generate: (prompts, options) => Promise.all(prompts.map((p) => this.one(() => inner.generate([p], options)))),
      scoreAnswer: (requests, options) =>
        Promise.all(requests.map((r) => this.one(() => inner.scoreAnswer([r], options)))),
    };
  }

  private async one<T>(call: () => Promise<T[]>): Promise<T> {
    const now = performance.now();
    let slot = 0;
    for (let s = 1; s < SLOTS; s++) if (this.slotFree[s] < this.slotFree[slot]) slot = s;
    const end = Math.max(now, this.slotFree[slot]) + LATENCY_MS;
    this.slotFree[slot] = end;
    this.requests++;
    if (Number.isNaN(this.first)) this.first = now;
    this.last = Math.max(this.last, end);
    await new Promise((resolve) => setTimeout(resolve, end - now));
    const [result] = await call();
    return result;
  }
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lever-bench-datagen-"));
  try {
    const out = join(dir, "synth");
    const wsDir = join(dir, "ws");
    writeSynthDataset({ out, params: sized({ trainItems: 4000 }, { trainItems: 200, valItems: 10 }), images: true });
    const ws = Workspace.open(wsDir);
    try {
      importSynthSplit(ws, out, "train");
      const kinds = ["image", "text", "joint"] as const;
      const items = ws.loadItems("train");
      const embeddings = Object.fromEntries(kinds.map((k) => [k, loadDatasetEmbedding(ws, "train", k)]));
      writePoolSet(
        ws,
        "k32",
        buildPoolSet({
          queryDataset: "train",
          queries: items,
          indexDataset: "train",
          index: items,
          pool: poolSampler("mix"),
          k: 32,
          seed: 0,
          queryEmbeddings: embeddings,
          indexEmbeddings: embeddings,
        }),
      );
      const checkpoint = join(dir, "init.safetensors");
      const config = SelectorConfigSchema.parse({ d: embeddings.joint.dim, hidden: 64, shots: 2 });
      saveCheckpoint(checkpoint, {
        config,
        params: initParams(config, 1),
        trainedK: 32,
        shots: 2,
        provenance: { stage: "init", createdAt: "bench" },
      });
      const vlmSettings = VlmSettingsSchema.parse({ vlm: "sim", world: join(out, "world.json") });

      const rows: string[][] = [];
      const measure = async (
        name: string,
        fn: (wrap: (b: Vlm) => Vlm) => Promise<{ calls: number; extra: string }>,
      ) => {
        const latency = new LatencyVlm();
        const start = performance.now();
        const cpu = process.cpuUsage();
        const { calls, extra } = await fn((backend) => latency.wrap(backend));
        const end = performance.now();
        const wall = (end - start) / 1000;
        const used = process.cpuUsage(cpu);
        const vlmSeconds = (latency.requests * LATENCY_MS) / SLOTS / 1000;
        rows.push([
          name,
          wall.toFixed(1),
          String(calls),
          (latency.requests / wall).toFixed(0),
          `${(100 * Math.max(0, 1 - vlmSeconds / wall)).toFixed(1)}%`,
          `${((100 * (used.user + used.system)) / 1e6 / wall).toFixed(0)}%`,
          `${((latency.first - start) / 1000).toFixed(1)} / ${((end - latency.last) / 1000).toFixed(1)}`,
          extra,
        ]);
      };

      await measure("beams: 200 anchors, K=32, beam 5, 4 shots, M=K", async (wrapBackend) => {
        const result = await runBeams(
          ws,
          BeamsSettingsSchema.parse({
            dataset: "train",
            pools: "k32",
            anchors: sized("random:200", "random:2"),
            shots: 4,
            beamSize: 5,
            concurrency: 8,
            out: "bench",
          }),
          vlmSettings,
          { progress: null, wrapBackend },
        );
        return { calls: result.vlm.calls, extra: `${result.requestsPerAnchor.mean} requests/anchor` };
      });
      await measure("rollouts: 800 queries × ~16 trajectories", async (wrapBackend) => {
        const result = await runRollouts(
          ws,
          RolloutsSettingsSchema.parse({
            dataset: "train",
            pools: "k32",
            queries: sized("random:800", "random:4"),
            checkpoint,
            random: 5,
            concurrency: 16,
            out: "bench",
          }),
          vlmSettings,
          { progress: null, wrapBackend },
        );
        const s = result.stats;
        return {
          calls: result.vlm.calls,
          extra: `${s.perQuery.mean.toFixed(1)} trajectories/query (${s.perQuery.min}-${s.perQuery.max}), all-equal ${(100 * s.allEqualShare).toFixed(0)}%`,
        };
      });
      console.log(
        renderTable(
          [
            { header: "run" },
            { header: "wall s", align: "right" },
            { header: "VLM calls", align: "right" },
            { header: "calls/s", align: "right" },
            { header: "outside VLM", align: "right" },
            { header: "CPU", align: "right" },
            { header: "before / after VLM s", align: "right" },
            { header: "notes" },
          ],
          rows,
        ),
      );
      console.log(
        `\nVLM: ${LATENCY_MS} ms per request, ${SLOTS} in flight (at most ${(1000 * SLOTS) / LATENCY_MS} calls/s); ` +
          "outside VLM = capacity the VLM left unused, 1 − (calls × 5 ms / 8) / wall (target < 20 %); " +
          "CPU = this process's CPU time / wall",
      );
    } finally {
      ws.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
