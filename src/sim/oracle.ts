/**
 * The oracle of the simulated VLM: the VQA accuracy its greedy answer gets for a given ordered
 * list of demonstrations, and the best ordered list from a pool (exact branch and bound).
 *
 * Trajectories here are in PROMPT order (index 0 is leftmost, farthest from the query); callers
 * map them to selection order with their recorded prompt-order setting.
 *
 * Branch and bound: slots are filled from the one next to the query (weight 1) outward. At a node,
 * an answer x can still become the greedy answer only if an optimistic logit for x — the remaining
 * slots filled with x's strongest unused demonstrations, and for the true answer also with the most
 * format evidence and no more confusion — reaches the pessimistic logit of every other answer
 * (their current evidence, and for the true answer the most confusion the remaining slots can add).
 * Evidence, format and confusion only grow as demonstrations are added, so these bounds are valid;
 * a subtree is cut when no answer better than the incumbent can still win. Leaves are scored with
 * the simulator's own evaluation, so the result is exactly what `generate` would answer.
 */
import { check, LeverError } from "../util/errors.js";
import { accuracyScorer } from "./metric.js";
import type { AnswerModel } from "./model.js";
import type { SimVlm } from "./vlm.js";

export interface OracleTrajectory {
  /** Pool positions of the chosen demonstrations, in prompt order. */
  positions: number[];
  /** Their question ids, in prompt order. */
  demoIds: string[];
  /** VQA accuracy (fraction) of the simulator's greedy answer with these demonstrations. */
  accuracy: number;
  /** That greedy answer. */
  answer: string;
  /** Search nodes visited (for benchmarks). */
  nodes: number;
}

const EPS = 1e-9;

export class SimOracle {
  private readonly model: AnswerModel;
  private readonly scorers = new Map<number, (prediction: string) => number>();

  constructor(readonly sim: SimVlm) {
    this.model = sim.model;
  }

  /** The simulator's greedy answer (canonical text, no decoration) for a query and demonstrations in prompt order. */
  greedyAnswer(queryId: string, demoIds: readonly string[]): string {
    const q = this.sim.itemIndex(queryId, "query");
    const demos = demoIds.map((id, j) => this.sim.itemIndex(id, `demonstrations[${j}]`));
    return this.answerText(this.evaluate(q, Int32Array.from(demos), demos.length));
  }

  /** VQA accuracy (official metric, fraction) of the greedy answer for demonstrations in prompt order. */
  expectedAccuracy(queryId: string, demoIds: readonly string[]): number {
    const q = this.sim.itemIndex(queryId, "query");
    return this.scorer(q)(this.greedyAnswer(queryId, demoIds));
  }

  /** The ordered choice of `shots` demonstrations from `poolIds` that maximises the accuracy (exact). */
  bestTrajectory(queryId: string, poolIds: readonly string[], shots: number): OracleTrajectory {
    const { q, pool } = searchInputs(this.sim, queryId, poolIds, shots);
    const search = new Search(this, q, pool, shots);
    search.run();
    const positions = Array.from(search.bestPrompt);
    return {
      positions,
      demoIds: positions.map((i) => poolIds[i]),
      accuracy: search.bestAccuracy,
      answer: search.bestAnswer,
      nodes: search.nodes,
    };
  }

  /** Runs the simulator's evaluation; returns the greedy answer's id. */
  evaluate(q: number, demos: Int32Array, n: number): number {
    const answers = new Int32Array(n);
    for (let j = 0; j < n; j++) answers[j] = this.sim.answerId(this.sim.world.shownAnswer[demos[j]]);
    this.model.evaluate(q, demos, answers, n);
    return this.model.tableIds[this.model.argmax()];
  }

  answerText(id: number): string {
    return this.sim.world.registry.canonical[id];
  }

  scorer(q: number): (prediction: string) => number {
    let scorer = this.scorers.get(q);
    if (!scorer) {
      scorer = accuracyScorer(this.sim.world.annotatorAnswers[q]);
      if (this.scorers.size > 10_000) this.scorers.clear();
      this.scorers.set(q, scorer);
    }
    return scorer;
  }
}

/** Item indices of a query and its pool for a search of `shots` picks; a bad shot count or a duplicate is an error. */
export function searchInputs(
  sim: SimVlm,
  queryId: string,
  poolIds: readonly string[],
  shots: number,
): { q: number; pool: Int32Array } {
  check(
    Number.isInteger(shots) && shots >= 0 && shots <= poolIds.length,
    `shots must be an integer in [0, pool size ${poolIds.length}], got ${shots}`,
    { record: queryId, field: "shots" },
  );
  const q = sim.itemIndex(queryId, "query");
  const pool = Int32Array.from(poolIds, (id, i) => sim.itemIndex(id, `pool[${i}]`));
  if (new Set(pool).size !== pool.length) throw new LeverError("pool has duplicate question ids", { record: queryId });
  return { q, pool };
}

/** One branch-and-bound search over ordered `shots`-subsets of a pool. */
class Search {
  nodes = 0;
  bestAccuracy = -1;
  bestAnswer = "";
  /** Best trajectory as pool positions in prompt order. */
  bestPrompt = new Int32Array(0);

  private readonly model: AnswerModel;
  private readonly k: number;
  // Per candidate.
  private readonly slotOfCand: Int32Array;
  private readonly copy: Float64Array;
  private readonly format: Float64Array;
  private readonly confusion: Float64Array;
  private readonly order: Int32Array;
  // Per table slot (query vocabulary, then the pool's other answers).
  private readonly prior: Float64Array;
  private readonly accuracy: Float64Array;
  private readonly byCopy: Int32Array[];
  private readonly byFormat: Int32Array;
  private readonly byConfusion: Int32Array;
  private readonly trueSlot: number;
  private readonly maxAccuracy: number;
  private readonly pi: Float64Array;
  // DFS state.
  private readonly used: Uint8Array;
  private readonly evidence: Float64Array;
  private readonly chosen: Int32Array;
  private readonly promptItems: Int32Array;
  private readonly accuracyById = new Map<number, number>();

  constructor(
    private readonly oracle: SimOracle,
    private readonly q: number,
    private readonly pool: Int32Array,
    private readonly shots: number,
  ) {
    const model = oracle.sim.model;
    const world = oracle.sim.world;
    const m = model.params;
    this.model = model;
    this.k = pool.length;
    const cell = world.cell(world.concept[q], world.qtype[q]);
    const slotIds: number[] = Array.from(cell.vocab);
    const prior: number[] = Array.from(cell.logProb, (lp) => m.priorScale * lp);
    this.slotOfCand = new Int32Array(this.k);
    this.copy = new Float64Array(this.k);
    this.format = new Float64Array(this.k);
    this.confusion = new Float64Array(this.k);
    for (let i = 0; i < this.k; i++) {
      const d = pool[i];
      const id = oracle.sim.answerId(world.shownAnswer[d]);
      let slot = slotIds.indexOf(id);
      if (slot < 0) {
        slot = slotIds.length;
        slotIds.push(id);
        prior.push(m.priorScale * m.floorLogProb);
      }
      this.slotOfCand[i] = slot;
      const cls = model.relevanceClass(q, d);
      this.copy[i] = model.copyWeight(q, d);
      this.format[i] = model.formatByClass[cls];
      this.confusion[i] = model.confusionByClass[cls];
    }
    const slots = slotIds.length;
    this.prior = Float64Array.from(prior);
    this.trueSlot = slotIds.indexOf(world.trueAnswer[q]);
    const scorer = oracle.scorer(q);
    this.accuracy = Float64Array.from(slotIds, (id) => scorer(oracle.answerText(id)));
    this.maxAccuracy = Math.max(...this.accuracy);
    const candidates = Array.from({ length: this.k }, (_, i) => i);
    this.byCopy = Array.from({ length: slots }, (_, s) =>
      Int32Array.from(candidates.filter((i) => this.slotOfCand[i] === s).sort((a, b) => this.copy[b] - this.copy[a])),
    );
    this.byFormat = Int32Array.from(candidates.slice().sort((a, b) => this.format[b] - this.format[a]));
    this.byConfusion = Int32Array.from(candidates.slice().sort((a, b) => this.confusion[b] - this.confusion[a]));
    // Try first what most helps the true answer: its own answer, relevant, not confusing.
    const promise = (i: number) =>
      (this.slotOfCand[i] === this.trueSlot ? 10 * this.copy[i] : 0) + this.format[i] - this.confusion[i];
    this.order = Int32Array.from(candidates.sort((a, b) => promise(b) - promise(a)));
    this.pi = Float64Array.from({ length: shots }, (_, k) => m.positionDecay ** k);
    this.used = new Uint8Array(this.k);
    this.evidence = new Float64Array(slots);
    this.chosen = new Int32Array(shots);
    this.promptItems = new Int32Array(shots);
  }

  run(): void {
    this.dfs(0, 0, 0);
  }

  /** `depth` slots are filled; slot k sits at distance k from the query (prompt index shots−1−k). */
  private dfs(depth: number, format: number, confusion: number): boolean {
    this.nodes++;
    if (depth === this.shots) {
      this.scoreLeaf();
      return this.bestAccuracy >= this.maxAccuracy - EPS;
    }
    if (depth > 0 && this.bound(depth, format, confusion) <= this.bestAccuracy + EPS) return false;
    const weight = this.pi[depth];
    for (const i of this.order) {
      if (this.used[i]) continue;
      const slot = this.slotOfCand[i];
      this.used[i] = 1;
      this.chosen[depth] = i;
      const before = this.evidence[slot];
      this.evidence[slot] = before + this.copy[i] * weight;
      const done = this.dfs(depth + 1, format + this.format[i] * weight, confusion + this.confusion[i] * weight);
      this.evidence[slot] = before;
      this.used[i] = 0;
      if (done) return true;
    }
    return false;
  }

  private scoreLeaf(): void {
    const n = this.shots;
    for (let k = 0; k < n; k++) this.promptItems[n - 1 - k] = this.pool[this.chosen[k]];
    const id = this.oracle.evaluate(this.q, this.promptItems, n);
    let accuracy = this.accuracyById.get(id);
    if (accuracy === undefined) {
      accuracy = this.oracle.scorer(this.q)(this.oracle.answerText(id));
      this.accuracyById.set(id, accuracy);
    }
    if (accuracy > this.bestAccuracy) {
      this.bestAccuracy = accuracy;
      this.bestAnswer = this.oracle.answerText(id);
      this.bestPrompt = Int32Array.from({ length: n }, (_, j) => this.chosen[n - 1 - j]);
    }
  }

  /** Largest accuracy any completion of the current partial trajectory can reach (optimistic). */
  private bound(depth: number, format: number, confusion: number): number {
    const m = this.model.params;
    const knowledge = this.oracle.sim.world.knowledge[this.q];
    const remaining = this.shots - depth;
    const addFormat = this.topUnused(this.byFormat, this.format, depth, remaining);
    const addConfusion = this.topUnused(this.byConfusion, this.confusion, depth, remaining);
    // Pessimistic logits of every answer, and the two largest.
    let top1 = Number.NEGATIVE_INFINITY;
    let top2 = Number.NEGATIVE_INFINITY;
    let top1Slot = -1;
    const slots = this.prior.length;
    for (let s = 0; s < slots; s++) {
      let low = this.prior[s] + m.pull * -Math.expm1(-this.evidence[s]);
      if (s === this.trueSlot)
        low += knowledge + m.formatGain * -Math.expm1(-format) - m.distraction * (confusion + addConfusion);
      if (low > top1) {
        top2 = top1;
        top1 = low;
        top1Slot = s;
      } else if (low > top2) top2 = low;
    }
    let best = -1;
    for (let s = 0; s < slots; s++) {
      if (this.accuracy[s] <= Math.max(best, this.bestAccuracy) + EPS) continue;
      const evidence = this.evidence[s] + this.topUnused(this.byCopy[s], this.copy, depth, remaining);
      let high = this.prior[s] + m.pull * -Math.expm1(-evidence);
      if (s === this.trueSlot)
        high += knowledge + m.formatGain * -Math.expm1(-(format + addFormat)) - m.distraction * confusion;
      if (high + 1e-7 >= (s === top1Slot ? top2 : top1)) best = this.accuracy[s];
    }
    return best;
  }

  /** Σ over the remaining slots (heaviest first) of the largest unused values, taken in `sorted` order. */
  private topUnused(sorted: Int32Array, values: Float64Array, depth: number, remaining: number): number {
    let sum = 0;
    let taken = 0;
    for (let k = 0; k < sorted.length && taken < remaining; k++) {
      const i = sorted[k];
      if (this.used[i]) continue;
      const v = values[i];
      if (v <= 0) break;
      sum += v * this.pi[depth + taken];
      taken++;
    }
    return sum;
  }
}
