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
 * The enriched candidate representation [B, K, H] from the projected candidates `cand` [B, K, H]:
 * + W_f f + E[item], then the pool-attention layers (padding slots never serve as keys).
 */
export function enrichCandidates(
  config: SelectorConfig,
  p: ParamOf,
  cand: Tensor,
  data: CandidateData,
  padMask: Uint8Array,
): Tensor {
  const [B, K, H] = cand.shape;
  let r = cand;
  if (data.features !== null || data.items !== null) {
    let flat = T.reshape(cand, [B * K, H]);
    if (data.features !== null) flat = T.add(flat, T.linear(data.features, p("feature_proj.weight")));
    if (data.items !== null) flat = addRows(flat, p("item_emb.weight"), data.items);
    r = T.reshape(flat, [B, K, H]);
  }
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
 * x + table[rows] row by row, [M, W] (one op instead of gather, mask and add; the identity table is
 * large): a row −1 adds nothing. Backward: dx = g, d table[rows[m]] += g[m].
 */
export function addRows(x: Tensor, table: Tensor, rows: Int32Array): Tensor {
  const dtype = commonDtype("addRows", x, table);
  const W = table.shape[1];
  const M = rows.length;
  if (table.ndim !== 2 || x.size !== M * W)
    throw new RangeError(`addRows: x of ${x.size} values, expected ${M} rows of ${W}`);
  const out = allocData(dtype, x.size);
  out.set(x.data);
  const t = table.data;
  for (let m = 0; m < M; m++) {
    const r = rows[m];
    if (r < 0) continue;
    const o = m * W;
    const src = r * W;
    for (let j = 0; j < W; j++) out[o + j] += t[src + j];
  }
  const result = new Tensor(out, x.shape);
  if (!needsGrad(x, table)) return result;
  result.setGradFn([x, table], (g) => {
    if (x.requiresGrad) {
      const gx = gradBuffer(x);
      for (let i = 0; i < gx.length; i++) gx[i] += g[i];
    }
    if (table.requiresGrad) scatterRows(g, rows, W, gradBuffer(table));
  });
  return result;
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
