/**
 * `lever eval`'s summary is a call of the comparison engine (src/metrics/compare.ts), the one that
 * `lever compare`, `lever report` and `lever run` use: the given predictions as methods built like
 * `lever compare`'s (src/icl/retriever-methods.ts), compared in one table of every question with `lever
 * compare`'s baseline (the random retriever, else the first method), test (exact McNemar on acc = 1),
 * Holm correction at α, resamples, seed and image clustering, all stated in the result. So
 * `lever compare RUN --subsets all --seed SEED` shows the same interval and verdict for each of these
 * rows (with the same Holm family when it compares the same methods of the run).
 */
import { distinctLabels, type MethodRow, retrieverMethods } from "../icl/retriever-methods.js";
import { type ComparisonResult, compareMethods, DEFAULT_RESAMPLES, DEFAULT_TEST } from "../metrics/compare.js";

export interface SummaryOptions {
  /** Seed of the bootstrap and permutation streams (the evaluation's seed). */
  seed: number;
  resamples: number;
  /** questionId → image id: resample whole images (questions on one image are not independent). */
  clusters?: ReadonlyMap<string, string>;
}

/** The summary of one run's predictions; null while the run has none. */
export function summarizeEvaluation(
  runId: string,
  rows: readonly MethodRow[],
  options: SummaryOptions,
): ComparisonResult | null {
  const found = retrieverMethods(runId, rows);
  if (found.length === 0) return null;
  const methods = found.map((f) => f.method);
  distinctLabels(methods);
  const random = found.find((f) => f.retriever === "random");
  const baseline = (random ?? found[0]).method.id;
  const result = compareMethods(methods, {
    baseline,
    subsets: ["all"],
    seed: options.seed,
    resamples: options.resamples,
    test: DEFAULT_TEST,
    clusters: options.clusters,
  });
  const flags = [
    `--baseline ${baseline}`,
    "--subsets all",
    `--seed ${options.seed}`,
    ...(options.resamples !== DEFAULT_RESAMPLES ? [`--resamples ${options.resamples}`] : []),
    ...(options.clusters !== undefined ? ["--cluster-by-image"] : []),
  ];
  result.notes.unshift(
    `baseline: ${baseline}, ${random ? "the random retriever" : "the first method (this run has no random retriever)"}; ` +
      `\`lever compare ${runId} ${flags.join(" ")}\` shows these numbers`,
  );
  return result;
}
