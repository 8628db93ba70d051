import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HEALTH_FILE, HealthFileSchema } from "../../../src/data/health-file.js";
import { tensorboardDirOf } from "../../../src/store/tensorboard.js";
import { Workspace } from "../../../src/store/workspace.js";
import type { TrainingRunResult } from "../../../src/train/loop/run.js";
import type { HealthWarning } from "../../../src/train/objective/health.js";
import { checkpointDirOf, executeStage, type StageHooks, splitNote } from "../../../src/train/stage/lifecycle.js";
import { readEvents } from "../../helpers/tfevents-reader.js";

/** One warning per epoch; a "training" that reports `epochs` and then crashes or returns. */
const health = (epoch: number): HealthWarning[] => [
  { epoch, code: "clip-never", message: `epoch ${epoch} clipped nothing` },
];
const fakeTraining =
  (epochs: number[], crash: boolean) =>
  async (_dir: string, hooks: StageHooks): Promise<TrainingRunResult> => {
    for (const epoch of epochs)
      hooks.onEpoch({ epoch, metrics: { loss: 1 }, history: [], improved: false, bestEpoch: 0, checkpoint: null });
    if (crash) throw new Error("simulated crash");
    return { checkpoints: [], bestCheckpoint: null, epochsRun: epochs.length } as unknown as TrainingRunResult;
  };

describe("executeStage", () => {
  it("prints a health warning the first time its check fires, stores it for every epoch", async () => {
    const ws = Workspace.open(mkdtempSync(join(tmpdir(), "lever-stage-")));
    try {
      const runId = ws.createRun({ kind: "grpo", config: {}, seed: 1 });
      const lines: string[] = [];
      const progress = { isTTY: false, write: (text: string) => lines.push(text) };
      const opts = { stage: "grpo", runId, epochs: 3, inputs: [], progress, health };
      const done = await executeStage(ws, opts, fakeTraining([0, 1, 2], false));
      expect(done.warnings.map((w) => w.epoch)).toEqual([0, 1, 2]);
      expect(lines.filter((l) => l.startsWith("warning:"))).toEqual([
        `warning: epoch 1: epoch 0 clipped nothing (not repeated for later epochs; ${HEALTH_FILE} lists every epoch)\n`,
      ]);
    } finally {
      ws.close();
    }
  });

  it("a resumed run keeps the health warnings its earlier epochs stored; an epoch run again replaces its own", async () => {
    const ws = Workspace.open(mkdtempSync(join(tmpdir(), "lever-stage-")));
    try {
      const runId = ws.createRun({ kind: "grpo", config: {}, seed: 1 });
      const opts = { stage: "grpo", runId, epochs: 3, inputs: [], progress: null, health };
      await expect(executeStage(ws, opts, fakeTraining([0, 1], true))).rejects.toThrow("simulated crash");
      const done = await executeStage(ws, opts, fakeTraining([1, 2], false)); // resumes at epoch 1
      expect(done.warnings.map((w) => w.epoch)).toEqual([0, 1, 2]);
      const file = HealthFileSchema.parse(JSON.parse(readFileSync(join(done.checkpointDir, HEALTH_FILE), "utf8")));
      expect(file.warnings).toEqual(done.warnings);
    } finally {
      ws.close();
    }
  });

  it("an unreadable earlier health file is said, not silently dropped, and replaced by the epochs that run now", async () => {
    const ws = Workspace.open(mkdtempSync(join(tmpdir(), "lever-stage-")));
    try {
      const runId = ws.createRun({ kind: "grpo", config: {}, seed: 1 });
      const notes: string[] = [];
      const opts = {
        stage: "grpo",
        runId,
        epochs: 3,
        inputs: [],
        progress: null,
        health,
        note: (t: string) => notes.push(t),
      };
      await expect(executeStage(ws, opts, fakeTraining([0, 1], true))).rejects.toThrow("simulated crash");
      writeFileSync(join(checkpointDirOf(ws, runId, "grpo"), HEALTH_FILE), "{ not json");
      const done = await executeStage(ws, opts, fakeTraining([1, 2], false));
      expect(notes.some((n) => n.includes(HEALTH_FILE) && n.includes("unreadable"))).toBe(true);
      expect(done.warnings.map((w) => w.epoch)).toEqual([1, 2]);
    } finally {
      ws.close();
    }
  });
});

describe("executeStage's TensorBoard events", () => {
  it("writes every step's and epoch's metric to <workspace>/tensorboard/<run>/ as it logs them", async () => {
    const ws = Workspace.open(mkdtempSync(join(tmpdir(), "lever-stage-")));
    try {
      const runId = ws.createRun({ kind: "sft", config: {}, seed: 1 });
      const train = async (_dir: string, hooks: StageHooks): Promise<TrainingRunResult> => {
        for (const step of [0, 1])
          hooks.onStep({
            epoch: 0,
            step,
            totalSteps: 2,
            batch: step,
            batches: 2,
            metrics: { loss: 2 - step, lr: 0.5 },
          });
        hooks.onEpoch({
          epoch: 0,
          metrics: { valLoss: 0.75 },
          improved: true,
          bestEpoch: 0,
          checkpoint: null,
          history: [{ valLoss: 0.75 }],
        });
        return { checkpoints: [], bestCheckpoint: null, epochsRun: 1 } as unknown as TrainingRunResult;
      };
      await executeStage(ws, { stage: "sft", runId, epochs: 1, inputs: [], progress: null }, train);
      const dir = tensorboardDirOf(ws.dir, runId);
      const files = readdirSync(dir);
      expect(files).toHaveLength(1);
      const scalars = readEvents(readFileSync(join(dir, files[0]))).flatMap((e) =>
        e.scalars.map((s) => [s.tag, e.step, s.value]),
      );
      expect(scalars).toEqual([
        ["sft/loss", 0, 2],
        ["sft/lr", 0, 0.5],
        ["sft/loss", 1, 1],
        ["sft/lr", 1, 0.5],
        ["sft/epoch.valLoss", 0, 0.75],
      ]);
      // The same rows as the workspace's metrics table.
      expect(ws.getMetrics(runId).map((m) => [`${m.stage}/${m.name}`, m.step ?? m.epoch, m.value])).toEqual(scalars);
    } finally {
      ws.close();
    }
  });
});

describe("a resumed run's metrics", () => {
  it("are stored and shown in TensorBoard once per step: what a crashed process logged of the epoch it resumes at goes", async () => {
    const ws = Workspace.open(mkdtempSync(join(tmpdir(), "lever-stage-")));
    try {
      const runId = ws.createRun({ kind: "sft", config: {}, seed: 1 });
      /** Epochs of two steps each (global steps 2e, 2e+1), an epoch metric at each epoch's end; crashes mid-epoch `crashAt`. */
      const training =
        (epochs: number[], crashAt?: number) =>
        async (_dir: string, hooks: StageHooks): Promise<TrainingRunResult> => {
          for (const epoch of epochs) {
            for (const batch of [0, 1]) {
              const step = 2 * epoch + batch;
              hooks.onStep({ epoch, step, totalSteps: 6, batch, batches: 2, metrics: { loss: 10 * epoch + batch } });
              if (epoch === crashAt) throw new Error("simulated crash");
            }
            const metrics = { valLoss: epoch };
            hooks.onEpoch({ epoch, metrics, improved: true, bestEpoch: epoch, checkpoint: null, history: [metrics] });
          }
          return { checkpoints: [], bestCheckpoint: null, epochsRun: epochs.length } as unknown as TrainingRunResult;
        };
      const opts = { stage: "sft", runId, epochs: 3, inputs: [], progress: null };
      await expect(executeStage(ws, opts, training([0, 1], 1))).rejects.toThrow("simulated crash");
      await executeStage(ws, opts, training([1, 2])); // resumes at epoch 1 (the state saved after epoch 0)
      const expected = [0, 1, 2].flatMap((e) => [
        ["sft/loss", 2 * e, 10 * e],
        ["sft/loss", 2 * e + 1, 10 * e + 1],
        ["sft/epoch.valLoss", e, e],
      ]);
      expect(ws.getMetrics(runId).map((m) => [`${m.stage}/${m.name}`, m.step ?? m.epoch, m.value])).toEqual(expected);
      const dir = tensorboardDirOf(ws.dir, runId);
      const events = readdirSync(dir).flatMap((file) => readEvents(readFileSync(join(dir, file))));
      expect(events.flatMap((e) => e.scalars.map((s) => [s.tag, e.step, s.value]))).toEqual(expected);
    } finally {
      ws.close();
    }
  });
});

describe("the validation split note", () => {
  it("says how many queries validate, and when some were left out before the split, that it differs", () => {
    expect(splitNote("rce", { train: 90, val: 10 }, 42)).toBe(
      "rce validates on 10 of 100 queries (held out by image, seed 42)",
    );
    expect(splitNote("grpo", { train: 72, val: 8 }, 42, { count: 20, why: "with all-equal rewards" })).toBe(
      "grpo validates on 8 of 100 queries (held out by image, seed 42); 20 queries with all-equal rewards are left out of training and validation, so this split differs from that of another stage on the same data",
    );
  });
});
