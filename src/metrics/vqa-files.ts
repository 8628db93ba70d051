/**
 * The three official VQA evaluation files (questions, annotations, results), validated with zod.
 * Errors name the file, the record (question_id when known, else the array index) and the field.
 */
import { type ZodType, z } from "zod";
import { readJsonFile } from "../util/files.js";
import { parseOrThrow } from "../util/validate.js";

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

/**
 * Reads a JSON file (strict UTF-8) and validates it; any failure is a LeverError naming the file,
 * the record (by its question_id when it has one, else "#<index>") and the field. `recordsAt` is
 * the key of the record array (`questions`, `annotations`), or true when the file is the array.
 */
export function readVqaFile<S extends ZodType>(path: string, schema: S, recordsAt: string | true = true): z.output<S> {
  return parseOrThrow(schema, readJsonFile(path), { file: path, recordsAt, recordLabel: "question_id" });
}
