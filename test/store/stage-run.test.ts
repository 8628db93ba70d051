import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStageRun, type StageRunSpec } from "../../src/store/stage-run.js";
import { Workspace } from "../../src/store/workspace.js";

let dir: string;
let sleeper: ChildProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-stage-run-"));
});
afterEach(() => {
  if (sleeper?.pid !== undefined && sleeper.exitCode === null) process.kill(sleeper.pid);
  sleeper = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A training-like spec (resumes by epochs) whose notes land in `notes`. */
function spec(notes: string[], over: Partial<StageRunSpec> = {}): StageRunSpec {
  return {
    kind: "sft",
    stage: "sft",
    config: { lr: 1 },
    seed: 1,
    work: "epochs",
    note: (text) => notes.push(text),
    ...over,
  };
}

/** Leaves the run as a process that held it and died (or still lives, with `pid` of a live one). */
function plantHolder(ws: Workspace, runId: string, pid: number): void {
  ws.db
    .prepare("INSERT OR REPLACE INTO leases (run, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)")
    .run(runId, pid, hostname(), "2026-01-01T00:00:00.000Z", new Date().toISOString());
}

const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid as number;
const done = async (ws: Workspace, s: StageRunSpec) =>
  openStageRun(ws, s).produce(async () => ({ artifacts: [], value: 0 }));

describe("openStageRun: the run of a command", () => {
  it("creates and holds a new run (named when a name is given); the newest run of the identity is the run", () => {
    const ws = Workspace.open(dir);
    const notes: string[] = [];
    const run = openStageRun(ws, spec(notes, { name: "mine" }));
    expect(run).toMatchObject({ runId: "sft-0001", opened: "new" });
    expect(ws.getRun(run.runId)).toMatchObject({ name: "mine", seed: 1, holder: { pid: process.pid } });
    expect(notes).toEqual([]);
    run.release();
    const older = ws.createRun({ kind: "sft", config: { lr: 2 }, seed: 1 });
    const newer = ws.createRun({ kind: "sft", config: { lr: 2 }, seed: 1 });
    expect(openStageRun(ws, spec(notes, { config: { lr: 2 } })).runId).toBe(newer);
    expect(older).not.toBe(newer);
    // Without a name, a named run with the same settings is the run too; with another name, a new run is made.
    expect(openStageRun(ws, spec(notes)).runId).toBe(run.runId);
    expect(openStageRun(ws, spec(notes, { name: "other" })).opened).toBe("new");
    ws.close();
  });

  it("refuses a name whose run has other settings, naming what differs and the option", () => {
    const ws = Workspace.open(dir);
    openStageRun(ws, spec([], { name: "mine" })).release();
    expect(() => openStageRun(ws, spec([], { name: "mine", config: { lr: 3 } }))).toThrow(
      /run "mine" \(sft-0001\) was made with other settings \(lr\); choose another name/,
    );
    expect(() =>
      openStageRun(ws, spec([], { kind: "eval", name: "e", nameFlag: "--run", config: { a: 1 } })).release(),
    ).not.toThrow();
    expect(() => openStageRun(ws, spec([], { kind: "eval", name: "e", nameFlag: "--run", config: { a: 2 } }))).toThrow(
      /^field "--run": run "e" \(eval-0002\) was made with other settings \(a\)/,
    );
    expect(ws.listRuns()).toHaveLength(2);
    ws.close();
  });

  it("resumes a failed run (not a new one), says why, and makes it running again when its stage begins", async () => {
    const ws = Workspace.open(dir);
    await expect(
      openStageRun(ws, spec([])).produce(async () => {
        throw new Error("out of memory");
      }),
    ).rejects.toThrow("out of memory");
    expect(ws.getStage("sft-0001", "sft")).toMatchObject({ status: "failed", error: "out of memory" });
    expect(ws.getRun("sft-0001")).toMatchObject({ status: "failed", error: "out of memory", holder: null });
    const notes: string[] = [];
    const run = openStageRun(ws, spec(notes));
    expect(run).toMatchObject({ runId: "sft-0001", opened: "resumed" });
    expect(notes).toEqual([
      "run sft-0001 with these settings and inputs failed (out of memory); resuming it (the same as: lever train resume sft-0001)",
    ]);
    run.begin();
    expect(ws.getRun("sft-0001")).toMatchObject({ status: "running", error: null, finishedAt: null });
    expect(await run.produce(async () => ({ artifacts: [], value: 42 }))).toBe(42);
    expect(ws.getRun("sft-0001")).toMatchObject({ status: "done", holder: null });
    expect(ws.listRuns()).toHaveLength(1);
    ws.close();
  });

  it("resumes an interrupted run, taking it over from its dead holder with a note", () => {
    const ws = Workspace.open(dir);
    const first = openStageRun(ws, spec([]));
    first.begin();
    first.release();
    const pid = deadPid();
    plantHolder(ws, first.runId, pid);
    expect(ws.getRun(first.runId)?.status).toBe("interrupted");
    const notes: string[] = [];
    const run = openStageRun(ws, spec(notes));
    expect(run).toMatchObject({ runId: first.runId, opened: "resumed" });
    expect(notes).toHaveLength(2);
    expect(notes[0]).toMatch(new RegExp(`^took run ${first.runId} over from process ${pid}@${hostname()}`));
    expect(notes[1]).toBe(
      `run ${first.runId} with these settings and inputs was interrupted (its process stopped); resuming it (the same as: lever train resume ${first.runId})`,
    );
    expect(ws.getRun(first.runId)?.holder?.pid).toBe(process.pid);
    ws.close();
  });

  it("refuses a run another live process holds, naming pid@host, and creates nothing", () => {
    const ws = Workspace.open(dir);
    const first = openStageRun(ws, spec([]));
    first.release();
    sleeper = spawn("sleep", ["30"]);
    plantHolder(ws, first.runId, sleeper.pid as number);
    const notes: string[] = [];
    expect(() => openStageRun(ws, spec(notes))).toThrow(
      new RegExp(`run ${first.runId} is in use by process ${sleeper.pid}@${hostname()} \\(since 2026-01-01`),
    );
    expect(notes).toEqual([]);
    expect(ws.listRuns()).toHaveLength(1);
    ws.close();
  });

  it("a training stage gets its done run back with a note; an item stage reopens it silently", async () => {
    const ws = Workspace.open(dir);
    await done(ws, spec([]));
    const notes: string[] = [];
    const again = openStageRun(ws, spec(notes));
    expect(again).toMatchObject({ runId: "sft-0001", opened: "done" });
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      /^run sft-0001 with these settings and inputs is already done \(finished 20\d\d-.*\); nothing to train, its checkpoints are the result$/,
    );
    expect(() => again.begin()).toThrow(/stage "sft" of run sft-0001 is already done/);
    again.release();

    const items = spec(notes, { kind: "beams", stage: "beams", work: "items" });
    await done(ws, items);
    notes.length = 0;
    const reopened = openStageRun(ws, items);
    expect(reopened).toMatchObject({ runId: "beams-0002", opened: "done" });
    expect(notes).toEqual([]);
    reopened.begin();
    expect(ws.getStage("beams-0002", "beams")?.status).toBe("running");
    reopened.complete([], "1 of 3 items failed");
    expect(ws.getStage("beams-0002", "beams")?.status).toBe("done");
    expect(ws.getRun("beams-0002")).toMatchObject({ status: "failed", error: "1 of 3 items failed", holder: null });
    ws.close();
  });

  it("a stage whose artefact was written but not completed when the process died is redone", async () => {
    let ws = Workspace.open(dir);
    let produced = 0;
    const produce = async () => {
      produced++;
      return { artifacts: [ws.writeArtifact("beams.json", `{"n":${produced}}`)], value: produced };
    };
    const first = openStageRun(ws, spec([]));
    first.begin();
    await produce(); // the process "crashes" here, before the stage is completed
    ws.close();
    ws = Workspace.open(dir);
    expect(ws.getStage("sft-0001", "sft")?.status).toBe("running");
    const notes: string[] = [];
    const run = openStageRun(ws, spec(notes));
    expect(notes[0]).toContain("was interrupted (its process stopped); resuming it");
    expect(await run.produce(produce)).toBe(2);
    expect(ws.getStage("sft-0001", "sft")).toMatchObject({ status: "done", artifacts: [{ path: "beams.json" }] });
    expect(openStageRun(ws, spec([])).opened).toBe("done");
    ws.close();
  });
});

describe("the one lifecycle", () => {
  it("no stage writes runs, stages or leases by hand: only src/store opens, holds and finishes runs", () => {
    const files = (d: string): string[] =>
      readdirSync(d).flatMap((name) =>
        statSync(join(d, name)).isDirectory() ? files(join(d, name)) : [join(d, name)],
      );
    const primitives = /\.(createRun|holdRun|beginStage|completeStage|failStage|finishRun|updateStageProgress)\(/;
    const offenders = files("src")
      .filter((file) => file.endsWith(".ts") && !relative("src", file).startsWith("store"))
      .filter((file) => primitives.test(readFileSync(file, "utf8")));
    expect(offenders).toEqual([]);
  });
});
