import { describe, expect, it } from "vitest";
import { formatMetric, TrainingProgress } from "../../../src/train/stage/progress.js";

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
    p.epoch({ epoch: 0, metrics: { trainLoss: 1.25, valTop1: 0.5 }, history: [], improved: true, bestEpoch: 0 });
    expect(out.chunks).toEqual(["sft epoch 1/2  trainLoss 1.2500  valTop1 0.5000  *best\n"]);
  });

  it("redraws a bar with step, loss and lr on a terminal, then clears it for the epoch line", () => {
    const out = sink(true);
    const p = new TrainingProgress("sft", 2, out);
    p.step(step(1));
    expect(out.chunks[0]).toBe("\rsft epoch 1/2 [########################] 2/2 loss 1.5000 lr 1.00e-4");
    p.epoch({ epoch: 0, metrics: { trainLoss: 1 }, history: [], improved: false, bestEpoch: 0 });
    expect(out.chunks[1]).toBe("\r\x1b[Ksft epoch 1/2  trainLoss 1\n");
  });
});

describe("metric values on log lines", () => {
  it("a small learning rate in exponent form, a count whole, accuracies in % as lever eval prints them", () => {
    expect(formatMetric("lr", 3e-5)).toBe("3.00e-5");
    expect(formatMetric("lr", 0)).toBe("0");
    expect(formatMetric("rows", 160.00000000000003)).toBe("160");
    expect(formatMetric("valAccuracy", 0.5834)).toBe("58.3%");
    expect(formatMetric("valAccuracy@2", 0.6)).toBe("60.0%");
    expect(formatMetric("valAccuracyStart", 0.5)).toBe("50.0%");
    expect(formatMetric("valAccuracyGain", 0.0123)).toBe("+1.2 pts");
    expect(formatMetric("valAccuracyGain", -0.004)).toBe("-0.4 pts");
    expect(formatMetric("trainLoss", 1.23456)).toBe("1.2346");
  });

  it("the epoch line uses them", () => {
    const out = sink(false);
    new TrainingProgress("rce", 3, out).epoch({
      epoch: 1,
      metrics: { lr: 1e-4, rows: 160.00000000000003, valAccuracy: 0.583 },
      history: [],
      improved: false,
      bestEpoch: 0,
    });
    expect(out.chunks).toEqual(["rce epoch 2/3  lr 1.00e-4  rows 160  valAccuracy 58.3%\n"]);
  });
});
