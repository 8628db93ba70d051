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
        (((((((2509.0809287301227 * r + 33430.57558358813) * r + 67265.7709270087) * r + 45921.95393154987) * r +
          13731.69376550946) *
          r +
          1971.5909503065513) *
          r +
          133.14166789178438) *
          r +
          3.3871328727963665)) /
      (((((((5226.495278852546 * r + 28729.085735721943) * r + 39307.89580009271) * r + 21213.794301586597) * r +
        5394.196021424751) *
        r +
        687.1870074920579) *
        r +
        42.31333070160091) *
        r +
        1)
    );
  }
  let r = Math.sqrt(-Math.log(q < 0 ? p : 1 - p));
  let value: number;
  if (r <= 5) {
    r -= 1.6;
    value =
      (((((((0.0007745450142783414 * r + 0.022723844989269184) * r + 0.2417807251774506) * r + 1.2704582524523684) * r +
        3.6478483247632045) *
        r +
        5.769497221460691) *
        r +
        4.630337846156546) *
        r +
        1.4234371107496835) /
      (((((((1.0507500716444169e-9 * r + 0.0005475938084995345) * r + 0.015198666563616457) * r + 0.14810397642748008) *
        r +
        0.6897673349851) *
        r +
        1.6763848301838038) *
        r +
        2.053191626637759) *
        r +
        1);
  } else {
    r -= 5;
    value =
      (((((((2.0103343992922881e-7 * r + 0.000027115555687434876) * r + 0.0012426609473880784) * r +
        0.026532189526576124) *
        r +
        0.29656057182850487) *
        r +
        1.7848265399172913) *
        r +
        5.463784911164114) *
        r +
        6.657904643501103) /
      (((((((2.0442631033899397e-15 * r + 1.421511758316446e-7) * r + 0.000018463183175100548) * r +
        0.0007868691311456133) *
        r +
        0.014875361290850615) *
        r +
        0.1369298809227358) *
        r +
        0.599832206555888) *
        r +
        1);
  }
  return q < 0 ? -value : value;
}

/**
 * Standard normal CDF Φ(x) = erfc(−x/√2)/2, with erfc from the Chebyshev fit of Numerical Recipes
 * (2nd ed., §6.2, `erfcc`): relative error below 1.2e-7 everywhere.
 */
export function normalCdf(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * z);
  const erfc =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? 1 - 0.5 * erfc : 0.5 * erfc;
}
