/**
 * Two per-item phenomena of the synthetic world that no embedding carries (docs/simulator.md):
 *
 * - label noise (`labelNoise` = ρ): each item, from its own stream `child("label-noise").child(id)`,
 *   is noisy with probability ρ; a noisy item's annotators answer around a WRONG answer w — drawn from
 *   its cell's distribution without the true answer, p_cell(w) / Σ_{x≠a*} p_cell(x) — exactly as a
 *   clean item's annotators answer around its true answer (same ambiguity draw, same variants and
 *   confusions), so its agreement does not give it away. Its latent true answer stays (the image
 *   still shows it: the model's knowledge bonus and the image embedding use it). An item whose cell
 *   has no other answer stays clean.
 * - item quality (`itemQuality` = σ): m_i = exp(σ·z_i − σ²/2), z_i ~ N(0, 1) drawn in item order from
 *   `child("item-quality")`; the answer model multiplies a demonstration's copy weight by it.
 *
 * Both draw only from their own streams, so with the parameters off (absent or 0) nothing is drawn and
 * the world is bit-identical to a world made before they existed.
 */
import type { Rng } from "../util/rng.js";
import type { WorldParams } from "./params.js";

/** Per-item copy-weight multipliers m_i (all exactly 1 when σ is 0). */
export function itemQualities(params: WorldParams, rng: Rng, count: number): Float64Array {
  const sigma = params.itemQuality ?? 0;
  const out = new Float64Array(count).fill(1);
  if (sigma > 0) for (let i = 0; i < count; i++) out[i] = Math.exp(sigma * rng.normal() - (sigma * sigma) / 2);
  return out;
}

/** What label noise needs of an item: its cell's answers and probabilities, its true answer. */
export interface NoiseTarget {
  questionId: string;
  vocab: Int32Array;
  prob: Float64Array;
  trueAnswer: number;
}

/**
 * The wrong answer each item's annotators agree on, or -1 for a clean item. `annotate(rng, answer)`
 * is called for each noisy item with that item's own stream, to draw its annotators around `answer`.
 */
export function noisyAnswers(
  params: WorldParams,
  rng: Rng,
  items: readonly NoiseTarget[],
  annotate: (rng: Rng, item: number, answer: number) => void,
): Int32Array {
  const rate = params.labelNoise ?? 0;
  const out = new Int32Array(items.length).fill(-1);
  if (rate <= 0) return out;
  items.forEach((item, i) => {
    const r = rng.child(item.questionId);
    if (r.next() >= rate) return;
    const others = Float64Array.from(item.vocab, (id, k) => (id === item.trueAnswer ? 0 : item.prob[k]));
    if (!others.some((w) => w > 0)) return;
    out[i] = item.vocab[r.categorical(others)];
    annotate(r, i, out[i]);
  });
  return out;
}
