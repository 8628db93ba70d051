/**
 * Ctrl-C in every kind of stage, as a user sends it: the built CLI (dist/) is spawned on a tiny
 * synthetic experiment and sent SIGINT while a data stage (beam search), SFT, RCE or the evaluation
 * runs. Each must stop promptly, say what it kept and how to resume, exit 130, leave its run
 * `interrupted`, and the rerun must resume that run (not start a new one).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";

const CLI = resolve("dist/src/cli/main.js");

interface Stopped {
  code: number | null;
  stderr: string;
  /** Milliseconds from SIGINT to the exit (null: the trigger never came). */
  afterSigint: number | null;
}

/** Runs `lever ARGS`; sends SIGINT once stderr matches `trigger`; killed when still running after 90 s. */
function leverUntil(args: string[], trigger: RegExp): Promise<Stopped> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    const guard = setTimeout(() => child.kill("SIGKILL"), 90_000);
    let stderr = "";
    let sentAt: number | null = null;
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      if (sentAt === null && trigger.test(stderr)) {
        sentAt = Date.now();
        child.kill("SIGINT");
      }
    });
    child.on("error", fail);
    child.on("close", (code) => {
      clearTimeout(guard);
      done({ code, stderr, afterSigint: sentAt === null ? null : Date.now() - sentAt });
    });
  });
}

function experiment(name: string, body: string): { file: string; ws: string } {
  const dir = mkdtempSync(join(tmpdir(), `lever-sigint-${name}-`));
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `name: ${name}
data:
  synth: { seed: 6, trainItems: 400, valItems: 200, embedding: { dim: 16 } }
pools: { sampler: mix, k: 8 }
report: { enabled: false }
${body}`,
  );
  return { file, ws: join(dir, "ws") };
}

/** The run's status and its stage's finished epochs or items, read from the workspace. */
function runState(wsDir: string, runId: string, stage: string) {
  const ws = Workspace.open(wsDir, { create: false });
  try {
    return { status: ws.getRun(runId)?.status, done: ws.getStage(runId, stage)?.progressDone ?? 0, ws: ws.listRuns() };
  } finally {
    ws.close();
  }
}

/** Asserts a prompt stop with exit 130 and one `interrupted: …` line; returns that line. */
function expectInterrupted(r: Stopped): string {
  expect(r.afterSigint, r.stderr).not.toBeNull();
  expect(r.code, r.stderr).toBe(130);
  expect(r.afterSigint!, r.stderr).toBeLessThan(20_000);
  const lines = r.stderr.split("\n").filter((l) => l.startsWith("interrupted: "));
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/internal error|^error: /m);
  return lines[0];
}

describe("Ctrl-C (SIGINT) in each stage type", () => {
  it("a data stage (beams) and SFT under lever run, then `lever train resume`: stops, says what it kept, resumes", async () => {
    const { file, ws } = experiment(
      "sft",
      `beams: { anchors: all, shots: 3, beamSize: 4, budget: 8 }
sft: { model: { hidden: 8 }, optim: { epochs: 100000, batchQueries: 8 } }
eval: { queries: first:20, shots: [1], baselines: [random] }
`,
    );
    const run = ["--workspace", ws, "run", file];
    // 1. During the beam search (a data stage): the anchors done so far are stored.
    const beams = await leverUntil(run, /beams \w+: running/);
    const beamsLine = expectInterrupted(beams);
    const [, beamsRun, searched] = beamsLine.match(/beam search run (beams-\d+) stopped after (\d+) of 400 anchors/)!;
    expect(beamsLine).toMatch(/kept: 2 of \d+ stages done .*; run the same command again to resume/);
    expect(runState(ws, beamsRun, "beams")).toMatchObject({ status: "interrupted", done: Number(searched) });

    // 2. The rerun resumes the beam search, then Ctrl-C during SFT stops within its epoch.
    const sft = await leverUntil(run, /sft epoch 2\//);
    expect(sft.stderr).toContain(
      `note: run ${beamsRun} with these settings and inputs was interrupted (its process stopped); resuming it`,
    );
    const sftLine = expectInterrupted(sft);
    const m = sftLine.match(
      /sft run (sft-\d+) stopped in epoch (\d+), before .*; kept: (\d+) finished epochs? of 100000/,
    );
    expect(m, sftLine).not.toBeNull();
    const [, sftRun, stoppedIn, kept] = m!;
    expect(Number(stoppedIn)).toBe(Number(kept) + 1);
    expect(sftLine).toContain(`resume: lever train resume ${sftRun} (or run the same command again)`);
    const state = runState(ws, sftRun, "sft");
    expect(state).toMatchObject({ status: "interrupted", done: Number(kept) });
    expect(state.done).toBeGreaterThanOrEqual(2);
    expect(state.done).toBeLessThan(1000);

    // 3. The rerun resumes that SFT run after its last finished epoch (no new run).
    const again = await leverUntil(run, /sft epoch \d+\//);
    expect(again.stderr).toContain(
      `note: run ${sftRun} with these settings and inputs was interrupted (its process stopped); resuming it (the same as: lever train resume ${sftRun})`,
    );
    expect(again.stderr).toMatch(new RegExp(`^sft epoch ${Number(kept) + 1}/100000`, "m"));
    expectInterrupted(again);

    // 4. A standalone training command: the same message, exit code and status.
    const standalone = await leverUntil(["--workspace", ws, "train", "resume", sftRun], /sft epoch \d+\//);
    expect(expectInterrupted(standalone)).toMatch(new RegExp(`^interrupted: sft run ${sftRun} stopped in epoch`));
    const after = runState(ws, sftRun, "sft");
    expect(after.status).toBe("interrupted");
    expect(after.ws.filter((r) => r.kind === "sft")).toHaveLength(1);
  }, 180_000);

  it("RCE under lever run: stops within its epoch, and the rerun resumes the run", async () => {
    const { file, ws } = experiment(
      "rce",
      `rollouts: { queries: first:60, shots: 2 }
rce: { model: { hidden: 8 }, optim: { epochs: 100000, batchQueries: 8 } }
eval: { queries: first:20, shots: [1], baselines: [random] }
`,
    );
    const run = ["--workspace", ws, "run", file];
    const first = await leverUntil(run, /rce epoch 2\//);
    const line = expectInterrupted(first);
    const [, rceRun, kept] = line.match(/rce run (rce-\d+) stopped in epoch \d+, .*kept: (\d+) finished epochs?/)!;
    expect(line).toContain(`resume: lever train resume ${rceRun}`);
    expect(runState(ws, rceRun, "rce")).toMatchObject({ status: "interrupted", done: Number(kept) });
    const again = await leverUntil(run, /rce epoch \d+\//);
    expect(again.stderr).toContain(`note: run ${rceRun} with these settings and inputs was interrupted`);
    expect(again.stderr).toMatch(new RegExp(`^rce epoch ${Number(kept) + 1}/100000`, "m"));
    expectInterrupted(again);
  }, 180_000);

  it("the evaluation under lever run: stored predictions are kept and the rerun finishes the same run", async () => {
    const { file, ws } = experiment(
      "eval",
      "eval: { queries: all, shots: [1, 2, 3, 4], baselines: [zero, random, topk-joint, topk-image, vote] }\n",
    );
    const run = ["--workspace", ws, "run", file];
    const first = await leverUntil(run, /eval \w+: \d+ retrievers/);
    const line = expectInterrupted(first);
    const [, evalRun] = line.match(/evaluation run (\S+) stopped after \d+ of \d+ predictions \(those are stored\)/)!;
    expect(line).toContain("run the same command again to resume");
    expect(runState(ws, evalRun, "eval").status).toBe("interrupted");
    const again = await leverUntil(run, /a trigger that never comes/);
    expect(again.code, again.stderr).toBe(0);
    const after = runState(ws, evalRun, "eval");
    expect(after.status).toBe("done");
    expect(after.ws.filter((r) => r.kind === "eval").map((r) => r.id)).toEqual([evalRun]);
  }, 180_000);
});
