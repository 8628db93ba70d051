import { describe, expect, test } from "vitest";
import { bleuScores } from "../../../src/metrics/caption/bleu.js";
import { ciderScores, documentFrequency } from "../../../src/metrics/caption/cider.js";
import type { CaptionAnnotationsFile } from "../../../src/metrics/caption/coco-files.js";
import { evaluateCaptions } from "../../../src/metrics/caption/evaluate.js";
import { tokenizeCaption } from "../../../src/metrics/caption/ptb-tokenize.js";
import { rougeScores } from "../../../src/metrics/caption/rouge.js";

const annotations: CaptionAnnotationsFile = {
  images: [{ id: 3 }, { id: 1 }, { id: 2 }, { id: 4 }],
  annotations: [
    { image_id: 1, caption: "A dog runs." },
    { image_id: 2, caption: "Two cats (sleeping)." },
    { image_id: 1, caption: "The dog's running!" },
    { image_id: 3, caption: "A red bus." },
    { image_id: 2, caption: "Cats on a bed." },
  ],
};
const results = [
  { image_id: 2, caption: "Two cats sleeping." },
  { image_id: 1, caption: "A dog running" },
  { image_id: 3, caption: "A bus" },
];

describe("evaluateCaptions", () => {
  test("scores the tokenized captions in the annotations' image order, references in file order", () => {
    const evaluation = evaluateCaptions(results, annotations);
    // (a JSON object lists integer keys in numeric order whatever the scoring order)
    expect(Object.keys(evaluation.perImage).sort()).toEqual(["1", "2", "3"]);
    const images = [
      { hypothesis: "a bus", references: ["a red bus"] },
      { hypothesis: "a dog running", references: ["a dog runs", "the dog 's running"] },
      { hypothesis: "two cats sleeping", references: ["two cats -lrb- sleeping -rrb-", "cats on a bed"] },
    ];
    expect(images.map((image) => tokenizeCaption(image.hypothesis))).toEqual(images.map((image) => image.hypothesis));
    expect(evaluation.corpus["CIDEr-D"]).toBe(ciderScores(images).corpus);
    expect(evaluation.corpus["BLEU-4"]).toBe(bleuScores(images).corpus[3]);
    expect(evaluation.corpus["ROUGE-L"]).toBe(rougeScores(images).corpus);
    expect(evaluation.perImage["1"]["BLEU-1"]).toBe(bleuScores(images).perImage[0][1]);
  });

  test("fixed df counts every image with references in the reference file", () => {
    const evaluation = evaluateCaptions(results.slice(0, 1), annotations, { df: "fixed" });
    const df = documentFrequency([
      ["a dog runs", "the dog 's running"],
      ["two cats -lrb- sleeping -rrb-", "cats on a bed"],
      ["a red bus"],
    ]);
    const image = { hypothesis: "two cats sleeping", references: ["two cats -lrb- sleeping -rrb-", "cats on a bed"] };
    expect(evaluation.perImage["2"]["CIDEr-D"]).toBe(ciderScores([image], df).perImage[0]);
  });

  test("an image listed without reference captions is refused, naming the record", () => {
    expect(() =>
      evaluateCaptions([{ image_id: 4, caption: "a cat" }], annotations, { files: { results: "r.json" } }),
    ).toThrow('r.json, record "#0 (image_id 4)", field "image_id": image has no reference caption');
  });

  test("an empty results list is refused", () => {
    expect(() => evaluateCaptions([], annotations)).toThrow("no results to evaluate");
  });
});
