/**
 * Decoding with a trained selector (evaluation mode, no gradient): greedy, beam search and
 * temperature sampling over each query's pool. Every decoder excludes already chosen (and padding)
 * positions, so a trajectory never repeats a position; asking for more shots than a query has
 * candidates is an error.
 */
import * as T from "../tensor/ops.js";
import { type Data, noGrad } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import type { Rng } from "../util/rng.js";
import { CANDIDATE_FEATURES } from "./config.js";
import type { Encoded, PointerSelector, RowState, SelectorInput } from "./model.js";

export interface Trajectory {
  /** Pool positions in selection order (position 0 = first selected demonstration). */
  positions: number[];
  /** Σ_t log p(position_t) under the model (temperature τ of the config, no sampling temperature). */
  logprob: number;
}

export interface SampledTrajectory extends Trajectory {
  /** Σ_t log of the probability it was actually drawn with (scores / sampling temperature). */
  sampleLogprob: number;
}

function checkShots(enc: Encoded, shots: number): void {
  if (!Number.isInteger(shots) || shots < 1) throw new LeverError(`shots must be a positive integer, got ${shots}`);
  for (let b = 0; b < enc.B; b++) {
    if (enc.validCount[b] < shots)
      throw new LeverError(`query ${b} has ${enc.validCount[b]} candidates; cannot choose ${shots} distinct ones`);
  }
}

/** One trajectory per query: the argmax at every step (first position on ties). */
export function greedyDecode(model: PointerSelector, enc: Encoded, shots: number): Trajectory[] {
  checkShots(enc, shots);
  return noGrad(() => {
    const state = model.startRows(enc, 1);
    const out: Trajectory[] = Array.from({ length: enc.B }, () => ({ positions: [], logprob: 0 }));
    for (let t = 0; t < shots; t++) {
      const scores = model.stepScores(enc, state);
      const logp = T.logSoftmax(scores, state.unavailable).data;
      const picks = T.argmax(scores, state.unavailable);
      for (let b = 0; b < enc.B; b++) {
        out[b].positions.push(picks[b]);
        out[b].logprob += logp[b * enc.K + picks[b]];
      }
      if (t + 1 < shots) model.advance(enc, state, picks); // no state is needed after the last pick
    }
    return out;
  });
}

/**
 * Beam search of width w over ordered trajectories: per query the (up to) w most probable
 * trajectories by Σ log p, best first. Ties are broken by (parent beam, position), so the result
 * is deterministic.
 */
export function beamDecode(model: PointerSelector, enc: Encoded, shots: number, width: number): Trajectory[][] {
  checkShots(enc, shots);
  if (!Number.isInteger(width) || width < 1)
    throw new LeverError(`beam width must be a positive integer, got ${width}`);
  const { B, K } = enc;
  const W = width;
  return noGrad(() => {
    const state = model.startRows(enc, W);
    // Every row starts identical; only row 0 of each query is alive at step 0.
    let score = new Float64Array(B * W).fill(Number.NEGATIVE_INFINITY);
    for (let b = 0; b < B; b++) score[b * W] = 0;
    let paths: number[][] = Array.from({ length: B * W }, () => []);
    for (let t = 0; t < shots; t++) {
      const logp = T.logSoftmax(model.stepScores(enc, state), state.unavailable).data;
      const parents = new Int32Array(B * W);
      const chosen = new Int32Array(B * W);
      const nextScore = new Float64Array(B * W);
      for (let b = 0; b < B; b++) {
        const options: { total: number; g: number; k: number }[] = [];
        for (let g = 0; g < W; g++) {
          const r = b * W + g;
          if (score[r] === Number.NEGATIVE_INFINITY) continue;
          for (let k = 0; k < K; k++) {
            const v = logp[r * K + k];
            if (v !== Number.NEGATIVE_INFINITY) options.push({ total: score[r] + v, g, k });
          }
        }
        options.sort((x, y) => y.total - x.total || x.g - y.g || x.k - y.k);
        for (let i = 0; i < W; i++) {
          // Fewer options than beams (tiny pools): pad with dead copies of the best one.
          const o = options[i] ?? options[0];
          parents[b * W + i] = b * W + o.g;
          chosen[b * W + i] = o.k;
          nextScore[b * W + i] = i < options.length ? o.total : Number.NEGATIVE_INFINITY;
        }
      }
      reorderRows(state, parents, K);
      paths = Array.from(parents, (p, i) => [...paths[p], chosen[i]]);
      score = nextScore;
      if (t + 1 < shots) model.advance(enc, state, chosen);
    }
    const out: Trajectory[][] = [];
    for (let b = 0; b < B; b++) {
      const beams: Trajectory[] = [];
      for (let g = 0; g < W; g++) {
        const r = b * W + g;
        if (score[r] !== Number.NEGATIVE_INFINITY) beams.push({ positions: paths[r], logprob: score[r] });
      }
      out.push(beams);
    }
    return out;
  });
}

/** Replaces each row's state by that of row `parents[r]` (beam bookkeeping). */
function reorderRows(state: RowState, parents: Int32Array, K: number): void {
  state.h = T.indexSelect(state.h, parents, 0);
  if (state.redundancy !== null) state.redundancy = T.indexSelect(state.redundancy, parents, 0);
  const old = state.unavailable;
  const next = new Uint8Array(old.length);
  parents.forEach((p, r) => {
    next.set(old.subarray(p * K, (p + 1) * K), r * K);
  });
  state.unavailable = next;
}

/**
 * `samples` trajectories per query drawn step by step from softmax(scores / temperature) over the
 * available positions, using `rng` (rows in query-major order, so the draws are reproducible).
 */
export function sampleDecode(
  model: PointerSelector,
  enc: Encoded,
  shots: number,
  opts: { samples: number; temperature: number; rng: Rng },
): SampledTrajectory[][] {
  checkShots(enc, shots);
  const { samples: G, temperature, rng } = opts;
  if (!Number.isInteger(G) || G < 1) throw new LeverError(`samples must be a positive integer, got ${G}`);
  if (!(temperature > 0)) throw new LeverError(`sampling temperature must be > 0, got ${temperature}`);
  const { B, K } = enc;
  return noGrad(() => {
    const state = model.startRows(enc, G);
    const rows: SampledTrajectory[] = Array.from({ length: B * G }, () => ({
      positions: [],
      logprob: 0,
      sampleLogprob: 0,
    }));
    for (let t = 0; t < shots; t++) {
      const scores = model.stepScores(enc, state);
      const logp = T.logSoftmax(scores, state.unavailable).data;
      const logq = T.logSoftmax(T.scale(scores, 1 / temperature), state.unavailable).data;
      const picks = new Int32Array(B * G);
      for (let r = 0; r < B * G; r++) {
        const k = draw(logq, r * K, K, rng);
        picks[r] = k;
        rows[r].positions.push(k);
        rows[r].logprob += logp[r * K + k];
        rows[r].sampleLogprob += logq[r * K + k];
      }
      if (t + 1 < shots) model.advance(enc, state, picks); // no state is needed after the last pick
    }
    return Array.from({ length: B }, (_, b) => rows.slice(b * G, (b + 1) * G));
  });
}

function draw(logq: Data, offset: number, K: number, rng: Rng): number {
  const weights = new Float64Array(K);
  for (let k = 0; k < K; k++) weights[k] = Math.exp(logq[offset + k]); // masked: exp(−∞) = 0
  return rng.categorical(weights);
}

export interface PredictOptions {
  shots: number;
  /** Beam width; 1 (default) = greedy. */
  beam?: number;
  /** Queries encoded per chunk (bounds memory). */
  chunk?: number;
}

/**
 * The best trajectory per query for many queries: projects the candidate table once (so a large
 * index shared by all pools is projected once, not once per query), then decodes in chunks.
 */
export function predict(model: PointerSelector, input: SelectorInput, opts: PredictOptions): Trajectory[] {
  const { d } = model.config;
  const Q = input.queries.length / d;
  const chunk = opts.chunk ?? 256; // measured best for K = 64 (smaller gathers stay in cache)
  // Checked up front so the error names the query's index in the whole input, not in its chunk.
  for (let q = 0; q < Q; q++) {
    let valid = 0;
    for (let k = 0; k < input.K; k++) if (input.slots[q * input.K + k] >= 0) valid++;
    if (valid < opts.shots)
      throw new LeverError(`query ${q} has ${valid} candidates; cannot choose ${opts.shots} distinct ones`);
  }
  const table = "candHat" in input.table ? input.table : model.encodeTable(input.table as Data);
  const out: Trajectory[] = [];
  for (let start = 0; start < Q; start += chunk) {
    const end = Math.min(Q, start + chunk);
    const enc = noGrad(() => model.encode(sliceQueries(input, table, d, start, end)));
    if ((opts.beam ?? 1) > 1) out.push(...beamDecode(model, enc, opts.shots, opts.beam ?? 1).map((beams) => beams[0]));
    else out.push(...greedyDecode(model, enc, opts.shots));
  }
  return out;
}

/** Queries [start, end) of `input` with every per-slot field (slots, features, items) sliced alike. */
export function sliceQueries(
  input: SelectorInput,
  table: SelectorInput["table"],
  d: number,
  start: number,
  end: number,
): SelectorInput {
  const { K } = input;
  const F = CANDIDATE_FEATURES.length;
  return {
    queries: input.queries.subarray(start * d, end * d),
    table,
    slots: input.slots.subarray(start * K, end * K),
    K,
    ...(input.features !== undefined ? { features: input.features.subarray(start * K * F, end * K * F) } : {}),
    ...(input.items !== undefined ? { items: input.items.subarray(start * K, end * K) } : {}),
    ...(input.prior !== undefined ? { prior: input.prior.subarray(start * K, end * K) } : {}),
  };
}
