/**
 * `lever run` after a training stage failed: the next `lever run` resumes that stage's run from its last
 * finished epoch (src/store/stage-run.ts), instead of training a new run from scratch.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { Workspace } from "../../src/store/workspace.js";
import { crashingProgress } from "../helpers/crash.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-runner-resume-");
const file = write(
  "resume.yaml",
  `name: resume
data:
  synth: { seed: 6, trainItems: 200, valItems: 30, embedding: { dim: 16 } }
pools: { sampler: mix, k: 8 }
beams: { anchors: "first:24", shots: 2, beamSize: 2, budget: 4 }
sft: { model: { hidden: 8 }, optim: { epochs: 3, batchQueries: 8 } }
eval: { queries: "first:10", shots: [1], baselines: [random] }
report: { enabled: false }
`,
);

describe("lever run after a failed training stage", () => {
  it("resumes the failed SFT run on the next lever run, training only the epochs it had not finished", async () => {
    const p = plan(loadExperiment(file));
    const ws = Workspace.open(join(dir, "ws"));
    try {
      // The SFT stage fails while it reports its second epoch (after that epoch's state was saved).
      await expect(
        execute(ws, p, { log: () => {}, progress: crashingProgress("sft epoch 2/3") as never }),
      ).rejects.toThrow(/simulated crash/);
      const [failed] = ws.listRuns({ kind: "sft" });
      expect(failed).toMatchObject({ status: "failed", error: "simulated crash" });

      const lines: string[] = [];
      const progress: string[] = [];
      const report = await execute(ws, p, {
        log: (line) => lines.push(line),
        progress: { isTTY: false, write: (text: string) => progress.push(text) } as never,
      });
      expect(lines).toContain(
        `note: run ${failed.id} with these settings and inputs failed (simulated crash); resuming it (the same as: lever train resume ${failed.id})`,
      );
      expect(report.counts.sft).toEqual({ run: 1, reused: 0 });
      expect(report.trainingRuns).toContain(failed.id);
      expect(ws.listRuns({ kind: "sft" }).map((r) => r.id)).toEqual([failed.id]);
      // No second run's checkpoints left beside the first (no orphaned files on a full disk).
      expect(readdirSync(ws.artifactPath("runs")).filter((d) => d.startsWith("sft-"))).toEqual([failed.id]);
      expect(ws.getRun(failed.id)?.status).toBe("done");
      // Epochs 1 and 2 were kept: only epoch 3 was trained, and each epoch is recorded once.
      expect(progress.filter((t) => t.startsWith("sft epoch")).map((t) => t.split("  ")[0])).toEqual(["sft epoch 3/3"]);
      expect(ws.getMetrics(failed.id, { name: "epoch.trainLoss" }).map((r) => r.epoch)).toEqual([0, 1, 2]);
    } finally {
      ws.close();
    }
  }, 60_000);
});
