/**
 * `lever eval` on the default synthetic world, through the same code paths as the CLI: write the
 * dataset (`lever data synth` defaults, 4,000 train / 1,000 val questions), import both splits and
 * their image/text/joint embeddings, then evaluate zero, random, topk-image, topk-text and oracle
 * at shots 1-4 on all 1,000 queries with the sim VLM. Reports the time of each phase, a cached
 * re-run (resume: zero VLM calls), and the results table. Target: the evaluation < 2 minutes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEvalOptions } from "../src/eval/config.js";
import { evaluate } from "../src/eval/evaluate.js";
import { renderComparison } from "../src/report/compare-render.js";
import { renderTable } from "../src/report/table.js";
import { importSynthSplit } from "../src/sim/ingest.js";
import { writeSynthDataset } from "../src/sim/synth.js";
import { Workspace } from "../src/store/workspace.js";
import { sized } from "./common.js";

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lever-bench-eval-"));
  try {
    const out = join(dir, "synth");
    const wsDir = join(dir, "ws");
    const timings: [string, number][] = [];
    const timed = async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
      const start = performance.now();
      const value = await fn();
      timings.push([name, (performance.now() - start) / 1000]);
      return value;
    };

    await timed("synth (defaults: 4000 train, 1000 val)", () =>
      writeSynthDataset({ out, params: sized({ trainItems: 4000 }, { trainItems: 100, valItems: 10 }), images: true }),
    );
    await timed("import both splits + 6 embeddings", () => {
      const ws = Workspace.open(wsDir);
      try {
        for (const split of ["train", "val"] as const) importSynthSplit(ws, out, split);
      } finally {
        ws.close();
      }
    });

    const options = parseEvalOptions({
      dataset: "val",
      index: "train",
      queries: "all",
      shots: [1, 2, 3, 4],
      retrievers: ["zero", "random", "topk-image", "topk-text", "oracle"],
      vlm: "sim",
    });
    const ws = Workspace.open(wsDir);
    try {
      const first = await timed("lever eval (17,000 predictions + report)", () =>
        evaluate(ws, options, { progress: null }),
      );
      const again = await timed("lever eval again (resume, report only)", () =>
        evaluate(ws, options, { progress: null }),
      );
      const copy = await timed("lever eval --run copy (new run, all from cache)", () =>
        evaluate(ws, { ...options, run: "copy" }, { progress: null }),
      );
      const rows = timings.map(([name, seconds]) => [name, seconds.toFixed(1)]);
      console.log(renderTable([{ header: "phase" }, { header: "seconds", align: "right" }], rows));
      console.log(
        `\nfirst run: ${first.stats.evaluated} predictions in ${first.stats.seconds.toFixed(1)} s ` +
          `(${(first.stats.evaluated / first.stats.seconds).toFixed(0)}/s), VLM calls ${first.vlm?.calls}, ` +
          `cache hits ${first.vlm?.cacheHits}; re-run: ${again.stats.evaluated} evaluated, VLM calls ${again.vlm?.calls}; ` +
          `new run from cache: VLM calls ${copy.vlm?.calls}, cache hits ${copy.vlm?.cacheHits}\n`,
      );
      if (first.summary !== null) console.log(renderComparison(first.summary, "table"));
    } finally {
      ws.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
