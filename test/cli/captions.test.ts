import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { demonstrationReferences } from "../../src/task/caption-reference.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";

const OFFICIAL = resolve("test/fixtures/caption-import/captions_val2014.json");
const KARPATHY = resolve("test/fixtures/caption-import/dataset_coco.json");
const VQA = resolve("test/fixtures/vqa/vqav2");

let dir: string;
let wsDir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-cli-captions-"));
  wsDir = join(dir, "ws");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));
const lever = (...args: string[]) => runCli(["--workspace", wsDir, ...args]);

describe("lever data import-captions", () => {
  it("shows the reference --demo-reference chooses, and records the rule with the dataset", async () => {
    const imported = async (name: string, rule: string) => {
      const r = await lever(
        ...["data", "import-captions", "--captions", OFFICIAL, "--name", name, "--demo-reference", rule, "--json"],
      );
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout).record;
    };
    const first = await imported("f", "first");
    const consensus = await imported("c", "consensus");
    expect(first.details.demoReference).toBeUndefined();
    expect(consensus.details.demoReference).toBe("consensus");
    // Another shown reference is other items: every stage identity downstream differs.
    expect(consensus.itemsHash).not.toBe(first.itemsHash);
    const ws = Workspace.open(wsDir);
    try {
      const items = ws.loadItems("c");
      const chosen = demonstrationReferences(
        items.map((i) => ({ itemId: i.questionId, references: i.answers.map((a) => a.answer) })),
        "consensus",
        0,
      );
      for (const item of items) expect(item.answer).toBe(chosen.get(item.questionId));
      expect(items.some((item, k) => item.answer !== ws.loadItems("f")[k].answer)).toBe(true);
    } finally {
      ws.close();
    }
  });

  it("imports the official file and Karpathy's splits", async () => {
    const out = await runCliOk([
      "--workspace",
      wsDir,
      "data",
      "import-captions",
      "--captions",
      OFFICIAL,
      "--name",
      "cv",
    ]);
    expect(out).toMatch(/imported "cv": 3 caption items \(task caption, coco-captions, split val/);
    expect(out).toMatch(/references per image: 5–7, 18 in all/);
    const karpathy = await lever(
      ...["data", "import-captions", "--format", "karpathy", "--captions", KARPATHY, "--split", "test"],
      ...["--name", "kt", "--json"],
    );
    expect(karpathy.code).toBe(0);
    expect(JSON.parse(karpathy.stdout).record).toMatchObject({ itemCount: 1, details: { task: "caption" } });
  });

  it("refuses a bad file with one line and exit 2, writing nothing", async () => {
    const bad = join(dir, "captions_train2014.json");
    writeFileSync(bad, JSON.stringify({ images: [{ id: 1 }, { id: 1 }], annotations: [] }));
    expectUserError(
      await lever("data", "import-captions", "--captions", bad, "--name", "b"),
      `error: ${bad}, record "image_id 1", field "images[].id": image listed twice`,
    );
    expect(existsSync(wsDir)).toBe(false);
  });
});

describe("stages refuse mixing tasks", () => {
  it("names the datasets and their tasks in one line", async () => {
    await runCliOk(["--workspace", wsDir, "data", "import-captions", "--captions", OFFICIAL, "--name", "cv"]);
    await runCliOk([
      ...["--workspace", wsDir, "data", "import", "--split", "val", "--name", "vq"],
      ...["--questions", join(VQA, "v2_OpenEnded_mscoco_val2014_questions.json")],
      ...["--annotations", join(VQA, "v2_mscoco_val2014_annotations.json")],
    ]);
    expectUserError(
      await lever("pools", "--queries", "cv", "--index", "vq", "--sampler", "random", "--k", "2"),
      'field "dataset": task mismatch: query dataset "cv" is caption but index dataset "vq" is vqa',
    );
    expectUserError(
      await lever("eval", "--dataset", "cv", "--index", "vq", "--retriever", "random", "--shots", "1", "--vlm", "sim"),
      'task mismatch: evaluation dataset "cv" is caption but index dataset "vq" is vqa',
    );
    // A VQA baseline on caption data is refused before any work, naming the task's retrievers.
    expectUserError(
      await lever("eval", "--dataset", "cv", "--index", "cv", "--retriever", "vote", "--shots", "1", "--vlm", "sim"),
      "the vote retriever does not run on caption data (its retrievers: zero, random, topk, consensus, informed, oracle, selector:CKPT)",
    );
  });
});
