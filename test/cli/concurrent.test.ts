/**
 * Two `lever` processes on one workspace at the same time, as users start them from two shells:
 * real child processes of the built CLI (dist/), since one process cannot reproduce SQLite lock
 * contention between connections of different processes.
 */
import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { type SimWorkspace, simWorkspace } from "../eval/sim-workspace.js";

const CLI = process.env.LEVER_CLI ?? resolve("dist/src/cli/main.js");

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function lever(args: string[]): Promise<Exit> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

let sim: SimWorkspace;
beforeAll(() => {
  sim = simWorkspace({ trainItems: 300, valItems: 60, concepts: 6 });
  sim.ws.close();
});

/** An evaluation with many small batches: every batch is a write transaction on the shared database. */
const evalArgs = (seed: number, retrievers: string) => [
  ...["--workspace", sim.ws.dir, "eval", "--world", sim.worldFile, "--retriever", retrievers, "--seed", String(seed)],
  ..."--dataset val --index train --queries all --shots 1,2,3,4 --resamples 100 --json".split(" "),
  ..."--batch-size 1 --concurrency 1".split(" "),
];

// Child processes compete with the other test files for the CPUs: allow for a loaded machine.
describe("two processes on one workspace", { timeout: 240_000 }, () => {
  it("two different `lever eval` runs at the same time both complete, each with all its predictions", async () => {
    const [a, b] = await Promise.all([
      lever(evalArgs(1, "zero,random,topk-image")),
      lever(evalArgs(2, "random,topk-text,topk-joint")),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const ra = JSON.parse(a.stdout);
    const rb = JSON.parse(b.stdout);
    expect(ra.runId).not.toBe(rb.runId);
    expect(ra.stats).toMatchObject({ planned: 60 * 9, evaluated: 60 * 9, failures: 0 });
    expect(rb.stats).toMatchObject({ planned: 60 * 12, evaluated: 60 * 12, failures: 0 });
    const ws = Workspace.open(sim.ws.dir, { readOnly: true });
    try {
      expect(ws.getPredictions(ra.runId)).toHaveLength(60 * 9);
      expect(ws.getPredictions(rb.runId)).toHaveLength(60 * 12);
      expect(ws.getRun(ra.runId)).toMatchObject({ status: "done", holder: null });
      expect(ws.getRun(rb.runId)).toMatchObject({ status: "done", holder: null });
    } finally {
      ws.close();
    }
  });

  it("a run another live process evaluates is refused naming it; a run whose process died is taken over", async () => {
    const args = evalArgs(1, "zero,random,topk-image");
    const ws = Workspace.open(sim.ws.dir, { create: false });
    // The seed-1 run of the first test (the two runs were created in either order).
    const runId = ws.listRuns({ kind: "eval" }).find((run) => run.seed === 1)!.id;
    ws.db.prepare("UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?").run(runId); // as if mid-run
    // A live process that holds the lease until it is killed (long enough for a slow, loaded machine).
    const sleeper = spawn("sleep", ["3600"]);
    const plant = ws.db.prepare(
      "INSERT OR REPLACE INTO leases (run, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, '2026-02-02T00:00:00.000Z', ?)",
    );
    plant.run(runId, sleeper.pid, hostname(), new Date().toISOString());
    try {
      const refused = await lever(args);
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toMatch(
        new RegExp(
          `^error: record "${runId}": run ${runId} is in use by process ${sleeper.pid}@${hostname()} \\(since 2026-02-02`,
          "m",
        ),
      );
    } finally {
      sleeper.kill();
    }
    await new Promise((done) => sleeper.once("exit", done));
    expect(ws.getRun(runId)?.status).toBe("interrupted");
    ws.close();
    const taken = await lever(args);
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toContain(`note: took run ${runId} over from process ${sleeper.pid}@${hostname()}`);
    expect(JSON.parse(taken.stdout)).toMatchObject({ runId, resumed: true, stats: { evaluated: 0 } });
    const after = Workspace.open(sim.ws.dir, { readOnly: true });
    expect(after.getRun(runId)).toMatchObject({ status: "done", holder: null });
    after.close();
  });
});
