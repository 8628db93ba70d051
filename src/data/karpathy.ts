/**
 * Karpathy's COCO split file, `dataset_coco.json`:
 * `{images: [{cocoid, filepath, filename, split, sentences: [{raw, tokens, …}], …}], dataset: "coco"}`
 * with splits train (82,783 images), restval (30,504), val (5,000) and test (5,000). One item per image
 * of the chosen split, its references the `raw` sentences in file order (OpenFlamingo shows
 * `sentences[0].raw`). `restvalIntoTrain` adds restval to train (Karpathy's own 113k training set);
 * off by default, as Lever-LM and OpenFlamingo drop restval. Errors as in coco-captions.ts, records
 * named by cocoid.
 * What we read of Lever-Plus and Lever-LM, and where: docs/provenance.md.
 */
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { readJsonFile } from "../util/files.js";
import { parseOrThrow } from "../util/validate.js";
import { buildCaptionItems, CaptionFileId, type CaptionItem } from "./caption-item.js";

export const KARPATHY_SPLITS = ["train", "restval", "val", "test"] as const;
export type KarpathySplit = (typeof KARPATHY_SPLITS)[number];

const KarpathySchema = z.object({
  images: z
    .array(
      z.object({
        cocoid: CaptionFileId,
        filepath: z.string().min(1).optional(),
        filename: z.string().min(1).optional(),
        split: z.enum(KARPATHY_SPLITS),
        sentences: z.array(z.object({ raw: z.string() })),
      }),
    )
    .min(1),
});

export interface KarpathyRead {
  items: CaptionItem[];
  /** Images of each split in the file. */
  splitCounts: Record<KarpathySplit, number>;
  /** The Karpathy splits the items came from. */
  splits: KarpathySplit[];
}

/** The splits an import of `split` takes. */
export function karpathySplits(split: KarpathySplit, restvalIntoTrain: boolean): KarpathySplit[] {
  return split === "train" && restvalIntoTrain ? ["train", "restval"] : [split];
}

/** Reads and checks `dataset_coco.json`, keeping the images of `split` (see the header). */
export function readKarpathy(path: string, split: KarpathySplit, restvalIntoTrain = false): KarpathyRead {
  const file = parseOrThrow(KarpathySchema, readJsonFile(path), {
    file: path,
    recordsAt: "images",
    recordLabel: "cocoid",
  });
  const splitCounts = { train: 0, restval: 0, val: 0, test: 0 };
  for (const image of file.images) splitCounts[image.split]++;
  const splits = karpathySplits(split, restvalIntoTrain);
  const kept = file.images.filter((image) => splits.includes(image.split));
  if (kept.length === 0)
    throw new LeverError(`no image of split ${splits.join("+")} in the file`, { file: path, field: "split" });
  const items = buildCaptionItems(
    path,
    kept.map((image) => ({
      imageId: String(image.cocoid),
      folder: image.filepath ?? null,
      fileName: image.filename ?? null,
      record: `cocoid ${image.cocoid}`,
    })),
    kept.flatMap((image) =>
      image.sentences.map((sentence, k) => ({
        imageId: String(image.cocoid),
        caption: sentence.raw,
        record: `cocoid ${image.cocoid}`,
        field: `sentences[${k}].raw`,
      })),
    ),
    "cocoid",
  );
  return { items, splitCounts, splits };
}
