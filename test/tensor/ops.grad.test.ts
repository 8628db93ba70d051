import { describe, it } from "vitest";
import type { Tensor } from "../../src/tensor/index.js";
import * as T from "../../src/tensor/index.js";
import { Rng } from "../../src/util/rng.js";
import { gradCheck, randParam } from "./gradcheck.js";

type DT = "float32" | "float64";
interface Case {
  name: string;
  inputs: (dt: DT) => Tensor[];
  fn: (...xs: Tensor[]) => Tensor;
  tol32?: number;
}

const p = (shape: number[], seed: number, dt: DT, lo = -1, hi = 1) => randParam(shape, seed, dt, lo, hi);
const mask3x5 = Uint8Array.from([0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]); // last row fully masked
const constant = (shape: number[], seed: number, dt: DT) => {
  const t = randParam(shape, seed, dt);
  t.requiresGrad = false;
  return t;
};

const cases: Case[] = [
  { name: "add (same shape)", inputs: (d) => [p([2, 3], 1, d), p([2, 3], 2, d)], fn: T.add },
  { name: "add (bias broadcast [4,3] + [3])", inputs: (d) => [p([4, 3], 1, d), p([3], 2, d)], fn: T.add },
  { name: "sub (leading broadcast [2,1,3] − [4,3])", inputs: (d) => [p([2, 1, 3], 1, d), p([4, 3], 2, d)], fn: T.sub },
  { name: "mul (column broadcast [3,1] ⊙ [3,4])", inputs: (d) => [p([3, 1], 1, d), p([3, 4], 2, d)], fn: T.mul },
  { name: "mul (same tensor twice)", inputs: (d) => [p([5], 1, d)], fn: (a) => T.mul(a, a) },
  { name: "mul (scalar tensor)", inputs: (d) => [p([], 1, d), p([2, 2], 2, d)], fn: T.mul },
  { name: "div", inputs: (d) => [p([2, 3], 1, d), p([3], 2, d, 0.5, 2)], fn: T.div },
  // distinct values, no ties: the gradient is defined everywhere nearby
  { name: "minimum", inputs: (d) => [p([3, 4], 1, d), p([3, 4], 2, d)], fn: T.minimum },
  { name: "maximum (broadcast)", inputs: (d) => [p([3, 4], 1, d), p([4], 2, d)], fn: T.maximum },
  { name: "broadcastTo", inputs: (d) => [p([3, 1], 1, d)], fn: (a) => T.broadcastTo(a, [2, 3, 4]) },
  { name: "scale", inputs: (d) => [p([2, 3], 1, d)], fn: (a) => T.scale(a, -2.5) },
  { name: "addScalar", inputs: (d) => [p([2, 3], 1, d)], fn: (a) => T.addScalar(a, 3) },
  { name: "neg", inputs: (d) => [p([4], 1, d)], fn: T.neg },
  { name: "clamp", inputs: (d) => [p([20], 1, d, -2, 2)], fn: (a) => T.clamp(a, -0.8, 0.9) },
  { name: "exp", inputs: (d) => [p([2, 3], 1, d)], fn: T.exp },
  { name: "log", inputs: (d) => [p([2, 3], 1, d, 0.2, 3)], fn: T.log },
  { name: "sigmoid", inputs: (d) => [p([2, 3], 1, d, -4, 4)], fn: T.sigmoid },
  { name: "tanh", inputs: (d) => [p([2, 3], 1, d, -2, 2)], fn: T.tanh },
  { name: "relu", inputs: (d) => [p([10], 1, d)], fn: T.relu },
  { name: "softplus (incl. > 20 linear branch)", inputs: (d) => [p([12], 1, d, -30, 30)], fn: T.softplus },
  { name: "sqrt", inputs: (d) => [p([6], 1, d, 0.3, 4)], fn: T.sqrt },
  { name: "square", inputs: (d) => [p([6], 1, d)], fn: T.square },
  { name: "abs", inputs: (d) => [p([6], 1, d)], fn: T.abs },
  { name: "sum (all)", inputs: (d) => [p([2, 3], 1, d)], fn: (a) => T.sum(a) },
  { name: "sum (axis 1, keepDim)", inputs: (d) => [p([2, 3, 4], 1, d)], fn: (a) => T.sum(a, 1, true) },
  { name: "mean (all)", inputs: (d) => [p([2, 3], 1, d)], fn: (a) => T.mean(a) },
  { name: "mean (axis -1)", inputs: (d) => [p([2, 3, 4], 1, d)], fn: (a) => T.mean(a, -1) },
  { name: "matmul [3,4]x[4,5]", inputs: (d) => [p([3, 4], 1, d), p([4, 5], 2, d)], fn: (a, b) => T.matmul(a, b) },
  {
    name: "matmul transA",
    inputs: (d) => [p([4, 3], 1, d), p([4, 5], 2, d)],
    fn: (a, b) => T.matmul(a, b, { transA: true }),
  },
  {
    name: "matmul transB",
    inputs: (d) => [p([3, 4], 1, d), p([5, 4], 2, d)],
    fn: (a, b) => T.matmul(a, b, { transB: true }),
  },
  {
    name: "matmul transA+transB",
    inputs: (d) => [p([4, 3], 1, d), p([5, 4], 2, d)],
    fn: (a, b) => T.matmul(a, b, { transA: true, transB: true }),
  },
  { name: "matmul batched", inputs: (d) => [p([2, 3, 4], 1, d), p([2, 4, 2], 2, d)], fn: (a, b) => T.matmul(a, b) },
  {
    name: "matmul batched transB (attention scores)",
    inputs: (d) => [p([2, 1, 4], 1, d), p([2, 5, 4], 2, d)],
    fn: (a, b) => T.matmul(a, b, { transB: true }),
  },
  {
    name: "matmul [B,M,K]x[K,N] broadcast",
    inputs: (d) => [p([2, 3, 4], 1, d), p([4, 5], 2, d)],
    fn: (a, b) => T.matmul(a, b),
  },
  {
    name: "matmul [B,K,M]ᵀx[K,N] broadcast",
    inputs: (d) => [p([2, 4, 3], 1, d), p([4, 5], 2, d)],
    fn: (a, b) => T.matmul(a, b, { transA: true }),
  },
  {
    name: "matmul [M,K]x[B,K,N] broadcast",
    inputs: (d) => [p([3, 4], 1, d), p([2, 4, 5], 2, d)],
    fn: (a, b) => T.matmul(a, b),
  },
  {
    name: "linear with bias",
    inputs: (d) => [p([2, 3, 4], 1, d), p([5, 4], 2, d), p([5], 3, d)],
    fn: (x, w, b) => T.linear(x, w, b),
  },
  { name: "linear without bias", inputs: (d) => [p([3, 4], 1, d), p([2, 4], 2, d)], fn: (x, w) => T.linear(x, w) },
  {
    // both column halves of one weight, one with a bias: gradients accumulate into the strided blocks
    name: "linearColumns (the two halves of a [2, 6] weight)",
    inputs: (d) => [p([4, 3], 1, d), p([4, 3], 2, d), p([2, 6], 3, d), p([2], 4, d)],
    fn: (x, y, w, b) => T.mul(T.linearColumns(x, w, 0, 3), T.linearColumns(y, w, 3, 3, b)),
  },
  {
    name: "layerNorm",
    inputs: (d) => [p([3, 5], 1, d, -2, 2), p([5], 2, d, 0.5, 1.5), p([5], 3, d)],
    fn: (x, w, b) => T.layerNorm(x, w, b),
  },
  { name: "layerNorm without affine", inputs: (d) => [p([2, 6], 1, d)], fn: (x) => T.layerNorm(x, null, null) },
  { name: "softmax", inputs: (d) => [p([3, 5], 1, d, -3, 3)], fn: (x) => T.softmax(x) },
  {
    name: "softmax with mask (incl. fully masked row)",
    inputs: (d) => [p([3, 5], 1, d, -3, 3)],
    fn: (x) => T.softmax(x, mask3x5),
  },
  { name: "logSoftmax", inputs: (d) => [p([2, 4], 1, d, -3, 3)], fn: (x) => T.logSoftmax(x) },
  {
    // −∞ entries would poison the weighted sum, so check log-softmax through its finite entries only.
    name: "logSoftmax with mask",
    inputs: (d) => [p([3, 5], 1, d, -3, 3)],
    fn: (x) => T.maskedFill(T.logSoftmax(x, mask3x5), mask3x5, 0),
  },
  { name: "l2Normalize", inputs: (d) => [p([3, 4], 1, d)], fn: (x) => T.l2Normalize(x) },
  {
    name: "l2Normalize below eps (x / eps)",
    inputs: (d) => [p([2, 3], 1, d, -1e-4, 1e-4)],
    fn: (x) => T.l2Normalize(x, 1),
  },
  {
    name: "indexSelect rows (repeated index)",
    inputs: (d) => [p([4, 3], 1, d)],
    fn: (x) => T.indexSelect(x, Int32Array.from([2, 0, 2])),
  },
  {
    name: "indexSelect axis 1",
    inputs: (d) => [p([2, 4, 3], 1, d)],
    fn: (x) => T.indexSelect(x, Int32Array.from([3, 1]), 1),
  },
  { name: "gatherLast", inputs: (d) => [p([3, 4], 1, d)], fn: (x) => T.gatherLast(x, Int32Array.from([1, 3, 0])) },
  { name: "concat axis 1", inputs: (d) => [p([2, 2], 1, d), p([2, 3], 2, d)], fn: (a, b) => T.concat([a, b], 1) },
  { name: "stack axis 0", inputs: (d) => [p([2, 3], 1, d), p([2, 3], 2, d)], fn: (a, b) => T.stack([a, b], 0) },
  { name: "reshape", inputs: (d) => [p([2, 6], 1, d)], fn: (a) => T.mul(T.reshape(a, [3, -1]), T.reshape(a, [3, 4])) },
  { name: "permute", inputs: (d) => [p([2, 3, 4], 1, d)], fn: (a) => T.permute(a, [2, 0, 1]) },
  { name: "transpose", inputs: (d) => [p([3, 4], 1, d)], fn: (a) => T.transpose(a) },
  { name: "narrow", inputs: (d) => [p([3, 5], 1, d)], fn: (a) => T.narrow(a, 1, 1, 3) },
  {
    // contiguous slices are zero-copy views whose gradient lives in the base's buffer: overlapping
    // views of a leaf and of an intermediate must still sum their contributions
    name: "narrow axis 0 (overlapping views, of a leaf and of an intermediate)",
    inputs: (d) => [p([3, 4], 1, d)],
    fn: (a) => T.mul(T.narrow(T.scale(a, 2), 0, 1, 2), T.add(T.narrow(a, 0, 0, 2), T.narrow(a, 0, 1, 2))),
  },
  {
    name: "dropout (fixed seed)",
    inputs: (d) => [p([4, 5], 1, d)],
    fn: (a) => T.dropout(a, 0.3, new Rng(9), true),
  },
  { name: "maskedFill", inputs: (d) => [p([3, 5], 1, d)], fn: (a) => T.maskedFill(a, mask3x5, -100) },
  {
    name: "crossEntropy mean",
    inputs: (d) => [p([3, 4], 1, d, -2, 2)],
    fn: (x) => T.crossEntropy(x, Int32Array.from([0, 3, 1])),
  },
  {
    name: "crossEntropy label smoothing + mask + ignored row, sum",
    inputs: (d) => [p([4, 5], 1, d, -2, 2)],
    fn: (x) =>
      T.crossEntropy(x, Int32Array.from([0, 2, -100, 4]), {
        labelSmoothing: 0.1,
        mask: Uint8Array.from([0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0]),
        reduction: "sum",
      }),
  },
  {
    name: "crossEntropy weights tensor (grad to logits and weights), mean",
    inputs: (d) => [p([3, 4], 1, d, -2, 2), p([3], 2, d, 0.2, 1)],
    fn: (x, w) => T.crossEntropy(x, Int32Array.from([1, 0, 3]), { weights: w, labelSmoothing: 0.2 }),
  },
  {
    name: "crossEntropy reduction none",
    inputs: (d) => [p([2, 3, 4], 1, d, -2, 2), p([6], 2, d, 0.2, 1)],
    fn: (x, w) => T.crossEntropy(x, Int32Array.from([1, 0, 3, 2, 2, 0]), { weights: w, reduction: "none" }),
  },
  {
    name: "gruCell",
    inputs: (d) => [p([2, 3], 1, d), p([2, 4], 2, d), p([12, 3], 3, d), p([12, 4], 4, d), p([12], 5, d), p([12], 6, d)],
    fn: (x, h, wi, wh, bi, bh) => T.gruCell(x, h, wi, wh, bi, bh),
  },
  {
    name: "gruCell without biases",
    inputs: (d) => [p([2, 3], 1, d), p([2, 4], 2, d), p([12, 3], 3, d), p([12, 4], 4, d)],
    fn: (x, h, wi, wh) => T.gruCell(x, h, wi, wh, null, null),
  },
  {
    name: "composite: attention block (matmul, softmax, residual, layerNorm)",
    inputs: (d) => [p([2, 1, 4], 1, d), p([2, 3, 4], 2, d), p([4], 3, d, 0.5, 1.5), p([4], 4, d)],
    fn: (q, c, w, b) => {
      const att = T.softmax(T.scale(T.matmul(q, c, { transB: true }), 0.5));
      return T.layerNorm(T.add(q, T.matmul(att, c)), w, b);
    },
  },
  {
    name: "composite: constant operand does not receive grad",
    inputs: (d) => [p([3, 4], 1, d), constant([4], 2, d)],
    fn: (x, c) => T.mul(x, c),
  },
];

describe("finite-difference gradients (float64, relative error < 1e-6)", () => {
  for (const c of cases) {
    it(`${c.name}`, () => {
      gradCheck(c.fn, c.inputs("float64"));
    });
  }
});

describe("float32 gradients agree with float64 finite differences (relative error < 2e-3)", () => {
  for (const c of cases) {
    it(`${c.name}`, () => {
      gradCheck(c.fn, c.inputs("float32"), { tol: c.tol32 });
    });
  }
});
