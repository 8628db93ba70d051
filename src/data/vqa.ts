import { resolve } from "node:path";
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { parseOrThrow } from "../util/validate.js";
import {
  compileImageTemplate,
  findMissingImages,
  type ImageRenderer,
  type ImageSource,
  imageTemplate,
} from "./images.js";
import { type AnnotatorAnswer, compareQuestionIds, type VqaItem } from "./item.js";
import { streamJsonArrayField } from "./json-stream.js";
import type { SubsetRecord } from "./splits.js";
import { parseSubsetSpec, type SubsetSpec, selectSubset, subsetRecord } from "./splits.js";

/** An input file a dataset was built from, with its content hash for provenance. */
export interface SourceFile {
  /** What the file was used for: "questions", "annotations", … */
  role: string;
  path: string;
  sha256: string;
  bytes: number;
}

/**
 * Reader of the official VQA files (OKVQA `OpenEnded_mscoco_<split>2014_questions.json` +
 * `mscoco_<split>2014_annotations.json`, VQAv2 the same with a `v2_` prefix), joined by question
 * id into `VqaItem`s. Both files are streamed element by element (see json-stream.ts) and every
 * element is checked against the schemas below; any inconsistency between the two files is an
 * error naming the file, record and field.
 */

const Id = z.union([z.number().int().nonnegative(), z.string().min(1)], {
  error: (issue) => (issue.input === undefined ? "missing" : "expected a non-negative integer or a non-empty string"),
});

export const VqaQuestionSchema = z.object({
  image_id: Id,
  question: z.string(),
  question_id: Id,
});

export const VqaAnswerSchema = z.object({
  answer: z.string(),
  answer_confidence: z.string().optional(),
  raw_answer: z.string().optional(),
});

export const VqaAnnotationSchema = z.object({
  question_id: Id,
  image_id: Id,
  question_type: z.string(),
  answer_type: z.string(),
  answers: z.array(VqaAnswerSchema),
  multiple_choice_answer: z.string().optional(),
});

/**
 * OKVQA and VQAv2 always have ten annotator answers, and the VQA accuracy (leave-one-annotator-out
 * over ten) is defined for ten, so another count means a wrong or damaged file: an error.
 */
export const ANSWERS_PER_QUESTION = 10;

/** The most frequent answer; ties go to the one seen first (Python `Counter.most_common(1)`). */
export function majorityAnswer(answers: readonly string[]): string {
  const counts = new Map<string, number>(); // insertion order = order of first occurrence
  for (const a of answers) counts.set(a, (counts.get(a) ?? 0) + 1);
  let best = "";
  let bestCount = 0;
  for (const [a, c] of counts) {
    if (c > bestCount) {
      best = a;
      bestCount = c;
    }
  }
  return best;
}

function recordName(list: string, index: number, raw: unknown): string {
  const id = (raw as { question_id?: unknown } | null)?.question_id;
  return typeof id === "number" || typeof id === "string" ? `${list}[${index}] question_id ${id}` : `${list}[${index}]`;
}

interface QuestionEntry {
  imageId: string;
  question: string;
  index: number;
}

export interface VqaQuestionsFile {
  /** question id → question, in file order. */
  questions: Map<string, QuestionEntry>;
  header: Record<string, unknown>;
  file: SourceFile;
}

export function readVqaQuestions(path: string): VqaQuestionsFile {
  const questions = new Map<string, QuestionEntry>();
  const streamed = streamJsonArrayField(path, "questions", (raw, index) => {
    const q = parseOrThrow(VqaQuestionSchema, raw, { file: path, record: recordName("questions", index, raw) });
    const id = String(q.question_id);
    const earlier = questions.get(id);
    if (earlier !== undefined) {
      throw new LeverError(`duplicated question id (also questions[${earlier.index}])`, {
        file: path,
        record: `questions[${index}] question_id ${id}`,
        field: "question_id",
      });
    }
    questions.set(id, { imageId: String(q.image_id), question: q.question, index });
  });
  return {
    questions,
    header: primitiveFields(streamed.others),
    file: { role: "questions", path: resolve(path), sha256: streamed.sha256, bytes: streamed.bytes },
  };
}

/** The small descriptive fields of a file header (data_type, data_subtype, task_type, …). */
function primitiveFields(others: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(others)) {
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") out[k] = v;
  }
  return out;
}

export interface VqaReadOptions {
  questionsFile: string;
  annotationsFile: string;
  /** "train" or "val": names the COCO image folder and is recorded on the dataset. */
  split: string;
  images?: ImageSource;
  /** Which items to keep (default all), chosen on question ids before the items are built. */
  subset?: SubsetSpec | string;
  seed?: number;
}

export interface VqaDataset {
  /** The kept items, in question-id order. */
  items: VqaItem[];
  /** Questions in the files (before the subset). */
  totalQuestions: number;
  files: SourceFile[];
  /** Absolute image path template, or null without images. */
  imageTemplate: string | null;
  subset: SubsetRecord | null;
  /** Distinct images that are not on disk (not fatal: embeddings may come from files). */
  missingImages: { checked: number; count: number; examples: string[] };
  /** How many items took `answer` from multiple_choice_answer (VQAv2) vs the majority of the ten (OKVQA). */
  answerFrom: { multipleChoice: number; majority: number };
  /** Non-fatal oddities, e.g. a file whose data_subtype does not match --split. */
  warnings: string[];
  headers: { questions: Record<string, unknown>; annotations: Record<string, unknown> };
}

/** Reads, validates and joins the questions and annotations files. Touches no workspace. */
export function readVqaDataset(options: VqaReadOptions): VqaDataset {
  const { questionsFile, annotationsFile, split } = options;
  const template = imageTemplate(options.images, split);
  const spec =
    typeof options.subset === "string" ? parseSubsetSpec(options.subset) : (options.subset ?? { kind: "all" });
  const seed = options.seed ?? 0;

  const questions = readVqaQuestions(questionsFile);
  if (questions.questions.size === 0)
    throw new LeverError("holds no questions (an empty dataset cannot be evaluated or trained on)", {
      file: questionsFile,
      field: "questions",
    });
  const joined = joinAnnotations(annotationsFile, questionsFile, questions.questions, {
    keep: keptQuestionIds(questions.questions, spec, seed),
    split,
    renderImage: template === null ? null : compileImageTemplate(template),
  });
  requireAllAnnotated(questionsFile, annotationsFile, questions.questions, joined.annotated);

  const { items } = joined;
  items.sort((x, y) => compareQuestionIds(x.questionId, y.questionId));
  return {
    items,
    totalQuestions: questions.questions.size,
    files: [questions.file, joined.file],
    imageTemplate: template,
    subset: subsetRecord(spec, seed, questions.questions.size),
    missingImages:
      template === null ? { checked: 0, count: 0, examples: [] } : findMissingImages(items.map((i) => i.imagePath)),
    answerFrom: joined.answerFrom,
    warnings: [
      ...subtypeWarnings(questionsFile, questions.header, split),
      ...subtypeWarnings(annotationsFile, joined.header, split),
    ],
    headers: { questions: questions.header, annotations: joined.header },
  };
}

/** The question ids the subset keeps (chosen on question ids, before items are built); null = all. */
function keptQuestionIds(questions: Map<string, QuestionEntry>, spec: SubsetSpec, seed: number): Set<string> | null {
  if (spec.kind === "all") return null;
  return new Set(
    selectSubset(
      [...questions.keys()].map((questionId) => ({ questionId })),
      spec,
      seed,
    ).map((q) => q.questionId),
  );
}

/** The annotations file joined to the questions: the kept items (in file order) and what was read. */
interface JoinedAnnotations {
  items: VqaItem[];
  /** Every question id the file annotates (kept or not). */
  annotated: Set<string>;
  answerFrom: { multipleChoice: number; majority: number };
  header: Record<string, unknown>;
  file: SourceFile;
}

interface JoinOptions {
  keep: Set<string> | null;
  split: string;
  renderImage: ImageRenderer | null;
}

/** Streams the annotations, checks each against its question and builds the items the subset keeps. */
function joinAnnotations(
  annotationsFile: string,
  questionsFile: string,
  questions: Map<string, QuestionEntry>,
  options: JoinOptions,
): JoinedAnnotations {
  const items: VqaItem[] = [];
  const annotated = new Set<string>();
  const answerFrom = { multipleChoice: 0, majority: 0 };
  const streamed = streamJsonArrayField(annotationsFile, "annotations", (raw, index) => {
    const record = recordName("annotations", index, raw);
    const a = parseOrThrow(VqaAnnotationSchema, raw, { file: annotationsFile, record });
    const id = String(a.question_id);
    const where = { file: annotationsFile, record };
    if (annotated.has(id)) throw new LeverError("duplicated question id", { ...where, field: "question_id" });
    annotated.add(id);
    const q = annotatedQuestion(a, questions, where, questionsFile);
    if (options.keep !== null && !options.keep.has(id)) return;
    const { item, answerFrom: from } = annotatedItem(a, q);
    answerFrom[from]++;
    const render = options.renderImage;
    items.push({
      ...item,
      imagePath:
        render === null ? null : render({ split: options.split, imageId: item.imageId, questionId: id }, where),
    });
  });
  return {
    items,
    annotated,
    answerFrom,
    header: primitiveFields(streamed.others),
    file: { role: "annotations", path: resolve(annotationsFile), sha256: streamed.sha256, bytes: streamed.bytes },
  };
}

type VqaAnnotation = z.output<typeof VqaAnnotationSchema>;

/**
 * The question an annotation answers, after checking that it exists, is on the same image and has
 * ten answers.
 */
function annotatedQuestion(
  a: VqaAnnotation,
  questions: Map<string, QuestionEntry>,
  where: { file: string; record: string },
  questionsFile: string,
): QuestionEntry {
  const id = String(a.question_id);
  const q = questions.get(id);
  if (q === undefined) {
    throw new LeverError(`no question with this id in ${questionsFile}`, { ...where, field: "question_id" });
  }
  const imageId = String(a.image_id);
  if (imageId !== q.imageId) {
    // The annotation is the ground truth the answers were given for; the question is the odd one out.
    throw new LeverError(`image_id ${q.imageId} differs from image_id ${imageId} of ${where.record} in ${where.file}`, {
      file: questionsFile,
      record: `questions[${q.index}] question_id ${id}`,
      field: "image_id",
    });
  }
  if (a.answers.length !== ANSWERS_PER_QUESTION) {
    throw new LeverError(`expected ${ANSWERS_PER_QUESTION} answers, found ${a.answers.length}`, {
      ...where,
      field: "answers",
    });
  }
  return q;
}

/**
 * The item of an annotation and its question (without its image path): `answer` is
 * multiple_choice_answer when the file has it (VQAv2), else the majority of the ten (OKVQA).
 */
function annotatedItem(
  a: VqaAnnotation,
  q: QuestionEntry,
): { item: Omit<VqaItem, "imagePath">; answerFrom: "multipleChoice" | "majority" } {
  const answers = a.answers.map((x): AnnotatorAnswer => {
    const out: AnnotatorAnswer = { answer: x.answer };
    if (x.answer_confidence !== undefined) out.confidence = x.answer_confidence;
    if (x.raw_answer !== undefined) out.raw = x.raw_answer;
    return out;
  });
  const fromMultipleChoice = a.multiple_choice_answer !== undefined;
  const item = {
    questionId: String(a.question_id),
    imageId: String(a.image_id),
    question: q.question,
    answers,
    answer: a.multiple_choice_answer ?? majorityAnswer(answers.map((x) => x.answer)),
    questionType: a.question_type,
    answerType: a.answer_type,
  };
  return { item, answerFrom: fromMultipleChoice ? "multipleChoice" : "majority" };
}

/** Every question must have an annotation: the first without one is named. */
function requireAllAnnotated(
  questionsFile: string,
  annotationsFile: string,
  questions: Map<string, QuestionEntry>,
  annotated: ReadonlySet<string>,
): void {
  if (annotated.size === questions.size) return;
  let first: string | undefined;
  for (const id of questions.keys()) {
    if (!annotated.has(id)) {
      first = id;
      break;
    }
  }
  const q = questions.get(first!)!;
  throw new LeverError(
    `question has no annotation in ${annotationsFile} (${questions.size - annotated.size} questions lack one)`,
    { file: questionsFile, record: `questions[${q.index}] question_id ${first}`, field: "question_id" },
  );
}

/** Official files say which split they are ("train2014"); a mismatch with --split is likely a mistake. */
function subtypeWarnings(file: string, header: Record<string, unknown>, split: string): string[] {
  const subtype = header.data_subtype;
  if (typeof subtype !== "string" || subtype.startsWith(split)) return [];
  return [`${file}: data_subtype is "${subtype}" but --split is "${split}"`];
}
