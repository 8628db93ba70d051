import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { captionFromStored, captionToStored } from "../../src/data/caption-item.js";
import { cocoFolderOf, readCocoCaptions } from "../../src/data/coco-captions.js";
import { LeverError } from "../../src/util/errors.js";

const FIXTURE = resolve("test/fixtures/caption-import/captions_val2014.json");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-coco-captions-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const good = () => ({
  images: [{ id: 1, file_name: "a.jpg" }, { id: 2 }],
  annotations: [
    { id: 10, image_id: 1, caption: "a dog" },
    { id: 11, image_id: 2, caption: "a cat" },
    { id: 12, image_id: 1, caption: "the dog" },
  ],
});

/** Writes `value` as captions_val2014.json in a fresh folder and reads it; returns the error message. */
function errorOf(value: unknown, raw?: string): string {
  const path = join(dir, "captions_val2014.json");
  writeFileSync(path, raw ?? JSON.stringify(value));
  try {
    readCocoCaptions(path);
  } catch (error) {
    expect(error).toBeInstanceOf(LeverError);
    const message = (error as Error).message;
    expect(message).not.toContain("\n");
    expect(message.startsWith(path)).toBe(true);
    return message;
  }
  throw new Error("expected the file to be refused");
}

describe("readCocoCaptions", () => {
  it("makes one item per image, in image-id order, with its references in file order", () => {
    const read = readCocoCaptions(FIXTURE);
    expect(read.folder).toBe("val2014");
    expect(read.annotations).toBe(18);
    expect(read.items.map((i) => i.itemId)).toEqual(["7", "42", "1000"]);
    expect(read.items.map((i) => i.references.length)).toEqual([7, 6, 5]);
    expect(read.items[1].references.slice(0, 2)).toEqual([
      "A man riding a wave on top of a surfboard.",
      "A surfer rides a large wave in the ocean.",
    ]);
    expect(read.items[1]).toMatchObject({ folder: "val2014", fileName: "COCO_val2014_000000000042.jpg" });
  });

  it("tells the image folder from the official file names only", () => {
    expect(cocoFolderOf("/x/captions_train2014.json")).toBe("train2014");
    expect(cocoFolderOf("captions_val2017.json")).toBe("val2017");
    expect(cocoFolderOf("my_captions.json")).toBeNull();
  });

  it("stores an item as an items row and back", () => {
    const item = readCocoCaptions(FIXTURE).items[0];
    const row = captionToStored(item);
    expect(row).toMatchObject({ questionId: "7", imageId: "7", question: "", answer: item.references[0] });
    expect(row.answerType).toBe("caption");
    expect(captionFromStored(row)).toEqual({ ...item, fileName: null });
  });

  it("refuses bad files with one line naming file, record and field", () => {
    expect(errorOf(null, "{ not json")).toMatch(/JSON/i);
    const nonString = good();
    (nonString.annotations[1] as { caption: unknown }).caption = 5;
    expect(errorOf(nonString)).toMatch(/record "id 11", field "caption"/);
    const missing = good();
    delete (missing.annotations[0] as { image_id?: number }).image_id;
    expect(errorOf(missing)).toMatch(/record "id 10", field "image_id": is required but missing/);
    const empty = good();
    empty.annotations[2].caption = "  ";
    expect(errorOf(empty)).toMatch(/record "annotation id 12", field "caption": caption is empty/);
    const twice = good();
    twice.images.push({ id: 2 });
    expect(errorOf(twice)).toMatch(/record "image_id 2", field "images\[\]\.id": image listed twice/);
    const idTwice = good();
    idTwice.annotations[2].id = 10;
    expect(errorOf(idTwice)).toMatch(/record "id 10", field "id": annotation id used twice/);
    const unlisted = good();
    unlisted.annotations[1].image_id = 3;
    expect(errorOf(unlisted)).toMatch(/record "annotation id 11", field "image_id": caption of image 3/);
    const bare = good();
    bare.images.push({ id: 4 });
    expect(errorOf(bare)).toMatch(/record "image_id 4", field "captions": image has no caption/);
    expect(errorOf({ images: [], annotations: [] })).toMatch(/field "images"/);
  });
});
