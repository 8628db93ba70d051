/**
 * Issue 18: "the same finished SFT command trains a duplicate run". The chain a user types — stored
 * pool and beam sets by name, default training flags — run twice: the second `lever train sft` hands
 * back the first run (src/store/stage-run.ts), so the workspace holds one SFT run and one set of epochs.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { runCli, runCliOk } from "../helpers/cli.js";

describe("the same finished command again", () => {
  it("lever train sft on stored pools and beams trains nothing the second time: one run, the same result", async () => {
    const root = mkdtempSync(join(tmpdir(), "lever-rerun-"));
    const ws = join(root, "ws");
    const lever = (...args: string[]) => runCliOk(["--workspace", ws, ...args]);
    await lever(
      "data",
      "synth",
      "--items",
      "120",
      "--val-items",
      "10",
      "--dim",
      "16",
      "--out",
      join(root, "w2"),
      "--import",
      "toy",
    );
    await lever("pools", "--queries", "toy-train", "--index", "toy-train", "--k", "8", "--out", "p8");
    await lever(
      "beams",
      "--dataset",
      "toy-train",
      "--pools",
      "p8",
      "--anchors",
      "first:20",
      "--shots",
      "2",
      "--beam-size",
      "2",
      "--out",
      "b",
    );
    const sft = [
      "train",
      "sft",
      "--beams",
      "b",
      "--pools",
      "p8",
      "--dataset",
      "toy-train",
      "--epochs",
      "2",
      "--hidden",
      "8",
    ];
    const first = await runCli(["--workspace", ws, ...sft, "--json"]);
    expect(first.code, first.stderr).toBe(0);
    const again = await runCli(["--workspace", ws, ...sft, "--json"]);
    expect(again.code, again.stderr).toBe(0);
    const result = JSON.parse(first.stdout);
    expect(JSON.parse(again.stdout)).toEqual(result);
    expect(again.stderr).toMatch(/^note: run sft-\d+ with these settings and inputs is already done/);
    const open = Workspace.open(ws);
    try {
      expect(open.listRuns({ kind: "sft" }).map((r) => r.id)).toEqual([result.runId]);
      expect(open.getMetrics(result.runId, { name: "epoch.trainLoss" })).toHaveLength(2);
    } finally {
      open.close();
    }
  });
});
