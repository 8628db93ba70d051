/**
 * Ctrl-C once every stage and evaluation is stored, before the comparison and report (which do not
 * watch the signal): `lever run` stops there with an InterruptedError (exit 130) instead of finishing as
 * if nothing happened.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { Workspace } from "../../src/store/workspace.js";
import { InterruptedError } from "../../src/util/errors.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-runner-interrupt-final-");
const file = write(
  "final.yaml",
  `name: final
data:
  synth: { seed: 7, trainItems: 120, valItems: 20, embedding: { dim: 16 } }
pools: { sampler: mix, k: 8 }
eval: { queries: all, shots: [1], baselines: [zero, random] }
compare: { baseline: random, subsets: [all], resamples: 200 }
`,
);

describe("Ctrl-C after the last prediction of lever run", () => {
  it("stops before the comparison and report, saying what was kept", async () => {
    const ws = Workspace.open(join(dir, "ws"));
    try {
      const controller = new AbortController();
      // The evaluation's progress reaching its total: every prediction is stored, then Ctrl-C.
      const progress = {
        isTTY: false,
        write: (text: string) => {
          const m = /(\d+)\/(\d+)/.exec(text);
          if (text.startsWith("eval") && m !== null && m[1] === m[2] && Number(m[1]) > 0) controller.abort();
          return true;
        },
      };
      const run = execute(ws, plan(loadExperiment(file)), {
        log: () => {},
        progress: progress as never,
        signal: controller.signal,
      });
      await expect(run).rejects.toThrow(InterruptedError);
      await expect(run).rejects.toThrow(
        "stopped before the comparison and report; kept: 2 stages done and every evaluation; run the same command again to write them (done stages are reused)",
      );
      expect(ws.listRuns({ kind: "eval" }).map((r) => r.status)).toEqual(["done"]);
    } finally {
      ws.close();
    }
  }, 60_000);
});
