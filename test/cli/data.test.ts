import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { expectUserError, runCli } from "../helpers/cli.js";

const FIXTURES = resolve("test/fixtures/vqa");
const OK_Q = join(FIXTURES, "okvqa/OpenEnded_mscoco_train2014_questions.json");
const OK_A = join(FIXTURES, "okvqa/mscoco_train2014_annotations.json");

let dir: string;
let wsDir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-cli-data-"));
  wsDir = join(dir, "ws");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));
const lever = (...args: string[]) => runCli(["--workspace", wsDir, ...args]);

const importArgs = [
  "data",
  "import",
  "--format",
  "vqa",
  "--questions",
  OK_Q,
  "--annotations",
  OK_A,
  "--split",
  "train",
];

describe("lever data import / list / inspect", () => {
  it("imports a dataset, lists it and inspects it as text and JSON", async () => {
    const imported = await lever(...importArgs, "--name", "ok", "--subset", "first:5");
    expect(imported.code).toBe(0);
    expect(imported.stdout).toContain('imported "ok": 5 items (split train; 6 questions in the files, subset first:5)');
    expect(imported.stdout).toContain("images: none given");

    const list = await lever("data", "list");
    expect(list.stdout).toMatch(
      /^name\s+split\s+source\s+items\s+subset\s+created\nok\s+train\s+vqa\s+5\s+first:5 of 6/,
    );

    const text = await lever("data", "inspect", "ok");
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("items 5, images 4, subset first:5 of 6");
    expect(text.stdout).toContain("annotators giving the item's answer: mean 5.20"); // (4+4+10+5+3)/5
    expect(text.stdout).toContain("[57045] image 5704: Which country is this food from?");
    expect(text.stdout).toContain("answer: china   (annotators: china ×4, japan ×3, korea, thailand, vietnam)");

    const json = JSON.parse((await lever("data", "inspect", "ok", "--json")).stdout);
    expect(json.agreement.histogram).toEqual([0, 0, 0, 1, 2, 1, 0, 0, 0, 0, 1]);
    expect(json.examples).toHaveLength(3);
  });

  it("says so for a directory without a workspace and does not create one", async () => {
    expectUserError(await lever("data", "list", "--json"), /^error: .*ws\/lever\.db: no lever workspace here/);
    expectUserError(await lever("data", "inspect", "x"), /^error: .*lever\.db: no lever workspace here/);
    expect(existsSync(wsDir)).toBe(false);
  });

  it("fails with exit code 2 and one line naming file, record and field on a bad file", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ annotations: [{ question_id: 57045 }] }));
    const result = await lever(
      "data",
      "import",
      "--questions",
      OK_Q,
      "--annotations",
      bad,
      "--split",
      "train",
      "--name",
      "x",
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`error: ${bad}, record "annotations[0] question_id 57045", field "image_id": missing\n`);
    expect(existsSync(wsDir)).toBe(false); // a failed import creates no workspace
  });

  it("refuses an existing name without --replace and replaces with it", async () => {
    await lever(...importArgs, "--name", "ok");
    const again = await lever(...importArgs, "--name", "ok", "--subset", "random:2", "--seed", "4");
    expectUserError(again, 'dataset "ok" already exists (use --replace');
    const replaced = await lever(...importArgs, "--name", "ok", "--subset", "random:2", "--seed", "4", "--replace");
    expect(replaced.code).toBe(0);
    const [record] = JSON.parse((await lever("data", "list", "--json")).stdout);
    expect(record).toMatchObject({ itemCount: 2, subset: { spec: "random:2", seed: 4, of: 6 } });
  });

  it("never replaces a dataset a run read (an evaluation run names it in its config)", async () => {
    await lever(...importArgs, "--name", "ok");
    const ws = Workspace.open(wsDir);
    const run = ws.createRun({ kind: "eval", config: { dataset: { name: "ok", items: "x" } }, seed: 0 });
    ws.close();
    expectUserError(
      await lever(...importArgs, "--name", "ok", "--subset", "random:2", "--replace"),
      `field "--replace": dataset "ok" was read by run ${run}, so it is never replaced; import the new data under another name (--name)`,
    );
    const [record] = JSON.parse((await lever("data", "list", "--json")).stdout);
    expect(record).toMatchObject({ itemCount: 6 });
  });

  it("validates options: format, split, subset, seed, and images vs image template", async () => {
    const cases: [string[], RegExp][] = [
      [["--format", "coco", "--name", "a"], /field "--format": unknown format "coco"/],
      [["--split", "test", "--name", "a"], /field "--split": split must be one of train, val/],
      [["--name", "a", "--subset", "first:x"], /field "--subset": expected "first:N"/],
      [["--name", "a", "--seed", "1.5"], /field "--seed": seed must be an integer/],
      [["--name", "a", "--images", dir, "--image-template", "{image_id}"], /either --images or --image-template/],
      [["--name", "../a"], /field "name": dataset name/],
    ];
    for (const [extra, pattern] of cases) {
      expectUserError(await lever(...importArgs, ...extra), pattern);
    }
    const missing = await lever("data", "import", "--questions", OK_Q);
    expect(missing.code).toBe(2); // a usage error: one line, exit 2
    expect(missing.stderr).toMatch(/^error: required option[^\n]*\n$/);
  });

  it("refuses an image id that leads out of the image folder (one line, exit 2) and imports nothing", async () => {
    const images = join(dir, "images");
    mkdirSync(images);
    const ids = { image_id: "../../../../../../../../etc/passwd", question_id: 1 };
    const questions = join(dir, "q.json");
    const annotations = join(dir, "a.json");
    writeFileSync(questions, JSON.stringify({ questions: [{ ...ids, question: "what?" }] }));
    const answers = Array.from({ length: 10 }, (_, i) => ({ answer: "x", answer_id: i + 1 }));
    writeFileSync(
      annotations,
      JSON.stringify({ annotations: [{ ...ids, answers, answer_type: "other", question_type: "what" }] }),
    );
    const template = join(images, "{image_id}");
    const args = ["data", "import", "--questions", questions, "--annotations", annotations, "--split", "val"];
    const result = await lever(...args, "--name", "evil", "--image-template", template);
    expectUserError(
      result,
      `${annotations}, record "annotations[0] question_id 1", field "image_id": image id "${ids.image_id}" makes the image path`,
    );
    expect(result.stderr).toContain(`which leaves the image folder ${images}`);
    expect(existsSync(join(wsDir, "lever.db")) ? (await lever("data", "list")).stdout : "").not.toContain("evil");
    // An id that stays inside the folder (a sub-folder) is fine.
    writeFileSync(questions, readFileSync(questions, "utf8").replaceAll(ids.image_id, "sub/../7"));
    writeFileSync(annotations, readFileSync(annotations, "utf8").replaceAll(ids.image_id, "sub/../7"));
    expect((await lever(...args, "--name", "ok", "--image-template", template)).code).toBe(0);
  });
});
