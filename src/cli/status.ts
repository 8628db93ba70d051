/**
 * `lever status`: the runs of the workspace, oldest first, as a table with a header — run id, name,
 * kind, status, start time (UTC), duration (until it finished; so far for a run still going; until its
 * dead process's last heartbeat for an interrupted run, unknown "?" when none is recorded), then
 * its stages with progress — or as JSON (`--json`). Columns are as wide as their longest value, so a
 * long experiment name does not shift the columns after it.
 */
import type { Command } from "commander";
import type { RunRecord, StageRecord } from "../store/types.js";
import { formatDuration } from "../util/progress.js";
import { printJson, table, withWorkspace } from "./common.js";

export interface StatusRow {
  id: string;
  kind: string;
  name: string | null;
  status: string;
  createdAt: string;
  finishedAt: string | null;
  /** Seconds from start to finish, to now while the run goes on, to the last heartbeat of an interrupted one (else null). */
  durationSeconds: number | null;
  error: string | null;
  stages: { name: string; status: string; progress: string; durationSeconds: number | null; error: string | null }[];
}

/** Seconds from `from` to `to` (null: unknown). */
const seconds = (from: string, to: string | null) => {
  const start = Date.parse(from);
  const end = to === null ? Number.NaN : Date.parse(to);
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, (end - start) / 1000) : null;
};

/** One run with its stages, as `lever status` shows it. */
export function statusRow(run: RunRecord, stages: readonly StageRecord[], now: Date): StatusRow {
  // Where an unfinished run's (or stage's) time ends: now while it runs; an interrupted run's dead
  // process's last heartbeat (its time does not grow after it died), unknown without one.
  const stopped = run.status === "interrupted" ? (run.holder?.heartbeatAt ?? null) : now.toISOString();
  const until = (finishedAt: string | null) => finishedAt ?? stopped;
  return {
    id: run.id,
    kind: run.kind,
    name: run.name,
    status: run.status,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt,
    durationSeconds: seconds(run.createdAt, until(run.finishedAt)),
    error: run.error,
    stages: stages.map((s) => ({
      name: s.name,
      status: s.status,
      progress: s.progressTotal > 0 ? `${s.progressDone}/${s.progressTotal}` : "",
      durationSeconds: seconds(s.startedAt, until(s.finishedAt)),
      error: s.error,
    })),
  };
}

/** "2026-11-28 03:22" (UTC) of an ISO time. */
const minute = (iso: string) => iso.replace("T", " ").slice(0, 16);

/** The table: a header line, then one line per run; every column padded to its widest value. */
export function formatStatus(rows: readonly StatusRow[]): string {
  if (rows.length === 0) return "no runs yet\n";
  const header = ["RUN", "NAME", "KIND", "STATUS", "STARTED (UTC)", "TIME", "STAGES"];
  const lines = rows.map((r) => [
    r.id,
    r.name ?? "-",
    r.kind,
    r.status,
    minute(r.createdAt),
    r.durationSeconds === null ? "?" : formatDuration(r.durationSeconds),
    [
      r.stages.map((s) => `${s.name} ${s.status}${s.progress ? ` ${s.progress}` : ""}`).join(", "),
      r.error ? `error: ${r.error}` : "",
    ]
      .filter((t) => t.length > 0)
      .join("  "),
  ]);
  return `${table([header, ...lines])}\n`;
}

/** Registers `lever status`. */
export function register(program: Command): void {
  program
    .command("status")
    .description(
      "runs of the workspace with a header: id, name, kind, status (interrupted when the process died), start (UTC), duration, stages with progress, failures",
    )
    .option("--json", "print the runs as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      await withWorkspace(
        command,
        (ws) => {
          const now = new Date();
          const rows = ws.listRuns().map((run) => statusRow(run, ws.listStages(run.id), now));
          if (flags.json) printJson(rows);
          else process.stdout.write(formatStatus(rows));
        },
        { readOnly: true },
      );
    });
}
