/**
 * The official COCO caption files, `captions_{train,val}{2014,2017}.json`:
 * `{images: [{id, file_name, …}], annotations: [{id, image_id, caption}], …}` — one item per listed
 * image, its references the annotations of that image in file order (pycocotools' `imgToAnns` order,
 * what Lever-LM's `captions` are). The image folder ("train2014") comes from the file's name unless
 * given. Every problem is one LeverError naming file, record and field: not JSON or not this shape
 * (a missing or non-string caption, a missing id), an image listed twice, an annotation id twice,
 * an empty caption, a caption of an unlisted image, an image without a caption.
 * What we read of Lever-Plus and Lever-LM, and where: docs/provenance.md.
 */
import { basename } from "node:path";
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { readJsonFile } from "../util/files.js";
import { parseOrThrow } from "../util/validate.js";
import { buildCaptionItems, CaptionFileId, type CaptionItem } from "./caption-item.js";

const Id = CaptionFileId;

const CocoCaptionsSchema = z.object({
  images: z.array(z.object({ id: Id, file_name: z.string().min(1).optional() })).min(1),
  annotations: z.array(z.object({ id: Id, image_id: Id, caption: z.string() })),
});

/** "captions_train2014.json" → "train2014"; null for another name. */
export function cocoFolderOf(path: string): string | null {
  const match = /^captions_((?:train|val)(?:2014|2017))\.json$/.exec(basename(path));
  return match === null ? null : match[1];
}

export interface CocoCaptionsRead {
  items: CaptionItem[];
  /** The image folder the items live in (from the file name or as given), null when unknown. */
  folder: string | null;
  annotations: number;
}

/** Reads and checks an official caption file (see the header). */
export function readCocoCaptions(path: string, folder: string | null = cocoFolderOf(path)): CocoCaptionsRead {
  const file = parseCocoCaptionsFile(path);
  const seen = new Set<string>();
  for (const a of file.annotations) {
    const id = String(a.id);
    if (seen.has(id)) throw new LeverError("annotation id used twice", { file: path, record: `id ${id}`, field: "id" });
    seen.add(id);
  }
  const items = buildCaptionItems(
    path,
    file.images.map((image) => ({
      imageId: String(image.id),
      folder,
      fileName: image.file_name ?? null,
      record: `image_id ${image.id}`,
    })),
    file.annotations.map((a) => ({
      imageId: String(a.image_id),
      caption: a.caption,
      record: `annotation id ${a.id}`,
      field: "caption",
    })),
    "images[].id",
  );
  return { items, folder, annotations: file.annotations.length };
}

function parseCocoCaptionsFile(path: string): z.output<typeof CocoCaptionsSchema> {
  const value = readJsonFile(path);
  const parsed = CocoCaptionsSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  // Locate the issue inside whichever record array it is in.
  const at = parsed.error.issues[0].path[0];
  const recordsAt = at === "images" || at === "annotations" ? at : undefined;
  return parseOrThrow(CocoCaptionsSchema, value, {
    file: path,
    ...(recordsAt !== undefined ? { recordsAt, recordLabel: "id" } : {}),
  });
}
