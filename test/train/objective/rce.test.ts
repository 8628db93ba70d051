import { describe, expect, it } from "vitest";
import { sequenceLogProbs } from "../../../src/selector/model.js";
import { noGrad, Tensor } from "../../../src/tensor/tensor.js";
import { rceLoss, rceTemperature, rceValidationLoss, TemperatureSchema } from "../../../src/train/objective/rce.js";
import { gradCheck } from "../../tensor/gradcheck.js";
import { fixtureLabels, freeLogits, G, REAL, smallSelector } from "../rl-fixtures.js";

const LN2 = Math.LN2;
const LN3 = Math.log(3);

/** 2 queries × 3 rows; row 5 is padding with a reward that would dominate if it were counted. */
const SEQ = [-1, -2, -3, -0.5, -4, -0.1];
const REWARDS = [0, LN2, LN3, 0, 0, 100];
const real = [1, 1, 1, 1, 1, 0];
const seqParam = () => Tensor.param(Float64Array.from(SEQ), [6]);

describe("RCE loss by hand", () => {
  it("weights each query's CE by softmax(R/τ) and averages over queries", () => {
    // query 0: w ∝ (1, 2, 3) → (1·1 + 2·2 + 3·3)/6 = 14/6; query 1: w = (½, ½) → (0.5 + 4)/2
    const want = (14 / 6 + 2.25) / 2;
    const x = seqParam();
    const loss = rceLoss(x, REWARDS, real, 3, { temperature: 1 });
    expect(loss.item()).toBeCloseTo(want, 12);
    loss.backward();
    // ∂L/∂seqLogp_r = −w_r / B
    [-1 / 12, -2 / 12, -3 / 12, -1 / 4, -1 / 4, 0].forEach((v, i) => {
      expect(x.grad![i]).toBeCloseTo(v, 12);
    });
    // the same weights from doubled rewards at τ = 2
    const doubled = REWARDS.map((r) => 2 * r);
    expect(rceLoss(seqParam(), doubled, real, 3, { temperature: 2 }).item()).toBeCloseTo(want, 12);
    expect(rceValidationLoss(seqParam(), REWARDS, real, 3)).toBeCloseTo(want, 12);
  });

  it("approaches the best trajectory's CE as τ → 0 and the plain mean as τ → ∞", () => {
    expect(rceLoss(seqParam(), REWARDS, real, 3, { temperature: 1e-3 }).item()).toBeCloseTo((3 + 2.25) / 2, 9);
    expect(rceLoss(seqParam(), REWARDS, real, 3, { temperature: 1e9 }).item()).toBeCloseTo((2 + 2.25) / 2, 6);
  });

  it("bestOnly: plain CE on the highest-reward trajectory, the first one on ties", () => {
    const x = seqParam();
    const loss = rceLoss(x, REWARDS, real, 3, { temperature: 1, bestOnly: true });
    expect(loss.item()).toBeCloseTo((3 + 0.5) / 2, 12);
    loss.backward();
    expect(Array.from(x.grad!)).toEqual([0, 0, -0.5, -0.5, 0, 0]);
  });
});

describe("RCE temperature schedule", () => {
  const linear = TemperatureSchema.parse({});
  const cosine = TemperatureSchema.parse({ kind: "cosine" });

  it("defaults to linear 2 → 0.5", () => {
    expect(linear).toEqual({ start: 2, end: 0.5, kind: "linear" });
  });

  it("linear: start + (end − start)·min(1, step/(total − 1))", () => {
    expect([0, 1, 2, 3, 10].map((s) => rceTemperature(linear, s, 4))).toEqual([2, 1.5, 1, 0.5, 0.5]);
    expect(rceTemperature(linear, 0, 1)).toBe(0.5);
  });

  it("cosine: end + (start − end)·(1 + cos(π·frac))/2", () => {
    expect(rceTemperature(cosine, 0, 3)).toBe(2);
    expect(rceTemperature(cosine, 1, 3)).toBeCloseTo(1.25, 12);
    expect(rceTemperature(cosine, 2, 3)).toBeCloseTo(0.5, 12);
    // frac = 1/4: 0.5 + 1.5·(1 + √2/2)/2
    expect(rceTemperature(cosine, 1, 5)).toBeCloseTo(0.5 + 0.75 * (1 + Math.SQRT1_2), 12);
  });
});

describe("RCE gradients against finite differences (float64)", () => {
  const labels = fixtureLabels(4);
  const rewards = [1.9, 0, 1.3, 2.0, 0.6, 0];

  for (const bestOnly of [false, true]) {
    it(`free logits${bestOnly ? ", bestOnly" : ""}`, () => {
      const { params, tf } = freeLogits(labels, 70);
      gradCheck(
        (...scores) => rceLoss(sequenceLogProbs(tf(scores), labels), rewards, REAL, G, { temperature: 0.7, bestOnly }),
        params,
      );
    });

    it(`PointerSelector parameters through teacherForce${bestOnly ? ", bestOnly" : ""}`, () => {
      const { model, tf } = smallSelector(12);
      gradCheck(
        () => rceLoss(sequenceLogProbs(tf(labels), labels), rewards, REAL, G, { temperature: 0.7, bestOnly }),
        model.parameters(),
      );
    });
  }

  it("validation loss equals the τ = 1 loss of a real selector", () => {
    const { tf } = smallSelector(12);
    const seq = noGrad(() => sequenceLogProbs(tf(labels), labels));
    const direct = rceLoss(seq, rewards, REAL, G, { temperature: 1 }).item();
    expect(rceValidationLoss(seq, rewards, REAL, G)).toBe(direct);
    expect(direct).toBeGreaterThan(0);
  });
});
