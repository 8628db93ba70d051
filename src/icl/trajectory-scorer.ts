/**
 * Scores trajectories of one query through the evaluation's own answering path (src/icl/answer.ts:
 * the same prompt builder, generation, post-processor and official VQA accuracy as `lever eval`),
 * and measures how probable the annotators' answers are under each prompt:
 *  - `gtLogprob`: Σ log p of the majority answer's tokens (`multiple_choice_answer`);
 *  - `vqaGtProb`: Σ_a acc(a)·P(a) over the distinct annotator answers a — acc(a) the official
 *    accuracy the answer a would get as a prediction (post-processed like one), P(a) = exp of its
 *    token log-probability sum. Answers the official normalisation maps to the same string are one
 *    answer, scored in its most frequent surface form, so the weights never count one event twice.
 *    This is the expected VQA accuracy of the VLM's answer distribution restricted to annotator
 *    answers (Lever-Plus's `vqa_gt_prob` averaged over a mis-masked span and could exceed 1;
 *    docs/provenance.md#rollouts).
 * `gtAnswers` chooses what is scored: "none" (no scoring requests), "majority" (gtLogprob only, one
 * request per trajectory) or "all" (both; one request per distinct answer, typically 1–5).
 * Generation and scoring requests of a query go out together, as two batched calls in flight at once.
 * A failed request is reported, never scored: the trajectory is marked failed.
 */
import type { VqaItem } from "../data/item.js";
import type { PromptOrder } from "../data/trajectories.js";
import { normalizeAnswer, stripAnswer } from "../metrics/vqa.js";
import type { Outcome, ScoreResult } from "../vlm/types.js";
import { formatFailure, isFailure } from "../vlm/types.js";
import { type AnswerDeps, answerPrompts, buildPrompt } from "./answer.js";

export const GT_ANSWER_SETS = ["none", "majority", "all"] as const;
export type GtAnswerSet = (typeof GT_ANSWER_SETS)[number];

export interface ScoringSettings {
  gtAnswers: GtAnswerSet;
  /** vqaCorrect = 1 iff accuracy > 0 when 0 (Lever-Plus), else iff accuracy ≥ threshold. */
  correctThreshold: number;
  order: PromptOrder;
}

export interface ScoredTrajectory {
  rawGeneration: string | null;
  predAnswer: string | null;
  vqaAccScore: number | null;
  vqaCorrect: 0 | 1 | null;
  gtLogprob: number | null;
  vqaGtProb: number | null;
  /** Why a request of this trajectory failed; null when all succeeded. */
  failure: string | null;
}

/** One distinct annotator answer: the surface form scored and its accuracy as a prediction. */
export interface GtAnswer {
  answer: string;
  accuracy: number;
}

/**
 * The distinct annotator answers (by official normalisation; each in its most frequent surface
 * form, ties to the first), empty answers left out, with their accuracy as predictions.
 */
export function distinctGtAnswers(query: VqaItem, deps: Pick<AnswerDeps, "postprocess" | "score">): GtAnswer[] {
  const classes = new Map<string, Map<string, number>>();
  for (const { answer } of query.answers) {
    const surface = stripAnswer(answer);
    if (surface === "") continue;
    const key = normalizeAnswer(surface);
    let forms = classes.get(key);
    if (!forms) classes.set(key, (forms = new Map()));
    forms.set(surface, (forms.get(surface) ?? 0) + 1);
  }
  return [...classes.values()].map((forms) => {
    let best = "";
    let count = 0;
    for (const [form, n] of forms) if (n > count) [best, count] = [form, n];
    return { answer: best, accuracy: deps.score(deps.postprocess(best), query) };
  });
}

export function isCorrect(accuracy: number, threshold: number): 0 | 1 {
  return (threshold === 0 ? accuracy > 0 : accuracy >= threshold) ? 1 : 0;
}

/**
 * Scores each selection (ICD question ids, selection order) for `query`. A selection listed more than once
 * (samples that drew the same prompt, prefixes they share) is sent to the VLM once and its result repeated.
 */
export async function scoreTrajectories(
  query: VqaItem,
  selections: readonly (readonly string[])[],
  indexById: ReadonlyMap<string, VqaItem>,
  settings: ScoringSettings,
  deps: AnswerDeps,
): Promise<ScoredTrajectory[]> {
  const slotOf = new Map<string, number>();
  const distinct: (readonly string[])[] = [];
  const slots = selections.map((selection) => {
    const key = selection.join("\u0000");
    let slot = slotOf.get(key);
    if (slot === undefined) {
      slot = distinct.push(selection) - 1;
      slotOf.set(key, slot);
    }
    return slot;
  });
  const scored = await scoreDistinct(query, distinct, indexById, settings, deps);
  return slots.map((slot) => ({ ...scored[slot] }));
}

async function scoreDistinct(
  query: VqaItem,
  selections: readonly (readonly string[])[],
  indexById: ReadonlyMap<string, VqaItem>,
  settings: ScoringSettings,
  deps: AnswerDeps,
): Promise<ScoredTrajectory[]> {
  const prompts = selections.map((selection) => buildPrompt(query, selection, indexById, settings.order));
  const majority = stripAnswer(query.answer);
  const gtAnswers = deps.gtAnswerSet(settings.gtAnswers);
  const gt = gtAnswers === "all" ? distinctGtAnswers(query, deps) : [];
  const answers = [
    ...new Set([...(gtAnswers !== "none" && majority !== "" ? [majority] : []), ...gt.map((g) => g.answer)]),
  ];
  const requests = prompts.flatMap((prompt) => answers.map((answer) => ({ prompt, answer })));
  const [generated, scores] = await Promise.all([
    answerPrompts(
      prompts,
      prompts.map(() => query),
      deps,
    ),
    requests.length > 0 ? deps.vlm.scoreAnswer(requests, { signal: deps.signal }) : Promise.resolve([]),
  ]);
  if (scores.length !== requests.length)
    throw new Error(`VLM ${deps.vlm.id} returned ${scores.length} scores for ${requests.length} requests`);
  return prompts.map((_, t): ScoredTrajectory => {
    const answer = generated?.[t];
    const failures: string[] = [];
    if (answer === undefined) failures.push("aborted");
    else if (answer.failure !== null) failures.push(formatFailure(answer.failure));
    const logprob = new Map<string, number>();
    answers.forEach((a, j) => {
      const outcome: Outcome<ScoreResult> = scores[t * answers.length + j];
      if (isFailure(outcome)) failures.push(formatFailure(outcome));
      else if (!Number.isFinite(outcome.logprobSum)) failures.push(`non-finite log-probability ${outcome.logprobSum}`);
      else logprob.set(a, outcome.logprobSum);
    });
    const accuracy = answer?.accuracy ?? null;
    const gtLogprob = gtAnswers !== "none" ? (logprob.get(majority) ?? null) : null;
    const vqaGtProb =
      gtAnswers === "all" && gt.every((g) => logprob.has(g.answer))
        ? gt.reduce((s, g) => s + g.accuracy * Math.exp(logprob.get(g.answer)!), 0)
        : null;
    return {
      rawGeneration: answer?.rawAnswer ?? null,
      predAnswer: answer?.answer ?? null,
      vqaAccScore: accuracy,
      vqaCorrect: accuracy === null ? null : isCorrect(accuracy, settings.correctThreshold),
      gtLogprob: gtLogprob === null ? null : Math.min(0, gtLogprob),
      vqaGtProb,
      failure: failures.length > 0 ? failures[0] : null,
    };
  });
}
