import { findMissingImages } from "../../data/images.js";
import type { VqaItem } from "../../data/item.js";
import { readVqaDataset, type VqaDataset, type VqaReadOptions } from "../../data/vqa.js";
import { LeverError } from "../../util/errors.js";
import type { DatasetRecord } from "../types.js";
import { Workspace } from "../workspace.js";

export interface VqaImportOptions extends VqaReadOptions {
  name: string;
  replace?: boolean;
}

export interface VqaImportResult {
  record: DatasetRecord;
  read: Omit<VqaDataset, "items">;
  /** Embedding kinds whose records were dropped because the dataset they described was replaced. */
  droppedEmbeddings: string[];
}

/**
 * Imports official VQA files into the workspace in `workspaceDir`. All reading and validation
 * happens before the first write, and the write is one transaction, so a failed import leaves
 * the workspace as it was (and creates none if there was none).
 */
export function importVqa(workspaceDir: string, options: VqaImportOptions): VqaImportResult {
  if (Workspace.exists(workspaceDir)) {
    // Fail fast on a name clash before spending a minute reading VQAv2.
    const ws = Workspace.open(workspaceDir, { create: false });
    try {
      if (ws.getDataset(options.name) !== undefined && !options.replace) {
        throw new LeverError(`dataset "${options.name}" already exists (use --replace to overwrite it)`, {
          field: "name",
        });
      }
      if (options.replace) ws.refuseReplacingDataset(options.name);
    } finally {
      ws.close();
    }
  }
  const { items, ...read } = readVqaDataset(options);
  const ws = Workspace.open(workspaceDir);
  try {
    const droppedEmbeddings = options.replace ? ws.listEmbeddings(options.name).map((e) => e.kind) : [];
    const record = ws.putDataset(
      {
        name: options.name,
        split: options.split,
        source: "vqa",
        files: read.files,
        subset: read.subset,
        images: read.imageTemplate,
        details: {
          totalQuestions: read.totalQuestions,
          answerFrom: read.answerFrom,
          missingImages: read.missingImages.count,
          headers: read.headers,
          warnings: read.warnings,
        },
      },
      items,
      { replace: options.replace },
    );
    return { record, read, droppedEmbeddings };
  } finally {
    ws.close();
  }
}

export interface CountRow {
  value: string;
  count: number;
}

export interface DatasetSummary {
  name: string;
  split: string;
  source: string;
  items: number;
  images: number;
  subset: DatasetRecord["subset"];
  files: DatasetRecord["files"];
  itemsHash: string;
  createdAt: string;
  answerTypes: CountRow[];
  questionTypes: { distinct: number; top: CountRow[] };
  /** Answers per item: histogram (count of items with k answers). */
  answersPerItem: CountRow[];
  /**
   * How many of an item's annotators gave exactly its `answer` (the majority /
   * multiple-choice answer): histogram over 0..max and the mean.
   */
  agreement: { histogram: number[]; mean: number };
  /** Distinct images, checked now (they may have been added since the import); null without images. */
  missingImages: { checked: number; count: number; examples: string[] } | null;
  examples: VqaItem[];
}

function countBy(values: Iterable<string>): CountRow[] {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
}

/** Statistics `lever data inspect` shows. `items` must be in question-id order (loadItems). */
export function summarizeDataset(record: DatasetRecord, items: readonly VqaItem[], topTypes = 10): DatasetSummary {
  const maxAnswers = items.reduce((m, i) => Math.max(m, i.answers.length), 0);
  const histogram = new Array<number>(maxAnswers + 1).fill(0);
  let agreeing = 0;
  for (const item of items) {
    let k = 0;
    for (const a of item.answers) if (a.answer === item.answer) k++;
    histogram[k]++;
    agreeing += k;
  }
  const questionTypes = countBy(items.map((i) => i.questionType));
  return {
    name: record.name,
    split: record.split,
    source: record.source,
    items: items.length,
    images: new Set(items.map((i) => i.imageId)).size,
    subset: record.subset,
    files: record.files,
    itemsHash: record.itemsHash,
    createdAt: record.createdAt,
    answerTypes: countBy(items.map((i) => i.answerType)),
    questionTypes: { distinct: questionTypes.length, top: questionTypes.slice(0, topTypes) },
    answersPerItem: countBy(items.map((i) => String(i.answers.length))),
    agreement: { histogram, mean: items.length === 0 ? 0 : agreeing / items.length },
    missingImages: record.images === null ? null : findMissingImages(items.map((i) => i.imagePath)),
    examples: items.slice(0, 3),
  };
}
