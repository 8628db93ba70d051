/**
 * Fused V4-1 state update (one op instead of seven, the selector's hottest per-step code):
 *   g = σ(a + b),  y = ĉ + g ⊙ (h − ĉ)  (= g⊙h + (1−g)⊙ĉ),  h' = y / max(‖y‖, 1e-12)
 * where a = W_g[:, :H]·h and b = W_g[:, H:]·ĉ + b_g are computed outside (so b can be precomputed
 * once per candidate slot and gathered). Hand-derived backward:
 *   dy = (dh' − ŷ(ŷ·dh'))/‖y‖,  dz = dy⊙(h − ĉ)⊙g(1−g) → da = db = dz,  dh = dy⊙g,  dĉ = dy⊙(1−g).
 * Checked by the model's finite-difference and PyTorch-golden gradient tests.
 */
import { native } from "../tensor/native.js";
import { allocData, commonDtype, type Data, gradBuffer, needsGrad, Tensor } from "../tensor/tensor.js";

export function gateUpdate(a: Tensor, b: Tensor, h: Tensor, c: Tensor): Tensor {
  const dtype = commonDtype("gateUpdate", a, b, h, c);
  const H = h.shape[h.ndim - 1];
  const rows = H === 0 ? 0 : h.size / H;
  for (const t of [a, b, c])
    if (t.size !== h.size) throw new RangeError(`gateUpdate: operand of ${t.size} values, expected ${h.size}`);
  const g = new Float64Array(h.size);
  const y = new Float64Array(h.size);
  const norms = new Float64Array(rows);
  const out = allocData(dtype, h.size);
  const A = a.data;
  const Bd = b.data;
  const hs = h.data;
  const cs = c.data;
  // Native when available: Math.exp is half of this loop's time in V8.
  if (native.addon !== null && h.size > 0) native.addon.gateForward(A, Bd, hs, cs, H, out, g, y, norms);
  else gateForwardTypeScript(A, Bd, hs, cs, H, out, g, y, norms);
  const result = new Tensor(out, h.shape);
  if (!needsGrad(a, b, h, c)) return result;
  result.setGradFn([a, b, h, c], (grad) =>
    gateBackward(
      grad,
      hs,
      cs,
      g,
      y,
      norms,
      H,
      a.requiresGrad ? gradBuffer(a) : null,
      b.requiresGrad ? gradBuffer(b) : null,
      h.requiresGrad ? gradBuffer(h) : null,
      c.requiresGrad ? gradBuffer(c) : null,
    ),
  );
  return result;
}

/**
 * The backward loop (rows of H values): accumulates into the gradients that are given. A module-level
 * function, not a closure per call, so V8 keeps its optimised code (see src/tensor/README.md).
 */
function gateBackward(
  grad: Data,
  hs: Data,
  cs: Data,
  g: Float64Array,
  y: Float64Array,
  norms: Float64Array,
  H: number,
  ga: Data | null,
  gb: Data | null,
  gh: Data | null,
  gc: Data | null,
): void {
  const rows = norms.length;
  const yHat = new Float64Array(H); // ŷ = y/‖y‖ of the row, divided once
  for (let r = 0; r < rows; r++) {
    const o = r * H;
    const n = norms[r];
    const unit = n > 1e-12;
    let dot = 0;
    if (unit)
      for (let j = 0; j < H; j++) {
        yHat[j] = y[o + j] / n;
        dot += yHat[j] * grad[o + j];
      }
    const inv = 1 / Math.max(n, 1e-12);
    for (let j = o; j < o + H; j++) {
      const dy = unit ? (grad[j] - yHat[j - o] * dot) * inv : grad[j] * inv;
      const gj = g[j];
      const dz = dy * (hs[j] - cs[j]) * gj * (1 - gj);
      if (ga) ga[j] += dz;
      if (gb) gb[j] += dz;
      if (gh) gh[j] += dy * gj;
      if (gc) gc[j] += dy * (1 - gj);
    }
  }
}

/** The forward loop (also the reference for the native gateForward; rows of H values). */
export function gateForwardTypeScript(
  A: Data,
  Bd: Data,
  hs: Data,
  cs: Data,
  H: number,
  out: Data,
  g: Float64Array,
  y: Float64Array,
  norms: Float64Array,
): void {
  const rows = norms.length;
  for (let r = 0; r < rows; r++) {
    const o = r * H;
    let sq = 0;
    for (let j = o; j < o + H; j++) {
      const gj = 1 / (1 + Math.exp(-(A[j] + Bd[j])));
      const yj = cs[j] + gj * (hs[j] - cs[j]);
      g[j] = gj;
      y[j] = yj;
      sq += yj * yj;
    }
    const n = Math.sqrt(sq);
    norms[r] = n;
    const inv = 1 / Math.max(n, 1e-12);
    for (let j = o; j < o + H; j++) out[j] = y[j] * inv;
  }
}
