import { createHash } from "node:crypto";
import type { Database } from "better-sqlite3";
import { z } from "zod";
import { type AnnotatorAnswer, compareQuestionIds, type VqaItem } from "../data/item.js";
import { check, LeverError } from "../util/errors.js";
import type { DatasetInput, DatasetRecord, EmbeddingRecord } from "./types.js";

/** Names appear in artefact paths and run configs, so keep them to a safe alphabet. */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const SourceFilesSchema = z.array(
  z.object({ role: z.string(), path: z.string(), sha256: z.string(), bytes: z.number() }),
);
const SubsetSchema = z.object({ spec: z.string(), seed: z.number().nullable(), of: z.number() }).nullable();
const DetailsSchema = z.record(z.string(), z.unknown());

interface DatasetRow {
  name: string;
  split: string;
  source: string;
  files: string;
  item_count: number;
  items_hash: string;
  subset: string | null;
  images: string | null;
  details: string;
  created_at: string;
}

/** An items row as SELECTed by loadItems, in column order. */
type ItemTuple = [
  questionId: string,
  imageId: string,
  question: string,
  answers: string,
  answerConfidences: string | null,
  rawAnswers: string | null,
  answer: string,
  questionType: string,
  answerType: string,
  imagePath: string | null,
];

/**
 * The ten annotator answers are stored as parallel JSON arrays of strings (answers, confidences,
 * raw answers; the last two NULL when no answer has them, entries null where one lacks it):
 * about a third of the size of an array of objects and twice as fast to parse back, which
 * matters when loading the 443,757 VQAv2 training items.
 */
export interface EncodedAnswers {
  answers: string;
  confidences: string | null;
  raw: string | null;
}

export function encodeAnswers(answers: readonly AnnotatorAnswer[]): EncodedAnswers {
  let hasConfidence = false;
  let hasRaw = false;
  for (const a of answers) {
    hasConfidence ||= a.confidence !== undefined;
    hasRaw ||= a.raw !== undefined;
  }
  return {
    answers: JSON.stringify(answers.map((a) => a.answer)),
    confidences: hasConfidence ? JSON.stringify(answers.map((a) => a.confidence ?? null)) : null,
    raw: hasRaw ? JSON.stringify(answers.map((a) => a.raw ?? null)) : null,
  };
}

export function decodeAnswers(encoded: EncodedAnswers): AnnotatorAnswer[] {
  const answers = JSON.parse(encoded.answers) as string[];
  const confidences = encoded.confidences === null ? null : (JSON.parse(encoded.confidences) as (string | null)[]);
  const raw = encoded.raw === null ? null : (JSON.parse(encoded.raw) as (string | null)[]);
  const out = new Array<AnnotatorAnswer>(answers.length);
  for (let i = 0; i < answers.length; i++) {
    const a: AnnotatorAnswer = { answer: answers[i] };
    const c = confidences?.[i];
    if (c !== undefined && c !== null) a.confidence = c;
    const r = raw?.[i];
    if (r !== undefined && r !== null) a.raw = r;
    out[i] = a;
  }
  return out;
}

/**
 * One item's line in the items hash: every field but the image path, in a fixed order, with the
 * answers in their stored encoding (so it is computed once for both hashing and inserting).
 */
function hashLine(item: VqaItem, encoded: EncodedAnswers): string {
  const head = JSON.stringify([
    item.questionId,
    item.imageId,
    item.question,
    item.answer,
    item.questionType,
    item.answerType,
  ]);
  return `${head}\t${encoded.answers}\t${encoded.confidences}\t${encoded.raw}\n`;
}

/**
 * Content identity of a list of items (in question-id order). Image paths are left out on purpose:
 * moving the COCO folder does not change the data; images are identified by image id.
 */
export function itemsHash(sortedItems: readonly VqaItem[]): string {
  const hash = createHash("sha256");
  for (const item of sortedItems) hash.update(hashLine(item, encodeAnswers(item.answers)));
  return hash.digest("hex");
}

export function sortItems(items: readonly VqaItem[]): VqaItem[] {
  return [...items].sort((a, b) => compareQuestionIds(a.questionId, b.questionId));
}

function checkItems(name: string, items: readonly VqaItem[]): void {
  const seen = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const id = items[i].questionId;
    check(typeof id === "string" && id.length > 0, "question id must be a non-empty string", {
      record: `dataset ${name} item ${i}`,
      field: "questionId",
    });
    if (seen.has(id)) throw new LeverError("duplicated question id", { record: id, field: "questionId" });
    seen.add(id);
  }
}

/**
 * Stores a dataset and its items in one transaction. Refuses an empty dataset, and an existing name unless `replace`;
 * replacing drops the old items and the old dataset's embedding records (they describe other data).
 */
export function putDataset(
  db: Database,
  input: DatasetInput,
  items: readonly VqaItem[],
  options: { replace?: boolean } = {},
): DatasetRecord {
  check(NAME_PATTERN.test(input.name), `dataset name "${input.name}" must match ${NAME_PATTERN}`, { field: "name" });
  check(items.length > 0, `dataset "${input.name}" has no items (an empty dataset cannot be evaluated or trained on)`, {
    field: "items",
  });
  const sorted = sortItems(items);
  checkItems(input.name, sorted);
  const encoded = sorted.map((item) => encodeAnswers(item.answers));
  const hash = createHash("sha256");
  for (let i = 0; i < sorted.length; i++) hash.update(hashLine(sorted[i], encoded[i]));
  const record: DatasetRecord = {
    name: input.name,
    split: input.split,
    source: input.source,
    files: input.files,
    subset: input.subset ?? null,
    images: input.images ?? null,
    details: input.details ?? {},
    itemCount: sorted.length,
    itemsHash: hash.digest("hex"),
    createdAt: new Date().toISOString(),
  };
  const insertItem = db.prepare(
    `INSERT INTO items (dataset, question_id, image_id, question, answers, answer_confidences, raw_answers, answer,
       question_type, answer_type, image_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    const existing = db.prepare("SELECT name FROM datasets WHERE name = ?").get(input.name);
    if (existing !== undefined) {
      if (!options.replace) {
        throw new LeverError(`dataset "${input.name}" already exists (use --replace to overwrite it)`, {
          field: "name",
        });
      }
      db.prepare("DELETE FROM datasets WHERE name = ?").run(input.name);
    }
    db.prepare(
      `INSERT INTO datasets (name, split, source, files, item_count, items_hash, subset, images, details, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      record.name,
      record.split,
      record.source,
      JSON.stringify(record.files),
      record.itemCount,
      record.itemsHash,
      record.subset === null ? null : JSON.stringify(record.subset),
      record.images,
      JSON.stringify(record.details),
      record.createdAt,
    );
    for (let i = 0; i < sorted.length; i++) {
      const item = sorted[i];
      insertItem.run(
        record.name,
        item.questionId,
        item.imageId,
        item.question,
        encoded[i].answers,
        encoded[i].confidences,
        encoded[i].raw,
        item.answer,
        item.questionType,
        item.answerType,
        item.imagePath,
      );
    }
  }).immediate();
  return record;
}

function toDataset(row: DatasetRow): DatasetRecord {
  return {
    name: row.name,
    split: row.split,
    source: row.source,
    files: SourceFilesSchema.parse(JSON.parse(row.files)),
    subset: row.subset === null ? null : SubsetSchema.parse(JSON.parse(row.subset)),
    images: row.images,
    details: DetailsSchema.parse(JSON.parse(row.details)),
    itemCount: row.item_count,
    itemsHash: row.items_hash,
    createdAt: row.created_at,
  };
}

export function getDataset(db: Database, name: string): DatasetRecord | undefined {
  const row = db.prepare("SELECT * FROM datasets WHERE name = ?").get(name) as DatasetRow | undefined;
  return row === undefined ? undefined : toDataset(row);
}

export function listDatasets(db: Database): DatasetRecord[] {
  const rows = db.prepare("SELECT * FROM datasets ORDER BY name").all() as DatasetRow[];
  return rows.map(toDataset);
}

export function requireDataset(db: Database, name: string): DatasetRecord {
  const record = getDataset(db, name);
  if (record === undefined) {
    throw new LeverError(`no dataset named "${name}" in this workspace (lever data list shows them)`, {
      field: "dataset",
    });
  }
  return record;
}

/** All items of a dataset, ordered by question id (compareQuestionIds). */
export function loadItems(db: Database, name: string): VqaItem[] {
  requireDataset(db, name);
  // Rows stream as arrays (no per-row object) straight into items: loading VQAv2 train is 443,757 rows.
  const select = db
    .prepare(
      `SELECT question_id, image_id, question, answers, answer_confidences, raw_answers, answer, question_type,
       answer_type, image_path FROM items INDEXED BY items_by_dataset WHERE dataset = ? ORDER BY rowid`,
    )
    .raw(true);
  const items: VqaItem[] = [];
  let sorted = true;
  for (const row of select.iterate(name) as IterableIterator<ItemTuple>) {
    const item: VqaItem = {
      questionId: row[0],
      imageId: row[1],
      question: row[2],
      answers: decodeAnswers({ answers: row[3], confidences: row[4], raw: row[5] }),
      answer: row[6],
      questionType: row[7],
      answerType: row[8],
      imagePath: row[9],
    };
    if (sorted && items.length > 0)
      sorted = compareQuestionIds(items[items.length - 1].questionId, item.questionId) <= 0;
    items.push(item);
  }
  // putDataset inserts in question-id order, so this sort only runs for rows written some other way.
  return sorted ? items : items.sort((a, b) => compareQuestionIds(a.questionId, b.questionId));
}

export function deleteDataset(db: Database, name: string): boolean {
  return db.prepare("DELETE FROM datasets WHERE name = ?").run(name).changes > 0;
}

interface EmbeddingRow {
  dataset: string;
  kind: string;
  path: string;
  sha256: string;
  rows: number;
  dim: number;
  dtype: string;
  ids_path: string | null;
  details: string;
  created_at: string;
}

function toEmbedding(row: EmbeddingRow): EmbeddingRecord {
  return {
    dataset: row.dataset,
    kind: row.kind,
    path: row.path,
    sha256: row.sha256,
    rows: row.rows,
    dim: row.dim,
    dtype: row.dtype,
    idsPath: row.ids_path,
    details: DetailsSchema.parse(JSON.parse(row.details)),
    createdAt: row.created_at,
  };
}

/** Records (or replaces) the embedding matrix of `kind` for a dataset. The dataset must exist. */
export function putEmbedding(db: Database, e: EmbeddingRecord): EmbeddingRecord {
  requireDataset(db, e.dataset);
  check(NAME_PATTERN.test(e.kind), `embedding kind "${e.kind}" must match ${NAME_PATTERN}`, { field: "kind" });
  check(Number.isInteger(e.rows) && e.rows >= 0, "rows must be a non-negative integer", { field: "rows" });
  check(Number.isInteger(e.dim) && e.dim > 0, "dim must be a positive integer", { field: "dim" });
  const stored: EmbeddingRecord = {
    ...e,
    idsPath: e.idsPath ?? null,
    details: e.details ?? {},
    createdAt: e.createdAt ?? new Date().toISOString(),
  };
  db.prepare(
    `INSERT OR REPLACE INTO embeddings (dataset, kind, path, sha256, rows, dim, dtype, ids_path, details, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    stored.dataset,
    stored.kind,
    stored.path,
    stored.sha256,
    stored.rows,
    stored.dim,
    stored.dtype,
    stored.idsPath,
    JSON.stringify(stored.details),
    stored.createdAt,
  );
  return stored;
}

export function getEmbedding(db: Database, dataset: string, kind: string): EmbeddingRecord | undefined {
  const row = db.prepare("SELECT * FROM embeddings WHERE dataset = ? AND kind = ?").get(dataset, kind) as
    | EmbeddingRow
    | undefined;
  return row === undefined ? undefined : toEmbedding(row);
}

export function listEmbeddings(db: Database, dataset?: string): EmbeddingRecord[] {
  const rows = (
    dataset === undefined
      ? db.prepare("SELECT * FROM embeddings ORDER BY dataset, kind").all()
      : db.prepare("SELECT * FROM embeddings WHERE dataset = ? ORDER BY kind").all(dataset)
  ) as EmbeddingRow[];
  return rows.map(toEmbedding);
}
