/**
 * Run leases: at most one process works on a run at a time. The holder is recorded as
 * (pid, host, started, heartbeat) in the `leases` table; it refreshes the heartbeat while it works
 * (on a timer that does not keep the process alive, and whenever the work calls `beat()`) and
 * deletes the row when it stops. Another process asking for the run is refused with the holder's
 * name, unless the holder is gone: on the same host its pid no longer exists, on another host its
 * heartbeat is older than `STALE_AFTER_MS`. Such a stale lease is taken over, and until then its
 * run reads as "interrupted" (see runs.ts).
 */
import { hostname } from "node:os";
import type { Database } from "better-sqlite3";
import { LeverError } from "../util/errors.js";

/** How often a holder refreshes its heartbeat. */
export const HEARTBEAT_MS = 10_000;
/**
 * A holder on another host whose heartbeat is older than this is taken for dead (its pid cannot be
 * checked from here). Generous, because a synchronous step (one training step) delays the timer.
 */
export const STALE_AFTER_MS = 10 * 60_000;

export interface LeaseHolder {
  pid: number;
  host: string;
  startedAt: string;
  heartbeatAt: string;
}

export interface RunLease {
  readonly runId: string;
  /** The dead holder this lease was taken over from, if any. */
  readonly tookOver: LeaseHolder | null;
  /** Refreshes the heartbeat (rate-limited, cheap to call per step); throws if the lease was lost. */
  beat(): void;
  /** Gives the run up (idempotent). */
  release(): void;
}

interface LeaseRow {
  pid: number;
  host: string;
  started_at: string;
  heartbeat_at: string;
}

export function toHolder(row: LeaseRow): LeaseHolder {
  return { pid: row.pid, host: row.host, startedAt: row.started_at, heartbeatAt: row.heartbeat_at };
}

/** Whether process `pid` exists on this machine (a process we may not signal still exists). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether the holder is gone: a dead pid on this host, or a heartbeat too old from another host. */
export function isStale(holder: LeaseHolder, now = Date.now()): boolean {
  if (holder.host === hostname()) return !pidAlive(holder.pid);
  return now - Date.parse(holder.heartbeatAt) > STALE_AFTER_MS;
}

export function describeHolder(holder: LeaseHolder): string {
  return `process ${holder.pid}@${holder.host} (since ${holder.startedAt}, last heartbeat ${holder.heartbeatAt})`;
}

export function getLease(db: Database, runId: string): LeaseHolder | undefined {
  const row = db.prepare("SELECT pid, host, started_at, heartbeat_at FROM leases WHERE run = ?").get(runId) as
    | LeaseRow
    | undefined;
  return row === undefined ? undefined : toHolder(row);
}

/**
 * Takes the lease of `runId` for this process, or throws a LeverError naming the live holder.
 * One short write transaction; the heartbeat timer is unref'd so it never keeps the process alive.
 */
export function acquireLease(db: Database, runId: string): RunLease {
  const me = { pid: process.pid, host: hostname() };
  const tookOver = db
    .transaction((): LeaseHolder | null => {
      if (db.prepare("SELECT 1 FROM runs WHERE id = ?").get(runId) === undefined)
        throw new LeverError(`no run "${runId}" in this workspace`, { field: "run" });
      const current = getLease(db, runId);
      if (current !== undefined && !isStale(current))
        throw new LeverError(
          `run ${runId} is in use by ${describeHolder(current)}; wait for it to finish or stop that process`,
          { record: runId },
        );
      const now = new Date().toISOString();
      db.prepare("INSERT OR REPLACE INTO leases (run, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)").run(
        runId,
        me.pid,
        me.host,
        now,
        now,
      );
      return current ?? null;
    })
    .immediate();

  let released = false;
  let lost = false;
  let last = Date.now();
  const refresh = (): void => {
    if (released || lost || !db.open) return;
    const changes = db
      .prepare("UPDATE leases SET heartbeat_at = ? WHERE run = ? AND pid = ? AND host = ?")
      .run(new Date().toISOString(), runId, me.pid, me.host).changes;
    last = Date.now();
    if (changes === 0) lost = true;
  };
  const timer = setInterval(() => {
    try {
      refresh();
    } catch {
      // A busy database or a closed handle: the next beat tries again; nothing to crash over.
    }
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    runId,
    tookOver,
    beat() {
      if (Date.now() - last >= HEARTBEAT_MS / 2) refresh();
      if (lost)
        throw new LeverError(`another process took run ${runId} over (this one was taken for dead)`, {
          record: runId,
        });
    },
    release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      if (db.open) db.prepare("DELETE FROM leases WHERE run = ? AND pid = ? AND host = ?").run(runId, me.pid, me.host);
    },
  };
}
