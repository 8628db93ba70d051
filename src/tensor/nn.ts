/**
 * Neural-network ops with hand-derived backward passes: layerNorm, (log-)softmax with masks,
 * l2Normalize, dropout, maskedFill and the PyTorch GRU cell.
 */

import type { Rng } from "../util/rng.js";
import { sigmoidScalar } from "./elementwise.js";
import { linear } from "./linalg.js";
import { allocData, commonDtype, type Data, formatShape, gradBuffer, needsGrad, Tensor } from "./tensor.js";

/**
 * Masks are Uint8Array with 1 = masked. A mask covers the whole tensor or repeats over the leading
 * dimensions: its length must be the product of some trailing dimensions (e.g. [K] for [B, K]).
 * Element i of the tensor uses mask[i % mask.length].
 */
export function checkMask(op: string, mask: Uint8Array, shape: readonly number[]): void {
  let n = 1;
  if (mask.length === 1 && shape.length === 0) return;
  for (let i = shape.length - 1; i >= 0; i--) {
    n *= shape[i];
    if (mask.length === n) return;
  }
  throw new RangeError(`${op}: mask of ${mask.length} entries does not match trailing dims of ${formatShape(shape)}`);
}

function lastDim(op: string, x: Tensor): [rows: number, k: number] {
  if (x.ndim === 0) throw new RangeError(`${op}: needs at least 1 dimension`);
  const k = x.shape[x.ndim - 1];
  return [k === 0 ? 0 : x.size / k, k];
}

/** PyTorch LayerNorm over the last dim: (x − μ)/√(σ² + eps)·weight + bias, σ² biased. */
export function layerNorm(x: Tensor, weight: Tensor | null, bias: Tensor | null, eps = 1e-5): Tensor {
  const inputs = [x, weight, bias].filter((t): t is Tensor => t !== null);
  const dtype = commonDtype("layerNorm", ...inputs);
  const [rows, k] = lastDim("layerNorm", x);
  for (const p of [weight, bias]) {
    if (p && (p.ndim !== 1 || p.shape[0] !== k))
      throw new RangeError(`layerNorm: affine parameter ${formatShape(p.shape)} is not [${k}]`);
  }
  const xs = x.data;
  const xhat = new Float64Array(x.size);
  const rstd = new Float64Array(rows);
  const out = allocData(dtype, x.size);
  const w = weight?.data;
  const b = bias?.data;
  for (let r = 0; r < rows; r++) {
    const o = r * k;
    let mu = 0;
    for (let j = 0; j < k; j++) mu += xs[o + j];
    mu /= k;
    let v = 0;
    for (let j = 0; j < k; j++) {
      const d = xs[o + j] - mu;
      v += d * d;
    }
    const s = 1 / Math.sqrt(v / k + eps);
    rstd[r] = s;
    for (let j = 0; j < k; j++) {
      const h = (xs[o + j] - mu) * s;
      xhat[o + j] = h;
      out[o + j] = (w ? h * w[j] : h) + (b ? b[j] : 0);
    }
  }
  const result = new Tensor(out, x.shape);
  if (!needsGrad(...inputs)) return result;
  result.setGradFn(inputs, (g) =>
    layerNormBackward(
      g,
      xhat,
      rstd,
      k,
      w,
      weight?.requiresGrad ? gradBuffer(weight) : null,
      bias?.requiresGrad ? gradBuffer(bias) : null,
      x.requiresGrad ? gradBuffer(x) : null,
    ),
  );
  return result;
}

/** layerNorm's backward over rows of k: the affine parameters' gradients and dx (when given). */
function layerNormBackward(
  g: Data,
  xhat: Float64Array,
  rstd: Float64Array,
  k: number,
  w: Data | undefined,
  gw: Data | null,
  gb: Data | null,
  gx: Data | null,
): void {
  const rows = rstd.length;
  for (let r = 0; r < rows; r++) {
    const o = r * k;
    let meanG = 0;
    let meanGH = 0;
    for (let j = 0; j < k; j++) {
      const gj = g[o + j];
      if (gw) gw[j] += gj * xhat[o + j];
      if (gb) gb[j] += gj;
      const gh = w ? gj * w[j] : gj;
      meanG += gh;
      meanGH += gh * xhat[o + j];
    }
    if (!gx) continue;
    meanG /= k;
    meanGH /= k;
    const s = rstd[r];
    for (let j = 0; j < k; j++) {
      const gh = w ? g[o + j] * w[j] : g[o + j];
      gx[o + j] += s * (gh - meanG - xhat[o + j] * meanGH);
    }
  }
}

/**
 * Row-wise (last dim) softmax statistics: writes log-probabilities into `logp` (−∞ where masked;
 * a fully masked row is all −∞). Shared by softmax, logSoftmax and crossEntropy.
 */
export function logSoftmaxRows(x: Data, rows: number, k: number, mask: Uint8Array | undefined, logp: Data): void {
  for (let r = 0; r < rows; r++) {
    const o = r * k;
    const m = maskRow(mask, o);
    let max = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < k; j++) if (!mask?.[m + j] && x[o + j] > max) max = x[o + j];
    let s = 0;
    for (let j = 0; j < k; j++) if (!mask?.[m + j]) s += Math.exp(x[o + j] - max);
    const lse = max + Math.log(s); // −∞ for a fully masked row
    for (let j = 0; j < k; j++) {
      logp[o + j] = mask?.[m + j] ? Number.NEGATIVE_INFINITY : x[o + j] - lse;
    }
  }
}

/**
 * Where the row starting at element `o` begins in a mask that repeats over the leading dims (its
 * length is a multiple of the row length, see checkMask): one modulo per row instead of per element.
 */
function maskRow(mask: Uint8Array | undefined, o: number): number {
  return mask === undefined ? 0 : o % mask.length;
}

/** Softmax over the last dim; masked entries (mask = 1) get probability 0, a fully masked row is all 0. */
export function softmax(x: Tensor, mask?: Uint8Array): Tensor {
  const [rows, k] = lastDim("softmax", x);
  if (mask) checkMask("softmax", mask, x.shape);
  const p = allocData(x.dtype, x.size);
  logSoftmaxRows(x.data, rows, k, mask, p);
  for (let i = 0; i < p.length; i++) p[i] = Math.exp(p[i]);
  const result = new Tensor(p, x.shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => softmaxBackward(g, p, rows, k, mask, gradBuffer(x)));
  }
  return result;
}

/** softmax's backward: gx += p ⊙ (g − p·g) per row; masked entries get no gradient (a NaN/∞ upstream there is never read). */
function softmaxBackward(g: Data, p: Data, rows: number, k: number, mask: Uint8Array | undefined, gx: Data): void {
  for (let r = 0; r < rows; r++) {
    const o = r * k;
    const m = maskRow(mask, o);
    let dot = 0;
    for (let j = 0; j < k; j++) if (!mask?.[m + j]) dot += p[o + j] * g[o + j];
    for (let j = 0; j < k; j++) if (!mask?.[m + j]) gx[o + j] += p[o + j] * (g[o + j] - dot);
  }
}

/** log-softmax over the last dim; masked entries are −∞ and get zero gradient (no NaN, even for a fully masked row). */
export function logSoftmax(x: Tensor, mask?: Uint8Array): Tensor {
  const [rows, k] = lastDim("logSoftmax", x);
  if (mask) checkMask("logSoftmax", mask, x.shape);
  const logp = allocData(x.dtype, x.size);
  logSoftmaxRows(x.data, rows, k, mask, logp);
  const result = new Tensor(logp, x.shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => logSoftmaxBackward(g, logp, rows, k, mask, gradBuffer(x)));
  }
  return result;
}

/** logSoftmax's backward: gx += g − softmax·Σg per row; masked entries get no gradient. */
function logSoftmaxBackward(
  g: Data,
  logp: Data,
  rows: number,
  k: number,
  mask: Uint8Array | undefined,
  gx: Data,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * k;
    const m = maskRow(mask, o);
    let gsum = 0;
    for (let j = 0; j < k; j++) if (!mask?.[m + j]) gsum += g[o + j];
    for (let j = 0; j < k; j++) {
      if (!mask?.[m + j]) gx[o + j] += g[o + j] - Math.exp(logp[o + j]) * gsum;
    }
  }
}

/** F.normalize(x, dim = −1): x / max(‖x‖₂, eps). */
export function l2Normalize(x: Tensor, eps = 1e-12): Tensor {
  const [rows, k] = lastDim("l2Normalize", x);
  const out = allocData(x.dtype, x.size);
  const norms = new Float64Array(rows);
  const xs = x.data;
  for (let r = 0; r < rows; r++) {
    const o = r * k;
    let s = 0;
    for (let j = 0; j < k; j++) s += xs[o + j] * xs[o + j];
    const n = Math.sqrt(s);
    norms[r] = n;
    const d = Math.max(n, eps);
    for (let j = 0; j < k; j++) out[o + j] = xs[o + j] / d;
  }
  const result = new Tensor(out, x.shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => l2NormalizeBackward(g, xs, norms, k, eps, gradBuffer(x)));
  }
  return result;
}

/** l2Normalize's backward: y = x/‖x‖ ⇒ dx = (g − y·(y·g)) / ‖x‖, y recomputed in float64 from x (once per row). */
function l2NormalizeBackward(g: Data, xs: Data, norms: Float64Array, k: number, eps: number, gx: Data): void {
  const y = new Float64Array(k);
  for (let r = 0; r < norms.length; r++) {
    const o = r * k;
    const n = norms[r];
    if (n > eps) {
      let dot = 0;
      for (let j = 0; j < k; j++) {
        y[j] = xs[o + j] / n;
        dot += y[j] * g[o + j];
      }
      for (let j = 0; j < k; j++) gx[o + j] += (g[o + j] - y[j] * dot) / n;
    } else {
      for (let j = 0; j < k; j++) gx[o + j] += g[o + j] / eps;
    }
  }
}

/**
 * Inverted dropout: in training each element is zeroed with probability p (mask drawn from `rng`)
 * and survivors are scaled by 1/(1 − p); identity when !training or p = 0.
 */
export function dropout(x: Tensor, p: number, rng: Rng, training: boolean): Tensor {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`dropout: p = ${p} is not in [0, 1]`);
  if (!training || p === 0) return x;
  const keep = new Uint8Array(x.size);
  const scaleBy = p === 1 ? 0 : 1 / (1 - p);
  const threshold = p * 4294967296; // one 32-bit draw per element
  const out = allocData(x.dtype, x.size);
  for (let i = 0; i < keep.length; i++) {
    if (rng.nextUint32() >= threshold) {
      keep[i] = 1;
      out[i] = x.data[i] * scaleBy;
    }
  }
  const result = new Tensor(out, x.shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => {
      const gx = gradBuffer(x);
      for (let i = 0; i < gx.length; i++) if (keep[i]) gx[i] += g[i] * scaleBy;
    });
  }
  return result;
}

/** Replaces masked entries (mask = 1) by `value`; they get no gradient. */
export function maskedFill(x: Tensor, mask: Uint8Array, value: number): Tensor {
  checkMask("maskedFill", mask, x.shape);
  const ml = mask.length;
  const out = allocData(x.dtype, x.size);
  for (let i = 0; i < out.length; i++) out[i] = mask[i % ml] ? value : x.data[i];
  const result = new Tensor(out, x.shape);
  if (needsGrad(x)) {
    result.setGradFn([x], (g) => {
      const gx = gradBuffer(x);
      for (let i = 0; i < gx.length; i++) if (!mask[i % ml]) gx[i] += g[i];
    });
  }
  return result;
}

/**
 * PyTorch nn.GRUCell (gate order r, z, n):
 *   r = σ(W_ir x + b_ir + W_hr h + b_hr),  z = σ(W_iz x + b_iz + W_hz h + b_hz),
 *   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h.
 * x [N, in], h [N, H], weightIh [3H, in], weightHh [3H, H], biases [3H] or null.
 */
export function gruCell(
  x: Tensor,
  h: Tensor,
  weightIh: Tensor,
  weightHh: Tensor,
  biasIh: Tensor | null,
  biasHh: Tensor | null,
): Tensor {
  const H = h.shape[h.ndim - 1];
  if (weightIh.shape[0] !== 3 * H || weightHh.shape[0] !== 3 * H || weightHh.shape[1] !== H)
    throw new RangeError(
      `gruCell: weights ${formatShape(weightIh.shape)}, ${formatShape(weightHh.shape)} do not fit hidden size ${H}`,
    );
  return gruGates(linear(x, weightIh, biasIh), linear(h, weightHh, biasHh), h);
}

/** The GRU gate arithmetic given gi = W_ih x + b_ih and gh = W_hh h + b_hh (both [N, 3H]). */
function gruGates(gi: Tensor, gh: Tensor, h: Tensor): Tensor {
  const dtype = commonDtype("gruCell", gi, gh, h);
  const H = h.shape[h.ndim - 1];
  const rows = H === 0 ? 0 : h.size / H;
  if (gi.size !== rows * 3 * H) throw new RangeError(`gruCell: input rows do not match h ${formatShape(h.shape)}`);
  const r = new Float64Array(rows * H);
  const z = new Float64Array(rows * H);
  const n = new Float64Array(rows * H);
  const out = allocData(dtype, rows * H);
  const a = gi.data;
  const b = gh.data;
  const hs = h.data;
  for (let i = 0; i < rows; i++) {
    const g3 = i * 3 * H;
    for (let j = 0; j < H; j++) {
      const o = i * H + j;
      const rj = sigmoidScalar(a[g3 + j] + b[g3 + j]);
      const zj = sigmoidScalar(a[g3 + H + j] + b[g3 + H + j]);
      const nj = Math.tanh(a[g3 + 2 * H + j] + rj * b[g3 + 2 * H + j]);
      r[o] = rj;
      z[o] = zj;
      n[o] = nj;
      out[o] = (1 - zj) * nj + zj * hs[o];
    }
  }
  const result = new Tensor(out, h.shape);
  if (!needsGrad(gi, gh, h)) return result;
  result.setGradFn([gi, gh, h], (g) => {
    const ggi = gi.requiresGrad ? gradBuffer(gi) : null;
    const ggh = gh.requiresGrad ? gradBuffer(gh) : null;
    const gh0 = h.requiresGrad ? gradBuffer(h) : null;
    for (let i = 0; i < rows; i++) {
      const g3 = i * 3 * H;
      for (let j = 0; j < H; j++) {
        const o = i * H + j;
        const go = g[o];
        const rj = r[o];
        const zj = z[o];
        const nj = n[o];
        const dPreN = go * (1 - zj) * (1 - nj * nj);
        const dPreZ = go * (hs[o] - nj) * zj * (1 - zj);
        const dPreR = dPreN * b[g3 + 2 * H + j] * rj * (1 - rj);
        if (gh0) gh0[o] += go * zj;
        if (ggi) {
          ggi[g3 + j] += dPreR;
          ggi[g3 + H + j] += dPreZ;
          ggi[g3 + 2 * H + j] += dPreN;
        }
        if (ggh) {
          ggh[g3 + j] += dPreR;
          ggh[g3 + H + j] += dPreZ;
          ggh[g3 + 2 * H + j] += dPreN * rj;
        }
      }
    }
  });
  return result;
}
