import type { Command } from "commander";
import { check } from "../util/errors.js";
import { type CacheSummaryRow, cacheSummary, pruneCache } from "../vlm/cache.js";
import { group, printJson, table, withWorkspace } from "./common.js";

/** Registers `cache stats` and `cache prune` (the workspace's VLM response cache). */
export function register(program: Command): void {
  const cache = group(program, "cache", "the VLM response cache in the workspace");

  cache
    .command("stats")
    .description("entries and bytes per model and kind")
    .option("--json", "print as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const rows = await withWorkspace(command, (ws) => cacheSummary(ws.db), { readOnly: true });
      if (flags.json) printJson(rows);
      else process.stdout.write(formatSummary(rows));
    });

  cache
    .command("prune")
    .description("delete cached responses of one model and/or older than some days")
    .option("--model <id>", "only entries of this model id (as shown by `lever cache stats`)")
    .option("--older-than <days>", "only entries created more than this many days ago")
    .option("--all", "delete every entry (needed when no other filter is given)")
    .option("--json", "print as JSON")
    .action(async (flags: { model?: string; olderThan?: string; all?: boolean; json?: boolean }, command: Command) => {
      const olderThanDays = flags.olderThan === undefined ? undefined : Number(flags.olderThan);
      if (olderThanDays !== undefined)
        check(
          Number.isFinite(olderThanDays) && olderThanDays >= 0,
          `expected a number of days, got "${flags.olderThan}"`,
          {
            field: "--older-than",
          },
        );
      const deleted = await withWorkspace(command, (ws) =>
        pruneCache(ws.db, { model: flags.model, olderThanDays, all: flags.all }),
      );
      if (flags.json) printJson({ deleted });
      else process.stdout.write(`deleted ${deleted} cached response${deleted === 1 ? "" : "s"}\n`);
    });
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

function formatSummary(rows: CacheSummaryRow[]): string {
  if (rows.length === 0) return "the VLM cache is empty\n";
  const cells = [
    ["model", "kind", "entries", "bytes", "oldest", "newest"],
    ...rows.map((r) => [r.model, r.kind, String(r.entries), formatBytes(r.bytes), r.oldest, r.newest]),
  ];
  const total = rows.reduce((sum, r) => ({ entries: sum.entries + r.entries, bytes: sum.bytes + r.bytes }), {
    entries: 0,
    bytes: 0,
  });
  return `${table(cells)}\ntotal: ${total.entries} entries, ${formatBytes(total.bytes)}\n`;
}
