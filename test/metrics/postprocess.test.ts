import { describe, expect, test } from "vitest";
import { postprocessVqaAnswer } from "../../src/metrics/postprocess.js";

describe("postprocessVqaAnswer (lever-plus = OpenFlamingo postprocess_vqa_generation + trim)", () => {
  test.each([
    ["yes", "yes"],
    ["two dogs Question: what is", "two dogs"], // cut before the next demonstration
    ["red<|endofchunk|>Short answer: blue", "red<|endofchunk|>"], // only the three words cut
    ["cat Answer: dog", "cat"],
    ["Short answer: cat", ""], // stop word at the start leaves nothing
    ["blue, white and red", "blue"], // cut before the first ", "
    ["1,000", "1,000"], // a comma without a following space is kept
    ["red,blue, green", "red,blue"],
    ["question: lower case is kept", "question: lower case is kept"], // case-sensitive
    ["a, b Question c", "a"], // stop word first, then the comma
    ["  yes\n", "yes"], // our addition: trim
    ["\n\nyes\nQuestion: x", "yes"],
    ["Questionable", ""], // substring match, as re.split does
    ["", ""],
  ])("turns %j into %j", (input, expected) => {
    expect(postprocessVqaAnswer(input)).toBe(expected);
  });

  test("treats null and undefined as the empty answer", () => {
    expect(postprocessVqaAnswer(null)).toBe("");
    expect(postprocessVqaAnswer(undefined)).toBe("");
  });

  test("the raw rule only trims", () => {
    expect(postprocessVqaAnswer(" blue, white Question ", "raw")).toBe("blue, white Question");
  });

  test("rejects an unknown rule", () => {
    expect(() => postprocessVqaAnswer("x", "fancy" as never)).toThrow(/unknown post-processing rule/);
  });
});
