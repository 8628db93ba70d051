/**
 * Elementwise ops: numpy-broadcasting binary ops, scalar ops and unary activations. Every op is one
 * table entry holding its forward and, directly under it, its backward (the derivative it applies),
 * so a derivative is always read beside the function it differentiates. The loops are written out
 * per op (no per-element callbacks) so V8 compiles each one to a tight, monomorphic loop.
 */
import { allocData, commonDtype, type Data, formatShape, gradBuffer, needsGrad, shapeSize, Tensor } from "./tensor.js";

// ---------------------------------------------------------------------------------------------
// Broadcasting. Shapes align from the right; a dimension broadcasts when it is 1 (or missing).
// A plan collapses the output into `rows` × `inner` where the inner loop walks the last dimension
// with step 0 or 1 in each input, and every row starts at a precomputed offset.

interface BroadcastPlan {
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

function broadcastPlan(op: string, a: readonly number[], b: readonly number[], target?: number[]): BroadcastPlan {
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

// ---------------------------------------------------------------------------------------------
// Binary ops. Each entry is the op's forward and, right under it, the gradient of each operand:
// ga += g·∂f/∂a and gb += g·∂f/∂b, accumulated through the same broadcast plan (so a broadcast
// operand sums the gradient over the dimensions it was repeated along). Every loop visits the
// output elements o in order with the operand elements ia, ib they were computed from.

interface BinaryOp {
  forward(p: BroadcastPlan, a: Data, b: Data, out: Data): void;
  backwardA(p: BroadcastPlan, a: Data, b: Data, g: Data, ga: Data): void;
  backwardB(p: BroadcastPlan, a: Data, b: Data, g: Data, gb: Data): void;
}

const BINARY = {
  add: {
    forward({ rows, inner, offA, offB, incA, incB }, a, b, out) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB) out[o] = a[ia] + b[ib];
    },
    // ∂/∂a = 1
    backwardA({ rows, inner, offA, incA }, _a, _b, g, ga) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r]; j < inner; j++, o++, ia += incA) ga[ia] += g[o];
    },
    // ∂/∂b = 1
    backwardB({ rows, inner, offB, incB }, _a, _b, g, gb) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ib = offB[r]; j < inner; j++, o++, ib += incB) gb[ib] += g[o];
    },
  },
  sub: {
    forward({ rows, inner, offA, offB, incA, incB }, a, b, out) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB) out[o] = a[ia] - b[ib];
    },
    // ∂/∂a = 1
    backwardA({ rows, inner, offA, incA }, _a, _b, g, ga) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r]; j < inner; j++, o++, ia += incA) ga[ia] += g[o];
    },
    // ∂/∂b = −1
    backwardB({ rows, inner, offB, incB }, _a, _b, g, gb) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ib = offB[r]; j < inner; j++, o++, ib += incB) gb[ib] -= g[o];
    },
  },
  mul: {
    forward({ rows, inner, offA, offB, incA, incB }, a, b, out) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB) out[o] = a[ia] * b[ib];
    },
    // ∂/∂a = b
    backwardA({ rows, inner, offA, offB, incA, incB }, _a, b, g, ga) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB) ga[ia] += g[o] * b[ib];
    },
    // ∂/∂b = a
    backwardB({ rows, inner, offA, offB, incA, incB }, a, _b, g, gb) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB) gb[ib] += g[o] * a[ia];
    },
  },
  div: {
    forward({ rows, inner, offA, offB, incA, incB }, a, b, out) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB) out[o] = a[ia] / b[ib];
    },
    // ∂/∂a = 1/b
    backwardA({ rows, inner, offA, offB, incA, incB }, _a, b, g, ga) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB) ga[ia] += g[o] / b[ib];
    },
    // ∂/∂b = −a/b²
    backwardB({ rows, inner, offA, offB, incA, incB }, a, b, g, gb) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB)
          gb[ib] += -(g[o] * a[ia]) / (b[ib] * b[ib]);
    },
  },
  // torch.minimum / torch.maximum: the gradient goes to the chosen operand; ties split it evenly
  // (a NaN comparison sends it to b).
  minimum: {
    forward({ rows, inner, offA, offB, incA, incB }, a, b, out) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB)
          out[o] = Math.min(a[ia], b[ib]);
    },
    // ∂/∂a = ½ where a = b, 1 where a < b, else 0
    backwardA({ rows, inner, offA, offB, incA, incB }, a, b, g, ga) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB)
          if (a[ia] === b[ib]) ga[ia] += 0.5 * g[o];
          else if (a[ia] < b[ib]) ga[ia] += g[o];
    },
    // ∂/∂b = ½ where a = b, 0 where a < b, else 1
    backwardB({ rows, inner, offA, offB, incA, incB }, a, b, g, gb) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB)
          if (a[ia] === b[ib]) gb[ib] += 0.5 * g[o];
          else if (!(a[ia] < b[ib])) gb[ib] += g[o];
    },
  },
  maximum: {
    forward({ rows, inner, offA, offB, incA, incB }, a, b, out) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB)
          out[o] = Math.max(a[ia], b[ib]);
    },
    // ∂/∂a = ½ where a = b, 1 where a > b, else 0
    backwardA({ rows, inner, offA, offB, incA, incB }, a, b, g, ga) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB)
          if (a[ia] === b[ib]) ga[ia] += 0.5 * g[o];
          else if (a[ia] > b[ib]) ga[ia] += g[o];
    },
    // ∂/∂b = ½ where a = b, 0 where a > b, else 1
    backwardB({ rows, inner, offA, offB, incA, incB }, a, b, g, gb) {
      for (let r = 0, o = 0; r < rows; r++)
        for (let j = 0, ia = offA[r], ib = offB[r]; j < inner; j++, o++, ia += incA, ib += incB)
          if (a[ia] === b[ib]) gb[ib] += 0.5 * g[o];
          else if (!(a[ia] > b[ib])) gb[ib] += g[o];
    },
  },
} satisfies Record<string, BinaryOp>;

function binary(name: keyof typeof BINARY, a: Tensor, b: Tensor): Tensor {
  const op: BinaryOp = BINARY[name];
  const dtype = commonDtype(name, a, b);
  const plan = planFor(name, a, b);
  const out = allocData(dtype, plan.rows * plan.inner);
  op.forward(plan, a.data, b.data, out);
  const result = new Tensor(out, plan.shape);
  if (needsGrad(a, b)) {
    result.setGradFn([a, b], (g) => {
      if (a.requiresGrad) op.backwardA(plan, a.data, b.data, g, gradBuffer(a));
      if (b.requiresGrad) op.backwardB(plan, a.data, b.data, g, gradBuffer(b));
    });
  }
  return result;
}

/** a + b with numpy broadcasting. */
export function add(a: Tensor, b: Tensor): Tensor {
  return binary("add", a, b);
}
/** a − b with numpy broadcasting. */
export function sub(a: Tensor, b: Tensor): Tensor {
  return binary("sub", a, b);
}
/** a ⊙ b with numpy broadcasting. */
export function mul(a: Tensor, b: Tensor): Tensor {
  return binary("mul", a, b);
}
/** a / b with numpy broadcasting. */
export function div(a: Tensor, b: Tensor): Tensor {
  return binary("div", a, b);
}
/** Elementwise minimum (torch.minimum; ties share the gradient). */
export function minimum(a: Tensor, b: Tensor): Tensor {
  return binary("minimum", a, b);
}
/** Elementwise maximum (torch.maximum; ties share the gradient). */
export function maximum(a: Tensor, b: Tensor): Tensor {
  return binary("maximum", a, b);
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
// Unary ops (scalar parameters included). Each entry is the op's forward y = f(x) and, right
// under it, its backward gx += g·f'(x), written with the saved input x and/or output y.

interface UnaryOp {
  forward(x: Data, y: Data): void;
  backward(x: Data, y: Data, g: Data, gx: Data): void;
}

/** PyTorch F.softplus default: beta 1, linear above threshold 20. */
const SOFTPLUS_THRESHOLD = 20;

const UNARY = {
  exp: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = Math.exp(x[i]);
    },
    // (eˣ)' = eˣ = y
    backward(_x, y, g, gx) {
      for (let i = 0; i < y.length; i++) gx[i] += g[i] * y[i];
    },
  },
  log: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = Math.log(x[i]);
    },
    // (log x)' = 1/x
    backward(x, _y, g, gx) {
      for (let i = 0; i < x.length; i++) gx[i] += g[i] / x[i];
    },
  },
  sigmoid: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = sigmoidScalar(x[i]);
    },
    // σ' = σ(1 − σ) = y(1 − y)
    backward(_x, y, g, gx) {
      for (let i = 0; i < y.length; i++) gx[i] += g[i] * y[i] * (1 - y[i]);
    },
  },
  tanh: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = Math.tanh(x[i]);
    },
    // tanh' = 1 − tanh² = 1 − y²
    backward(_x, y, g, gx) {
      for (let i = 0; i < y.length; i++) gx[i] += g[i] * (1 - y[i] * y[i]);
    },
  },
  relu: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = x[i] > 0 ? x[i] : 0;
    },
    // relu' = 1 for x > 0, else 0 (also at exactly 0, as PyTorch)
    backward(x, _y, g, gx) {
      for (let i = 0; i < x.length; i++) if (x[i] > 0) gx[i] += g[i];
    },
  },
  softplus: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = softplusScalar(x[i]);
    },
    // softplus' = σ(x), except above the linear threshold where it is exactly 1
    backward(x, _y, g, gx) {
      for (let i = 0; i < x.length; i++) gx[i] += x[i] > SOFTPLUS_THRESHOLD ? g[i] : g[i] * sigmoidScalar(x[i]);
    },
  },
  sqrt: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = Math.sqrt(x[i]);
    },
    // (√x)' = 1/(2√x) = 1/(2y)
    backward(_x, y, g, gx) {
      for (let i = 0; i < y.length; i++) gx[i] += (0.5 * g[i]) / y[i];
    },
  },
  square: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = x[i] * x[i];
    },
    // (x²)' = 2x
    backward(x, _y, g, gx) {
      for (let i = 0; i < x.length; i++) gx[i] += 2 * g[i] * x[i];
    },
  },
  abs: {
    forward(x, y) {
      for (let i = 0; i < x.length; i++) y[i] = Math.abs(x[i]);
    },
    // |x|' = sign(x), 0 at 0 (PyTorch)
    backward(x, _y, g, gx) {
      for (let i = 0; i < x.length; i++) gx[i] += x[i] > 0 ? g[i] : x[i] < 0 ? -g[i] : 0;
    },
  },
} satisfies Record<string, UnaryOp>;

/**
 * Ops with scalar parameters (p, q): the same shape as the unary table, the scalars passed in, so
 * the loops stay module-level functions whose optimised code V8 keeps (see src/tensor/README.md).
 */
interface ScalarOp {
  forward(x: Data, y: Data, p: number, q: number): void;
  backward(x: Data, y: Data, g: Data, gx: Data, p: number, q: number): void;
}

const WITH_SCALARS = {
  scale: {
    forward(x, y, s) {
      for (let i = 0; i < x.length; i++) y[i] = x[i] * s;
    },
    // (s·x)' = s
    backward(_x, _y, g, gx, s) {
      for (let i = 0; i < gx.length; i++) gx[i] += g[i] * s;
    },
  },
  addScalar: {
    forward(x, y, s) {
      for (let i = 0; i < x.length; i++) y[i] = x[i] + s;
    },
    // (x + s)' = 1
    backward(_x, _y, g, gx) {
      for (let i = 0; i < gx.length; i++) gx[i] += g[i];
    },
  },
  clamp: {
    forward(x, y, lo, hi) {
      for (let i = 0; i < x.length; i++) y[i] = Math.min(Math.max(x[i], lo), hi);
    },
    // clamp' = 1 on the closed interval lo ≤ x ≤ hi, else 0 (PyTorch)
    backward(x, _y, g, gx, lo, hi) {
      for (let i = 0; i < x.length; i++) if (x[i] >= lo && x[i] <= hi) gx[i] += g[i];
    },
  },
} satisfies Record<string, ScalarOp>;

function unary(op: UnaryOp, a: Tensor): Tensor {
  const out = allocData(a.dtype, a.size);
  op.forward(a.data, out);
  const result = new Tensor(out, a.shape);
  if (needsGrad(a)) result.setGradFn([a], (g) => op.backward(a.data, out, g, gradBuffer(a)));
  return result;
}

function withScalars(op: ScalarOp, a: Tensor, p: number, q = 0): Tensor {
  const out = allocData(a.dtype, a.size);
  op.forward(a.data, out, p, q);
  const result = new Tensor(out, a.shape);
  if (needsGrad(a)) result.setGradFn([a], (g) => op.backward(a.data, out, g, gradBuffer(a), p, q));
  return result;
}

export function sigmoidScalar(v: number): number {
  if (v >= 0) return 1 / (1 + Math.exp(-v));
  const e = Math.exp(v);
  return e / (1 + e);
}

export function softplusScalar(v: number): number {
  if (v > SOFTPLUS_THRESHOLD) return v;
  return Math.max(v, 0) + Math.log1p(Math.exp(-Math.abs(v)));
}

/** a · s */
export function scale(a: Tensor, s: number): Tensor {
  return withScalars(WITH_SCALARS.scale, a, s);
}
/** −a */
export function neg(a: Tensor): Tensor {
  return scale(a, -1);
}
/** a + s */
export function addScalar(a: Tensor, s: number): Tensor {
  return withScalars(WITH_SCALARS.addScalar, a, s);
}
/** torch.clamp: gradient passes where lo ≤ a ≤ hi. */
export function clamp(a: Tensor, lo: number, hi: number): Tensor {
  return withScalars(WITH_SCALARS.clamp, a, lo, hi);
}
export function exp(a: Tensor): Tensor {
  return unary(UNARY.exp, a);
}
export function log(a: Tensor): Tensor {
  return unary(UNARY.log, a);
}
export function sigmoid(a: Tensor): Tensor {
  return unary(UNARY.sigmoid, a);
}
export function tanh(a: Tensor): Tensor {
  return unary(UNARY.tanh, a);
}
/** max(a, 0); the gradient at exactly 0 is 0 (PyTorch). */
export function relu(a: Tensor): Tensor {
  return unary(UNARY.relu, a);
}
/** log(1 + eˣ), PyTorch semantics (beta 1, threshold 20). */
export function softplus(a: Tensor): Tensor {
  return unary(UNARY.softplus, a);
}
export function sqrt(a: Tensor): Tensor {
  return unary(UNARY.sqrt, a);
}
export function square(a: Tensor): Tensor {
  return unary(UNARY.square, a);
}
/** |a|; the gradient at 0 is 0 (PyTorch sign convention). */
export function abs(a: Tensor): Tensor {
  return unary(UNARY.abs, a);
}
