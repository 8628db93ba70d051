/**
 * The simulated VLM's answer distribution for a query and an ordered list of demonstrations.
 *
 * Table: the query cell's answer vocabulary, then each demonstration answer not already in it.
 * For a query q (concept c, type t, true answer a*, knowledge κ) and demonstrations j = 0..n−1 in
 * prompt order (distance from the query δ_j = n−1−j, position weight π_j = decay^δ_j):
 *
 *   class_j  = relevance class of j for q: none / sameConcept / sameType / sameCell (both)
 *   w_j      = (copyBase + relevance[class_j]) · (1 + η·h(q, j)) · m_j · π_j   copy weight, h ∈ [−1, 1] a
 *              fixed hash, m_j the demonstration's item quality (1 unless `itemQuality` is on)
 *   E_x      = Σ_{j : answer_j = x} w_j                                      evidence for answer x
 *   F        = Σ_j format[class_j] · π_j                                     format evidence
 *   U        = Σ_j confusion[class_j] · π_j                                  confusion
 *   logit(x) = λ·log p_cell(x)  (or λ·floorLogProb outside the vocabulary)
 *            + β·(1 − e^{−E_x})                                            saturating pull toward demo answers
 *            + [x = a*]·(κ + φ·(1 − e^{−F}) − ψ·U)                         what the model itself sees
 *   p(x)     = softmax over the table plus one tail entry (tailLogit, shared by tailSize strings),
 *              all logits divided by τ = 1 + γ·U (irrelevant demonstrations flatten the distribution).
 *
 * Greedy answer = argmax logit (ties to the earlier table slot; τ does not change the argmax).
 * One instance owns scratch buffers: it is not re-entrant, which is fine in single-threaded JS.
 */

import type { AnswerModelParams } from "./params.js";
import type { World } from "./world.js";

/** Relevance classes: bit 0 = same concept, bit 1 = same question type. */
export const RELEVANCE_CLASSES = ["none", "sameConcept", "sameType", "sameCell"] as const;

const MAX_TABLE = 256;

export class AnswerModel {
  readonly params: AnswerModelParams;
  /** Per relevance class: copy weight before jitter, format evidence, confusion. */
  readonly copyByClass: Float64Array;
  readonly formatByClass: Float64Array;
  readonly confusionByClass: Float64Array;

  // Result of the last `evaluate`.
  /** Answer ids of the table slots (ids ≥ registry size are caller-defined unknown answers). */
  readonly tableIds = new Int32Array(MAX_TABLE);
  readonly logits = new Float64Array(MAX_TABLE);
  tableSize = 0;
  /** Slot of the query's true answer. */
  trueSlot = 0;
  /** Confusion U of the last evaluation (sets the temperature). */
  confusion = 0;
  /** φ·(1 − e^{−F}) − ψ·U of the last evaluation: the true answer's logit bonus besides κ. */
  truthBonus = 0;
  /** For each slot added by a demonstration, the prompt index of the first demonstration with it; else -1. */
  readonly firstDemoOfSlot = new Int32Array(MAX_TABLE);

  private readonly evidence = new Float64Array(MAX_TABLE);

  constructor(readonly world: World) {
    const m = world.params.model;
    this.params = m;
    const byClass = (v: { none: number; sameConcept: number; sameType: number; sameCell: number }) =>
      Float64Array.of(v.none, v.sameConcept, v.sameType, v.sameCell);
    this.copyByClass = byClass(m.relevance).map((r) => m.copyBase + r);
    this.formatByClass = byClass(m.format);
    this.confusionByClass = byClass(m.confusion);
  }

  /** Relevance class (0..3) of item d as a demonstration for query q. */
  relevanceClass(q: number, d: number): number {
    const w = this.world;
    return (w.concept[q] === w.concept[d] ? 1 : 0) | (w.qtype[q] === w.qtype[d] ? 2 : 0);
  }

  /** Copy weight of item d for query q before the position weight: class weight, fixed jitter, item quality. */
  copyWeight(q: number, d: number): number {
    return (
      this.copyByClass[this.relevanceClass(q, d)] * (1 + this.params.jitter * pairHash(q, d)) * this.world.quality[d]
    );
  }

  /** Weight of prompt index j among n demonstrations (the last one, next to the query, weighs 1). */
  positionWeight(j: number, n: number): number {
    return this.params.positionDecay ** (n - 1 - j);
  }

  /**
   * Fills the table and logits for query item q and demonstrations (item indices `demos`, answer
   * ids `answers`, both in prompt order; a demo answer id may be unknown to the world, ≥ registry size).
   * With `withTruth` false the true answer's bonus (κ + `truthBonus`) is left out of the logits, so a
   * caller can add it to any slot it supposes true (src/sim/informed.ts).
   */
  evaluate(q: number, demos: ArrayLike<number>, answers: ArrayLike<number>, n: number, withTruth = true): void {
    const w = this.world;
    const m = this.params;
    const cell = w.cell(w.concept[q], w.qtype[q]);
    const vocabSize = cell.vocab.length;
    const ids = this.tableIds;
    const logits = this.logits;
    const evidence = this.evidence;
    const quality = w.quality;
    let size = vocabSize;
    let trueSlot = 0;
    for (let k = 0; k < vocabSize; k++) {
      ids[k] = cell.vocab[k];
      logits[k] = m.priorScale * cell.logProb[k];
      evidence[k] = 0;
      this.firstDemoOfSlot[k] = -1;
      if (cell.vocab[k] === w.trueAnswer[q]) trueSlot = k;
    }
    let format = 0;
    let confusion = 0;
    let pi = 1;
    for (let j = n - 1; j >= 0; j--) {
      const d = demos[j];
      const cls = (w.concept[q] === w.concept[d] ? 1 : 0) | (w.qtype[q] === w.qtype[d] ? 2 : 0);
      const id = answers[j];
      let slot = 0;
      while (slot < size && ids[slot] !== id) slot++;
      if (slot === size) {
        if (size === MAX_TABLE) throw new RangeError(`sim: more than ${MAX_TABLE} distinct answers in one prompt`);
        ids[size] = id;
        logits[size] = m.priorScale * m.floorLogProb;
        evidence[size] = 0;
        size++;
      }
      if (slot >= vocabSize) this.firstDemoOfSlot[slot] = j; // j decreases: ends at the first demo
      // × quality (exactly 1 when off, so the product is bit-identical to the product without it).
      evidence[slot] += this.copyByClass[cls] * (1 + m.jitter * pairHash(q, d)) * quality[d] * pi;
      format += this.formatByClass[cls] * pi;
      confusion += this.confusionByClass[cls] * pi;
      pi *= m.positionDecay;
    }
    for (let k = 0; k < size; k++) if (evidence[k] > 0) logits[k] += m.pull * -Math.expm1(-evidence[k]);
    const formatTerm = m.formatGain * -Math.expm1(-format);
    const distractionTerm = m.distraction * confusion;
    this.truthBonus = formatTerm - distractionTerm;
    // Summed as κ + format − distraction, left to right: the simulator's answers stay bit-identical.
    if (withTruth) logits[trueSlot] += w.knowledge[q] + formatTerm - distractionTerm;
    this.tableSize = size;
    this.trueSlot = trueSlot;
    this.confusion = confusion;
  }

  /** Slot of the greedy answer of the last evaluation (ties to the earlier slot). */
  argmax(): number {
    let best = 0;
    for (let k = 1; k < this.tableSize; k++) if (this.logits[k] > this.logits[best]) best = k;
    return best;
  }

  /** log p of table slot `slot` (or of one tail string when slot is -1) under the last evaluation. */
  logProb(slot: number): number {
    const m = this.params;
    const inv = 1 / (1 + m.flatten * this.confusion);
    const tail = m.tailLogit * inv + Math.log(m.tailSize);
    let max = tail;
    for (let k = 0; k < this.tableSize; k++) max = Math.max(max, this.logits[k] * inv);
    let sum = Math.exp(tail - max);
    for (let k = 0; k < this.tableSize; k++) sum += Math.exp(this.logits[k] * inv - max);
    const logZ = max + Math.log(sum);
    return slot >= 0 ? this.logits[slot] * inv - logZ : m.tailLogit * inv - logZ;
  }

  /** Slot of answer id in the last table, or -1. */
  slotOf(id: number): number {
    for (let k = 0; k < this.tableSize; k++) if (this.tableIds[k] === id) return k;
    return -1;
  }
}

/** Fixed pseudo-random value in [−1, 1] for an (query, demonstration) item pair (integer hash, no state). */
export function pairHash(q: number, d: number): number {
  let h = Math.imul(q ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(d + 0x632be5ab, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return (h >>> 0) / 2147483647.5 - 1;
}
