/**
 * Small inputs for the RL loss tests: teacher-forced passes over free logits (each step's scores a
 * parameter of its own) and over a real float64 PointerSelector, both with B = 2 queries × G = 3 rows,
 * a padding slot in the second query's pool and the last row a padding row (weight 0).
 */
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { PointerSelector, type SelectorInput, type TeacherForced } from "../../src/selector/model.js";
import { initParams } from "../../src/selector/params.js";
import type { Tensor } from "../../src/tensor/tensor.js";
import { Rng } from "../../src/util/rng.js";
import { randParam } from "../tensor/gradcheck.js";

export const B = 2;
export const G = 3;
export const R = B * G;
export const K = 5;
export const S = 3;
/** Real candidates per query (the second query's last slot is padding). */
export const VALID = [5, 4];
/** Row weights: the last row is padding. */
export const WEIGHTS = new Float64Array([1, 1, 1, 1, 2, 0]);
export const REAL = Uint8Array.from(WEIGHTS, (w) => (w > 0 ? 1 : 0));

/** Labels [R·S]: distinct real positions per row (the padding row repeats its query's first row). */
export function fixtureLabels(seed: number): Int32Array {
  const rng = new Rng(seed);
  const labels = new Int32Array(R * S);
  for (let r = 0; r < R; r++) {
    const b = Math.floor(r / G);
    const row = r % G === G - 1 && WEIGHTS[r] === 0 ? labels.slice(b * G * S, b * G * S + S) : null;
    labels.set(row ?? rng.sampleWithoutReplacement(VALID[b], S), r * S);
  }
  return labels;
}

/** Masks of a teacher-forced pass: padding slots, then each step's label excluded from later steps. */
function teacherMasks(labels: Int32Array): Uint8Array[] {
  const unavailable = new Uint8Array(R * K);
  for (let r = 0; r < R; r++) for (let k = VALID[Math.floor(r / G)]; k < K; k++) unavailable[r * K + k] = 1;
  const masks: Uint8Array[] = [];
  for (let t = 0; t < S; t++) {
    masks.push(unavailable.slice());
    for (let r = 0; r < R; r++) unavailable[r * K + labels[r * S + t]] = 1;
  }
  return masks;
}

/** One free [R, K] score parameter per step, and the TeacherForced view of any such list. */
export function freeLogits(labels: Int32Array, seed: number) {
  const masks = teacherMasks(labels);
  const params = Array.from({ length: S }, (_, t) => randParam([R, K], seed + t, "float64", -2, 2));
  const tf = (scores: Tensor[]): TeacherForced => ({ G, scores, masks });
  return { params, tf };
}

/** A float64 selector with every part exercised (GRU, step embedding, redundancy penalty, 2 heads). */
export function smallSelector(seed: number) {
  const config = SelectorConfigSchema.parse({
    d: 6,
    hidden: 4,
    heads: 2,
    layers: 1,
    shots: S,
    dropout: 0,
    attnDropout: 0,
    stateUpdate: "gru",
    stepEmbedding: true,
    redundancy: "max",
  });
  const values = initParams(config, seed);
  const rng = new Rng(seed + 1);
  for (const v of values.values()) for (let i = 0; i < v.length; i++) v[i] += 0.4 * rng.normal();
  const model = new PointerSelector(config, values, "float64");
  const queries = Float64Array.from({ length: B * config.d }, () => rng.normal());
  const table = Float64Array.from({ length: (VALID[0] + VALID[1]) * config.d }, () => rng.normal());
  const slots = new Int32Array(B * K).fill(-1);
  let row = 0;
  VALID.forEach((n, b) => {
    for (let k = 0; k < n; k++) slots[b * K + k] = row++;
  });
  const input: SelectorInput = { queries, table, slots, K };
  const tf = (labels: Int32Array) => model.teacherForce(model.encode(input), G, labels, S);
  return { model, tf };
}
