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
 * The similarity weights (`voteWeights`) depend only on the ORDER of the candidates' cosines to the
 * query, never on their values: s_j = exp(−r_j / ρ), r_j = j's rank in the pool by cosine (0 = most
 * similar; ties by pool position), ρ > 0 the vote's *scale* — about how many of the nearest candidates
 * speak. Any monotone change of the cosines (an embedding model whose cosines are compressed into
 * [0.7, 0.9], spread, shifted) leaves the vote unchanged; ρ → ∞ is the pool's global majority, ρ → 0
 * the nearest candidate's annotators alone. ρ is chosen per index, from its annotations alone, by
 * `calibrateVoteScale` below (src/icl/vote-calibration.ts draws the pools). The weighting before
 * issue 23, s_j = max(0, cos) (`{ kind: "linear" }`), is kept for checkpoints trained with it: linear
 * in the cosine, it turns into the global majority wherever cosines lie in a narrow band.
 * O(K²) map look-ups per pool. Pure functions: the evaluation's retriever and the selector's input
 * features read the same numbers.
 */
import type { VqaItem } from "../data/item.js";
import { LeverError } from "../util/errors.js";
import { answerKey, prepareGroundTruth } from "./vqa.js";

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

/** How the vote weighs candidates by similarity: by rank at scale ρ, or (older checkpoints) linearly. */
export type VoteWeighting = { readonly kind: "rank"; readonly scale: number } | { readonly kind: "linear" };

/** The scales `calibrateVoteScale` chooses from (in candidates; 64 is close to the pool's majority at K ≤ 64). */
export const VOTE_SCALES = [0.5, 1, 2, 4, 8, 16, 32, 64] as const;

/** Each candidate's similarity weight in the vote, from its cosine to the query (aligned with the pool). */
export function voteWeights(cosines: ArrayLike<number>, weighting: VoteWeighting): Float64Array {
  const K = cosines.length;
  if (weighting.kind === "linear") return Float64Array.from(cosines, (c) => Math.max(0, c));
  if (!(weighting.scale > 0) || !Number.isFinite(weighting.scale))
    throw new LeverError(`the vote's scale must be a finite number > 0, got ${weighting.scale}`, {
      field: "voteScale",
    });
  const order = Array.from({ length: K }, (_, k) => k).sort((a, b) => cosines[b] - cosines[a] || a - b);
  const out = new Float64Array(K);
  order.forEach((k, rank) => {
    out[k] = Math.exp(-rank / weighting.scale);
  });
  return out;
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

/** One calibration query: an index item as a query, its pool's supports and cosines, its annotators' answers. */
export interface CalibrationQuery {
  candidates: readonly AnswerSupport[];
  /** The answer string each candidate shows as a demonstration (what a copying VLM would answer). */
  shown: readonly string[];
  cosines: ArrayLike<number>;
  annotators: readonly string[];
}

export interface VoteCalibration {
  /** The chosen scale ρ. */
  scale: number;
  /** Mean VQA accuracy, on the calibration queries, of the answer the vote's first pick shows, per scale. */
  accuracy: { scale: number; accuracy: number }[];
  /** Calibration queries. */
  queries: number;
}

/**
 * The vote's scale for an index, from its annotations alone (no VLM, no evaluation query): each
 * calibration query (an index item, its pool drawn from the index without itself) is answered with
 * the answer of the candidate the vote ranks first, and scored with the official VQA accuracy against
 * the item's own annotators — what the `vote` retriever shows at one shot to a VLM that copies it. The
 * scale with the highest mean accuracy wins; ties go to the larger scale (the smoother vote).
 */
export function calibrateVoteScale(
  queries: readonly CalibrationQuery[],
  scales: readonly number[] = VOTE_SCALES,
): VoteCalibration {
  if (queries.length === 0) throw new LeverError("no calibration queries for the vote's scale", { field: "voteScale" });
  const scorers = queries.map((q) => prepareGroundTruth(q.annotators));
  const accuracy = scales.map((scale) => {
    let sum = 0;
    queries.forEach((q, i) => {
      const { vote } = poolVote(q.candidates, voteWeights(q.cosines, { kind: "rank", scale }));
      const first = voteOrder(vote, q.cosines)[0];
      sum += first === undefined ? 0 : scorers[i](q.shown[first]);
    });
    return { scale, accuracy: sum / queries.length };
  });
  let best = accuracy[0];
  for (const a of accuracy) if (a.accuracy >= best.accuracy) best = a;
  return { scale: best.scale, accuracy, queries: queries.length };
}
