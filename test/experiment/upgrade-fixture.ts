/**
 * The upgrade fixture (test/fixtures/upgrade-9255aa3/README.md): a workspace a build up to 9255aa3 made
 * by running the fixture's experiment, which identity scheme 1 names throughout. `runOnFixtureCopy` runs
 * the same experiment with the build under test on a copy; `expectReusedInFull` says nothing was redone.
 */
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { STAGES } from "../../src/experiment/stages.js";
import { Workspace } from "../../src/store/workspace.js";

export const FIXTURE = fileURLToPath(new URL("../fixtures/upgrade-9255aa3/", import.meta.url));

/** Every run of the workspace (id, name, status) with its number of stored predictions. */
function snapshot(ws: Workspace): string[] {
  return ws.listRuns().map((run) => `${run.id} ${run.name} ${run.status} ${ws.getPredictions(run.id).length}`);
}

/** Runs the fixture's experiment (twice: `times`) on a fresh copy of its workspace; what each run logged and reported. */
export async function runOnFixtureCopy(times = 1) {
  const dir = mkdtempSync(join(tmpdir(), "lever-upgrade-"));
  cpSync(join(FIXTURE, "ws"), join(dir, "ws"), { recursive: true });
  const ws = Workspace.open(join(dir, "ws"));
  try {
    const p = plan(loadExperiment(join(FIXTURE, "experiment.yaml")));
    const before = snapshot(ws);
    const runs = [];
    for (let i = 0; i < times; i++) {
      const lines: string[] = [];
      const report = await execute(ws, p, { log: (line) => lines.push(line), progress: null });
      runs.push({ lines, report, after: snapshot(ws) });
    }
    return { dir, plan: p, before, runs };
  } finally {
    ws.close();
  }
}

/** Nothing was redone: every stage reused (found under its scheme-1 identity), no new run, no new prediction. */
export function expectReusedInFull(result: Awaited<ReturnType<typeof runOnFixtureCopy>>): void {
  const [{ lines, report, after }] = result.runs;
  for (const stage of STAGES) expect(report.counts[stage].run, stage).toBe(0);
  for (const { stage } of result.plan.unique) {
    expect(stage.legacyId, stage.stage).not.toBeNull();
    expect(lines.filter((l) => l.startsWith(`${stage.stage} ${stage.id}`))).toEqual([
      expect.stringMatching(new RegExp(`: done earlier \\(by an earlier lever, as ${stage.legacyId}\\), reused$`)),
    ]);
  }
  expect(lines.filter((l) => /running/.test(l))).toEqual([]);
  // The evaluation and the guard are the runs the earlier build made, with every prediction they had.
  expect(report.evalRuns).toEqual(["eval-0009"]);
  expect(after).toEqual(result.before);
}
