/**
 * The comparison engine: every accuracy, interval and test `lever` reports about evaluated methods —
 * `lever compare`, `lever report`, `lever run`'s comparison and `lever eval`'s own summary — comes from
 * `compareMethods`, so the same rows give the same numbers wherever they are shown.
 *
 * Tables per query subset (the first 100, 200, … questions in question-id order, or all), rows =
 * methods (a run's retriever, or a seed group of them), columns = shots. Every cell has its accuracy
 * with a bootstrap CI; every non-baseline cell its paired difference to the baseline on the same
 * questions (paired bootstrap CI), a p-value (exact McNemar on acc = 1, or a sign-flip test on the
 * per-question differences), the Holm-adjusted p over the comparisons of its table (references — the
 * simulator's oracle and informed ceiling — are compared but kept out of the family), a significance
 * mark after Holm, and the minimum detectable difference (MDE) of its sample. Failed VLM calls are
 * excluded pairwise and counted.
 *
 * Seed groups: methods that differ only in their seed (the caller names them with one `group` key)
 * form one row. Its per-question outcome is the mean over the seeds (a question counts when every
 * seed scored it), its accuracy and difference come with the spread over seeds (mean ± sd, values
 * kept), and since a mean over seeds is not 0/1 its test is always the sign-flip test.
 *
 * Every statistic draws from a seed derived from (settings seed, the table's questions, the row's
 * label, shot), so adding a row or a subset never changes another cell's numbers, and a table of
 * every question draws the same whether it is asked for as "all" or as "first N". All percentages are
 * points (0–100). Pure statistics: the callers turn workspaces and runs into `MethodInput`s.
 */
import { compareQuestionIds } from "../data/item.js";
import { LeverError } from "../util/errors.js";
import { Rng } from "../util/rng.js";
import { holmAdjust } from "./holm.js";
import { type SelectionOverlap, selectionOverlap } from "./overlap.js";
import { observedMde } from "./power.js";
import { bootstrapMeanCI, meanStd, pairedBootstrap, pairedMcNemar, signFlipTest } from "./stats.js";

/** The fields of a stored prediction a comparison reads. */
export interface ComparedRow {
  shot: number;
  questionId: string;
  /** VQA accuracy in [0, 1]; null when the VLM call failed. */
  accuracy: number | null;
  failure: string | null;
  /** Demonstration question ids in prompt order. */
  demonstrations: readonly string[];
}

/** One method: a run's retriever, e.g. id "eval-0003/selector:grpo", label "grpo". */
export interface MethodInput {
  id: string;
  label: string;
  /** Seed-group key: methods sharing it differ only in seed and become one aggregated row. */
  group?: string;
  /**
   * A reference, not a method under test (the simulator's oracle and informed ceiling): compared with
   * the baseline like every row, but left out of the Holm family so it cannot dilute the methods' tests.
   */
  reference?: boolean;
  rows: readonly ComparedRow[];
}

export type SubsetSpec = number | "all";
export const COMPARE_TESTS = ["mcnemar", "sign-flip"] as const;
export type CompareTest = (typeof COMPARE_TESTS)[number];

export interface CompareSettings {
  /** Row every other is compared with: a method id, or a seed-group key. */
  baseline: string;
  /** Query subsets, each a table: the first N evaluated questions in question-id order, or all. */
  subsets: readonly SubsetSpec[];
  seed: number;
  /** Bootstrap resamples per interval. */
  resamples: number;
  /** Test of single-method comparisons (seed groups always use the sign-flip test). */
  test: CompareTest;
  /** questionId → image id: resample and flip whole images (questions on one image are not independent). */
  clusters?: ReadonlyMap<string, string>;
  /** Random sign vectors of the sign-flip test (default 10,000). */
  permutations?: number;
}

/** The test of single-method comparisons unless told otherwise. */
export const DEFAULT_TEST: CompareTest = "mcnemar";

/**
 * Bootstrap resamples by default. 2,000 keeps the Monte-Carlo error of a 95 % percentile bound
 * around 0.1 point at n = 1,000 (well under the CI's own width) and the report fast.
 */
export const DEFAULT_RESAMPLES = 2000;

export const CONFIDENCE = 0.95;
/** Family-wise level of the Holm correction and the MDE. */
export const ALPHA = 0.05;
/** Power the MDE is computed for. */
export const POWER = 0.8;

export interface Interval {
  lower: number;
  upper: number;
}

/** A value per seed (in member order; null where a seed has no scored question) with mean and sd. */
export interface SeedSpread {
  values: (number | null)[];
  mean: number | null;
  /** Sample standard deviation over the seeds with a value; null with fewer than two. */
  sd: number | null;
}

export interface RowInfo {
  id: string;
  label: string;
  /** The methods behind the row: one, or the seeds of a group. */
  members: { id: string; label: string }[];
  isGroup: boolean;
  isBaseline: boolean;
  /** A reference row (MethodInput.reference): outside the Holm family. */
  isReference: boolean;
}

export interface CellComparison {
  baseline: string;
  /** Questions of the subset scored under both (the pairs). */
  pairs: number;
  /** Questions of the subset predicted under either but not scored under both (failed or missing). */
  excluded: number;
  /** Row − baseline accuracy on the pairs, points. */
  difference: number;
  ci: Interval;
  test: CompareTest;
  /** Exact McNemar's discordant counts on acc = 1 (null for the sign-flip test). */
  mcnemar: { onlyRow: number; onlyBaseline: number } | null;
  pValue: number;
  /** Holm-adjusted over every comparison of the table but the references'; null for a reference. */
  pHolm: number | null;
  /** pHolm ≤ ALPHA (never for a reference). */
  significant: boolean;
  /** The row is a reference (outside the Holm family). */
  reference: boolean;
  /** Minimum detectable difference (points) of these pairs at ALPHA two-sided and POWER; null below 2 pairs. */
  mde: number | null;
  /** Per-seed differences when the row (or else the baseline) is a seed group. */
  seeds: SeedSpread | null;
}

export interface CellResult {
  row: string;
  shot: number;
  /** Questions of the subset scored (the accuracy's denominator). */
  n: number;
  /** Questions of the subset whose call failed (for groups: failed or missing under some seed). */
  failures: number;
  accuracy: number | null;
  ci: Interval | null;
  /** Per-seed accuracies of a seed group. */
  seeds: SeedSpread | null;
  comparison: CellComparison | null;
}

export interface CompareTable {
  subset: SubsetSpec;
  /** "first 100" or "all". */
  label: string;
  /** Questions in the subset. */
  questions: number;
  /** rows[i].cells[j]: row i of `ComparisonResult.rows` at `ComparisonResult.shots[j]` (null = no predictions). */
  rows: { row: string; cells: (CellResult | null)[] }[];
  /** Number of comparisons in the Holm family (references excluded). */
  comparisons: number;
  /** Range of the comparisons' MDEs (points). */
  mde: Interval | null;
}

export interface OverlapEntry extends SelectionOverlap {
  shot: number;
  a: string;
  b: string;
}

export interface ComparisonResult {
  format: "lever.compare/1";
  baseline: string;
  settings: {
    seed: number;
    resamples: number;
    confidence: number;
    alpha: number;
    power: number;
    test: CompareTest;
    clustered: boolean;
  };
  rows: RowInfo[];
  shots: number[];
  tables: CompareTable[];
  /** Selection overlap of every two methods at every shot > 0, on all questions both ran. */
  overlap: OverlapEntry[];
  notes: string[];
  /** What the values are, for legends (set by the caller that knows the task; absent: VQA accuracy). */
  metric?: ComparedMetric;
}

/** What a comparison's per-item values are (src/task/types.ts `wording`). */
export interface ComparedMetric {
  /** "accuracy", "CIDEr". */
  name: string;
  /** "question", "image". */
  unit: string;
  /** One line for legends: what the value is and its scale. */
  legend: string;
  /** A chart's value axis. */
  axis: string;
  /** Per-item values are shares of right (1 = fully right, shown as %); false: a continuous score (shown ×100). */
  share: boolean;
}

/** VQA's, the metric of a comparison that names none. */
export const VQA_COMPARED_METRIC: ComparedMetric = {
  name: "accuracy",
  unit: "question",
  legend: "official VQA accuracy (%)",
  axis: "VQA accuracy %",
  share: true,
};

/** Per row and shot: question id → outcome (null = failed / not scored by every seed). */
type Outcomes = Map<string, number | null>;

interface RowData {
  info: RowInfo;
  /** shot → outcomes of the row. */
  outcomes: Map<number, Outcomes>;
  /** shot → each member's own outcomes (member order). */
  memberOutcomes: Map<number, Outcomes[]>;
}

export function compareMethods(methods: readonly MethodInput[], settings: CompareSettings): ComparisonResult {
  if (methods.length === 0) throw new LeverError("nothing to compare: no methods");
  const notes: string[] = [];
  const perMethod = methods.map(indexRows);
  const rows = buildRows(methods, perMethod, settings.baseline);
  const baseline = rows.find((r) => r.info.isBaseline) as RowData;
  const shots = [...new Set(methods.flatMap((m) => m.rows.map((r) => r.shot)))].sort((a, b) => a - b);
  const universe = [...new Set(methods.flatMap((m) => m.rows.map((r) => r.questionId)))].sort(compareQuestionIds);

  for (const row of rows) {
    if (row.info.isBaseline) continue;
    for (const shot of shots)
      if (row.outcomes.has(shot) && !baseline.outcomes.has(shot))
        notes.push(`${row.info.label} at shot ${shot} is not compared: the baseline has no predictions at that shot`);
  }

  const tables: CompareTable[] = [];
  for (const subset of resolveSubsets(settings.subsets, universe.length, notes)) {
    const ids = subset === "all" ? universe : universe.slice(0, subset);
    const label = subset === "all" ? "all" : `first ${subset}`;
    // A table of every question draws from the streams of "all" also when asked for as "first N".
    const streams = ids.length === universe.length ? "all" : label;
    tables.push(buildTable(rows, baseline, shots, ids, { subset, label, streams }, settings));
  }

  return {
    format: "lever.compare/1",
    baseline: baseline.info.id,
    settings: {
      seed: settings.seed,
      resamples: settings.resamples,
      confidence: CONFIDENCE,
      alpha: ALPHA,
      power: POWER,
      test: settings.test,
      clustered: settings.clusters !== undefined,
    },
    rows: rows.map((r) => r.info),
    shots,
    tables,
    overlap: overlaps(methods, perMethod, shots),
    notes,
  };
}

/** shot → questionId → row; a question twice at one shot of one method is refused. */
function indexRows(method: MethodInput): Map<number, Map<string, ComparedRow>> {
  const byShot = new Map<number, Map<string, ComparedRow>>();
  for (const row of method.rows) {
    let shot = byShot.get(row.shot);
    if (shot === undefined) byShot.set(row.shot, (shot = new Map()));
    if (shot.has(row.questionId))
      throw new LeverError(`question ${row.questionId} appears twice at shot ${row.shot}`, { record: method.id });
    shot.set(row.questionId, row);
  }
  return byShot;
}

function outcomesOf(rows: Map<string, ComparedRow>): Outcomes {
  const out: Outcomes = new Map();
  for (const [id, row] of rows) out.set(id, row.failure === null && row.accuracy !== null ? row.accuracy : null);
  return out;
}

/** Rows in input order (a group where its first member is), with the baseline resolved. */
function buildRows(
  methods: readonly MethodInput[],
  perMethod: Map<number, Map<string, ComparedRow>>[],
  baselineId: string,
): RowData[] {
  const ids = new Set<string>();
  for (const m of methods) {
    if (ids.has(m.id)) throw new LeverError(`method "${m.id}" is listed twice`);
    ids.add(m.id);
  }
  const order: string[] = [];
  const members = new Map<string, number[]>();
  for (const [i, m] of methods.entries()) {
    const key = m.group ?? m.id;
    if (m.group !== undefined && ids.has(m.group))
      throw new LeverError(`seed group "${m.group}" has the name of a method; give the group another name`);
    if (!members.has(key)) {
      members.set(key, []);
      order.push(key);
    }
    members.get(key)?.push(i);
  }
  if (!members.has(baselineId)) {
    const inGroup = methods.find((m) => m.id === baselineId)?.group;
    throw new LeverError(
      inGroup !== undefined
        ? `baseline "${baselineId}" belongs to seed group "${inGroup}"; name the group as the baseline`
        : `no method "${baselineId}" to use as the baseline (known: ${order.join(", ")})`,
      { field: "--baseline" },
    );
  }
  return order.map((key) => {
    const indices = members.get(key) as number[];
    const isGroup = methods[indices[0]].group !== undefined;
    const info: RowInfo = {
      id: key,
      label: isGroup ? key : methods[indices[0]].label,
      members: indices.map((i) => ({ id: methods[i].id, label: methods[i].label })),
      isGroup,
      isBaseline: key === baselineId,
      isReference: indices.every((i) => methods[i].reference === true),
    };
    const outcomes = new Map<number, Outcomes>();
    const memberOutcomes = new Map<number, Outcomes[]>();
    const shots = new Set(indices.flatMap((i) => [...perMethod[i].keys()]));
    for (const shot of shots) {
      const each = indices.map((i) => outcomesOf(perMethod[i].get(shot) ?? new Map()));
      memberOutcomes.set(shot, each);
      outcomes.set(shot, isGroup ? meanOverSeeds(each) : each[0]);
    }
    return { info, outcomes, memberOutcomes };
  });
}

/** A question's group outcome: the mean over seeds when every seed scored it, else null. */
function meanOverSeeds(each: Outcomes[]): Outcomes {
  const out: Outcomes = new Map();
  const questions = new Set(each.flatMap((o) => [...o.keys()]));
  for (const id of questions) {
    let sum = 0;
    let complete = true;
    for (const o of each) {
      const v = o.get(id);
      if (v === undefined || v === null) complete = false;
      else sum += v;
    }
    out.set(id, complete ? sum / each.length : null);
  }
  return out;
}

/**
 * Requested subsets that fit the evaluated questions; a first-N of every evaluated question is "all"
 * (a table is not called "first 400" when 400 were evaluated), and "all" is not repeated.
 */
function resolveSubsets(requested: readonly SubsetSpec[], size: number, notes: string[]): SubsetSpec[] {
  const kept: SubsetSpec[] = [];
  for (const asked of requested) {
    const spec = asked === size ? "all" : asked;
    if (kept.includes(spec)) continue;
    if (spec !== "all" && spec > size) {
      notes.push(`subset "first ${spec}" skipped: only ${size} questions were evaluated`);
      continue;
    }
    kept.push(spec);
  }
  return kept;
}

function buildTable(
  rows: RowData[],
  baseline: RowData,
  shots: number[],
  ids: readonly string[],
  { subset, label, streams }: { subset: SubsetSpec; label: string; streams: string },
  settings: CompareSettings,
): CompareTable {
  // A question missing from the image map is its own cluster.
  const { clusters } = settings;
  const clustersOf = (questionIds: string[]): string[] | undefined =>
    clusters === undefined ? undefined : questionIds.map((id) => clusters.get(id) ?? `question:${id}`);
  // Streams are keyed by the row's LABEL (unique in a table), not its id: an id names the checkpoint's
  // path, so the same methods on the same answers in another workspace would otherwise get other intervals.
  const seedOf = (row: string, shot: number, what: string) =>
    new Rng(settings.seed).child(`${streams}|${row}|${shot}|${what}`).nextUint32();

  const tableRows = rows.map((row) => ({
    row: row.info.id,
    cells: shots.map((shot): CellResult | null => {
      const outcomes = row.outcomes.get(shot);
      if (outcomes === undefined) return null;
      const scored: string[] = [];
      let failures = 0;
      for (const id of ids) {
        const v = outcomes.get(id);
        if (v === undefined) continue;
        if (v === null) failures++;
        else scored.push(id);
      }
      const values = scored.map((id) => outcomes.get(id) as number);
      const ci =
        values.length === 0
          ? null
          : bootstrapMeanCI(values, {
              seed: seedOf(row.info.label, shot, "ci"),
              resamples: settings.resamples,
              confidence: CONFIDENCE,
              clusters: clustersOf(scored),
            });
      const seeds = row.info.isGroup
        ? spread((row.memberOutcomes.get(shot) as Outcomes[]).map((o) => subsetMean(o, ids)))
        : null;
      const comparison =
        row.info.isBaseline || !baseline.outcomes.has(shot)
          ? null
          : compareCell(row, baseline, shot, ids, settings, seedOf, clustersOf);
      return {
        row: row.info.id,
        shot,
        n: values.length,
        failures,
        accuracy: ci === null ? null : 100 * ci.estimate,
        ci: ci === null ? null : { lower: 100 * ci.lower, upper: 100 * ci.upper },
        seeds,
        comparison,
      };
    }),
  }));

  const compared = tableRows
    .flatMap((r) => r.cells.flatMap((c) => (c?.comparison ? [c.comparison] : [])))
    .filter((c) => !c.reference);
  const adjusted = holmAdjust(compared.map((c) => c.pValue));
  for (const [i, c] of compared.entries()) {
    c.pHolm = adjusted[i];
    c.significant = adjusted[i] <= ALPHA;
  }
  const mdes = compared.flatMap((c) => (c.mde === null ? [] : [c.mde]));
  return {
    subset,
    label,
    questions: ids.length,
    rows: tableRows,
    comparisons: compared.length,
    mde: mdes.length === 0 ? null : { lower: Math.min(...mdes), upper: Math.max(...mdes) },
  };
}

function compareCell(
  row: RowData,
  baseline: RowData,
  shot: number,
  ids: readonly string[],
  settings: CompareSettings,
  seedOf: (row: string, shot: number, what: string) => number,
  clustersOf: (ids: string[]) => string[] | undefined,
): CellComparison | null {
  const mine = row.outcomes.get(shot) as Outcomes;
  const theirs = baseline.outcomes.get(shot) as Outcomes;
  const paired = pairUp(mine, theirs, ids);
  if (paired.ids.length === 0) return null;
  const clusters = clustersOf(paired.ids);
  const difference = pairedBootstrap(paired.a, paired.b, {
    seed: seedOf(row.info.label, shot, "paired"),
    resamples: settings.resamples,
    confidence: CONFIDENCE,
    clusters,
  });
  const binary = settings.test === "mcnemar" && !row.info.isGroup && !baseline.info.isGroup;
  let pValue: number;
  let mcnemar: CellComparison["mcnemar"] = null;
  if (binary) {
    const m = pairedMcNemar(paired.a, paired.b, 1);
    pValue = m.pValue;
    mcnemar = { onlyRow: m.onlyA, onlyBaseline: m.onlyB };
  } else {
    pValue = signFlipTest(paired.a, paired.b, {
      seed: seedOf(row.info.label, shot, "sign-flip"),
      permutations: settings.permutations,
      clusters,
    }).pValue;
  }
  const diffs = paired.a.map((v, i) => v - paired.b[i]);
  let seeds: SeedSpread | null = null;
  if (row.info.isGroup)
    seeds = spread((row.memberOutcomes.get(shot) as Outcomes[]).map((o) => pairedMean(o, theirs, ids)));
  else if (baseline.info.isGroup)
    seeds = spread((baseline.memberOutcomes.get(shot) as Outcomes[]).map((o) => pairedMean(mine, o, ids)));
  return {
    baseline: baseline.info.id,
    pairs: paired.ids.length,
    excluded: paired.present - paired.ids.length,
    difference: 100 * difference.estimate,
    ci: { lower: 100 * difference.lower, upper: 100 * difference.upper },
    test: binary ? "mcnemar" : "sign-flip",
    mcnemar,
    pValue,
    pHolm: row.info.isReference ? null : pValue, // set by buildTable once the table's family is known
    significant: false,
    reference: row.info.isReference,
    mde: diffs.length < 2 ? null : 100 * observedMde(diffs, { alpha: ALPHA, power: POWER, clusters }).mde,
    seeds,
  };
}

/** Questions of `ids` scored under both; `present` counts those predicted (even failed) under either. */
function pairUp(mine: Outcomes, theirs: Outcomes, ids: readonly string[]) {
  const out = { ids: [] as string[], a: [] as number[], b: [] as number[], present: 0 };
  for (const id of ids) {
    const x = mine.get(id);
    const y = theirs.get(id);
    if (x === undefined && y === undefined) continue;
    out.present++;
    if (x === undefined || x === null || y === undefined || y === null) continue;
    out.ids.push(id);
    out.a.push(x);
    out.b.push(y);
  }
  return out;
}

/** Mean accuracy (points) over the scored questions of `ids`; null when none. */
function subsetMean(outcomes: Outcomes, ids: readonly string[]): number | null {
  let sum = 0;
  let n = 0;
  for (const id of ids) {
    const v = outcomes.get(id);
    if (v === undefined || v === null) continue;
    sum += v;
    n++;
  }
  return n === 0 ? null : (100 * sum) / n;
}

/** Paired mean difference (points) over the questions of `ids` scored under both; null when none. */
function pairedMean(mine: Outcomes, theirs: Outcomes, ids: readonly string[]): number | null {
  const p = pairUp(mine, theirs, ids);
  if (p.ids.length === 0) return null;
  let sum = 0;
  for (let i = 0; i < p.a.length; i++) sum += p.a[i] - p.b[i];
  return (100 * sum) / p.a.length;
}

function spread(values: (number | null)[]): SeedSpread {
  const present = values.filter((v): v is number => v !== null);
  if (present.length === 0) return { values, mean: null, sd: null };
  const { mean, std } = meanStd(present);
  return { values, mean, sd: present.length < 2 ? null : std };
}

/** Every two methods at every shot > 0 both ran (zero-shot has nothing to choose). */
function overlaps(
  methods: readonly MethodInput[],
  perMethod: Map<number, Map<string, ComparedRow>>[],
  shots: number[],
): OverlapEntry[] {
  const out: OverlapEntry[] = [];
  const selections = perMethod.map(
    (byShot) =>
      new Map(
        [...byShot].map(([shot, rows]) => [shot, new Map([...rows].map(([id, row]) => [id, row.demonstrations]))]),
      ),
  );
  for (let i = 0; i < methods.length; i++)
    for (let j = i + 1; j < methods.length; j++)
      for (const shot of shots) {
        if (shot === 0) continue;
        const a = selections[i].get(shot);
        const b = selections[j].get(shot);
        if (a === undefined || b === undefined) continue;
        out.push({ shot, a: methods[i].id, b: methods[j].id, ...selectionOverlap(a, b) });
      }
  return out;
}
