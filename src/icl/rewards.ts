/**
 * Rewards of scored trajectories for the RL stages, and their per-query normalisation.
 *
 * A trajectory's reward is a function of its stored fields: h = vqaCorrect (1 iff the answer got
 * any annotator agreement), s = vqaAccScore (VQA accuracy), g = vqaGtProb (expected VQA accuracy of
 * the VLM's answer distribution), r = vqaRelScore (string relevance to the annotator answers), and
 * the producer's beamScore / logprobScore. The modes are the MODES table below, one entry each (its
 * formula in w_h, w_s, w_r = hardWeight, softWeight, relWeight; the setting's choices and help come
 * from it): hard_plus_soft (the default: negatives 0, positives 1 + s), hard_plus_soft_v2 and
 * separated (Lever-Plus wrote "separated" as h = 1 ? 2·w_h + w_s·s : w_s·s — the same), hard_only,
 * soft_only, the gtprob modes, hard_plus_gtprob_plus_rel (relevance only shapes negatives), legacy
 * (quality = −logprobScore with useLogprob, else beamScore; correctness = h ("01") or 2h − 1 ("pm1"),
 * with s in place of h when h is absent) and hybrid,
 * and the result is clipped to [−clip, clip]. These are the formulas of Lever-Plus
 * `reward_utils.py` (`compute_reward_for_candidate`, docs/provenance.md#rewards), except that a field the mode
 * needs but the trajectory lacks is an error naming the query and field, where Lever-Plus read it as 0
 * (which silently turned hard_plus_soft into accuracy-only on data without vqaCorrect). A term with
 * weight 0 is not evaluated, so a zero weight lifts its field's requirement; otherwise the field is
 * required whatever the trajectory's outcome (vqaRelScore also for right answers).
 *
 * `hybrid` (ours; Lever-Plus listed the name but never implemented it) is a dense version of the
 * accuracy reward. s is the accuracy of ONE answer (the greedy one) and takes five values, so many
 * queries have all trajectories tied (all wrong or all right) and give group-relative training no
 * signal. g is the expectation of the same accuracy under the VLM's answer distribution: it is on the
 * same [0, 1] scale as s, it moves continuously with the prompt, and it ranks prompts inside such tied
 * groups (how close an all-wrong group came to a correct answer, how confident an all-right group is).
 * Their sum is an accuracy estimate that keeps the measured outcome s and adds the lower-variance
 * expectation g. Our rollouts store g as Σ_a min(n_a/3, 1)·P(a) over the distinct annotator answers,
 * with P(a) the probability of a's answer tokens only; Lever-Plus files hold a flawed approximation
 * (per-token mean over a mis-masked span), so prefer hybrid on our own rollouts.
 *
 * Per-query normalisation of one group's rewards R (M trajectories): "zscore" (R − mean)/std with the
 * unbiased std (as Lever-Plus), "zscore-clamp" the same clamped to ±normalizeClamp (the Lever-Plus
 * default, clamp 3), "rank" 1 − 2·rank/(M − 1) with rank 0 the best and tied rewards sharing their
 * average rank, "none" the raw rewards. A group of one trajectory, or whose rewards are all equal,
 * normalises to all zeros under every method but "none" (Lever-Plus passed such groups through raw,
 * so an all-correct group kept a large positive reward while an all-wrong one kept 0). Only RCE with
 * `rewards: normalized` reads it; GRPO computes its advantages from the raw rewards, so that
 * `advantage.kind` is the one place where GRPO normalises (Dr. GRPO's "mean" would otherwise become a
 * z-score again).
 */
import { z } from "zod";
import type { Trajectory } from "../data/trajectories.js";
import { averageRanks, meanStd } from "../metrics/stats.js";
import { LeverError } from "../util/errors.js";

export const REWARD_NORMALIZATIONS = ["none", "zscore", "zscore-clamp", "rank"] as const;

const weight = z.number().refine(Number.isFinite, "must be a finite number");

/** The settings a mode reads besides its name. */
const RewardWeightsSchema = z.object({
  hardWeight: weight.default(1).describe("w_h: weight of hard correctness vqaCorrect (0/1)"),
  softWeight: weight
    .default(1)
    .describe("w_s: weight of the soft score (vqaAccScore; vqaGtProb in the gtprob modes; vqaAccScore in hybrid)"),
  relWeight: weight.default(0.1).describe("w_r: weight of the relevance vqaRelScore of wrong answers"),
  gtWeight: weight
    .default(1)
    .describe(
      "hybrid: weight of vqaGtProb, the expected VQA accuracy; ref_logprob, cider_plus_logprob: weight of gtLogprob (CIDEr-D points per nat)",
    ),
  alpha: weight.default(0).describe("legacy only: weight of the producer's quality score"),
  beta: weight.default(0).describe("legacy only: weight of correctness"),
  correctness: z.enum(["01", "pm1"]).default("01").describe("legacy only: correctness as 0/1 or as −1/+1"),
  useLogprob: z.boolean().default(false).describe("legacy only: quality = −logprobScore instead of beamScore"),
  clip: z.number().positive().nullable().default(5).describe("rewards are clipped to [−clip, clip]"),
  normalize: z
    .enum(REWARD_NORMALIZATIONS)
    .default("zscore-clamp")
    .describe(
      "per-query normalisation of a group's rewards, read by RCE with rewards: normalized (GRPO normalises through advantage.kind)",
    ),
  normalizeClamp: z.number().positive().default(3).describe("zscore-clamp: bound on |normalised reward|"),
});
type RewardWeights = z.infer<typeof RewardWeightsSchema>;

/** Trajectory fields a reward can read. */
type ScoreField =
  | "vqaCorrect"
  | "vqaAccScore"
  | "vqaGtProb"
  | "vqaRelScore"
  | "gtLogprob"
  | "beamScore"
  | "logprobScore";

/** What a mode's formula reads: the settings, a required field, and a weighted term (weight 0: not read). */
interface RewardTerms {
  cfg: RewardWeights;
  t: Trajectory;
  need(field: ScoreField): number;
  term(w: number, field: ScoreField): number;
}

/** A reward mode: its formula as help shows it, and the (unclipped, unnormalised) reward it computes. */
interface RewardModeDef {
  formula: string;
  reward(x: RewardTerms): number;
}

const hardPlusSoftV2: RewardModeDef = {
  formula: "2·w_h·h + w_s·s",
  reward: ({ cfg, term }) => term(2 * cfg.hardWeight, "vqaCorrect") + term(cfg.softWeight, "vqaAccScore"),
};

/**
 * THE reward modes (see the header for the fields): the mode setting's choices and its help come from
 * this table, so a mode is added here and nowhere else (docs/training.md documents it).
 */
const MODES = {
  hard_plus_soft: {
    formula: "w_h·h + w_s·s",
    reward: ({ cfg, term }) => term(cfg.hardWeight, "vqaCorrect") + term(cfg.softWeight, "vqaAccScore"),
  },
  hard_plus_soft_v2: hardPlusSoftV2,
  separated: hardPlusSoftV2,
  hard_only: { formula: "w_h·h", reward: ({ cfg, term }) => term(cfg.hardWeight, "vqaCorrect") },
  soft_only: { formula: "w_s·s", reward: ({ cfg, term }) => term(cfg.softWeight, "vqaAccScore") },
  hard01_plus_gtprob: {
    formula: "w_h·h + w_s·g",
    reward: ({ cfg, term }) => term(cfg.hardWeight, "vqaCorrect") + term(cfg.softWeight, "vqaGtProb"),
  },
  hard01_plus_gtprob_separated: {
    formula: "2·w_h·h + w_s·g",
    reward: ({ cfg, term }) => term(2 * cfg.hardWeight, "vqaCorrect") + term(cfg.softWeight, "vqaGtProb"),
  },
  hard_plus_gtprob_plus_rel: {
    formula: "w_h·h + w_s·g + w_r·(1 − h)·r",
    reward: ({ cfg, need, term }) => {
      const wr = cfg.relWeight;
      const rel = wr === 0 ? 0 : wr * (1 - need("vqaCorrect")) * need("vqaRelScore");
      return term(cfg.hardWeight, "vqaCorrect") + term(cfg.softWeight, "vqaGtProb") + rel;
    },
  },
  legacy: {
    formula: "alpha·quality + beta·correctness",
    reward: ({ cfg, t, need }) => {
      const quality = cfg.alpha === 0 ? 0 : cfg.useLogprob ? -need("logprobScore") : need("beamScore");
      let corr = 0;
      if (cfg.beta !== 0) {
        const c = t.vqaCorrect ?? need("vqaAccScore");
        corr = cfg.correctness === "01" ? c : 2 * c - 1;
      }
      return cfg.alpha * quality + cfg.beta * corr;
    },
  },
  hybrid: {
    formula: "w_s·s + gtWeight·g",
    reward: ({ cfg, term }) => term(cfg.softWeight, "vqaAccScore") + term(cfg.gtWeight, "vqaGtProb"),
  },
  // Captions (src/task/caption.ts): s holds the caption's CIDEr-D against its references (fixed
  // document frequencies from the index), ℓ = gtLogprob the log-probability of the shown reference.
  cider: { formula: "w_s·s (s = CIDEr-D)", reward: ({ cfg, term }) => term(cfg.softWeight, "vqaAccScore") },
  ref_logprob: {
    formula: "gtWeight·ℓ (ℓ = log p of the reference caption)",
    reward: ({ cfg, term }) => term(cfg.gtWeight, "gtLogprob"),
  },
  cider_plus_logprob: {
    formula: "w_s·s + gtWeight·ℓ",
    reward: ({ cfg, term }) => term(cfg.softWeight, "vqaAccScore") + term(cfg.gtWeight, "gtLogprob"),
  },
} satisfies Record<string, RewardModeDef>;
export type RewardMode = keyof typeof MODES;

/** The mode names, in the table's order. */
export const REWARD_MODES = Object.keys(MODES) as [RewardMode, ...RewardMode[]];

export const RewardSchema = z
  .object({
    mode: z
      .enum(REWARD_MODES)
      .default("hard_plus_soft")
      .describe(
        `How a trajectory's stored scores become its reward (h vqaCorrect, s vqaAccScore — a caption's CIDEr-D, g vqaGtProb, r vqaRelScore, ℓ gtLogprob); the caption task takes cider, ref_logprob and cider_plus_logprob: ${REWARD_MODES.map((m) => `${m} = ${MODES[m].formula}`).join("; ")}`,
      ),
    ...RewardWeightsSchema.shape,
  })
  .strict();
export type RewardConfig = z.infer<typeof RewardSchema>;

/** Where a trajectory sits, for error messages: the query id and its index in the query's list. */
export interface TrajectoryRef {
  file?: string;
  queryId: string;
  index: number;
}

/** The (unclipped, unnormalised) reward of one trajectory. */
function rawReward(t: Trajectory, cfg: RewardConfig, at: TrajectoryRef): number {
  const need = (field: ScoreField): number => {
    const v = t[field];
    if (v === undefined || v === null)
      throw new LeverError(
        `reward mode "${cfg.mode}" needs ${field}, which this trajectory lacks (choose a mode that does not use it, or set its weight to 0)`,
        { file: at.file, record: at.queryId, field: `trajectories[${at.index}].${field}` },
      );
    return v;
  };
  const term = (w: number, field: ScoreField) => (w === 0 ? 0 : w * need(field));
  return MODES[cfg.mode].reward({ cfg, t, need, term });
}

/** The reward of one trajectory, clipped to [−clip, clip]. */
export function trajectoryReward(t: Trajectory, cfg: RewardConfig, at: TrajectoryRef): number {
  const r = rawReward(t, cfg, at);
  return cfg.clip === null ? r : Math.min(cfg.clip, Math.max(-cfg.clip, r));
}

/**
 * The trajectories that were scored: those flagged `evalFailed` have no meaningful reward and are
 * left out (and counted). `index` is each kept trajectory's position in the original list.
 */
export function scoredTrajectories(trajectories: readonly Trajectory[]): {
  kept: { trajectory: Trajectory; index: number }[];
  failed: number;
} {
  const kept = trajectories.flatMap((trajectory, index) => (trajectory.evalFailed ? [] : [{ trajectory, index }]));
  return { kept, failed: trajectories.length - kept.length };
}

/** True for a group of fewer than two values or whose values are all equal. */
export function isDegenerate(xs: readonly number[]): boolean {
  for (let i = 1; i < xs.length; i++) if (xs[i] !== xs[0]) return false;
  return true;
}

/** 1 − 2·rank/(M − 1), rank 0 = the largest value, ties sharing their average rank; M = 1 → 0. */
export function rankScores(xs: readonly number[]): number[] {
  const M = xs.length;
  if (M < 2) return xs.map(() => 0);
  // Ascending average ranks 1…M; M − rank is the descending 0-based rank (half-integers: exact).
  const ascending = averageRanks(xs);
  return xs.map((_, i) => 1 - (2 * (M - ascending[i])) / (M - 1));
}

/** Per-query normalisation of one group's rewards (see the header). */
export function normalizeGroup(
  rewards: readonly number[],
  cfg: Pick<RewardConfig, "normalize" | "normalizeClamp">,
): number[] {
  if (cfg.normalize === "none") return [...rewards];
  if (isDegenerate(rewards)) return rewards.map(() => 0);
  if (cfg.normalize === "rank") return rankScores(rewards);
  const { mean, std } = meanStd(rewards);
  const z = rewards.map((r) => (r - mean) / std);
  if (cfg.normalize === "zscore") return z;
  const c = cfg.normalizeClamp;
  return z.map((v) => Math.min(c, Math.max(-c, v)));
}
