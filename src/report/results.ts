/**
 * Results of an ICL evaluation: accuracy per retriever × shot with a bootstrap CI over questions,
 * and every retriever against the `random` baseline on the SAME questions (paired bootstrap CI and
 * p, exact McNemar on acc == 1). Failed VLM calls are excluded from accuracy and counted visibly.
 * Each statistic draws from its own seed derived from (run seed, cell name), so adding a retriever
 * never changes another row's interval.
 */
import { bootstrapMeanCI, pairedBootstrap, pairedMcNemar } from "../metrics/stats.js";
import { Rng } from "../util/rng.js";

/** The fields of a stored prediction the report reads. */
export interface ScoredRow {
  retriever: string;
  shot: number;
  questionId: string;
  accuracy: number | null;
  failure: string | null;
}

export interface SummaryOptions {
  seed: number;
  resamples?: number;
  /** Retriever every other one is compared with (default "random"). */
  baseline?: string;
  /** questionId → image id: resample whole images (questions on one image are not independent). */
  clusters?: ReadonlyMap<string, string>;
  /** Retriever order for the tables (default: first appearance). */
  retrieverOrder?: readonly string[];
}

export interface Interval {
  lower: number;
  upper: number;
}

export interface CellSummary {
  retriever: string;
  shot: number;
  /** Questions with a successful VLM call (the accuracy's denominator). */
  n: number;
  /** Questions whose VLM call failed (excluded from accuracy). */
  failures: number;
  /** Mean official VQA accuracy in percent; null when no question succeeded. */
  accuracy: number | null;
  ci: Interval | null;
}

export interface ComparisonSummary {
  retriever: string;
  shot: number;
  baseline: string;
  baselineShot: number;
  /** Questions scored successfully under both (the pairs). */
  n: number;
  /** Accuracy difference retriever − baseline in percentage points, on the paired questions. */
  difference: number;
  ci: Interval;
  pValue: number;
  /** Exact McNemar on acc == 1: questions fully right only under the retriever / only under the baseline. */
  mcnemar: { onlyRetriever: number; onlyBaseline: number; pValue: number };
  /** The 95 % paired-bootstrap CI excludes 0. */
  significant: boolean;
}

export interface EvalSummary {
  seed: number;
  resamples: number;
  confidence: number;
  clustered: boolean;
  baseline: string;
  cells: CellSummary[];
  comparisons: ComparisonSummary[];
  notes: string[];
}

const CONFIDENCE = 0.95;

/**
 * Bootstrap resamples by default. 2,000 keeps the Monte-Carlo error of a 95 % percentile bound
 * around 0.1 point at n = 1,000 (well under the CI's own width) and the report fast.
 */
export const DEFAULT_RESAMPLES = 2000;

/** Derives an independent, stable seed for one statistic. */
function statSeed(seed: number, name: string): number {
  return new Rng(seed).child(name).nextUint32();
}

export function summarizeEvaluation(rows: readonly ScoredRow[], options: SummaryOptions): EvalSummary {
  const resamples = options.resamples ?? DEFAULT_RESAMPLES;
  const baseline = options.baseline ?? "random";
  const groups = groupRows(rows);
  const order = retrieverRank(rows, options.retrieverOrder);
  const keys = [...groups.keys()].sort((a, b) => {
    const [ra, sa] = splitKey(a);
    const [rb, sb] = splitKey(b);
    return order(ra) - order(rb) || (ra < rb ? -1 : ra > rb ? 1 : 0) || sa - sb;
  });
  const clusterOf = (ids: string[]) =>
    options.clusters ? ids.map((id) => options.clusters?.get(id) ?? `question:${id}`) : undefined;

  const cells: CellSummary[] = keys.map((key) => {
    const [retriever, shot] = splitKey(key);
    const group = groups.get(key) as Map<string, ScoredRow>;
    const ok = [...group.values()].filter((r) => r.failure === null && r.accuracy !== null);
    const failures = group.size - ok.length;
    if (ok.length === 0) return { retriever, shot, n: 0, failures, accuracy: null, ci: null };
    const values = ok.map((r) => r.accuracy as number);
    const ci = bootstrapMeanCI(values, {
      seed: statSeed(options.seed, `ci:${key}`),
      resamples,
      confidence: CONFIDENCE,
      clusters: clusterOf(ok.map((r) => r.questionId)),
    });
    return {
      retriever,
      shot,
      n: ok.length,
      failures,
      accuracy: 100 * ci.estimate,
      ci: { lower: 100 * ci.lower, upper: 100 * ci.upper },
    };
  });

  const notes: string[] = [];
  const comparisons: ComparisonSummary[] = [];
  const baselineShots = cells.filter((c) => c.retriever === baseline).map((c) => c.shot);
  if (baselineShots.length === 0 && cells.some((c) => c.retriever !== baseline))
    notes.push(`no "${baseline}" predictions: paired comparisons need the ${baseline} baseline on the same questions`);
  for (const cell of cells) {
    if (cell.retriever === baseline) continue;
    // Zero-shot (shot 0) is compared with the baseline at every shot; others at their own shot.
    const against = cell.shot === 0 ? baselineShots : baselineShots.filter((s) => s === cell.shot);
    for (const baselineShot of against) {
      const mine = groups.get(cellKey(cell.retriever, cell.shot)) as Map<string, ScoredRow>;
      const theirs = groups.get(cellKey(baseline, baselineShot)) as Map<string, ScoredRow>;
      const ids: string[] = [];
      const a: number[] = [];
      const b: number[] = [];
      for (const [id, row] of mine) {
        const other = theirs.get(id);
        if (
          row.accuracy === null ||
          row.failure !== null ||
          !other ||
          other.accuracy === null ||
          other.failure !== null
        )
          continue;
        ids.push(id);
        a.push(row.accuracy);
        b.push(other.accuracy);
      }
      if (ids.length === 0) {
        notes.push(`${cell.retriever}@${cell.shot} and ${baseline}@${baselineShot} share no scored question`);
        continue;
      }
      const difference = pairedBootstrap(a, b, {
        seed: statSeed(options.seed, `paired:${cellKey(cell.retriever, cell.shot)}:${baselineShot}`),
        resamples,
        confidence: CONFIDENCE,
        clusters: clusterOf(ids),
      });
      const mcnemar = pairedMcNemar(a, b, 1);
      comparisons.push({
        retriever: cell.retriever,
        shot: cell.shot,
        baseline,
        baselineShot,
        n: ids.length,
        difference: 100 * difference.estimate,
        ci: { lower: 100 * difference.lower, upper: 100 * difference.upper },
        pValue: difference.pValue,
        mcnemar: { onlyRetriever: mcnemar.onlyA, onlyBaseline: mcnemar.onlyB, pValue: mcnemar.pValue },
        significant: difference.lower > 0 || difference.upper < 0,
      });
    }
  }
  return {
    seed: options.seed,
    resamples,
    confidence: CONFIDENCE,
    clustered: options.clusters !== undefined,
    baseline,
    cells,
    comparisons,
    notes,
  };
}

function cellKey(retriever: string, shot: number): string {
  return `${retriever}\u0000${shot}`;
}

function splitKey(key: string): [string, number] {
  const at = key.lastIndexOf("\u0000");
  return [key.slice(0, at), Number(key.slice(at + 1))];
}

/** (retriever, shot) → questionId → row; a question appearing twice in one cell is a caller bug. */
function groupRows(rows: readonly ScoredRow[]): Map<string, Map<string, ScoredRow>> {
  const groups = new Map<string, Map<string, ScoredRow>>();
  for (const row of rows) {
    const key = cellKey(row.retriever, row.shot);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = new Map()));
    if (group.has(row.questionId))
      throw new Error(`question ${row.questionId} appears twice for ${row.retriever}@${row.shot}`);
    group.set(row.questionId, row);
  }
  return groups;
}

function retrieverRank(rows: readonly ScoredRow[], explicit?: readonly string[]): (name: string) => number {
  const rank = new Map<string, number>();
  for (const name of explicit ?? []) if (!rank.has(name)) rank.set(name, rank.size);
  for (const row of rows) if (!rank.has(row.retriever)) rank.set(row.retriever, rank.size);
  return (name) => rank.get(name) ?? rank.size;
}
