/**
 * `lever run` against a server that fails some requests: a rollouts stage with failed trajectories is not
 * recorded as done (the run stops with the same error as `lever rollouts`), and the rerun retries them.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { stageRecordPath } from "../../src/experiment/records.js";
import { Workspace } from "../../src/store/workspace.js";
import { MockVllm } from "../helpers/mock-vllm.js";
import { experimentFiles } from "./helpers.js";

let mock: MockVllm;
const { dir, write } = experimentFiles("lever-runner-failures-");

beforeAll(async () => {
  mock = await MockVllm.start();
});

afterAll(async () => {
  await mock.close();
});

describe("lever run with failing VLM requests", () => {
  it("stops at a rollouts stage with failed trajectories instead of recording it done; the rerun retries them", async () => {
    // preflight off: the injected faults are meant for the rollouts' own requests, not the server check.
    const file = write(
      "fail.yaml",
      `name: fail
data:
  synth: { seed: 5, trainItems: 120, valItems: 20, embedding: { dim: 16 } }
pools: { sampler: mix, k: 8 }
vlm: { vlm: openai, baseUrls: ["${mock.url}"], model: mock-vl, maxRetries: 0, preflight: false }
rollouts: { queries: "first:3", shots: 2, retrieval: 2, random: 2 }
eval: { queries: "first:4", shots: [1], baselines: [random] }
report: { enabled: false }
`,
    );
    const p = plan(loadExperiment(file));
    const rollouts = p.unique.find((u) => u.stage.stage === "rollouts")?.stage;
    if (rollouts === undefined) throw new Error("no rollouts stage planned");
    const ws = Workspace.open(join(dir, "ws"));
    try {
      mock.inject("chat", ...Array.from({ length: 2 }, () => ({ kind: "status" as const, status: 503 })));
      await expect(execute(ws, p, { log: () => {}, progress: null })).rejects.toThrow(
        /trajectories of \d+ quer(y|ies) failed .*rerun the same command to retry them/,
      );
      expect(existsSync(stageRecordPath(ws, rollouts))).toBe(false);
      const lines: string[] = [];
      const report = await execute(ws, p, { log: (l) => lines.push(l), progress: null });
      expect(lines).toContain(`data ${p.variants[0].stages[0].id}: done earlier, reused`);
      expect(report.counts.rollouts).toEqual({ run: 1, reused: 0 });
      expect(existsSync(stageRecordPath(ws, rollouts))).toBe(true);
      expect(report.evalRuns).toHaveLength(1);
    } finally {
      ws.close();
    }
  }, 60_000);
});
