/**
 * Independent float64 reference of the Lever-Plus pointer selector, written as plain loops over
 * number[] straight from the PyTorch source (pointer_selector_v4_2.py, v4_3.py and the V4-1 gate of
 * pointer_selector_v2.py; docs/provenance.md#selector) and PyTorch's own module semantics. It shares
 * NOTHING with src/tensor or the model code (only the parameter *names*), so agreement is evidence, not tautology.
 *
 * PyTorch semantics reproduced (eval mode, dropout off):
 * - nn.MultiheadAttention(batch_first): q = W_q x + b_q, k_j = W_k c_j + b_k, v_j = W_v c_j + b_v,
 *   per head softmax(q_h·k_hj / √d_head) over j, concat heads, out_proj. Keys/values are the
 *   input-projected candidates at EVERY layer (`key=cand_reduced, value=cand_reduced`).
 * - residual + nn.LayerNorm (eps 1e-5, biased variance).
 * - F.normalize: x / max(‖x‖₂, 1e-12).
 * - nn.GRUCell: r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
 *   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 − z) ⊙ n + z ⊙ h.
 * - Already chosen positions are excluded (the reference fills −100; we use −∞ and compare
 *   probabilities, which agree to e^−100).
 */
import type { SelectorConfig } from "../../src/selector/config.js";

export type Params = Map<string, Float64Array>;

function get(params: Params, name: string): Float64Array {
  const v = params.get(name);
  if (!v) throw new Error(`reference: missing ${name}`);
  return v;
}

/** y = W x + b for W [out, in] row-major. */
function linear(W: Float64Array, x: number[], b?: Float64Array, rowOffset = 0, outDim?: number): number[] {
  const inDim = x.length;
  const n = outDim ?? W.length / inDim;
  const y: number[] = [];
  for (let o = 0; o < n; o++) {
    let s = b ? b[rowOffset + o] : 0;
    const base = (rowOffset + o) * inDim;
    for (let i = 0; i < inDim; i++) s += W[base + i] * x[i];
    y.push(s);
  }
  return y;
}

function normalize(x: number[]): number[] {
  let n = 0;
  for (const v of x) n += v * v;
  const d = Math.max(Math.sqrt(n), 1e-12);
  return x.map((v) => v / d);
}

function layerNorm(x: number[], w: Float64Array, b: Float64Array): number[] {
  const mean = x.reduce((a, v) => a + v, 0) / x.length;
  const variance = x.reduce((a, v) => a + (v - mean) * (v - mean), 0) / x.length;
  const inv = 1 / Math.sqrt(variance + 1e-5);
  return x.map((v, i) => (v - mean) * inv * w[i] + b[i]);
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const softplus = (x: number) => (x > 20 ? x : Math.log1p(Math.exp(x)));
const dot = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i], 0);

/**
 * Training-mode dropout for the reference: inverted dropout where element i is kept iff the i-th
 * draw `rng.nextUint32() >= p·2³²`, drawn in the order the model consumes them (per layer the
 * attention weights head-major, then the enhanced query, then the candidates row-major), B = 1.
 */
export interface RefDropout {
  p: number;
  attnP: number;
  rng: { nextUint32(): number };
}

function drop(values: number[], p: number, d: RefDropout): number[] {
  if (p === 0) return values;
  const threshold = p * 4294967296;
  return values.map((v) => (d.rng.nextUint32() >= threshold ? v / (1 - p) : 0));
}

function multiheadAttention(
  params: Params,
  layer: number,
  heads: number,
  x: number[],
  cands: number[][],
  dropout?: RefDropout,
): number[] {
  const p = `cross_attn_layers.${layer}.`;
  const W = get(params, `${p}in_proj_weight`);
  const bias = get(params, `${p}in_proj_bias`);
  const H = x.length;
  const hd = H / heads;
  const q = linear(W, x, bias, 0, H);
  const ks = cands.map((c) => linear(W, c, bias, H, H));
  const vs = cands.map((c) => linear(W, c, bias, 2 * H, H));
  const concat = new Array<number>(H).fill(0);
  for (let h = 0; h < heads; h++) {
    const lo = h * hd;
    const scores = ks.map((k) => {
      let s = 0;
      for (let i = lo; i < lo + hd; i++) s += q[i] * k[i];
      return s / Math.sqrt(hd);
    });
    const m = Math.max(...scores);
    const e = scores.map((s) => Math.exp(s - m));
    const z = e.reduce((a, v) => a + v, 0);
    let weights = e.map((v) => v / z);
    if (dropout) weights = drop(weights, dropout.attnP, dropout);
    for (let j = 0; j < cands.length; j++) {
      const a = weights[j];
      for (let i = lo; i < lo + hd; i++) concat[i] += a * vs[j][i];
    }
  }
  return linear(get(params, `${p}out_proj.weight`), concat, get(params, `${p}out_proj.bias`));
}

function gruCell(params: Params, x: number[], h: number[]): number[] {
  const H = h.length;
  const gi = linear(get(params, "decoder_gru.weight_ih"), x, get(params, "decoder_gru.bias_ih"));
  const gh = linear(get(params, "decoder_gru.weight_hh"), h, get(params, "decoder_gru.bias_hh"));
  const out: number[] = [];
  for (let i = 0; i < H; i++) {
    const r = sigmoid(gi[i] + gh[i]);
    const zz = sigmoid(gi[H + i] + gh[H + i]);
    const n = Math.tanh(gi[2 * H + i] + r * gh[2 * H + i]);
    out.push((1 - zz) * n + zz * h[i]);
  }
  return out;
}

export interface RefResult {
  /** [S][K] logits; chosen positions are -Infinity. */
  logits: number[][];
  /** [S][K] log-probabilities (masked positions -Infinity). */
  logProbs: number[][];
  /** Positions used at each step (labels when teacher forced, else argmax). */
  chosen: number[];
}

/** Teacher-forced when `labels` is given, greedy otherwise; `steps` defaults to labels.length or config.shots. */
export function refForward(
  config: SelectorConfig,
  params: Params,
  query: number[],
  cands: number[][],
  labels?: number[],
  steps?: number,
  dropout?: RefDropout,
): RefResult {
  const project = (v: number[]) =>
    config.d === config.hidden ? v.slice() : linear(get(params, "input_proj.weight"), v);
  const qr = project(query);
  const cr = cands.map(project);
  let x = qr;
  for (let l = 0; l < config.layers; l++) {
    const attn = multiheadAttention(params, l, config.heads, x, cr, dropout);
    x = layerNorm(
      attn.map((a, i) => a + x[i]),
      get(params, `attn_norms.${l}.weight`),
      get(params, `attn_norms.${l}.bias`),
    );
  }
  // Dropout on the enhanced query and the projected candidates, before query_proj / cand_proj (V4-x order).
  const xd = dropout ? drop(x, dropout.p, dropout) : x;
  const crd = dropout ? cr.map((c) => drop(c, dropout.p, dropout)) : cr;
  let h = normalize(linear(get(params, "query_proj.weight"), xd));
  const cHat = crd.map((c) => normalize(linear(get(params, "cand_proj.weight"), c)));
  const S = steps ?? labels?.length ?? config.shots;
  const chosen: number[] = [];
  const logits: number[][] = [];
  const logProbs: number[][] = [];
  for (let t = 0; t < S; t++) {
    let hs = h;
    if (config.stepEmbedding) {
      const E = get(params, "step_emb.weight");
      hs = normalize(h.map((v, i) => v + E[t * config.hidden + i]));
    }
    // Our cosine prior (not in Lever-Plus): w·cos(query, candidate) of the input embeddings.
    const qHat = normalize(query);
    const prior = (k: number) =>
      config.prior === "cosine" ? get(params, "prior_weight")[0] * dot(qHat, normalize(cands[k])) : 0;
    const row = cHat.map((c, k) => (dot(hs, c) + prior(k)) / config.temperature);
    if (config.redundancy === "max" && t > 0) {
      const w = softplus(get(params, "div_lambda")[t]);
      for (let k = 0; k < row.length; k++) {
        const red = Math.max(...chosen.map((j) => dot(cHat[k], cHat[j])));
        row[k] -= w * red;
      }
    }
    for (const j of chosen) row[j] = Number.NEGATIVE_INFINITY;
    const m = Math.max(...row);
    const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
    logits.push(row);
    logProbs.push(row.map((v) => v - lse));
    let pick = 0;
    for (let k = 1; k < row.length; k++) if (row[k] > row[pick]) pick = k;
    const a = labels ? labels[t] : pick;
    chosen.push(a);
    const c = cHat[a];
    if (config.stateUpdate === "gate") {
      const g = linear(
        get(params, "query_update_gate.weight"),
        [...h, ...c],
        get(params, "query_update_gate.bias"),
      ).map(sigmoid);
      h = normalize(h.map((v, i) => g[i] * v + (1 - g[i]) * c[i]));
    } else if (config.stateUpdate === "gru") {
      h = normalize(gruCell(params, c, h));
    }
  }
  return { logits, logProbs, chosen };
}

/** Σ_t log p(labels[t]) under teacher forcing. */
export function refSequenceLogProb(
  config: SelectorConfig,
  params: Params,
  query: number[],
  cands: number[][],
  labels: number[],
): number {
  const r = refForward(config, params, query, cands, labels);
  return labels.reduce((s, a, t) => s + r.logProbs[t][a], 0);
}

export interface RefExample {
  query: number[];
  cands: number[][];
  labels: number[];
  weight: number;
}

/**
 * SFT loss: per step CE with label smoothing ε spread over the still-selectable positions,
 * CE_t = −(1−ε) log p(y_t) − (ε/|valid_t|) Σ_{k valid} log p(k); per example the mean over steps;
 * batch loss = Σ w·CE / Σ w (= the plain mean over B·S when all weights are 1, as F.cross_entropy).
 */
export function refSftLoss(config: SelectorConfig, params: Params, examples: RefExample[], smoothing: number): number {
  let num = 0;
  let den = 0;
  for (const ex of examples) {
    const r = refForward(config, params, ex.query, ex.cands, ex.labels);
    let ce = 0;
    ex.labels.forEach((a, t) => {
      const lp = r.logProbs[t];
      const valid = lp.filter((v) => v !== Number.NEGATIVE_INFINITY);
      const uniform = valid.reduce((s, v) => s + v, 0) / valid.length;
      ce += -(1 - smoothing) * lp[a] - smoothing * uniform;
    });
    num += ex.weight * (ce / ex.labels.length);
    den += ex.weight;
  }
  return num / den;
}
