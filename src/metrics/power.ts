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

/**
 * Standard normal quantile Φ⁻¹(p), Wichura's algorithm AS 241 (PPND16, Applied Statistics 37(3),
 * 1988), accurate to about 1e-16 relative.
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new LeverError(`normal quantile needs p in (0, 1), got ${p}`);
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return (
      (q *
        (((((((2509.0809287301226727 * r + 33430.575583588128105) * r + 67265.770927008700853) * r +
          45921.953931549871457) *
          r +
          13731.693765509461125) *
          r +
          1971.5909503065514427) *
          r +
          133.14166789178437745) *
          r +
          3.387132872796366608)) /
      (((((((5226.495278852545925 * r + 28729.085735721942674) * r + 39307.89580009271061) * r +
        21213.794301586595867) *
        r +
        5394.1960214247511077) *
        r +
        687.1870074920579083) *
        r +
        42.313330701600911252) *
        r +
        1)
    );
  }
  let r = Math.sqrt(-Math.log(q < 0 ? p : 1 - p));
  let value: number;
  if (r <= 5) {
    r -= 1.6;
    value =
      (((((((7.7454501427834140764e-4 * r + 0.0227238449892691845833) * r + 0.24178072517745061177) * r +
        1.27045825245236838258) *
        r +
        3.64784832476320460504) *
        r +
        5.7694972214606914055) *
        r +
        4.6303378461565452959) *
        r +
        1.42343711074968357734) /
      (((((((1.05075007164441684324e-9 * r + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r +
        0.14810397642748007459) *
        r +
        0.68976733498510000455) *
        r +
        1.6763848301838038494) *
        r +
        2.05319162663775882187) *
        r +
        1);
  } else {
    r -= 5;
    value =
      (((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r +
        0.026532189526576123093) *
        r +
        0.29656057182850489123) *
        r +
        1.7848265399172913358) *
        r +
        5.4637849111641143699) *
        r +
        6.6579046435011037772) /
      (((((((2.04426310338993978564e-15 * r + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r +
        7.868691311456132591e-4) *
        r +
        0.0148753612908506148525) *
        r +
        0.13692988092273580531) *
        r +
        0.59983220655588793769) *
        r +
        1);
  }
  return q < 0 ? -value : value;
}
