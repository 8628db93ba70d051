import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { captionFromStored } from "../../../src/data/caption-item.js";
import { CaptionImportSettingsSchema, importCaptions } from "../../../src/store/ingest/captions.js";
import { Workspace } from "../../../src/store/workspace.js";
import { datasetTask } from "../../../src/task/dataset-task.js";

const FIXTURES = resolve("test/fixtures/caption-import");
const OFFICIAL = join(FIXTURES, "captions_val2014.json");
const KARPATHY = join(FIXTURES, "dataset_coco.json");

let dir: string;
let wsDir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-import-captions-"));
  wsDir = join(dir, "ws");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const settings = (s: Record<string, unknown>) => CaptionImportSettingsSchema.parse(s);

function withWs<T>(fn: (ws: Workspace) => T): T {
  const ws = Workspace.open(wsDir, { create: false });
  try {
    return fn(ws);
  } finally {
    ws.close();
  }
}

describe("importCaptions", () => {
  it("stores one caption item per image and records the task", () => {
    const result = importCaptions(wsDir, settings({ captions: OFFICIAL, name: "cap-val" }));
    expect(result.record).toMatchObject({ name: "cap-val", split: "val", source: "coco-captions", itemCount: 3 });
    expect(result.references).toEqual({ min: 5, max: 7, total: 18 });
    withWs((ws) => {
      const record = ws.requireDataset("cap-val");
      expect(record.details).toMatchObject({ task: "caption", folder: "val2014", annotations: 18 });
      expect(datasetTask(record).name).toBe("caption");
      const items = ws.loadItems("cap-val").map(captionFromStored);
      expect(items.map((i) => i.itemId)).toEqual(["7", "42", "1000"]);
      expect(items[1].references).toHaveLength(6);
      expect(items[0].imagePath).toBeNull();
    });
  });

  it("renders image paths from the COCO folder (2014 names, per-item folder for Karpathy)", () => {
    const root = join(dir, "coco");
    mkdirSync(join(root, "train2014"), { recursive: true });
    mkdirSync(join(root, "val2014"), { recursive: true });
    writeFileSync(join(root, "train2014", "COCO_train2014_000000000009.jpg"), "");
    const result = importCaptions(
      wsDir,
      settings({
        format: "karpathy",
        captions: KARPATHY,
        split: "train",
        restvalIntoTrain: true,
        name: "k",
        images: root,
      }),
    );
    expect(result.missingImages).toBe(2);
    withWs((ws) => {
      const paths = ws.loadItems("k").map((i) => i.imagePath);
      expect(paths).toEqual([
        join(root, "train2014", "COCO_train2014_000000000009.jpg"),
        join(root, "train2014", "COCO_train2014_000000000025.jpg"),
        join(root, "val2014", "COCO_val2014_000000000073.jpg"),
      ]);
      expect(ws.requireDataset("k").details).toMatchObject({ task: "caption", karpathySplits: ["train", "restval"] });
    });
  });

  it("keeps a seeded subset", () => {
    const result = importCaptions(wsDir, settings({ captions: OFFICIAL, name: "s", subset: "first:2" }));
    expect(result.record.itemCount).toBe(2);
    expect(result.record.subset).toEqual({ spec: "first:2", seed: null, of: 3 });
  });

  it("writes nothing for a bad file", () => {
    const bad = join(dir, "captions_val2014.json");
    writeFileSync(bad, JSON.stringify({ images: [{ id: 1 }], annotations: [{ id: 1, image_id: 1, caption: "" }] }));
    expect(() => importCaptions(wsDir, settings({ captions: bad, name: "x" }))).toThrow(/caption is empty/);
    expect(existsSync(wsDir)).toBe(false);
    importCaptions(wsDir, settings({ captions: OFFICIAL, name: "x" }));
    expect(() => importCaptions(wsDir, settings({ captions: bad, name: "x", replace: true }))).toThrow(
      /caption is empty/,
    );
    withWs((ws) => expect(ws.requireDataset("x").itemCount).toBe(3));
  });

  it("needs the split of a Karpathy file and the folder of an oddly named official file", () => {
    expect(() => importCaptions(wsDir, settings({ format: "karpathy", captions: KARPATHY, name: "k" }))).toThrow(
      /field "split": karpathy: give the split/,
    );
    const odd = join(dir, "mine.json");
    writeFileSync(odd, JSON.stringify({ images: [{ id: 1 }], annotations: [{ id: 1, image_id: 1, caption: "a" }] }));
    expect(() => importCaptions(wsDir, settings({ captions: odd, name: "o" }))).toThrow(/field "split"/);
    expect(importCaptions(wsDir, settings({ captions: odd, name: "o", folder: "val2017" })).record.split).toBe("val");
  });
});
