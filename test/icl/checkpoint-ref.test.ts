import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkpointLabel, resolveCheckpoint } from "../../src/icl/checkpoint-ref.js";
import { shortRetriever } from "../../src/icl/retriever-methods.js";
import { Workspace } from "../../src/store/workspace.js";

describe("checkpoint references (RUN[:best|last|epoch-N])", () => {
  const dir = mkdtempSync(join(tmpdir(), "lever-ckpt-ref-"));
  const ws = Workspace.open(join(dir, "ws"));
  const sft = ws.createRun({ kind: "sft", config: { a: 1 }, seed: 1, name: "warm" });
  const beams = ws.createRun({ kind: "beams", config: {}, seed: 1 });
  const runDir = ws.artifactPath(`runs/${sft}/sft`);
  mkdirSync(runDir, { recursive: true });
  for (const f of ["epoch-001.safetensors", "epoch-002.safetensors", "epoch-010.safetensors", "best.safetensors"])
    writeFileSync(join(runDir, f), f);
  const file = join(dir, "mine.safetensors");
  copyFileSync(join(runDir, "best.safetensors"), file);

  it("resolves a run by id or name to its best, last or epoch-N checkpoint; a file is itself", () => {
    expect(resolveCheckpoint(ws, sft)).toBe(join(runDir, "best.safetensors"));
    expect(resolveCheckpoint(ws, "warm")).toBe(join(runDir, "best.safetensors"));
    expect(resolveCheckpoint(ws, `${sft}:best`)).toBe(join(runDir, "best.safetensors"));
    expect(resolveCheckpoint(ws, "warm:last")).toBe(join(runDir, "epoch-010.safetensors"));
    expect(resolveCheckpoint(ws, `${sft}:epoch-2`)).toBe(join(runDir, "epoch-002.safetensors"));
    expect(resolveCheckpoint(ws, file)).toBe(file);
    expect(resolveCheckpoint(null, file)).toBe(file);
  });

  it("says what exists instead of ENOENT", () => {
    expect(() => resolveCheckpoint(ws, `${sft}:epoch-3`, "--init")).toThrow(
      `field "--init": run ${sft} has no epoch-3 checkpoint (finished epochs: 1, 2, 10; best, last = epoch-10)`,
    );
    expect(() => resolveCheckpoint(ws, "sft-0099", "--init")).toThrow(
      'sft-0099, field "--init": no such file, and no training run "sft-0099" in the workspace',
    );
    expect(() => resolveCheckpoint(ws, beams)).toThrow(`no training run "${beams}"`);
    expect(() => resolveCheckpoint(ws, `${sft}:newest`)).toThrow(/no such file, and no training run/);
  });

  it("labels a run's checkpoint by its run, so three selectors never share a legend", () => {
    expect(checkpointLabel(join(runDir, "best.safetensors"))).toBe(sft);
    expect(checkpointLabel(join(runDir, "epoch-010.safetensors"))).toBe(`${sft}:epoch-10`);
    expect(checkpointLabel("/ckpts/grpo_epoch2.safetensors")).toBe("grpo_epoch2");
    const labels = ["sft-0002/sft", "rce-0005/rce", "grpo-0007/grpo"].map((r) =>
      shortRetriever(`selector:/very/long/workspace/path/artifacts/runs/${r}/best.safetensors@0123456789ab`),
    );
    expect(labels).toEqual(["selector:sft-0002", "selector:rce-0005", "selector:grpo-0007"]);
  });
});
