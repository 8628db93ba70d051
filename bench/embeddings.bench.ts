/**
 * `lever embed import` at VQAv2 scale: 443,757 × 512 float32 (909 MB). Generates a random .npy +
 * ids file and a workspace dataset with those question ids in a temp dir, then runs the import
 * (with --normalize) in a child process so its peak RSS is measured alone. Target: < 60 s, < 3 GiB.
 * `LEVER_BENCH_ROWS` shrinks the matrix for a quick run.
 */
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { VqaItem } from "../src/data/item.js";
import { encodeNpyHeader } from "../src/data/npy.js";
import { Workspace } from "../src/store/workspace.js";
import { Rng } from "../src/util/rng.js";
import { sized } from "./common.js";

const ROWS = Number(process.env.LEVER_BENCH_ROWS ?? sized(443_757, 100));
const DIM = 512;

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lever-bench-emb-"));
  try {
    const started = performance.now();
    const ids = Array.from({ length: ROWS }, (_, i) => String(1_000_000 + i * 7));
    const file = join(dir, "vqav2.npy");
    writeRandomNpy(file, ROWS, DIM, new Rng(7).child("bench-embeddings"));
    writeFileSync(join(dir, "vqav2.ids.json"), JSON.stringify(ids));
    const ws = Workspace.open(join(dir, "ws"));
    const items: VqaItem[] = ids.map((id) => ({
      questionId: id,
      imageId: id,
      question: "q?",
      answers: [{ answer: "a" }],
      answer: "a",
      questionType: "what",
      answerType: "other",
      imagePath: null,
    }));
    ws.putDataset({ name: "vqav2-train", split: "train", source: "synth", files: [] }, items);
    ws.close();
    const setupSeconds = (performance.now() - started) / 1000;

    const here = dirname(fileURLToPath(import.meta.url));
    const module = pathToFileURL(join(here, "../src/store/ingest/embeddings.js")).href;
    const wsModule = pathToFileURL(join(here, "../src/store/workspace.js")).href;
    const script = `
      const { importEmbedding } = await import(${JSON.stringify(module)});
      const { Workspace } = await import(${JSON.stringify(wsModule)});
      const t0 = performance.now();
      const ws = Workspace.open(${JSON.stringify(join(dir, "ws"))});
      const r = importEmbedding(ws, { file: ${JSON.stringify(file)}, dataset: "vqav2-train", kind: "joint", normalize: true });
      ws.close();
      const seconds = (performance.now() - t0) / 1000;
      console.log(JSON.stringify({ seconds, peakRssMiB: process.resourceUsage().maxRSS / 1024, rows: r.rows, dim: r.dim, norms: r.norms }));
    `;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    const result = JSON.parse(out.trim().split("\n").pop()!) as {
      seconds: number;
      peakRssMiB: number;
      rows: number;
      dim: number;
      norms: { min: number; max: number; mean: number };
    };
    const mb = (ROWS * DIM * 4) / 1e6;
    console.log("| rows | dim | file MB | setup s | import s | peak RSS MiB | target |");
    console.log("|---|---|---|---|---|---|---|");
    console.log(
      `| ${result.rows} | ${result.dim} | ${mb.toFixed(0)} | ${setupSeconds.toFixed(1)} | ${result.seconds.toFixed(1)} | ${result.peakRssMiB.toFixed(0)} | < 60 s, < 3072 MiB |`,
    );
    console.log(`norms before normalising: min ${result.norms.min.toFixed(3)}, max ${result.norms.max.toFixed(3)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes a random normal matrix as .npy in 16 MiB slices, so generating it never holds the whole file. */
function writeRandomNpy(path: string, rows: number, dim: number, rng: Rng): void {
  const fd = openSync(path, "w");
  try {
    writeSync(fd, encodeNpyHeader("<f4", [rows, dim]));
    const rowsPerSlice = Math.max(1, Math.floor((16 << 20) / (dim * 4)));
    for (let r = 0; r < rows; r += rowsPerSlice) {
      const slice = new Float32Array(Math.min(rowsPerSlice, rows - r) * dim);
      for (let i = 0; i < slice.length; i++) slice[i] = rng.normal();
      writeSync(fd, new Uint8Array(slice.buffer));
    }
  } finally {
    closeSync(fd);
  }
}
