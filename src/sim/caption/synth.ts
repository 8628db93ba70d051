/**
 * `lever data synth --task caption`: writes a caption world as the official COCO caption files, so it
 * goes through `lever data import-captions` and `lever embed import` like real data, while the `sim`
 * backend, rebuilt from `world.json`, captions its images.
 *
 * Layout of OUT (shared with the VQA writer, src/sim/synth.ts, where it can be):
 *   captions_{train,val}2014.json                          official caption files (images, annotations)
 *   embeddings/{train,val}/{image,text,joint}.npy          float32 [images, dim], rows L2-normalised
 *   embeddings/{train,val}/{image,text,joint}.ids.json     row → item id (the image id as a string)
 *   images/{train,val}2014/COCO_{train,val}2014_<image_id:012>.jpg   placeholder 8×8 grey JPEGs
 *   world.json                                            format lever.synth-caption-world/1: parameters, fingerprint, counts
 * Every file is written atomically; world.json last, so its presence means the dataset is complete.
 */
import { basename, join } from "node:path";
import { writeFileAtomic } from "../../util/atomic.js";
import {
  finishSynth,
  IMAGES_DIR,
  imageFileName,
  PLACEHOLDER_JPEG,
  type SynthSummary,
  writeSplitEmbeddings,
} from "../synth.js";
import { SPLITS, type Split } from "../world.js";
import { captionSplitEmbeddings } from "./embed.js";
import { Lexicon } from "./lexicon.js";
import type { CaptionWorldParamsInput } from "./params.js";
import { captionWorldFileContent } from "./vlm.js";
import { CaptionWorld } from "./world.js";

export const captionsFileName = (split: Split) => `captions_${split}2014.json`;

export interface CaptionSynthOptions {
  out: string;
  params: CaptionWorldParamsInput;
  /** Write placeholder image files (default true). */
  images?: boolean;
}

export type CaptionSynthSummary = SynthSummary<{ images: number; captions: number }>;

const INFO = {
  description:
    "Synthetic caption world written by `lever data synth --task caption` (captions by simulated annotators).",
  version: "1.0",
  year: 2014,
  contributor: "lever",
  date_created: "synthetic",
};
const LICENSES = [{ url: "https://creativecommons.org/licenses/by/4.0/", id: 1, name: "CC BY 4.0" }];

export function writeCaptionSynthDataset(options: CaptionSynthOptions): CaptionSynthSummary {
  const world = CaptionWorld.generate(options.params);
  const lexicon = new Lexicon();
  const files: string[] = [];
  const write = (relative: string, data: string | Uint8Array) => {
    writeFileAtomic(join(options.out, relative), data);
    files.push(relative);
  };
  const counts = {} as CaptionSynthSummary["counts"];
  let annotationId = 0;
  for (const split of SPLITS) {
    const items = world.itemsOf(split);
    const file = captionsFile(world, split, items, annotationId);
    annotationId += file.annotations.length;
    counts[split] = { images: items.length, captions: file.annotations.length };
    write(captionsFileName(split), JSON.stringify(file));
    writeSplitEmbeddings(options.out, split, captionSplitEmbeddings(world, lexicon, split), files);
    if (options.images !== false)
      for (const i of items) write(join(IMAGES_DIR, imageFileName(split, Number(world.itemIds[i]))), PLACEHOLDER_JPEG);
  }
  return finishSynth(options.out, write, captionWorldFileContent(world), world.params.embedding.dim, counts, files);
}

/** The official caption file of a split: images with id and file_name, annotations in reference order. */
function captionsFile(world: CaptionWorld, split: Split, items: number[], firstAnnotationId: number) {
  let id = firstAnnotationId;
  return {
    info: INFO,
    licenses: LICENSES,
    images: items.map((i) => {
      const imageId = Number(world.itemIds[i]);
      return { license: 1, file_name: basename(imageFileName(split, imageId)), id: imageId, width: 8, height: 8 };
    }),
    annotations: items.flatMap((i) =>
      world.references[i].map((caption) => ({ image_id: Number(world.itemIds[i]), id: ++id, caption })),
    ),
  };
}
