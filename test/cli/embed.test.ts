import { mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RawImage } from "@huggingface/transformers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Rng } from "../../src/util/rng.js";
import { TINY_CLIP_DIR } from "../embed/tiny-clip.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";

let dir: string;
let wsDir: string;
let synth: string;
const lever = (...args: string[]) => runCli(["--workspace", wsDir, ...args]);
const leverOk = (...args: string[]) => runCliOk(["--workspace", wsDir, ...args]);
const compute = (dataset: string, kind: string, ...extra: string[]) =>
  lever("embed", "compute", "--dataset", dataset, "--kind", kind, "--model", TINY_CLIP_DIR, "--threads", "1", ...extra);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "lever-embed-cli-"));
  wsDir = join(dir, "ws");
  synth = join(dir, "synth");
  await runCliOk(["data", "synth", "--items", "120", "--val-items", "30", "--concepts", "6", "--out", synth]);
  // Replace the grey placeholders by distinct real JPEGs (48×40: resized and cropped by the preprocessor).
  const rng = new Rng(5).child("embed-cli-images");
  for (const split of ["train2014", "val2014"]) {
    for (const name of readdirSync(join(synth, "images", split))) {
      const rgb = Uint8ClampedArray.from({ length: 48 * 40 * 3 }, () => rng.int(256));
      await new RawImage(rgb, 48, 40, 3).save(join(synth, "images", split, name));
    }
  }
  for (const split of ["train", "val"]) {
    await leverOk(
      "data",
      "import",
      "--questions",
      join(synth, `v2_OpenEnded_mscoco_${split}2014_questions.json`),
      "--annotations",
      join(synth, `v2_mscoco_${split}2014_annotations.json`),
      "--images",
      join(synth, "images"),
      "--split",
      split,
      "--name",
      split,
    );
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("lever embed compute", () => {
  it("embeds real image files and questions, then pools and a sim evaluation run on those embeddings", async () => {
    for (const dataset of ["train", "val"])
      for (const kind of ["image", "text", "joint"]) {
        const { code, stdout, stderr } = await compute(dataset, kind, "--batch", "16");
        expect(code, stderr).toBe(0);
        expect(stdout).toMatch(new RegExp(`^stored \\d+ × 16 ${kind} embeddings for "${dataset}" \\(model `));
        expect(stdout).toMatch(/\n {2}\d+ rows computed in \d+\.\d s \(\d+\.\d rows\/s\); \d+\.\d s in all\n/);
        expect(stdout).toContain(`artefact: artifacts/embeddings/${dataset}/${kind}.npy`);
        expect(stderr).toMatch(new RegExp(`^embed ${kind} \\[#+\\] (\\d+)/\\1 100\\.0% `)); // the progress line
      }
    const pools = JSON.parse(
      await leverOk("pools", "--queries", "val", "--index", "train", "--sampler", "mix", "--k", "8", "--json"),
    );
    expect(pools).toMatchObject({ queries: 30, index: 120 });
    const { code, stdout, stderr } = await lever(
      "eval",
      "--dataset",
      "val",
      "--index",
      "train",
      "--queries",
      "first:20",
      "--shots",
      "1,2",
      "--retriever",
      "zero,random,topk-image,topk-text,topk-joint",
      "--vlm",
      "sim",
      "--world",
      join(synth, "world.json"),
      "--k",
      "8",
      "--resamples",
      "200",
    );
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/\ntopk-image\s+2\s+20\s+0/);
    expect(stdout).toMatch(/\ntopk-joint\s+2\s+20\s+0/);
  });

  it("prints the result as JSON, and no progress with --no-progress", async () => {
    const { code, stdout, stderr } = await compute("val", "text", "--json", "--no-progress");
    expect(code).toBe(0);
    expect(stderr).toBe("");
    expect(JSON.parse(stdout)).toMatchObject({ dataset: "val", kind: "text", rows: 30, dim: 16, skipped: [] });
  });

  it("reports bad input as one line naming the flag or file, with exit code 2", async () => {
    expectUserError(await compute("val", "both"), 'field "--kind": expected one of image, text, joint');
    expectUserError(
      await compute("val", "joint", "--batch", "0"),
      'field "--batch": Too small: expected number to be >0',
    );
    expectUserError(await compute("val", "joint", "--threads", "x"), 'field "--threads"');
    expectUserError(await compute("nope", "joint"), "nope");
    expectUserError(
      await lever("embed", "compute", "--dataset", "val", "--model", join(dir, "no-model")),
      `${join(dir, "no-model")}: model folder not found`,
    );
    const image = join(synth, "images", "val2014", readdirSync(join(synth, "images", "val2014"))[0]);
    const moved = `${image}.moved`;
    renameSync(image, moved);
    try {
      expectUserError(await compute("val", "image"), `${image}: image file not found (1 of `);
      // Fewer rows than the registered embedding: other content, which the evaluation above read, so it is
      // never replaced; the same split imported under another name takes it.
      expectUserError(
        await compute("val", "image", "--skip-missing", "--replace", "--no-progress"),
        'field "--replace": the "image" embedding of dataset "val" was read by run eval-0001, so it is never replaced',
      );
      await leverOk(
        ...["data", "import", "--split", "val", "--name", "val-2", "--images", join(synth, "images")],
        ...["--questions", join(synth, "v2_OpenEnded_mscoco_val2014_questions.json")],
        ...["--annotations", join(synth, "v2_mscoco_val2014_annotations.json")],
      );
      const skipped = await compute("val-2", "image", "--skip-missing");
      expect(skipped.code, skipped.stderr).toBe(0);
      expect(skipped.stdout).toMatch(
        /\n {2}skipped 1 images \(1 missing, 0 unreadable\), so \d+ questions have no row; e\.g\. /,
      );
    } finally {
      renameSync(moved, image);
    }
  });
});
