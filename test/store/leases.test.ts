import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { HEARTBEAT_MS, STALE_AFTER_MS } from "../../src/store/leases.js";
import { Workspace } from "../../src/store/workspace.js";

let dir: string;
let sleeper: ChildProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-lease-"));
});
afterEach(() => {
  vi.useRealTimers();
  if (sleeper?.pid !== undefined && sleeper.exitCode === null) process.kill(sleeper.pid);
  sleeper = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited (what a killed holder leaves behind). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", ""]);
  return child.pid!;
}

/** Writes a lease row as another process would have. */
function plantLease(ws: Workspace, runId: string, holder: { pid: number; host?: string; heartbeatAt?: string }): void {
  const at = holder.heartbeatAt ?? new Date().toISOString();
  ws.db
    .prepare("INSERT OR REPLACE INTO leases (run, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)")
    .run(runId, holder.pid, holder.host ?? hostname(), "2026-01-01T00:00:00.000Z", at);
}

describe("run leases", () => {
  it("refuses a run held by another live process, naming pid@host and since when", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "eval", config: {}, seed: 1 });
    sleeper = spawn("sleep", ["30"]);
    plantLease(ws, run, { pid: sleeper.pid! });
    expect(() => ws.holdRun(run)).toThrow(
      new RegExp(`run ${run} is in use by process ${sleeper.pid}@${hostname()} \\(since 2026-01-01T00:00:00\\.000Z`),
    );
    expect(ws.getRun(run)).toMatchObject({ status: "running", holder: { pid: sleeper.pid, host: hostname() } });
    ws.close();
  });

  it("refuses a second workspace connection of this process while the first holds the run; re-holding is a no-op", () => {
    const a = Workspace.open(dir);
    const run = a.createRun({ kind: "eval", config: {}, seed: 1 });
    const lease = a.holdRun(run);
    expect(lease.note).toBeNull();
    expect(a.holdRun(run).note).toBeNull(); // same workspace: the same lease
    const b = Workspace.open(dir);
    expect(() => b.holdRun(run)).toThrow(`process ${process.pid}@${hostname()}`);
    a.close(); // closing releases what it holds
    expect(b.getRun(run)?.holder).toBeNull();
    b.holdRun(run).release();
    b.close();
  });

  it("shows a run whose holder died as interrupted and takes it over with a note", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "sft", config: {}, seed: 1 });
    const pid = deadPid();
    plantLease(ws, run, { pid });
    expect(ws.getRun(run)?.status).toBe("interrupted");
    expect(ws.listRuns({ status: "interrupted" }).map((r) => r.id)).toEqual([run]);
    expect(ws.listRuns({ status: "running" })).toEqual([]);
    const lease = ws.holdRun(run);
    expect(lease.note).toMatch(new RegExp(`took run ${run} over from process ${pid}@${hostname()}`));
    expect(ws.getRun(run)).toMatchObject({ status: "running", holder: { pid: process.pid } });
    lease.release();
    expect(ws.getRun(run)).toMatchObject({ status: "interrupted", holder: null });
    ws.close();
  });

  it("judges a holder on another host by its heartbeat: recent is live, older than the limit is stale", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "sft", config: {}, seed: 1 });
    plantLease(ws, run, { pid: 1, host: "elsewhere", heartbeatAt: new Date().toISOString() });
    expect(() => ws.holdRun(run)).toThrow("process 1@elsewhere");
    const old = new Date(Date.now() - STALE_AFTER_MS - 60_000).toISOString();
    plantLease(ws, run, { pid: 1, host: "elsewhere", heartbeatAt: old });
    expect(ws.getRun(run)?.status).toBe("interrupted");
    expect(ws.holdRun(run).note).toMatch(/from process 1@elsewhere/);
    ws.close();
  });

  it("heartbeats on a timer, and beat() reports a lease another process took over", () => {
    vi.useFakeTimers({ toFake: ["Date", "setInterval", "clearInterval"], now: Date.parse("2026-03-01T00:00:00Z") });
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "sft", config: {}, seed: 1 });
    const lease = ws.holdRun(run);
    vi.advanceTimersByTime(HEARTBEAT_MS);
    expect(ws.getRun(run)?.holder?.heartbeatAt).toBe(
      new Date(Date.parse("2026-03-01T00:00:00Z") + HEARTBEAT_MS).toISOString(),
    );
    plantLease(ws, run, { pid: 1, host: "elsewhere" }); // taken over meanwhile
    vi.advanceTimersByTime(HEARTBEAT_MS);
    expect(() => lease.beat()).toThrow(`another process took run ${run} over`);
    lease.release(); // does not delete the new holder's row
    expect(ws.getRun(run)?.holder).toMatchObject({ pid: 1, host: "elsewhere" });
    ws.close();
  });

  it("does not keep a process alive, and a process that exits holding a run leaves it interrupted", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "sft", config: {}, seed: 1 });
    ws.close();
    const module = resolve("dist/src/store/workspace.js");
    const script = `import { Workspace } from ${JSON.stringify(module)};
      Workspace.open(${JSON.stringify(dir)}).holdRun(${JSON.stringify(run)}); // never released`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { timeout: 20_000 });
    expect(child.status, String(child.stderr)).toBe(0); // exited on its own: the heartbeat timer is unref'd
    const again = Workspace.open(dir);
    expect(again.getRun(run)).toMatchObject({ status: "interrupted", holder: { pid: child.pid } });
    again.close();
  });
});
