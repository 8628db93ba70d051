/**
 * `lever run` reuses a done stage only while the artefacts it hands on are as they were when it was done
 * (src/experiment/records.ts): one deleted or changed since is redone — that stage only — with one line
 * saying why; a record from before artefacts were recorded is checked for existence only.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { describePlan, plan } from "../../src/experiment/plan.js";
import { stageRecordPath } from "../../src/experiment/records.js";
import { rolloutArtifactPath } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-runner-reuse-");
const file = write(
  "reuse.yaml",
  `name: reuse
data:
  synth: { seed: 7, trainItems: 120, valItems: 20, embedding: { dim: 16 } }
pools: { sampler: mix, k: 8 }
rollouts: { queries: "first:6", shots: 2, retrieval: 2, random: 2 }
rce: { model: { hidden: 8 }, optim: { epochs: 1, batchQueries: 4 } }
eval: { queries: "first:4", shots: [1], baselines: [random] }
report: { enabled: false }
`,
);

describe("lever run when a done stage's artefact is gone or changed", () => {
  it("redoes the stage whose artefact was deleted (and only it), saying why; a changed one is to run again; an old record checks existence", async () => {
    const p = plan(loadExperiment(file));
    const rollouts = p.unique.find((u) => u.stage.stage === "rollouts")?.stage;
    if (rollouts === undefined) throw new Error("no rollouts stage planned");
    const ws = Workspace.open(join(dir, "ws"));
    try {
      await execute(ws, p, { log: () => {}, progress: null });
      const artefact = ws.artifactPath(rolloutArtifactPath(`x${rollouts.id}`));
      const content = readFileSync(artefact);
      rmSync(artefact);

      const lines: string[] = [];
      const report = await execute(ws, p, { log: (l) => lines.push(l), progress: null });
      expect(lines).toContain(
        `rollouts ${rollouts.id}: done earlier, but its artefact ${artefact} is gone: running it again`,
      );
      expect(report.counts.rollouts).toEqual({ run: 1, reused: 0 });
      for (const stage of ["data", "pools", "rce"] as const)
        expect(report.counts[stage], stage).toEqual({ run: 0, reused: 1 });
      expect(readFileSync(artefact).equals(content)).toBe(true);

      // Changed since (same size, other bytes): not reused.
      const changed = Buffer.from(content);
      changed[1] = changed[1] === 0x20 ? 0x0a : 0x20;
      writeFileSync(artefact, changed);
      const state = () => describePlan(ws, p).stages.find((s) => s.stage === "rollouts")?.state;
      expect(state()).toBe(`to run again (its artefact ${artefact} changed since (its content differs))`);
      writeFileSync(artefact, content.subarray(1));
      expect(state()).toMatch(
        /^to run again \(its artefact .* changed since \(\d+ bytes, \d+ when the stage was done\)\)$/,
      );

      // A record written before artefacts were recorded: existence only.
      const recordPath = stageRecordPath(ws, rollouts);
      const { artefacts: _, ...old } = JSON.parse(readFileSync(recordPath, "utf8"));
      writeFileSync(recordPath, JSON.stringify(old));
      expect(state()).toBe("done");
      rmSync(artefact);
      expect(state()).toBe(`to run again (its artefact ${artefact} is gone)`);
    } finally {
      ws.close();
    }
  }, 60_000);
});
