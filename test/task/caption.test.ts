import { describe, expect, it } from "vitest";
import { CAPTION_TASK } from "../../src/task/caption.js";
import { getTask, TASK_NAMES } from "../../src/task/registry.js";

describe("the caption task", () => {
  it("is registered under the name caption datasets record", () => {
    expect(TASK_NAMES).toEqual(["vqa", "caption"]);
    expect(getTask("caption")).toBe(CAPTION_TASK);
  });

  it("stores an item with all its references and reads it back", () => {
    const item = {
      itemId: "42",
      imageId: "42",
      references: ["A man surfing.", "A surfer on a wave."],
      folder: "val2014",
      fileName: null,
      imagePath: "/coco/val2014/COCO_val2014_000000000042.jpg",
    };
    const row = CAPTION_TASK.codec.toStored(item);
    expect(row.answers.map((a) => a.answer)).toEqual(item.references);
    expect(CAPTION_TASK.codec.fromStored(row)).toEqual(item);
  });

  it("imports from the COCO formats, reads in CIDEr, and runs only the stages it has", () => {
    expect([...CAPTION_TASK.importers]).toEqual(["coco-captions", "karpathy"]);
    expect(CAPTION_TASK.wording.metric).toBe("CIDEr");
    expect(CAPTION_TASK.textTower).toBeNull();
    expect([...CAPTION_TASK.stages]).toEqual(["embed"]);
  });
});
