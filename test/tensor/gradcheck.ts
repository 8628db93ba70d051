/**
 * Finite-difference gradient checks. The output of `fn` is reduced to a scalar with fixed random
 * weights (so every output element's gradient is exercised), backward() gives the analytic
 * gradient of each input, and central differences in float64 give the numeric one.
 */
import { expect } from "vitest";
import { Tensor } from "../../src/tensor/index.js";
import { Rng } from "../../src/util/rng.js";

type Fn = (...inputs: Tensor[]) => Tensor;

function weightsFor(out: Tensor, seed: number): Float64Array {
  const rng = new Rng(seed);
  return Float64Array.from({ length: out.size }, () => rng.next() * 2 - 1);
}

function weightedSum(out: Tensor, w: Float64Array): number {
  let s = 0;
  for (let i = 0; i < out.size; i++) s += out.data[i] * w[i];
  return s;
}

/** Analytic gradients of Σ w ⊙ fn(inputs) for every input that requires grad. */
function analytic(fn: Fn, inputs: Tensor[], seed: number): (Float64Array | null)[] {
  for (const t of inputs) t.grad = null;
  const out = fn(...inputs);
  const w = weightsFor(out, seed);
  const wt = Tensor.from(w, out.shape, out.dtype);
  // Σ out ⊙ w written with raw data so the check does not depend on the ops under test.
  const loss = new Tensor(out.dtype === "float64" ? new Float64Array(1) : new Float32Array(1), []);
  loss.data[0] = weightedSum(out, w);
  loss.setGradFn([out], (g) => {
    const go =
      out.grad ?? (out.grad = out.dtype === "float64" ? new Float64Array(out.size) : new Float32Array(out.size));
    for (let i = 0; i < go.length; i++) go[i] += g[0] * wt.data[i];
  });
  loss.backward();
  return inputs.map((t) => (t.requiresGrad ? Float64Array.from(t.grad ?? new Float64Array(t.size)) : null));
}

/** Central differences of Σ w ⊙ fn(inputs), evaluated in float64. */
function numeric(fn: Fn, inputs64: Tensor[], seed: number, h: number): (Float64Array | null)[] {
  const w = weightsFor(fn(...inputs64), seed);
  return inputs64.map((t) => {
    if (!t.requiresGrad) return null;
    const g = new Float64Array(t.size);
    for (let i = 0; i < t.size; i++) {
      const keep = t.data[i];
      t.data[i] = keep + h;
      const up = weightedSum(fn(...inputs64), w);
      t.data[i] = keep - h;
      const down = weightedSum(fn(...inputs64), w);
      t.data[i] = keep;
      g[i] = (up - down) / (2 * h);
    }
    return g;
  });
}

/** max |a − n| / max(|a|∞, |n|∞): scale-free and robust to gradient entries that are exactly 0. */
export function relativeError(a: ArrayLike<number>, n: ArrayLike<number>): number {
  let diff = 0;
  let scale = 1e-12;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - n[i]));
    scale = Math.max(scale, Math.abs(a[i]), Math.abs(n[i]));
  }
  return diff / scale;
}

function toFloat64(t: Tensor): Tensor {
  const c = Tensor.from(Float64Array.from(t.data), t.shape, "float64");
  c.requiresGrad = t.requiresGrad;
  return c;
}

export interface GradCheckOptions {
  seed?: number;
  /** Tolerance on relativeError; default 1e-6 for float64 inputs, 2e-3 for float32. */
  tol?: number;
  h?: number;
}

/**
 * Checks backward() of `fn` against finite differences for every input with requiresGrad.
 * float64 inputs: both gradients in float64. float32 inputs: the float32 analytic gradient is
 * compared with finite differences of the same function on float64 copies of the inputs.
 * Returns the worst relative error (also asserted).
 */
export function gradCheck(fn: Fn, inputs: Tensor[], opts: GradCheckOptions = {}): number {
  const seed = opts.seed ?? 1234;
  const is64 = inputs.every((t) => t.dtype === "float64");
  const tol = opts.tol ?? (is64 ? 1e-6 : 2e-3);
  const grads = analytic(fn, inputs, seed);
  const inputs64 = is64 ? inputs : inputs.map(toFloat64);
  const nums = numeric(fn, inputs64, seed, opts.h ?? 1e-6);
  let worst = 0;
  grads.forEach((g, i) => {
    const n = nums[i];
    if (g === null || n === null) return;
    const err = relativeError(g, n);
    worst = Math.max(worst, err);
    expect(
      err,
      `input ${i}: analytic ${Array.from(g.slice(0, 6))} vs numeric ${Array.from(n.slice(0, 6))}`,
    ).toBeLessThan(tol);
  });
  expect(grads.some((g) => g !== null)).toBe(true);
  return worst;
}

/** A parameter with deterministic values uniform in [lo, hi). */
export function randParam(
  shape: number[],
  seed: number,
  dtype: "float32" | "float64" = "float64",
  lo = -1,
  hi = 1,
): Tensor {
  const rng = new Rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  const data = dtype === "float64" ? new Float64Array(n) : new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = lo + (hi - lo) * rng.next();
  return Tensor.param(data, shape);
}
