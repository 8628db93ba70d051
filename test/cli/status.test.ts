import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatStatus, statusRow } from "../../src/cli/status.js";
import type { RunRecord, StageRecord } from "../../src/store/types.js";
import { Workspace } from "../../src/store/workspace.js";
import { runCli } from "../helpers/cli.js";

const run = (over: Partial<RunRecord>): RunRecord => ({
  id: "sft-0001",
  kind: "sft",
  name: null,
  config: {},
  configHash: "h",
  seed: 0,
  status: "done",
  parentRunId: null,
  createdAt: "2026-11-28T03:00:00.000Z",
  finishedAt: "2026-11-28T03:02:05.000Z",
  error: null,
  holder: null,
  ...over,
});

const stage = (over: Partial<StageRecord>): StageRecord => ({
  runId: "sft-0001",
  name: "train",
  status: "done",
  progressDone: 3,
  progressTotal: 3,
  artifacts: [],
  startedAt: "2026-11-28T03:00:01.000Z",
  finishedAt: "2026-11-28T03:02:04.000Z",
  error: null,
  ...over,
});

describe("lever status", () => {
  it("has a header, start times and durations, and columns as wide as their longest value", () => {
    const now = new Date("2026-11-28T03:10:00.000Z");
    const long = "beta-seed-sweep-grpo_beta-0.12_seed-3-with-a-very-long-experiment-name";
    const rows = [
      statusRow(run({}), [stage({})], now),
      statusRow(
        run({ id: "grpo-0002", kind: "grpo", name: long, status: "running", finishedAt: null }),
        [stage({ runId: "grpo-0002", status: "running", progressDone: 1, finishedAt: null })],
        now,
      ),
    ];
    expect(rows[0].durationSeconds).toBe(125);
    expect(rows[1].durationSeconds).toBe(600); // still going: so far
    // A dead run's time stops at its process's last heartbeat, however late status is asked; unknown without one.
    const holder = {
      pid: 1,
      host: "h",
      startedAt: "2026-11-28T03:00:00.000Z",
      heartbeatAt: "2026-11-28T03:01:30.000Z",
    };
    const dead = run({ status: "interrupted", finishedAt: null, holder });
    const deadStages = [stage({ status: "running", finishedAt: null })];
    for (const later of [now, new Date("2026-12-01T00:00:00.000Z")]) {
      const row = statusRow(dead, deadStages, later);
      expect(row.durationSeconds).toBe(90);
      expect(row.stages[0].durationSeconds).toBe(89);
    }
    const released = statusRow(run({ status: "interrupted", finishedAt: null }), deadStages, now);
    expect([released.durationSeconds, released.stages[0].durationSeconds]).toEqual([null, null]);
    expect(formatStatus([released])).toMatch(/interrupted\s+2026-11-28 03:00\s+\?\s+train running 3\/3/);
    const lines = formatStatus(rows).trimEnd().split("\n");
    expect(lines[0]).toMatch(/^RUN\s+NAME\s+KIND\s+STATUS\s+STARTED \(UTC\)\s+TIME\s+STAGES$/);
    expect(lines[1]).toMatch(/^sft-0001\s+-\s+sft\s+done\s+2026-11-28 03:00\s+2m05s\s+train done 3\/3$/);
    expect(lines[2]).toContain(`${long}  grpo  running  2026-11-28 03:00  10m00s  train running 1/3`);
    // Every column starts at the same place on every line, however long the name.
    for (const column of ["KIND", "STATUS", "STARTED", "TIME", "STAGES"]) {
      const at = lines[0].indexOf(column);
      expect(lines[1][at - 1], column).toBe(" ");
      expect(lines[2][at - 1], column).toBe(" ");
      expect(lines[1][at], column).not.toBe(" ");
      expect(lines[2][at], column).not.toBe(" ");
    }
  });

  it("prints the table of a workspace's runs, and JSON with times and durations", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "lever-status-")), "ws");
    const ws = Workspace.open(dir, { create: true });
    const id = ws.createRun({ kind: "eval", config: { a: 1 }, seed: 0, name: "an-evaluation" });
    ws.finishRun(id, "done");
    ws.close();
    const text = await runCli(["--workspace", dir, "status"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^RUN\s+NAME\s+KIND\s+STATUS\s+STARTED \(UTC\)\s+TIME\s+STAGES\n/);
    expect(text.stdout).toMatch(
      new RegExp(`\\n${id}\\s+an-evaluation\\s+eval\\s+done\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s+\\d+s\\n$`),
    );
    const json = JSON.parse((await runCli(["--workspace", dir, "status", "--json"])).stdout);
    expect(json[0]).toMatchObject({ id, name: "an-evaluation", status: "done" });
    expect(json[0].durationSeconds).toBeGreaterThanOrEqual(0);
    expect(json[0].finishedAt).not.toBeNull();
  });
});
