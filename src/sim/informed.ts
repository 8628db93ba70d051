/**
 * The informed ceiling of the simulated VLM: the selection a retriever makes when it knows every
 * latent of the world EXCEPT the query's own true answer and its visual knowledge κ — the relevance
 * class, shown answer and copy jitter of every candidate, and the query's cell distribution. Those are
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
    const { knowledgeMean, knowledgeSd } = world.params;
    model.evaluate(q, demos, answers, demos.length, false);
    const logits = model.logits;
    // The two largest logits of the table (first slot on ties): M_a is the first unless a holds it.
    const first = model.argmax();
    let second = -1;
    for (let k = 0; k < model.tableSize; k++) if (k !== first && (second < 0 || logits[k] > logits[second])) second = k;
    const cell = world.cell(world.concept[q], world.qtype[q]);
    let total = 0;
    for (let k = 0; k < cell.vocab.length; k++) {
      // The table starts with the cell's vocabulary, in order: slot k is answer cell.vocab[k].
      const rival = k === first ? second : first;
      if (rival < 0) {
        total += cell.prob[k]; // the only answer in the table
        continue;
      }
      const margin = knowledgeMean + logits[k] + model.truthBonus - logits[rival];
      // With σ_κ = 0 a tie goes to the earlier slot, as the greedy answer does.
      const win = knowledgeSd > 0 ? normalCdf(margin / knowledgeSd) : margin > 0 || (margin === 0 && k < rival) ? 1 : 0;
      total += cell.prob[k] * win;
    }
    return total;
  }
}
