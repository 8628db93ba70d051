import type { Command } from "commander";
import { Workspace } from "../store/workspace.js";
import { InterruptedError } from "../util/errors.js";
import { sqliteError } from "../util/files.js";

/** Finds or creates the sub-command group `name` (e.g. `lever data …`), so several files can add to it. */
export function group(program: Command, name: string, description: string): Command {
  const existing = program.commands.find((c) => c.name() === name);
  return existing ?? program.command(name).description(description);
}

/** The workspace directory: --workspace, then $LEVER_WORKSPACE, then ./lever-workspace. */
export function workspaceDir(command: Command): string {
  const root = command.optsWithGlobals() as { workspace?: string };
  return root.workspace ?? process.env.LEVER_WORKSPACE ?? "lever-workspace";
}

/**
 * Opens the command's workspace (it must exist), runs `fn` and closes it, also on failure. Read
 * commands pass `readOnly`, so they work on a workspace that cannot be written. A SQLite error
 * (locked, read-only, disk full) becomes one line naming the database file. A failure (not Ctrl-C)
 * marks the runs the command still holds failed (`Workspace.failHeldRuns`).
 */
export async function withWorkspace<T>(
  command: Command,
  fn: (ws: Workspace) => T | Promise<T>,
  options: { readOnly?: boolean; create?: boolean } = {},
): Promise<T> {
  const ws = Workspace.open(workspaceDir(command), { create: options.create ?? false, readOnly: options.readOnly });
  try {
    return await fn(ws);
  } catch (error) {
    if (!(error instanceof InterruptedError)) failHeldRuns(ws, error);
    throw sqliteError(error, ws.dbFile);
  } finally {
    ws.close();
  }
}

/** Marks the runs a failed command still holds failed; a workspace that cannot record it leaves the command's own error to report. */
export function failHeldRuns(ws: Workspace, error: unknown): void {
  try {
    ws.failHeldRuns(error instanceof Error ? error.message.split("\n")[0] : String(error));
  } catch {
    // the command's error is the one to report
  }
}

/** Parses "1,2,3" → [1, 2, 3]; rejects anything that is not a list of positive integers. */
export function parseIntList(value: string): number[] {
  const parts = value.split(",").map((s) => s.trim());
  const out = parts.map((s) => Number(s));
  if (out.some((n) => !Number.isInteger(n) || n < 0))
    throw new Error(`expected a comma-separated list of integers, got "${value}"`);
  return out;
}

/**
 * A text table: rows of cells (the first is the header), each column padded to its widest cell, two
 * spaces between columns, no trailing spaces; lines joined by "\n" (no final newline).
 */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c]))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
