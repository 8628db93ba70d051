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
 * Ours (issue 17, docs/selector.md "Candidate features, identity, pool attention"), written from the
 * formulas there: r_k = W_in c_k + W_f f_k + E[item_k] (item outside [0, N) → nothing), then per pool
 * layer r_k ← r_k + MHA(LN(r_k); LN(r_1..K)) with the same literal MultiheadAttention as above (the
 * reference pool has no padding: only real candidates exist), and the score adds u_t·f_k +
 * item_bias[item_k] inside the /τ, u_t = row min(t, shots − 1) of feature_weight.
 */
import { CANDIDATE_FEATURES, type SelectorConfig } from "../../src/selector/config.js";

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

/** nn.MultiheadAttention with parameters under `p` (e.g. "cross_attn_layers.0."): one query x over `cands`. */
function multiheadAttention(
  params: Params,
  p: string,
  heads: number,
  x: number[],
  cands: number[][],
  dropout?: RefDropout,
): number[] {
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

/** Per real candidate: all CANDIDATE_FEATURES columns, and its identity item (−1 = none). */
export interface RefCandidateData {
  features?: number[][];
  items?: number[];
}

/** The config's feature columns of candidate k. */
function featuresOf(config: SelectorConfig, extras: RefCandidateData | undefined, k: number): number[] {
  if (config.features.length === 0) return [];
  const row = extras?.features?.[k];
  if (!row) throw new Error(`reference: no features for candidate ${k}`);
  return config.features.map((f) => row[CANDIDATE_FEATURES.indexOf(f)]);
}

/** Candidate k's identity item, or −1 when it has none in the table. */
function itemOf(config: SelectorConfig, extras: RefCandidateData | undefined, k: number): number {
  if (config.identity !== "embedding") return -1;
  const item = extras?.items?.[k];
  if (item === undefined) throw new Error(`reference: no item for candidate ${k}`);
  return item >= 0 && item < config.indexItems ? item : -1;
}

/** r_k = W_in c_k + W_f f_k + E[item_k], then the pre-norm pool self-attention layers. */
function enrich(config: SelectorConfig, params: Params, cr: number[][], extras?: RefCandidateData): number[][] {
  const H = config.hidden;
  const F = config.features.length;
  let r = cr.map((c, k) => {
    const out = c.slice();
    const f = featuresOf(config, extras, k);
    if (F > 0) {
      const Wf = get(params, "feature_proj.weight");
      for (let o = 0; o < H; o++) for (let j = 0; j < F; j++) out[o] += Wf[o * F + j] * f[j];
    }
    const item = itemOf(config, extras, k);
    if (item >= 0) {
      const E = get(params, "item_emb.weight");
      for (let o = 0; o < H; o++) out[o] += E[item * H + o];
    }
    return out;
  });
  for (let l = 0; l < config.poolAttention; l++) {
    const z = r.map((v) => layerNorm(v, get(params, `pool_norms.${l}.weight`), get(params, `pool_norms.${l}.bias`)));
    const mixed = z.map((zi) => multiheadAttention(params, `pool_attn_layers.${l}.`, config.heads, zi, z));
    r = r.map((v, i) => v.map((x, o) => x + mixed[i][o]));
  }
  return r;
}

/** u_t·f_k + item_bias[item_k] (before /τ). */
function candidateExtra(
  config: SelectorConfig,
  params: Params,
  extras: RefCandidateData | undefined,
  k: number,
  t: number,
) {
  let s = 0;
  const F = config.features.length;
  if (F > 0) {
    const u = get(params, "feature_weight");
    const row = Math.min(t, config.shots - 1);
    const f = featuresOf(config, extras, k);
    for (let j = 0; j < F; j++) s += u[row * F + j] * f[j];
  }
  const item = itemOf(config, extras, k);
  if (item >= 0) s += get(params, "item_bias")[item];
  return s;
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
  extras?: RefCandidateData,
): RefResult {
  const project = (v: number[]) =>
    config.d === config.hidden ? v.slice() : linear(get(params, "input_proj.weight"), v);
  const qr = project(query);
  const cr = enrich(config, params, cands.map(project), extras);
  let x = qr;
  for (let l = 0; l < config.layers; l++) {
    const attn = multiheadAttention(params, `cross_attn_layers.${l}.`, config.heads, x, cr, dropout);
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
    const row = cHat.map(
      (c, k) => (dot(hs, c) + prior(k) + candidateExtra(config, params, extras, k, t)) / config.temperature,
    );
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
  extras?: RefCandidateData,
): number {
  const r = refForward(config, params, query, cands, labels, undefined, undefined, extras);
  return labels.reduce((s, a, t) => s + r.logProbs[t][a], 0);
}

export interface RefExample {
  query: number[];
  cands: number[][];
  labels: number[];
  weight: number;
  /** Per-candidate features / identity items (only for configs that read them). */
  extras?: RefCandidateData;
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
    const r = refForward(config, params, ex.query, ex.cands, ex.labels, undefined, undefined, ex.extras);
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
