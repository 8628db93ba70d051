import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RawImage } from "@huggingface/transformers";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { EmbeddingKind } from "../../src/data/embeddings.js";
import type { VqaItem } from "../../src/data/item.js";
import { type ComputeOptions, computeEmbedding } from "../../src/embed/compute.js";
import { loadDatasetEmbedding } from "../../src/store/ingest/embeddings.js";
import { Workspace } from "../../src/store/workspace.js";
import { LeverError } from "../../src/util/errors.js";
import type { Progress } from "../../src/util/progress.js";
import { Rng } from "../../src/util/rng.js";
import {
  DIM,
  IMAGE,
  maxAbsDiff,
  pixelValues,
  TINY_CLIP_DIR,
  textReference,
  tokenId,
  unit,
  visionReference,
} from "./tiny-clip.js";

const IMAGES = 10;
const ITEMS = 25;
/** Words that are single tokens of the fixture's vocabulary, so the expected ids are a lookup. */
const WORDS = ["what", "is", "the", "on", "of", "in", "how", "are", "this", "color"];

let imageDir: string;
let imagePixels: Uint8Array[];
let items: VqaItem[];
let dir: string;
let ws: Workspace;

beforeAll(async () => {
  imageDir = mkdtempSync(join(tmpdir(), "lever-embed-images-"));
  const rng = new Rng(11).child("embed-compute-test");
  imagePixels = [];
  for (let u = 0; u < IMAGES; u++) {
    const rgb = Uint8Array.from({ length: IMAGE * IMAGE * 3 }, () => rng.int(256));
    await new RawImage(new Uint8ClampedArray(rgb), IMAGE, IMAGE, 3).save(join(imageDir, `img${u}.png`));
    imagePixels.push(rgb);
  }
  items = Array.from({ length: ITEMS }, (_, i) => {
    const words = Array.from({ length: 2 + rng.int(5) }, () => WORDS[rng.int(WORDS.length)]);
    return {
      questionId: String(100 + i),
      imageId: String(i % IMAGES),
      question: `${words.join(" ")}?`,
      answers: [{ answer: "a" }],
      answer: "a",
      questionType: "what",
      answerType: "other",
      imagePath: join(imageDir, `img${i % IMAGES}.png`),
    };
  });
  items[ITEMS - 1].question = items[0].question; // one repeated question: embedded once
  return () => rmSync(imageDir, { recursive: true, force: true });
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-embed-compute-"));
  ws = openWorkspace(join(dir, "ws"), items);
});
afterEach(() => {
  ws.close();
  rmSync(dir, { recursive: true, force: true });
});

function openWorkspace(path: string, datasetItems: VqaItem[]): Workspace {
  const workspace = Workspace.open(path);
  workspace.putDataset({ name: "d", split: "train", source: "synth", files: [] }, datasetItems);
  return workspace;
}

const compute = (kind: EmbeddingKind, extra: Partial<ComputeOptions> = {}, workspace = ws) =>
  computeEmbedding(workspace, { dataset: "d", kind, model: TINY_CLIP_DIR, batch: 4, threads: 1, ...extra });

/** The expected rows, from the TypeScript re-computation of the graph (not from onnxruntime). */
const imageRow = (imagePath: string) =>
  unit(visionReference(pixelValues(imagePixels[Number(/img(\d+)\.png$/.exec(imagePath)![1])]), 1));
const textRow = (question: string) =>
  unit(
    textReference([
      tokenId("<|startoftext|>"),
      ...question
        .slice(0, -1)
        .split(" ")
        .map((w) => tokenId(`${w}</w>`)),
      tokenId("?</w>"),
      tokenId("<|endoftext|>"),
    ]),
  );
const expectedRow = (kind: EmbeddingKind, item: VqaItem) => {
  if (kind === "image") return imageRow(item.imagePath!);
  if (kind === "text") return textRow(item.question);
  const img = imageRow(item.imagePath!);
  const txt = textRow(item.question);
  return unit(img.map((x, c) => x + txt[c]));
};

function expectStoredRows(kind: EmbeddingKind, expectedItems: readonly VqaItem[], workspace = ws): Float32Array {
  const stored = loadDatasetEmbedding(workspace, "d", kind);
  expect(stored.ids).toEqual(expectedItems.map((item) => item.questionId));
  expect(stored.dim).toBe(DIM);
  expectedItems.forEach((item, r) => {
    expect(maxAbsDiff(stored.data.subarray(r * DIM, (r + 1) * DIM), expectedRow(kind, item))).toBeLessThan(1e-5);
  });
  return stored.data;
}

/** A progress sink that throws after `batches` batches, like a kill at a batch boundary. */
function killAfter(batches: number): Progress {
  let seen = 0;
  return {
    start() {},
    advance() {
      if (++seen === batches) throw new Error("killed");
    },
    finish() {},
  };
}

const partialDir = (kind: string) => join(ws.artifactsDir, "embeddings", "d", `.partial-${kind}`);

describe("computeEmbedding", () => {
  it.each(["image", "text", "joint"] as const)(
    "stores one unit-norm %s row per question, equal to the graph's output on the item's image / question",
    async (kind) => {
      const result = await compute(kind);
      expect(result).toMatchObject({ dataset: "d", kind, rows: ITEMS, dim: DIM, discardedPartial: false, skipped: [] });
      expect(result.norms.min).toBeCloseTo(1, 6);
      expect(result.norms.max).toBeCloseTo(1, 6);
      if (kind !== "text") expect(result.images).toEqual({ units: IMAGES, computed: IMAGES, resumed: 0 });
      if (kind !== "image") expect(result.texts).toEqual({ units: ITEMS - 1, computed: ITEMS - 1, resumed: 0 });
      expectStoredRows(kind, items);
      const record = ws.getEmbedding("d", kind)!;
      expect(record.details?.computedBy).toMatchObject({ command: "lever embed compute", model: "model", skipped: 0 });
      expect(Object.keys((record.details?.computedBy as { files: object }).files)).toContain("config.json");
      expect(existsSync(partialDir(kind))).toBe(false);
    },
  );

  it("shares one image's row between its questions", async () => {
    await compute("image");
    const stored = loadDatasetEmbedding(ws, "d", "image");
    expect(stored.data.subarray(0, DIM)).toEqual(stored.data.subarray(IMAGES * DIM, (IMAGES + 1) * DIM));
  });

  it("resumes after a kill without recomputing finished batches, and stores the same matrix", async () => {
    const killed = await compute("joint", { progress: killAfter(2) }).catch((e: unknown) => e);
    expect((killed as Error).message).toBe("killed");
    expect(ws.getEmbedding("d", "joint")).toBeUndefined();
    expect(readdirSync(partialDir("joint")).sort()).toEqual([
      "image-000000000.npy",
      "image-000000004.npy",
      "state.json",
    ]);
    const resumed = await compute("joint");
    expect(resumed.images).toEqual({ units: IMAGES, computed: 2, resumed: 8 });
    expect(resumed.texts).toEqual({ units: ITEMS - 1, computed: ITEMS - 1, resumed: 0 });
    const data = expectStoredRows("joint", items);

    const fresh = openWorkspace(join(dir, "fresh"), items);
    try {
      await compute("joint", {}, fresh);
      expect(loadDatasetEmbedding(fresh, "d", "joint").data).toEqual(data);
    } finally {
      fresh.close();
    }
  });

  it("resumes inside the text tower with another batch size", async () => {
    await compute("joint", { progress: killAfter(4) }).catch(() => {}); // 3 image batches + 1 text batch
    const resumed = await compute("joint", { batch: 7 });
    expect(resumed.images).toEqual({ units: IMAGES, computed: 0, resumed: IMAGES });
    expect(resumed.texts).toEqual({ units: ITEMS - 1, computed: ITEMS - 5, resumed: 4 });
    expectStoredRows("joint", items);
  });

  it("after a kill past the last batch, the re-run computes nothing and only registers the matrix", async () => {
    const lastBatch: Progress = {
      ...killAfter(0),
      finish: () => {
        throw new Error("killed");
      },
    };
    await expect(compute("text", { progress: lastBatch })).rejects.toThrow("killed");
    expect(ws.getEmbedding("d", "text")).toBeUndefined();
    const result = await compute("text");
    expect(result.texts).toEqual({ units: ITEMS - 1, computed: 0, resumed: ITEMS - 1 });
    expect(result.embedSeconds).toBe(0);
    expectStoredRows("text", items);
  });

  it("starts over when the partial results were made by another model", async () => {
    await compute("image", { progress: killAfter(1) }).catch(() => {});
    const other = join(dir, "other-model");
    cpSync(TINY_CLIP_DIR, other, { recursive: true });
    writeFileSync(join(other, "config.json"), `${JSON.stringify({ model_type: "clip" })}\n`);
    const result = await compute("image", { model: other });
    expect(result.discardedPartial).toBe(true);
    expect(result.images).toEqual({ units: IMAGES, computed: IMAGES, resumed: 0 });
  });

  it("stops at a missing image before loading the model, naming it; nothing is registered", async () => {
    const moved = join(dir, "moved.png");
    cpSync(items[3].imagePath!, moved);
    rmSync(items[3].imagePath!);
    try {
      const error = await compute("joint", { model: join(dir, "no-model-needed") }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeverError);
      expect((error as LeverError).message).toBe(
        `${items[3].imagePath}: image file not found (1 of 10 images are missing; pass --skip-missing to leave their questions without a row)`,
      );
      expect(ws.getEmbedding("d", "joint")).toBeUndefined();
    } finally {
      cpSync(moved, items[3].imagePath!);
    }
  });

  it("stops at an unreadable image naming it, keeping the batches before it", async () => {
    const broken = join(dir, "broken.png");
    writeFileSync(broken, "not a PNG");
    const withBroken = items.map((item, i) => (i === 6 ? { ...item, imagePath: broken } : item));
    const workspace = openWorkspace(join(dir, "broken-ws"), withBroken);
    try {
      const error = await compute("image", {}, workspace).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeverError);
      expect((error as LeverError).message).toMatch(
        new RegExp(
          `^${broken}: cannot decode image \\(.*\\) \\(pass --skip-missing to leave its questions without a row\\)$`,
        ),
      );
      expect(workspace.getEmbedding("d", "image")).toBeUndefined();
      expect(readdirSync(join(workspace.artifactsDir, "embeddings/d/.partial-image"))).toContain("image-000000000.npy");
    } finally {
      workspace.close();
    }
  });

  it("with skipMissing leaves the questions of missing and unreadable images without a row, and lists the files", async () => {
    const broken = join(dir, "broken.png");
    writeFileSync(broken, "not a PNG");
    const absent = join(dir, "absent.png");
    const changed = items.map((item, i) =>
      i % IMAGES === 2 ? { ...item, imagePath: absent } : i % IMAGES === 5 ? { ...item, imagePath: broken } : item,
    );
    const workspace = openWorkspace(join(dir, "skip-ws"), changed);
    try {
      const result = await compute("joint", { skipMissing: true }, workspace);
      expect(result.skipped).toEqual([
        { path: absent, reason: "missing" },
        { path: broken, reason: "unreadable" },
      ]);
      const kept = changed.filter((item) => item.imagePath !== absent && item.imagePath !== broken);
      expect(result).toMatchObject({ rows: kept.length, itemsWithoutRow: ITEMS - kept.length });
      expect(result.missingFromMatrix).toBe(ITEMS - kept.length);
      expectStoredRows("joint", kept, workspace);
    } finally {
      workspace.close();
    }
  });

  it("refuses image kinds for a dataset without image paths, but embeds its questions", async () => {
    const workspace = openWorkspace(
      join(dir, "no-images"),
      items.map((item) => ({ ...item, imagePath: null })),
    );
    try {
      await expect(compute("joint", {}, workspace)).rejects.toThrow(/dataset "d" has no image paths/);
      const result = await compute("text", {}, workspace);
      expect(result.rows).toBe(ITEMS);
    } finally {
      workspace.close();
    }
  });

  it("validates the batch size and the kind", async () => {
    await expect(compute("joint", { batch: 0 })).rejects.toThrow('field "--batch": must be a positive integer');
    await expect(compute("both" as EmbeddingKind)).rejects.toThrow('field "--kind": kind must be one of');
  });
});
