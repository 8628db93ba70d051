/**
 * The two places the simulator touches answer text semantics, behind one module: the key under
 * which the simulator treats two answer strings as the same answer, and the VQA accuracy the
 * oracle reports. Both are the project's official implementations (src/metrics/vqa.ts), so the
 * oracle's accuracy is exactly what evaluation measures.
 */
import { answerKey, prepareGroundTruth } from "../metrics/vqa.js";

/** Canonical key of an answer string: the official VQA normalisation (case, articles, number words, punctuation). */
export { answerKey };

/** Official VQA accuracy scorer for one question's ground-truth answers (fraction in [0, 1]). */
export function accuracyScorer(gtAnswers: readonly string[]): (prediction: string) => number {
  return prepareGroundTruth(gtAnswers, "official");
}
