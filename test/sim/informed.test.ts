import { describe, expect, it } from "vitest";
import { InformedSelector } from "../../src/sim/informed.js";
import type { World } from "../../src/sim/world.js";
import { normalCdf } from "../../src/util/normal.js";
import { Rng } from "../../src/util/rng.js";
import { noisy, plain, type SmallWorld } from "./small-world.js";

/**
 * Runs `body` with the query's true answer, knowledge, annotators and label-noise answer replaced
 * (all the query's own latents informed must not read), then restores them.
 */
function supposing<T>(world: World, q: number, answer: number, knowledge: number, body: () => T): T {
  const saved = [world.trueAnswer[q], world.knowledge[q], world.wrongAnswer[q], world.shownAnswer[q]] as const;
  const annotators = world.annotatorAnswers[q];
  world.trueAnswer[q] = answer;
  world.knowledge[q] = knowledge;
  world.wrongAnswer[q] = -1;
  world.shownAnswer[q] = world.registry.canonical[answer];
  world.annotatorAnswers[q] = annotators.map(() => world.registry.canonical[answer]);
  try {
    return body();
  } finally {
    [world.trueAnswer[q], world.knowledge[q], world.wrongAnswer[q], world.shownAnswer[q]] = saved;
    world.annotatorAnswers[q] = annotators;
  }
}

/**
 * Independent E: for every answer of the cell and κ on a fine grid, the simulator's own greedy answer
 * (the full model, truth included) is compared with the answer the annotators agree on — the truth,
 * or with probability ρ a wrong answer drawn from the cell without it; integrated by the midpoint rule.
 */
function integratedExpected({ world, oracle }: SmallWorld, queryId: string, demoIds: string[]): number {
  const q = world.indexOf(queryId);
  const cell = world.cell(world.concept[q], world.qtype[q]);
  const { knowledgeMean: mu, knowledgeSd: sd } = world.params;
  const rho = world.params.labelNoise ?? 0;
  const steps = 4000;
  const lo = mu - 8 * sd;
  const h = (16 * sd) / steps;
  let total = 0;
  for (let k = 0; k < cell.vocab.length; k++) {
    const others = cell.prob.reduce((sum, p, w) => (w === k ? sum : sum + p), 0);
    let win = 0;
    for (let i = 0; i < steps; i++) {
      const kappa = lo + (i + 0.5) * h;
      const density = Math.exp(-0.5 * ((kappa - mu) / sd) ** 2) / (sd * Math.sqrt(2 * Math.PI));
      const greedy = supposing(world, q, cell.vocab[k], kappa, () => oracle.greedyAnswer(queryId, demoIds));
      const slot = cell.vocab.findIndex((id) => world.registry.canonical[id] === greedy);
      const target = slot === k ? 1 - rho : slot >= 0 ? (rho * cell.prob[slot]) / others : 0;
      win += density * h * target;
    }
    total += cell.prob[k] * win;
  }
  return total;
}

describe.each([
  ["the plain world", plain],
  ["a world with label noise and item quality", noisy],
])("InformedSelector on %s", (_name, small) => {
  const { sim, world, valIds, trainIds, randomPool } = small;
  const informed = new InformedSelector(sim);

  it("E equals the probability integrated over the cell's answers, label noise and κ through the full model", () => {
    const rng = new Rng(3);
    for (let t = 0; t < 12; t++) {
      const q = valIds[rng.int(valIds.length)];
      const demos = randomPool(rng, rng.int(5));
      expect(informed.expected(q, demos)).toBeCloseTo(integratedExpected(small, q, demos), 3);
    }
  });

  it("never reads the query's true answer, κ or annotators: supposing others leaves every choice unchanged", () => {
    const rng = new Rng(4);
    for (let t = 0; t < 20; t++) {
      const queryId = valIds[rng.int(valIds.length)];
      const q = world.indexOf(queryId);
      const pool = randomPool(rng, 12);
      const shots = 1 + rng.int(4);
      const chosen = informed.trajectory(queryId, pool, shots);
      const cell = world.cell(world.concept[q], world.qtype[q]);
      const other = cell.vocab[rng.int(cell.vocab.length)];
      const again = supposing(world, q, other, 5 * rng.normal(), () => informed.trajectory(queryId, pool, shots));
      expect(again).toEqual(chosen);
    }
  });

  it("is exhaustive at one shot, and at two shots when the beam holds the whole pool", () => {
    const rng = new Rng(5);
    const wide = new InformedSelector(sim, 10);
    for (let t = 0; t < 15; t++) {
      const q = valIds[rng.int(valIds.length)];
      const pool = randomPool(rng, 10);
      let best1 = -1;
      let best2 = -1;
      for (let a = 0; a < pool.length; a++) {
        best1 = Math.max(best1, informed.expected(q, [pool[a]]));
        for (let b = 0; b < pool.length; b++)
          if (b !== a) best2 = Math.max(best2, wide.expected(q, [pool[b], pool[a]]));
      }
      const one = informed.trajectory(q, pool, 1);
      expect(one.expected).toBe(best1);
      expect(informed.expected(q, one.demoIds)).toBe(one.expected);
      const two = wide.trajectory(q, pool, 2);
      expect(two.expected).toBe(best2);
      expect(two.demoIds).toEqual(two.positions.map((p) => pool[p]));
      // The default beam (4) cannot beat the exhaustive one.
      expect(two.expected).toBeGreaterThanOrEqual(informed.trajectory(q, pool, 2).expected);
    }
  });

  it("rejects a bad shot count, duplicate pool ids and a bad beam width", () => {
    const pool = trainIds.slice(0, 4);
    expect(() => informed.trajectory(valIds[0], pool, 5)).toThrow(/shots/);
    expect(() => informed.trajectory(valIds[0], [pool[0], pool[0]], 1)).toThrow(/duplicate/);
    expect(() => new InformedSelector(sim, 0)).toThrow(/beam width/);
  });
});

describe("InformedSelector with label noise, by hand", () => {
  it("zero-shot yes/no: E = Σ_a p(a)·[(1−ρ)·P(greedy = a) + ρ·P(greedy = the other)]", () => {
    const { sim, world, valIds } = noisy;
    const rho = world.params.labelNoise as number;
    const { knowledgeMean: mu, knowledgeSd: sd } = world.params;
    const lambda = world.params.model.priorScale;
    const yesNo = valIds.filter((id) => world.typeSpec(world.qtype[world.indexOf(id)]).answerType === "yes/no");
    expect(yesNo.length).toBeGreaterThan(10);
    for (const id of yesNo.slice(0, 10)) {
      const q = world.indexOf(id);
      const [p0, p1] = world.cell(world.concept[q], world.qtype[q]).prob;
      // No demonstration: logits λ·log p, no format or confusion term; the truth gains κ.
      const win0 = normalCdf((mu + lambda * Math.log(p0) - lambda * Math.log(p1)) / sd);
      const win1 = normalCdf((mu + lambda * Math.log(p1) - lambda * Math.log(p0)) / sd);
      const expected = p0 * ((1 - rho) * win0 + rho * (1 - win0)) + p1 * ((1 - rho) * win1 + rho * (1 - win1));
      expect(new InformedSelector(sim).expected(id, [])).toBeCloseTo(expected, 12);
    }
  });
});
