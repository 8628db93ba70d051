import { describe, expect, it } from "vitest";
import { sequenceLogProbs, stepLogProbs, type TeacherForced } from "../../../src/selector/model.js";
import { noGrad, Tensor } from "../../../src/tensor/tensor.js";
import {
  KL_ESTIMATORS,
  type PolicyLossConfig,
  type PolicyLossInputs,
  PolicyLossSchema,
  policyLoss,
  stepEntropy,
} from "../../../src/train/objective/policy-loss.js";
import { Rng } from "../../../src/util/rng.js";
import { gradCheck } from "../../tensor/gradcheck.js";
import { fixtureLabels, freeLogits, S, smallSelector, WEIGHTS } from "../rl-fixtures.js";

const LN2 = Math.LN2;
const cfg = (over: Partial<PolicyLossConfig> = {}) => PolicyLossSchema.parse(over);

/**
 * Hand case: 6 rows × 2 steps, row 5 padding (garbage everywhere). Per-step ratios, advantages and
 * weights are chosen so that every clipping case occurs; logp is arbitrary and old = logp − ln(ratio).
 */
const RATIOS = [
  [1.1, 1.5], // A > 0: in band, then clipped high
  [0.5, 1.5], // A < 0: clipped low, then unclipped (pessimistic r·A)
  [0.5, 0.9], // A > 0: unclipped below the band, in band
  [1.0, 0.7], // A < 0: in band, clipped low
  [2, 3], // A = 0
];
const ADV = [1, -1, 3, -0.5, 0, Number.NaN];
const W = [1, 1, 1, 2, 1, 0];
const LOGP = [-0.3, -1.2, -2.0, -0.7, -1.1, -0.4, -0.9, -1.6, -0.2, -2.5, -0.8, -0.6];
/** δ = ref − logp per step. */
const DELTA = [
  [LN2, 0],
  [0, -LN2],
  [0, 0],
  [LN2, LN2],
  [0, 0],
];

function handInputs(rows = 6): PolicyLossInputs {
  const old = new Float64Array(rows * 2).fill(Number.NaN);
  const ref = new Float64Array(rows * 2).fill(Number.NaN);
  RATIOS.forEach((rs, r) => {
    rs.forEach((v, t) => {
      old[r * 2 + t] = LOGP[r * 2 + t] - Math.log(v);
      ref[r * 2 + t] = LOGP[r * 2 + t] + DELTA[r][t];
    });
  });
  return {
    logp: Tensor.param(Float64Array.from(LOGP.slice(0, rows * 2)), [rows, 2]),
    oldLogp: old,
    refLogp: ref,
    advantages: ADV.slice(0, rows),
    weights: W.slice(0, rows),
  };
}

function gradOf(inputs: PolicyLossInputs, c: PolicyLossConfig, beta: number): number[] {
  inputs.logp.grad = null;
  policyLoss(inputs, c, beta).loss.backward();
  return Array.from(inputs.logp.grad!);
}

describe("GRPO surrogate by hand", () => {
  it("has the documented defaults", () => {
    expect(cfg()).toEqual({ ratioLevel: "step", epsLow: 0.2, epsHigh: 0.2, klEstimator: "k3" });
  });

  it("step ratios: −Σ w·mean_t min(r·A, clip(r)·A)/Σ w, with clip fractions on both sides", () => {
    const { loss, diagnostics: d } = policyLoss(handInputs(), cfg(), 0);
    // row means: 1.15, −1.15, 2.1, −0.45 (weight 2), 0 → −(1.15 − 1.15 + 2.1 − 0.9)/6
    expect(loss.item()).toBeCloseTo(-1.2 / 6, 12);
    expect(d.policyLoss).toBeCloseTo(-0.2, 12);
    expect(d.ratioMean).toBeCloseTo(12.7 / 10, 12);
    expect(d.ratioMin).toBeCloseTo(0.5, 12);
    expect(d.ratioMax).toBeCloseTo(3, 12);
    expect(d.clipLow).toBeCloseTo(2 / 10, 12); // rows 1 and 3
    expect(d.clipHigh).toBeCloseTo(1 / 10, 12); // row 0 (row 4 has A = 0)
    expect(d.advMean).toBeCloseTo(2.5 / 5, 12);
    expect(d.advStd).toBeCloseTo(Math.sqrt((1 + 1 + 9 + 0.25) / 5 - 0.25), 12);
    expect(d.advMaxAbs).toBe(3);
  });

  it("step ratios: gradient A·r·w/(S·Σw) where the unclipped term is the minimum, 0 where clipped", () => {
    const g = gradOf(handInputs(), cfg(), 0);
    const want = [-1.1 / 12, 0, 0, 1.5 / 12, -1.5 / 12, -2.7 / 12, 1 / 12, 0, 0, 0, 0, 0];
    want.forEach((v, i) => {
      expect(g[i]).toBeCloseTo(v, 12);
    });
  });

  it("clip-higher widens only the upper side", () => {
    const { loss, diagnostics: d } = policyLoss(handInputs(), cfg({ epsHigh: 0.28 }), 0);
    // row 0 step 1 becomes min(1.5, 1.28) = 1.28: row mean 1.19
    expect(loss.item()).toBeCloseTo(-(1.19 - 1.15 + 2.1 - 0.9) / 6, 12);
    expect(d.clipHigh).toBeCloseTo(1 / 10, 12);
    const low = policyLoss(handInputs(), cfg({ epsLow: 0.6 }), 0);
    // 1 − 0.6 = 0.4: nothing is clipped low any more; row 1 step 0 = −0.5, row 3 step 1 = −0.35
    expect(low.loss.item()).toBeCloseTo(-(1.15 - 1.0 + 2.1 + 2 * -0.425) / 6, 12);
    expect(low.diagnostics.clipLow).toBe(0);
  });

  it("sequence ratios: r = exp(Σ_t logp − Σ_t old), one term per row", () => {
    const c = cfg({ ratioLevel: "sequence" });
    const { loss, diagnostics: d } = policyLoss(handInputs(), c, 0);
    // r = 1.65, 0.75, 0.45, 0.7, 6 → terms 1.2, −0.8, 1.35, −0.4 (×2), 0
    expect(loss.item()).toBeCloseTo(-(1.2 - 0.8 + 1.35 - 0.8) / 6, 12);
    expect(d.ratioMean).toBeCloseTo(9.55 / 5, 12);
    expect(d.ratioMax).toBeCloseTo(6, 12);
    expect(d.clipLow).toBeCloseTo(2 / 5, 12);
    expect(d.clipHigh).toBeCloseTo(1 / 5, 12);
    // only row 2 is unclipped with A ≠ 0: both its steps get −w·A·r/Σw = −3·0.45/6
    const g = gradOf(handInputs(), c, 0);
    const want = [0, 0, 0, 0, -0.225, -0.225, 0, 0, 0, 0, 0, 0];
    want.forEach((v, i) => {
      expect(g[i]).toBeCloseTo(v, 12);
    });
  });

  it("ignores padding rows entirely (NaN inputs there change nothing)", () => {
    for (const ratioLevel of ["step", "sequence"] as const) {
      const c = cfg({ ratioLevel });
      const padded = policyLoss(handInputs(6), c, 0.1);
      const plain = policyLoss(handInputs(5), c, 0.1);
      expect(padded.loss.item()).toBe(plain.loss.item());
      expect(padded.diagnostics).toEqual(plain.diagnostics);
      const g6 = gradOf(handInputs(6), c, 0.1);
      expect(g6.slice(0, 10)).toEqual(gradOf(handInputs(5), c, 0.1));
      expect(g6.slice(10).map((v) => v + 0)).toEqual([0, 0]);
    }
  });
});

describe("KL estimators by hand", () => {
  // per-row step means of k(δ), weighted (1, 1, 1, 2, 1)/6
  const want = {
    k1: (-LN2 / 2 + LN2 / 2 + 2 * -LN2) / 6,
    k2: ((LN2 * LN2) / 4 + (LN2 * LN2) / 4 + (2 * (LN2 * LN2)) / 2) / 6,
    k3: ((1 - LN2) / 2 + (LN2 - 0.5) / 2 + 2 * (1 - LN2)) / 6,
  };

  it.each(KL_ESTIMATORS)("%s, added as β·KL", (klEstimator) => {
    const c = cfg({ klEstimator });
    const { loss, diagnostics: d } = policyLoss(handInputs(), c, 0.3);
    expect(d.kl).toBeCloseTo(want[klEstimator], 12);
    expect(d.klTerm).toBeCloseTo(0.3 * want[klEstimator], 12);
    expect(loss.item()).toBeCloseTo(-0.2 + 0.3 * want[klEstimator], 12);
    // The KL's share of the gradient (w.r.t. logp), checked against autograd: ∇L(β) − ∇L(0) is ∇β·KL.
    const gPolicy = gradOf(handInputs(), c, 0);
    const gKl = gradOf(handInputs(), c, 0.3).map((v, i) => v - gPolicy[i]);
    const norm = (g: number[]) => Math.hypot(...g);
    expect(d.klShare).toBeCloseTo(norm(gKl) / (norm(gPolicy) + norm(gKl)), 10);
  });

  it("on-policy (ratio 1, group advantages summing to 0) the surrogate's value is 0 but its gradient is not: klShare stays small", () => {
    // One group of 4 rows × 2 steps at ratio 1, A = ±1; the reference is slightly off (δ = 0.05).
    const logp = [-0.5, -1.0, -0.7, -1.3, -0.9, -0.4, -1.1, -0.6];
    const inputs: PolicyLossInputs = {
      logp: Tensor.param(Float64Array.from(logp), [4, 2]),
      oldLogp: logp,
      refLogp: logp.map((v) => v + 0.05),
      advantages: [1, -1, 1, -1],
      weights: [1, 1, 1, 1],
    };
    const { diagnostics: d } = policyLoss(inputs, cfg(), 0.04);
    expect(d.policyLoss).toBeCloseTo(0, 12);
    // Every step's surrogate gradient has magnitude |A|·r/(4·2) = 1/8 and every KL gradient
    // 0.04·|1 − e^0.05|/8, so the two L2 norms stand in the ratio 1 : 0.04·(e^0.05 − 1).
    const kl = 0.04 * (Math.exp(0.05) - 1);
    expect(d.klShare).toBeCloseTo(kl / (1 + kl), 12);
    expect(d.klShare).toBeLessThan(0.01);
  });

  it("k1 adds β·w/(S·Σw) to each step's gradient, k2 −β·δ·w/(S·Σw), k3 β·(1 − e^δ)·w/(S·Σw)", () => {
    const base = gradOf(handInputs(), cfg(), 0);
    const dkl = {
      k1: (_d: number) => 1,
      k2: (d: number) => -d,
      k3: (d: number) => 1 - Math.exp(d),
    };
    for (const est of KL_ESTIMATORS) {
      const g = gradOf(handInputs(), cfg({ klEstimator: est }), 0.3);
      DELTA.forEach((ds, r) => {
        ds.forEach((d, t) => {
          const i = r * 2 + t;
          expect(g[i] - base[i]).toBeCloseTo((0.3 * dkl[est](d) * W[r]) / (2 * 6), 12);
        });
      });
    }
  });

  it("β = 0 removes the term: gradient identical to the pure surrogate, KL still reported", () => {
    for (const ratioLevel of ["step", "sequence"] as const) {
      const c = cfg({ ratioLevel });
      const withRef = policyLoss(handInputs(), c, 0);
      const noRef = policyLoss({ ...handInputs(), refLogp: null }, c, 0);
      expect(withRef.loss.item()).toBe(noRef.loss.item());
      expect(withRef.diagnostics.kl).toBeCloseTo(want.k3, 12);
      expect(withRef.diagnostics.klTerm).toBe(0);
      expect(withRef.diagnostics.klShare).toBe(0);
      expect(noRef.diagnostics.kl).toBeNull();
      const pure = gradOf({ ...handInputs(), refLogp: null }, c, 0);
      expect(gradOf(handInputs(), c, 0)).toEqual(pure);
      expect(gradOf(handInputs(), c, 1e-3)).not.toEqual(pure);
    }
    expect(() => policyLoss({ ...handInputs(), refLogp: null }, cfg(), 0.1)).toThrow(/reference/);
  });
});

/** Ratios per row and step away from the clip kinks 0.8 and 1.2, also as products (sequence level). */
const FD_RATIOS = [
  [1.05, 1.02, 0.97], // product 1.04
  [1.3, 1.1, 1.05], // 1.50, A < 0: unclipped
  [0.7, 0.9, 0.95], // 0.60, A > 0: unclipped
  [0.7, 1.1, 0.9], // 0.69, A < 0: clipped low
  [0.95, 0.6, 1.3], // 0.74, A > 0: unclipped; step 2 clipped high
  [1, 1, 1], // padding
];
const FD_ADV = [1.2, -0.7, 0.9, -1.5, 0.4, 0];

function fdInputs(logp: Tensor, logp0: ArrayLike<number>, seed: number): PolicyLossInputs {
  const rng = new Rng(seed);
  const old = Float64Array.from(logp0, (v, i) => v - Math.log(FD_RATIOS[Math.floor(i / S)][i % S]));
  const ref = Float64Array.from(logp0, (v) => v + rng.next() - 0.5);
  return { logp, oldLogp: old, refLogp: ref, advantages: FD_ADV, weights: WEIGHTS };
}

describe("per-step advantages (prefix credit)", () => {
  it("A_{i,t} replaces A_i step by step: by hand, and equal to per-row advantages when the steps agree", () => {
    // Steps get different advantages: row 0 (ratios 1.1, 1.5) with A = (1, −1): min(1.1, 1.1)=1.1,
    // then min(−1.5, −1.2)=−1.5; row 1 (0.5, 1.5) with A = (2, 0): min(1.0, 1.6)=1.0, then 0.
    const perStep = [1, -1, 2, 0, 3, 3, -0.5, -0.5, 0, 0, Number.NaN, Number.NaN];
    const inputs = { ...handInputs(), advantages: perStep };
    const { loss, diagnostics: d } = policyLoss(inputs, cfg(), 0);
    // row means: (1.1 − 1.5)/2 = −0.2, (1.0 + 0)/2 = 0.5, 2.1, −0.45 (weight 2), 0 → −(−0.2 + 0.5 + 2.1 − 0.9)/6
    expect(loss.item()).toBeCloseTo(-1.5 / 6, 12);
    expect(d.advMaxAbs).toBe(3);
    // Clip counts follow each step's own sign: only row 3 step 1 (r = 0.7, A < 0) is clipped low; row 0
    // step 1 (r = 1.5) has A = −1 now, so nothing is clipped high (per-row advantages: 2 low, 1 high).
    expect(d.clipLow).toBeCloseTo(1 / 10, 12);
    expect(d.clipHigh).toBe(0);
    // The KL's gradient share, checked against autograd as for per-row advantages.
    const withKl = policyLoss(inputs, cfg(), 0.3).diagnostics;
    const gPolicy = gradOf(inputs, cfg(), 0);
    const gKl = gradOf(inputs, cfg(), 0.3).map((v, i) => v - gPolicy[i]);
    const norm = (g: number[]) => Math.hypot(...g);
    expect(withKl.klShare).toBeCloseTo(norm(gKl) / (norm(gPolicy) + norm(gKl)), 10);
    // row 0 step 1 (r = 1.5 > 1.2 with A < 0: the unclipped pessimistic term) has gradient −w·A·r/(S·Σw)
    expect(gradOf(inputs, cfg(), 0)[1]).toBeCloseTo(-(1 * -1 * 1.5) / (2 * 6), 12);
    const same = ADV.flatMap((a) => [a, a]);
    const a = policyLoss({ ...handInputs(), advantages: same }, cfg(), 0.1);
    const b = policyLoss(handInputs(), cfg(), 0.1);
    expect(a.loss.item()).toBeCloseTo(b.loss.item(), 14);
    expect(gradOf({ ...handInputs(), advantages: same }, cfg(), 0.1)).toEqual(gradOf(handInputs(), cfg(), 0.1));
  });

  it("need step ratios", () => {
    const inputs = { ...handInputs(), advantages: new Array(12).fill(1) };
    expect(() => policyLoss(inputs, cfg({ ratioLevel: "sequence" }), 0)).toThrow(
      /per-step advantages need step ratios/,
    );
  });

  it("pass finite differences through a PointerSelector", () => {
    const labels = fixtureLabels(3);
    const { model, tf } = smallSelector(8);
    const logp0 = noGrad(() => stepLogProbs(tf(labels), labels)).data;
    const rng = new Rng(11);
    const advantages = Array.from({ length: logp0.length }, () => 2 * rng.next() - 1);
    const fn = () => {
      const logp = stepLogProbs(tf(labels), labels);
      return policyLoss({ ...fdInputs(logp, logp0, 6), advantages }, cfg(), 0.3).loss;
    };
    gradCheck(fn, model.parameters());
  });
});

describe("GRPO loss gradients against finite differences (float64, β > 0)", () => {
  const labels = fixtureLabels(3);

  describe.each(["step", "sequence"] as const)("%s ratios", (ratioLevel) => {
    it.each(KL_ESTIMATORS)("free logits, %s", (klEstimator) => {
      const { params, tf } = freeLogits(labels, 40);
      const logp0 = noGrad(() => stepLogProbs(tf(params), labels)).data;
      const fn = (...scores: Tensor[]) => {
        const logp = stepLogProbs(tf(scores), labels);
        return policyLoss(fdInputs(logp, logp0, 5), cfg({ ratioLevel, klEstimator }), 0.3).loss;
      };
      gradCheck(fn, params);
    });

    it.each(KL_ESTIMATORS)("PointerSelector parameters through teacherForce, %s", (klEstimator) => {
      const { model, tf } = smallSelector(8);
      const logp0 = noGrad(() => stepLogProbs(tf(labels), labels)).data;
      const fn = () => {
        const logp = stepLogProbs(tf(labels), labels);
        return policyLoss(fdInputs(logp, logp0, 6), cfg({ ratioLevel, klEstimator }), 0.3).loss;
      };
      gradCheck(fn, model.parameters());
    });
  });
});

describe("per-step log-probabilities and entropy", () => {
  /** Two rows, K = 3, slot 2 padding in both; step 1 has one position left per row. */
  const masks = [new Uint8Array([0, 0, 1, 0, 0, 1]), new Uint8Array([1, 0, 1, 0, 1, 1])];
  const tf: TeacherForced = {
    G: 1,
    scores: [
      Tensor.from(new Float64Array([0, 0, 5, 0, LN2, 7]), [2, 3]),
      Tensor.from(new Float64Array([1, 2, 3, 4, 5, 6]), [2, 3]),
    ],
    masks,
  };
  const labels = new Int32Array([0, 1, 1, 0]);

  it("stepLogProbs gives log p of each label per step; sequenceLogProbs is its row sum", () => {
    const lp = stepLogProbs(tf, labels);
    expect(lp.shape).toEqual([2, 2]);
    expect(lp.data[0]).toBeCloseTo(-LN2, 12);
    expect(lp.data[1]).toBeCloseTo(0, 12);
    expect(lp.data[2]).toBeCloseTo(Math.log(2 / 3), 12);
    expect(lp.data[3]).toBeCloseTo(0, 12);
    const seq = sequenceLogProbs(tf, labels);
    expect(Array.from(seq.data)).toEqual([lp.data[0] + lp.data[1], lp.data[2] + lp.data[3]]);
  });

  it("stepEntropy: −Σ p log p over available positions, mean over (weighted) rows", () => {
    const h1 = Math.log(3) - (2 / 3) * LN2; // p = (1/3, 2/3)
    const h = stepEntropy(tf);
    expect(h[0]).toBeCloseTo((LN2 + h1) / 2, 12);
    expect(h[1]).toBe(0);
    expect(stepEntropy(tf, [1, 0])[0]).toBeCloseTo(LN2, 12);
    expect(stepEntropy(tf, [1, 3])[0]).toBeCloseTo((LN2 + 3 * h1) / 4, 12);
  });

  it("stepEntropy of a real selector is at most log(available positions)", () => {
    const { tf: run } = smallSelector(2);
    const lab = fixtureLabels(1);
    const h = stepEntropy(run(lab), WEIGHTS);
    expect(h).toHaveLength(S);
    // query 0 has 5 candidates, query 1 has 4: at step t at most log(5 − t)
    h.forEach((v, t) => {
      expect(v).toBeGreaterThan(0);
      expect(v).toBeLessThanOrEqual(Math.log(5 - t) + 1e-12);
    });
  });
});
