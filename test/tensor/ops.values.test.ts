/**
 * Forward values against independent computations: reference numbers below were produced by a
 * separate numpy implementation of the PyTorch formulas (layerNorm, GRUCell, label-smoothed CE),
 * or are small enough to check by hand.
 */
import { describe, expect, it } from "vitest";
import * as T from "../../src/tensor/index.js";
import { Tensor } from "../../src/tensor/index.js";
import { Rng } from "../../src/util/rng.js";

const f64 = (values: number[], shape: number[]) => Tensor.from(values, shape, "float64");
const param64 = (values: number[], shape: number[]) => Tensor.param(Float64Array.from(values), shape);

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-12): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(Math.abs(actual[i] - expected[i]), `index ${i}`).toBeLessThan(tol);
}

describe("forward values", () => {
  it("layerNorm matches PyTorch (biased variance, eps 1e-5, affine)", () => {
    const x = f64([1, 2, 4, 7, -1, 0.5, 0.5, 3], [2, 4]);
    const y = T.layerNorm(x, f64([1, 0.5, 2, -1], [4]), f64([0.1, 0, -0.2, 0.3], [4]));
    expectClose(
      y.data,
      [
        -0.9910884120486357, -0.32732652361459075, 0.23643536481945426, -1.22752377686809, -1.1185406376555558,
        -0.08703861697539686, -0.5481544679015875, -1.2666951055571434,
      ],
      1e-12,
    );
  });

  it("gruCell one step equals the PyTorch GRUCell equations (r, z, n gate order)", () => {
    const wih = [
      -0.4, -0.35, -0.3, -0.25, -0.2, -0.15, -0.1, -0.05, 0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,
    ];
    const whh = [0.3, 0.23, 0.16, 0.09, 0.02, -0.05, -0.12, -0.19, -0.26, -0.33, -0.4, -0.47];
    const h1 = T.gruCell(
      f64([0.5, -1, 2], [1, 3]),
      f64([0.3, -0.7], [1, 2]),
      f64(wih, [6, 3]),
      f64(whh, [6, 2]),
      f64([0.1, -0.1, 0.2, -0.2, 0.05, 0], [6]),
      f64([0, 0.3, -0.1, 0.1, -0.05, 0.2], [6]),
    );
    expectClose(h1.data, [0.3899895979825643, -0.07555343587336821], 1e-12);
  });

  it("crossEntropy with label smoothing equals (1−ε)·nll + ε·mean_k(−log p_k) (PyTorch)", () => {
    const logits = f64([2, 1, 0.1, 0.5, 2.5, -1], [2, 3]);
    const labels = Int32Array.from([0, 2]);
    expect(T.crossEntropy(logits, labels, { labelSmoothing: 0.1 }).item()).toBeCloseTo(2.0001041117000606, 12);
    const none = T.crossEntropy(logits, labels, { labelSmoothing: 0.1, reduction: "none" });
    expectClose(none.data, [0.5136966829445, 3.4865115404556213], 1e-12);
    expect(T.crossEntropy(logits, labels, { labelSmoothing: 0.1, reduction: "sum" }).item()).toBeCloseTo(
      0.5136966829445 + 3.4865115404556213,
      12,
    );
  });

  it("crossEntropy: masked classes leave the softmax, ignored rows leave the mean, weights divide by their sum", () => {
    // Row 0 with class 2 masked is the 2-class problem [2, 1]; row 1 is ignored (label −100).
    const logits = f64([2, 1, 5, 0, 0, 0], [2, 3]);
    const nll = -(2 - Math.log(Math.exp(2) + Math.exp(1)));
    const masked = T.crossEntropy(logits, Int32Array.from([0, -100]), { mask: Uint8Array.from([0, 0, 1]) });
    expect(masked.item()).toBeCloseTo(nll, 12);
    const weighted = T.crossEntropy(f64([0, 0, 0, 1, 0, 0], [2, 3]), Int32Array.from([0, 0]), {
      weights: Float64Array.from([1, 3]),
    });
    const l0 = Math.log(3);
    const l1 = -(1 - Math.log(Math.E + 2));
    expect(weighted.item()).toBeCloseTo((1 * l0 + 3 * l1) / 4, 12);
  });

  it("crossEntropy rejects a label that points at a masked class or out of range", () => {
    const logits = f64([1, 2, 3], [1, 3]);
    expect(() => T.crossEntropy(logits, Int32Array.from([1]), { mask: Uint8Array.from([0, 1, 0]) })).toThrow(/masked/);
    expect(() => T.crossEntropy(logits, Int32Array.from([3]))).toThrow(/out of range/);
  });

  it("softmax / logSoftmax: masked entries get 0 / −∞, a fully masked row gives no NaN anywhere", () => {
    const x = Tensor.param(Float64Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);
    const mask = Uint8Array.from([0, 1, 0, 1, 1, 1]);
    const p = T.softmax(x, mask);
    const e = Math.exp(1) + Math.exp(3);
    expectClose(p.data, [Math.exp(1) / e, 0, Math.exp(3) / e, 0, 0, 0]);
    const lp = T.logSoftmax(x, mask);
    expect(lp.data[1]).toBe(Number.NEGATIVE_INFINITY);
    expect(lp.data[3]).toBe(Number.NEGATIVE_INFINITY);
    // Upstream NaN at masked positions (e.g. 0·(−∞)) must not leak into the gradient.
    T.sum(T.mul(lp, f64([1, 0, 1, 0, 0, 0], [2, 3]))).backward();
    expect(Array.from(x.grad!).every(Number.isFinite)).toBe(true);
    expect(Array.from(x.grad!.slice(3))).toEqual([0, 0, 0]);
  });

  it("a [K] mask is shared by every row", () => {
    const x = f64([1, 2, 3, 4, 5, 6], [2, 3]);
    const full = T.softmax(x, Uint8Array.from([0, 1, 0, 0, 1, 0]));
    expectClose(T.softmax(x, Uint8Array.from([0, 1, 0])).data, full.data);
    expect(() => T.softmax(x, Uint8Array.from([0, 1]))).toThrow(/mask/);
  });

  it("l2Normalize divides by max(‖x‖, eps) like F.normalize", () => {
    expectClose(T.l2Normalize(f64([3, 4, 0, 0], [2, 2])).data, [0.6, 0.8, 0, 0]);
    expectClose(T.l2Normalize(f64([3e-3, 4e-3], [1, 2]), 0.1).data, [0.03, 0.04]);
  });

  it("softplus follows PyTorch (log1p(eˣ), exactly x above 20)", () => {
    expectClose(T.softplus(f64([0, -50, 25, 1], [4])).data, [
      Math.log(2),
      Math.log1p(Math.exp(-50)),
      25,
      Math.log1p(Math.E),
    ]);
  });

  it("broadcasting follows numpy shapes", () => {
    const a = f64([1, 2, 3], [3, 1]);
    const b = f64([10, 20], [2]);
    const c = T.add(a, b);
    expect(c.shape).toEqual([3, 2]);
    expectClose(c.data, [11, 21, 12, 22, 13, 23]);
    expect(T.mul(f64([1, 2, 3, 4, 5, 6], [2, 1, 3]), f64([1, 10], [2, 1])).shape).toEqual([2, 2, 3]);
    expect(() => T.add(f64([1, 2, 3], [3]), f64([1, 2], [2]))).toThrow(/broadcast/);
  });

  it("matmul computes batched and transposed products", () => {
    const a = f64([1, 2, 3, 4, 5, 6], [2, 3]);
    const b = f64([1, 0, 0, 1, 1, 1], [3, 2]);
    expectClose(T.matmul(a, b).data, [4, 5, 10, 11]);
    expectClose(T.matmul(a, a, { transB: true }).data, [14, 32, 32, 77]);
    expectClose(T.matmul(a, a, { transA: true }).data, [17, 22, 27, 22, 29, 36, 27, 36, 45]);
    const batched = T.matmul(T.stack([a, T.scale(a, 2)]), b);
    expect(batched.shape).toEqual([2, 2, 2]);
    expectClose(batched.data, [4, 5, 10, 11, 8, 10, 20, 22]);
    expect(() => T.matmul(a, a)).toThrow(/do not match/);
  });

  it("linear is x·Wᵀ + b over any leading dims", () => {
    const x = f64([1, 2, 3, 4], [1, 2, 2]);
    const y = T.linear(x, f64([1, 1, 1, -1, 0, 2], [3, 2]), f64([0, 1, 2], [3]));
    expect(y.shape).toEqual([1, 2, 3]);
    expectClose(y.data, [3, 0, 6, 7, 0, 10]);
  });

  it("reductions, gathers, concat and narrow produce the expected values and shapes", () => {
    const x = f64([1, 2, 3, 4, 5, 6], [2, 3]);
    expect(T.sum(x).item()).toBe(21);
    expectClose(T.sum(x, 0).data, [5, 7, 9]);
    expect(T.mean(x, 1, true).shape).toEqual([2, 1]);
    expectClose(T.mean(x, 1).data, [2, 5]);
    expectClose(T.gatherLast(x, Int32Array.from([2, 0])).data, [3, 4]);
    expectClose(T.indexSelect(x, Int32Array.from([1, 1, 0])).data, [4, 5, 6, 4, 5, 6, 1, 2, 3]);
    expectClose(T.indexSelect(x, Int32Array.from([2, 0]), 1).data, [3, 1, 6, 4]);
    expectClose(T.concat([x, x], 1).data, [1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6]);
    expectClose(T.narrow(x, 1, 1, 2).data, [2, 3, 5, 6]);
    const w = f64([1, 2, 3, 4, 5, 6, 7, 8], [2, 4]); // columns 1..2 = [[2, 3], [6, 7]]
    expectClose(T.linearColumns(f64([1, -1], [1, 2]), w, 1, 2, f64([10, 20], [2])).data, [9, 19]);
    expectClose(
      T.linearColumns(f64([1, -1], [1, 2]), w, 1, 2).data,
      T.linear(f64([1, -1], [1, 2]), T.narrow(w, 1, 1, 2)).data,
    );
    const rows = T.narrow(x, 0, 1, 1); // contiguous: a view, so later in-place updates of x show through
    expectClose(rows.data, [4, 5, 6]);
    expect(rows.shape).toEqual([1, 3]);
    expect(rows.data.buffer).toBe(x.data.buffer);
    expectClose(T.transpose(x).data, [1, 4, 2, 5, 3, 6]);
    expect(Array.from(T.argmax(x))).toEqual([2, 2]);
    expect(Array.from(T.argmax(x, Uint8Array.from([0, 0, 1])))).toEqual([1, 1]);
    expect(Array.from(T.argmax(x, Uint8Array.from([1, 1, 1])))).toEqual([-1, -1]);
    expect(() => T.gatherLast(x, Int32Array.from([3, 0]))).toThrow(/out of range/);
    expect(() => T.reshape(x, [4, -1])).toThrow(/reshape/);
  });

  it("maskedFill replaces masked entries", () => {
    expectClose(T.maskedFill(f64([1, 2, 3, 4], [2, 2]), Uint8Array.from([1, 0]), -100).data, [-100, 2, -100, 4]);
  });

  it("dropout is the identity in eval mode and inverted, seeded and unbiased in training", () => {
    const x = Tensor.from(new Float64Array(20000).fill(1), [20000], "float64");
    expect(T.dropout(x, 0.5, new Rng(1), false)).toBe(x);
    const y = T.dropout(x, 0.25, new Rng(1), true);
    const kept = Array.from(y.data).filter((v) => v !== 0);
    expect(kept.every((v) => Math.abs(v - 4 / 3) < 1e-12)).toBe(true);
    expect(Math.abs(kept.length / 20000 - 0.75)).toBeLessThan(0.015);
    expect(Array.from(T.dropout(x, 0.25, new Rng(1), true).data)).toEqual(Array.from(y.data));
    expect(Array.from(T.dropout(x, 1, new Rng(1), true).data).every((v) => v === 0)).toBe(true);
  });

  it("float32 inputs stay float32 and mixing dtypes is an error", () => {
    const a = Tensor.from([1, 2], [2]);
    expect(a.dtype).toBe("float32");
    expect(T.exp(a).data).toBeInstanceOf(Float32Array);
    expect(T.matmul(T.reshape(a, [1, 2]), T.reshape(a, [2, 1])).dtype).toBe("float32");
    expect(() => T.add(a, f64([1, 2], [2]))).toThrow(/dtype/);
  });

  it("param initialisers draw the PyTorch bounds from the seeded Rng", () => {
    const w = T.xavierUniformParam([64, 32], new Rng(3));
    const bound = Math.sqrt(6 / 96);
    expect(w.requiresGrad).toBe(true);
    expect(Math.max(...Array.from(w.data, Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...Array.from(w.data, Math.abs))).toBeGreaterThan(bound * 0.95);
    expect(Array.from(T.xavierUniformParam([64, 32], new Rng(3)).data)).toEqual(Array.from(w.data));
    const lin = T.linearDefaultParam([10, 100], 100, new Rng(4));
    expect(Math.max(...Array.from(lin.data, Math.abs))).toBeLessThanOrEqual(0.1);
  });
});

describe("autograd engine", () => {
  it("accumulates into leaf grads across backward calls and through shared inputs", () => {
    const x = param64([2, 3], [2]);
    T.sum(T.mul(x, x)).backward();
    expectClose(x.grad!, [4, 6]);
    T.sum(x).backward();
    expectClose(x.grad!, [5, 7]);
  });

  it("views (reshape, contiguous narrow) hand gradients to their base, also when the view is the root", () => {
    const x = param64([1, 2, 3], [3]);
    T.reshape(T.sum(T.mul(x, x)), [1]).backward(); // root is a reshape of an intermediate
    expectClose(x.grad!, [2, 4, 6]);
    T.narrow(x, 0, 1, 1).backward(); // root is a view of the leaf itself: adds 1 to x.grad[1]
    expectClose(x.grad!, [2, 5, 6]);
    const m = T.reshape(x, [3, 1]);
    // [1, 3] ⊙ [3, 1] broadcasts to the outer product: Σ_ij x_j·2x_i = 2(Σx)², gradient 4Σx = 24 each
    T.sum(T.mul(T.reshape(m, [1, 3]), T.narrow(T.scale(m, 2), 0, 0, 3))).backward();
    expectClose(x.grad!, [26, 29, 30]);
    expect(m.grad).toBeNull();
  });

  it("does not record under noGrad, and detach cuts the graph", () => {
    const x = param64([1, 2], [2]);
    const y = T.noGrad(() => T.mul(x, x));
    expect(y.requiresGrad).toBe(false);
    expect(y.isLeaf).toBe(true);
    const z = T.sum(T.mul(x.detach(), x));
    z.backward();
    expectClose(x.grad!, [1, 2]);
  });

  it("constants get no grad and intermediate grads are freed", () => {
    const x = param64([1, 2], [2]);
    const c = f64([3, 4], [2]);
    const mid = T.mul(x, c);
    T.sum(mid).backward();
    expect(c.grad).toBeNull();
    expect(mid.grad).toBeNull();
    expectClose(x.grad!, [3, 4]);
  });

  it("a second backward through a released graph fails loudly; retainGraph allows it", () => {
    const x = param64([1, 2], [2]);
    const loss = T.sum(T.square(x));
    loss.backward({ retainGraph: true });
    loss.backward();
    expectClose(x.grad!, [4, 8]);
    expect(() => loss.backward()).toThrow(/released/);
  });

  it("backward needs a scalar root that depends on a parameter", () => {
    const x = param64([1, 2], [2]);
    expect(() => T.square(x).backward()).toThrow(/scalar/);
    expect(() => T.sum(f64([1], [1])).backward()).toThrow(/require grad/);
  });

  it("handles deep graphs without recursion limits", () => {
    const x = param64([0.5], [1]);
    let y: Tensor = x;
    for (let i = 0; i < 20000; i++) y = T.addScalar(y, 1e-4);
    T.sum(y).backward();
    expectClose(x.grad!, [1]);
  });
});
