import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { importVqa, summarizeDataset } from "../../src/store/ingest/vqa.js";
import { Workspace } from "../../src/store/workspace.js";

const FIXTURES = resolve("test/fixtures/vqa");
const OK_Q = join(FIXTURES, "okvqa/OpenEnded_mscoco_train2014_questions.json");
const OK_A = join(FIXTURES, "okvqa/mscoco_train2014_annotations.json");
const V2_Q = join(FIXTURES, "vqav2/v2_OpenEnded_mscoco_val2014_questions.json");
const V2_A = join(FIXTURES, "vqav2/v2_mscoco_val2014_annotations.json");

let dir: string;
let wsDir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-import-"));
  wsDir = join(dir, "ws");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const okvqa = { name: "okvqa-train", questionsFile: OK_Q, annotationsFile: OK_A, split: "train" };

function snapshot(): unknown {
  const ws = Workspace.open(wsDir, { create: false });
  try {
    return ws.listDatasets().map((d) => ({ ...d, items: ws.loadItems(d.name) }));
  } finally {
    ws.close();
  }
}

describe("importVqa", () => {
  it("stores the items and a record with files, subset and import details", () => {
    const result = importVqa(wsDir, { ...okvqa, subset: "first:4" });
    expect(result.record).toMatchObject({
      name: "okvqa-train",
      split: "train",
      source: "vqa",
      itemCount: 4,
      subset: { spec: "first:4", seed: null, of: 6 },
      images: null,
      details: { totalQuestions: 6, answerFrom: { multipleChoice: 0, majority: 4 }, missingImages: 0 },
    });
    const ws = Workspace.open(wsDir);
    expect(ws.loadItems("okvqa-train").map((i) => i.questionId)).toEqual(["57045", "516065", "1806825", "2971475"]);
    expect(ws.getDataset("okvqa-train")).toEqual(result.record);
    ws.close();
  });

  it("creates no workspace when the import fails", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, '{"annotations": [');
    expect(() => importVqa(wsDir, { ...okvqa, annotationsFile: bad })).toThrow(/unexpected end of file/);
    expect(existsSync(wsDir)).toBe(false);
  });

  it("leaves an existing workspace unchanged when the import fails or the name is taken", () => {
    importVqa(wsDir, okvqa);
    const before = snapshot();
    const a = JSON.parse(readFileSync(OK_A, "utf8"));
    a.annotations[5].answers = a.annotations[5].answers.slice(0, 3);
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify(a));
    expect(() => importVqa(wsDir, { ...okvqa, annotationsFile: bad, replace: true })).toThrow(/expected 10 answers/);
    expect(() => importVqa(wsDir, { ...okvqa, name: "other", annotationsFile: bad })).toThrow(/expected 10 answers/);
    expect(() => importVqa(wsDir, okvqa)).toThrow(/already exists \(use --replace/);
    expect(snapshot()).toEqual(before);
  });

  it("replaces a dataset with --replace and reports the embedding records it dropped", () => {
    importVqa(wsDir, okvqa);
    const ws = Workspace.open(wsDir);
    ws.putEmbedding({
      dataset: "okvqa-train",
      kind: "clip",
      path: "e.npy",
      sha256: "x",
      rows: 6,
      dim: 2,
      dtype: "f32",
    });
    ws.close();
    const result = importVqa(wsDir, { ...okvqa, subset: "random:2", seed: 3, replace: true });
    expect(result.droppedEmbeddings).toEqual(["clip"]);
    expect(result.record.itemCount).toBe(2);
    expect(result.record.subset).toEqual({ spec: "random:2", seed: 3, of: 6 });
  });
});

describe("summarizeDataset", () => {
  it("computes type histograms and annotator agreement (hand-computed on the OKVQA fixture)", () => {
    const { record } = importVqa(wsDir, okvqa);
    const ws = Workspace.open(wsDir);
    const s = summarizeDataset(record, ws.loadItems("okvqa-train"), 3);
    ws.close();
    expect(s.items).toBe(6);
    expect(s.images).toBe(5); // 297147 has two questions
    expect(s.answerTypes).toEqual([{ value: "other", count: 6 }]);
    expect(s.questionTypes.distinct).toBe(6);
    expect(s.questionTypes.top.map((r) => r.value)).toEqual(["four", "how", "name the"]); // ties: alphabetical
    expect(s.answersPerItem).toEqual([{ value: "10", count: 6 }]);
    // agreeing annotators: china 4, pony tail 4, palm 10, race 5, 100 mph 3, madagascar 9
    expect(s.agreement.histogram).toEqual([0, 0, 0, 1, 2, 1, 0, 0, 0, 1, 1]);
    expect(s.agreement.mean).toBeCloseTo(35 / 6, 12);
    expect(s.missingImages).toBeNull();
    expect(s.examples.map((i) => i.questionId)).toEqual(["57045", "516065", "1806825"]);
  });

  it("counts answer types on VQAv2 and re-checks images at inspect time", () => {
    const root = join(dir, "coco");
    const { record } = importVqa(wsDir, {
      name: "v2",
      questionsFile: V2_Q,
      annotationsFile: V2_A,
      split: "val",
      images: { template: `${root}/{image_id}.jpg` },
    });
    expect(record.details.missingImages).toBe(3); // 5 questions on 3 images
    const ws = Workspace.open(wsDir);
    const items = ws.loadItems("v2");
    ws.close();
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root);
    writeFileSync(join(root, "42.jpg"), "");
    const s = summarizeDataset(record, items);
    expect(s.answerTypes).toEqual([
      { value: "other", count: 3 },
      { value: "number", count: 1 },
      { value: "yes/no", count: 1 },
    ]);
    expect(s.missingImages).toEqual({
      checked: 3,
      count: 2,
      examples: [join(root, "262148.jpg"), join(root, "393225.jpg")],
    });
    // down: 7 of 10 agree; watching 9; no 7; 2: 7; red 7
    expect(s.agreement.histogram[7]).toBe(4);
    expect(s.agreement.histogram[9]).toBe(1);
  });
});
