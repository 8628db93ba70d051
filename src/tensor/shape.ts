/** Shape and indexing ops: reshape (a view), permute/transpose, concat/stack, narrow, gathers. */
import { splitAt } from "./reduce.js";
import {
  allocData,
  commonDtype,
  type Data,
  formatShape,
  gradBuffer,
  needsGrad,
  normAxis,
  shapeSize,
  Tensor,
} from "./tensor.js";

/** Same data under a new shape (no copy; one dimension may be −1). */
export function reshape(x: Tensor, shape: number[]): Tensor {
  const free = shape.indexOf(-1);
  let resolved = shape;
  if (free >= 0) {
    const known = shapeSize(shape.filter((_, i) => i !== free));
    if (known === 0 || x.size % known !== 0)
      throw new RangeError(`reshape: cannot reshape ${formatShape(x.shape)} into ${formatShape(shape)}`);
    resolved = shape.slice();
    resolved[free] = x.size / known;
  }
  if (shapeSize(resolved) !== x.size)
    throw new RangeError(`reshape: cannot reshape ${formatShape(x.shape)} into ${formatShape(shape)}`);
  const result = new Tensor(x.data, resolved);
  if (needsGrad(x)) {
    // The gradient is x's own buffer under the new shape, so backward has nothing left to do.
    result.setGradFn([x], () => {});
    result.gradSlice = () => gradBuffer(x);
  }
  return result;
}

/** Reorders dimensions: output dim i is input dim perm[i] (copy). */
export function permute(x: Tensor, perm: number[]): Tensor {
  const nd = x.ndim;
  if (perm.length !== nd || new Set(perm.map((p) => normAxis("permute", p, nd))).size !== nd)
    throw new RangeError(`permute: ${JSON.stringify(perm)} is not a permutation of ${nd} dims`);
  const axes = perm.map((p) => normAxis("permute", p, nd));
  const inStrides = new Array<number>(nd);
  for (let i = nd - 1, s = 1; i >= 0; i--) {
    inStrides[i] = s;
    s *= x.shape[i];
  }
  const shape = axes.map((a) => x.shape[a]);
  const strides = axes.map((a) => inStrides[a]); // input stride for each output dim
  const n = x.size;
  // src[o] = input offset of output element o
  const src = new Int32Array(n);
  const counter = new Array<number>(nd).fill(0);
  let off = 0;
  for (let o = 0; o < n; o++) {
    src[o] = off;
    for (let d = nd - 1; d >= 0; d--) {
      counter[d]++;
      off += strides[d];
      if (counter[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      counter[d] = 0;
    }
  }
  const out = allocData(x.dtype, n);
  for (let o = 0; o < n; o++) out[o] = x.data[src[o]];
  const result = new Tensor(out, shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => permuteBackward(g, src, gradBuffer(x)));
  }
  return result;
}

/** permute's backward: output element o's gradient goes back to input offset src[o]. */
function permuteBackward(g: Data, src: Int32Array, gx: Data): void {
  for (let o = 0; o < src.length; o++) gx[src[o]] += g[o];
}

/** Swaps two dimensions (default: the last two). */
export function transpose(x: Tensor, dim0 = -2, dim1 = -1): Tensor {
  const a = normAxis("transpose", dim0, x.ndim);
  const b = normAxis("transpose", dim1, x.ndim);
  const perm = x.shape.map((_, i) => i);
  perm[a] = b;
  perm[b] = a;
  return permute(x, perm);
}

/** Joins tensors along `axis`; all other dimensions must match. */
export function concat(tensors: Tensor[], axis = 0): Tensor {
  if (tensors.length === 0) throw new RangeError("concat: no tensors");
  const first = tensors[0];
  const dtype = commonDtype("concat", ...tensors);
  const ax = normAxis("concat", axis, first.ndim);
  let total = 0;
  for (const t of tensors) {
    if (t.ndim !== first.ndim || t.shape.some((d, i) => i !== ax && d !== first.shape[i]))
      throw new RangeError(`concat: shape ${formatShape(t.shape)} does not match ${formatShape(first.shape)}`);
    total += t.shape[ax];
  }
  const [outer, , inner] = splitAt(first.shape, ax);
  const shape = first.shape.slice();
  shape[ax] = total;
  const out = allocData(dtype, outer * total * inner);
  const rowOut = total * inner;
  let at = 0;
  const starts: number[] = [];
  for (const t of tensors) {
    const chunk = t.shape[ax] * inner;
    starts.push(at);
    for (let o = 0; o < outer; o++) out.set(t.data.subarray(o * chunk, (o + 1) * chunk), o * rowOut + at);
    at += chunk;
  }
  const result = new Tensor(out, shape);
  if (needsGrad(...tensors)) {
    result.setGradFn(tensors, (g) => {
      tensors.forEach((t, k) => {
        if (t.requiresGrad) concatBackward(g, outer, rowOut, starts[k], t.shape[ax] * inner, gradBuffer(t));
      });
    });
  }
  return result;
}

/** concat's backward for one input: its `chunk`-wide block at `start` of every output row. */
function concatBackward(g: Data, outer: number, rowOut: number, start: number, chunk: number, gt: Data): void {
  for (let o = 0; o < outer; o++) {
    const src = o * rowOut + start;
    const dst = o * chunk;
    for (let i = 0; i < chunk; i++) gt[dst + i] += g[src + i];
  }
}

/** Stacks same-shaped tensors along a new dimension `axis`. */
export function stack(tensors: Tensor[], axis = 0): Tensor {
  if (tensors.length === 0) throw new RangeError("stack: no tensors");
  const nd = tensors[0].ndim + 1;
  const ax = normAxis("stack", axis, nd);
  const expanded = tensors.map((t) => {
    if (formatShape(t.shape) !== formatShape(tensors[0].shape))
      throw new RangeError(`stack: shape ${formatShape(t.shape)} differs from ${formatShape(tensors[0].shape)}`);
    const s = t.shape.slice();
    s.splice(ax, 0, 1);
    return reshape(t, s);
  });
  return concat(expanded, ax);
}

/**
 * The slice [start, start + length) of dimension `axis`. When the slice is one contiguous block
 * (every dimension before `axis` is 1) it is a zero-copy view sharing x's data, whose gradient is
 * the matching slice of x's gradient buffer (no copy, no scatter-add); otherwise a copy.
 */
export function narrow(x: Tensor, axis: number, start: number, length: number): Tensor {
  const ax = normAxis("narrow", axis, x.ndim);
  const n = x.shape[ax];
  if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > n)
    throw new RangeError(`narrow: [${start}, ${start + length}) out of range for dim ${ax} of size ${n}`);
  const [outer, , inner] = splitAt(x.shape, ax);
  const shape = x.shape.slice();
  shape[ax] = length;
  const chunk = length * inner;
  if (outer === 1) {
    const from = start * inner;
    const view = new Tensor(x.data.subarray(from, from + chunk), shape);
    if (needsGrad(x)) {
      // Gradients already land in x's buffer through gradSlice; backward has nothing left to do.
      view.setGradFn([x], () => {});
      view.gradSlice = () => gradBuffer(x).subarray(from, from + chunk);
    }
    return view;
  }
  const out = allocData(x.dtype, outer * chunk);
  for (let o = 0; o < outer; o++) {
    const src = (o * n + start) * inner;
    out.set(x.data.subarray(src, src + chunk), o * chunk);
  }
  const result = new Tensor(out, shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => {
      const gx = gradBuffer(x);
      for (let o = 0; o < outer; o++) {
        const dst = (o * n + start) * inner;
        for (let i = 0; i < chunk; i++) gx[dst + i] += g[o * chunk + i];
      }
    });
  }
  return result;
}

function checkIndices(op: string, indices: Int32Array, n: number): void {
  for (let i = 0; i < indices.length; i++) {
    const v = indices[i];
    if (v < 0 || v >= n) throw new RangeError(`${op}: index ${v} at position ${i} out of range [0, ${n})`);
  }
}

/** Picks slices `indices` of dimension `axis` (rows by default); backward scatter-adds. */
export function indexSelect(x: Tensor, indices: Int32Array, axis = 0): Tensor {
  const ax = normAxis("indexSelect", axis, x.ndim);
  const [outer, n, inner] = splitAt(x.shape, ax);
  checkIndices("indexSelect", indices, n);
  const m = indices.length;
  const shape = x.shape.slice();
  shape[ax] = m;
  const out = allocData(x.dtype, outer * m * inner);
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < m; k++) {
      const src = (o * n + indices[k]) * inner;
      out.set(x.data.subarray(src, src + inner), (o * m + k) * inner);
    }
  }
  const result = new Tensor(out, shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => indexSelectBackward(g, indices, outer, n, inner, gradBuffer(x)));
  }
  return result;
}

/** indexSelect's backward: scatter-adds each picked slice's gradient back to its source slice. */
function indexSelectBackward(g: Data, indices: Int32Array, outer: number, n: number, inner: number, gx: Data): void {
  const m = indices.length;
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < m; k++) {
      const dst = (o * n + indices[k]) * inner;
      const src = (o * m + k) * inner;
      for (let i = 0; i < inner; i++) gx[dst + i] += g[src + i];
    }
  }
}

/** out[r] = x[r, index[r]] for x viewed as [rows, K] (K = last dim); output shape = x.shape without K. */
export function gatherLast(x: Tensor, index: Int32Array): Tensor {
  const k = x.shape[x.ndim - 1];
  const rows = x.ndim === 0 || k === 0 ? 0 : x.size / k;
  if (x.ndim === 0 || index.length !== rows)
    throw new RangeError(`gatherLast: ${index.length} indices for ${rows} rows of ${formatShape(x.shape)}`);
  checkIndices("gatherLast", index, k);
  const out = allocData(x.dtype, rows);
  for (let r = 0; r < rows; r++) out[r] = x.data[r * k + index[r]];
  const result = new Tensor(out, x.shape.slice(0, -1));
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => gatherLastBackward(g, index, k, gradBuffer(x)));
  }
  return result;
}

/** gatherLast's backward: each row's gradient goes to the picked entry. */
function gatherLastBackward(g: Data, index: Int32Array, k: number, gx: Data): void {
  for (let r = 0; r < index.length; r++) gx[r * k + index[r]] += g[r];
}
