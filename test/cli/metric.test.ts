import { join } from "node:path";
import { Command } from "commander";
import { afterEach, describe, expect, test, vi } from "vitest";
import { register } from "../../src/cli/metric.js";
import { LeverError } from "../../src/util/errors.js";

const FIXTURES = join(import.meta.dirname, "../fixtures/metric");
const fixture = (name: string) => join(FIXTURES, name);

/** Runs `lever metric vqa …` in-process and returns what it printed. */
async function runMetric(args: string[]): Promise<string> {
  const program = new Command().exitOverride();
  register(program);
  let out = "";
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(["node", "lever", "metric", "vqa", ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
}

const baseArgs = (results = "results.json") => [
  "--results",
  fixture(results),
  "--questions",
  fixture("questions.json"),
  "--annotations",
  fixture("annotations.json"),
];

describe("lever metric vqa", () => {
  afterEach(() => vi.restoreAllMocks());

  test("prints the variant, overall and per-type accuracy in the official layout", async () => {
    const out = await runMetric(baseArgs());
    expect(out).toContain("Variant: official");
    expect(out).toContain("Questions evaluated: 4");
    expect(out).toContain("Overall Accuracy is: 55.00");
    expect(out).toContain("how many : 65.00");
    expect(out).toContain("yes/no : 90.00");
  });

  test("--json prints one object in percent with per-question accuracies", async () => {
    const out = await runMetric([...baseArgs(), "--json"]);
    expect(JSON.parse(out)).toEqual({
      variant: "official",
      overall: 55,
      perAnswerType: { other: 0, number: 65, "yes/no": 90 },
      perQuestionType: { "what color is the": 0, "how many": 65, "is the": 90 },
      perQuestion: { "1": 0, "2": 100, "3": 90, "4": 30 },
    });
  });

  test("--variant always-normalize changes the score of the case-variant answer", async () => {
    const out = await runMetric([...baseArgs(), "--variant", "always-normalize", "--json"]);
    expect(JSON.parse(out)).toMatchObject({ variant: "always-normalize", overall: 80 });
  });

  test("rejects an unknown variant", async () => {
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    await expect(runMetric([...baseArgs(), "--variant", "lenient"])).rejects.toThrow(/Allowed choices/);
  });

  test.each([
    [
      "results-unknown-question.json",
      /record "#1 \(question_id 99\)", field "question_id": question is not in the annotations/,
    ],
    ["results-duplicate.json", /record "#2 \(question_id 1\)", field "question_id": duplicate result/],
    ["results-non-string-answer.json", /record "question_id 2", field "answer": .*expected string/],
  ])("names file, record and field for %s", async (name, message) => {
    const run = runMetric(baseArgs(name));
    await expect(run).rejects.toThrow(LeverError);
    await expect(runMetric(baseArgs(name))).rejects.toThrow(message);
    await expect(runMetric(baseArgs(name))).rejects.toThrow(name);
  });

  test("names the file when it is not JSON or misses the annotations array", async () => {
    const args = baseArgs();
    args[5] = fixture("questions.json"); // questions file given as annotations: no "annotations" key
    await expect(runMetric(args)).rejects.toThrow(/questions\.json, field "annotations"/);
    args[5] = fixture("does-not-exist.json");
    await expect(runMetric(args)).rejects.toThrow(/does-not-exist\.json: cannot read file/);
  });
});
