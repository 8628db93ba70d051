/**
 * The one answering path, shared by `lever eval` and the rollout scorer so that a training reward
 * means what the evaluation measures: demonstrations (selection order) placed by the recorded prompt
 * order → the VLM's `generate` → the task's post-processor and per-item score (`Task.answering`: for
 * VQA the Lever-Plus post-processor (docs/provenance.md#postprocess) and the official accuracy against
 * the ten annotators, for captions CIDEr-D against the image's references). A failed VLM call is a failure with
 * no accuracy — never a 0. Answers are handed over as they arrive (`onAnswer`), so callers can store
 * them right away.
 */
import { basename } from "node:path";
import type { VqaItem } from "../data/item.js";
import { type PromptOrder, toPromptOrder } from "../data/trajectories.js";
import type { AnswerScoring } from "../task/types.js";
import { hashValue } from "../util/hash.js";
import type { Demonstration, GenerateResult, Outcome, Vlm, VlmFailure, VlmPrompt } from "../vlm/types.js";
import { isFailure } from "../vlm/types.js";

/** The VLM and the task's one post-processor and scorer (`Task.answering`, src/task/types.ts). */
export interface AnswerDeps extends AnswerScoring {
  vlm: Vlm;
  signal?: AbortSignal;
}

export interface Answer {
  /** `promptHash`: the prompt's texts, ids and image file names (not the folder images are read from). */
  promptHash: string;
  rawAnswer: string | null;
  answer: string | null;
  /** The task's per-item score (VQA accuracy in [0, 1], caption CIDEr-D in [0, 10]); null when the VLM call failed. */
  accuracy: number | null;
  /** Why the VLM call failed; null on success. */
  failure: VlmFailure | null;
}

/**
 * Asks the VLM for every prompt (one batched call) and scores each answer against its query.
 * `onAnswer` receives each answer once, as soon as it is known (backends that report outcomes one by
 * one), else when the batch returns. Returns null when the signal aborted the call; answers handed
 * to `onAnswer` before that stay valid.
 */
export async function answerPrompts(
  prompts: readonly VlmPrompt[],
  queries: readonly VqaItem[],
  deps: AnswerDeps,
  onAnswer?: (index: number, answer: Answer) => void,
): Promise<Answer[] | null> {
  const answers = new Array<Answer | undefined>(prompts.length);
  const take = (i: number, outcome: Outcome<GenerateResult>) => {
    if (answers[i] !== undefined) return;
    const answer = toAnswer(prompts[i], queries[i], outcome, deps);
    answers[i] = answer;
    onAnswer?.(i, answer);
  };
  let outcomes: Outcome<GenerateResult>[];
  try {
    outcomes = await deps.vlm.generate([...prompts], {
      signal: deps.signal,
      onResult: (i, outcome) => {
        if (i >= 0 && i < prompts.length) take(i, outcome);
      },
    });
  } catch (error) {
    if (deps.signal?.aborted) return null;
    throw error;
  }
  if (outcomes.length !== prompts.length)
    throw new Error(`VLM ${deps.vlm.id} returned ${outcomes.length} results for ${prompts.length} prompts`);
  for (let i = 0; i < outcomes.length; i++) take(i, outcomes[i]);
  return answers as Answer[];
}

/**
 * What a prediction records of its prompt: a hash of its texts, question ids and image file names. The
 * folder images are read from is left out, so the same run in another (or a moved) workspace, or over
 * another copy of the images, records the same hash; the image bytes are not read (the cache's image
 * identity, src/vlm/cache.ts, also holds size and time).
 */
export function promptHash(prompt: VlmPrompt): string {
  const named = <T extends { imagePath: string | null }>(x: T): T => ({
    ...x,
    imagePath: x.imagePath === null ? null : basename(x.imagePath),
  });
  return hashValue({ demonstrations: prompt.demonstrations.map(named), query: named(prompt.query) });
}

function toAnswer(prompt: VlmPrompt, query: VqaItem, outcome: Outcome<GenerateResult>, deps: AnswerDeps): Answer {
  const hash = promptHash(prompt);
  if (isFailure(outcome)) return { promptHash: hash, rawAnswer: null, answer: null, accuracy: null, failure: outcome };
  const answer = deps.postprocess(outcome.text);
  return { promptHash: hash, rawAnswer: outcome.text, answer, accuracy: deps.score(answer, query), failure: null };
}

/** The prompt for one query: demonstrations (selection order) placed by the recorded order setting. */
export function buildPrompt(
  query: VqaItem,
  selection: readonly string[],
  indexById: ReadonlyMap<string, VqaItem>,
  order: PromptOrder,
): VlmPrompt {
  const demonstrations = toPromptOrder(selection, order).map((id): Demonstration => {
    const item = indexById.get(id) as VqaItem;
    return { questionId: item.questionId, imagePath: item.imagePath, question: item.question, answer: item.answer };
  });
  return {
    demonstrations,
    query: { questionId: query.questionId, imagePath: query.imagePath, question: query.question },
  };
}
