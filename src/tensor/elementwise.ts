/** Elementwise ops: numpy-broadcasting binary ops, scalar ops and unary activations. */
import { allocData, commonDtype, type Data, formatShape, gradBuffer, needsGrad, shapeSize, Tensor } from "./tensor.js";

// ---------------------------------------------------------------------------------------------
// Broadcasting. Shapes align from the right; a dimension broadcasts when it is 1 (or missing).
// A plan collapses the output into `rows` × `inner` where the inner loop walks the last dimension
// with step 0 or 1 in each input, and every row starts at a precomputed offset.

export interface BroadcastPlan {
  shape: number[];
  rows: number;
  inner: number;
  offA: Int32Array;
  offB: Int32Array;
  incA: number;
  incB: number;
}

export function broadcastShapes(op: string, a: readonly number[], b: readonly number[]): number[] {
  const nd = Math.max(a.length, b.length);
  const out = new Array<number>(nd);
  for (let i = 0; i < nd; i++) {
    const da = a[a.length - nd + i] ?? 1;
    const db = b[b.length - nd + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1)
      throw new RangeError(`${op}: shapes ${formatShape(a)} and ${formatShape(b)} do not broadcast`);
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/** Strides of `shape` (contiguous) seen through `out`: 0 where the input is broadcast. */
function broadcastStrides(shape: readonly number[], out: readonly number[]): number[] {
  const nd = out.length;
  const strides = new Array<number>(nd).fill(0);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    const o = nd - shape.length + i;
    strides[o] = shape[i] === 1 && out[o] !== 1 ? 0 : s;
    s *= shape[i];
  }
  return strides;
}

export function broadcastPlan(
  op: string,
  a: readonly number[],
  b: readonly number[],
  target?: number[],
): BroadcastPlan {
  const shape = target ?? broadcastShapes(op, a, b);
  const sa = broadcastStrides(a, shape);
  const sb = broadcastStrides(b, shape);
  // Drop size-1 dims, then merge neighbours that are contiguous in both inputs.
  const dims: number[] = [];
  const stA: number[] = [];
  const stB: number[] = [];
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 1) continue;
    const last = dims.length - 1;
    if (last >= 0 && stA[last] === sa[i] * shape[i] && stB[last] === sb[i] * shape[i]) {
      dims[last] *= shape[i];
      stA[last] = sa[i];
      stB[last] = sb[i];
    } else {
      dims.push(shape[i]);
      stA.push(sa[i]);
      stB.push(sb[i]);
    }
  }
  const total = shapeSize(shape);
  if (dims.length === 0 || total === 0) {
    return {
      shape,
      rows: total === 0 ? 0 : 1,
      inner: total === 0 ? 0 : 1,
      offA: new Int32Array(1),
      offB: new Int32Array(1),
      incA: 0,
      incB: 0,
    };
  }
  const nd = dims.length;
  const inner = dims[nd - 1];
  const rows = total / inner;
  const offA = new Int32Array(rows);
  const offB = new Int32Array(rows);
  const counter = new Array<number>(nd - 1).fill(0);
  let oa = 0;
  let ob = 0;
  for (let r = 0; r < rows; r++) {
    offA[r] = oa;
    offB[r] = ob;
    for (let d = nd - 2; d >= 0; d--) {
      counter[d]++;
      oa += stA[d];
      ob += stB[d];
      if (counter[d] < dims[d]) break;
      oa -= stA[d] * dims[d];
      ob -= stB[d] * dims[d];
      counter[d] = 0;
    }
  }
  return { shape, rows, inner, offA, offB, incA: stA[nd - 1], incB: stB[nd - 1] };
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function planFor(op: string, a: Tensor, b: Tensor): BroadcastPlan {
  if (sameShape(a.shape, b.shape)) {
    const zero = new Int32Array(1);
    const n = a.size;
    return { shape: a.shape.slice(), rows: n === 0 ? 0 : 1, inner: n, offA: zero, offB: zero, incA: 1, incB: 1 };
  }
  return broadcastPlan(op, a.shape, b.shape);
}

enum Bin {
  Add,
  Sub,
  Mul,
  Div,
  Min,
  Max,
}

function binary(op: Bin, name: string, a: Tensor, b: Tensor): Tensor {
  const dtype = commonDtype(name, a, b);
  const plan = planFor(name, a, b);
  const { rows, inner, offA, offB, incA, incB } = plan;
  const x = a.data;
  const y = b.data;
  const out = allocData(dtype, rows * inner);
  for (let r = 0, o = 0; r < rows; r++) {
    let ia = offA[r];
    let ib = offB[r];
    switch (op) {
      case Bin.Add:
        for (let j = 0; j < inner; j++, o++, ia += incA, ib += incB) out[o] = x[ia] + y[ib];
        break;
      case Bin.Sub:
        for (let j = 0; j < inner; j++, o++, ia += incA, ib += incB) out[o] = x[ia] - y[ib];
        break;
      case Bin.Mul:
        for (let j = 0; j < inner; j++, o++, ia += incA, ib += incB) out[o] = x[ia] * y[ib];
        break;
      case Bin.Div:
        for (let j = 0; j < inner; j++, o++, ia += incA, ib += incB) out[o] = x[ia] / y[ib];
        break;
      case Bin.Min:
        for (let j = 0; j < inner; j++, o++, ia += incA, ib += incB) out[o] = Math.min(x[ia], y[ib]);
        break;
      case Bin.Max:
        for (let j = 0; j < inner; j++, o++, ia += incA, ib += incB) out[o] = Math.max(x[ia], y[ib]);
        break;
    }
  }
  const result = new Tensor(out, plan.shape);
  if (needsGrad(a, b)) {
    result.setGradFn([a, b], (g) => binaryBackward(op, plan, a, b, g));
  }
  return result;
}

function binaryBackward(op: Bin, plan: BroadcastPlan, a: Tensor, b: Tensor, g: Data): void {
  // d/da and d/db are separate passes so each inner loop is branch-free for the common ops.
  if (a.requiresGrad) sideBackward(op, plan, true, a.data, b.data, gradBuffer(a), g);
  if (b.requiresGrad) sideBackward(op, plan, false, a.data, b.data, gradBuffer(b), g);
}

/** Accumulates the gradient of one operand (`left` = a) of a broadcast binary op. */
function sideBackward(op: Bin, plan: BroadcastPlan, left: boolean, x: Data, y: Data, gt: Data, g: Data): void {
  const { rows, inner, offA, offB, incA, incB } = plan;
  const off = left ? offA : offB;
  const inc = left ? incA : incB;
  for (let r = 0, o = 0; r < rows; r++) {
    let it = off[r];
    if (op === Bin.Add || (op === Bin.Sub && left)) {
      for (let j = 0; j < inner; j++, o++, it += inc) gt[it] += g[o];
      continue;
    }
    if (op === Bin.Sub) {
      for (let j = 0; j < inner; j++, o++, it += inc) gt[it] -= g[o];
      continue;
    }
    if (op === Bin.Mul) {
      const other = left ? y : x;
      const incO = left ? incB : incA;
      for (let j = 0, io = left ? offB[r] : offA[r]; j < inner; j++, o++, it += inc, io += incO)
        gt[it] += g[o] * other[io];
      continue;
    }
    let ia = offA[r];
    let ib = offB[r];
    for (let j = 0; j < inner; j++, o++, ia += incA, ib += incB, it += inc) {
      const gi = g[o];
      switch (op) {
        case Bin.Div:
          gt[it] += left ? gi / y[ib] : -(gi * x[ia]) / (y[ib] * y[ib]);
          break;
        case Bin.Min:
        case Bin.Max: {
          // Ties split the gradient evenly, as torch.minimum/maximum do.
          if (x[ia] === y[ib]) gt[it] += 0.5 * gi;
          else if ((op === Bin.Min ? x[ia] < y[ib] : x[ia] > y[ib]) === left) gt[it] += gi;
          break;
        }
      }
    }
  }
}

/** a + b with numpy broadcasting. */
export function add(a: Tensor, b: Tensor): Tensor {
  return binary(Bin.Add, "add", a, b);
}
/** a − b with numpy broadcasting. */
export function sub(a: Tensor, b: Tensor): Tensor {
  return binary(Bin.Sub, "sub", a, b);
}
/** a ⊙ b with numpy broadcasting. */
export function mul(a: Tensor, b: Tensor): Tensor {
  return binary(Bin.Mul, "mul", a, b);
}
/** a / b with numpy broadcasting. */
export function div(a: Tensor, b: Tensor): Tensor {
  return binary(Bin.Div, "div", a, b);
}
/** Elementwise minimum (torch.minimum; ties share the gradient). */
export function minimum(a: Tensor, b: Tensor): Tensor {
  return binary(Bin.Min, "minimum", a, b);
}
/** Elementwise maximum (torch.maximum; ties share the gradient). */
export function maximum(a: Tensor, b: Tensor): Tensor {
  return binary(Bin.Max, "maximum", a, b);
}

/** Explicit broadcast to `shape` (copy); the gradient sums over the broadcast dimensions. */
export function broadcastTo(x: Tensor, shape: number[]): Tensor {
  const target = broadcastShapes("broadcastTo", x.shape, shape);
  if (!sameShape(target, shape))
    throw new RangeError(`broadcastTo: ${formatShape(x.shape)} cannot be broadcast to ${formatShape(shape)}`);
  const plan = broadcastPlan("broadcastTo", x.shape, [], shape);
  const { rows, inner, offA, incA } = plan;
  const out = allocData(x.dtype, rows * inner);
  for (let r = 0, o = 0; r < rows; r++) for (let j = 0, i = offA[r]; j < inner; j++, i += incA) out[o++] = x.data[i];
  const result = new Tensor(out, shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => {
      const gx = gradBuffer(x);
      for (let r = 0, o = 0; r < rows; r++) for (let j = 0, i = offA[r]; j < inner; j++, i += incA) gx[i] += g[o++];
    });
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Scalar and unary ops. Backward uses the saved input and/or output.

/** a · s */
export function scale(a: Tensor, s: number): Tensor {
  const out = allocData(a.dtype, a.size);
  for (let i = 0; i < out.length; i++) out[i] = a.data[i] * s;
  const result = new Tensor(out, a.shape);
  if (needsGrad(a)) {
    result.setGradFn([a], (g) => {
      const ga = gradBuffer(a);
      for (let i = 0; i < ga.length; i++) ga[i] += g[i] * s;
    });
  }
  return result;
}

/** −a */
export function neg(a: Tensor): Tensor {
  return scale(a, -1);
}

/** a + s */
export function addScalar(a: Tensor, s: number): Tensor {
  const out = allocData(a.dtype, a.size);
  for (let i = 0; i < out.length; i++) out[i] = a.data[i] + s;
  const result = new Tensor(out, a.shape);
  if (needsGrad(a)) {
    result.setGradFn([a], (g) => {
      const ga = gradBuffer(a);
      for (let i = 0; i < ga.length; i++) ga[i] += g[i];
    });
  }
  return result;
}

/** torch.clamp: gradient passes where lo ≤ a ≤ hi. */
export function clamp(a: Tensor, lo: number, hi: number): Tensor {
  const out = allocData(a.dtype, a.size);
  for (let i = 0; i < out.length; i++) out[i] = Math.min(Math.max(a.data[i], lo), hi);
  const result = new Tensor(out, a.shape);
  if (needsGrad(a)) {
    result.setGradFn([a], (g) => {
      const ga = gradBuffer(a);
      for (let i = 0; i < ga.length; i++) {
        const v = a.data[i];
        if (v >= lo && v <= hi) ga[i] += g[i];
      }
    });
  }
  return result;
}

enum Un {
  Exp,
  Log,
  Sigmoid,
  Tanh,
  Relu,
  Softplus,
  Sqrt,
  Square,
  Abs,
}

function unary(op: Un, a: Tensor): Tensor {
  const x = a.data;
  const n = x.length;
  const out = allocData(a.dtype, n);
  switch (op) {
    case Un.Exp:
      for (let i = 0; i < n; i++) out[i] = Math.exp(x[i]);
      break;
    case Un.Log:
      for (let i = 0; i < n; i++) out[i] = Math.log(x[i]);
      break;
    case Un.Sigmoid:
      for (let i = 0; i < n; i++) out[i] = sigmoidScalar(x[i]);
      break;
    case Un.Tanh:
      for (let i = 0; i < n; i++) out[i] = Math.tanh(x[i]);
      break;
    case Un.Relu:
      for (let i = 0; i < n; i++) out[i] = x[i] > 0 ? x[i] : 0;
      break;
    case Un.Softplus:
      for (let i = 0; i < n; i++) out[i] = softplusScalar(x[i]);
      break;
    case Un.Sqrt:
      for (let i = 0; i < n; i++) out[i] = Math.sqrt(x[i]);
      break;
    case Un.Square:
      for (let i = 0; i < n; i++) out[i] = x[i] * x[i];
      break;
    case Un.Abs:
      for (let i = 0; i < n; i++) out[i] = Math.abs(x[i]);
      break;
  }
  const result = new Tensor(out, a.shape);
  if (needsGrad(a)) {
    result.setGradFn([a], (g) => {
      const ga = gradBuffer(a);
      const y = out;
      switch (op) {
        case Un.Exp:
          for (let i = 0; i < n; i++) ga[i] += g[i] * y[i];
          break;
        case Un.Log:
          for (let i = 0; i < n; i++) ga[i] += g[i] / x[i];
          break;
        case Un.Sigmoid:
          for (let i = 0; i < n; i++) ga[i] += g[i] * y[i] * (1 - y[i]);
          break;
        case Un.Tanh:
          for (let i = 0; i < n; i++) ga[i] += g[i] * (1 - y[i] * y[i]);
          break;
        case Un.Relu:
          for (let i = 0; i < n; i++) if (x[i] > 0) ga[i] += g[i];
          break;
        case Un.Softplus:
          // d softplus / dx = sigmoid(x), except above the linear threshold where it is exactly 1.
          for (let i = 0; i < n; i++) ga[i] += x[i] > SOFTPLUS_THRESHOLD ? g[i] : g[i] * sigmoidScalar(x[i]);
          break;
        case Un.Sqrt:
          for (let i = 0; i < n; i++) ga[i] += (0.5 * g[i]) / y[i];
          break;
        case Un.Square:
          for (let i = 0; i < n; i++) ga[i] += 2 * g[i] * x[i];
          break;
        case Un.Abs:
          for (let i = 0; i < n; i++) ga[i] += x[i] > 0 ? g[i] : x[i] < 0 ? -g[i] : 0;
          break;
      }
    });
  }
  return result;
}

export function sigmoidScalar(v: number): number {
  if (v >= 0) return 1 / (1 + Math.exp(-v));
  const e = Math.exp(v);
  return e / (1 + e);
}

/** PyTorch F.softplus default: beta 1, linear above threshold 20. */
const SOFTPLUS_THRESHOLD = 20;
export function softplusScalar(v: number): number {
  if (v > SOFTPLUS_THRESHOLD) return v;
  return Math.max(v, 0) + Math.log1p(Math.exp(-Math.abs(v)));
}

export function exp(a: Tensor): Tensor {
  return unary(Un.Exp, a);
}
export function log(a: Tensor): Tensor {
  return unary(Un.Log, a);
}
export function sigmoid(a: Tensor): Tensor {
  return unary(Un.Sigmoid, a);
}
export function tanh(a: Tensor): Tensor {
  return unary(Un.Tanh, a);
}
/** max(a, 0); the gradient at exactly 0 is 0 (PyTorch). */
export function relu(a: Tensor): Tensor {
  return unary(Un.Relu, a);
}
/** log(1 + eˣ), PyTorch semantics (beta 1, threshold 20). */
export function softplus(a: Tensor): Tensor {
  return unary(Un.Softplus, a);
}
export function sqrt(a: Tensor): Tensor {
  return unary(Un.Sqrt, a);
}
export function square(a: Tensor): Tensor {
  return unary(Un.Square, a);
}
/** |a|; the gradient at 0 is 0 (PyTorch sign convention). */
export function abs(a: Tensor): Tensor {
  return unary(Un.Abs, a);
}
