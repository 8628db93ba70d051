/**
 * A command that fails while setting up its run (after the run was created, before its stage began —
 * here the VLM that answers RCE's validation queries is not there) marks the run failed with the error,
 * so `lever status` does not show it running (or interrupted) forever, and its `--name` stays usable
 * for the command with other settings.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { runCli, runCliOk } from "../helpers/cli.js";
import { syntheticRollouts, syntheticWorkspace, syntheticWorld } from "../train/synthetic.js";

const dir = mkdtempSync(join(tmpdir(), "lever-setup-failure-"));
const wsDir = join(dir, "ws");
const world = syntheticWorld({ seed: 4, queries: 40, perConcept: 6, concepts: 4, d: 8, K: 6, noise: 0.05 });
syntheticWorkspace(dir, wsDir, world);
writeFileSync(join(dir, "rollouts.json"), JSON.stringify(syntheticRollouts(world, 1)));

const rce = [
  "--workspace",
  wsDir,
  "train",
  "rce",
  "--rollouts",
  join(dir, "rollouts.json"),
  "--dataset",
  "synth",
  "--embedding",
  "joint",
  "--init",
  "random",
  "--epochs",
  "1",
  "--hidden",
  "8",
  "--name",
  "mine",
  "--quiet",
];

describe("a command that fails during setup", () => {
  it("marks its run failed (not running or interrupted) and leaves its --name usable", async () => {
    const failed = await runCli([...rce, "--vlm", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]);
    expect(failed.code).toBe(2);
    // A stage that validates with a VLM says which backend answers (the simulator by default).
    expect(failed.stderr).toMatch(/^note: validation answers come from the openai VLM \(.*--vlm to change\)$/m);
    const ws = Workspace.open(wsDir, { create: false });
    try {
      const [run] = ws.listRuns({ kind: "rce" });
      expect(run).toMatchObject({ name: "mine", status: "failed" });
      expect(run.finishedAt).not.toBeNull();
      expect(run.error).toMatch(/127\.0\.0\.1:9/);
    } finally {
      ws.close();
    }
    // The same name with other settings (no VLM validation) trains: the failed run did no work.
    await runCliOk([...rce, "--no-validation-answers"]);
    const after = Workspace.open(wsDir, { create: false });
    try {
      // The name names one run: the one that trained.
      expect(after.listRuns({ kind: "rce" }).map((r) => [r.name, r.status])).toEqual([
        [null, "failed"],
        ["mine", "done"],
      ]);
    } finally {
      after.close();
    }
  }, 60_000);
});
