/**
 * What a training run reads of its starting checkpoint (src/train/stage/inputs.ts, src/icl/trained-with.ts):
 * the embedding kind the checkpoint was trained on is the run's default, and a run that would read
 * another kind, or pools of another sampler, is refused in one line naming the checkpoint and field.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCheckpoint, saveCheckpoint } from "../../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../../src/selector/config.js";
import { initParams } from "../../../src/selector/params.js";
import { importEmbedding } from "../../../src/store/ingest/embeddings.js";
import { Workspace } from "../../../src/store/workspace.js";
import { RceStageConfigSchema } from "../../../src/train/stage/rl-settings.js";
import { runRlStage } from "../../../src/train/stage/rl-stage.js";
import { SftConfigSchema } from "../../../src/train/stage/sft-run.js";
import { runSftStage } from "../../../src/train/stage/sft-stage.js";
import { VlmSettingsSchema } from "../../../src/vlm/settings.js";
import { syntheticRollouts, syntheticWorkspace, syntheticWorld } from "../synthetic.js";

const dir = mkdtempSync(join(tmpdir(), "lever-train-inputs-"));
const wsDir = join(dir, "ws");
const world = syntheticWorld({ seed: 3, queries: 48, perConcept: 8, concepts: 6, d: 8, K: 8, noise: 0.05 });
syntheticWorkspace(dir, wsDir, world);
// The same vectors as a second kind, so a run can read either.
{
  const ws = Workspace.open(wsDir, { create: false });
  importEmbedding(ws, {
    file: join(dir, "emb.npy"),
    idsFile: join(dir, "emb.ids.json"),
    dataset: "synth",
    kind: "text",
  });
  ws.close();
}
writeFileSync(join(dir, "beams.json"), JSON.stringify(world.beams));
writeFileSync(join(dir, "pools.json"), JSON.stringify(world.pools)); // sampler "random"
writeFileSync(join(dir, "rollouts.json"), JSON.stringify(syntheticRollouts(world, 1)));

const model = { hidden: 8, dropout: 0, attnDropout: 0, prior: "none" as const, features: [], center: "none" as const };
const sftConfig = SftConfigSchema.parse({ model, optim: { epochs: 1, lr: 1e-2, batchQueries: 16 }, seed: 2 });
const sftInputs = { beams: join(dir, "beams.json"), pools: join(dir, "pools.json"), dataset: "synth" };

async function withWs<T>(fn: (ws: Workspace) => Promise<T>): Promise<T> {
  const ws = Workspace.open(wsDir, { create: false });
  try {
    return await fn(ws);
  } finally {
    ws.close();
  }
}

/** A checkpoint of the synthetic world's width recording what it was trained with. */
function noted(name: string, notes: Record<string, string>): string {
  const config = SelectorConfigSchema.parse({ d: 8, hidden: 8, shots: 2, prior: "none", features: [] });
  const file = join(dir, `${name}.safetensors`);
  saveCheckpoint(file, {
    config,
    params: initParams(config, 1),
    trainedK: 8,
    shots: 2,
    provenance: { stage: "test", createdAt: "2026-01-01T00:00:00Z", notes },
  });
  return file;
}

describe("a training run and the checkpoint it starts from", () => {
  it("SFT records its embedding kind and pool sampler; a run from it reads that kind unless told, and refuses another", async () => {
    const text = await withWs((ws) =>
      runSftStage(ws, { ...sftInputs, embedding: "text", config: sftConfig, name: "text-sft", progress: null }),
    );
    const best = text.bestCheckpoint!;
    expect(loadCheckpoint(best).provenance.notes).toMatchObject({ embedding: "text", poolSampler: "random" });

    // No --embedding: the starting checkpoint's kind, recorded in the run's identity and its checkpoints.
    const next = await withWs((ws) =>
      runSftStage(ws, { ...sftInputs, init: best, config: sftConfig, name: "text-sft-2", progress: null }),
    );
    await withWs(async (ws) => expect(ws.getRun(next.runId)?.config).toMatchObject({ embedding: "text" }));
    expect(loadCheckpoint(next.bestCheckpoint!).provenance.notes.embedding).toBe("text");

    const vlm = VlmSettingsSchema.parse({});
    const rce = RceStageConfigSchema.parse({
      model,
      optim: { epochs: 1, batchQueries: 16, lr: 1e-2 },
      validation: { answers: false },
      data: { valFraction: 0.25 },
      seed: 5,
    });
    const rl = (inputs: { embedding?: "joint" | "text"; init: string; name: string }) =>
      withWs((ws) =>
        runRlStage(ws, {
          stage: "rce",
          inputs: { rollouts: join(dir, "rollouts.json"), dataset: "synth", ...inputs },
          config: rce,
          vlm,
          progress: null,
        }),
      );
    const fromText = await rl({ init: "text-sft", name: "rce-from-text" });
    await withWs(async (ws) =>
      expect(ws.getRun(fromText.runId)?.config).toMatchObject({ inputs: { embedding: "text" } }),
    );
    expect(loadCheckpoint(fromText.bestCheckpoint!).provenance.notes.embedding).toBe("text");

    // Another kind given: one line naming the checkpoint, the field and the flag; no run is made.
    const refusal = new RegExp(
      `^${best.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}, field "provenance\\.notes\\.embedding": the selector was trained on "text" embeddings, not "joint" \\(--embedding\\)[^\\n]*$`,
    );
    const runs = await withWs(async (ws) => ws.listRuns().length);
    await expect(rl({ init: "text-sft", embedding: "joint", name: "rce-joint" })).rejects.toThrow(refusal);
    await expect(
      withWs((ws) =>
        runSftStage(ws, { ...sftInputs, init: best, embedding: "joint", config: sftConfig, progress: null }),
      ),
    ).rejects.toThrow(refusal);
    await withWs(async (ws) => expect(ws.listRuns()).toHaveLength(runs));
  });

  it("refuses a starting or reference checkpoint trained on pools of another sampler than the run's pool set", async () => {
    const mix = noted("mix-trained", { poolSampler: "mix", embedding: "joint" });
    await expect(
      withWs((ws) => runSftStage(ws, { ...sftInputs, init: mix, config: sftConfig, progress: null })),
    ).rejects.toThrow(
      /mix-trained\.safetensors, field "provenance\.notes\.poolSampler": the selector was trained on "mix" pools, not "random" \(--pools .*pools\.json\)/,
    );
    // A checkpoint that records nothing (imported, or older) is read as before: the defaults apply.
    const silent = noted("silent", {});
    const plain = await withWs((ws) =>
      runSftStage(ws, { ...sftInputs, init: silent, config: sftConfig, name: "from-silent", progress: null }),
    );
    await withWs(async (ws) => expect(ws.getRun(plain.runId)?.config).toMatchObject({ embedding: "joint" }));
  });
});
