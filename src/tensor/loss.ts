/** Cross-entropy over the last dim with PyTorch label smoothing, class masks, row weights and ignore_index. */
import { checkMask, logSoftmaxRows } from "./nn.js";
import { allocData, type Data, formatShape, gradBuffer, needsGrad, Tensor } from "./tensor.js";

export interface CrossEntropyOptions {
  /** ε of PyTorch's label_smoothing: target = (1 − ε)·onehot + ε/K' over the K' unmasked classes. */
  labelSmoothing?: number;
  /** 1 = class excluded from the softmax (and from smoothing); [N·K] or [K] (shared by rows). */
  mask?: Uint8Array;
  /** Per-row weights [N] (a Tensor may require grad). */
  weights?: Tensor | Data;
  /** "mean" (default) = Σ wᵢℓᵢ / Σ wᵢ over non-ignored rows (wᵢ = 1 without weights); "sum" = Σ wᵢℓᵢ; "none" = [N] of wᵢℓᵢ. */
  reduction?: "mean" | "sum" | "none";
}

/**
 * logits [N, K] (or [..., K], rows flattened), labels [N]. A negative label (e.g. −100) marks an
 * ignored row (PyTorch ignore_index): loss 0, no gradient, not counted by "mean". A label that
 * points at a masked class is an error (its loss would be infinite).
 */
export function crossEntropy(logits: Tensor, labels: Int32Array, opts: CrossEntropyOptions = {}): Tensor {
  const eps = opts.labelSmoothing ?? 0;
  const reduction = opts.reduction ?? "mean";
  if (!(eps >= 0 && eps <= 1)) throw new RangeError(`crossEntropy: labelSmoothing ${eps} is not in [0, 1]`);
  if (logits.ndim === 0) throw new RangeError("crossEntropy: logits must have a class dimension");
  const k = logits.shape[logits.ndim - 1];
  const rows = k === 0 ? 0 : logits.size / k;
  if (labels.length !== rows)
    throw new RangeError(`crossEntropy: ${labels.length} labels for ${rows} rows of ${formatShape(logits.shape)}`);
  const mask = opts.mask;
  if (mask) checkMask("crossEntropy", mask, logits.shape);
  const ml = mask ? mask.length : 1;
  const wTensor = opts.weights instanceof Tensor ? opts.weights : null;
  const w = opts.weights instanceof Tensor ? opts.weights.data : opts.weights;
  if (w && w.length !== rows) throw new RangeError(`crossEntropy: ${w.length} weights for ${rows} rows`);

  const logp = new Float64Array(logits.size);
  logSoftmaxRows(logits.data, rows, k, mask, logp);
  const perRow = new Float64Array(rows); // unweighted ℓᵢ
  const classes = new Float64Array(rows); // K' per row
  let weightTotal = 0;
  for (let r = 0; r < rows; r++) {
    const y = labels[r];
    if (y < 0) continue;
    if (y >= k) throw new RangeError(`crossEntropy: label ${y} of row ${r} is out of range [0, ${k})`);
    const o = r * k;
    if (mask?.[(o + y) % ml]) throw new RangeError(`crossEntropy: label ${y} of row ${r} is a masked class`);
    let smooth = 0;
    let count = 0;
    for (let j = 0; j < k; j++) {
      if (mask?.[(o + j) % ml]) continue;
      smooth -= logp[o + j];
      count++;
    }
    classes[r] = count;
    perRow[r] = (1 - eps) * -logp[o + y] + (eps > 0 ? (eps * smooth) / count : 0);
    weightTotal += w ? w[r] : 1;
  }

  let result: Tensor;
  if (reduction === "none") {
    const out = allocData(logits.dtype, rows);
    for (let r = 0; r < rows; r++) out[r] = labels[r] < 0 ? 0 : (w ? w[r] : 1) * perRow[r];
    result = new Tensor(out, logits.shape.slice(0, -1));
  } else {
    let total = 0;
    for (let r = 0; r < rows; r++) if (labels[r] >= 0) total += (w ? w[r] : 1) * perRow[r];
    const out = allocData(logits.dtype, 1);
    // PyTorch: a mean over zero (weight) rows is NaN.
    out[0] = reduction === "mean" ? total / weightTotal : total;
    result = new Tensor(out, []);
  }
  if (!needsGrad(logits, wTensor)) return result;

  const mean = reduction === "mean" ? result.data[0] : 0;
  result.setGradFn(wTensor ? [logits, wTensor] : [logits], (g) => {
    // Upstream gradient of row r's unweighted loss ℓᵢ, and of its weight.
    const rowGrad = (r: number): number => {
      const gr = reduction === "none" ? g[r] : reduction === "sum" ? g[0] : g[0] / weightTotal;
      return gr * (w ? w[r] : 1);
    };
    if (logits.requiresGrad) {
      const gx = gradBuffer(logits);
      for (let r = 0; r < rows; r++) {
        const y = labels[r];
        if (y < 0) continue;
        const gr = rowGrad(r);
        if (gr === 0) continue;
        const o = r * k;
        const spread = eps / classes[r];
        for (let j = 0; j < k; j++) {
          if (mask?.[(o + j) % ml]) continue;
          const target = (j === y ? 1 - eps : 0) + spread;
          gx[o + j] += gr * (Math.exp(logp[o + j]) - target);
        }
      }
    }
    if (wTensor?.requiresGrad) {
      const gw = gradBuffer(wTensor);
      for (let r = 0; r < rows; r++) {
        if (labels[r] < 0) continue;
        if (reduction === "none") gw[r] += g[r] * perRow[r];
        else if (reduction === "sum") gw[r] += g[0] * perRow[r];
        else gw[r] += (g[0] * (perRow[r] - mean)) / weightTotal;
      }
    }
  });
  return result;
}
