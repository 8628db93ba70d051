/**
 * The data stage on real-data files: `data.importCaptions` imports COCO caption files (here the ones a
 * tiny caption world writes, in the official format) and their embeddings as two caption datasets,
 * once; `data.import` and `data.importCaptions` are one choice.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runData } from "../../src/experiment/data-stage.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { writeCaptionSynthDataset } from "../../src/sim/caption/synth.js";
import { Workspace } from "../../src/store/workspace.js";
import { leverErrorOf } from "../helpers/errors.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-data-stage-");
const world = join(dir, "world");
writeCaptionSynthDataset({ out: world, params: { seed: 4, trainItems: 40, valItems: 12, embedding: { dim: 8 } } });

const captionsFile = (split: string) => `captions: ${join(world, `captions_${split}2014.json`)}`;
const embeddings = (split: string) =>
  `{ image: ${join(world, "embeddings", split, "image.npy")}, text: ${join(world, "embeddings", split, "text.npy")} }`;
const FILE = `name: coco
data:
  importCaptions:
    train: { ${captionsFile("train")}, demoReference: consensus }
    val: { ${captionsFile("val")} }
    embeddings: { train: ${embeddings("train")}, val: ${embeddings("val")} }
pools: { sampler: image-sim, k: 8 }
`;

describe("data.importCaptions", () => {
  it("imports both caption splits with their settings and embeddings, once", () => {
    const [variant] = loadExperiment(write("coco.yaml", FILE)).variants;
    const ws = Workspace.open(join(dir, "ws"));
    try {
      const names = runData(ws, variant.experiment, "xcoco");
      expect(names).toEqual({ train: "xcoco-train", val: "xcoco-val" });
      const train = ws.requireDataset("xcoco-train");
      expect(train.details.task).toBe("caption");
      expect(ws.loadItems("xcoco-train")).toHaveLength(40);
      expect(ws.loadItems("xcoco-val")).toHaveLength(12);
      expect(JSON.stringify(train.details)).toContain("consensus"); // the demo reference setting reached the import
      for (const name of ["xcoco-train", "xcoco-val"])
        for (const kind of ["image", "text"]) expect(ws.getEmbedding(name, kind), `${name} ${kind}`).toBeDefined();
      expect(ws.getEmbedding("xcoco-train", "joint")).toBeUndefined();
      const hash = train.itemsHash;
      runData(ws, variant.experiment, "xcoco"); // a rerun imports nothing twice
      expect(ws.requireDataset("xcoco-train").itemsHash).toBe(hash);
    } finally {
      ws.close();
    }
  });

  it("is one choice with data.import, data.synth and data.captionSynth", () => {
    const both = FILE.replace("data:\n", "data:\n  captionSynth: { seed: 1 }\n");
    expect(leverErrorOf(() => loadExperiment(write("both.yaml", both))).message).toMatch(
      /exactly one of data\.synth, data\.captionSynth, data\.import and data\.importCaptions/,
    );
    const unknown = FILE.replace("demoReference: consensus", "demoReference: best");
    expect(leverErrorOf(() => loadExperiment(write("bad.yaml", unknown))).message).toMatch(/demoReference/);
  });
});
