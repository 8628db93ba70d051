import { describe, expect, it } from "vitest";
import { InformedSelector } from "../../src/sim/informed.js";
import { Rng } from "../../src/util/rng.js";
import { oracle, randomPool, sim, trainIds, valIds, world } from "./small-world.js";

/** Runs `body` with the query's true answer and knowledge replaced, then restores them. */
function supposing<T>(q: number, answer: number, knowledge: number, body: () => T): T {
  const saved = [world.trueAnswer[q], world.knowledge[q]] as const;
  world.trueAnswer[q] = answer;
  world.knowledge[q] = knowledge;
  try {
    return body();
  } finally {
    world.trueAnswer[q] = saved[0];
    world.knowledge[q] = saved[1];
  }
}

/**
 * Independent E: for every answer of the cell and κ on a fine grid, the simulator's own greedy answer
 * (the full model, truth included) is compared with the supposed answer; integrated by the midpoint rule.
 */
function integratedExpected(queryId: string, demoIds: string[]): number {
  const q = world.indexOf(queryId);
  const cell = world.cell(world.concept[q], world.qtype[q]);
  const { knowledgeMean: mu, knowledgeSd: sd } = world.params;
  const steps = 4000;
  const lo = mu - 8 * sd;
  const h = (16 * sd) / steps;
  let total = 0;
  for (let k = 0; k < cell.vocab.length; k++) {
    const answer = world.registry.canonical[cell.vocab[k]];
    let win = 0;
    for (let i = 0; i < steps; i++) {
      const kappa = lo + (i + 0.5) * h;
      const density = Math.exp(-0.5 * ((kappa - mu) / sd) ** 2) / (sd * Math.sqrt(2 * Math.PI));
      if (supposing(q, cell.vocab[k], kappa, () => oracle.greedyAnswer(queryId, demoIds)) === answer)
        win += density * h;
    }
    total += cell.prob[k] * win;
  }
  return total;
}

describe("InformedSelector", () => {
  const informed = new InformedSelector(sim);

  it("E equals the probability integrated over the cell's answers and κ through the full model", () => {
    const rng = new Rng(3);
    for (let t = 0; t < 12; t++) {
      const q = valIds[rng.int(valIds.length)];
      const demos = randomPool(rng, rng.int(5));
      expect(informed.expected(q, demos)).toBeCloseTo(integratedExpected(q, demos), 3);
    }
  });

  it("never reads the query's true answer or κ: supposing others leaves every choice unchanged", () => {
    const rng = new Rng(4);
    for (let t = 0; t < 20; t++) {
      const queryId = valIds[rng.int(valIds.length)];
      const q = world.indexOf(queryId);
      const pool = randomPool(rng, 12);
      const shots = 1 + rng.int(4);
      const chosen = informed.trajectory(queryId, pool, shots);
      const cell = world.cell(world.concept[q], world.qtype[q]);
      const other = cell.vocab[rng.int(cell.vocab.length)];
      const again = supposing(q, other, 5 * rng.normal(), () => informed.trajectory(queryId, pool, shots));
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
