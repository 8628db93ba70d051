/**
 * Statistics for comparing ICL accuracies on the same questions (paired: Dietterich 1998, Koehn 2004): percentile
 * bootstrap CIs, paired bootstrap of a difference, exact McNemar on binarised outcomes, sign-flip
 * permutation test, each optionally clustered (e.g. by image id, since several questions share an
 * image and are not independent). Every random draw comes from `Rng(seed)`; the seed is returned.
 *
 * Clustering is handled uniformly: values are reduced to per-cluster (sum, count); without
 * clusters every value is its own cluster. A bootstrap resample draws clusters with replacement and
 * takes Σsum / Σcount (the mean over the resampled questions); a sign flip multiplies a whole
 * cluster's sum by ±1.
 */
import { LeverError } from "../util/errors.js";
import { Rng } from "../util/rng.js";

export type ClusterKey = string | number;

export interface BootstrapOptions {
  seed: number;
  /** Number of bootstrap resamples (default 10,000). */
  resamples?: number;
  /** Two-sided confidence level (default 0.95). */
  confidence?: number;
  /** One key per value (e.g. image id); resampling draws whole clusters. */
  clusters?: ArrayLike<ClusterKey>;
}

export interface ConfidenceInterval {
  estimate: number;
  lower: number;
  upper: number;
  /** Standard deviation of the bootstrap distribution. */
  standardError: number;
  confidence: number;
  resamples: number;
  seed: number;
  /** Number of independent units resampled (clusters, or values when unclustered). */
  units: number;
}

export interface PairedBootstrapResult extends ConfidenceInterval {
  /**
   * Two-sided p for "mean difference = 0", by inverting the percentile interval:
   * 2·min(#{d* ≤ 0}, #{d* ≥ 0}) with the +1/(R+1) correction, capped at 1.
   */
  pValue: number;
}

/** Percentile bootstrap CI of the mean of `values`. */
export function bootstrapMeanCI(values: ArrayLike<number>, options: BootstrapOptions): ConfidenceInterval {
  const { sums, counts } = clusterTotals(values, options.clusters, "values");
  const draws = bootstrapMeans(sums, counts, options);
  return summarise(mean(values), draws, sums.length, options);
}

/**
 * Paired bootstrap (Koehn 2004) of mean(a) − mean(b) over the same questions: resample question
 * indices (or clusters) and recompute the difference on each resample.
 */
export function pairedBootstrap(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  options: BootstrapOptions,
): PairedBootstrapResult {
  const diffs = differences(a, b);
  const { sums, counts } = clusterTotals(diffs, options.clusters, "a");
  const draws = bootstrapMeans(sums, counts, options);
  const summary = summarise(mean(diffs), draws, sums.length, options);
  let atOrBelow = 0;
  let atOrAbove = 0;
  for (const d of draws) {
    if (d <= 0) atOrBelow++;
    if (d >= 0) atOrAbove++;
  }
  const pValue = Math.min(1, (2 * (Math.min(atOrBelow, atOrAbove) + 1)) / (draws.length + 1));
  return { ...summary, pValue };
}

export interface McNemarResult {
  /** Questions right under A and wrong under B. */
  onlyA: number;
  /** Questions right under B and wrong under A. */
  onlyB: number;
  /** Exact two-sided p: min(1, 2·P(X ≤ min(onlyA, onlyB))), X ~ Binomial(onlyA + onlyB, 1/2). */
  pValue: number;
}

/** Exact McNemar test from the two discordant counts. */
export function mcnemarExact(onlyA: number, onlyB: number): McNemarResult {
  if (!Number.isInteger(onlyA) || !Number.isInteger(onlyB) || onlyA < 0 || onlyB < 0)
    throw new LeverError(`McNemar counts must be non-negative integers, got ${onlyA} and ${onlyB}`);
  const n = onlyA + onlyB;
  const pValue = n === 0 ? 1 : Math.min(1, 2 * binomialHalfCdf(n, Math.min(onlyA, onlyB)));
  return { onlyA, onlyB, pValue };
}

/**
 * Exact McNemar on per-question scores binarised as `score >= threshold` (VQA accuracy takes
 * values 0, .3, .6, .9, 1, so the caller must say what "correct" means, e.g. 1 or 0.9).
 */
export function pairedMcNemar(a: ArrayLike<number>, b: ArrayLike<number>, threshold: number): McNemarResult {
  checkPaired(a, b);
  let onlyA = 0;
  let onlyB = 0;
  for (let i = 0; i < a.length; i++) {
    const rightA = a[i] >= threshold;
    const rightB = b[i] >= threshold;
    if (rightA && !rightB) onlyA++;
    else if (rightB && !rightA) onlyB++;
  }
  return mcnemarExact(onlyA, onlyB);
}

export interface PermutationOptions {
  seed: number;
  /** Random sign vectors to draw (default 10,000); when 2^units ≤ this, all are enumerated exactly. */
  permutations?: number;
  clusters?: ArrayLike<ClusterKey>;
}

export interface PermutationResult {
  meanDifference: number;
  /** Two-sided: share of sign vectors with |Σ s·d| ≥ |Σ d|; (count+1)/(R+1) when sampled. */
  pValue: number;
  exact: boolean;
  permutations: number;
  seed: number;
  units: number;
}

/**
 * Sign-flip (approximate randomisation) test of mean(a − b) = 0: under the null each question's
 * (or cluster's) difference is equally likely to have either sign.
 */
export function signFlipTest(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  options: PermutationOptions,
): PermutationResult {
  const diffs = differences(a, b);
  const { sums } = clusterTotals(diffs, options.clusters, "a");
  const units = sums.length;
  const observed = Math.abs(sumOf(sums));
  // Sums of the same terms with different signs may differ by rounding only; count those as ties.
  const tolerance = 1e-9 * (sumOfAbs(sums) + 1);
  const requested = options.permutations ?? 10_000;
  let extreme = 0;
  let total: number;
  const exact = units <= 30 && 2 ** units <= requested;
  if (exact) {
    total = 2 ** units;
    for (let mask = 0; mask < total; mask++) {
      let t = 0;
      for (let g = 0; g < units; g++) t += mask & (1 << g) ? -sums[g] : sums[g];
      if (Math.abs(t) >= observed - tolerance) extreme++;
    }
  } else {
    const rng = new Rng(options.seed);
    for (let r = 0; r < requested; r++) {
      let t = 0;
      for (let g = 0; g < units; g++) t += rng.nextUint32() & 1 ? -sums[g] : sums[g];
      if (Math.abs(t) >= observed - tolerance) extreme++;
    }
    total = requested;
  }
  const pValue = exact ? extreme / total : (extreme + 1) / (total + 1);
  return { meanDifference: mean(diffs), pValue, exact, permutations: total, seed: options.seed, units };
}

export interface PairedComparison {
  n: number;
  meanA: number;
  meanB: number;
  /** mean(a) − mean(b) with its paired bootstrap CI and p. */
  difference: PairedBootstrapResult;
  signFlip: PermutationResult;
  mcnemar: McNemarResult & { threshold: number };
}

/** Everything a comparison table needs for two systems scored on the same questions. */
export function comparePaired(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  options: BootstrapOptions & { permutations?: number; threshold: number },
): PairedComparison {
  checkPaired(a, b);
  return {
    n: a.length,
    meanA: mean(a),
    meanB: mean(b),
    difference: pairedBootstrap(a, b, options),
    signFlip: signFlipTest(a, b, {
      seed: options.seed,
      permutations: options.permutations,
      clusters: options.clusters,
    }),
    mcnemar: { ...pairedMcNemar(a, b, options.threshold), threshold: options.threshold },
  };
}

/** Arithmetic mean (left-to-right sum). */
export function mean(values: ArrayLike<number>): number {
  if (values.length === 0) throw new LeverError("cannot take the mean of no values");
  return sumOf(values) / values.length;
}

/**
 * Mean and sample standard deviation (n − 1 in the denominator): the mean is NaN for no values, the
 * deviation 0 for fewer than two. The one mean-and-spread of src/ (seed spreads, reward groups,
 * bootstrap standard errors); the RL loss's per-step statistics use the population variant
 * `meanStdMaxAbsHot` below.
 */
export function meanStd(values: ArrayLike<number>): { mean: number; std: number } {
  const n = values.length;
  const mean = n === 0 ? Number.NaN : sumOf(values) / n;
  if (n < 2) return { mean, std: 0 };
  let squares = 0;
  for (let i = 0; i < n; i++) squares += (values[i] - mean) * (values[i] - mean);
  return { mean, std: Math.sqrt(squares / (n - 1)) };
}

/**
 * Hot-loop variant for the RL loss's per-step statistics: mean, POPULATION standard deviation (n in the
 * denominator; 0 for no values, like the mean) and the largest |x|, in plain loops without callbacks
 * or allocation (src/tensor/README.md on per-step code).
 */
export function meanStdMaxAbsHot(values: ArrayLike<number>): { mean: number; std: number; maxAbs: number } {
  const n = values.length;
  let sum = 0;
  let maxAbs = 0;
  for (let j = 0; j < n; j++) {
    sum += values[j];
    maxAbs = Math.max(maxAbs, Math.abs(values[j]));
  }
  const mean = n === 0 ? 0 : sum / n;
  let ss = 0;
  for (let j = 0; j < n; j++) ss += (values[j] - mean) * (values[j] - mean);
  return { mean, std: Math.sqrt(n === 0 ? 0 : ss / n), maxAbs };
}

/** Ranks 1…n of the values, tied values sharing their average rank. */
export function averageRanks(values: ArrayLike<number>): Float64Array {
  const n = values.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => values[a] - values[b]);
  const ranks = new Float64Array(n);
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && values[order[j + 1]] === values[order[i]]) j++;
    for (let k = i; k <= j; k++) ranks[order[k]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  return ranks;
}

/** Spearman's rank correlation: Pearson's r of the average ranks (NaN when either side is constant). */
export function spearman(x: ArrayLike<number>, y: ArrayLike<number>): number {
  if (x.length !== y.length) throw new LeverError(`spearman: ${x.length} x values for ${y.length} y values`);
  if (x.length < 2) return Number.NaN;
  const rx = averageRanks(x);
  const ry = averageRanks(y);
  const mx = mean(rx);
  const my = mean(ry);
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < rx.length; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) ** 2;
    syy += (ry[i] - my) ** 2;
  }
  return sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : Number.NaN;
}

/** P(X ≤ k) for X ~ Binomial(n, 1/2), summed in log space so large n does not underflow. */
export function binomialHalfCdf(n: number, k: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  // log of C(n, i)·2^-n, built up by the ratio C(n, i+1)/C(n, i) = (n−i)/(i+1).
  let logTerm = -n * Math.LN2;
  let logTotal = logTerm;
  for (let i = 0; i < k; i++) {
    logTerm += Math.log((n - i) / (i + 1));
    logTotal = logAddExp(logTotal, logTerm);
  }
  return Math.min(1, Math.exp(logTotal));
}

/**
 * Quantile with linear interpolation between order statistics (numpy's default, "type 7").
 * `sorted` must be ascending.
 */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) throw new LeverError("cannot take a quantile of no values");
  const position = (n - 1) * q;
  const lo = Math.floor(position);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (position - lo);
}

function logAddExp(x: number, y: number): number {
  const m = Math.max(x, y);
  return m + Math.log(Math.exp(x - m) + Math.exp(y - m));
}

function bootstrapMeans(sums: Float64Array, counts: Float64Array, options: BootstrapOptions): Float64Array {
  const resamples = options.resamples ?? 10_000;
  if (!Number.isInteger(resamples) || resamples < 1)
    throw new LeverError(`bootstrap resamples must be a positive integer, got ${resamples}`);
  const rng = new Rng(options.seed);
  const units = sums.length;
  const draws = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    let count = 0;
    for (let g = 0; g < units; g++) {
      const pick = rng.int(units);
      sum += sums[pick];
      count += counts[pick];
    }
    draws[r] = sum / count;
  }
  return draws;
}

function summarise(
  estimate: number,
  draws: Float64Array,
  units: number,
  options: BootstrapOptions,
): ConfidenceInterval {
  const confidence = options.confidence ?? 0.95;
  if (!(confidence > 0 && confidence < 1)) throw new LeverError(`confidence must be in (0, 1), got ${confidence}`);
  const sorted = Float64Array.from(draws).sort();
  const alpha = 1 - confidence;
  return {
    estimate,
    lower: quantileSorted(sorted, alpha / 2),
    upper: quantileSorted(sorted, 1 - alpha / 2),
    standardError: meanStd(draws).std,
    confidence,
    resamples: draws.length,
    seed: options.seed,
    units,
  };
}

/** Per-cluster sums and counts, clusters in order of first appearance. */
function clusterTotals(
  values: ArrayLike<number>,
  clusters: ArrayLike<ClusterKey> | undefined,
  name: string,
): { sums: Float64Array; counts: Float64Array } {
  if (values.length === 0) throw new LeverError(`${name}: no values`);
  for (let i = 0; i < values.length; i++)
    if (!Number.isFinite(values[i])) throw new LeverError(`${name}[${i}] is not a finite number: ${values[i]}`);
  if (clusters === undefined)
    return { sums: Float64Array.from(values), counts: new Float64Array(values.length).fill(1) };
  if (clusters.length !== values.length)
    throw new LeverError(`clusters has ${clusters.length} keys for ${values.length} values`);
  const index = new Map<ClusterKey, number>();
  const sums: number[] = [];
  const counts: number[] = [];
  for (let i = 0; i < values.length; i++) {
    let g = index.get(clusters[i]);
    if (g === undefined) {
      g = sums.length;
      index.set(clusters[i], g);
      sums.push(0);
      counts.push(0);
    }
    sums[g] += values[i];
    counts[g] += 1;
  }
  return { sums: Float64Array.from(sums), counts: Float64Array.from(counts) };
}

function differences(a: ArrayLike<number>, b: ArrayLike<number>): Float64Array {
  checkPaired(a, b);
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] - b[i];
  return out;
}

function checkPaired(a: ArrayLike<number>, b: ArrayLike<number>): void {
  if (a.length !== b.length)
    throw new LeverError(`paired scores differ in length: ${a.length} vs ${b.length} (score the same questions)`);
  if (a.length === 0) throw new LeverError("paired scores are empty");
}

function sumOf(values: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i];
  return s;
}

function sumOfAbs(values: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += Math.abs(values[i]);
  return s;
}
