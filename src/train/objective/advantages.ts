/**
 * Group-relative advantages (GRPO): each trajectory's reward compared with the other trajectories of
 * the same query, so a policy-gradient step favours the better prompts of every query regardless of
 * how hard the query is.
 *
 *   zscore  A = (R − mean)/max(std, stdFloor), unbiased std (DeepSeekMath GRPO; TRL divides by
 *           std + 1e-4, verl by std + 1e-6, Lever-Plus by max(std, 0.1), docs/provenance.md#grpo)
 *   rank    A = 1 − 2·rank/(M − 1), rank 0 = best, ties share their average rank
 *   mean    A = R − mean (Dr. GRPO, arXiv 2503.20783: dividing by the std over-weights queries whose
 *           rewards barely differ; TRL `scale_rewards="none"`, verl `norm_adv_by_std_in_grpo=False`)
 *   none    A = R (for rewards that were already normalised per query, or REINFORCE without baseline)
 * then |A| ≤ clip. A zero-variance group — one trajectory, or all rewards equal — carries no
 * comparison: its advantages are exactly 0 for zscore, rank and mean (and R for "none"), and it is
 * counted, because a batch of such groups trains nothing (TRL's `frac_reward_zero_std`).
 *
 * stdFloor default 1e-3: zero-variance groups are detected exactly, so the floor only decides how
 * much near-ties are amplified. Distinct VQA accuracies differ by at least 0.1, and one such
 * difference in a group of M has std 0.1/√M (≥ 0.0125 for M ≤ 64), far above the floor, so real
 * groups are scaled exactly as by TRL; differences below ~1e-3 (rounding, or a dense reward term
 * that barely moves) are not blown up to ±1. Lever-Plus's 0.1 floor shrank real groups too.
 *
 * Rewards normalised with rewards.ts "zscore"/"zscore-clamp" and then z-scored again change only
 * where the clamp bit; pick one place to normalise.
 */
import { z } from "zod";
import { isDegenerate, rankScores } from "../../icl/rewards.js";
import { meanStd, meanStdMaxAbsHot } from "../../metrics/stats.js";

export const AdvantageSchema = z
  .object({
    kind: z
      .enum(["zscore", "rank", "mean", "none"])
      .default("zscore")
      .describe("How a query's rewards become advantages: zscore, rank, mean (Dr. GRPO) or none (A = R)"),
    stdFloor: z.number().positive().default(1e-3).describe("zscore divides by max(std, stdFloor)"),
    clip: z.number().positive().nullable().default(5).describe("advantages are clipped to [−clip, clip]"),
  })
  .strict();
export type AdvantageConfig = z.infer<typeof AdvantageSchema>;

/** Groups whose advantage std is below this are reported as carrying (almost) no signal. */
export const LOW_ADVANTAGE_STD = 0.05;

export interface AdvantageStats {
  groups: number;
  trajectories: number;
  /** Groups of one trajectory or with all rewards equal. */
  zeroVarianceGroups: number;
  /** Mean, population std and largest |A| over all trajectories. */
  mean: number;
  std: number;
  maxAbs: number;
  /** Share of groups whose (unbiased) advantage std is below LOW_ADVANTAGE_STD. */
  lowStdShare: number;
}

function groupAdvantage(rewards: readonly number[], cfg: AdvantageConfig): number[] {
  if (cfg.kind === "none") return [...rewards];
  if (isDegenerate(rewards)) return rewards.map(() => 0);
  if (cfg.kind === "rank") return rankScores(rewards);
  const { mean, std } = meanStd(rewards);
  const scale = cfg.kind === "zscore" ? Math.max(std, cfg.stdFloor) : 1;
  const out = new Array<number>(rewards.length);
  for (let i = 0; i < rewards.length; i++) out[i] = (rewards[i] - mean) / scale;
  return out;
}

/** Advantages of each group's trajectories (same shape as `rewards`) and batch statistics. */
export function groupAdvantages(
  rewards: readonly (readonly number[])[],
  cfg: AdvantageConfig,
): { advantages: number[][]; stats: AdvantageStats } {
  let zeroVarianceGroups = 0;
  let lowStd = 0;
  const advantages: number[][] = [];
  for (const [i, group] of rewards.entries()) {
    if (group.length === 0) throw new RangeError(`groupAdvantages: group ${i} has no trajectories`);
    if (isDegenerate(group)) zeroVarianceGroups++;
    const a = groupAdvantage(group, cfg);
    const c = cfg.clip;
    if (c !== null) for (let j = 0; j < a.length; j++) a[j] = Math.min(c, Math.max(-c, a[j]));
    if (meanStd(a).std < LOW_ADVANTAGE_STD) lowStd++;
    advantages.push(a);
  }
  const all = advantages.flat();
  const { mean, std, maxAbs } = meanStdMaxAbsHot(all);
  return {
    advantages,
    stats: {
      groups: rewards.length,
      trajectories: all.length,
      zeroVarianceGroups,
      mean,
      std,
      maxAbs,
      lowStdShare: rewards.length === 0 ? 0 : lowStd / rewards.length,
    },
  };
}

/**
 * Reward-to-go of prefix rewards (credit "prefix", src/train/objective/online.ts): `prefix[i][s]` is the reward
 * of trajectory i's first s + 1 picks. The pick at step s is in prefixes s..S−1, so its return is
 * ρ_{i,s} = mean_{t ≥ s} prefix[i][t]; ρ_{i,0} is the trajectory's mean reward over its prefixes.
 */
export function rewardToGo(prefix: readonly (readonly number[])[]): number[][] {
  return prefix.map((row) => {
    const out = new Array<number>(row.length);
    let sum = 0;
    for (let s = row.length - 1; s >= 0; s--) {
      sum += row[s];
      out[s] = sum / (row.length - s);
    }
    return out;
  });
}

/**
 * Per-step advantages: the reward-to-go of every step compared within its group, step by step, exactly
 * as `groupAdvantages` compares whole trajectories. `returns[g][i][s]` → `advantages[g][i][s]`; the
 * statistics count (group, step) comparisons as groups and average over every (trajectory, step).
 */
export function stepAdvantages(
  returns: readonly (readonly (readonly number[])[])[],
  cfg: AdvantageConfig,
): { advantages: number[][][]; stats: AdvantageStats } {
  const S = returns[0]?.[0]?.length ?? 0;
  const advantages = returns.map((g) => g.map(() => new Array<number>(S)));
  const perStep: AdvantageStats[] = [];
  for (let s = 0; s < S; s++) {
    const { advantages: a, stats } = groupAdvantages(
      returns.map((g) => g.map((row) => row[s])),
      cfg,
    );
    for (const [b, g] of a.entries()) for (const [i, v] of g.entries()) advantages[b][i][s] = v;
    perStep.push(stats);
  }
  const { mean, std, maxAbs } = meanStdMaxAbsHot(advantages.flat(2));
  const units = perStep.reduce((x, st) => x + st.groups, 0);
  return {
    advantages,
    stats: {
      groups: units,
      trajectories: returns.reduce((x, g) => x + g.length, 0),
      zeroVarianceGroups: perStep.reduce((x, st) => x + st.zeroVarianceGroups, 0),
      mean,
      std,
      maxAbs,
      lowStdShare: units === 0 ? 0 : perStep.reduce((x, st) => x + st.lowStdShare * st.groups, 0) / units,
    },
  };
}
