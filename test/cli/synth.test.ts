import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EMBEDDING_KINDS } from "../../src/data/embeddings.js";
import { Workspace } from "../../src/store/workspace.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";

describe("lever data synth --import", () => {
  it("writes a synthetic world and imports both splits with their embeddings in one command, ready for lever eval", async () => {
    const root = mkdtempSync(join(tmpdir(), "lever-synth-"));
    const ws = join(root, "ws");
    const out = join(root, "world");
    const args = ["--workspace", ws, "data", "synth", "--items", "120", "--val-items", "20", "--dim", "16"];
    const text = await runCliOk([...args, "--out", out, "--import", "toy"]);
    expect(text).toContain("imported: datasets toy-train and toy-val");
    const open = Workspace.open(ws);
    try {
      expect(open.listDatasets().map((d) => [d.name, d.split])).toEqual([
        ["toy-train", "train"],
        ["toy-val", "val"],
      ]);
      for (const dataset of ["toy-train", "toy-val"])
        for (const kind of EMBEDDING_KINDS)
          expect(open.getEmbedding(dataset, kind), `${dataset} ${kind}`).toBeDefined();
    } finally {
      open.close();
    }
    const world = join(out, "world.json");
    await runCliOk([
      "--workspace",
      ws,
      "eval",
      "--dataset",
      "toy-val",
      "--index",
      "toy-train",
      "--world",
      world,
      "--retriever",
      "zero,topk-joint",
      "--shots",
      "1",
      "--resamples",
      "100",
    ]);
    // A name already in the workspace is refused before anything is written.
    const again = await runCli([...args, "--out", join(root, "other"), "--import", "toy"]);
    expectUserError(again, /field "--import": the workspace already has a dataset "toy-train"/);
    expect(existsSync(join(root, "other"))).toBe(false);
    // A name the workspace would refuse as a dataset name is refused before anything is written.
    const bad = await runCli([...args, "--out", join(root, "bad"), "--import", ".hidden"]);
    expectUserError(bad, /field "--import": dataset name "\.hidden-train" must match/);
    expect(existsSync(join(root, "bad"))).toBe(false);
    // Without images the splits import without an image root.
    await runCliOk([...args, "--out", join(root, "bare"), "--import", "bare", "--no-images"]);
  });
});
