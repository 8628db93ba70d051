import { describe, expect, it } from "vitest";
import { TrainingProgress } from "../../src/train/progress.js";

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return { isTTY, write: (t: string) => chunks.push(t), chunks };
}

const step = (batch: number) => ({
  epoch: 0,
  step: batch,
  totalSteps: 4,
  batch,
  batches: 2,
  metrics: { loss: 1.5, lr: 1e-4 },
});

describe("training progress", () => {
  it("writes only one line per epoch when stderr is not a terminal", () => {
    const out = sink(false);
    const p = new TrainingProgress("sft", 2, out);
    p.step(step(0));
    p.step(step(1));
    p.epoch({ epoch: 0, metrics: { trainLoss: 1.25, valTop1: 0.5 }, improved: true, bestEpoch: 0 });
    expect(out.chunks).toEqual(["sft epoch 1/2  trainLoss 1.2500  valTop1 0.5000  *best\n"]);
  });

  it("redraws a bar with step, loss and lr on a terminal, then clears it for the epoch line", () => {
    const out = sink(true);
    const p = new TrainingProgress("sft", 2, out);
    p.step(step(1));
    expect(out.chunks[0]).toBe("\rsft epoch 1/2 [########################] 2/2 loss 1.5000 lr 1.00e-4");
    p.epoch({ epoch: 0, metrics: { trainLoss: 1 }, improved: false, bestEpoch: 0 });
    expect(out.chunks[1]).toBe("\r\x1b[Ksft epoch 1/2  trainLoss 1\n");
  });
});
