/** The small simulated world the oracle and informed-selector tests share, and random pools from its index. */
import { SimOracle } from "../../src/sim/oracle.js";
import { SimVlm } from "../../src/sim/vlm.js";
import type { Rng } from "../../src/util/rng.js";

export const sim = SimVlm.fromParams({ seed: 21, trainItems: 1000, valItems: 200, concepts: 8 });
export const world = sim.world;
export const oracle = new SimOracle(sim);
export const trainIds = world.itemsOf("train").map((i) => world.questionIds[i]);
export const valIds = world.itemsOf("val").map((i) => world.questionIds[i]);

export function randomPool(rng: Rng, size: number): string[] {
  return rng.sampleWithoutReplacement(trainIds.length, size).map((r) => trainIds[r]);
}
