/**
 * Statistics of a set of rollout groups (one group = one query's trajectories), printed by
 * `lever rollouts` and stored in the run's metrics and the artefact's meta. Rewards here are the
 * VQA accuracies of the scored trajectories (failed ones are counted apart and left out). A group
 * whose scored accuracies are all equal (or that has fewer than two) gives group-relative RL no
 * signal; the share of such groups is the number to watch.
 */
import type { RolloutQuery } from "../data/trajectories.js";
import { isDegenerate } from "../icl/rewards.js";
import { maxOf, minOf } from "../util/extent.js";

export interface RolloutStats {
  queries: number;
  trajectories: number;
  perQuery: { min: number; mean: number; max: number };
  /** Trajectories per generation method. */
  methods: Record<string, number>;
  /** Groups whose scored accuracies are all equal, and their share of all groups. */
  allEqualGroups: number;
  allEqualShare: number;
  /** Scored trajectories with vqaCorrect = 1, and their fraction of scored trajectories. */
  positives: number;
  positiveFraction: number;
  /** Scored trajectories per accuracy value (two decimals). */
  accuracyHistogram: Record<string, number>;
  failed: { trajectories: number; queries: number };
  /** Queries that ran the balanced top-up, and how many of them reached balance. */
  topup: { queries: number; balanced: number; added: number } | null;
}

export function rolloutStats(
  groups: readonly RolloutQuery[],
  topups: readonly ({ added: number; balanced: boolean } | null)[] = [],
): RolloutStats {
  const counts = groups.map((g) => g.trajectories.length);
  const methods: Record<string, number> = {};
  const histogram = new Map<string, number>();
  let trajectories = 0;
  let scored = 0;
  let positives = 0;
  let allEqual = 0;
  let failedTrajectories = 0;
  let failedQueries = 0;
  for (const group of groups) {
    const accuracies: number[] = [];
    let failed = 0;
    for (const t of group.trajectories) {
      trajectories++;
      const method = t.genMethod ?? "unknown";
      methods[method] = (methods[method] ?? 0) + 1;
      if (t.evalFailed || t.vqaAccScore === null) {
        failed++;
        continue;
      }
      scored++;
      accuracies.push(t.vqaAccScore);
      if (t.vqaCorrect === 1) positives++;
      const key = t.vqaAccScore.toFixed(2);
      histogram.set(key, (histogram.get(key) ?? 0) + 1);
    }
    if (accuracies.length < 2 || isDegenerate(accuracies)) allEqual++;
    failedTrajectories += failed;
    if (failed > 0) failedQueries++;
  }
  const ran = topups.filter((t) => t !== null);
  return {
    queries: groups.length,
    trajectories,
    perQuery: {
      min: counts.length > 0 ? minOf(counts) : 0,
      mean: counts.length > 0 ? trajectories / counts.length : 0,
      max: counts.length > 0 ? maxOf(counts) : 0,
    },
    methods: Object.fromEntries(Object.entries(methods).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    allEqualGroups: allEqual,
    allEqualShare: groups.length > 0 ? allEqual / groups.length : 0,
    positives,
    positiveFraction: scored > 0 ? positives / scored : 0,
    accuracyHistogram: Object.fromEntries([...histogram].sort(([a], [b]) => Number(a) - Number(b))),
    failed: { trajectories: failedTrajectories, queries: failedQueries },
    topup:
      ran.length > 0
        ? {
            queries: ran.length,
            balanced: ran.filter((t) => t.balanced).length,
            added: ran.reduce((s, t) => s + t.added, 0),
          }
        : null,
  };
}
