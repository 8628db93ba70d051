/**
 * Evaluation with answer features, kept factored (ours, issue 17's cost target; docs/selector.md,
 * "Candidate features, identity, pool attention", its cost table). With `features` but neither
 * identity nor pool attention, a slot's candidate is r_k = P_k + W_f f_k (P_k its table row's input
 * projection) and its normalised projection is ĉ_k = (a_k + M f_k) / n_k with a_k = W_c P_k (per table
 * row), M = W_c W_f [H, F] and
 *   n_k² = ‖a_k‖² + 2 f_k·(Mᵀa_k) + f_kᵀ (MᵀM) f_k,
 * so everything per slot is O(F²) from per-row precomputes (‖a‖², Mᵀa), and no slot's H-vector is
 * ever built:
 *   step scores  h·ĉ_k = (h·a_k + (Mᵀh)·f_k) / n_k  (the same [G, H]·[K, H]ᵀ GEMM as without features),
 *   attention    u·r_k = u·P_k + (W_fᵀu)·f_k,  Σ_j α_j r_j = Σ_j α_j P_j + W_f (Σ_j α_j f_j),
 * and ĉ is built only for the rows a step chooses (the state update). Whatever needs every slot's ĉ
 * (the redundancy Gram matrix, the gate's per-slot half when trajectories repeat slots) gets it from
 * `materialise`. Evaluation only (a TableEncoding; no gradient): training builds r per slot
 * (candidate-encoder.ts), and test/selector/candidate-encoder.test.ts checks both paths give the same scores.
 */
import * as T from "../tensor/ops.js";
import { Tensor } from "../tensor/tensor.js";
import { enrichRows } from "./candidate-encoder.js";

/** The per-table-row parts of the factored form (TableEncoding.linear.factors). */
export interface RowFactors {
  /** M = W_c W_f [H, F]. */
  M: Tensor;
  /** MᵀM [F, F], float64. */
  MtM: Float64Array;
  /** ‖a_row‖² [rows], float64. */
  sq: Float64Array;
  /** a_row·M [rows, F]. */
  aM: Tensor;
}

/** The slots of one evaluation batch in factored form (Encoded.factored). */
export interface FactoredSlots {
  /** a of each slot [B, K, H] (its table row's, gathered: the same copy as the table's ĉ without features). */
  rows: Tensor;
  M: Tensor;
  /** The slots' features [B, K, F]. */
  features: Tensor;
  /** 1 / max(n_k, 1e-12) [B, 1, K] (F.normalize's eps). */
  invNorm: Tensor;
}

/** Per-row parts of a table whose linear part is a = W_c P [rows, H] and M = W_c W_f. */
export function factorTable(a: Tensor, M: Tensor): RowFactors {
  const [rows, H] = a.shape;
  const F = M.shape[1];
  const sq = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let h = 0; h < H; h++) s += a.data[r * H + h] * a.data[r * H + h];
    sq[r] = s;
  }
  const MtM = new Float64Array(F * F);
  for (let i = 0; i < F; i++)
    for (let j = 0; j < F; j++) {
      let s = 0;
      for (let h = 0; h < H; h++) s += M.data[h * F + i] * M.data[h * F + j];
      MtM[i * F + j] = s;
    }
  return { M, MtM, sq, aM: T.matmul(a, M) };
}

/** The factored slots of B·K slots (`gather`: each slot's table row; `features` [B·K, F]). */
export function factorSlots(
  a: Tensor,
  factors: RowFactors,
  gather: Int32Array,
  features: Tensor,
  K: number,
): FactoredSlots {
  const H = a.shape[1];
  const F = factors.M.shape[1];
  const B = gather.length / K;
  const f = features.data;
  const { sq, MtM } = factors;
  const aM = factors.aM.data;
  const inv = new Float64Array(gather.length);
  for (let s = 0; s < gather.length; s++) {
    const row = gather[s];
    let n2 = sq[row];
    for (let i = 0; i < F; i++) {
      const fi = f[s * F + i];
      n2 += 2 * fi * aM[row * F + i];
      for (let j = 0; j < F; j++) n2 += fi * MtM[i * F + j] * f[s * F + j];
    }
    inv[s] = 1 / Math.max(Math.sqrt(Math.max(n2, 0)), 1e-12);
  }
  return {
    rows: T.reshape(T.indexSelect(a, gather, 0), [B, K, H]),
    M: factors.M,
    features: T.reshape(features, [B, K, F]),
    invNorm: Tensor.from(inv, [B, 1, K], a.dtype),
  };
}

/** h·ĉ_k for G states per query, hs [B, G, H] → [B, G, K]. */
export function factoredScores(fs: FactoredSlots, hs: Tensor): Tensor {
  const dot = T.matmul(hs, fs.rows, { transB: true });
  const viaFeatures = T.matmul(T.matmul(hs, fs.M), fs.features, { transB: true }); // (Mᵀh)·f_k
  return T.mul(T.add(dot, viaFeatures), fs.invNorm);
}

/** ĉ of the slots `flat` (indices into the B·K slots), [R, H]: built for these rows only. */
export function factoredRows(fs: FactoredSlots, flat: Int32Array): Tensor {
  const [B, K, H] = fs.rows.shape;
  const F = fs.M.shape[1];
  const chosen = T.indexSelect(T.reshape(fs.features, [B * K, F]), flat, 0);
  return T.l2Normalize(enrichRows(T.reshape(fs.rows, [B * K, H]), flat, chosen, fs.M, null, null));
}

/** Every slot's ĉ [B, K, H] (for what needs all of them). */
export function materialise(fs: FactoredSlots): Tensor {
  const [B, K] = fs.rows.shape;
  return T.reshape(
    factoredRows(
      fs,
      Int32Array.from({ length: B * K }, (_, s) => s),
    ),
    fs.rows.shape,
  );
}

/**
 * The single-token attention's logits u·r_k and context Σ_j α_j r_j with r = P + W_f f kept
 * factored: `logits(u)` for u [B, n, H] → [B, n, K] (unscaled), `context(α)` for α [B, n, K] → [B, n, H].
 */
export function factoredAttention(cand: Tensor, Wf: Tensor, features: Tensor) {
  return {
    logits: (u: Tensor) =>
      T.add(T.matmul(u, cand, { transB: true }), T.matmul(T.matmul(u, Wf), features, { transB: true })),
    context: (alpha: Tensor) => T.add(T.matmul(alpha, cand), T.matmul(T.matmul(alpha, features), Wf, { transB: true })),
  };
}
