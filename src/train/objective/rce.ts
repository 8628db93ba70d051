/**
 * Reward-weighted cross-entropy (RCE), the RL warm-up of Lever-Plus (docs/provenance.md#rce): every
 * trajectory of a query is a teacher-forced target, weighted by the softmax of the rewards at temperature τ,
 *   w = softmax(R/τ) over the query's trajectories,   L_q = Σ_i w_i · CE_i,   CE_i = −Σ_t log p(a_{i,t}),
 * (CE summed over steps, as Lever-Plus), and the batch loss is the mean of L_q over queries. High τ
 * spreads the weight over all trajectories (imitation of the whole rollout set), low τ concentrates it
 * on the best ones; τ follows a schedule from `start` to `end` over training. `bestOnly` is plain
 * cross-entropy on the highest-reward trajectory (the first one on ties) — Lever-Plus's
 * `--use_top1_only` took the first listed trajectory, which is not the best in rollout data. Whether
 * R is raw or normalised per query is the caller's choice (Lever-Plus: raw by its training script).
 * Validation (what Lever-Plus logged as "val loss"): the RCE loss at τ = 1 on raw rewards.
 */
import { z } from "zod";
import * as T from "../../tensor/ops.js";
import { noGrad, Tensor } from "../../tensor/tensor.js";

export const TemperatureSchema = z
  .object({
    start: z.number().positive().default(2).describe("RCE temperature τ at the first step"),
    end: z.number().positive().default(0.5).describe("RCE temperature τ at the last step"),
    kind: z.enum(["linear", "cosine"]).default("linear").describe("Shape of the schedule from start to end"),
  })
  .strict();
export type TemperatureConfig = z.infer<typeof TemperatureSchema>;

/**
 * τ at optimiser step `step` (0-based) of `total`: with frac = min(1, step/(total − 1)),
 * linear start + (end − start)·frac, cosine end + (start − end)·(1 + cos(π·frac))/2. One step or
 * fewer gives `end` (as Lever-Plus).
 */
export function rceTemperature(cfg: TemperatureConfig, step: number, total: number): number {
  if (total <= 1) return cfg.end;
  const frac = Math.min(1, Math.max(0, step / (total - 1)));
  if (cfg.kind === "linear") return cfg.start + (cfg.end - cfg.start) * frac;
  return cfg.end + ((cfg.start - cfg.end) * (1 + Math.cos(Math.PI * frac))) / 2;
}

export interface RceOptions {
  temperature: number;
  /** Plain cross-entropy on each query's best trajectory. */
  bestOnly?: boolean;
}

/**
 * RCE loss of R = B·G rows (query-major): `seqLogp` [R] the sequence log-probabilities Σ_t log p
 * (differentiable), `rewards` [R], `real` [R] (1 = trajectory, 0 = padding row).
 */
export function rceLoss(
  seqLogp: Tensor,
  rewards: ArrayLike<number>,
  real: ArrayLike<number>,
  G: number,
  opts: RceOptions,
): Tensor {
  const R = seqLogp.size;
  if (rewards.length !== R || real.length !== R || R % G !== 0)
    throw new RangeError(`rceLoss: ${R} rows, ${rewards.length} rewards, ${real.length} flags, G = ${G}`);
  if (!(opts.temperature > 0)) throw new RangeError(`rceLoss: temperature must be > 0, got ${opts.temperature}`);
  const B = R / G;
  // Each row's coefficient c_r = w_r / B, so the loss is −Σ_r c_r · seqLogp_r.
  const coef = new Float64Array(R);
  for (let b = 0; b < B; b++) {
    const rows: number[] = [];
    for (let i = 0; i < G; i++) if (real[b * G + i]) rows.push(b * G + i);
    if (rows.length === 0) throw new RangeError(`rceLoss: query ${b} has no trajectories`);
    if (opts.bestOnly) {
      const best = rows.reduce((a, r) => (rewards[r] > rewards[a] ? r : a), rows[0]);
      coef[best] = 1 / B;
      continue;
    }
    const top = Math.max(...rows.map((r) => rewards[r] / opts.temperature));
    const e = rows.map((r) => Math.exp(rewards[r] / opts.temperature - top));
    const z = e.reduce((s, v) => s + v, 0);
    rows.forEach((r, k) => {
      coef[r] = e[k] / z / B;
    });
  }
  return T.neg(T.sum(T.mul(T.reshape(seqLogp, [R]), Tensor.from(coef, [R], seqLogp.dtype))));
}

/** The validation RCE loss (τ = 1, all trajectories): the mean over the batch's queries. */
export function rceValidationLoss(
  seqLogp: Tensor,
  rawRewards: ArrayLike<number>,
  real: ArrayLike<number>,
  G: number,
): number {
  return noGrad(() => rceLoss(seqLogp, rawRewards, real, G, { temperature: 1 })).item();
}
