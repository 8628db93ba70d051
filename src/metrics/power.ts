/**
 * How small a difference a paired comparison could detect: the minimum detectable difference (MDE)
 * at a two-sided level α and power 1 − β, by the normal approximation
 *
 *   MDE = (z_{1−α/2} + z_{1−β}) · SE,   with α = 0.05, power 0.8: (1.95996 + 0.84162) · SE = 2.80159 · SE.
 *
 * Two ways to get SE (docs/report.md explains when to use which):
 * - `observedMde`: from the per-question differences d_i = a_i − b_i actually observed,
 *   SE = sd(d)/√n (or the cluster-robust version when questions share an image);
 * - `plannedMde`: before running anything, from the share of questions expected to be discordant
 *   (right under one system, wrong under the other). For 0/1 outcomes Var(d) = p_disc − Δ², which is
 *   ≈ p_disc while the true difference Δ is small, so SE ≈ √(p_disc / n). With n = 800: 2 %
 *   discordant → MDE 1.40 points, 10 % → 3.13 points.
 *
 * A difference smaller than the MDE may be real, but this many questions cannot tell it from noise
 * in 4 of 5 repetitions (van Belle, "Statistical Rules of Thumb", ch. 2; Card et al., EMNLP 2020).
 */
import { LeverError } from "../util/errors.js";
import { normalQuantile } from "../util/normal.js";
import type { ClusterKey } from "./stats.js";

export interface PowerOptions {
  /** Two-sided significance level (default 0.05). */
  alpha?: number;
  /** Probability of detecting a true difference of the MDE's size (default 0.8). */
  power?: number;
}

export interface MdeResult {
  /** Minimum detectable difference, in the units of the scores (multiply by 100 for points). */
  mde: number;
  standardError: number;
  /** Questions (the sample size). */
  n: number;
  /** Independent units behind the SE (clusters, or n without clustering). */
  units: number;
}

/** z_{1−α/2} + z_{power}: the multiplier turning an SE into an MDE. */
export function mdeMultiplier(options: PowerOptions = {}): number {
  const alpha = options.alpha ?? 0.05;
  const power = options.power ?? 0.8;
  if (!(alpha > 0 && alpha < 1)) throw new LeverError(`alpha must be in (0, 1), got ${alpha}`);
  if (!(power > 0 && power < 1)) throw new LeverError(`power must be in (0, 1), got ${power}`);
  return normalQuantile(1 - alpha / 2) + normalQuantile(power);
}

/**
 * MDE from observed paired differences. Without clusters SE = sd(d)/√n (sd with n − 1). With
 * clusters (e.g. image ids) SE is the cluster-robust standard error of the mean difference,
 * √(G/(G−1) · Σ_g (S_g − d̄·n_g)²) / n over the G clusters' sums S_g and sizes n_g, which reduces to
 * sd(d)/√n when every question is its own cluster.
 */
export function observedMde(
  differences: ArrayLike<number>,
  options: PowerOptions & { clusters?: ArrayLike<ClusterKey> } = {},
): MdeResult {
  const n = differences.length;
  if (n < 2) throw new LeverError(`an MDE needs at least 2 paired differences, got ${n}`);
  const clusters = options.clusters;
  if (clusters !== undefined && clusters.length !== n)
    throw new LeverError(`clusters has ${clusters.length} keys for ${n} differences`);
  let total = 0;
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(differences[i])) throw new LeverError(`difference ${i} is not finite: ${differences[i]}`);
    total += differences[i];
  }
  const meanDiff = total / n;
  const sums = new Map<ClusterKey, { sum: number; count: number }>();
  for (let i = 0; i < n; i++) {
    const key = clusters === undefined ? i : clusters[i];
    const entry = sums.get(key);
    if (entry === undefined) sums.set(key, { sum: differences[i], count: 1 });
    else {
      entry.sum += differences[i];
      entry.count += 1;
    }
  }
  const units = sums.size;
  let squares = 0;
  for (const { sum, count } of sums.values()) squares += (sum - meanDiff * count) ** 2;
  const standardError = units > 1 ? Math.sqrt((units / (units - 1)) * squares) / n : 0;
  return { mde: mdeMultiplier(options) * standardError, standardError, n, units };
}

/**
 * Planning MDE for 0/1 outcomes on n questions of which a share `discordant` is expected to differ
 * between the two systems: SE = √(discordant / n).
 */
export function plannedMde(discordant: number, n: number, options: PowerOptions = {}): MdeResult {
  if (!(discordant >= 0 && discordant <= 1))
    throw new LeverError(`discordant share must be in [0, 1], got ${discordant}`);
  if (!Number.isInteger(n) || n < 1) throw new LeverError(`n must be a positive integer, got ${n}`);
  const standardError = Math.sqrt(discordant / n);
  return { mde: mdeMultiplier(options) * standardError, standardError, n, units: n };
}
