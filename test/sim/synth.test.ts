import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { register } from "../../src/cli/synth.js";
import { readEmbeddingFile, validateEmbedding } from "../../src/data/embeddings.js";
import { readNpy } from "../../src/data/npy.js";
import { readVqaDataset } from "../../src/data/vqa.js";
import { postprocessVqaAnswer } from "../../src/metrics/postprocess.js";
import { evaluateVqa } from "../../src/metrics/vqa.js";
import { VqaAnnotationsFileSchema, VqaQuestionsFileSchema } from "../../src/metrics/vqa-files.js";
import { splitEmbeddings } from "../../src/sim/embed.js";
import { SimOracle } from "../../src/sim/oracle.js";
import {
  annotationsFileName,
  imageFileName,
  PLACEHOLDER_JPEG,
  questionsFileName,
  writeSynthDataset,
} from "../../src/sim/synth.js";
import { SimVlm } from "../../src/sim/vlm.js";
import { World } from "../../src/sim/world.js";
import type { GenerateResult } from "../../src/vlm/types.js";

const params = { seed: 3, trainItems: 300, valItems: 80, concepts: 6, embedding: { dim: 8 } };
const out = mkdtempSync(join(tmpdir(), "lever-synth-"));
const summary = writeSynthDataset({ out, params });
const world = World.generate(params);
const readJson = (name: string) => JSON.parse(readFileSync(join(out, name), "utf8"));

describe("synthetic dataset writer", () => {
  it("writes the official VQAv2 question and annotation files with every official field", () => {
    for (const split of ["train", "val"] as const) {
      const questions = readJson(questionsFileName(split));
      const annotations = readJson(annotationsFileName(split));
      expect(Object.keys(questions).sort()).toEqual(
        ["data_subtype", "data_type", "info", "license", "questions", "task_type"].sort(),
      );
      expect(questions.task_type).toBe("Open-Ended");
      expect(questions.data_subtype).toBe(`${split}2014`);
      expect(Object.keys(questions.questions[0]).sort()).toEqual(["image_id", "question", "question_id"]);
      expect(Object.keys(annotations.annotations[0]).sort()).toEqual(
        ["answer_type", "answers", "image_id", "multiple_choice_answer", "question_id", "question_type"].sort(),
      );
      expect(Object.keys(annotations.annotations[0].answers[0]).sort()).toEqual([
        "answer",
        "answer_confidence",
        "answer_id",
      ]);
      expect(VqaQuestionsFileSchema.safeParse(questions).success).toBe(true);
      expect(VqaAnnotationsFileSchema.safeParse(annotations).success).toBe(true);
      expect(questions.questions).toHaveLength(split === "train" ? 300 : 80);
      expect(summary.counts[split].questions).toBe(questions.questions.length);
    }
  });

  it("imports through the project's VQA reader into items equal to the world's, images found", () => {
    const dataset = readVqaDataset({
      questionsFile: join(out, questionsFileName("val")),
      annotationsFile: join(out, annotationsFileName("val")),
      split: "val",
      images: { root: join(out, "images") },
    });
    const ids = world.itemsOf("val").map((i) => world.questionIds[i]);
    expect(dataset.items.map((item) => item.questionId)).toEqual(ids);
    expect(dataset.missingImages.count).toBe(0);
    for (const item of dataset.items) {
      const i = world.indexOf(item.questionId);
      expect(item.answer).toBe(world.shownAnswer[i]);
      expect(item.answers.map((a) => a.answer)).toEqual(world.annotatorAnswers[i]);
      expect(item.question).toBe(world.questions[i]);
      expect(item.imagePath).toBe(join(out, "images", imageFileName("val", world.images[world.imageOf[i]].imageId)));
    }
    expect(dataset.warnings).toEqual([]);
  });

  it("writes float32 embeddings per split and kind that validate against the dataset ids", () => {
    const expected = splitEmbeddings(world, "train");
    for (const kind of ["image", "text", "joint"] as const) {
      const path = join(out, "embeddings", "train", `${kind}.npy`);
      expect(readNpy(path).dtype).toBe("<f4");
      const file = readEmbeddingFile(path);
      expect(file.matrix.ids).toEqual(expected.ids);
      expect(Array.from(file.matrix.data)).toEqual(Array.from(expected[kind]));
      const report = validateEmbedding(file.matrix, path, expected.ids);
      expect(report.dim).toBe(8);
      expect(report.norms.min).toBeCloseTo(1, 5);
    }
  });

  it("writes one valid placeholder JPEG per image, COCO-named", () => {
    const image = world.imagesOf("train")[0];
    const bytes = readFileSync(join(out, "images", imageFileName("train", image.imageId)));
    expect(imageFileName("train", 42)).toBe(join("train2014", "COCO_train2014_000000000042.jpg"));
    expect(new Uint8Array(bytes)).toEqual(PLACEHOLDER_JPEG);
    // SOI … EOI, and every marker segment's length lands on the next marker.
    expect([bytes[0], bytes[1], bytes.at(-2), bytes.at(-1)]).toEqual([0xff, 0xd8, 0xff, 0xd9]);
    let at = 2;
    const markers: number[] = [];
    while (bytes[at] === 0xff && bytes[at + 1] !== 0xda) {
      markers.push(bytes[at + 1]);
      at += 2 + bytes.readUInt16BE(at + 2);
    }
    expect(markers).toEqual([0xdb, 0xc0, 0xc4, 0xc4]);
    expect(bytes[at + 1]).toBe(0xda); // then the scan
    const sof = PLACEHOLDER_JPEG.indexOf(0xc0) - 1;
    expect([bytes.readUInt16BE(sof + 5), bytes.readUInt16BE(sof + 7)]).toEqual([8, 8]);
    expect(summary.counts.train.images).toBe(world.imagesOf("train").length);
  });

  it("writes world.json from which the sim answers the imported data exactly as the official metric scores it", async () => {
    const sim = SimVlm.fromWorldFile(join(out, "world.json"));
    expect(sim.world.fingerprint).toBe(world.fingerprint);
    const json = readJson("world.json");
    expect(Object.keys(json).sort()).toEqual(["counts", "fingerprint", "format", "params"]); // no latents
    const dataset = readVqaDataset({
      questionsFile: join(out, questionsFileName("val")),
      annotationsFile: join(out, annotationsFileName("val")),
      split: "val",
    });
    const train = readVqaDataset({
      questionsFile: join(out, questionsFileName("train")),
      annotationsFile: join(out, annotationsFileName("train")),
      split: "train",
    }).items;
    const prompts = dataset.items.map((item, i) => ({
      query: { questionId: item.questionId, imagePath: item.imagePath, question: item.question },
      demonstrations: train.slice(i, i + 2).map((d) => ({ ...d, imagePath: d.imagePath })),
    }));
    const generated = (await sim.generate(prompts)) as GenerateResult[];
    const results = dataset.items.map((item, i) => ({
      question_id: Number(item.questionId),
      answer: postprocessVqaAnswer(generated[i].text),
    }));
    const evaluation = evaluateVqa(results, readJson(questionsFileName("val")), readJson(annotationsFileName("val")));
    const oracle = new SimOracle(sim);
    for (const [i, item] of dataset.items.entries()) {
      const demos = prompts[i].demonstrations.map((d) => d.questionId);
      expect(evaluation.fractions[item.questionId]).toBe(oracle.expectedAccuracy(item.questionId, demos));
    }
  });
});

describe("lever data synth", () => {
  const run = async (args: string[]) => {
    const program = new Command().exitOverride();
    program.configureOutput({ writeOut: () => {}, writeErr: () => {} });
    register(program);
    await program.parseAsync(["node", "lever", ...args]);
  };

  it("writes the dataset described by its flags, and refuses a non-empty folder (its own dataset, or anyone's files) without --replace", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "lever-synth-cli-")), "ds");
    const args = ["data", "synth", "--items", "300", "--val-items", "80", "--concepts", "6", "--seed", "3"];
    const log = process.stdout.write;
    process.stdout.write = (() => true) as typeof process.stdout.write;
    try {
      await run([...args, "--dim", "8", "--out", dir, "--no-images"]);
      expect(readFileSync(join(dir, "world.json"), "utf8")).toContain(world.fingerprint);
      expect(existsSync(join(dir, "images"))).toBe(false);
      await expect(run([...args, "--dim", "8", "--out", dir])).rejects.toThrow(/already there.*--replace/);
      await run([...args, "--dim", "8", "--out", dir, "--replace"]);
      expect(existsSync(join(dir, "images"))).toBe(true);
      // A folder with someone else's files: refused, the files untouched; --replace writes into it.
      const theirs = join(dir, "..", "theirs");
      mkdirSync(theirs);
      writeFileSync(join(theirs, "v2_mscoco_train2014_annotations.json"), "mine");
      await expect(run([...args, "--out", theirs])).rejects.toThrow(
        `${theirs}, field "--out": the folder is not empty and holds no synthetic dataset; choose a new or empty folder (or pass --replace to write into it anyway)`,
      );
      expect(readdirSync(theirs)).toEqual(["v2_mscoco_train2014_annotations.json"]);
      expect(readFileSync(join(theirs, "v2_mscoco_train2014_annotations.json"), "utf8")).toBe("mine");
      await run([...args, "--out", theirs, "--no-images", "--replace"]);
      expect(existsSync(join(theirs, "world.json"))).toBe(true);
    } finally {
      process.stdout.write = log;
    }
  });

  it("reports bad flags and bad parameter files naming the flag or field", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lever-synth-bad-"));
    await expect(run(["data", "synth", "--items", "ten", "--out", dir])).rejects.toThrow(/--items.*integer/);
    await expect(run(["data", "synth", "--items", "10", "--concepts", "0", "--out", dir])).rejects.toThrow(
      /--concepts/,
    );
    const file = join(dir, "params.json");
    writeFileSync(file, JSON.stringify({ model: { pull: -1 } }));
    await expect(run(["data", "synth", "--items", "10", "--params", file, "--out", dir])).rejects.toThrow(
      /params\.json.*model\.pull/,
    );
  });
});
