/**
 * Upgrading lever keeps a workspace's work (src/experiment/identity.ts, "UPGRADES"): a workspace made by
 * the build at 9255aa3, whose identities are scheme 1's, is reused in full by this build — every stage's
 * record adopted under its identity now, the evaluation and guard runs found by the names they have —
 * and the next run finds every stage under its identity now.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stageRecordPath } from "../../src/experiment/records.js";
import { Workspace } from "../../src/store/workspace.js";
import { expectReusedInFull, runOnFixtureCopy } from "./upgrade-fixture.js";

describe("a workspace made by an earlier build (identity scheme 1)", () => {
  it("is reused in full: nothing recomputed, no run or prediction added; the next run finds the adopted records", async () => {
    const result = await runOnFixtureCopy(2);
    expectReusedInFull(result);
    const second = result.runs[1];
    for (const { stage } of result.plan.unique)
      expect(second.lines.filter((l) => l.startsWith(`${stage.stage} ${stage.id}`))).toEqual([
        expect.stringMatching(/: done earlier, reused$/),
      ]);
    expect(second.after).toEqual(result.before);
    const ws = Workspace.open(join(result.dir, "ws"));
    try {
      for (const { stage } of result.plan.unique) {
        const adopted = JSON.parse(readFileSync(stageRecordPath(ws, stage), "utf8"));
        expect(adopted).toMatchObject({ stage: stage.stage, id: stage.id, adoptedFrom: stage.legacyId });
        // The earlier build's record is left as it was, for that build.
        expect(existsSync(stageRecordPath(ws, { stage: stage.stage, id: stage.legacyId as string }))).toBe(true);
      }
    } finally {
      ws.close();
    }
  }, 120_000);
});
