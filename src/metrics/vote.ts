/**
 * The answer vote over a query's pool of candidate demonstrations: how strongly the OTHER candidates
 * similar to the query support the answer each candidate shows. VLMs doing in-context VQA largely
 * vote over and copy the demonstrations' answers (arXiv 2404.15736), so a candidate whose answer the
 * query's neighbourhood agrees on is a good one to show. Candidates come from the index (training)
 * split, whose annotations are known at test time; nothing here reads the query's own answers.
 *
 * For candidates k = 0..K−1 of one pool, with similarity weights s_j ≥ 0 to the query:
 *
 *   ans_k          = the normalised answer candidate k shows (`answerKey`: "Two" ≡ "2")
 *   support_j(a)   = share of candidate j's annotators whose normalised answer is a
 *   vote_k         = Σ_{j≠k} s_j · support_j(ans_k) / Σ_{j≠k} s_j      (0 when Σ_{j≠k} s_j = 0)
 *   agreement_k    = support_k(ans_k)                                   (its own annotators' agreement)
 *
 * k itself is left out of its vote, so a candidate cannot vote for its own answer. The annotators'
 * answers are counted, not only each candidate's majority string, so a split item counts for what it is.
 * The similarity weight of the `vote` retriever is s_j = max(0, cos(query, j)) (`voteWeight`): linear
 * in the cosine, with no temperature to tune, and candidates pointing away from the query say nothing.
 * O(K²) map look-ups per pool. Pure functions: the evaluation's retriever and the selector's input
 * features read the same numbers.
 */
import type { VqaItem } from "../data/item.js";
import { LeverError } from "../util/errors.js";
import { answerKey } from "./vqa.js";

/** One candidate's answers as the vote reads them. */
export interface AnswerSupport {
  /** Normalised key of the answer the candidate shows (its majority string). */
  readonly answer: string;
  /** Share of its annotators per normalised answer key (empty when it has no annotators). */
  readonly shares: ReadonlyMap<string, number>;
}

/** A candidate's support from its annotators' answers and the answer it shows. */
export function answerSupport(annotators: readonly string[], shown: string): AnswerSupport {
  const shares = new Map<string, number>();
  for (const a of annotators) {
    const key = answerKey(a);
    shares.set(key, (shares.get(key) ?? 0) + 1);
  }
  for (const [key, count] of shares) shares.set(key, count / annotators.length);
  return { answer: answerKey(shown), shares };
}

/**
 * Each item's `AnswerSupport` by question id, computed when first asked for and kept (the vote
 * retriever and the selector's candidate features both read the index items this way); undefined for
 * an id that is not one of the items — the caller says what that means.
 */
export function supportsOf(items: readonly VqaItem[]): (id: string) => AnswerSupport | undefined {
  const byId = new Map(items.map((item) => [item.questionId, item]));
  const supports = new Map<string, AnswerSupport>();
  return (id) => {
    let s = supports.get(id);
    if (s === undefined) {
      const item = byId.get(id);
      if (item === undefined) return undefined;
      s = answerSupport(
        item.answers.map((a) => a.answer),
        item.answer,
      );
      supports.set(id, s);
    }
    return s;
  };
}

/** The similarity weight of a candidate in the vote: max(0, cosine to the query). */
export function voteWeight(cosine: number): number {
  return Math.max(0, cosine);
}

export interface PoolVote {
  /** vote_k per candidate, in [0, 1]. */
  vote: Float64Array;
  /** agreement_k per candidate, in [0, 1]. */
  agreement: Float64Array;
}

/** vote_k and agreement_k of every candidate of one pool (weights aligned with candidates, finite, ≥ 0). */
export function poolVote(candidates: readonly AnswerSupport[], weights: ArrayLike<number>): PoolVote {
  const K = candidates.length;
  if (weights.length !== K)
    throw new LeverError(`${weights.length} similarity weights for ${K} candidates`, { field: "weights" });
  for (let j = 0; j < K; j++)
    if (!(weights[j] >= 0) || !Number.isFinite(weights[j]))
      throw new LeverError(`similarity weight ${weights[j]} is not a finite number ≥ 0`, { field: `weights[${j}]` });
  const vote = new Float64Array(K);
  const agreement = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    const answer = candidates[k].answer;
    let support = 0;
    let total = 0;
    for (let j = 0; j < K; j++) {
      if (j === k || weights[j] === 0) continue;
      support += weights[j] * (candidates[j].shares.get(answer) ?? 0);
      total += weights[j];
    }
    vote[k] = total > 0 ? support / total : 0;
    agreement[k] = candidates[k].shares.get(answer) ?? 0;
  }
  return { vote, agreement };
}

/** Pool positions by vote (highest first), ties by similarity (highest first), then by position. */
export function voteOrder(vote: ArrayLike<number>, similarity: ArrayLike<number>): number[] {
  const positions = Array.from({ length: vote.length }, (_, k) => k);
  return positions.sort((a, b) => vote[b] - vote[a] || similarity[b] - similarity[a] || a - b);
}
