/**
 * The three official VQA evaluation files (questions, annotations, results), validated with zod.
 * Errors name the file, the record (question_id when known, else the array index) and the field.
 */
import { readFileSync } from "node:fs";
import { type ZodType, z } from "zod";
import { LeverError } from "../util/errors.js";

const QuestionId = z.union([z.number().int(), z.string().min(1)]);

export const VqaQuestionsFileSchema = z.object({
  questions: z.array(
    z.object({
      question_id: QuestionId,
      image_id: z.union([z.number().int(), z.string()]).optional(),
      question: z.string(),
    }),
  ),
});
export type VqaQuestionsFile = z.infer<typeof VqaQuestionsFileSchema>;

export const VqaAnnotationsFileSchema = z.object({
  annotations: z.array(
    z.object({
      question_id: QuestionId,
      image_id: z.union([z.number().int(), z.string()]).optional(),
      question_type: z.string(),
      /** Absent in some OK-VQA copies; OpenFlamingo's copy falls back to "other", and so do we. */
      answer_type: z.string().optional(),
      answers: z
        .array(
          z.object({
            answer: z.string(),
            answer_confidence: z.string().optional(),
            answer_id: z.number().int().optional(),
          }),
        )
        .min(1),
    }),
  ),
});
export type VqaAnnotationsFile = z.infer<typeof VqaAnnotationsFileSchema>;
export type VqaAnnotation = VqaAnnotationsFile["annotations"][number];

export const VqaResultsFileSchema = z.array(
  z.object({
    question_id: QuestionId,
    answer: z.string(),
  }),
);
export type VqaResult = z.infer<typeof VqaResultsFileSchema>[number];

/** Reads a JSON file and validates it; any failure is a LeverError naming file, record and field. */
export function readJsonFile<T>(path: string, schema: ZodType<T>, arrayKey?: string): T {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new LeverError(`cannot read file (${(error as NodeJS.ErrnoException).code ?? String(error)})`, {
      file: path,
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new LeverError(`not valid JSON (${(error as Error).message})`, { file: path });
  }
  return parseOrThrow(value, schema, path, arrayKey);
}

/**
 * Validates `value`; on failure reports the first issue. When the failing path goes through a
 * record array (top level, or `value[arrayKey]`), the record is named by its question_id if it has
 * one, otherwise by its index.
 */
export function parseOrThrow<T>(value: unknown, schema: ZodType<T>, file: string, arrayKey?: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = [...issue.path];
  let container: unknown = value;
  let field: string | undefined;
  if (arrayKey !== undefined && path[0] === arrayKey) {
    path.shift();
    container = (value as Record<string, unknown>)[arrayKey];
    field = arrayKey; // used when the issue is the array itself (missing, not an array)
  }
  let record: string | undefined;
  if (Array.isArray(container) && typeof path[0] === "number") {
    const index = path.shift() as number;
    const qid = (container[index] as { question_id?: unknown } | null | undefined)?.question_id;
    record = typeof qid === "number" || typeof qid === "string" ? `question_id ${qid}` : `#${index}`;
    field = undefined;
  }
  throw new LeverError(issue.message, { file, record, field: formatPath(path) || field });
}

function formatPath(path: PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}
