/**
 * An evaluation summary (the comparison engine's one-table result, src/eval/summary.ts) as a flat list
 * of its cells, each with its row's retriever ("RUN/RETRIEVER" → "RETRIEVER"), in row then shot order.
 */
import type { CellResult, ComparisonResult } from "../../src/metrics/compare.js";

export type SummaryCell = CellResult & { retriever: string };

export function summaryCells(summary: ComparisonResult | null): SummaryCell[] {
  if (summary === null) throw new Error("the evaluation has no summary");
  if (summary.tables.length !== 1) throw new Error(`an evaluation summary has one table, got ${summary.tables.length}`);
  return summary.tables[0].rows.flatMap((r) =>
    r.cells.flatMap((c) => (c === null ? [] : [{ ...c, retriever: r.row.slice(r.row.indexOf("/") + 1) }])),
  );
}
