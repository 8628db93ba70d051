/**
 * VQA accuracy as computed by the official evaluation (GT-Vision-Lab/VQA vqaEval.py at a013f00),
 * plus the "always-normalize" variant used by OpenFlamingo and copied by Lever-Plus
 * (docs/provenance.md#vqa-metric).
 *
 * Per question (official):
 *   1. prediction and every GT answer: newline/tab → space, strip;
 *   2. only if the GT answers are not all identical: processPunctuation + processDigitArticle on
 *      every GT answer AND on the prediction (so "Yes" vs ten "yes" scores 0);
 *   3. accuracy = mean over GT i of min(1, #{j ≠ i : gt_j == pred} / 3), summed in GT order.
 * Variant "always-normalize": step 2 always runs. This is mlfoundations/open_flamingo
 * open_flamingo/eval/vqa_metric.py at 200a966 (the version with the "Question|Answer|Short"
 * post-processor); an earlier OpenFlamingo copy (00dc792) had the official conditional rule.
 *
 * Leave-one-out: the official code drops GT entries equal to gt_i as whole records
 * (answer, confidence, answer_id); answer_ids are unique in VQAv2/OK-VQA, so that is "drop
 * position i", which is what is implemented.
 */
import { LeverError } from "../util/errors.js";
import type { VqaAnnotation, VqaAnnotationsFile, VqaQuestionsFile, VqaResult } from "./vqa-files.js";
import { normalizeAnswer, stripAnswer } from "./vqa-normalize.js";

export { normalizeAnswer, processDigitArticle, processPunctuation, stripAnswer } from "./vqa-normalize.js";

export const VQA_VARIANTS = ["official", "always-normalize"] as const;
export type VqaVariant = (typeof VQA_VARIANTS)[number];

/**
 * The key under which two answer strings are the same answer: the official normalisation applied to
 * the stripped string ("Two" ≡ "2" ≡ "two", "the park" ≡ "park", "red." ≡ "red"). What the
 * metric compares when annotators disagree, and what the simulator and the answer vote key answers by.
 */
export function answerKey(answer: string): string {
  return normalizeAnswer(stripAnswer(answer));
}

/** Scores one prediction against a question's GT answers (prepared once). Returns a fraction in [0, 1]. */
export type VqaScorer = (prediction: string) => number;

/**
 * Prepares a question's GT answers once (strip, the variant's normalisation decision, GT
 * normalisation) and returns a fast scorer for predictions: the RL loop scores many predictions
 * per question, and normalising ten GT strings each time would dominate.
 */
export function prepareGroundTruth(gtAnswers: readonly string[], variant: VqaVariant = "official"): VqaScorer {
  if (gtAnswers.length === 0) throw new LeverError("a question needs at least one ground-truth answer");
  if (!VQA_VARIANTS.includes(variant)) throw new LeverError(`unknown VQA accuracy variant "${variant}"`);
  const stripped = gtAnswers.map(stripAnswer);
  const normalize = variant === "always-normalize" || new Set(stripped).size > 1;
  const gts = normalize ? stripped.map(normalizeAnswer) : stripped;
  const n = gts.length;
  const matches = new Uint8Array(n);
  return (prediction: string): number => {
    const pred = normalize ? normalizeAnswer(prediction) : stripAnswer(prediction);
    let total = 0;
    for (let i = 0; i < n; i++) {
      matches[i] = gts[i] === pred ? 1 : 0;
      total += matches[i];
    }
    // Same float operations in the same order as the Python: sum of min(1, m_i/3) over i, then / n.
    let sum = 0;
    for (let i = 0; i < n; i++) sum += Math.min(1, (total - matches[i]) / 3);
    return sum / n;
  };
}

/** Accuracy of one prediction against its GT answers, as a fraction (0, 0.3, 0.6, 0.9, 1 for ten GTs). */
export function vqaAccuracy(
  prediction: string,
  gtAnswers: readonly string[],
  variant: VqaVariant = "official",
): number {
  return prepareGroundTruth(gtAnswers, variant)(prediction);
}

/**
 * Python's `round(x, ndigits)`: the double nearest to x rounded to ndigits decimals, ties to even,
 * judged on x's exact binary value. `toFixed` is exact too but breaks ties away from zero; for two
 * decimals a double is exactly halfway only when 8·x is an odd integer, so only that case is fixed up.
 */
export function pythonRound(x: number, ndigits = 2): number {
  if (!Number.isFinite(x)) return x;
  if (!Number.isInteger(ndigits) || ndigits < 0 || ndigits > 20)
    throw new RangeError(`pythonRound: ndigits ${ndigits}`);
  // x lies exactly halfway between two ndigits-decimals iff x = odd / 2^(ndigits+1).
  const halves = x * 2 ** (ndigits + 1); // exact (power-of-two scaling)
  if (Number.isInteger(halves) && Math.abs(halves) % 2 === 1 && Math.abs(halves) * 5 ** ndigits < 2 ** 53) {
    const scale = 10 ** ndigits;
    const lo = Math.floor(x * scale); // x·10^d = odd·5^d/2 < 2^53: exact
    return (lo % 2 === 0 ? lo : lo + 1) / scale;
  }
  return Number(x.toFixed(ndigits));
}

export interface VqaEvaluation {
  variant: VqaVariant;
  /** Percent, rounded to 2 decimals exactly as the official tool (`round(100*mean, 2)`). */
  overall: number;
  perAnswerType: Record<string, number>;
  perQuestionType: Record<string, number>;
  /** questionId → percent, 2 decimals (the official `evalQA`). */
  perQuestion: Record<string, number>;
  /** questionId → unrounded accuracy in [0, 1], for statistics. */
  fractions: Record<string, number>;
}

export interface EvaluateVqaOptions {
  variant?: VqaVariant;
  /** File names used in error messages. */
  files?: { results?: string; questions?: string; annotations?: string };
}

/**
 * Scores official-format results against official question and annotation files. Only questions
 * that have a result are scored (the official loadRes insists on all of them; Lever-Plus and
 * OpenFlamingo score subsets), summed in annotation-file order as the official tool does.
 * Rejects: a result for a question missing from the annotations or the questions, duplicate results.
 */
export function evaluateVqa(
  results: readonly VqaResult[],
  questions: VqaQuestionsFile | null,
  annotations: VqaAnnotationsFile,
  options: EvaluateVqaOptions = {},
): VqaEvaluation {
  const variant = options.variant ?? "official";
  const resultsFile = options.files?.results ?? "results";
  const byId = new Map<string, VqaAnnotation>();
  for (const annotation of annotations.annotations) byId.set(String(annotation.question_id), annotation);
  const askedIds = questions ? new Set(questions.questions.map((q) => String(q.question_id))) : null;

  const predictions = new Map<string, string>();
  results.forEach((result, index) => {
    const id = String(result.question_id);
    const where = { file: resultsFile, record: `#${index} (question_id ${id})`, field: "question_id" };
    if (!byId.has(id))
      throw new LeverError(`question is not in the annotations file ${options.files?.annotations ?? ""}`.trim(), where);
    if (askedIds && !askedIds.has(id))
      throw new LeverError(`question is not in the questions file ${options.files?.questions ?? ""}`.trim(), where);
    if (predictions.has(id)) throw new LeverError("duplicate result for this question", where);
    predictions.set(id, result.answer);
  });

  const perQuestion: Record<string, number> = {};
  const fractions: Record<string, number> = {};
  const all: number[] = [];
  const byQuestionType = new Map<string, number[]>();
  const byAnswerType = new Map<string, number[]>();
  for (const annotation of annotations.annotations) {
    const id = String(annotation.question_id);
    const prediction = predictions.get(id);
    if (prediction === undefined || id in fractions) continue;
    const accuracy = vqaAccuracy(
      prediction,
      annotation.answers.map((a) => a.answer),
      variant,
    );
    fractions[id] = accuracy;
    perQuestion[id] = pythonRound(100 * accuracy);
    all.push(accuracy);
    pushTo(byQuestionType, annotation.question_type, accuracy);
    pushTo(byAnswerType, annotation.answer_type ?? "other", accuracy);
  }
  if (all.length === 0) throw new LeverError("no results to evaluate", { file: resultsFile });
  return {
    variant,
    overall: roundedPercentMean(all),
    perAnswerType: mapValues(byAnswerType, roundedPercentMean),
    perQuestionType: mapValues(byQuestionType, roundedPercentMean),
    perQuestion,
    fractions,
  };
}

/** `round(100*float(sum(xs))/len(xs), 2)` with Python's left-to-right float sum. */
function roundedPercentMean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return pythonRound((100 * sum) / values.length);
}

function pushTo(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function mapValues(map: Map<string, number[]>, f: (values: number[]) => number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, values] of map) out[key] = f(values);
  return out;
}
