import { describe, expect, test } from "vitest";
import { ciderScores, documentFrequency } from "../../../src/metrics/caption/cider.js";
import { LeverError } from "../../../src/util/errors.js";

const images = [
  { hypothesis: "a dog on a table", references: ["a dog sitting on a table", "the dog is on the table"] },
  { hypothesis: "two people", references: ["two people standing in the street"] },
  { hypothesis: "a red cat", references: ["a cat", "a red cat sitting"] },
];

describe("CIDEr-D document-frequency modes", () => {
  test("corpus mode refuses fewer than two images with one LeverError line", () => {
    expect(() => ciderScores(images.slice(0, 1))).toThrow(LeverError);
    expect(() => ciderScores(images.slice(0, 1))).toThrow(/at least two images \(got 1\).*log\(1\) = 0/);
    expect(() => ciderScores([])).toThrow(/got 0/);
  });

  test("fixed mode with the scored images' own references is corpus mode", () => {
    const df = documentFrequency(images.map((image) => image.references));
    expect(ciderScores(images, df)).toEqual(ciderScores(images));
  });

  test("fixed mode scores a single image against an external reference set", () => {
    const df = documentFrequency([...images.map((image) => image.references), ["a bird"], ["a car"]]);
    const single = ciderScores(images.slice(0, 1), df);
    expect(single.perImage).toEqual([ciderScores(images, df).perImage[0]]);
    expect(single.corpus).toBeGreaterThan(0);
  });

  test("a document frequency counts an n-gram once per image, whatever its references repeat", () => {
    const df = documentFrequency([["a a a", "a b"], ["a"]]);
    expect(df.images).toBe(2);
    expect(df.counts.get("a")).toBe(2);
    expect(df.counts.get("a a")).toBe(1);
    expect(df.counts.get("a a a")).toBe(1);
    expect(df.counts.get("b")).toBe(1);
  });

  test("a hypothesis equal to its only reference scores 10 when every n-gram is rare", () => {
    const pair = [
      { hypothesis: "x y z w", references: ["x y z w"] },
      { hypothesis: "p q", references: ["r s"] },
    ];
    expect(ciderScores(pair).perImage[0]).toBeCloseTo(10, 12);
  });
});
