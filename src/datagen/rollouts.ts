/**
 * The rollouts of one query: propose trajectories (src/datagen/proposals.ts), score them through the
 * evaluation's answering path (src/icl/trajectory-scorer.ts), optionally top the group up until its rewards
 * are spread, and record every trajectory with how it was made and what it scored.
 *
 * Balanced top-up (off unless `topup.min` > 0): while fewer than `min` scored trajectories have an
 * accuracy above the group's median or fewer than `min` below it, and fewer than `topup.budget`
 * trajectories were added, propose up to 2·min more — temperature samples from the checkpoint
 * (at `topup.temperature`), uniform random ones without a checkpoint or when the samples only
 * repeat the group — and score them. Added trajectories have genMethod "topup". Each costs one
 * generate request plus its answer-scoring requests. Failed trajectories count for nothing.
 */
import type { VqaItem } from "../data/item.js";
import type { Trajectory } from "../data/trajectories.js";
import type { AnswerDeps } from "../icl/answer.js";
import { type ScoredTrajectory, type ScoringSettings, scoreTrajectories } from "../icl/trajectory-scorer.js";
import type { Rng } from "../util/rng.js";
import {
  addRandom,
  addSamples,
  type PolicyView,
  type Proposal,
  type ProposalGroup,
  type ProposalSettings,
  policyLogprobs,
  propose,
} from "./proposals.js";

export interface TopupSettings {
  /** P: trajectories wanted above and below the median; 0 = no top-up. */
  min: number;
  /** Most trajectories added per query. */
  budget: number;
  /** Sampling temperature of top-up samples from the checkpoint. */
  temperature: number;
}

export interface RolloutSettings {
  proposals: ProposalSettings;
  scoring: ScoringSettings;
  topup: TopupSettings;
}

export interface QueryTask {
  query: VqaItem;
  /** The query's candidates, in pool order. */
  pool: readonly VqaItem[];
  /** Cosine similarity of each pool position to the query. */
  similarity: ArrayLike<number>;
  /** The query's own random stream. */
  rng: Rng;
  policy?: PolicyView;
}

/** What is stored per query. */
export interface QueryRollouts {
  trajectories: Trajectory[];
  /** Trajectories whose requests failed (marked evalFailed). */
  failed: number;
  topup: { added: number; balanced: boolean } | null;
}

/** True when at least `min` accuracies lie above the median and at least `min` below it. */
export function isBalanced(accuracies: readonly number[], min: number): boolean {
  if (accuracies.length === 0) return min === 0;
  const sorted = [...accuracies].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 === 1 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return sorted.filter((a) => a > median).length >= min && sorted.filter((a) => a < median).length >= min;
}

export async function rolloutQuery(
  task: QueryTask,
  settings: RolloutSettings,
  indexById: ReadonlyMap<string, VqaItem>,
  deps: AnswerDeps,
): Promise<QueryRollouts> {
  const { query, pool, policy, rng } = task;
  const K = pool.length;
  const S = settings.proposals.shots;
  const ids = (positions: readonly number[]) => positions.map((p) => pool[p].questionId);
  const score = (proposals: readonly Proposal[]) =>
    scoreTrajectories(
      query,
      proposals.map((p) => ids(p.positions)),
      indexById,
      settings.scoring,
      deps,
    );

  const group: ProposalGroup = propose(settings.proposals, { K, similarity: task.similarity, rng, policy });
  const scored: ScoredTrajectory[] = await score(group.proposals);

  let topup: QueryRollouts["topup"] = null;
  const { min, budget, temperature } = settings.topup;
  if (min > 0) {
    const accuracies = () =>
      scored.flatMap((s) => (s.failure === null && s.vqaAccScore !== null ? [s.vqaAccScore] : []));
    let added = 0;
    for (let round = 0; added < budget && !isBalanced(accuracies(), min); round++) {
      const want = Math.min(budget - added, 2 * min);
      const before = group.proposals.length;
      const stream = rng.child("topup").child(round);
      let fresh = policy !== undefined ? addSamples(group, policy, S, want, temperature, stream.child("sample")) : 0;
      if (fresh < want) fresh += addRandom(group, want - fresh, K, S, stream.child("random"), "topup");
      if (fresh === 0) break; // nothing new left to propose
      scored.push(...(await score(group.proposals.slice(before))));
      added += fresh;
    }
    topup = { added, balanced: isBalanced(accuracies(), min) };
  }

  const logprobs =
    policy !== undefined
      ? policyLogprobs(
          policy,
          group.proposals.map((p) => p.positions),
        )
      : null;
  const trajectories = group.proposals.map((p, i): Trajectory => {
    const s = scored[i];
    return {
      selected: ids(p.positions),
      positions: p.positions,
      genMethod: p.genMethod,
      beamRank: p.beamRank,
      logprobScore: logprobs?.[i] ?? null,
      sampleLogprob: p.sampleLogprob,
      temperature: p.temperature,
      similarityScore: p.similarityScore,
      rawGeneration: s.rawGeneration,
      predAnswer: s.predAnswer,
      vqaAccScore: s.failure === null ? s.vqaAccScore : null,
      ...(s.failure === null && s.vqaCorrect !== null ? { vqaCorrect: s.vqaCorrect } : {}),
      vqaGtProb: s.vqaGtProb,
      gtLogprob: s.gtLogprob,
      evalMode: s.failure === null ? "vqaEval" : "error",
      evalFailed: s.failure !== null,
      ...(s.failure !== null ? { extra: { failure: s.failure } } : {}),
    };
  });
  return { trajectories, failed: scored.filter((s) => s.failure !== null).length, topup };
}
