import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  evaluateVqa,
  normalizeAnswer,
  prepareGroundTruth,
  pythonRound,
  stripAnswer,
  vqaAccuracy,
} from "../../src/metrics/vqa.js";
import {
  readVqaFile,
  VqaAnnotationsFileSchema,
  VqaQuestionsFileSchema,
  VqaResultsFileSchema,
} from "../../src/metrics/vqa-files.js";
import { processPunctuation, VQA_CONTRACTION_COUNT } from "../../src/metrics/vqa-normalize.js";
import { LeverError } from "../../src/util/errors.js";

const FIXTURES = join(import.meta.dirname, "../fixtures/metric");

describe("normalizeAnswer (official processPunctuation + processDigitArticle)", () => {
  // GT-Vision-Lab/VQA vqaEval.py a013f00 and apple/axlearn metrics_vqa_test.py (a reimplementation of a013f00).
  const vectors: [string, string][] = [
    ["n/a", "n"], // "/" not next to a space → space; "a" is an article
    ["no", "no"],
    ["no one", "no 1"],
    ["yes", "yes"],
    ["0-0", "0 0"],
    ["0-9", "0 9"],
    ["02/12/2011", "02 12 2011"],
    ["07-23-98", "07 23 98"],
    ["1/4", "1 4"],
    ["10-2", "10 2"],
    ["11/30/98", "11 30 98"],
    ["2-1", "2 1"],
    ["20+", "20"], // "+" → space, then split drops the trailing space
    ["2008/12/07", "2008 12 07"],
    ["333-3333", "333 3333"],
    ["388", "388"],
    ["4-5", "4 5"],
    ["4/5", "4 5"],
    ["658-7245", "658 7245"],
    ["6 fifty-five", "6 fifty 5"], // only whole words are number words: "fifty" stays
    ["8 - 2", "8 2"], // "-" touches a space → deleted; split collapses the double space
    ["none", "0"],
    ["", ""],
    ["a", ""],
    ["pennette rigate", "pennette rigate"],
    ["crock-pot", "crock pot"],
    ["cs-drz", "cs drz"],
    ["horse, man", "horse man"],
    ["june 29, 2013", "june 29 2013"],
    ["full/0136", "full 0136"],
    ["t-shirt", "t shirt"],
    ["t-shirts", "t shirts"],
    ["streamers_and_fake_records", "streamers and fake records"],
    ["stop_sign", "stop sign"],
    ["1980 harley-davidson", "1980 harley davidson"],
    [
      "6 flowering plants, too many individual flowers to count",
      "6 flowering plants too many individual flowers to count",
    ],
    ["black/white", "black white"],
    ["blue, gray", "blue gray"],
    ["blueberry, strawberry and banana", "blueberry strawberry and banana"],
    ["chicken, rice, vegetables", "chicken rice vegetables"],
    ["hammer time!", "hammer time"],
    ["?", ""],
    ["???", ""],
    ["someone", "someone"],
    ["skateboard", "skateboard"],
    // Extra vectors, checked by running vqaEval.py a013f00.
    ["Mr. Smith.", "mr smith"],
    ["3.5", "3.5"], // period followed by a digit survives
    ["1,000 people", "1000 people"], // digit,digit anywhere → every punctuation mark is deleted
    ["T-shirt", "t shirt"],
    ["black & white", "black & white"], // "&" is not in the list
    ["10:30", "10:30"], // ":" is not in the list
    ["dont", "don't"],
    ["don't shoot", "don't shoot"],
  ];
  test.each(vectors)("normalizes %j to %j", (input, expected) => {
    expect(normalizeAnswer(input)).toBe(expected);
  });

  test("has the 120 contraction entries of a013f00", () => {
    expect(VQA_CONTRACTION_COUNT).toBe(120);
  });

  test("expands contractions word by word, including the sic entry and never the capitalised keys", () => {
    expect(normalizeAnswer("whats up")).toBe("what's up");
    expect(normalizeAnswer("twas")).toBe("'twas");
    expect(normalizeAnswer("somebody'd")).toBe("somebodyd"); // sic in the official table
    // "Im" is a key, but lookup happens after lower-casing, so it never matches.
    expect(normalizeAnswer("Im")).toBe("im");
    expect(normalizeAnswer("it's")).toBe("it's");
  });

  test("maps number words and drops articles after lower-casing whole words only", () => {
    expect(normalizeAnswer("The The a an")).toBe("");
    expect(normalizeAnswer("none of the above")).toBe("0 of above");
    expect(normalizeAnswer("Two\tdogs\n")).toBe("2 dogs");
    expect(normalizeAnswer("one, two")).toBe("1 2"); // ", " → "," deleted
  });

  test("decides delete-or-space on the original text while replacing in the running text", () => {
    // "-" is not next to a space in the original → space; "," is (", ") → deleted. Then "a" drops.
    expect(normalizeAnswer("a-b, c")).toBe("b c");
    // ";" becomes a space first, so the RUNNING text has " -"; the original has no space next to
    // "-", so every "-" becomes a space (testing the running text would glue "z-w" into "zw").
    expect(normalizeAnswer("x;-y z-w")).toBe("x y z w");
    // digit-comma-digit anywhere deletes every mark, even the "-" between letters.
    expect(processPunctuation("1,2-3")).toBe("123");
    expect(processPunctuation("a,b 1,2")).toBe("ab 12");
    expect(processPunctuation("hello,world")).toBe("hello world");
  });

  test("removes periods not followed by a digit, but at most 32 of them (re.UNICODE lands in the count slot)", () => {
    expect(normalizeAnswer(".".repeat(32))).toBe("");
    expect(normalizeAnswer(".".repeat(33))).toBe("."); // 33rd period survives
    expect(processPunctuation("a.".repeat(40))).toBe(`${"a".repeat(32)}${"a.".repeat(8)}`);
    expect(normalizeAnswer("4.5.")).toBe("4.5");
    expect(normalizeAnswer("U.S.A.")).toBe("usa");
  });

  test("uses Python's whitespace and digit classes, not JavaScript's", () => {
    expect(normalizeAnswer("x\u00a0y")).toBe("x y"); // NBSP splits in both
    expect(normalizeAnswer("x\u001cy")).toBe("x y"); // U+001C is Python whitespace, not JS \s
    expect(normalizeAnswer("x\ufeffy")).toBe("x\ufeffy"); // U+FEFF is JS \s, not Python whitespace
    expect(stripAnswer("\u0085 yes \u0085")).toBe("yes");
    expect(processPunctuation("\u0661,\u0662-3")).toBe("\u0661\u06623"); // Arabic-Indic digits count as \d
    expect(normalizeAnswer("\u0663.")).toBe("\u0663");
  });

  test("lower-cases with full Unicode rules (final sigma, accents)", () => {
    expect(normalizeAnswer("ÉTÉ")).toBe("été");
    expect(normalizeAnswer("ΣΣ")).toBe("σς");
  });

  test("matches outputs of the a013f00 Python logic on random strings (fixture)", () => {
    const fixture = JSON.parse(readFileSync(join(FIXTURES, "vqa-parity.json"), "utf8")) as {
      normalize: { input: string; normalized: string }[];
    };
    expect(fixture.normalize.length).toBeGreaterThan(100);
    for (const c of fixture.normalize) expect(normalizeAnswer(c.input), JSON.stringify(c.input)).toBe(c.normalized);
  });
});

describe("vqaAccuracy", () => {
  test("gives 0, .3, .6, .9, 1 for 0..4 matching annotators out of ten", () => {
    // k matches: matching GT i sees k-1 others, non-matching sees k; mean of min(1, ·/3) over i.
    // k=1: (1·0 + 9·1/3)/10 = .3; k=2: (2·1/3 + 8·2/3)/10 = .6; k=3: (3·2/3 + 7·1)/10 = .9; k=4: 1.
    const gts = (k: number) => [...Array(k).fill("cat"), ...Array(10 - k).fill(`dog`)];
    expect(vqaAccuracy("cat", gts(0))).toBe(0);
    expect(vqaAccuracy("cat", gts(1))).toBeCloseTo(0.3, 15);
    expect(vqaAccuracy("cat", gts(2))).toBeCloseTo(0.6, 15);
    expect(vqaAccuracy("cat", gts(3))).toBeCloseTo(0.9, 15);
    expect(vqaAccuracy("cat", gts(4))).toBe(1);
    expect(vqaAccuracy("cat", gts(10))).toBe(1);
  });

  test("scores the published accuracy cases", () => {
    // "100" matches the two "100" → .6 ("about 100" stays different).
    expect(
      vqaAccuracy("100", ["about 100", "100", "0", "0", "thousands", "1", "0", "100", "many", "unknown"]),
    ).toBeCloseTo(0.6, 15);
    expect(
      vqaAccuracy("3:18", ["10:20", "10:00", "10:20", "10 19", "10:19", "10:20", "10 19", "3:18", "10:20", "10:19"]),
    ).toBeCloseTo(0.3, 15);
    const toilet = ["toilet paper", "nothing", "toilet paper", "nothing", "paper", "handle"];
    expect(
      vqaAccuracy("toilet paper", [...toilet, "toilet bowl cleaner", "valve", "toilet paper", "nothing"]),
    ).toBeCloseTo(0.9, 15);
    expect(vqaAccuracy("1", ["3", "3", "3", "1", "3", "3", "3", "1", "1", "1"])).toBe(1);
    expect(
      vqaAccuracy("none", ["panther", "none", "leather", "dog", "cat", "none", "none", "none", "none", "dog"]),
    ).toBe(1);
    expect(vqaAccuracy("a", Array(10).fill("a"))).toBe(1); // unanimous: no normalisation, "a" == "a"
  });

  test("normalises only when the GT answers disagree in the official variant, always in always-normalize", () => {
    const tenYes = Array(10).fill("yes");
    expect(vqaAccuracy("Yes", tenYes)).toBe(0); // unanimous GT: raw comparison, case matters
    expect(vqaAccuracy("Yes", tenYes, "always-normalize")).toBe(1);
    expect(vqaAccuracy("two", Array(10).fill("2"))).toBe(0);
    expect(vqaAccuracy("two", [...Array(9).fill("2"), "3"])).toBe(1); // disagreeing GT: "two" → "2", 9 matches
    // Strip still applies to unanimous GT: newline/tab → space, then strip.
    expect(vqaAccuracy(" yes\n", tenYes)).toBe(1);
  });

  test("handles digits with commas, empty answers and 'none' → '0'", () => {
    // "1,000" → "1000" (digit-comma-digit deletes the comma): 3 matches → .9
    expect(vqaAccuracy("1,000", [...Array(3).fill("1000"), ...Array(7).fill("x")])).toBeCloseTo(0.9, 15);
    expect(vqaAccuracy("", Array(10).fill(""))).toBe(1);
    // GT disagree: "" and "a" both normalise to "", so 2 matches → .6
    expect(vqaAccuracy("", ["a", "", ...Array(8).fill("b")])).toBeCloseTo(0.6, 15);
    expect(vqaAccuracy("0", ["none", "none", "none", "none", "1", "2", "3", "4", "5", "6"])).toBe(1);
  });

  test("reproduces the Python float results bit for bit (fixture from the a013f00 logic, both variants)", () => {
    const fixture = JSON.parse(readFileSync(join(FIXTURES, "vqa-parity.json"), "utf8")) as {
      accuracy: { prediction: string; gtAnswers: string[]; official: number; alwaysNormalize: number }[];
    };
    expect(fixture.accuracy.length).toBeGreaterThan(100);
    for (const c of fixture.accuracy) {
      expect(vqaAccuracy(c.prediction, c.gtAnswers), JSON.stringify(c)).toBe(c.official);
      expect(vqaAccuracy(c.prediction, c.gtAnswers, "always-normalize"), JSON.stringify(c)).toBe(c.alwaysNormalize);
    }
  });

  test("a prepared scorer gives the same answers as vqaAccuracy for many predictions", () => {
    const gts = ["2", "2", "two", "3", "2", "Two", "4", "2", "2.", "2"];
    const scorer = prepareGroundTruth(gts);
    for (const p of ["2", "two", "Two!", "3", "4", "", "2.0", "the 2"]) expect(scorer(p)).toBe(vqaAccuracy(p, gts));
  });

  test("rejects an empty GT list and an unknown variant", () => {
    expect(() => vqaAccuracy("x", [])).toThrow(LeverError);
    expect(() => vqaAccuracy("x", ["x"], "lenient" as never)).toThrow(/unknown VQA accuracy variant/);
  });
});

describe("pythonRound", () => {
  test("rounds exact binary ties to even like Python's round(x, 2), otherwise to nearest", () => {
    expect(pythonRound(0.125)).toBe(0.12); // exact tie → even (toFixed would give 0.13)
    expect(pythonRound(0.375)).toBe(0.38);
    expect(pythonRound(50.625)).toBe(50.62);
    expect(pythonRound(-0.125)).toBe(-0.12);
    expect(pythonRound(2.675)).toBe(2.67); // 2.675 is really 2.67499999… in binary
    expect(pythonRound(1.005)).toBe(1); // 1.00499999…
    expect(pythonRound(0.285)).toBe(0.28); // 0.28499999…
    expect(pythonRound(30.000000000000004)).toBe(30);
    expect(pythonRound(2.5, 0)).toBe(2);
    expect(pythonRound(3.5, 0)).toBe(4);
  });
});

describe("evaluateVqa", () => {
  const questions = readVqaFile(join(FIXTURES, "questions.json"), VqaQuestionsFileSchema, "questions");
  const annotations = readVqaFile(join(FIXTURES, "annotations.json"), VqaAnnotationsFileSchema, "annotations");
  const results = readVqaFile(join(FIXTURES, "results.json"), VqaResultsFileSchema);

  test("computes overall, per-type and per-question accuracy like the official tool", () => {
    // q1 "Red" vs ten "red" → 0 (unanimous, raw); q2 "Two" vs nine "2"-ish + "3" → 1;
    // q3 "no" vs 7 yes / 3 no → .9; q4 "1000" vs one "1,000" → .3. q5 has no result: not scored.
    // overall = 100·(0+1+.9+.3)/4 = 55; number = (1+.3)/2 = 65; yes/no = 90; other = 0.
    const r = evaluateVqa(results, questions, annotations);
    expect(r.overall).toBe(55);
    expect(r.perAnswerType).toEqual({ other: 0, number: 65, "yes/no": 90 });
    expect(r.perQuestionType).toEqual({ "what color is the": 0, "how many": 65, "is the": 90 });
    expect(r.perQuestion).toEqual({ "1": 0, "2": 100, "3": 90, "4": 30 });
    expect(r.fractions["3"]).toBeCloseTo(0.9, 15);
  });

  test("always-normalize scores the case variant as correct", () => {
    const r = evaluateVqa(results, questions, annotations, { variant: "always-normalize" });
    expect(r.overall).toBe(80); // (1+1+.9+.3)/4
    expect(r.perAnswerType.other).toBe(100);
  });

  test("names the file, record and field for a result that is not in the annotations", () => {
    const bad = [...results, { question_id: 99, answer: "x" }];
    expect(() =>
      evaluateVqa(bad, questions, annotations, { files: { results: "R.json", annotations: "A.json" } }),
    ).toThrow(
      'R.json, record "#4 (question_id 99)", field "question_id": question is not in the annotations file A.json',
    );
  });

  test("rejects a duplicate result", () => {
    const bad = [...results, { question_id: 4, answer: "x" }];
    expect(() => evaluateVqa(bad, questions, annotations)).toThrow(/duplicate result/);
  });

  test("rejects a result whose question is missing from the questions file", () => {
    const fewer = { questions: questions.questions.filter((q) => q.question_id !== 3) };
    expect(() => evaluateVqa(results, fewer, annotations)).toThrow(/not in the questions file/);
  });
});
