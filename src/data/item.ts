/**
 * A VQA item. Identity is the dataset's question_id in string form (docs/architecture.md, "Identities"); row numbers
 * exist only inside embedding matrices and are mapped through a stored id list.
 */
export interface AnnotatorAnswer {
  answer: string;
  /** VQAv2/OKVQA `answer_confidence` ("yes" | "maybe" | "no"), when present. */
  confidence?: string;
  /** OKVQA `raw_answer`, when present. */
  raw?: string;
}

export interface VqaItem {
  questionId: string;
  imageId: string;
  question: string;
  /** The ten annotator answers, in file order. */
  answers: AnnotatorAnswer[];
  /** The single answer a demonstration shows: most frequent of `answers` (ties → first occurrence). */
  answer: string;
  questionType: string;
  answerType: string;
  /** Absolute image path, or null when the dataset was imported without images. */
  imagePath: string | null;
}

/** Orders question ids numerically when both are integers, else lexically (the Python `idx` order). */
export function compareQuestionIds(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  if (Number.isSafeInteger(na) && Number.isSafeInteger(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}
