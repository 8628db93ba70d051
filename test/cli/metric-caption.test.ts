/**
 * `lever metric caption`. The expected numbers were computed by the real pycocoevalcap scorers
 * (salaniz/pycocoevalcap ad63453: Bleu(4), Cider(), Rouge()) on the captions of
 * test/fixtures/caption/cli tokenized as ptbTokenize does (results in annotation image order 1, 2, 3):
 *   1: "a man is surfing a wave" vs "a man riding a wave on a surfboard", "a surfer rides a large wave",
 *      "the man 's surfing in the ocean";
 *   2: "two dogs play with a frisbee" vs "two dogs playing with a frisbee", "a couple of dogs play in the grass";
 *   3: "a red bus parked on the street" vs "a red bus on the street", "a double-decker bus -lrb- red -rrb- parked".
 * The fixed-df values come from the same scorer run over images 1-4 (image 4 a reference-only image).
 */
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";

const FIXTURES = join(import.meta.dirname, "../fixtures/caption/cli");
const fixture = (name: string) => join(FIXTURES, name);
const args = (results = "results.json", more: string[] = []) => [
  "metric",
  "caption",
  "--results",
  fixture(results),
  "--annotations",
  fixture("annotations.json"),
  ...more,
];

const PYCOCOEVALCAP = {
  "CIDEr-D": 2.4289856618832952,
  "BLEU-1": 0.9473684209529085,
  "BLEU-2": 0.7694837639790704,
  "BLEU-3": 0.5150613256101169,
  "BLEU-4": 6.079868777158921e-5,
  "ROUGE-L": 0.7754907799927594,
};

function expectScores(actual: Record<string, number>, expected: Record<string, number>): void {
  expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
  for (const [metric, value] of Object.entries(expected))
    expect(Math.abs(actual[metric] - value), metric).toBeLessThan(1e-9);
}

describe("lever metric caption", () => {
  test("prints CIDEr-D, BLEU-1..4 and ROUGE-L ×100 with the tokenizer and df mode", async () => {
    const out = await runCliOk(args());
    expect(out).toContain("Images evaluated: 3");
    expect(out).toContain("CIDEr-D document frequencies: corpus");
    expect(out).toContain("Scores ×100");
    expect(out).toContain("CIDEr-D: 242.90");
    expect(out).toContain("BLEU-1: 94.74");
    expect(out).toContain("BLEU-4: 0.01");
    expect(out).toContain("ROUGE-L: 77.55");
  });

  test("--json gives pycocoevalcap's corpus values and per-image scores", async () => {
    const json = JSON.parse(await runCliOk(args("results.json", ["--json"])));
    expect(json.df).toBe("corpus");
    expectScores(json.corpus, PYCOCOEVALCAP);
    expect(Object.keys(json.perImage)).toEqual(["1", "2", "3"]);
    expectScores(json.perImage["1"], {
      "CIDEr-D": 1.2665294777669687,
      "BLEU-1": 0.8333333330555557,
      "BLEU-2": 0.5773502689875534,
      "BLEU-3": 4.367902322055668e-6,
      "BLEU-4": 1.2909944482140289e-8,
      "ROUGE-L": 0.5570776255707762,
    });
    expect(Math.abs(json.perImage["3"]["CIDEr-D"] - 3.2777864971482584)).toBeLessThan(1e-9);
  });

  test("--df fixed takes document frequencies from every image of the annotations", async () => {
    const json = JSON.parse(await runCliOk(args("results.json", ["--df", "fixed", "--json"])));
    expect(json.df).toBe("fixed");
    expect(Math.abs(json.corpus["CIDEr-D"] - 2.4290756103288578)).toBeLessThan(1e-9);
    expect(Math.abs(json.perImage["2"]["CIDEr-D"] - 2.7337223935605435)).toBeLessThan(1e-9);
  });

  test("one image: corpus df is refused in one line, fixed df scores it", async () => {
    expectUserError(await runCli(args("results-single.json")), /at least two images \(got 1\).*--df fixed/);
    const json = JSON.parse(await runCliOk(args("results-single.json", ["--df", "fixed", "--json"])));
    expect(Math.abs(json.corpus["CIDEr-D"] - 1.2732183503100525)).toBeLessThan(1e-9);
  });

  test("--df-references without --df fixed is refused", async () => {
    expectUserError(await runCli(args("results.json", ["--df-references", fixture("annotations.json")])), "--df fixed");
  });

  test("rejects an unknown df mode", async () => {
    const result = await runCli(args("results.json", ["--df", "coco-val"]));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: [^\n]*Allowed choices[^\n]*\n$/);
  });

  test.each([
    ["results-missing-image-id.json", /record "#1", field "image_id": is required but missing/],
    ["results-empty-caption.json", /record "image_id 2", field "caption": is empty/],
    ["results-non-string-caption.json", /record "image_id 1", field "caption": .*expected string/],
    ["results-duplicate.json", /record "#2 \(image_id 1\)", field "image_id": duplicate result for this image/],
    ["results-unknown-image.json", /record "#1 \(image_id 99\)", field "image_id": image is not in the images/],
    ["results-malformed.json", /results-malformed\.json: not valid JSON/],
  ])("names file, record and field for %s", async (name, message) => {
    const result = await runCli(args(name));
    expectUserError(result, message);
    expectUserError(result, name);
  });

  test("names the annotations file when it is not a captions file", async () => {
    const bad = ["metric", "caption", "--results", fixture("results.json"), "--annotations", fixture("results.json")];
    expectUserError(await runCli(bad), /cli\/results\.json: .*expected object, received array/);
  });

  test("names the record of a result whose image_id is neither an integer nor a string", async () => {
    const result = await runCli(args("results-bad-image-id.json"));
    expectUserError(result, /record "image_id 1\.5", field "image_id": must be an integer or a non-empty string/);
  });
});
