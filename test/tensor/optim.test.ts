import { describe, expect, it } from "vitest";
import { AdamW, clipGradNorm, gradNorm, Tensor } from "../../src/tensor/index.js";

const param = (values: number[]) => Tensor.param(Float64Array.from(values), [values.length]);

describe("AdamW", () => {
  it("matches PyTorch AdamW over two steps (decoupled decay, bias correction; numpy reference)", () => {
    const p = param([1, -2]);
    const opt = new AdamW([{ params: [p], lr: 0.1, weightDecay: 0.01 }]);
    p.grad = Float64Array.from([0.5, -0.1]);
    opt.step();
    // Step 1 by hand: p·(1 − lr·wd) − lr·sign(g)·(1 − ~eps) since m̂ = g and √v̂ = |g|.
    expect(p.data[0]).toBeCloseTo(1 * 0.999 - 0.1 * (0.5 / (0.5 + 1e-8)), 14);
    expect(p.data[1]).toBeCloseTo(-2 * 0.999 + 0.1 * (0.1 / (0.1 + 1e-8)), 14);
    p.grad = Float64Array.from([-0.25, 0.3]);
    opt.step();
    expect(p.data[0]).toBeCloseTo(0.8714672987058463, 14);
    expect(p.data[1]).toBeCloseTo(-1.9455209911100655, 14);
  });

  it("skips frozen groups and params without grad, and uses per-group lr / weight decay", () => {
    const a = param([1]);
    const b = param([1]);
    const c = param([1]);
    const opt = new AdamW([
      { params: [a], lr: 0.1, weightDecay: 0 },
      { params: [b], lr: 0.1, frozen: true },
      { params: [c], lr: 0.01, weightDecay: 0.5 },
    ]);
    a.grad = Float64Array.from([1]);
    b.grad = Float64Array.from([1]);
    opt.step();
    expect(a.data[0]).toBeCloseTo(0.9, 6);
    expect(b.data[0]).toBe(1);
    expect(c.data[0]).toBe(1); // no grad ⇒ no decay either (PyTorch skips it)
    opt.setLr(0, 0);
    opt.step();
    expect(a.data[0]).toBeCloseTo(0.9, 6);
    const buffer = a.grad;
    opt.zeroGrad(false);
    expect(a.grad).toBe(buffer);
    expect(Array.from(a.grad!)).toEqual([0]);
    opt.zeroGrad();
    expect(a.grad).toBeNull();
  });

  it("restores its state so a resumed run continues identically", () => {
    const run = (resume: boolean): number[] => {
      const p = param([0.3, -0.4]);
      let opt = new AdamW([{ params: [p], lr: 0.05 }]);
      for (let t = 0; t < 4; t++) {
        if (resume && t === 2) {
          const saved = structuredClone(opt.stateDict()); // a copy: nothing shared with the optimiser
          opt = new AdamW([{ params: [p], lr: 0.05 }]);
          opt.loadStateDict(saved);
        }
        p.grad = Float64Array.from([Math.sin(t + p.data[0]), Math.cos(t * p.data[1])]);
        opt.step();
      }
      return Array.from(p.data);
    };
    expect(run(true)).toEqual(run(false));
    const opt = new AdamW([{ params: [param([1, 2])], lr: 0.1 }]);
    const other = new AdamW([{ params: [param([1])], lr: 0.1 }]).stateDict();
    expect(() => opt.loadStateDict(other)).toThrow(/wrong size/);
  });

  it("rejects a parameter listed twice", () => {
    const p = param([1]);
    expect(
      () =>
        new AdamW([
          { params: [p], lr: 0.1 },
          { params: [p], lr: 0.2 },
        ]),
    ).toThrow(/twice/);
  });
});

describe("gradNorm", () => {
  it("is the global L2 norm over every gradient, parameters without one counting as zero, and changes nothing", () => {
    const a = param([0, 0, 0]);
    const b = param([0]);
    const c = param([0]);
    a.grad = Float64Array.from([1, -2, 2]);
    b.grad = Float64Array.from([4]);
    expect(gradNorm([a, b, c])).toBeCloseTo(Math.sqrt(1 + 4 + 4 + 16), 12);
    expect(Array.from(a.grad)).toEqual([1, -2, 2]);
    expect(gradNorm([c])).toBe(0);
  });
});

describe("clipGradNorm", () => {
  it("returns the global L2 norm and rescales to maxNorm only when it is exceeded", () => {
    const a = param([0, 0]);
    const b = param([0]);
    a.grad = Float64Array.from([3, 0]);
    b.grad = Float64Array.from([4]);
    expect(clipGradNorm([a, b], 10)).toBeCloseTo(5, 12);
    expect(Array.from(a.grad)).toEqual([3, 0]);
    expect(clipGradNorm([a, b], 1)).toBeCloseTo(5, 12);
    const coef = 1 / (5 + 1e-6);
    expect(a.grad[0]).toBeCloseTo(3 * coef, 12);
    expect(b.grad[0]).toBeCloseTo(4 * coef, 12);
  });
});
