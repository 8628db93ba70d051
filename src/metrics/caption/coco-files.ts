/**
 * The two official COCO caption evaluation files (cocodataset/cocoapi PythonAPI/pycocotools/coco.py
 * `loadRes`, as coco-caption reads them), validated with zod:
 *   - results: `[{image_id, caption}]`, one candidate caption per image;
 *   - annotations: `{images: [{id, …}], annotations: [{image_id, caption, id}]}` (captions_val2014.json).
 * Errors name the file, the record (by image_id when it has one, else "#<index>") and the field.
 */
import { type ZodType, z } from "zod";
import { readJsonFile } from "../../util/files.js";
import { parseOrThrow } from "../../util/validate.js";

const ImageId = z.union([z.number().int(), z.string().min(1)], {
  error: (issue) =>
    issue.input === undefined
      ? "is required but missing (expected an integer or a string)"
      : "must be an integer or a non-empty string",
});
const Caption = z.string().refine((caption) => caption.trim().length > 0, "is empty (a caption needs words)");

export const CaptionResultsFileSchema = z.array(z.object({ image_id: ImageId, caption: Caption }));
export type CaptionResult = z.infer<typeof CaptionResultsFileSchema>[number];

export const CaptionAnnotationsFileSchema = z.object({
  images: z.array(z.object({ id: ImageId })),
  annotations: z.array(
    z.object({
      image_id: ImageId,
      caption: z.string(),
      id: z.union([z.number().int(), z.string()]).optional(),
    }),
  ),
});
export type CaptionAnnotationsFile = z.infer<typeof CaptionAnnotationsFileSchema>;

/**
 * Reads a JSON caption file (strict UTF-8) and validates it; any failure is one LeverError naming the
 * file, the record and the field. `recordsAt` is the key of the record array, or true for the array.
 */
export function readCaptionFile<S extends ZodType>(
  path: string,
  schema: S,
  recordsAt: string | true = true,
): z.output<S> {
  return parseOrThrow(schema, readJsonFile(path), { file: path, recordsAt, recordLabel: "image_id" });
}
