import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EMBEDDING_KINDS } from "../../../src/data/embeddings.js";
import { readNpy } from "../../../src/data/npy.js";
import { createVlm, simFromWorldFile } from "../../../src/icl/backend.js";
import { SimCaptionVlm } from "../../../src/sim/caption/vlm.js";
import { CaptionWorld } from "../../../src/sim/caption/world.js";
import { SimVlm } from "../../../src/sim/vlm.js";
import { Workspace } from "../../../src/store/workspace.js";
import type { VlmSettings } from "../../../src/vlm/settings.js";
import { expectUserError, runCli, runCliOk } from "../../helpers/cli.js";

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "lever-caption-synth-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const SYNTH = [
  "data",
  "synth",
  "--task",
  "caption",
  "--items",
  "60",
  "--val-items",
  "20",
  "--dim",
  "16",
  "--seed",
  "4",
];

describe("lever data synth --task caption", () => {
  it("writes official caption files that import-captions reads, embeddings keyed by item id, world.json last", async () => {
    const ws = join(root, "ws");
    const out = join(root, "world");
    const text = await runCliOk(["--workspace", ws, ...SYNTH, "--out", out, "--import", "cap"]);
    expect(text).toContain("train: 60 images");
    expect(text).toContain("imported: datasets cap-train and cap-val");
    const worldFile = JSON.parse(readFileSync(join(out, "world.json"), "utf8"));
    expect(worldFile).toMatchObject({ format: "lever.synth-caption-world/1", counts: { train: 60, val: 20 } });
    const world = CaptionWorld.generate(worldFile.params);
    expect(world.fingerprint).toBe(worldFile.fingerprint);
    const open = Workspace.open(ws);
    try {
      for (const split of ["train", "val"] as const) {
        const name = `cap-${split}`;
        const dataset = open.getDataset(name);
        expect(dataset?.details.task).toBe("caption");
        const items = open.loadItems(name);
        const expected = world.itemsOf(split);
        expect(items.map((item) => item.questionId)).toEqual(expected.map((i) => world.itemIds[i]));
        expect(items.map((item) => item.answers.map((a) => a.answer))).toEqual(
          expected.map((i) => world.references[i]),
        );
        expect(items.every((item) => item.imagePath !== null && existsSync(item.imagePath))).toBe(true);
        for (const kind of EMBEDDING_KINDS) expect(open.getEmbedding(name, kind), `${name} ${kind}`).toBeDefined();
        const ids = JSON.parse(readFileSync(join(out, "embeddings", split, "image.npy.ids.json"), "utf8"));
        expect(ids).toEqual(items.map((item) => item.questionId));
        const npy = readNpy(join(out, "embeddings", split, "text.npy"));
        expect(npy.shape).toEqual([ids.length, 16]);
      }
      // The sim backend reads the format and builds the caption simulator from the world.json beside the files.
      const dataset = open.getDataset("cap-val");
      if (dataset === undefined) throw new Error("no dataset");
      const settings = { vlm: "sim", cache: "off" } as unknown as VlmSettings;
      const setup = createVlm(open, settings, dataset);
      expect(setup.backend).toBeInstanceOf(SimCaptionVlm);
      expect(setup.sim).toBeUndefined();
      const query = world.itemIds[world.itemsOf("val")[0]];
      const [generated] = await setup.vlm.generate([
        { query: { questionId: query, imagePath: null, question: "" }, demonstrations: [] },
      ]);
      expect(generated).toMatchObject({ text: expect.stringMatching(/^the image shows|^a /) });
    } finally {
      open.close();
    }
  });

  it("keeps VQA the default, refuses VQA-only flags and unknown tasks, and an unknown world format", async () => {
    const out = join(root, "vqa");
    await runCliOk(["data", "synth", "--items", "40", "--val-items", "10", "--dim", "8", "--out", out, "--no-images"]);
    expect(JSON.parse(readFileSync(join(out, "world.json"), "utf8")).format).toBe("lever.synth-world/1");
    expect(simFromWorldFile(join(out, "world.json")).backend).toBeInstanceOf(SimVlm);
    expectUserError(
      await runCli([...SYNTH, "--concepts", "5", "--out", join(root, "c")]),
      /field "--concepts": --concepts does not apply to a caption world/,
    );
    expectUserError(
      await runCli(["data", "synth", "--task", "vqa2", "--items", "5", "--out", join(root, "d")]),
      /field "--task": unknown task "vqa2"/,
    );
    const bad = join(root, "bad.json");
    writeFileSync(bad, JSON.stringify({ format: "lever.synth-other/9" }));
    expect(() => simFromWorldFile(bad)).toThrow(/unknown world file format "lever.synth-other\/9"/);
  });
});
