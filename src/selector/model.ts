/**
 * The Lever-Plus pointer selector (docs/selector.md) on the tensor engine: one class, options for the
 * variants (config.ts). Semantics follow the reference source (docs/provenance.md#selector):
 *   pointer_selector_v4_2.py / _v4_3.py (and the V4-1 gate of pointer_selector_v2.py):
 *   1. input_proj (d→H, no bias; identity when d = H);
 *   2. `layers` × [MultiheadAttention(query = the one query token, key = value = the input-projected
 *      candidates at EVERY layer), residual, LayerNorm];
 *   3. dropout on the enhanced query and on the projected candidates, THEN query_proj / cand_proj
 *      (the order of the current V4-x files; v2 before 2025-12-25 applied dropout after the
 *      projections — identical in eval mode);
 *   4. L2-normalise; per step scores = ĉ·h / τ (fixed τ), optional step embedding
 *      h_t = normalise(h + E[t]), optional V4-3 penalty −softplus(λ_t)·max_j cos(ĉ, ĉ_chosen_j) for t > 0,
 *      already chosen (and padding) positions excluded; the state update uses the label (teacher
 *      forcing) or the decoder's pick: gate h' = normalise(ĉ + g⊙(h − ĉ)), g = σ(W_g[h; ĉ] + b_g), or
 *      GRU h' = normalise(GRUCell(ĉ, h));
 *   5. ours, option `prior: cosine`: scores = (ĉ·h + w·cos(q, c)) / τ with cos over the INPUT
 *      embeddings (a constant per query and candidate) and w a learned scalar starting at 1; `prior:
 *      rank` adds w·g(rank of c's cosine in its pool) instead (packed by the data side, inputs.ts);
 *   6. ours, options `features`, `identity`, `poolAttention` (candidate-encoder.ts): the projected candidates
 *      are enriched per slot (+ W_f f + E[item], pool self-attention) before steps 2–3, and the scores
 *      get u_t·f + item_bias[item] inside the /τ.
 * Masking: the reference fills −100 before the softmax; we exclude positions exactly (probability 0),
 * which equals the reference to e^−100 relative.
 *
 * Performance: everything that depends only on the query and its pool (input projection,
 * cross-attention, candidate projection, the candidate Gram matrix) is computed ONCE per query;
 * trajectories are rows laid out query-major with a fixed number G of rows per query, so each step's
 * scores are one batched GEMM [G, H]·[K, H]ᵀ per query. The single-token attention is evaluated in
 * the algebraically equal form that never projects the K keys/values:
 *   q·(W_k c + b_k) = (W_kᵀ q)·c + q·b_k  (the last term is constant over c, so softmax ignores it),
 *   Σ_j a_j (W_v c_j + b_v) = W_v (Σ_j a_j c_j) + b_v Σ_j a_j,
 * which turns O(K·H²) per layer into O(H² + K·H). The parity test against the literal PyTorch
 * formulation (test/selector/reference.ts) covers this rewrite.
 */
import * as T from "../tensor/ops.js";
import { type Data, type DType, noGrad, Tensor } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import type { Rng } from "../util/rng.js";
import {
  type CandidateData,
  candidateScores,
  enrichCandidates,
  enrichesCandidates,
  enrichRows,
  readCandidateData,
} from "./candidate-encoder.js";
import { mixesCandidates, type SelectorConfig } from "./config.js";
import {
  type FactoredSlots,
  factoredAttention,
  factoredRows,
  factoredScores,
  factorSlots,
  factorTable,
  materialise,
  type RowFactors,
} from "./factored.js";
import { gateUpdate } from "./gate-op.js";
import { type ParamSpec, type ParamValues, paramSpecs, sizeOf } from "./params.js";

/** Candidate rows projected once for many queries (evaluation): P = input_proj(table), Ĉ = normalise(cand_proj(P)). */
export interface TableEncoding {
  rows: number;
  projected: Tensor;
  candHat: Tensor;
  /** The L2-normalised input rows [rows, d] (only with the cosine prior). */
  inputHat: Tensor | null;
  /**
   * With features or identity but no pool attention, cand_proj is linear in r = P + W_f f + E[item]:
   * W_c·P per row [rows, H] and W_c·E per identity item [N, H] (null without identity), so a slot's
   * ĉ costs O(H), not O(H²).
   */
  linear: { rows: Tensor; items: Tensor | null; factors: RowFactors | null } | null;
}

/**
 * B queries with K candidate slots each. Candidates are rows of a table (an index embedding matrix,
 * or the flattened [B·K, d] candidates); `slots[b·K + k]` is the table row of slot k of query b,
 * −1 for padding (queries with fewer than K candidates).
 */
export interface SelectorInput {
  queries: Data;
  table: Data | TableEncoding;
  slots: Int32Array;
  K: number;
  /**
   * Per-slot answer features [B·K·F_ALL], F_ALL = CANDIDATE_FEATURES.length, columns in
   * CANDIDATE_FEATURES order (the model reads those named in config.features); padding slots hold 0.
   * Required when config.features is non-empty.
   */
  features?: Data;
  /**
   * Per-slot identity row [B·K] (the candidate's item in the index), −1 for padding or an item outside
   * the table (zero embedding, zero bias). Required with identity "embedding".
   */
  items?: Int32Array;
  /**
   * Per-slot rank score [B·K] of the candidate's cosine to the query within its pool (src/selector/inputs.ts,
   * `rankScores`; padding 0). Required with prior "rank".
   */
  prior?: Data;
}

/** Per-query work, shared by all rows (trajectories) of a query. */
export interface Encoded {
  B: number;
  K: number;
  /** Initial query state h₀ [B, H]. */
  h0: Tensor;
  /**
   * Normalised projected candidates Ĉ [B, K, H]; null while `factored` stands for it (evaluation with
   * features, factored.ts) until something needs every slot's ĉ (`candHatOf` builds and keeps it).
   */
  candHat: Tensor | null;
  /** Evaluation with features only: the slots' ĉ in factored form (factored.ts), else null. */
  factored: FactoredSlots | null;
  /** Candidate cosine Gram matrix [B, K, K] (only with the redundancy penalty). */
  gram: Tensor | null;
  /** cos(query, candidate) of the input embeddings [B, 1, K], a constant (only with the prior). */
  prior: Tensor | null;
  /** 1 = padding slot, [B·K]. */
  padMask: Uint8Array;
  /** Number of real candidates of each query. */
  validCount: Int32Array;
  /** V4-1 gate W_g [H, 2H] (used as its h and ĉ column halves, read in place) and b_g. */
  gate: { weight: Tensor; bias: Tensor; perSlot: Tensor | null } | null;
  /** Features / identity rows of the slots (only when the config reads them). */
  candidateData: CandidateData | null;
}

/** Decoding state of R = B·G rows (G rows per query, query-major). */
export interface RowState {
  G: number;
  /** Query state h_t [R, H]. */
  h: Tensor;
  /** 1 = position unavailable (padding or already chosen), [R·K]. */
  unavailable: Uint8Array;
  /** Running max cosine to the chosen candidates [R, K] (redundancy only; null before the first pick). */
  redundancy: Tensor | null;
  /** Steps taken so far. */
  step: number;
}

export interface ForwardOptions {
  training?: boolean;
  /** Dropout stream; required when training with dropout > 0. */
  rng?: Rng;
}

/** Teacher-forced forward over R = B·G rows: raw step scores and the masks they were taken under. */
export interface TeacherForced {
  G: number;
  /** Per step the scores [R, K] (masked entries hold finite garbage; always use `masks`). */
  scores: Tensor[];
  /** Per step 1 = excluded position, [R·K]. */
  masks: Uint8Array[];
}

export class PointerSelector {
  readonly config: SelectorConfig;
  readonly dtype: DType;
  readonly params: Map<string, Tensor>;
  readonly specs: ParamSpec[];

  constructor(config: SelectorConfig, values: ParamValues | Map<string, Data>, dtype: DType = "float32") {
    this.config = config;
    this.dtype = dtype;
    this.specs = paramSpecs(config);
    this.params = new Map();
    for (const spec of this.specs) {
      const v = values.get(spec.name);
      if (!v || v.length !== sizeOf(spec.shape))
        throw new LeverError(
          `parameter ${spec.name} is missing or has ${v?.length ?? 0} values, expected ${sizeOf(spec.shape)}`,
        );
      const data = dtype === "float64" ? Float64Array.from(v) : Float32Array.from(v);
      this.params.set(spec.name, Tensor.param(data, spec.shape));
    }
  }

  /** Parameters in state-dict order. */
  parameters(): Tensor[] {
    return this.specs.map((s) => this.p(s.name));
  }

  /** Current values as float64 (for checkpoints and copies). */
  values(): ParamValues {
    const out: ParamValues = new Map();
    for (const s of this.specs) out.set(s.name, Float64Array.from(this.p(s.name).data));
    return out;
  }

  /** Overwrites every parameter in place with `values` (same architecture; e.g. a policy snapshot). */
  load(values: ParamValues): void {
    for (const spec of this.specs) {
      const v = values.get(spec.name);
      const target = this.p(spec.name).data;
      if (!v || v.length !== target.length)
        throw new LeverError(
          `parameter ${spec.name} is missing or has ${v?.length ?? 0} values, expected ${target.length}`,
        );
      target.set(v);
    }
  }

  private p(name: string): Tensor {
    const t = this.params.get(name);
    if (!t) throw new Error(`PointerSelector: no parameter ${name}`);
    return t;
  }

  private tensor(data: Data, shape: number[]): Tensor {
    return Tensor.from(data, shape, this.dtype);
  }

  private inputProject(x: Tensor): Tensor {
    return this.config.d === this.config.hidden ? x : T.linear(x, this.p("input_proj.weight"));
  }

  /** Projects candidate rows once for evaluation of many queries (no dropout, no gradient). */
  encodeTable(table: Data): TableEncoding {
    const { d } = this.config;
    if (table.length % d !== 0)
      throw new LeverError(`candidate table has ${table.length} values, not a multiple of d=${d}`);
    const rows = table.length / d;
    return noGrad(() => {
      const projected = this.inputProject(this.tensor(table, [rows, d]));
      const a = T.linear(projected, this.p("cand_proj.weight"));
      const inputHat = this.config.prior === "cosine" ? T.l2Normalize(this.tensor(table, [rows, d])) : null;
      return { rows, projected, candHat: T.l2Normalize(a), inputHat, linear: this.linearParts(a) };
    });
  }

  /**
   * TableEncoding.linear: the per-row and per-item parts of cand_proj(r) (see there) from the rows'
   * a = W_c P, or null; with features but no identity also the factored form's row parts (factored.ts).
   */
  private linearParts(a: Tensor): TableEncoding["linear"] {
    if (!enrichesCandidates(this.config) || mixesCandidates(this.config)) return null;
    const Wc = this.p("cand_proj.weight");
    if (this.config.identity === "embedding")
      return { rows: a, items: T.linear(this.p("item_emb.weight"), Wc), factors: null };
    return { rows: a, items: null, factors: factorTable(a, T.matmul(Wc, this.p("feature_proj.weight"))) };
  }

  /** Ĉ [B, K, H] of an evaluation through a TableEncoding with candidate options (per slot). */
  private slotCandHat(encoding: TableEncoding, cand: Tensor, gatherRows: Int32Array, data: CandidateData): Tensor {
    const [B, K, H] = cand.shape;
    if (encoding.linear === null) return T.l2Normalize(T.linear(cand, this.p("cand_proj.weight")));
    // normalise(W_c P_row + (W_c W_f) f + W_c E[item]), O(H) per slot.
    const { rows, items } = encoding.linear;
    const WcWf = data.features && T.matmul(this.p("cand_proj.weight"), this.p("feature_proj.weight")); // [H, F]
    const raw = enrichRows(rows, gatherRows, data.features, WcWf, items, data.items);
    return T.reshape(T.l2Normalize(raw), [B, K, H]);
  }

  /** The per-query part of the forward pass (steps 1–4 up to the normalised states). */
  encode(input: SelectorInput, opts: ForwardOptions = {}): Encoded {
    const { d, hidden: H } = this.config;
    const training = opts.training ?? false;
    const { K } = input;
    if (input.queries.length % d !== 0) throw new LeverError(`query embeddings are not a multiple of d=${d}`);
    const B = input.queries.length / d;
    if (input.slots.length !== B * K)
      throw new LeverError(`expected ${B}×${K} candidate slots, got ${input.slots.length}`);
    const encoding = isTableEncoding(input.table) ? input.table : null;
    const tableRows = encoding ? encoding.rows : (input.table as Data).length / d;
    const { padMask, gatherRows, validCount } = slotRows(input.slots, K, tableRows);
    if (training && encoding) throw new Error("PointerSelector.encode: a TableEncoding is for evaluation only");
    if (training && !opts.rng) throw new Error("PointerSelector.encode: training needs an rng for dropout");
    const rng = opts.rng as Rng;
    const projected = encoding
      ? encoding.projected
      : this.inputProject(this.tensor(input.table as Data, [tableRows, d]));
    const enriched = enrichesCandidates(this.config);
    const candidateData = enriched ? readCandidateData(this.config, input, B * K, this.dtype) : null;
    // Evaluation with features only: r = P + W_f f stays factored (factored.ts), no slot is enriched.
    const factors = encoding?.linear?.factors ?? null;
    const features3 = factors && candidateData?.features ? T.reshape(candidateData.features, [B, K, -1]) : null;
    const cand =
      candidateData && !features3 // C_r [B, K, H], enriched per slot with the candidate options
        ? enrichCandidates(this.config, (n) => this.p(n), projected, gatherRows, candidateData, padMask, K)
        : T.reshape(T.indexSelect(projected, gatherRows, 0), [B, K, H]);
    const attend = features3
      ? factoredAttention(cand, this.p("feature_proj.weight"), features3)
      : { logits: (u: Tensor) => T.matmul(u, cand, { transB: true }), context: (a: Tensor) => T.matmul(a, cand) };
    const x = this.crossAttend(
      this.inputProject(this.tensor(input.queries, [B, d])),
      attend,
      padMask,
      K,
      training,
      rng,
    );
    const p = this.config.dropout;
    const xd = training ? T.dropout(x, p, rng, true) : x;
    const h0 = T.l2Normalize(T.linear(xd, this.p("query_proj.weight")));
    let candHat: Tensor | null = null;
    let factored: FactoredSlots | null = null;
    // The table's candHat only when the representation is per row, not per slot (enrichment).
    if (encoding && !enriched) {
      candHat = T.reshape(T.indexSelect(encoding.candHat, gatherRows, 0), [B, K, H]);
    } else if (encoding && factors && features3) {
      factored = factorSlots(encoding.linear?.rows as Tensor, factors, gatherRows, features3, K);
    } else if (encoding && candidateData) {
      candHat = this.slotCandHat(encoding, cand, gatherRows, candidateData);
    } else {
      const cd = training ? T.dropout(cand, p, rng, true) : cand;
      candHat = T.l2Normalize(T.linear(cd, this.p("cand_proj.weight")));
    }
    let gate: Encoded["gate"] = null;
    if (this.config.stateUpdate === "gate") {
      gate = { weight: this.p("query_update_gate.weight"), bias: this.p("query_update_gate.bias"), perSlot: null };
    }
    const prior =
      this.config.prior === "cosine"
        ? this.inputCosines(input, encoding, gatherRows, B, K)
        : this.config.prior === "rank"
          ? this.rankPrior(input, B, K)
          : null;
    const enc: Encoded = { B, K, h0, candHat, factored, gram: null, prior, padMask, validCount, gate, candidateData };
    if (this.config.redundancy === "max") {
      const all = candHatOf(enc);
      enc.gram = T.matmul(all, all, { transB: true });
    }
    return enc;
  }

  /**
   * Step 2: `layers` × [single-token MultiheadAttention over the candidates, residual, LayerNorm] from
   * the projected query x [B, H]; `attend` gives u·c_k (unscaled logits) and Σ_j α_j c_j.
   */
  private crossAttend(
    query: Tensor,
    attend: { logits: (u: Tensor) => Tensor; context: (alpha: Tensor) => Tensor },
    padMask: Uint8Array,
    K: number,
    training: boolean,
    rng: Rng,
  ): Tensor {
    const { hidden: H, heads: n, layers } = this.config;
    const B = query.shape[0];
    let x = query;
    const hd = H / n;
    // Attention mask over [B, n, K]: padding slots excluded for every head.
    const attnMask = new Uint8Array(B * n * K);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < n; h++) attnMask.set(padMask.subarray(b * K, (b + 1) * K), (b * n + h) * K);
    for (let l = 0; l < layers; l++) {
      const pre = `cross_attn_layers.${l}.`;
      const W = this.p(`${pre}in_proj_weight`);
      const bias = this.p(`${pre}in_proj_bias`);
      const Wq = T.narrow(W, 0, 0, H);
      const Wk = T.narrow(W, 0, H, H);
      const Wv = T.narrow(W, 0, 2 * H, H);
      const bq = T.narrow(bias, 0, 0, H);
      const bv = T.narrow(bias, 0, 2 * H, H); // b_k cancels in the softmax (see header)
      const q = T.linear(x, Wq, bq); // [B, H]
      // u[b, h, :] = W_k,hᵀ q_h  — [n, B, hd] · [n, hd, H] → [n, B, H] → [B, n, H]
      const qh = swap01(T.reshape(q, [B, n, hd]));
      const u = swap01(T.matmul(qh, T.reshape(Wk, [n, hd, H])));
      const logits = T.scale(attend.logits(u), 1 / Math.sqrt(hd)); // [B, n, K]
      let attn = T.softmax(logits, attnMask);
      const withDropout = training && this.config.attnDropout > 0;
      if (withDropout) attn = T.dropout(attn, this.config.attnDropout, rng, true);
      const ctx = attend.context(attn); // [B, n, H] = Σ_j a_j c_j per head
      // v_h = W_v,h ctx_h — [n, B, H] · [n, hd, H]ᵀ → [n, B, hd] → [B, n, hd]
      const vh = swap01(T.matmul(swap01(ctx), T.reshape(Wv, [n, hd, H]), { transB: true }));
      // b_v enters with weight Σ_j a_j: 1, except after attention dropout.
      const bias3 = T.reshape(bv, [n, hd]);
      const v = T.reshape(T.add(vh, withDropout ? T.mul(T.sum(attn, 2, true), bias3) : bias3), [B, H]);
      const out = T.linear(v, this.p(`${pre}out_proj.weight`), this.p(`${pre}out_proj.bias`));
      x = T.layerNorm(T.add(out, x), this.p(`attn_norms.${l}.weight`), this.p(`attn_norms.${l}.bias`));
    }
    return x;
  }

  /** cos(query, candidate) over the input embeddings, [B, 1, K] (padding slots hold row 0's; masked). */
  private inputCosines(
    input: SelectorInput,
    encoding: TableEncoding | null,
    gatherRows: Int32Array,
    B: number,
    K: number,
  ): Tensor {
    const { d } = this.config;
    return noGrad(() => {
      const raw = input.table as Data;
      const table = encoding ? encoding.inputHat : T.l2Normalize(this.tensor(raw, [raw.length / d, d]));
      if (table === null) throw new Error("PointerSelector.encode: a TableEncoding without input rows for the prior");
      const cands = T.reshape(T.indexSelect(table, gatherRows, 0), [B, K, d]);
      const queries = T.reshape(T.l2Normalize(this.tensor(input.queries, [B, d])), [B, 1, d]);
      return T.matmul(queries, cands, { transB: true });
    });
  }

  /** The pools' rank scores [B, 1, K] packed by the data side (`SelectorInput.prior`). */
  private rankPrior(input: SelectorInput, B: number, K: number): Tensor {
    if (input.prior === undefined || input.prior.length !== B * K)
      throw new LeverError("the selector's prior \"rank\" needs each pool's rank scores (SelectorInput.prior)");
    return this.tensor(input.prior, [B, 1, K]);
  }

  /** G rows per query, all starting from the query's h₀ with nothing chosen. */
  startRows(enc: Encoded, G: number): RowState {
    const { B, K } = enc;
    // The gate's candidate half W_c·ĉ + b costs K·H² per query if taken for every slot, or G·S·H² if
    // taken for each chosen row: precompute per slot when the rows would repeat it.
    if (enc.gate && enc.gate.perSlot === null && G * this.config.shots > K) {
      const H = this.config.hidden;
      enc.gate.perSlot = T.linearColumns(T.reshape(candHatOf(enc), [B * K, H]), enc.gate.weight, H, H, enc.gate.bias);
    }
    const rowQuery = new Int32Array(B * G);
    for (let r = 0; r < rowQuery.length; r++) rowQuery[r] = Math.floor(r / G);
    const h = G === 1 ? enc.h0 : T.indexSelect(enc.h0, rowQuery, 0);
    const unavailable = new Uint8Array(B * G * K);
    for (let r = 0; r < B * G; r++)
      unavailable.set(enc.padMask.subarray(rowQuery[r] * K, (rowQuery[r] + 1) * K), r * K);
    return { G, h, unavailable, redundancy: null, step: 0 };
  }

  /** Scores [R, K] of the next step (before masking; use `state.unavailable` as the mask). */
  stepScores(enc: Encoded, state: RowState): Tensor {
    const { B, K } = enc;
    const { hidden: H } = this.config;
    const t = state.step;
    let hs = state.h;
    if (this.config.stepEmbedding) {
      if (t >= this.config.shots)
        throw new LeverError(`the step embedding has ${this.config.shots} rows; cannot score step ${t + 1}`);
      hs = T.l2Normalize(T.add(hs, T.narrow(this.p("step_emb.weight"), 0, t, 1)));
    }
    const G = state.G;
    const hs3 = T.reshape(hs, [B, G, H]);
    let scores = enc.factored ? factoredScores(enc.factored, hs3) : T.matmul(hs3, candHatOf(enc), { transB: true }); // [B, G, K]
    if (enc.prior !== null) scores = T.add(scores, T.mul(enc.prior, this.p("prior_weight")));
    const extra = enc.candidateData && candidateScores(this.config, (n) => this.p(n), enc.candidateData, B, K, t);
    if (extra) scores = T.add(scores, extra); // u_t·f_k + item_bias[item_k], inside the /τ
    scores = T.scale(T.reshape(scores, [B * G, K]), 1 / this.config.temperature);
    if (state.redundancy !== null) {
      if (t >= this.config.shots)
        throw new LeverError(`div_lambda has ${this.config.shots} entries; cannot score step ${t + 1}`);
      const weight = T.softplus(T.narrow(this.p("div_lambda"), 0, t, 1));
      scores = T.sub(scores, T.mul(state.redundancy, weight));
    }
    return scores;
  }

  /**
   * Takes positions `chosen` [R] (labels or picks): checks them, marks them unavailable and returns
   * their rows in the [B·K] candidate table. `advance` without the state update, which a pass skips
   * after its last step (the updated state would score no further step).
   */
  take(enc: Encoded, state: RowState, chosen: Int32Array): Int32Array {
    const { K } = enc;
    const { G } = state;
    const R = enc.B * G;
    const flat = new Int32Array(R);
    for (let r = 0; r < R; r++) {
      const a = chosen[r];
      if (!(a >= 0 && a < K) || state.unavailable[r * K + a])
        throw new LeverError(
          `row ${r} step ${state.step + 1}: position ${a} is padding, out of range or already chosen`,
        );
      state.unavailable[r * K + a] = 1;
      flat[r] = Math.floor(r / G) * K + a;
    }
    return flat;
  }

  /** Takes positions `chosen` [R] (labels or picks) and updates the row state. */
  advance(enc: Encoded, state: RowState, chosen: Int32Array): void {
    const { K } = enc;
    const flat = this.take(enc, state, chosen);
    // ĉ_chosen [R, H]; in factored form built for these rows only
    const c =
      enc.candHat === null && enc.factored
        ? factoredRows(enc.factored, flat)
        : T.indexSelect(T.reshape(candHatOf(enc), [enc.B * K, this.config.hidden]), flat, 0);
    if (enc.gram !== null) {
      const sim = T.indexSelect(T.reshape(enc.gram, [enc.B * K, K]), flat, 0); // cos(ĉ_k, ĉ_chosen) [R, K]
      state.redundancy = state.redundancy === null ? sim : T.maximum(state.redundancy, sim);
    }
    const h = state.h;
    if (enc.gate !== null) {
      // g = σ(W_g[h; ĉ] + b_g), h' = normalise(g⊙h + (1−g)⊙ĉ), with W_g split into its h and ĉ halves.
      const { weight, bias, perSlot } = enc.gate;
      const H = this.config.hidden;
      const cPart = perSlot !== null ? T.indexSelect(perSlot, flat, 0) : T.linearColumns(c, weight, H, H, bias);
      state.h = gateUpdate(T.linearColumns(h, weight, 0, H), cPart, h, c);
    } else if (this.config.stateUpdate === "gru") {
      state.h = T.l2Normalize(
        T.gruCell(
          c,
          h,
          this.p("decoder_gru.weight_ih"),
          this.p("decoder_gru.weight_hh"),
          this.p("decoder_gru.bias_ih"),
          this.p("decoder_gru.bias_hh"),
        ),
      );
    }
    state.step++;
  }

  /** Teacher-forced forward of G trajectories per query; labels [B·G·S] row-major (query-major rows). */
  teacherForce(enc: Encoded, G: number, labels: Int32Array, steps: number): TeacherForced {
    const R = enc.B * G;
    if (labels.length !== R * steps) throw new LeverError(`expected ${R}×${steps} labels, got ${labels.length}`);
    const state = this.startRows(enc, G);
    const scores: Tensor[] = [];
    const masks: Uint8Array[] = [];
    for (let t = 0; t < steps; t++) {
      scores.push(this.stepScores(enc, state));
      masks.push(state.unavailable.slice());
      const chosen = stepLabels(labels, R, steps, t);
      if (t + 1 < steps) this.advance(enc, state, chosen);
      else this.take(enc, state, chosen); // labels checked; no state after the last step
    }
    return { G, scores, masks };
  }
}

/** Every slot's ĉ [B, K, H], built from the factored form (and kept) the first time it is needed. */
export function candHatOf(enc: Encoded): Tensor {
  if (enc.candHat === null) {
    if (enc.factored === null) throw new Error("PointerSelector: an encoding with neither ĉ nor its factored form");
    enc.candHat = materialise(enc.factored);
  }
  return enc.candHat;
}

/** Slot bookkeeping: padding mask, the table row of each slot (0 for padding), real candidates per query. */
function slotRows(slots: Int32Array, K: number, tableRows: number) {
  const padMask = new Uint8Array(slots.length);
  const gatherRows = new Int32Array(slots.length);
  const validCount = new Int32Array(slots.length / K);
  for (let i = 0; i < slots.length; i++) {
    const r = slots[i];
    if (r < 0) padMask[i] = 1;
    else if (r >= tableRows || !Number.isInteger(r))
      throw new LeverError(`candidate slot ${i} points at row ${r} of ${tableRows}`);
    else {
      gatherRows[i] = r;
      validCount[Math.floor(i / K)]++;
    }
  }
  return { padMask, gatherRows, validCount };
}

/** Swaps the first two of three dimensions; a plain reshape (no copy) when either is 1 (single head). */
function swap01(x: Tensor): Tensor {
  const [a, b, c] = x.shape;
  return a === 1 || b === 1 ? T.reshape(x, [b, a, c]) : T.permute(x, [1, 0, 2]);
}

function isTableEncoding(x: Data | TableEncoding): x is TableEncoding {
  return (x as TableEncoding).candHat !== undefined;
}

/** Step labels of a teacher-forced pass: column t of the [R, S] label matrix. */
export function stepLabels(labels: Int32Array, rows: number, steps: number, t: number): Int32Array {
  const out = new Int32Array(rows);
  for (let r = 0; r < rows; r++) out[r] = labels[r * steps + t];
  return out;
}

/** Per step the log-softmax [R, K] of the scores under their masks (differentiable; −∞ where masked). */
export function stepLogSoftmax(tf: TeacherForced): Tensor[] {
  return tf.scores.map((s, t) => T.logSoftmax(s, tf.masks[t]));
}

/**
 * log p(label_t) per row and step, [R, S] (differentiable): the per-step log-probabilities of the
 * labels under the masks they were scored with. GRPO takes its step-level ratios from these.
 * `logSoftmax`: the pass's `stepLogSoftmax` when the caller already has it (e.g. for the entropy).
 */
export function stepLogProbs(
  tf: TeacherForced,
  labels: Int32Array,
  logSoftmax: readonly Tensor[] = stepLogSoftmax(tf),
): Tensor {
  const S = tf.scores.length;
  if (S === 0) throw new LeverError("log-probabilities of zero steps");
  const columns = logSoftmax.map((lsm, t) => {
    const rows = lsm.shape[0];
    const lp = T.gatherLast(lsm, stepLabels(labels, rows, S, t));
    return T.reshape(lp, [rows, 1]);
  });
  return S === 1 ? columns[0] : T.concat(columns, 1);
}

/** Σ_t log p(label_t) per row [R] (differentiable): the sequence log-probability used by RCE/GRPO. */
export function sequenceLogProbs(tf: TeacherForced, labels: Int32Array): Tensor {
  return T.sum(stepLogProbs(tf, labels), 1);
}

/**
 * SFT loss: mean over steps of the weighted per-step cross-entropy with label smoothing over the
 * still-available positions; = Σ_r w_r·mean_t CE_{r,t} / Σ_r w_r (the reference's F.cross_entropy
 * mean over B·S when all weights are 1). Rows with weight 0 (padding rows) contribute nothing.
 */
export function sftLoss(tf: TeacherForced, labels: Int32Array, weights: Data, labelSmoothing: number): Tensor {
  const S = tf.scores.length;
  let total: Tensor | null = null;
  tf.scores.forEach((s, t) => {
    const rows = s.shape[0];
    const ce = T.crossEntropy(s, stepLabels(labels, rows, S, t), { labelSmoothing, mask: tf.masks[t], weights });
    total = total === null ? ce : T.add(total, ce);
  });
  if (total === null) throw new LeverError("loss of zero steps");
  return T.scale(total, 1 / S);
}
