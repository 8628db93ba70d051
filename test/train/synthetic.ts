/**
 * A small synthetic beam world for SFT tests. Items (ICD candidates and queries) belong to latent
 * concepts: embedding = normalise(centroid + noise). For a query of concept c the best first ICD is
 * the pool's item of concept π₁(c) and the best second one the item of concept π₂(c), for hidden
 * permutations π₁, π₂ — a function of the embeddings that the selector can learn but does not know
 * (an untrained selector picks by plain similarity, i.e. concept c itself, which is never right).
 * Every pool holds exactly one item of π₁(c) and one of π₂(c); the rest come from other concepts.
 */

import type { PoolSet } from "../../src/data/pool-set.js";
import type { BeamSet } from "../../src/data/trajectories.js";
import type { EmbeddingTable } from "../../src/train/data.js";
import { Rng } from "../../src/util/rng.js";

export interface SyntheticWorld {
  beams: BeamSet;
  pools: PoolSet;
  emb: EmbeddingTable;
}

function unit(v: number[]): number[] {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

export function syntheticWorld(opts: {
  seed: number;
  queries: number;
  /** Index items per concept. */
  perConcept: number;
  concepts: number;
  d: number;
  K: number;
  noise: number;
}): SyntheticWorld {
  const rng = new Rng(opts.seed);
  const { d, K, concepts } = opts;
  const centroids = Array.from({ length: concepts }, () => unit(Array.from({ length: d }, () => rng.normal())));
  const noisy = (c: number) => unit(centroids[c].map((v) => v + opts.noise * rng.normal()));
  // π₁(c) = c + 1, π₂(c) = c + 2 (mod C): never the query's own concept.
  const pi1 = (c: number) => (c + 1) % concepts;
  const pi2 = (c: number) => (c + 2) % concepts;
  const ids: string[] = [];
  const rows: number[][] = [];
  const byConcept: string[][] = Array.from({ length: concepts }, () => []);
  for (let c = 0; c < concepts; c++) {
    for (let i = 0; i < opts.perConcept; i++) {
      const id = String(1000 + ids.length);
      ids.push(id);
      rows.push(noisy(c));
      byConcept[c].push(id);
    }
  }
  const pools: Record<string, string[]> = {};
  const beamQueries: BeamSet["queries"] = {};
  for (let q = 0; q < opts.queries; q++) {
    const qid = String(100000 + q);
    const c = rng.int(concepts);
    ids.push(qid);
    rows.push(noisy(c));
    const first = byConcept[pi1(c)][rng.int(opts.perConcept)];
    const second = byConcept[pi2(c)][rng.int(opts.perConcept)];
    const others = ids.slice(0, concepts * opts.perConcept).filter((id) => {
      const ic = Math.floor((Number(id) - 1000) / opts.perConcept);
      return ic !== pi1(c) && ic !== pi2(c);
    });
    const fillers = rng.sampleWithoutReplacement(others.length, K - 2).map((i) => others[i]);
    const pool = rng.shuffle([first, second, ...fillers]);
    pools[qid] = pool;
    beamQueries[qid] = {
      beams: [
        { selected: [first, second], score: 1 },
        { selected: [first, fillers[0]], score: 0.5 },
      ],
    };
  }
  return {
    beams: { format: "lever.beams/1", dataset: "synth", promptOrder: "farthest", queries: beamQueries },
    pools: {
      format: "lever.pools/1",
      sampler: "random",
      settings: {},
      k: K,
      seed: opts.seed,
      indexDataset: "synth",
      queryDataset: "synth",
      pools,
    },
    emb: { dim: d, data: new Float32Array(rows.flat()), rowOf: new Map(ids.map((id, i) => [id, i])) },
  };
}
