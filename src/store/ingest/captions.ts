/**
 * `lever data import-captions`: a caption dataset (one item per image with all its references) from
 * the official COCO caption files or Karpathy's `dataset_coco.json`, images from the COCO folder.
 * Like the VQA import, everything is read and checked before the first write and the write is one
 * transaction, so a bad file (one LeverError naming file, record and field; exit 2) leaves the
 * workspace as it was. The dataset records `details.task = "caption"` (src/task/dataset-task.ts).
 */

import { resolve } from "node:path";
import { z } from "zod";
import {
  CAPTION_TASK_NAME,
  type CaptionItem,
  captionToStored,
  type DemoReference,
  DemoReferenceSchema,
} from "../../data/caption-item.js";
import { cocoFolderOf, readCocoCaptions } from "../../data/coco-captions.js";
import { cocoCaptionTemplate, compileImageTemplate, findMissingImages, imageTemplate } from "../../data/images.js";
import { KARPATHY_SPLITS, readKarpathy } from "../../data/karpathy.js";
import { parseSubsetSpec, selectSubset, subsetRecord } from "../../data/splits.js";
import { LeverError } from "../../util/errors.js";
import { hashFileSync } from "../files.js";
import type { DatasetRecord } from "../types.js";
import { Workspace } from "../workspace.js";

export const CAPTION_FORMATS = ["coco-captions", "karpathy"] as const;

export const CaptionImportSettingsSchema = z
  .object({
    format: z
      .enum(CAPTION_FORMATS)
      .default("coco-captions")
      .describe("coco-captions: official captions_{train,val}{2014,2017}.json; karpathy: dataset_coco.json"),
    captions: z.string().min(1).describe("the caption file"),
    name: z.string().min(1).describe("dataset name in the workspace"),
    split: z
      .enum(KARPATHY_SPLITS)
      .optional()
      .describe(
        "karpathy: the split to import (required); coco-captions: the split recorded (default from the file name)",
      ),
    restvalIntoTrain: z
      .boolean()
      .default(false)
      .describe(
        "karpathy, split train: add restval's images (Karpathy's 113k; Lever-LM and OpenFlamingo leave them out)",
      ),
    folder: z
      .string()
      .regex(/^(train|val|test)(2014|2017)$/)
      .optional()
      .describe("coco-captions: the COCO image folder, e.g. val2014 (default from the file name)"),
    images: z
      .string()
      .min(1)
      .optional()
      .describe(
        "COCO root: <dir>/<folder>/COCO_<folder>_<id:012>.jpg (2014) or <dir>/<folder>/<id:012>.jpg (2017), or the files in <dir>",
      ),
    imageTemplate: z
      .string()
      .min(1)
      .optional()
      .describe(
        "image path template with {image_id} (and {split}: the item's COCO folder), e.g. /data/{split}/{image_id:012}.jpg",
      ),
    subset: z.string().min(1).default("all").describe("keep all, first:N (lowest image ids) or random:N (seeded)"),
    seed: z.number().int().default(0).describe("seed for --subset random:N and --demo-reference random"),
    demoReference: DemoReferenceSchema,
    replace: z.boolean().default(false).describe("overwrite an existing dataset of the same name"),
  })
  .strict();
export type CaptionImportSettings = z.output<typeof CaptionImportSettingsSchema>;

export interface CaptionImportResult {
  record: DatasetRecord;
  /** Images in the file's chosen split, before the subset. */
  totalImages: number;
  references: { min: number; max: number; total: number };
  missingImages: number | null;
}

interface Read {
  items: CaptionItem[];
  split: string;
  details: Record<string, unknown>;
}

function readFile(s: CaptionImportSettings): Read {
  if (s.format === "karpathy") {
    if (s.split === undefined)
      throw new LeverError("karpathy: give the split to import (train, restval, val or test)", { field: "split" });
    const read = readKarpathy(s.captions, s.split, s.restvalIntoTrain);
    return {
      items: read.items,
      split: s.split,
      details: { karpathySplits: read.splits, splitCounts: read.splitCounts },
    };
  }
  const folder = s.folder ?? cocoFolderOf(s.captions);
  const read = readCocoCaptions(s.captions, folder);
  const split = s.split ?? (folder === null ? undefined : folder.replace(/\d+$/, ""));
  if (split === undefined)
    throw new LeverError("cannot tell the split from the file name; give it (train, val, …)", { field: "split" });
  return { items: read.items, split, details: { folder, annotations: read.annotations } };
}

/** The image template for the items (null without images), and their paths rendered in place. */
function placeImages(s: CaptionImportSettings, items: CaptionItem[]): string | null {
  if (s.images !== undefined && s.imageTemplate !== undefined)
    throw new LeverError("give either images or imageTemplate, not both", { field: "images" });
  if (s.images === undefined && s.imageTemplate === undefined) return null;
  const folders = items.map((item) => item.folder);
  if (s.images !== undefined && folders.some((f) => f === null))
    throw new LeverError("cannot tell the COCO image folder from the caption file; give it (e.g. val2014)", {
      field: "folder",
    });
  const template =
    s.images !== undefined
      ? cocoCaptionTemplate(s.images, folders as string[])
      : (imageTemplate({ template: s.imageTemplate as string }, "") as string);
  const render = compileImageTemplate(template);
  for (const item of items)
    item.imagePath = render(
      { split: item.folder ?? "", imageId: item.imageId, questionId: item.itemId },
      { file: s.captions, record: `image_id ${item.imageId}` },
    );
  return template;
}

function checkName(workspaceDir: string, s: CaptionImportSettings): void {
  if (!Workspace.exists(workspaceDir)) return;
  const ws = Workspace.open(workspaceDir, { create: false });
  try {
    if (ws.getDataset(s.name) !== undefined && !s.replace)
      throw new LeverError(`dataset "${s.name}" already exists (use --replace to overwrite it)`, { field: "name" });
    if (s.replace) ws.refuseReplacingDataset(s.name);
  } finally {
    ws.close();
  }
}

/**
 * Chooses each item's shown reference by the `demoReference` rule (src/task/caption-reference.ts; the
 * task layer sits above the store, so the importer's callers hand it in).
 */
export type ShownReferences = (
  items: readonly { itemId: string; references: string[] }[],
  rule: DemoReference,
  seed: number,
) => Map<string, string>;

/** The `first` rule, the only one the store can apply itself. */
const firstReferences: ShownReferences = (items, rule) => {
  if (rule !== "first") throw new Error(`importCaptions: demoReference "${rule}" needs the task layer's chooser`);
  return new Map(items.map((item) => [item.itemId, item.references[0]]));
};

/** Imports a caption file into the workspace in `workspaceDir` (see the header). */
export function importCaptions(
  workspaceDir: string,
  s: CaptionImportSettings,
  shownReferences: ShownReferences = firstReferences,
): CaptionImportResult {
  checkName(workspaceDir, s);
  const spec = parseSubsetSpec(s.subset);
  const read = readFile(s);
  const template = placeImages(s, read.items);
  const subset = selectSubset(read.items.map(captionToStored), spec, s.seed);
  // The shown reference is the `answer` column: what demonstrations show and beams score.
  const shown = shownReferences(
    subset.map((item) => ({ itemId: item.questionId, references: item.answers.map((a) => a.answer) })),
    s.demoReference,
    s.seed,
  );
  const stored = subset.map((item) => ({ ...item, answer: shown.get(item.questionId) ?? item.answer }));
  const missing = template === null ? null : findMissingImages(stored.map((i) => i.imagePath));
  const counts = stored.map((item) => item.answers.length);
  const references = { min: Math.min(...counts), max: Math.max(...counts), total: counts.reduce((a, b) => a + b, 0) };
  const ws = Workspace.open(workspaceDir);
  try {
    const record = ws.putDataset(
      {
        name: s.name,
        split: read.split,
        source: s.format,
        files: [{ role: "captions", path: resolve(s.captions), ...hashFileSync(s.captions) }],
        subset: subsetRecord(spec, s.seed, read.items.length),
        images: template,
        details: {
          task: CAPTION_TASK_NAME,
          ...read.details,
          references,
          // Absent for `first` (the stored answer of imports before the setting existed).
          ...(s.demoReference !== "first" ? { demoReference: s.demoReference } : {}),
          missingImages: missing?.count ?? null,
        },
      },
      stored,
      { replace: s.replace },
    );
    return { record, totalImages: read.items.length, references, missingImages: missing?.count ?? null };
  } finally {
    ws.close();
  }
}
