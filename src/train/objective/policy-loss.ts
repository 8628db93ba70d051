/**
 * The GRPO/PPO objective of the selector as tensor ops: clipped surrogate, KL penalty toward a frozen
 * reference policy, and diagnostics; plus the per-step policy entropy for monitoring.
 *
 * Rows: R = B·G trajectories, query-major, each with S steps; row weights are 0 for padding rows
 * (whose inputs are ignored entirely) and usually 1 otherwise. logp [R, S] are the current policy's
 * per-step log-probabilities of the chosen positions (differentiable), oldLogp those of the behaviour
 * policy that produced or last scored the trajectories, refLogp those of the frozen KL reference.
 *
 *   ratio   "step":     r_{i,t} = exp(logp_{i,t} − oldLogp_{i,t}), clipped per step (TRL
 *                       `importance_sampling_level="token"`);
 *           "sequence": r_i = exp(Σ_t logp_{i,t} − Σ_t oldLogp_{i,t}) (Lever-Plus,
 *                       docs/provenance.md#grpo; note GSPO uses the mean log-ratio instead of the sum).
 *   policy  L = −Σ_i w_i · mean_t min(r·A_i, clip(r, 1 − epsLow, 1 + epsHigh)·A_i) / Σ_i w_i
 *           (with per-step advantages A_{i,t} — reward-to-go credit, src/train/objective/online.ts — A_i becomes
 *           A_{i,t}; they need step ratios)
 *           (PPO, Schulman et al. 2017; epsHigh > epsLow is DAPO's clip-higher, arXiv 2503.14476,
 *           which recommends 0.28). With sequence ratios the inner mean is over the one sequence term.
 *   KL      per step on δ = refLogp − logp: k1 = −δ, k2 = δ²/2, k3 = exp(δ) − δ − 1 (J. Schulman,
 *           "Approximating KL Divergence", 2020; k3 is TRL's GRPO estimator), averaged with the same
 *           row weights over rows and steps. The estimators are evaluated on the stored trajectories,
 *           which are samples of the behaviour policy, not of the current one — exact in expectation
 *           when the two coincide (one update per rollout), an approximation otherwise, as in TRL.
 *   total   L + β·KL; β = 0 leaves the KL out of the graph (the gradient is the surrogate's).
 * Neither the ratio nor the estimators are clamped: a blow-up shows in the diagnostics and the
 * training loop stops on a non-finite loss.
 */
import { z } from "zod";
import { meanStdMaxAbsHot } from "../../metrics/stats.js";
import type { TeacherForced } from "../../selector/model.js";
import * as T from "../../tensor/ops.js";
import { type Data, noGrad, Tensor } from "../../tensor/tensor.js";

export const KL_ESTIMATORS = ["k1", "k2", "k3"] as const;
export type KlEstimator = (typeof KL_ESTIMATORS)[number];

export const PolicyLossSchema = z
  .object({
    ratioLevel: z
      .enum(["step", "sequence"])
      .default("step")
      .describe("Importance ratio per step (clipped per step) or per whole trajectory"),
    epsLow: z.number().positive().lt(1).default(0.2).describe("Lower clip range: ratios below 1 − epsLow are clipped"),
    epsHigh: z
      .number()
      .positive()
      .default(0.2)
      .describe("Upper clip range: ratios above 1 + epsHigh are clipped (clip-higher: 0.28)"),
    klEstimator: z.enum(KL_ESTIMATORS).default("k3").describe("KL estimator: k1 (log-ratio), k2 (squared), k3"),
  })
  .strict();
export type PolicyLossConfig = z.infer<typeof PolicyLossSchema>;

export interface PolicyLossInputs {
  /** Current policy, per-step log-probabilities of the chosen positions [R, S] (differentiable). */
  logp: Tensor;
  /** Behaviour policy, [R·S] row-major. */
  oldLogp: ArrayLike<number>;
  /** Frozen KL reference, [R·S] row-major; may be null when β = 0. */
  refLogp: ArrayLike<number> | null;
  /** One advantage per row [R], or one per row and step [R·S] (step ratios only). */
  advantages: ArrayLike<number>;
  /** Row weights [R] (0 = padding row). */
  weights: ArrayLike<number>;
}

export interface PolicyDiagnostics {
  /** The clipped surrogate loss L. */
  policyLoss: number;
  /** The KL estimate (null when no reference was given). */
  kl: number | null;
  /** β·KL as added to the loss (0 when β = 0). */
  klTerm: number;
  /**
   * How much of the update the KL penalty drives: ‖∇β·KL‖ / (‖∇L‖ + ‖∇β·KL‖), gradients with respect
   * to the per-step log-probabilities. (A share of loss VALUES would mislead: with group-normalised
   * advantages the surrogate's value is ≈ 0 by construction at ratio 1, however strong its gradient.)
   */
  klShare: number;
  /** Over real rows (and steps with step ratios). */
  ratioMean: number;
  ratioMin: number;
  ratioMax: number;
  /** Share of ratios clipped below (r < 1 − epsLow with A < 0) and above (r > 1 + epsHigh with A > 0). */
  clipLow: number;
  clipHigh: number;
  /** Advantages of the real rows: mean, population std, largest |A|. */
  advMean: number;
  advStd: number;
  advMaxAbs: number;
}

/** Row-major [R, cols] values with padding rows replaced by `fill` (so garbage there cannot leak). */
function realRows(values: ArrayLike<number>, fill: ArrayLike<number>, weights: ArrayLike<number>, cols: number) {
  const out = Float64Array.from(values);
  for (let r = 0; r < weights.length; r++)
    if (!(weights[r] > 0)) for (let c = 0; c < cols; c++) out[r * cols + c] = fill[r * cols + c];
  return out;
}

function klEstimate(delta: Tensor, estimator: KlEstimator): Tensor {
  switch (estimator) {
    case "k1":
      return T.neg(delta);
    case "k2":
      return T.scale(T.square(delta), 0.5);
    case "k3":
      return T.addScalar(T.sub(T.exp(delta), delta), -1);
  }
}

/** The GRPO loss (a scalar Tensor) and its diagnostics. */
export function policyLoss(
  inputs: PolicyLossInputs,
  cfg: PolicyLossConfig,
  beta: number,
): { loss: Tensor; diagnostics: PolicyDiagnostics } {
  const { logp, weights } = inputs;
  const rows = checkedRows(inputs, cfg, beta);
  const { R, S, advCols, weightSum } = rows;
  const step = cfg.ratioLevel === "step";
  const dt = logp.dtype;
  const current = logp.data;
  const zeros = new Float64Array(R * advCols);

  // Importance ratios [R, cols] against the behaviour policy (padding rows: ratio 1, advantage 0).
  const old = realRows(inputs.oldLogp, current, weights, S);
  const cols = step ? S : 1;
  let logRatio: Tensor;
  if (step) logRatio = T.sub(logp, Tensor.from(old, [R, S], dt));
  else {
    const oldSum = new Float64Array(R);
    for (let r = 0; r < R; r++) for (let t = 0; t < S; t++) oldSum[r] += old[r * S + t];
    logRatio = T.sub(T.sum(logp, 1, true), Tensor.from(oldSum, [R, 1], dt));
  }
  const ratio = T.exp(logRatio);
  const adv = realRows(inputs.advantages, zeros, weights, advCols);
  const A = Tensor.from(adv, [R, advCols], dt);
  const surrogate = T.minimum(T.mul(ratio, A), T.mul(T.clamp(ratio, 1 - cfg.epsLow, 1 + cfg.epsHigh), A));
  const rowCoef = (n: number) => {
    const coef = new Float64Array(R);
    for (let r = 0; r < R; r++) coef[r] = weights[r] > 0 ? weights[r] / (weightSum * n) : 0;
    return Tensor.from(coef, [R, 1], dt);
  };
  const policy = T.neg(T.sum(T.mul(surrogate, rowCoef(cols))));

  // KL toward the reference, per step.
  let kl: Tensor | null = null;
  const ref = inputs.refLogp === null ? null : realRows(inputs.refLogp, current, weights, S);
  if (ref !== null) {
    const klOf = () => T.sum(T.mul(klEstimate(T.sub(Tensor.from(ref, [R, S], dt), logp), cfg.klEstimator), rowCoef(S)));
    kl = beta > 0 ? klOf() : noGrad(klOf);
  }
  const loss = beta > 0 && kl !== null ? T.add(policy, T.scale(kl, beta)) : policy;

  const pass: LossPass = { ...rows, cols, step, ratio: ratio.data, adv, current, ref, weights };
  const policyValue = policy.item();
  const klValue = kl === null ? null : kl.item();
  return {
    loss,
    diagnostics: {
      policyLoss: policyValue,
      kl: klValue,
      klTerm: beta > 0 && klValue !== null ? beta * klValue : 0,
      klShare: klShare(pass, cfg, beta),
      ...ratioDiagnostics(pass, cfg),
    },
  };
}

/** The loss inputs' shape [R, S], the advantages' columns and the rows' total weight, once every size is checked. */
function checkedRows(inputs: PolicyLossInputs, cfg: PolicyLossConfig, beta: number) {
  const { logp, weights } = inputs;
  if (logp.ndim !== 2) throw new RangeError(`policyLoss: logp must be [R, S], got ${logp.ndim} dims`);
  const [R, S] = logp.shape;
  const advCols = S > 1 && inputs.advantages.length === R * S ? S : 1;
  if (advCols > 1 && cfg.ratioLevel !== "step")
    throw new RangeError("policyLoss: per-step advantages need step ratios (ratioLevel step)");
  const sizes: [string, ArrayLike<number> | null, number][] = [
    ["oldLogp", inputs.oldLogp, R * S],
    ["refLogp", inputs.refLogp, R * S],
    ["advantages", inputs.advantages, R * advCols],
    ["weights", weights, R],
  ];
  for (const [name, v, n] of sizes)
    if (v !== null && v.length !== n) throw new RangeError(`policyLoss: ${name} has ${v.length} values, expected ${n}`);
  if (!(beta >= 0)) throw new RangeError(`policyLoss: β must be ≥ 0, got ${beta}`);
  if (beta > 0 && inputs.refLogp === null) throw new RangeError("policyLoss: β > 0 needs reference log-probabilities");
  let weightSum = 0;
  for (let r = 0; r < R; r++) if (weights[r] > 0) weightSum += weights[r];
  if (!(weightSum > 0)) throw new RangeError("policyLoss: no row has a positive weight");
  return { R, S, advCols, weightSum };
}

/** The numbers of a loss evaluation the diagnostics read (padding rows already replaced). */
interface LossPass {
  R: number;
  S: number;
  /** Ratio columns (S with step ratios, else 1) and advantage columns. */
  cols: number;
  advCols: number;
  step: boolean;
  weightSum: number;
  weights: ArrayLike<number>;
  ratio: ArrayLike<number>;
  adv: Float64Array;
  current: ArrayLike<number>;
  ref: Float64Array | null;
}

/** Ratio mean, range and clipped shares over the real rows, and the real rows' advantage summary. */
function ratioDiagnostics(p: LossPass, cfg: PolicyLossConfig) {
  let ratioSum = 0;
  let ratioMin = Number.POSITIVE_INFINITY;
  let ratioMax = Number.NEGATIVE_INFINITY;
  let low = 0;
  let high = 0;
  let entries = 0;
  const advs: number[] = [];
  for (let r = 0; r < p.R; r++) {
    if (!(p.weights[r] > 0)) continue;
    for (let c = 0; c < p.advCols; c++) advs.push(p.adv[r * p.advCols + c]);
    for (let c = 0; c < p.cols; c++) {
      const v = p.ratio[r * p.cols + c];
      const a = p.adv[r * p.advCols + (p.advCols > 1 ? c : 0)];
      ratioSum += v;
      ratioMin = Math.min(ratioMin, v);
      ratioMax = Math.max(ratioMax, v);
      if (v < 1 - cfg.epsLow && a < 0) low++;
      if (v > 1 + cfg.epsHigh && a > 0) high++;
      entries++;
    }
  }
  const { mean: advMean, std: advStd, maxAbs: advMaxAbs } = meanStdMaxAbsHot(advs);
  return {
    ratioMean: ratioSum / entries,
    ratioMin,
    ratioMax,
    clipLow: low / entries,
    clipHigh: high / entries,
    advMean,
    advStd,
    advMaxAbs,
  };
}

/**
 * ‖∇β·KL‖ / (‖∇L‖ + ‖∇β·KL‖), gradients with respect to logp in closed form. The surrogate's gradient
 * is −c·A·r where its unclipped branch is active (both branches tie inside the clip range), else 0.
 */
function klShare(p: LossPass, cfg: PolicyLossConfig, beta: number): number {
  let polSq = 0;
  let klSq = 0;
  for (let r = 0; r < p.R; r++) {
    if (!(p.weights[r] > 0)) continue;
    const c = p.weights[r] / (p.weightSum * p.cols);
    for (let t = 0; t < p.S; t++) {
      const j = p.step ? r * p.S + t : r;
      const v = p.ratio[j];
      const a = p.adv[p.advCols > 1 ? j : r];
      const clipped = Math.min(Math.max(v, 1 - cfg.epsLow), 1 + cfg.epsHigh);
      const active = v * a <= clipped * a || clipped === v;
      const g = active ? c * a * v : 0;
      polSq += g * g;
      if (beta > 0 && p.ref !== null) {
        const delta = p.ref[r * p.S + t] - p.current[r * p.S + t];
        const dk = cfg.klEstimator === "k1" ? 1 : cfg.klEstimator === "k2" ? -delta : 1 - Math.exp(delta);
        const gk = (beta * p.weights[r] * dk) / (p.weightSum * p.S);
        klSq += gk * gk;
      }
    }
  }
  const polNorm = Math.sqrt(polSq);
  const klNorm = Math.sqrt(klSq);
  return polNorm + klNorm === 0 ? 0 : klNorm / (polNorm + klNorm);
}

/**
 * Mean policy entropy −Σ_k p_k log p_k over the available positions, per step (numbers, no
 * gradient), averaged over rows with positive weight (all rows when `weights` is omitted).
 * `logSoftmax`: the pass's `stepLogSoftmax` when the caller already has it.
 */
export function stepEntropy(tf: TeacherForced, weights?: ArrayLike<number>, logSoftmax?: readonly Tensor[]): number[] {
  return tf.scores.map((s, t) => {
    const [R, K] = s.shape;
    const lp = (logSoftmax?.[t] ?? noGrad(() => T.logSoftmax(s, tf.masks[t]))).data;
    return meanEntropy(lp, tf.masks[t], R, K, weights);
  });
}

/** Σ_r w_r·(−Σ_k p_k log p_k) / Σ_r w_r over the rows of [R, K] log-probabilities (a module-level loop: see src/tensor/README.md). */
function meanEntropy(lp: Data, mask: Uint8Array, R: number, K: number, weights: ArrayLike<number> | undefined): number {
  let sum = 0;
  let weightSum = 0;
  for (let r = 0; r < R; r++) {
    const w = weights === undefined ? 1 : weights[r];
    if (!(w > 0)) continue;
    let h = 0;
    for (let k = 0; k < K; k++) if (!mask[r * K + k]) h -= Math.exp(lp[r * K + k]) * lp[r * K + k];
    sum += w * h;
    weightSum += w;
  }
  return sum / weightSum;
}
