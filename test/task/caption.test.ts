import { describe, expect, it } from "vitest";
import { ciderScores } from "../../src/metrics/caption/cider.js";
import { tokenizeCaption } from "../../src/metrics/caption/ptb-tokenize.js";
import { CAPTION_TASK } from "../../src/task/caption.js";
import { getTask, TASK_NAMES } from "../../src/task/registry.js";
import { TASK_STAGES } from "../../src/task/types.js";

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

  it("imports from the COCO formats, reads in CIDEr, and runs every stage of the chain", () => {
    expect([...CAPTION_TASK.importers]).toEqual(["coco-captions", "karpathy"]);
    expect(CAPTION_TASK.wording.metric).toBe("CIDEr");
    expect([...CAPTION_TASK.stages]).toEqual([...TASK_STAGES]);
  });

  it("is an image under every embedding kind when it is the query (its text embedding is its answer)", () => {
    for (const kind of ["image", "text", "joint"] as const) expect(CAPTION_TASK.queryEmbedding(kind)).toBe("image");
  });

  it("post-processes to the first line without a Caption: label, and scores with CIDEr-D", () => {
    expect(CAPTION_TASK.postprocess("Caption: A dog on a couch.\nCaption: another")).toBe("A dog on a couch.");
    expect(CAPTION_TASK.postprocess("\n  a red bus  ")).toBe("a red bus");
    const items = [
      { questionId: "1", answers: ["a dog on a couch", "a brown dog lying on a sofa"] },
      { questionId: "2", answers: ["a red bus on a street", "a bus driving down the road"] },
      { questionId: "3", answers: ["two cats asleep", "cats sleeping on a bed"] },
    ].map((i) => ({
      ...i,
      imageId: i.questionId,
      question: "",
      answers: i.answers.map((answer) => ({ answer })),
      answer: i.answers[0],
      questionType: "",
      answerType: "caption",
      imagePath: null,
    }));
    const scoring = CAPTION_TASK.answering({ references: items, variant: "official" });
    // The same number pycocoevalcap's corpus mode gives image 1 among these three images.
    const corpus = ciderScores(
      items.map((item, k) => ({
        hypothesis: tokenizeCaption(["A dog on a couch.", "a red bus", "cats"][k]),
        references: item.answers.map((a) => tokenizeCaption(a.answer)),
      })),
    );
    expect(scoring.score("A dog on a couch.", items[0])).toBe(corpus.perImage[0]);
    expect(scoring.score("a red bus", items[1])).toBe(corpus.perImage[1]);
    expect(scoring.score("a red bus", items[0])).toBe(0);
    expect(scoring.gtAnswerSet("all")).toBe("majority");
  });
});
