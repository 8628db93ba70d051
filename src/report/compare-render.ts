/**
 * Text forms of a comparison (src/report/compare.ts): a terminal table or Markdown (per subset: the
 * accuracy table with rows = methods and columns = shots, then one line per comparison with its
 * difference, interval, p, Holm-adjusted p, mark and MDE; then selection overlap and notes), and CSV
 * (one line per subset × row × shot with every number). JSON is the result object itself.
 */

import { REFERENCE_RETRIEVERS } from "../icl/retriever-catalog.js";
import {
  type CellComparison,
  type CellResult,
  type ComparisonResult,
  type SeedSpread,
  VQA_COMPARED_METRIC,
} from "../metrics/compare.js";
import { type Column, formatInterval, formatNumber, formatPValue, renderMarkdownTable, renderTable } from "./table.js";

export const COMPARE_FORMATS = ["table", "markdown", "csv", "json"] as const;
export type CompareFormat = (typeof COMPARE_FORMATS)[number];

export function renderComparison(result: ComparisonResult, format: CompareFormat): string {
  if (format === "json") return JSON.stringify(result, null, 2);
  if (format === "csv") return comparisonCsv(result);
  return comparisonText(result, format === "markdown");
}

/** "48.00 [38.00, 58.00]", with the seed spread of a group and the failures when there are any. */
export function accuracyText(cell: CellResult): string {
  const parts = [cell.accuracy === null || cell.ci === null ? "n/a" : `${formatNumber(cell.accuracy, 2)}`];
  if (cell.ci !== null) parts.push(formatInterval([cell.ci.lower, cell.ci.upper], 2));
  if (cell.seeds !== null) parts.push(seedText(cell.seeds));
  if (cell.failures > 0) parts.push(`(${cell.failures} failed)`);
  return parts.join(" ");
}

/** "sd 1.20 over 3 seeds". */
export function seedText(seeds: SeedSpread): string {
  const count = seeds.values.filter((v) => v !== null).length;
  if (seeds.sd === null) return `(${count} seed${count === 1 ? "" : "s"})`;
  return `sd ${formatNumber(seeds.sd, 2)} over ${count} seeds`;
}

/** "*" when significant after Holm, "ns" when not, "ref" for a reference (outside the Holm family). */
export function significanceMark(c: CellComparison): string {
  if (c.reference) return "ref";
  return c.significant ? "*" : "ns";
}

/** The Holm-adjusted p, or "—" for a reference. */
export function holmText(c: CellComparison): string {
  return c.pHolm === null ? "—" : formatPValue(c.pHolm);
}

/** What the p-values are, in one sentence. */
export function testDescription(result: ComparisonResult): string {
  const single =
    result.settings.test === "mcnemar"
      ? "exact McNemar on per-question correctness (acc = 1: questions fully right under only one side)"
      : "sign-flip permutation test on the per-question differences";
  const groups = result.rows.some((r) => r.isGroup)
    ? "; seed groups (per-question mean over seeds) use the sign-flip test"
    : "";
  const images = result.settings.clustered ? ", flipping whole images" : "";
  return `p: ${single}${groups}${images}`;
}

/** The intervals' confidence level as the tables print it: "95%". */
export function levelText(settings: ComparisonResult["settings"]): string {
  return `${Math.round(100 * settings.confidence)}%`;
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

export function legend(result: ComparisonResult): string[] {
  const s = result.settings;
  const metric = result.metric ?? VQA_COMPARED_METRIC;
  const level = levelText(s);
  const resampling = s.clustered ? ", resampling whole images" : "";
  return [
    `${capitalised(metric.name)}: ${metric.legend}, ${level} bootstrap CI over ${metric.unit}s${resampling} (${s.resamples} resamples, seed ${s.seed}); failed VLM calls are excluded and counted.`,
    `Δ: method − baseline (${result.baseline}) in points on the questions both scored, ${level} paired bootstrap CI.`,
    `${testDescription(result)}. Holm's correction over all comparisons of each table but the simulator's references (${REFERENCE_RETRIEVERS.join(", ")}: ref, unadjusted); * = significant after Holm (p_Holm ≤ ${s.alpha}), ns = not.`,
    `MDE: smallest difference these questions detect with power ${s.power} at α = ${s.alpha} (two-sided), from the observed per-question differences.`,
  ];
}

function comparisonText(result: ComparisonResult, markdown: boolean): string {
  const render = (columns: Column[], rows: string[][]) =>
    markdown ? renderMarkdownTable(columns, rows) : renderTable(columns, rows);
  const heading = (text: string) => (markdown ? `### ${text}` : `== ${text} ==`);
  const labelOf = new Map(result.rows.map((r) => [r.id, r.isBaseline ? `${r.label} (baseline)` : r.label]));
  const methodLabel = new Map(result.rows.flatMap((r) => r.members.map((m) => [m.id, m.label] as const)));
  const parts: string[] = [...legend(result).map((line) => (markdown ? `${line}  ` : line))];

  for (const table of result.tables) {
    parts.push("", heading(`${table.label} questions (${table.questions}, question-id order)`), "");
    parts.push(
      render(
        [{ header: "method" }, ...result.shots.map((s): Column => ({ header: `shot ${s}`, align: "right" }))],
        table.rows.map((r) => [
          labelOf.get(r.row) as string,
          ...r.cells.map((c) => (c === null ? "" : accuracyText(c))),
        ]),
      ),
    );
    const lines = table.rows.flatMap((r) =>
      r.cells.flatMap((c) => (c?.comparison ? [[labelOf.get(r.row) as string, c, c.comparison] as const] : [])),
    );
    if (lines.length > 0) {
      const groups = result.rows.some((row) => row.isGroup);
      const columns: DetailColumn[] = [
        [{ header: "method" }, (label) => label],
        [{ header: "shot", align: "right" }, (_, cell) => String(cell.shot)],
        [{ header: "pairs", align: "right" }, (_, __, c) => String(c.pairs)],
        [{ header: "excl", align: "right" }, (_, __, c) => String(c.excluded)],
        [{ header: "Δ", align: "right" }, (_, __, c) => formatNumber(c.difference, 2, true)],
        [{ header: "95% CI", align: "right" }, (_, __, c) => formatInterval([c.ci.lower, c.ci.upper], 2, true)],
        ...(groups ? [seedColumn] : []),
        [
          { header: "McNemar", align: "right" },
          (_, __, c) => (c.mcnemar === null ? "(flip)" : `${c.mcnemar.onlyRow}/${c.mcnemar.onlyBaseline}`),
        ],
        [{ header: "p", align: "right" }, (_, __, c) => formatPValue(c.pValue)],
        [{ header: "p Holm", align: "right" }, (_, __, c) => holmText(c)],
        [{ header: "sig" }, (_, __, c) => significanceMark(c)],
        [{ header: "MDE", align: "right" }, (_, __, c) => (c.mde === null ? "n/a" : formatNumber(c.mde, 2))],
      ];
      parts.push(
        "",
        render(
          columns.map(([column]) => column),
          lines.map(([label, cell, c]) => columns.map(([, value]) => value(label, cell, c))),
        ),
      );
      parts.push(
        "",
        `${table.comparisons} comparisons in the Holm family; ` +
          (table.mde === null
            ? "too few pairs for an MDE."
            : `MDE ${formatNumber(table.mde.lower, 2)}–${formatNumber(table.mde.upper, 2)} points: smaller differences are not something ${table.questions} questions can show.`),
      );
    }
  }

  if (result.overlap.length > 0) {
    const shots = [...new Set(result.overlap.map((o) => o.shot))].sort((a, b) => a - b);
    const pairs = [...new Set(result.overlap.map((o) => `${o.a}\u0000${o.b}`))];
    parts.push("", heading("selection overlap: identical demonstrations (same ids, same order)"), "");
    parts.push(
      render(
        [{ header: "methods" }, ...shots.map((s): Column => ({ header: `shot ${s}`, align: "right" }))],
        pairs.map((pair) => {
          const [a, b] = pair.split("\u0000");
          return [
            `${methodLabel.get(a)} vs ${methodLabel.get(b)}`,
            ...shots.map((shot) => {
              const o = result.overlap.find((x) => x.shot === shot && x.a === a && x.b === b);
              return o === undefined || o.share === null
                ? ""
                : `${formatNumber(100 * o.share, 1)}% (${o.identical}/${o.n})`;
            }),
          ];
        }),
      ),
    );
  }
  if (result.notes.length > 0) parts.push("", ...result.notes.map((n) => `note: ${n}`));
  return parts.join("\n");
}

/** A column of the comparison lines: its header and how to print a comparison into it. */
type DetailColumn = [Column, (label: string, cell: CellResult, c: CellComparison) => string];

const seedColumn: DetailColumn = [
  { header: "seed sd", align: "right" },
  (_, __, c) => (c.seeds?.sd == null ? "" : formatNumber(c.seeds.sd, 2)),
];

const CSV_COLUMNS = [
  "subset",
  "questions",
  "row",
  "label",
  "seeds",
  "shot",
  "n",
  "failures",
  "accuracy",
  "accuracy_lower",
  "accuracy_upper",
  "accuracy_seed_sd",
  "baseline",
  "pairs",
  "excluded",
  "difference",
  "difference_lower",
  "difference_upper",
  "difference_seed_sd",
  "test",
  "only_row",
  "only_baseline",
  "p",
  "p_holm",
  "significant",
  "reference",
  "mde",
] as const;

function comparisonCsv(result: ComparisonResult): string {
  const info = new Map(result.rows.map((r) => [r.id, r]));
  const lines = [CSV_COLUMNS.join(",")];
  for (const table of result.tables)
    for (const r of table.rows)
      for (const cell of r.cells) {
        if (cell === null) continue;
        const row = info.get(r.row)!;
        const c = cell.comparison;
        const values: (string | number | boolean | null | undefined)[] = [
          table.label,
          table.questions,
          row.id,
          row.label,
          row.members.length,
          cell.shot,
          cell.n,
          cell.failures,
          cell.accuracy,
          cell.ci?.lower,
          cell.ci?.upper,
          cell.seeds?.sd,
          c?.baseline,
          c?.pairs,
          c?.excluded,
          c?.difference,
          c?.ci.lower,
          c?.ci.upper,
          c?.seeds?.sd,
          c?.test,
          c?.mcnemar?.onlyRow,
          c?.mcnemar?.onlyBaseline,
          c?.pValue,
          c?.pHolm,
          c?.significant,
          c?.reference,
          c?.mde,
        ];
        lines.push(values.map(csvField).join(","));
      }
  return lines.join("\n");
}

/** RFC 4180 field: numbers to 6 decimals (no float noise), text quoted when it needs to be. */
function csvField(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(Number(value.toFixed(6))) : "";
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
