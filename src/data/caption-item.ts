/**
 * A caption item: one image with all its reference captions (COCO has 5–7 per image). Identity is the
 * image id in string form — one item per image, so an item's id is its image id. References keep
 * their file order (the official files' annotation order, Karpathy's `sentences` order): "the first
 * reference" is well defined, as Lever-LM's `captions[0]`.
 *
 * The readers (coco-captions.ts, karpathy.ts) share `buildCaptionItems`, which refuses, each with
 * one LeverError naming file, record and field: an image listed twice, a caption that is empty or
 * blank, and an image without any caption.
 * What we read of Lever-Plus and Lever-LM, and where: docs/provenance.md.
 */
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { compareQuestionIds, type VqaItem } from "./item.js";

/** An image or annotation id in a caption file: a non-negative integer or a non-empty string. */
export const CaptionFileId = z.union([z.number().int().nonnegative(), z.string().min(1)], {
  error: (issue) =>
    issue.input === undefined
      ? "is required but missing (expected an integer or a string)"
      : "must be a non-negative integer or a non-empty string",
});

export interface CaptionItem {
  /** The image id as a string (the item's identity). */
  itemId: string;
  imageId: string;
  /** Every reference caption, in file order (at least one). */
  references: string[];
  /** The COCO image folder it lives in ("train2014", "val2017"), when the file says. */
  folder: string | null;
  /** Its file name in that folder, when the file says (official files' `file_name`, Karpathy's `filename`). */
  fileName: string | null;
  /** Absolute image path, or null without images. */
  imagePath: string | null;
}

/** One image as a reader found it, before checks. */
export interface RawCaptionImage {
  imageId: string;
  folder: string | null;
  fileName: string | null;
  /** Where the image is in the file, for errors ("image_id 5"). */
  record: string;
}

/** One caption as a reader found it. */
export interface RawCaption {
  imageId: string;
  caption: string;
  /** Where the caption is in the file, for errors ("annotation id 9", "image_id 5 sentence 2"). */
  record: string;
  /** The field errors about it name. */
  field: string;
}

/**
 * Items in image-id order from a file's images and captions (captions in file order); a caption of
 * an image not among `images` is an error. `imageField` is the field an image listed twice names.
 */
export function buildCaptionItems(
  file: string,
  images: readonly RawCaptionImage[],
  captions: readonly RawCaption[],
  imageField: string,
): CaptionItem[] {
  const byId = new Map<string, CaptionItem>();
  for (const image of images) {
    if (byId.has(image.imageId))
      throw new LeverError("image listed twice", { file, record: image.record, field: imageField });
    byId.set(image.imageId, {
      itemId: image.imageId,
      imageId: image.imageId,
      references: [],
      folder: image.folder,
      fileName: image.fileName,
      imagePath: null,
    });
  }
  for (const caption of captions) {
    const item = byId.get(caption.imageId);
    if (item === undefined)
      throw new LeverError(`caption of image ${caption.imageId}, which the file does not list`, {
        file,
        record: caption.record,
        field: "image_id",
      });
    if (caption.caption.trim() === "")
      throw new LeverError("caption is empty", { file, record: caption.record, field: caption.field });
    item.references.push(caption.caption);
  }
  const items = [...byId.values()];
  for (const item of items)
    if (item.references.length === 0)
      throw new LeverError("image has no caption", { file, record: `image_id ${item.imageId}`, field: "captions" });
  return items.sort((a, b) => compareQuestionIds(a.itemId, b.itemId));
}

export const DEMO_REFERENCES = ["first", "random", "consensus"] as const;
export type DemoReference = (typeof DEMO_REFERENCES)[number];

export const DemoReferenceSchema = z
  .enum(DEMO_REFERENCES)
  .default("first")
  .describe(
    "which reference caption a demonstration shows: first (file order, as Lever-LM), random (seeded per item), consensus (highest CIDEr-D against the item's other references)",
  );

/** The `answer_type` column of a stored caption item. */
export const CAPTION_ANSWER_TYPE = "caption";

/**
 * A caption item as an `items` row (src/store/datasets.ts): question_id = image_id = the item id,
 * no question, the references as the annotator answers (file order), `answer` = the first
 * reference, question_type = the image folder (or ""), answer_type = "caption".
 */
export function captionToStored(item: CaptionItem): VqaItem {
  return {
    questionId: item.itemId,
    imageId: item.imageId,
    question: "",
    answers: item.references.map((answer) => ({ answer })),
    answer: item.references[0],
    questionType: item.folder ?? "",
    answerType: CAPTION_ANSWER_TYPE,
    imagePath: item.imagePath,
  };
}

/** The inverse of `captionToStored` (the file name is not stored). */
export function captionFromStored(row: VqaItem): CaptionItem {
  return {
    itemId: row.questionId,
    imageId: row.imageId,
    references: row.answers.map((a) => a.answer),
    folder: row.questionType === "" ? null : row.questionType,
    fileName: null,
    imagePath: row.imagePath,
  };
}

/** The name caption datasets record as their task (`details.task`; the task registry's key). */
export const CAPTION_TASK_NAME = "caption";
