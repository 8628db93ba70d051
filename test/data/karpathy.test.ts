import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { karpathySplits, readKarpathy } from "../../src/data/karpathy.js";
import { LeverError } from "../../src/util/errors.js";

const FIXTURE = resolve("test/fixtures/caption-import/dataset_coco.json");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-karpathy-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

type Image = { cocoid: number; split: string; sentences: { raw: unknown }[] };
const fixture = () => JSON.parse(readFileSync(FIXTURE, "utf8")) as { images: Image[] };

function errorOf(value: unknown, split: "train" | "test" = "train"): string {
  const path = join(dir, "dataset_coco.json");
  writeFileSync(path, JSON.stringify(value));
  try {
    readKarpathy(path, split);
  } catch (error) {
    expect(error).toBeInstanceOf(LeverError);
    expect((error as Error).message).not.toContain("\n");
    return (error as Error).message;
  }
  throw new Error("expected the file to be refused");
}

describe("readKarpathy", () => {
  it("keeps the images of one split, references from `raw` in file order", () => {
    const read = readKarpathy(FIXTURE, "train");
    expect(read.splitCounts).toEqual({ train: 2, restval: 1, val: 1, test: 1 });
    expect(read.items.map((i) => i.itemId)).toEqual(["9", "25"]);
    expect(read.items[0].references[0]).toBe("A bowl of fruit on a table.");
    expect(read.items[0]).toMatchObject({ folder: "train2014", fileName: "COCO_train2014_000000000009.jpg" });
    expect(readKarpathy(FIXTURE, "test").items.map((i) => i.itemId)).toEqual(["42"]);
    expect(readKarpathy(FIXTURE, "val").items.map((i) => i.references.length)).toEqual([5]);
  });

  it("adds restval to train only when asked", () => {
    expect(karpathySplits("train", true)).toEqual(["train", "restval"]);
    expect(karpathySplits("val", true)).toEqual(["val"]);
    const read = readKarpathy(FIXTURE, "train", true);
    expect(read.items.map((i) => i.itemId)).toEqual(["9", "25", "73"]);
    expect(read.items[2]).toMatchObject({ folder: "val2014" });
    expect(read.items[2].references).toHaveLength(6);
  });

  it("refuses bad files with one line naming file, record and field", () => {
    const empty = fixture();
    empty.images[1].sentences[2].raw = "";
    expect(errorOf(empty)).toMatch(/record "cocoid 9", field "sentences\[2\]\.raw": caption is empty/);
    const nonString = fixture();
    nonString.images[1].sentences[0].raw = null;
    expect(errorOf(nonString)).toMatch(/record "cocoid 9", field "sentences\[0\]\.raw"/);
    const split = fixture();
    split.images[4].split = "dev";
    expect(errorOf(split)).toMatch(/record "cocoid 25", field "split"/);
    const twice = fixture();
    twice.images[4].cocoid = 9;
    expect(errorOf(twice)).toMatch(/record "cocoid 9", field "cocoid": image listed twice/);
    const none = fixture();
    none.images[1].sentences = [];
    expect(errorOf(none)).toMatch(/record "image_id 9", field "captions": image has no caption/);
    const noTest = fixture();
    noTest.images = noTest.images.filter((image) => image.split !== "test");
    expect(errorOf(noTest, "test")).toMatch(/field "split": no image of split test/);
  });
});
