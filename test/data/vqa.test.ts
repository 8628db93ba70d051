import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { selectSubset } from "../../src/data/splits.js";
import { majorityAnswer, readVqaDataset } from "../../src/data/vqa.js";
import { sha256 } from "../../src/util/hash.js";
import { leverErrorOf } from "../helpers/errors.js";

const FIXTURES = resolve("test/fixtures/vqa");
const OK_Q = join(FIXTURES, "okvqa/OpenEnded_mscoco_train2014_questions.json");
const OK_A = join(FIXTURES, "okvqa/mscoco_train2014_annotations.json");
const V2_Q = join(FIXTURES, "vqav2/v2_OpenEnded_mscoco_val2014_questions.json");
const V2_A = join(FIXTURES, "vqav2/v2_mscoco_val2014_annotations.json");

const dir = mkdtempSync(join(tmpdir(), "lever-vqa-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: fixtures are edited freely to build malformed variants
type Json = Record<string, any>;
const load = (path: string): Json => JSON.parse(readFileSync(path, "utf8"));
let n = 0;
function write(value: Json | string): string {
  const path = join(dir, `variant${n++}.json`);
  writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
  return path;
}

const okvqa = (overrides: { questions?: string; annotations?: string } = {}) =>
  readVqaDataset({
    questionsFile: overrides.questions ?? OK_Q,
    annotationsFile: overrides.annotations ?? OK_A,
    split: "train",
  });

describe("majorityAnswer", () => {
  it("follows Python Counter.most_common: most frequent, ties to the first occurrence", () => {
    expect(majorityAnswer(["b", "a", "a", "b"])).toBe("b"); // a reaches 2 first, but b occurs first
    expect(majorityAnswer(["a", "b", "b"])).toBe("b");
    expect(majorityAnswer(["x"])).toBe("x");
    expect(majorityAnswer(["100 mph", "100 mph", "100 mph", "fast", "fast", "fast", "60", "60", "60", "v"])).toBe(
      "100 mph",
    );
  });
});

describe("readVqaDataset on OKVQA-style files", () => {
  const data = okvqa();

  it("joins questions and annotations into items ordered by numeric question id", () => {
    expect(data.items.map((i) => i.questionId)).toEqual([
      "57045",
      "516065",
      "1806825",
      "2971475",
      "2971476",
      "4608875",
    ]);
    expect(data.totalQuestions).toBe(6);
    const first = data.items[1];
    expect(first).toMatchObject({
      questionId: "516065",
      imageId: "51606",
      question: "What is the hairstyle of the blond called?",
      questionType: "four",
      answerType: "other",
      imagePath: null,
    });
    expect(first.answers).toHaveLength(10);
    expect(first.answers[3]).toEqual({ answer: "pony tail", confidence: "maybe", raw: "pony-tail" });
  });

  it("derives the answer as the majority of the ten (hand-computed, including ties)", () => {
    expect(data.items.map((i) => i.answer)).toEqual(["china", "pony tail", "palm", "race", "100 mph", "madagascar"]);
    expect(data.answerFrom).toEqual({ multipleChoice: 0, majority: 6 });
  });

  it("records both files with their sha256 and size, and their headers", () => {
    expect(data.files).toEqual([
      { role: "questions", path: OK_Q, sha256: sha256(readFileSync(OK_Q)), bytes: readFileSync(OK_Q).length },
      { role: "annotations", path: OK_A, sha256: sha256(readFileSync(OK_A)), bytes: readFileSync(OK_A).length },
    ]);
    expect(data.headers.questions).toEqual({ task_type: "Open-Ended", data_type: "mscoco", data_subtype: "train2014" });
    expect(data.warnings).toEqual([]);
  });
});

describe("readVqaDataset on VQAv2-style files", () => {
  it("uses multiple_choice_answer and keeps answer confidences without raw answers", () => {
    const data = readVqaDataset({ questionsFile: V2_Q, annotationsFile: V2_A, split: "val" });
    expect(data.items.map((i) => [i.questionId, i.answer])).toEqual([
      ["42000", "red"],
      ["262148000", "down"],
      ["262148001", "watching"],
      ["393225000", "no"],
      ["393225001", "2"],
    ]);
    expect(data.items[4].answers[2]).toEqual({ answer: "two", confidence: "yes" });
    expect(data.answerFrom).toEqual({ multipleChoice: 5, majority: 0 });
  });

  it("prefers multiple_choice_answer even where it differs from the majority", () => {
    const a = load(V2_A);
    a.annotations[0].multiple_choice_answer = "downward";
    const data = readVqaDataset({ questionsFile: V2_Q, annotationsFile: write(a), split: "val" });
    expect(data.items.find((i) => i.questionId === "262148000")?.answer).toBe("downward");
  });

  it("warns when the files' data_subtype does not match --split", () => {
    const data = readVqaDataset({ questionsFile: V2_Q, annotationsFile: V2_A, split: "train" });
    expect(data.warnings).toHaveLength(2);
    expect(data.warnings[0]).toContain('data_subtype is "val2014" but --split is "train"');
  });
});

describe("image paths", () => {
  it("uses <root>/<split>2014/COCO_<split>2014_<id:012>.jpg and counts missing images", () => {
    const root = join(dir, "coco");
    mkdirSync(join(root, "train2014"), { recursive: true });
    for (const id of [51606, 297147, 180682]) {
      writeFileSync(join(root, "train2014", `COCO_train2014_${String(id).padStart(12, "0")}.jpg`), "");
    }
    const data = readVqaDataset({ questionsFile: OK_Q, annotationsFile: OK_A, split: "train", images: { root } });
    expect(data.items[1].imagePath).toBe(join(root, "train2014", "COCO_train2014_000000051606.jpg"));
    expect(data.imageTemplate).toBe(`${root}/train2014/COCO_train2014_{image_id:012}.jpg`);
    // 5 distinct images (297147 has two questions); 5704 and 460887 are absent
    expect(data.missingImages).toEqual({
      checked: 5,
      count: 2,
      examples: [
        join(root, "train2014", "COCO_train2014_000000005704.jpg"),
        join(root, "train2014", "COCO_train2014_000000460887.jpg"),
      ],
    });
  });

  it("accepts COCO-named images directly in the root", () => {
    const root = join(dir, "flat");
    mkdirSync(root, { recursive: true });
    const data = readVqaDataset({ questionsFile: V2_Q, annotationsFile: V2_A, split: "val", images: { root } });
    expect(data.items[0].imagePath).toBe(join(root, "COCO_val2014_000000000042.jpg"));
    expect(data.missingImages).toMatchObject({ checked: 3, count: 3 }); // 5 questions on 3 images
  });

  it("renders an explicit template with split, padded image id and question id", () => {
    const data = readVqaDataset({
      questionsFile: V2_Q,
      annotationsFile: V2_A,
      split: "val",
      images: { template: "/data/{split}/{image_id:08}-{question_id}.jpg" },
    });
    expect(data.items[0].imagePath).toBe("/data/val/00000042-42000.jpg");
  });

  it("rejects a template with an unknown placeholder or without {image_id}", () => {
    const read = (template: string) =>
      readVqaDataset({ questionsFile: V2_Q, annotationsFile: V2_A, split: "val", images: { template } });
    expect(() => read("/d/{imageid}.jpg")).toThrow(/field "image-template": .*unknown placeholder "\{imageid\}"/);
    expect(() => read("/d/{split}.jpg")).toThrow(/must contain \{image_id\}/);
    expect(() => read("/d/{image_id.jpg")).toThrow(/unclosed/);
  });

  it("reports a missing image folder", () => {
    expect(() =>
      readVqaDataset({ questionsFile: V2_Q, annotationsFile: V2_A, split: "val", images: { root: join(dir, "nope") } }),
    ).toThrow(/nope, field "images": image folder not found/);
  });
});

describe("subsets at import", () => {
  it("first:N keeps the lowest question ids and records the spec", () => {
    const data = readVqaDataset({ questionsFile: OK_Q, annotationsFile: OK_A, split: "train", subset: "first:2" });
    expect(data.items.map((i) => i.questionId)).toEqual(["57045", "516065"]);
    expect(data.subset).toEqual({ spec: "first:2", seed: null, of: 6 });
  });

  it("random:N draws the same ids as selectSubset with the recorded seed", () => {
    const data = readVqaDataset({
      questionsFile: OK_Q,
      annotationsFile: OK_A,
      split: "train",
      subset: "random:3",
      seed: 9,
    });
    const all = okvqa().items;
    expect(data.items.map((i) => i.questionId)).toEqual(selectSubset(all, "random:3", 9).map((i) => i.questionId));
    expect(data.subset).toEqual({ spec: "random:3", seed: 9, of: 6 });
  });
});

describe("malformed files: one error naming file, record and field", () => {
  it("reports a missing file", () => {
    const missing = join(dir, "nope.json");
    expect(leverErrorOf(() => okvqa({ annotations: missing })).message).toBe(`${missing}: no such file (ENOENT)`);
  });

  it("reports bad JSON with its byte offset and the element", () => {
    const text = readFileSync(OK_A, "utf8");
    const at = text.indexOf('"question_id": 2971475') + '"question_id"'.length; // annotations[3]
    const broken = `${text.slice(0, at)}${text.slice(at + 1)}`; // drop the ":"
    const err = leverErrorOf(() => okvqa({ annotations: write(broken) }));
    const offset = at + 1; // the number where ":" was expected (fixture is ASCII: chars = bytes)
    const line = broken.slice(0, offset).split("\n").length;
    const column = offset - broken.lastIndexOf("\n", offset - 1);
    expect(err.message).toContain(`invalid JSON at byte ${offset} (line ${line}, column ${column}): Unexpected number`);
    expect(err.location.record).toBe("annotations[3]");
  });

  it("names the byte offset, line and record of non-UTF-8 input in a streamed file", () => {
    const bytes = readFileSync(OK_Q);
    const at = bytes.indexOf(Buffer.from("Which country")) + 2; // inside questions[…]'s question text
    const latin1 = Buffer.from(bytes);
    latin1[at] = 0xe9; // "é" in Latin-1: not UTF-8
    const file = write(latin1.toString("latin1"));
    writeFileSync(file, latin1);
    const line = bytes.subarray(0, at).toString("utf8").split("\n").length;
    const err = leverErrorOf(() => okvqa({ questions: file }));
    expect(err.message).toMatch(
      new RegExp(
        `^${file}, record "questions\\[\\d+\\]": not valid UTF-8 at byte ${at} \\(line ${line}, column \\d+\\)$`,
      ),
    );
  });

  it("refuses a questions file with no questions", () => {
    const empty = write({ questions: [] });
    expect(leverErrorOf(() => okvqa({ questions: empty })).message).toBe(
      `${empty}, field "questions": holds no questions (an empty dataset cannot be evaluated or trained on)`,
    );
  });

  it("reports a question without an annotation", () => {
    const a = load(OK_A);
    a.annotations = a.annotations.filter((x: Json) => x.question_id !== 1806825);
    const err = leverErrorOf(() => okvqa({ annotations: write(a) }));
    expect(err.message).toMatch(
      /record "questions\[2\] question_id 1806825", field "question_id": question has no annotation .*\(1 questions lack one\)/,
    );
    expect(err.location.file).toBe(OK_Q);
  });

  it("reports an annotation without a question", () => {
    const q = load(OK_Q);
    q.questions = q.questions.filter((x: Json) => x.question_id !== 2971475);
    const err = leverErrorOf(() => okvqa({ questions: write(q) }));
    expect(err.location).toEqual({ file: OK_A, record: "annotations[3] question_id 2971475", field: "question_id" });
    expect(err.message).toContain("no question with this id");
  });

  it("reports duplicated question ids in either file", () => {
    const q = load(OK_Q);
    q.questions.push({ ...q.questions[1] });
    expect(leverErrorOf(() => okvqa({ questions: write(q) })).message).toMatch(
      /record "questions\[6\] question_id 2971475", field "question_id": duplicated question id \(also questions\[1\]\)/,
    );
    const a = load(OK_A);
    a.annotations.push({ ...a.annotations[0] });
    expect(leverErrorOf(() => okvqa({ annotations: write(a) })).location.record).toBe(
      "annotations[6] question_id 57045",
    );
  });

  it("blames an image_id mismatch on the questions file (the annotations hold the ground truth)", () => {
    const q = load(OK_Q);
    const { question_id: id, image_id: truth } = q.questions[2];
    q.questions[2].image_id = 1;
    const file = write(q);
    const err = leverErrorOf(() => okvqa({ questions: file }));
    expect(err.location).toEqual({ file, record: `questions[2] question_id ${id}`, field: "image_id" });
    expect(err.message).toMatch(
      new RegExp(
        `image_id 1 differs from image_id ${truth} of annotations\\[\\d+\\] question_id ${id} in .*mscoco_train2014_annotations\\.json$`,
      ),
    );
  });

  it("rejects a question with other than ten answers", () => {
    const a = load(OK_A);
    a.annotations[1].answers.pop();
    const err = leverErrorOf(() => okvqa({ annotations: write(a) }));
    expect(err.message).toMatch(
      /record "annotations\[1\] question_id 516065", field "answers": expected 10 answers, found 9/,
    );
  });

  it("names the field that breaks the schema", () => {
    const a = load(OK_A);
    delete a.annotations[0].question_type;
    const missing = leverErrorOf(() => okvqa({ annotations: write(a) }));
    expect(missing.location.field).toBe("question_type");
    expect(missing.message).toMatch(/missing \(expected string\)$/);
    const b = load(OK_A);
    b.annotations[0].answers[3].answer = 7;
    expect(leverErrorOf(() => okvqa({ annotations: write(b) })).location.field).toBe("answers[3].answer");
    const q = load(OK_Q);
    q.questions[0].question_id = -5;
    expect(leverErrorOf(() => okvqa({ questions: write(q) })).location).toMatchObject({
      record: "questions[0] question_id -5",
      field: "question_id",
    });
  });

  it("reports a file without the expected top-level array", () => {
    expect(leverErrorOf(() => okvqa({ questions: OK_A })).message).toMatch(/missing top-level array "questions"/);
  });
});
