/**
 * The informed ceiling of the simulated VLM: the selection a retriever makes when it knows every
 * latent of the world EXCEPT the query's own true answer (and whether its annotators got it wrong) and
 * its visual knowledge κ — the relevance class, shown answer (right or wrong), copy jitter and item
 * quality of every candidate, and the query's cell distribution. Those are
 * exactly what an embedding-only selector could at best recover (the embeddings carry concepts, types
 * and, faintly, answers; κ is carried by nothing, docs/simulator.md), so the informed retriever shows
 * how far above top-k such a selector can possibly get on a world.
 *
 * Objective, for demonstrations in prompt order: the probability that the greedy answer is the true
 * one, with the true answer a drawn from the query's cell (p_cell, which is how the world draws it)
 * and κ ~ N(knowledgeMean, knowledgeSd):
 *
 *   E = Σ_a p_cell(a) · P(κ + L_a > max_{x≠a} L_x) = Σ_a p_cell(a) · Φ((μ_κ + L_a − M_a) / σ_κ)
 *
 * where L are the logits without the true answer's bonus plus `truthBonus` on slot a (the format and
 * confusion terms do not depend on which answer is true). One model evaluation per prompt gives all a.
 * With label noise ρ the query's annotators agree, with probability ρ, on a wrong answer w drawn from
 * the cell without a (src/sim/item-effects.ts), so the target is w instead of a:
 *
 *   E = Σ_a p_cell(a) · [(1−ρ)·P(greedy = a) + ρ·Σ_{w≠a} r_a(w)·P(greedy = w)],  r_a(w) = p_cell(w) / Σ_{x≠a} p_cell(x)
 *
 * with P(greedy = w | truth a) = [w beats every answer but a] · Φ((L_w − L_a − truthBonus − μ_κ) / σ_κ).
 * Item quality needs nothing here: it is inside the model's copy weights, which informed knows.
 * Ties (probability 0) and the soft VQA accuracy are ignored: this is exact-answer probability.
 *
 * Search: beam search over prompts built from the query outward (the first pick sits next to the
 * query, as the selectors' default "nearest" order), `beamWidth` prompts kept per length, exact for
 * one shot and for two shots when the beam is at least the pool size.
 */
import { check } from "../util/errors.js";
import { normalCdf } from "../util/normal.js";
import { searchInputs } from "./oracle.js";
import type { SimVlm } from "./vlm.js";

export const DEFAULT_INFORMED_BEAM = 4;

export interface InformedTrajectory {
  /** Pool positions of the chosen demonstrations, in prompt order. */
  positions: number[];
  /** Their question ids, in prompt order. */
  demoIds: string[];
  /** The objective E of this prompt (probability, not the realised accuracy). */
  expected: number;
}

export class InformedSelector {
  constructor(
    readonly sim: SimVlm,
    readonly beamWidth = DEFAULT_INFORMED_BEAM,
  ) {
    check(Number.isInteger(beamWidth) && beamWidth >= 1, `beam width must be a positive integer, got ${beamWidth}`, {
      field: "beamWidth",
    });
  }

  /** E for a query and demonstrations in prompt order (ids). */
  expected(queryId: string, demoIds: readonly string[]): number {
    const q = this.sim.itemIndex(queryId, "query");
    const demos = Int32Array.from(demoIds, (id, j) => this.sim.itemIndex(id, `demonstrations[${j}]`));
    return this.objective(q, demos, this.answerIds(demos));
  }

  /** The prompt of `shots` pool items with the largest E found by the beam search. */
  trajectory(queryId: string, poolIds: readonly string[], shots: number): InformedTrajectory {
    const { q, pool } = searchInputs(this.sim, queryId, poolIds, shots);
    const answers = this.answerIds(pool);
    // A beam entry: pool positions in prompt order (farthest first, the first pick last).
    let beam: { positions: number[]; expected: number }[] = [{ positions: [], expected: this.objective(q, [], []) }];
    for (let step = 0; step < shots; step++) {
      const next: { positions: number[]; expected: number }[] = [];
      for (const entry of beam)
        for (let c = 0; c < pool.length; c++) {
          if (entry.positions.includes(c)) continue;
          const positions = [c, ...entry.positions];
          const demos = Int32Array.from(positions, (p) => pool[p]);
          const demoAnswers = Int32Array.from(positions, (p) => answers[p]);
          next.push({ positions, expected: this.objective(q, demos, demoAnswers) });
        }
      // Stable sort: ties keep pool order, so the search is deterministic.
      next.sort((a, b) => b.expected - a.expected);
      beam = next.slice(0, this.beamWidth);
    }
    const best = beam[0];
    return { positions: best.positions, demoIds: best.positions.map((p) => poolIds[p]), expected: best.expected };
  }

  private answerIds(items: ArrayLike<number>): Int32Array {
    const world = this.sim.world;
    return Int32Array.from({ length: items.length }, (_, j) => this.sim.answerId(world.shownAnswer[items[j]]));
  }

  private objective(q: number, demos: ArrayLike<number>, answers: ArrayLike<number>): number {
    const world = this.sim.world;
    const model = this.sim.model;
    const noise = world.params.labelNoise ?? 0;
    model.evaluate(q, demos, answers, demos.length, false);
    const logits = model.logits;
    // The three largest logits of the table (earlier slot first on ties): M_a is the first unless a holds it.
    const [first, second, third] = topSlots(logits, model.tableSize);
    const cell = world.cell(world.concept[q], world.qtype[q]);
    let total = 0;
    for (let k = 0; k < cell.vocab.length; k++) {
      // The table starts with the cell's vocabulary, in order: slot k is answer cell.vocab[k].
      const rival = k === first ? second : first;
      if (rival < 0) {
        total += cell.prob[k]; // the only answer in the table
        continue;
      }
      const clean = this.truthBeats(k, rival, logits, model.truthBonus);
      const wrong = noise > 0 ? this.wrongWins(k, cell.prob, logits, [first, second, third], model.truthBonus) : -1;
      total += cell.prob[k] * (wrong >= 0 ? (1 - noise) * clean + noise * wrong : clean);
    }
    return total;
  }

  /**
   * P(the truth at slot k, its logit raised by κ + truthBonus, beats slot `rival`) over κ:
   * Φ((μ_κ + L_k + truthBonus − L_rival) / σ_κ). With σ_κ = 0 a tie goes to the earlier slot, as the greedy answer does.
   */
  private truthBeats(k: number, rival: number, logits: Float64Array, bonus: number): number {
    const { knowledgeMean, knowledgeSd } = this.sim.world.params;
    const margin = knowledgeMean + logits[k] + bonus - logits[rival];
    return knowledgeSd > 0 ? normalCdf(margin / knowledgeSd) : margin > 0 || (margin === 0 && k < rival) ? 1 : 0;
  }

  /**
   * With label noise: P(the greedy answer is the wrong answer w the query's annotators agree on), w
   * drawn as the world draws it, p_cell(w) / Σ_{x≠k} p_cell(x), when the truth is slot k. w is the
   * greedy answer iff it beats every other answer but the truth, and κ < L_w − L_k − truthBonus.
   * -1 when the cell has no other answer (such an item is never noisy).
   */
  private wrongWins(k: number, prob: Float64Array, logits: Float64Array, top: number[], bonus: number): number {
    let mass = 0;
    let sum = 0;
    for (let w = 0; w < prob.length; w++) {
      if (w === k || prob[w] <= 0) continue;
      mass += prob[w];
      const rival = top.find((s) => s >= 0 && s !== k && s !== w) ?? -1;
      if (rival >= 0 && !beats(logits, w, rival)) continue;
      sum += prob[w] * (1 - this.truthBeats(k, w, logits, bonus));
    }
    return mass > 0 ? sum / mass : -1;
  }
}

/** Whether slot a is ahead of slot b in the greedy order (larger logit, earlier slot on ties). */
function beats(logits: Float64Array, a: number, b: number): boolean {
  return logits[a] > logits[b] || (logits[a] === logits[b] && a < b);
}

/** The three best slots of a table in the greedy order (-1 where the table is smaller). */
function topSlots(logits: Float64Array, size: number): [number, number, number] {
  const top: [number, number, number] = [-1, -1, -1];
  for (let s = 0; s < size; s++) {
    let at = 3;
    while (at > 0 && (top[at - 1] < 0 || beats(logits, s, top[at - 1]))) at--;
    if (at === 3) continue;
    top.splice(at, 0, s);
    top.length = 3;
  }
  return top;
}
