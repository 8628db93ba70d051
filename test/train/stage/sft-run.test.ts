import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Checkpoint, loadCheckpoint } from "../../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../../src/selector/config.js";
import { initParams } from "../../../src/selector/params.js";
import { buildSftGroups } from "../../../src/train/data/groups.js";
import { STATE_FILE } from "../../../src/train/loop/run.js";
import { loadTrainState } from "../../../src/train/loop/train-state.js";
import { sftValidation } from "../../../src/train/objective/sft.js";
import { runSft, type SftConfigInput, SftConfigSchema } from "../../../src/train/stage/sft-run.js";
import { syntheticWorld } from "../synthetic.js";

const world = syntheticWorld({ seed: 1, queries: 240, perConcept: 20, concepts: 8, d: 12, K: 12, noise: 0.05 });
const files = { beams: "beams.json", pools: "pools.json" };
/** SFT groups of the synthetic world's own beams and pools. */
const worldGroups = (options: Parameters<typeof buildSftGroups>[3]) =>
  buildSftGroups(world.beams, world.pools, world.sources, options, files);
const baseInput = () => ({
  ...world,
  files,
  checkpointDir: null,
  provenance: {},
});

function config(over: SftConfigInput = {}) {
  return SftConfigSchema.parse({
    model: { hidden: 16, layers: 1, dropout: 0.1, attnDropout: 0.1, stateUpdate: "gate", prior: "none", features: [] },
    optim: { epochs: 12, batchQueries: 16, lr: 1e-2, weightDecay: 0, schedule: { kind: "cosine", warmupRatio: 0.05 } },
    data: { valFraction: 0.25 },
    seed: 3,
    ...over,
  });
}

describe("SFT training", () => {
  it("learns a function of the embeddings: held-out top-1 agreement goes from chance to > 90 %", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lever-sft-"));
    const epochs: Record<string, number>[] = [];
    const result = await runSft({
      config: config(),
      ...world,
      files,
      checkpointDir: dir,
      provenance: { runId: "test" },
      onEpoch: (info) => epochs.push(info.metrics),
      now: () => "2026-01-01T00:00:00Z",
    });
    expect(result.split).toEqual({ train: 180, val: 60 });
    // Before training (same seeded init) the greedy first pick agrees with the best beam at about chance (1/K).
    const untrained = await runSft({ ...baseInput(), config: config({ optim: { epochs: 1, lr: 1e-12 } }) });
    expect(untrained.history[0].valTop1).toBeLessThan(0.25);
    const last = epochs[epochs.length - 1];
    expect(last.valTop1).toBeGreaterThan(0.9);
    expect(last.valLoss).toBeLessThan(epochs[0].valLoss);
    // A checkpoint per epoch and the best one; the best reloads to the same validation metrics.
    expect(readdirSync(dir).sort()).toEqual(
      [
        ...Array.from({ length: 12 }, (_, i) => `epoch-${String(i + 1).padStart(3, "0")}.safetensors`),
        "best.safetensors",
        "state.safetensors",
      ].sort(),
    );
    const best = loadCheckpoint(join(dir, "best.safetensors"));
    expect(best.trainedK).toBe(12);
    expect(best.shots).toBe(2);
    expect(best.provenance.epoch).toBe(result.bestEpoch);
    expect(best.provenance.notes.promptOrder).toBe("farthest");
    expect(best.provenance.notes.configHash).toMatch(/^[0-9a-f]{64}$/);
    expect(best.provenance.metrics.valLoss).toBeCloseTo(epochs[result.bestEpoch].valLoss, 6);
  }, 20_000);

  it("refuses a starting checkpoint that cannot read these embeddings or score these shots, naming its file", async () => {
    const start = (over: object) => {
      const c = SelectorConfigSchema.parse({ d: 12, shots: 2, ...over });
      return {
        config: c,
        params: initParams(c, 1),
        trainedK: 12,
        shots: c.shots,
        provenance: {},
      } as unknown as Checkpoint;
    };
    const withInit = (init: Checkpoint) =>
      runSft({
        ...baseInput(),
        files: { ...files, init: "start.safetensors" },
        init,
        config: config({ optim: { epochs: 1 } }),
      });
    await expect(withInit(start({ d: 8 }))).rejects.toThrow(/start\.safetensors.*starting checkpoint expects d=8/);
    // A step embedding for one shot cannot score the beams' second step: refused up front, not mid-training.
    await expect(withInit(start({ shots: 1, stepEmbedding: true }))).rejects.toThrow(
      /start\.safetensors.*built for 1 shots, the data have 2/,
    );
  });

  it("is reproducible: the same seed gives bit-identical weights, another seed different ones", async () => {
    const small = config({ optim: { epochs: 2, batchQueries: 16, lr: 5e-3 } });
    const run = async (seed: number) => (await runSft({ ...baseInput(), config: { ...small, seed } })).model.values();
    const a = await run(7);
    const b = await run(7);
    const c = await run(8);
    for (const [name, v] of a) expect(b.get(name)).toEqual(v);
    expect(c.get("query_proj.weight")).not.toEqual(a.get("query_proj.weight"));
  });

  it("scales a parameter group's learning rate by optim.groupLr, and refuses an unknown group", async () => {
    // One step (every training query in one batch) from the same init: Adam's first step moves each
    // weight by lr·ĝ/(|ĝ| + eps), so a group at 10× moves 10× as far and every other group alike.
    const oneStep = (groupLr: Record<string, number>) =>
      config({
        model: {
          hidden: 16,
          layers: 1,
          dropout: 0,
          attnDropout: 0,
          stateUpdate: "gate",
          prior: "cosine",
          features: [],
        },
        optim: { epochs: 1, batchQueries: 240, lr: 1e-3, weightDecay: 0, schedule: { kind: "constant" }, groupLr },
      });
    const init = initParams(SelectorConfigSchema.parse({ ...oneStep({}).model, d: 12, shots: 2 }), 3);
    const run = async (groupLr: Record<string, number>) =>
      (await runSft({ ...baseInput(), config: oneStep(groupLr) })).model.values();
    const plain = await run({});
    const scaled = await run({ prior: 10 });
    const moved = (v: Map<string, Float64Array>) => v.get("prior_weight")![0] - init.get("prior_weight")![0];
    expect(Math.abs(moved(plain))).toBeGreaterThan(1e-4);
    expect(moved(scaled)).toBeCloseTo(10 * moved(plain), 5); // float32 weights
    expect(scaled.get("query_proj.weight")).toEqual(plain.get("query_proj.weight"));
    await expect(run({ nope: 2 })).rejects.toThrow(/unknown parameter group\(s\): nope/);
  });

  /** Learns nothing (lr 1e-9), so no epoch after the first improves by 0.5: stops after epoch 3 of 30. */
  const stopsEarly = () =>
    config({
      optim: {
        epochs: 30,
        batchQueries: 32,
        lr: 1e-9,
        earlyStopping: { metric: "valTop1", mode: "max", patience: 2, minDelta: 0.5 },
      },
    });

  it("stops early when the watched metric stops improving", async () => {
    const cfg = stopsEarly();
    const result = await runSft({ ...baseInput(), config: cfg });
    expect(result.stoppedEarly).toBe(true);
    expect(result.epochsRun).toBe(3);
    expect(result.bestEpoch).toBe(0);
  });

  it("resumed from the state it saved when it stopped early, trains nothing and reports the same result", async () => {
    const cfg = stopsEarly();
    const dir = mkdtempSync(join(tmpdir(), "lever-sft-stopped-"));
    const { model: _model, ...stopped } = await runSft({ ...baseInput(), config: cfg, checkpointDir: dir });
    const epochs: number[] = [];
    const { model: _again, ...again } = await runSft({
      ...baseInput(),
      config: cfg,
      checkpointDir: dir,
      resume: loadTrainState(join(dir, STATE_FILE)),
      onEpoch: (info) => epochs.push(info.epoch),
    });
    expect(epochs).toEqual([]);
    expect(again).toEqual(stopped);
    expect(again.epochsRun).toBe(3);
  });

  it("validation agreement of a model equals a direct count over greedy decodes", async () => {
    const { groups } = worldGroups({ weighting: "uniform", missing: "error" });
    const r = await runSft({ ...baseInput(), config: config({ optim: { epochs: 1 } }) });
    const m1 = sftValidation(r.model, groups.slice(0, 10), world.sources, 0, 3);
    const m2 = sftValidation(r.model, groups.slice(0, 10), world.sources, 0, 10);
    expect(m1.valTop1).toBeCloseTo(m2.valTop1, 12);
    expect(m1.valLoss).toBeCloseTo(m2.valLoss, 5);
  });
});

describe("SFT resume", () => {
  it("continuing from the state saved after epoch 2 gives the same weights and history as an uninterrupted run", async () => {
    const cfg = config({ optim: { epochs: 4, batchQueries: 32, lr: 5e-3 } });
    const full = await runSft({ ...baseInput(), config: cfg });
    const dir = mkdtempSync(join(tmpdir(), "lever-sft-resume-"));
    await expect(
      runSft({
        ...baseInput(),
        config: cfg,
        checkpointDir: dir,
        onEpoch: (info) => {
          if (info.epoch === 1) throw new Error("simulated crash");
        },
      }),
    ).rejects.toThrow(/simulated crash/);
    const state = loadTrainState(join(dir, STATE_FILE));
    expect(state.loop.nextEpoch).toBe(2);
    const resumed = await runSft({ ...baseInput(), config: cfg, checkpointDir: dir, resume: state });
    for (const [name, v] of full.model.values()) expect(resumed.model.values().get(name)).toEqual(v);
    expect(resumed.history).toEqual(full.history);
    expect(resumed.checkpoints.map((p) => p.split("/").pop())).toEqual(
      [1, 2, 3, 4].map((e) => `epoch-00${e}.safetensors`),
    );
  });
});
