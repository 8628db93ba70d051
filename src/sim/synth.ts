/**
 * `lever data synth`: writes a synthetic world as a VQA dataset in the official VQAv2 file formats,
 * so the whole product runs through the same code paths as real data (`lever data import`,
 * `lever embed import`) while the `sim` backend, rebuilt from `world.json`, answers its questions.
 *
 * Layout of OUT:
 *   v2_OpenEnded_mscoco_{train,val}2014_questions.json   official questions files
 *   v2_mscoco_{train,val}2014_annotations.json            official annotations files (10 answers each)
 *   embeddings/{train,val}/{image,text,joint}.npy          float32 [items, dim], rows L2-normalised
 *   embeddings/{train,val}/{image,text,joint}.ids.json     row → question id
 *   images/{train,val}2014/COCO_{train,val}2014_<image_id:012>.jpg   placeholder 8×8 grey JPEGs
 *   world.json                                            parameters + seed + fingerprint (no latents)
 * Every file is written atomically; world.json last, so its presence means the dataset is complete.
 */
import { join } from "node:path";
import { EMBEDDING_KINDS, type EmbeddingKind } from "../data/embeddings.js";
import { writeNpy } from "../data/npy.js";
import { writeFileAtomic } from "../util/atomic.js";
import { splitEmbeddings } from "./embed.js";
import type { WorldParamsInput } from "./params.js";
import { worldFileContent } from "./vlm.js";
import { SPLITS, type Split, World } from "./world.js";

export const WORLD_FILE = "world.json";

export const questionsFileName = (split: Split) => `v2_OpenEnded_mscoco_${split}2014_questions.json`;
export const annotationsFileName = (split: Split) => `v2_mscoco_${split}2014_annotations.json`;
/** Embedding matrix of a split (`.npy`; its ids beside it as `<same>.ids.json`). */
export const embeddingFileName = (split: Split, kind: EmbeddingKind) => join("embeddings", split, `${kind}.npy`);
export const IMAGES_DIR = "images";
export const imageFileName = (split: Split, imageId: number) =>
  join(`${split}2014`, `COCO_${split}2014_${String(imageId).padStart(12, "0")}.jpg`);

export interface SynthOptions {
  out: string;
  params: WorldParamsInput;
  /** Write placeholder image files (default true). */
  images?: boolean;
}

/** What `lever data synth` wrote: per split the counts of its world's kind (VQA: questions and images). */
export interface SynthSummary<Counts = { questions: number; images: number }> {
  out: string;
  worldFile: string;
  fingerprint: string;
  counts: Record<Split, Counts>;
  embeddingDim: number;
  files: string[];
}

const INFO = {
  description: "Synthetic VQA world written by `lever data synth` (answers follow the simulated VLM's world).",
  version: "2.0",
  year: 2014,
  contributor: "lever",
  date_created: "synthetic",
};
const LICENSE = { url: "https://creativecommons.org/licenses/by/4.0/", name: "CC BY 4.0" };

export function writeSynthDataset(options: SynthOptions): SynthSummary {
  const world = World.generate(options.params);
  const files: string[] = [];
  const write = (relative: string, data: string | Uint8Array | Uint8Array[]) => {
    writeFileAtomic(join(options.out, relative), data);
    files.push(relative);
  };
  const counts = {} as SynthSummary["counts"];
  for (const split of SPLITS) {
    const items = world.itemsOf(split);
    const images = world.imagesOf(split);
    counts[split] = { questions: items.length, images: images.length };
    write(questionsFileName(split), JSON.stringify(questionsFile(world, split, items)));
    write(annotationsFileName(split), JSON.stringify(annotationsFile(world, split, items)));
    writeSplitEmbeddings(options.out, split, splitEmbeddings(world, split), files);
    if (options.images !== false)
      for (const image of images) write(join(IMAGES_DIR, imageFileName(split, image.imageId)), PLACEHOLDER_JPEG);
  }
  return finishSynth(options.out, write, worldFileContent(world), world.params.embedding.dim, counts, files);
}

/** Writes `world.json` last (its presence means the dataset is complete) and returns the summary. */
export function finishSynth<Counts>(
  out: string,
  write: (relative: string, data: string) => void,
  worldFile: { fingerprint: string },
  embeddingDim: number,
  counts: Record<Split, Counts>,
  files: string[],
): SynthSummary<Counts> {
  write(WORLD_FILE, `${JSON.stringify(worldFile, null, 2)}\n`);
  return { out, worldFile: join(out, WORLD_FILE), fingerprint: worldFile.fingerprint, counts, embeddingDim, files };
}

/** A split's three embedding matrices (`.npy`) and their row ids (`.ids.json`), written atomically; names added to `files`. */
export function writeSplitEmbeddings(
  out: string,
  split: Split,
  embeddings: { ids: string[]; dim: number } & Record<EmbeddingKind, Float32Array>,
  files: string[],
): void {
  for (const kind of EMBEDDING_KINDS) {
    const file = embeddingFileName(split, kind);
    writeNpy(join(out, file), embeddings[kind], [embeddings.ids.length, embeddings.dim], "<f4");
    files.push(file);
    writeFileAtomic(join(out, `${file}.ids.json`), JSON.stringify(embeddings.ids));
    files.push(`${file}.ids.json`);
  }
}

function questionsFile(world: World, split: Split, items: number[]) {
  return {
    info: INFO,
    task_type: "Open-Ended",
    data_type: "mscoco",
    data_subtype: `${split}2014`,
    questions: items.map((i) => ({
      image_id: world.images[world.imageOf[i]].imageId,
      question: world.questions[i],
      question_id: Number(world.questionIds[i]),
    })),
    license: LICENSE,
  };
}

function annotationsFile(world: World, split: Split, items: number[]) {
  return {
    info: INFO,
    data_type: "mscoco",
    data_subtype: `${split}2014`,
    annotations: items.map((i) => {
      const spec = world.typeSpec(world.qtype[i]);
      return {
        question_id: Number(world.questionIds[i]),
        image_id: world.images[world.imageOf[i]].imageId,
        question_type: spec.questionType,
        answer_type: spec.answerType,
        multiple_choice_answer: world.shownAnswer[i],
        answers: world.annotatorAnswers[i].map((answer, k) => ({
          answer,
          answer_confidence: world.annotatorConfidences[i][k],
          answer_id: k + 1,
        })),
      };
    }),
    license: LICENSE,
  };
}

/**
 * A valid baseline JPEG of 8×8 mid-grey pixels (JFIF-less, 1 component): quantisation table of
 * ones, one-code Huffman tables (DC category 0, AC end-of-block), one block whose DC difference is
 * 0, i.e. every sample 128 after the level shift. Entropy data: bits "0" (DC) "0" (EOB), 1-padded.
 */
export const PLACEHOLDER_JPEG: Uint8Array = Uint8Array.from([
  ...[0xff, 0xd8], // SOI
  ...[0xff, 0xdb, 0x00, 0x43, 0x00, ...new Array<number>(64).fill(1)], // DQT: table 0, 8-bit, all ones
  ...[0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x08, 0x00, 0x08, 0x01, 0x01, 0x11, 0x00], // SOF0: 8×8, 1 component
  ...[0xff, 0xc4, 0x00, 0x14, 0x00, 0x01, ...new Array<number>(15).fill(0), 0x00], // DHT DC0: one 1-bit code → 0
  ...[0xff, 0xc4, 0x00, 0x14, 0x10, 0x01, ...new Array<number>(15).fill(0), 0x00], // DHT AC0: one 1-bit code → EOB
  ...[0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00], // SOS: component 1, tables 0/0, Ss 0, Se 63
  0x3f, // entropy-coded data: "00" + six 1-bits of padding
  ...[0xff, 0xd9], // EOI
]);
