/**
 * Plain-text table rendering. Pure functions: they take already-computed numbers and return strings,
 * so every layout decision is testable on hand-made inputs.
 */
export type Align = "left" | "right";

export interface Column {
  header: string;
  align?: Align;
}

/**
 * Renders rows under headers with every column padded to its widest cell, a dashed rule under the
 * header, and two spaces between columns. Trailing spaces are trimmed from every line.
 */
export function renderTable(columns: Column[], rows: string[][]): string {
  for (const [i, row] of rows.entries()) {
    if (row.length !== columns.length)
      throw new RangeError(`renderTable: row ${i} has ${row.length} cells, expected ${columns.length}`);
  }
  const widths = columns.map((column, c) => Math.max(width(column.header), ...rows.map((row) => width(row[c]))));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => pad(cell, widths[c], columns[c].align ?? "left"))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(columns.map((c) => c.header)), rule, ...rows.map(line)].join("\n");
}

/**
 * The same table as GitHub-flavoured Markdown: a header row, an alignment row ("---:" for right
 * aligned columns) and one row per line. "|" inside a cell is escaped, newlines become spaces.
 */
export function renderMarkdownTable(columns: Column[], rows: string[][]): string {
  for (const [i, row] of rows.entries()) {
    if (row.length !== columns.length)
      throw new RangeError(`renderMarkdownTable: row ${i} has ${row.length} cells, expected ${columns.length}`);
  }
  const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
  const line = (cells: string[]) => `| ${cells.map(cell).join(" | ")} |`;
  const rule = `|${columns.map((c) => (c.align === "right" ? " ---: " : " --- ")).join("|")}|`;
  return [line(columns.map((c) => c.header)), rule, ...rows.map(line)].join("\n");
}

/** Display width in code points (the table only holds ASCII and a few symbols such as ±, −, Δ). */
function width(text: string): number {
  return [...text].length;
}

function pad(text: string, to: number, align: Align): string {
  const fill = " ".repeat(Math.max(0, to - width(text)));
  return align === "right" ? fill + text : text + fill;
}

/** Fixed-point with a real minus sign for negatives and "+" for positives when `signed`. */
export function formatNumber(value: number, digits: number, signed = false): string {
  if (!Number.isFinite(value)) return "n/a";
  // Round first so that -0.004 shows as "0.00", not "-0.00".
  const rounded = Number(value.toFixed(digits));
  const body = Math.abs(rounded).toFixed(digits);
  if (rounded < 0) return `-${body}`;
  return signed && rounded > 0 ? `+${body}` : body;
}

/** "[lo, hi]" with the given number of digits. */
export function formatInterval(interval: readonly [number, number], digits: number, signed = false): string {
  return `[${formatNumber(interval[0], digits, signed)}, ${formatNumber(interval[1], digits, signed)}]`;
}

/** p-values: 4 decimals, "<0.0001" below that. */
export function formatPValue(p: number): string {
  if (!Number.isFinite(p)) return "n/a";
  return p < 0.0001 ? "<0.0001" : p.toFixed(4);
}
