/**
 * What the selector sees of a candidate beyond its embedding (ours, issue 17; docs/selector.md,
 * "Candidate features, identity, pool attention"): answer features, a learned identity per index item,
 * and self-attention over the rest of its pool. Contract:
 *   r_k = input_proj(c_k) + W_f f_k + E[item_k], then `poolAttention` pre-norm residual layers
 *   r ← r + out_proj(MHA(LN(r), LN(r), LN(r))) over the pool (padding keys masked);
 *   score extras inside the existing /τ: u_t·f_k + item_bias[item_k] (u_t = row min(t, shots−1)).
 * `readCandidateData` checks and unpacks `SelectorInput.features` / `.items` (one LeverError naming
 * what is missing or wrong); the rest is differentiable tensor code shared by training and evaluation.
 * With every option off nothing here runs, so the model is bit-identical to the one without them.
 */
import * as T from "../tensor/ops.js";
import { allocData, commonDtype, type Data, type DType, gradBuffer, needsGrad, Tensor } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import { CANDIDATE_FEATURES, mixesCandidates, readsCandidateData, type SelectorConfig } from "./config.js";

/** The per-slot candidate data a batch carries, as the model uses it. */
export interface CandidateData {
  /** The config's feature columns [B·K, F] (a constant), or null without features. */
  features: Tensor | null;
  /** Identity: each slot's row of the identity table, −1 where it has none (padding, outside the table). */
  items: Int32Array | null;
}

/** Parameter lookup of the model (throws on an unknown name). */
export type ParamOf = (name: string) => Tensor;

/** True when `encode` must build the candidate representation per slot (not from a table's candHat). */
export function enrichesCandidates(config: SelectorConfig): boolean {
  return readsCandidateData(config) || mixesCandidates(config);
}

/** Checks and unpacks `features` [B·K·F_ALL] and `items` [B·K] for the options the config has. */
export function readCandidateData(
  config: SelectorConfig,
  input: { features?: Data; items?: Int32Array },
  slots: number,
  dtype: DType,
): CandidateData {
  return {
    features: config.features.length > 0 ? featureColumns(config, input.features, slots, dtype) : null,
    items: config.identity === "embedding" ? itemRows(config, input.items, slots) : null,
  };
}

function featureColumns(config: SelectorConfig, data: Data | undefined, slots: number, dtype: DType): Tensor {
  const all = CANDIDATE_FEATURES.length;
  const names = config.features.join(", ");
  if (data === undefined)
    throw new LeverError(`the selector reads candidate features [${names}] but the input has no features`);
  if (data.length !== slots * all)
    throw new LeverError(
      `candidate features hold ${data.length} values, expected ${slots} slots × ${all} (${CANDIDATE_FEATURES.join(", ")})`,
    );
  const F = config.features.length;
  const columns = config.features.map((f) => CANDIDATE_FEATURES.indexOf(f));
  const out = dtype === "float64" ? new Float64Array(slots * F) : new Float32Array(slots * F);
  for (let s = 0; s < slots; s++)
    for (let j = 0; j < F; j++) {
      const v = data[s * all + columns[j]];
      if (!Number.isFinite(v))
        throw new LeverError(`candidate feature ${config.features[j]} of slot ${s} is not finite (${v})`);
      out[s * F + j] = v;
    }
  return Tensor.from(out, [slots, F], dtype);
}

function itemRows(config: SelectorConfig, items: Int32Array | undefined, slots: number): Int32Array {
  if (items === undefined)
    throw new LeverError('the selector has identity "embedding" but the input has no items (index rows of the slots)');
  if (items.length !== slots) throw new LeverError(`candidate items hold ${items.length} entries, expected ${slots}`);
  // −1 (padding) or an item outside the table: zero embedding, zero bias.
  return Int32Array.from(items, (i) => (i >= 0 && i < config.indexItems ? i : -1));
}

/**
 * The enriched candidate representation [B, K, H] of the B·K slots: r = P[gather] + W_f f + E[item]
 * from the projected table rows `projected` [rows, H] (one fused pass), then the pool-attention layers
 * (padding slots never serve as keys). `gather` holds each slot's table row (any row for padding).
 */
export function enrichCandidates(
  config: SelectorConfig,
  p: ParamOf,
  projected: Tensor,
  gather: Int32Array,
  data: CandidateData,
  padMask: Uint8Array,
  K: number,
): Tensor {
  const H = config.hidden;
  const B = gather.length / K;
  const Wf = data.features !== null ? p("feature_proj.weight") : null;
  const E = data.items !== null ? p("item_emb.weight") : null;
  let r = T.reshape(enrichRows(projected, gather, data.features, Wf, E, data.items), [B, K, H]);
  if (config.poolAttention === 0) return r;
  const n = config.heads;
  const mask = new Uint8Array(B * n * K * K); // [B, n, K(query), K(key)]: key j masked when padding
  for (let b = 0; b < B; b++)
    for (let row = 0; row < n * K; row++) mask.set(padMask.subarray(b * K, (b + 1) * K), (b * n * K + row) * K);
  for (let l = 0; l < config.poolAttention; l++) r = poolLayer(p, l, n, r, mask);
  return r;
}

/** One pre-norm residual self-attention layer over the pool: r + out_proj(MHA(LN(r), LN(r), LN(r))). */
function poolLayer(p: ParamOf, l: number, n: number, r: Tensor, mask: Uint8Array): Tensor {
  const [B, K, H] = r.shape;
  const hd = H / n;
  const pre = `pool_attn_layers.${l}.`;
  const z = T.layerNorm(r, p(`pool_norms.${l}.weight`), p(`pool_norms.${l}.bias`));
  const W = p(`${pre}in_proj_weight`);
  const bias = p(`${pre}in_proj_bias`);
  // [B, K, H] → [B, n, K, hd]
  const split = (x: Tensor) =>
    n === 1 ? T.reshape(x, [B, 1, K, H]) : T.permute(T.reshape(x, [B, K, n, hd]), [0, 2, 1, 3]);
  const proj = (i: number) => split(T.linear(z, T.narrow(W, 0, i * H, H), T.narrow(bias, 0, i * H, H)));
  const logits = T.scale(T.matmul(proj(0), proj(1), { transB: true }), 1 / Math.sqrt(hd)); // [B, n, K, K]
  const ctx = T.matmul(T.softmax(logits, mask), proj(2)); // [B, n, K, hd]
  const merged = n === 1 ? T.reshape(ctx, [B, K, H]) : T.reshape(T.permute(ctx, [0, 2, 1, 3]), [B, K, H]);
  return T.add(r, T.linear(merged, p(`${pre}out_proj.weight`), p(`${pre}out_proj.bias`)));
}

/**
 * The candidate score extras of step t, [B, 1, K] (before /τ), or null without features and identity:
 * u_t·f_k + item_bias[item_k]; u_t is row min(t, shots − 1) of feature_weight.
 */
export function candidateScores(
  config: SelectorConfig,
  p: ParamOf,
  data: CandidateData,
  B: number,
  K: number,
  t: number,
): Tensor | null {
  let out: Tensor | null = null;
  if (data.features !== null) {
    const u = T.narrow(p("feature_weight"), 0, Math.min(t, config.shots - 1), 1); // [1, F]
    out = T.linear(data.features, u); // [B·K, 1]
  }
  if (data.items !== null) {
    const bias = T.reshape(p("item_bias"), [config.indexItems, 1]);
    const base = out ?? Tensor.from(allocData(bias.dtype, B * K), [B * K, 1], bias.dtype);
    out = addRows(base, bias, data.items);
  }
  return out === null ? null : T.reshape(out, [B, 1, K]);
}

/**
 * x + table[rows] row by row, [M, W] (one op instead of gather, mask and add): a row −1 adds nothing.
 * Backward: dx = g, d table[rows[m]] += g[m].
 */
export function addRows(x: Tensor, table: Tensor, rows: Int32Array): Tensor {
  const W = table.shape[1];
  if (table.ndim !== 2 || x.size !== rows.length * W)
    throw new RangeError(`addRows: x of ${x.size} values, expected ${rows.length} rows of ${W}`);
  const identity = Int32Array.from({ length: rows.length }, (_, m) => m);
  return T.reshape(enrichRows(T.reshape(x, [rows.length, W]), identity, null, null, table, rows), x.shape);
}

/**
 * One fused pass over M slots (the per-slot work of the candidate options is a few passes over B·K·H
 * values; fused, training and evaluation pay one): out[m] = source[gather[m]] + W·f[m] + table[rows[m]],
 * [M, H], with W [H, F] and f [M, F] (a constant) optional, table [N, H] and rows optional (a row −1
 * adds nothing). Backward: d source[gather[m]] += g[m], dW += g[m] f[m]ᵀ, d table[rows[m]] += g[m].
 */
export function enrichRows(
  source: Tensor,
  gather: Int32Array,
  f: Tensor | null,
  W: Tensor | null,
  table: Tensor | null,
  rows: Int32Array | null,
): Tensor {
  const inputs = [source, f, W, table].filter((t): t is Tensor => t !== null);
  const dtype = commonDtype("enrichRows", ...inputs);
  const H = source.shape[1];
  const M = gather.length;
  const F = W === null ? 0 : W.shape[1];
  if (source.ndim !== 2 || (W !== null && (f === null || W.shape[0] !== H || f.size !== M * F)))
    throw new RangeError("enrichRows: shapes do not match");
  if (table !== null && (rows === null || rows.length !== M || table.shape[1] !== H))
    throw new RangeError("enrichRows: table rows do not match");
  const out = allocData(dtype, M * H);
  const Wt = W === null ? null : transposed(W.data, H, F);
  enrichForward(source.data, gather, f?.data ?? null, Wt, F, table?.data ?? null, rows, H, out);
  const result = new Tensor(out, [M, H]);
  if (!needsGrad(...inputs)) return result;
  result.setGradFn(inputs, (g) => {
    if (source.requiresGrad) scatterRows(g, gather, H, gradBuffer(source));
    if (W?.requiresGrad && f !== null) outerAccumulate(g, f.data, M, H, F, gradBuffer(W));
    if (table?.requiresGrad && rows !== null) scatterRows(g, rows, H, gradBuffer(table));
  });
  return result;
}

function transposed(w: Data, rows: number, cols: number): Float64Array {
  const t = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c];
  return t;
}

function enrichForward(
  src: Data,
  gather: Int32Array,
  f: Data | null,
  Wt: Float64Array | null,
  F: number,
  table: Data | null,
  rows: Int32Array | null,
  H: number,
  out: Data,
): void {
  for (let m = 0; m < gather.length; m++) {
    const o = m * H;
    const s = gather[m] * H;
    out.set(src.subarray(s, s + H), o);
    if (f !== null && Wt !== null)
      for (let j = 0; j < F; j++) {
        const v = f[m * F + j];
        const w = j * H;
        for (let h = 0; h < H; h++) out[o + h] += v * Wt[w + h];
      }
    const r = rows === null ? -1 : rows[m];
    if (table !== null && r >= 0) {
      const t = r * H;
      for (let h = 0; h < H; h++) out[o + h] += table[t + h];
    }
  }
}

/** into[h, j] += Σ_m g[m, h] f[m, j]  (the gradient of W [H, F]). */
function outerAccumulate(g: Data, f: Data, M: number, H: number, F: number, into: Data): void {
  for (let m = 0; m < M; m++)
    for (let j = 0; j < F; j++) {
      const v = f[m * F + j];
      if (v === 0) continue;
      for (let h = 0; h < H; h++) into[h * F + j] += g[m * H + h] * v;
    }
}

function scatterRows(g: Data, rows: Int32Array, W: number, into: Data): void {
  for (let m = 0; m < rows.length; m++) {
    const r = rows[m];
    if (r < 0) continue;
    const o = m * W;
    const dst = r * W;
    for (let j = 0; j < W; j++) into[dst + j] += g[o + j];
  }
}
