/** Reductions (sum, mean) over all elements or one axis, and argmax over the last axis (no grad). */
import { allocData, type Data, gradBuffer, needsGrad, normAxis, Tensor } from "./tensor.js";

/** Splits `shape` around `axis` into [outer, n, inner] (row-major). */
export function splitAt(shape: readonly number[], axis: number): [number, number, number] {
  let outer = 1;
  let inner = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i];
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i];
  return [outer, shape[axis], inner];
}

function reduce(name: string, a: Tensor, axis: number | undefined, keepDim: boolean, divide: boolean): Tensor {
  if (axis === undefined) {
    let s = 0;
    for (let i = 0; i < a.size; i++) s += a.data[i];
    const factor = divide ? 1 / a.size : 1;
    const out = allocData(a.dtype, 1);
    out[0] = s * factor;
    const result = new Tensor(out, keepDim ? a.shape.map(() => 1) : []);
    if (needsGrad(a)) {
      result.setGradFn([a], (g) => addToAll(gradBuffer(a), g[0] * factor));
    }
    return result;
  }
  const ax = normAxis(name, axis, a.ndim);
  const [outer, n, inner] = splitAt(a.shape, ax);
  const factor = divide ? 1 / n : 1;
  const out = allocData(a.dtype, outer * inner);
  const x = a.data;
  for (let o = 0; o < outer; o++) {
    const base = o * n * inner;
    const ob = o * inner;
    for (let k = 0; k < n; k++) {
      const row = base + k * inner;
      for (let i = 0; i < inner; i++) out[ob + i] += x[row + i];
    }
    if (divide) for (let i = 0; i < inner; i++) out[ob + i] *= factor;
  }
  const shape = keepDim ? a.shape.map((d, i) => (i === ax ? 1 : d)) : a.shape.filter((_, i) => i !== ax);
  const result = new Tensor(out, shape);
  if (needsGrad(a)) {
    result.setGradFn([a], (g) => reduceBackward(g, outer, n, inner, factor, gradBuffer(a)));
  }
  return result;
}

/** A full reduction's backward: every element gets the same gradient. */
function addToAll(ga: Data, gv: number): void {
  for (let i = 0; i < ga.length; i++) ga[i] += gv;
}

/** A reduction's backward along an axis: every reduced element gets its output's gradient × factor. */
function reduceBackward(g: Data, outer: number, n: number, inner: number, factor: number, ga: Data): void {
  for (let o = 0; o < outer; o++) {
    const base = o * n * inner;
    const ob = o * inner;
    for (let k = 0; k < n; k++) {
      const row = base + k * inner;
      for (let i = 0; i < inner; i++) ga[row + i] += g[ob + i] * factor;
    }
  }
}

/** Sum of all elements (shape []), or along `axis` (dropped unless keepDim). */
export function sum(a: Tensor, axis?: number, keepDim = false): Tensor {
  return reduce("sum", a, axis, keepDim, false);
}

/** Mean of all elements (shape []), or along `axis` (dropped unless keepDim). */
export function mean(a: Tensor, axis?: number, keepDim = false): Tensor {
  return reduce("mean", a, axis, keepDim, true);
}

/**
 * Index of the largest entry of each last-axis row (first one on ties), skipping entries with
 * mask = 1 (mask of x.size or of the last dim); −1 for a fully masked row. Not differentiable.
 */
export function argmax(x: Tensor, mask?: Uint8Array): Int32Array {
  const k = x.shape[x.ndim - 1] ?? 1;
  const rows = k === 0 ? 0 : x.size / k;
  if (mask && mask.length !== x.size && mask.length !== k)
    throw new RangeError(`argmax: mask has ${mask.length} entries, expected ${x.size} or ${k}`);
  const out = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    let best = -1;
    let bestValue = Number.NEGATIVE_INFINITY;
    const mo = mask && mask.length === x.size ? r * k : 0;
    for (let j = 0; j < k; j++) {
      if (mask?.[mo + j]) continue;
      const v = x.data[r * k + j];
      if (best < 0 || v > bestValue) {
        best = j;
        bestValue = v;
      }
    }
    out[r] = best;
  }
  return out;
}
