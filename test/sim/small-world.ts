/**
 * The small simulated worlds the oracle and informed-selector tests share, and random pools from their
 * index: the plain world, and the same world with label noise and item quality on.
 */

import { SimOracle } from "../../src/sim/oracle.js";
import type { WorldParamsInput } from "../../src/sim/params.js";
import { SimVlm } from "../../src/sim/vlm.js";
import type { World } from "../../src/sim/world.js";
import type { Rng } from "../../src/util/rng.js";

export interface SmallWorld {
  sim: SimVlm;
  world: World;
  oracle: SimOracle;
  trainIds: string[];
  valIds: string[];
  randomPool: (rng: Rng, size: number) => string[];
}

export function smallWorld(extra: WorldParamsInput = {}): SmallWorld {
  const sim = SimVlm.fromParams({ seed: 21, trainItems: 1000, valItems: 200, concepts: 8, ...extra });
  const world = sim.world;
  const trainIds = world.itemsOf("train").map((i) => world.questionIds[i]);
  const valIds = world.itemsOf("val").map((i) => world.questionIds[i]);
  return {
    sim,
    world,
    oracle: new SimOracle(sim),
    trainIds,
    valIds,
    randomPool: (rng, size) => rng.sampleWithoutReplacement(trainIds.length, size).map((r) => trainIds[r]),
  };
}

export const plain = smallWorld();
export const { sim, world, oracle, trainIds, valIds, randomPool } = plain;
/** The same world with both per-item phenomena on (label noise 0.25, item quality σ = 0.8). */
export const noisy = smallWorld({ labelNoise: 0.25, itemQuality: 0.8 });
