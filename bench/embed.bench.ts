/**
 * `lever embed compute` throughput: rows/s of the image tower and of the text tower, on 1,000
 * COCO-sized JPEGs (640×480, smooth random content) and 1,000 distinct questions, batch 32, for the
 * committed tiny CLIP fixture (measures decoding, preprocessing and the pipeline's own overhead) and,
 * when a real export is on the machine, for CLIP ViT-B/32 (`LEVER_CLIP_B32=/path/to/folder`) and
 * ViT-L/14 (`LEVER_CLIP_L14=…`); docs/embeddings.md says how to get them. Without real weights,
 * bench/clip_shaped.py writes exports with the real architectures and random weights, which cost the
 * same per row. `LEVER_BENCH_IMAGES` changes the count, `LEVER_BENCH_THREADS` sets onnxruntime's threads.
 * The numbers depend on what else the machine's cores are doing: the load average is printed.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { RawImage } from "@huggingface/transformers";
import type { VqaItem } from "../src/data/item.js";
import { computeEmbedding } from "../src/embed/compute.js";
import { Workspace } from "../src/store/workspace.js";
import { Rng } from "../src/util/rng.js";
import { sized } from "./common.js";

const IMAGES = Number(process.env.LEVER_BENCH_IMAGES ?? sized(1000, 4));
const THREADS = process.env.LEVER_BENCH_THREADS === undefined ? undefined : Number(process.env.LEVER_BENCH_THREADS);
const TINY = fileURLToPath(new URL("../../test/fixtures/tiny-clip/model", import.meta.url));
const WORDS = "what is the color of this animal on table in picture how many people are there kind food".split(" ");

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lever-bench-embed-"));
  try {
    const started = performance.now();
    const items = await writeDataset(join(dir, "images"), new Rng(3).child("bench-embed"));
    const setup = (performance.now() - started) / 1000;
    console.log(`${IMAGES} JPEGs (640×480) and ${IMAGES} questions written in ${setup.toFixed(1)} s`);
    console.log(
      `load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(" ")} on ${availableParallelism()} cores`,
    );
    console.log("| model | tower | rows | batch | threads | seconds | rows/s |");
    console.log("|---|---|---|---|---|---|---|");
    const models: [string, string | undefined][] = [
      ["tiny CLIP fixture", TINY],
      ["CLIP ViT-B/32", process.env.LEVER_CLIP_B32],
      ["CLIP ViT-L/14", process.env.LEVER_CLIP_L14],
    ];
    const skipped: string[] = [];
    for (const [name, folder] of models) {
      if (folder === undefined) {
        skipped.push(name);
        continue;
      }
      for (const kind of ["image", "text"] as const) {
        const ws = Workspace.open(join(dir, `ws-${name.replace(/\W+/g, "-")}-${kind}`));
        ws.putDataset({ name: "bench", split: "train", source: "synth", files: [] }, items);
        const result = await computeEmbedding(ws, {
          dataset: "bench",
          kind,
          model: folder,
          batch: 32,
          threads: THREADS,
        });
        ws.close();
        console.log(
          `| ${name} | ${kind} | ${result.rows} | 32 | ${THREADS ?? "default"} | ${result.embedSeconds.toFixed(1)} | ${result.unitsPerSecond.toFixed(1)} |`,
        );
      }
    }
    console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
    for (const name of skipped)
      console.log(
        `skipped ${name}: no model folder on this machine (set ${name.includes("B/32") ? "LEVER_CLIP_B32" : "LEVER_CLIP_L14"}=/path/to/export; see docs/embeddings.md)`,
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One image per question: 16×12 random colours upscaled to 640×480 (photo-like, compressible JPEGs). */
async function writeDataset(imageDir: string, rng: Rng): Promise<VqaItem[]> {
  mkdirSync(imageDir, { recursive: true });
  const items: VqaItem[] = [];
  for (let i = 0; i < IMAGES; i++) {
    const small = new RawImage(
      Uint8ClampedArray.from({ length: 16 * 12 * 3 }, () => rng.int(256)),
      16,
      12,
      3,
    );
    const path = join(imageDir, `${i}.jpg`);
    await (await small.resize(640, 480)).save(path);
    const words = Array.from({ length: 4 + rng.int(6) }, () => WORDS[rng.int(WORDS.length)]);
    items.push({
      questionId: String(i),
      imageId: String(i),
      question: `${words.join(" ")} ${i}?`,
      answers: [{ answer: "a" }],
      answer: "a",
      questionType: "what",
      answerType: "other",
      imagePath: path,
    });
  }
  return items;
}
