/**
 * Parity with the real pycocoevalcap scorers (salaniz/pycocoevalcap at ad63453): every case of
 * test/fixtures/caption/caption-metrics.json was scored by its Bleu, Cider and Rouge on the same
 * pre-tokenized captions by test/fixtures/caption/make-fixtures.py. Equality to 1e-9, absolute.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { bleuScores } from "../../../src/metrics/caption/bleu.js";
import { ciderScores, documentFrequency } from "../../../src/metrics/caption/cider.js";
import { rougeScores } from "../../../src/metrics/caption/rouge.js";
import type { CaptionImage } from "../../../src/metrics/caption/types.js";

interface FixtureCase {
  images: { refs: string[]; hyp: string }[];
  extra?: string[][];
  expected: {
    bleu: number[];
    bleuPerImage: number[][];
    cider: number;
    ciderPerImage: number[];
    rouge: number;
    rougePerImage: number[];
    ciderFixed?: number[];
  };
}

const fixture = JSON.parse(
  readFileSync(join(import.meta.dirname, "../../fixtures/caption/caption-metrics.json"), "utf8"),
) as { source: { repo: string; commit: string }; cases: FixtureCase[] };

const TOLERANCE = 1e-9;

function expectClose(actual: readonly number[], expected: readonly number[]): void {
  expect(actual.length).toBe(expected.length);
  for (const [i, value] of actual.entries())
    expect(Math.abs(value - expected[i]), `[${i}] ${value} vs ${expected[i]}`).toBeLessThan(TOLERANCE);
}

const cases = fixture.cases.map((c, index) => {
  const images: CaptionImage[] = c.images.map((image) => ({ hypothesis: image.hyp, references: image.refs }));
  return { index, images, case: c };
});

describe("caption metrics equal pycocoevalcap's on the generated fixture", () => {
  test("the fixture is the real scorers' output on at least 200 multi-image cases", () => {
    expect(fixture.source).toEqual({
      repo: "salaniz/pycocoevalcap",
      commit: "ad63453cfab57a81a02b2949b17a91fab1c3df77",
    });
    expect(fixture.cases.length).toBeGreaterThanOrEqual(200);
    const all = fixture.cases.flatMap((c) => c.images);
    expect(all.some((image) => image.hyp === "")).toBe(true);
    expect(all.some((image) => image.refs.includes(""))).toBe(true);
    expect(all.some((image) => image.refs.includes(image.hyp))).toBe(true);
    expect(all.some((image) => image.refs.length === 7)).toBe(true);
    expect(all.some((image) => image.refs.length === 1)).toBe(true);
  });

  test.each(cases)("case $index: BLEU-1..4, corpus and per image", ({ images, case: c }) => {
    const bleu = bleuScores(images);
    expectClose(bleu.corpus, c.expected.bleu);
    for (const [k, scores] of bleu.perImage.entries()) expectClose(scores, c.expected.bleuPerImage[k]);
  });

  test.each(cases)("case $index: CIDEr-D (corpus df), corpus and per image", ({ images, case: c }) => {
    const cider = ciderScores(images);
    expectClose([cider.corpus], [c.expected.cider]);
    expectClose(cider.perImage, c.expected.ciderPerImage);
  });

  test.each(cases)("case $index: ROUGE-L, corpus and per image", ({ images, case: c }) => {
    const rouge = rougeScores(images);
    expectClose([rouge.corpus], [c.expected.rouge]);
    expectClose(rouge.perImage, c.expected.rougePerImage);
  });

  const fixedCases = cases.filter(({ case: c }) => c.extra !== undefined);
  test.each(fixedCases)(
    "case $index: CIDEr-D with fixed df from the images plus extra references",
    ({ images, case: c }) => {
      const df = documentFrequency([...images.map((image) => image.references), ...(c.extra ?? [])]);
      expectClose(ciderScores(images, df).perImage, c.expected.ciderFixed ?? []);
    },
  );
});
