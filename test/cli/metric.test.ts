import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";

const FIXTURES = join(import.meta.dirname, "../fixtures/metric");
const fixture = (name: string) => join(FIXTURES, name);

const runMetricCli = (args: string[]) => runCli(["metric", "vqa", ...args]);
/** `lever metric vqa …`, which must succeed; returns what it printed. */
const runMetric = (args: string[]) => runCliOk(["metric", "vqa", ...args]);

const baseArgs = (results = "results.json") => [
  "--results",
  fixture(results),
  "--questions",
  fixture("questions.json"),
  "--annotations",
  fixture("annotations.json"),
];

describe("lever metric vqa", () => {
  test("prints the variant, overall and per-type accuracy in the official layout", async () => {
    const out = await runMetric(baseArgs());
    expect(out).toContain("Variant: official");
    expect(out).toContain("Questions evaluated: 4");
    expect(out).toContain("Overall Accuracy is: 55.00");
    expect(out).toContain("how many : 65.00");
    expect(out).toContain("yes/no : 90.00");
  });

  test("scoring part of the questions warns with the counts; --require-all makes it an error", async () => {
    const partial = await runMetricCli(baseArgs());
    expect(partial.code).toBe(0);
    expect(partial.stderr).toBe(
      `warning: ${fixture("questions.json")}: scored 4 of the 5 questions (1 have no result in ${fixture("results.json")}); --require-all makes this an error\n`,
    );
    expectUserError(
      await runMetricCli([...baseArgs(), "--require-all"]),
      `error: ${fixture("results.json")}: scored 4 of the 5 questions (1 have no result in ${fixture("results.json")}); every question needs a result`,
    );
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
    const result = await runMetricCli([...baseArgs(), "--variant", "lenient"]);
    expect(result.code).toBe(2); // a usage error: one line, exit 2 like every bad input
    expect(result.stderr).toMatch(/^error: [^\n]*Allowed choices[^\n]*\n$/);
  });

  test.each([
    [
      "results-unknown-question.json",
      /record "#1 \(question_id 99\)", field "question_id": question is not in the annotations/,
    ],
    ["results-duplicate.json", /record "#2 \(question_id 1\)", field "question_id": duplicate result/],
    ["results-non-string-answer.json", /record "question_id 2", field "answer": .*expected string/],
  ])("names file, record and field for %s", async (name, message) => {
    const result = await runMetricCli(baseArgs(name));
    expectUserError(result, message);
    expectUserError(result, name);
  });

  test("names the file when it is not JSON or misses the annotations array", async () => {
    const args = baseArgs();
    args[5] = fixture("questions.json"); // questions file given as annotations: no "annotations" key
    expectUserError(await runMetricCli(args), /questions\.json, field "annotations"/);
    args[5] = fixture("does-not-exist.json");
    expectUserError(await runMetricCli(args), /does-not-exist\.json: no such file \(ENOENT\)/);
  });
});
