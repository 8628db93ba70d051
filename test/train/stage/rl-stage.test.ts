import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCheckpoint, saveCheckpoint } from "../../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../../src/selector/config.js";
import { initParams } from "../../../src/selector/params.js";
import { Workspace } from "../../../src/store/workspace.js";
import {
  GrpoStageConfigSchema,
  RceStageConfigSchema,
  type RlStage,
  type RlStageConfig,
} from "../../../src/train/stage/rl-settings.js";
import { resumeRlStage, runRlStage } from "../../../src/train/stage/rl-stage.js";
import { VlmSettingsSchema } from "../../../src/vlm/settings.js";
import { crashingProgress } from "../../helpers/crash.js";
import { syntheticRollouts, syntheticWorkspace, syntheticWorld } from "../synthetic.js";

const dir = mkdtempSync(join(tmpdir(), "lever-rl-stage-"));
const wsDir = join(dir, "ws");
const world = syntheticWorld({ seed: 4, queries: 120, perConcept: 10, concepts: 6, d: 8, K: 10, noise: 0.05 });
syntheticWorkspace(dir, wsDir, world);
writeFileSync(join(dir, "rollouts.json"), JSON.stringify(syntheticRollouts(world, 1)));

const vlm = VlmSettingsSchema.parse({});
/** A checkpoint's weights (its metadata carries the run id and time, so bytes differ between runs). */
const weights = (path: string) =>
  Object.fromEntries([...loadCheckpoint(path).params].map(([k, v]) => [k, Array.from(v)]));
/** `init: "random"` said explicitly (a starting point is required); tests that start from a checkpoint override it. */
const inputs = { rollouts: join(dir, "rollouts.json"), dataset: "synth", embedding: "joint" as const, init: "random" };
/** The plain pointer selector: these tests are about the objectives, not the default candidate features. */
const model = { hidden: 8, dropout: 0, attnDropout: 0, prior: "none" as const, features: [], center: "none" as const };

function rce(over: Record<string, unknown> = {}) {
  return RceStageConfigSchema.parse({
    model,
    optim: { epochs: 4, batchQueries: 16, lr: 1e-2 },
    validation: { answers: false },
    data: { valFraction: 0.25 },
    seed: 5,
    ...over,
  });
}

function grpo(over: Record<string, unknown> = {}, grpoOver: Record<string, unknown> = {}) {
  return GrpoStageConfigSchema.parse({
    model,
    optim: { epochs: 4, batchQueries: 16, lr: 3e-3 },
    validation: { answers: false },
    data: { valFraction: 0.25 },
    kl: { beta: 0.04 },
    ...grpoOver,
    seed: 5,
    ...over,
  });
}

async function run<S extends RlStage>(stage: S, config: RlStageConfig<S>, extra: object = {}) {
  const ws = Workspace.open(wsDir, { create: false });
  try {
    return await runRlStage(ws, { stage, inputs: { ...inputs, ...extra }, config, vlm, progress: null });
  } finally {
    ws.close();
  }
}

describe("lever train rce / grpo (workspace stage)", () => {
  it("refuses to start without a starting point, and names checkpoints by run: RUN, RUN:last, RUN:epoch-N", async () => {
    const { init: _init, ...without } = inputs;
    const ws = Workspace.open(wsDir, { create: false });
    try {
      const before = ws.listRuns().length;
      await expect(
        runRlStage(ws, { stage: "rce", inputs: without, config: rce(), vlm, progress: null }),
      ).rejects.toThrow(
        'field "--init": RCE starts from a checkpoint: give --init RUN (e.g. the SFT run: --init sft-0001) or a file, or --init random to train from a seeded random init',
      );
      expect(ws.listRuns()).toHaveLength(before); // refused before any run is made
    } finally {
      ws.close();
    }
    const warm = await run("rce", rce({ optim: { epochs: 2, batchQueries: 16, lr: 1e-2 } }), { name: "warm-by-name" });
    // Which queries validate is said (and, when tied queries are dropped first, why GRPO's split is not RCE's).
    const notes: string[] = [];
    const noted = Workspace.open(wsDir, { create: false });
    try {
      await runRlStage(noted, {
        stage: "grpo",
        inputs: { ...inputs, name: "noted" },
        config: grpo({ optim: { epochs: 1, batchQueries: 16, lr: 3e-3 } }),
        vlm,
        progress: null,
        note: (text) => notes.push(text),
      });
    } finally {
      noted.close();
    }
    // (no query of these rollouts has all-equal rewards, so none is dropped before the split)
    expect(notes).toEqual(["grpo validates on 30 of 120 queries (held out by image, seed 5)"]);
    const byName = await run("grpo", grpo({ optim: { epochs: 1, batchQueries: 16, lr: 3e-3 } }), {
      init: "warm-by-name",
    });
    const byId = await run("grpo", grpo({ optim: { epochs: 1, batchQueries: 16, lr: 3e-3 } }), {
      init: `${warm.runId}:best`,
    });
    // The same starting file by name and by id: the same run (its identity holds the resolved path).
    expect(byId.runId).toBe(byName.runId);
    const first = await run("grpo", grpo({ optim: { epochs: 1, batchQueries: 16, lr: 3e-3 } }), {
      init: `${warm.runId}:epoch-1`,
    });
    expect(first.runId).not.toBe(byName.runId);
    const check = Workspace.open(wsDir, { create: false });
    try {
      expect(check.getRun(byName.runId)?.config).toMatchObject({ inputs: { init: warm.bestCheckpoint } });
      expect(check.getRun(first.runId)?.config).toMatchObject({ inputs: { init: warm.checkpoints[0] } });
    } finally {
      check.close();
    }
  });

  it("RCE learns the rewarded order from a fresh init: validation top-1 and greedy reward rise", async () => {
    const result = await run("rce", rce({ optim: { epochs: 12, batchQueries: 16, lr: 1e-2 } }));
    const first = result.history[0];
    const last = result.history.at(-1)!;
    // hard_plus_soft: the rewarded order scores 1 + 1 = 2, the next best 1.6.
    expect(first.valTop1).toBeLessThan(0.3);
    expect(last.valTop1).toBeGreaterThan(0.7);
    expect(last.valGreedyReward).toBeGreaterThan(1.5);
    expect(last.valRce).toBeLessThan(first.valRce);
    expect(result.stats).toMatchObject({ queries: 120, shots: 2, K: 10, failedTrajectories: 0 });
    expect(result.trainable.parameters).toBe(result.trainable.total);
  });

  it("a KL reference that cannot read these embeddings is refused up front, naming its file", async () => {
    const wrong = SelectorConfigSchema.parse({ d: 4, hidden: 4, shots: 2 });
    const file = join(dir, "reference-d4.safetensors");
    saveCheckpoint(file, {
      config: wrong,
      params: initParams(wrong, 1),
      trainedK: 10,
      shots: 2,
      provenance: { stage: "test", createdAt: "2026-01-01T00:00:00Z" },
    });
    await expect(run("grpo", grpo(), { reference: file })).rejects.toThrow(
      /reference-d4\.safetensors.*the KL reference checkpoint expects d=4, the embeddings have/,
    );
  });

  it("GRPO starting from the RCE checkpoint changes selections, reports its diagnostics, and β really acts", async () => {
    const warm = await run("rce", rce({ optim: { epochs: 1, batchQueries: 16, lr: 3e-3 } }));
    const init = warm.bestCheckpoint!;
    const a = await run("grpo", grpo(), { init });
    const h = a.history.at(-1)!;
    for (const key of ["policyLoss", "kl", "beta", "klShare", "advStd", "ratioMin", "ratioMax", "clipLow", "entropy"])
      expect(h[key], key).toBeTypeOf("number");
    expect(h.valTop1).toBeGreaterThanOrEqual(a.history[0].valTop1);
    expect(h.selectionChange).toBeGreaterThan(0);
    // β = 0 and a large β give different weights.
    const free = await run("grpo", grpo({}, { kl: { beta: 0 } }), { init });
    const tight = await run("grpo", grpo({}, { kl: { beta: 5 } }), { init });
    expect(weights(free.checkpoints.at(-1)!)).not.toEqual(weights(tight.checkpoints.at(-1)!));
    expect(free.history.at(-1)!.klTerm).toBe(0);
    expect(tight.history.at(-1)!.klShare).toBeGreaterThan(free.history.at(-1)!.klShare);
  }, 60_000);

  it("the same seed reproduces the identical checkpoint; an interrupted run resumes to it", async () => {
    const config = grpo({ seed: 9, optim: { epochs: 3, batchQueries: 16, lr: 3e-3 } });
    const straight = await run("grpo", config, { name: "straight" });
    const again = await run("grpo", config, { name: "again" });
    expect(weights(again.checkpoints.at(-1)!)).toEqual(weights(straight.checkpoints.at(-1)!));
    // Interrupt after epoch 2: the progress stream fails when it prints that epoch.
    const ws = Workspace.open(wsDir, { create: false });
    let crashed = "";
    try {
      await expect(
        runRlStage(ws, {
          stage: "grpo",
          inputs: { ...inputs, name: "crash" },
          config,
          vlm,
          progress: crashingProgress("grpo epoch 2/3"),
        }),
      ).rejects.toThrow(/simulated crash/);
      crashed = ws.listRuns({ kind: "grpo" }).at(-1)!.id;
      const resumed = await resumeRlStage(ws, crashed, { progress: null });
      expect(resumed.runId).toBe(crashed);
      expect(weights(resumed.checkpoints.at(-1)!)).toEqual(weights(straight.checkpoints.at(-1)!));
      // The same command again trains nothing: the done run's result is handed back.
      const notes: string[] = [];
      const again = await runRlStage(ws, {
        stage: "grpo",
        inputs: { ...inputs, name: "crash" },
        config,
        vlm,
        progress: crashingProgress("grpo epoch"),
        note: (text) => notes.push(text),
      });
      expect(again).toEqual({ ...resumed, resumed: false });
      expect(notes).toEqual([
        expect.stringMatching(new RegExp(`^run ${crashed} .* is already done .*nothing to train`)),
      ]);
      expect(ws.listRuns({ kind: "grpo" }).filter((r) => r.name === "crash")).toHaveLength(1);
    } finally {
      ws.close();
    }
  }, 60_000);
});
