/**
 * The report's headline: per shot, the best method under test (highest accuracy; not the baseline,
 * not a simulator reference) — or, when the comparison holds `lever run`'s final methods (`final:…`,
 * chosen on training questions before the evaluation), the first of those, with what it is at each shot — against the baseline, on the comparison's table of all questions (else
 * its largest), with Δ, its interval, the Holm-adjusted p and the verdict — significantly better,
 * significantly worse, or no significant difference — as one sentence and one small table. Pure: it
 * reads the comparison engine's result (src/metrics/compare.ts) and decides nothing the table does not.
 */
import type { ComparisonResult, Interval, MethodInput } from "../metrics/compare.js";
import { formatInterval, formatNumber, formatPValue } from "./table.js";

/** Label prefix of `lever run`'s final methods (src/experiment/guard.ts). */
export const FINAL_PREFIX = "final:";

export type Verdict = "better" | "worse" | "no significant difference";

export interface HeadlineRow {
  shot: number;
  /** The best method's row id and label. */
  row: string;
  label: string;
  accuracy: number;
  /** The baseline's accuracy at this shot (null when it has none). */
  baselineAccuracy: number | null;
  /** Points, on the questions both scored. */
  difference: number;
  ci: Interval;
  pHolm: number | null;
  pairs: number;
  verdict: Verdict;
  /** For a final method: the method whose rows it copies at this shot (selector, prior or guard baseline). */
  source?: string;
}

export interface Headline {
  baseline: string;
  /** The table the headline reads ("all" or "first N"), and its questions. */
  table: string;
  questions: number;
  rows: HeadlineRow[];
  sentence: string;
}

/** Significant after Holm and which way: a significantly worse Δ is "worse", never "better". */
export function verdictOf(c: { significant: boolean; difference: number }): Verdict {
  if (!c.significant) return "no significant difference";
  return c.difference > 0 ? "better" : "worse";
}

/** The verdict in words: "significantly better", "significantly worse", "no significant difference". */
export function verdictText(verdict: Verdict): string {
  return verdict === "no significant difference" ? verdict : `significantly ${verdict}`;
}

/** "+1.23 [+0.40, +2.05]": a Δ in points with its interval, as the headline and the comparison show it. */
export function deltaText(difference: number, ci: Interval): string {
  return `${formatNumber(difference, 2, true)} ${formatInterval([ci.lower, ci.upper], 2, true)}`;
}

/**
 * For each final method (`final:…`), which method it is at each shot: the one whose rows it equals
 * question by question (`lever run` writes them as copies, src/experiment/guard.ts). Shots where no
 * method's rows are equal are left out.
 */
export function finalSources(methods: readonly MethodInput[]): Map<string, Map<number, string>> {
  const key = (r: MethodInput["rows"][number]) =>
    `${r.questionId}\u0000${r.demonstrations.join(",")}\u0000${r.accuracy}`;
  const byShot = (m: MethodInput) => {
    const shots = new Map<number, string[]>();
    for (const r of m.rows) shots.set(r.shot, [...(shots.get(r.shot) ?? []), key(r)]);
    return new Map([...shots].map(([shot, keys]) => [shot, keys.sort().join("\n")]));
  };
  const others = methods.filter((m) => !m.label.startsWith(FINAL_PREFIX)).map((m) => ({ m, shots: byShot(m) }));
  const out = new Map<string, Map<number, string>>();
  for (const final of methods.filter((m) => m.label.startsWith(FINAL_PREFIX))) {
    const sources = new Map<number, string>();
    for (const [shot, rows] of byShot(final)) {
      const same = others.find((o) => o.shots.get(shot) === rows);
      if (same !== undefined) sources.set(shot, same.m.label);
    }
    out.set(final.id, sources);
  }
  return out;
}

/**
 * The headline of a comparison; null when no method under test was compared with the baseline.
 * `sources` (from `finalSources`) names what a final method is at each shot.
 */
export function headlineOf(
  result: ComparisonResult,
  sources: ReadonlyMap<string, ReadonlyMap<number, string>> = new Map(),
): Headline | null {
  const table = result.tables.find((t) => t.subset === "all") ?? result.tables.at(-1);
  if (table === undefined) return null;
  const info = new Map(result.rows.map((r) => [r.id, r]));
  const baselineRow = table.rows.find((r) => info.get(r.row)?.isBaseline);
  const baselineLabel = result.rows.find((r) => r.isBaseline)?.label ?? result.baseline;
  const rows: HeadlineRow[] = [];
  // A `lever run` with its guard names its final method (selector where validated, prior elsewhere):
  // the headline is about that method, chosen before the evaluation, not the best row after it.
  // With several (a sweep whose variants end in different stages) the first is the headline's: picking the
  // best of them on these questions would be the selection the guard exists to avoid.
  const first = result.rows.find((r) => r.label.startsWith(FINAL_PREFIX));
  const finals = new Set(first === undefined ? [] : [first.id]);
  for (const [j, shot] of result.shots.entries()) {
    let best: HeadlineRow | null = null;
    for (const r of table.rows) {
      const row = info.get(r.row);
      const cell = r.cells[j];
      if (row === undefined || row.isBaseline || row.isReference) continue;
      if (finals.size > 0 && !finals.has(r.row)) continue;
      if (cell === null || cell.accuracy === null || cell.comparison === null) continue;
      if (best !== null && cell.accuracy <= best.accuracy) continue;
      const c = cell.comparison;
      best = {
        shot,
        row: r.row,
        label: row.label,
        accuracy: cell.accuracy,
        baselineAccuracy: baselineRow?.cells[j]?.accuracy ?? null,
        difference: c.difference,
        ci: c.ci,
        pHolm: c.pHolm,
        pairs: c.pairs,
        verdict: verdictOf(c),
        ...(sources.get(r.row)?.has(shot) ? { source: sources.get(r.row)?.get(shot) } : {}),
      };
    }
    if (best !== null) rows.push(best);
  }
  if (rows.length === 0) return null;
  const questions = table.label === "all" ? `all ${table.questions} questions` : `the ${table.label} questions`;
  return {
    baseline: baselineLabel,
    table: table.label,
    questions: table.questions,
    rows,
    sentence: `${finals.size > 0 ? "The final method (at each shot count the selector, the top-k prior or a guard baseline, whichever validated best on training questions no stage trained on)" : "Best method"} against the baseline ${baselineLabel} on ${questions}: ${rows.map(clause).join("; ")}.`,
  };
}

function clause(r: HeadlineRow): string {
  const shots = `${r.shot} shot${r.shot === 1 ? "" : "s"}`;
  const versus = r.baselineAccuracy === null ? "" : ` vs ${formatNumber(r.baselineAccuracy, 2)}`;
  const p = r.pHolm === null ? "" : `, Holm p ${formatPValue(r.pHolm)}`;
  const label = r.source === undefined ? r.label : `${r.label} (${r.source})`;
  return `at ${shots} ${label} ${formatNumber(r.accuracy, 2)}${versus} (Δ ${deltaText(r.difference, r.ci)}${p}): ${verdictText(r.verdict)}`;
}
