/**
 * A small synthetic beam world for SFT tests. Items (ICD candidates and queries) belong to latent
 * concepts: embedding = normalise(centroid + noise). For a query of concept c the best first ICD is
 * the pool's item of concept π₁(c) and the best second one the item of concept π₂(c), for hidden
 * permutations π₁, π₂ — a function of the embeddings that the selector can learn but does not know
 * (an untrained selector picks by plain similarity, i.e. concept c itself, which is never right).
 * Every pool holds exactly one item of π₁(c) and one of π₂(c); the rest come from other concepts.
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { writeNpy } from "../../src/data/npy.js";
import type { PoolSet } from "../../src/data/pool-set.js";
import type { BeamSet, RolloutSet } from "../../src/data/trajectories.js";
import type { EmbeddingTable, SelectorSources } from "../../src/selector/inputs.js";
import { importEmbedding } from "../../src/store/ingest/embeddings.js";
import { Workspace } from "../../src/store/workspace.js";
import { Rng } from "../../src/util/rng.js";
import { stubItem } from "../helpers/items.js";

export interface SyntheticWorld {
  beams: BeamSet;
  pools: PoolSet;
  emb: EmbeddingTable;
  /** The selector sources: queries and candidates both from `emb`. */
  sources: SelectorSources;
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
  const emb = { dim: d, data: new Float32Array(rows.flat()), rowOf: new Map(ids.map((id, i) => [id, i])) };
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
    emb,
    sources: { query: emb, index: emb },
  };
}

/**
 * Scored rollouts of the synthetic world: per query the beam's (first, second) scores 1, (first, x)
 * 0.6, the reversed (second, first) 0.3 (order matters), and a few other pool pairs 0 — a reward the
 * selector can learn from its embeddings, with positives and negatives in every group.
 */
export function syntheticRollouts(world: SyntheticWorld, seed: number, others = 4): RolloutSet {
  const rng = new Rng(seed).child("rollouts");
  const queries: RolloutSet["queries"] = {};
  for (const [qid, q] of Object.entries(world.beams.queries)) {
    const pool = world.pools.pools[qid];
    const [first, second] = q.beams[0].selected;
    const fillers = pool.filter((id) => id !== first && id !== second);
    const pairs: { selected: string[]; acc: number; method: string }[] = [
      { selected: [first, second], acc: 1, method: "beam" },
      { selected: [first, fillers[0]], acc: 0.6, method: "sample" },
      { selected: [second, first], acc: 0.3, method: "retrieval" },
    ];
    for (let i = 0; i < others; i++) {
      const [a, b] = rng.sampleWithoutReplacement(fillers.length, 2).map((j) => fillers[j]);
      pairs.push({ selected: [a, b], acc: 0, method: "random" });
    }
    const seen = new Set<string>();
    queries[qid] = {
      pool,
      trajectories: pairs
        .filter((p) => !seen.has(p.selected.join()) && seen.add(p.selected.join()))
        .map((p) => ({
          selected: p.selected,
          positions: p.selected.map((id) => pool.indexOf(id)),
          genMethod: p.method,
          vqaAccScore: p.acc,
          vqaCorrect: p.acc > 0 ? 1 : 0,
          vqaGtProb: 0.1 + 0.8 * p.acc,
        })),
    };
  }
  return { format: "lever.rollouts/1", dataset: world.beams.dataset, promptOrder: world.beams.promptOrder, queries };
}

/**
 * A workspace at `wsDir` holding the world's items as dataset "synth" (stub items, one image each) with
 * the world's embeddings as its "joint" embedding (written to `dir`/emb.npy and emb.ids.json): what
 * the training stages read besides their beam or rollout files.
 */
export function syntheticWorkspace(dir: string, wsDir: string, world: SyntheticWorld): void {
  const ids = [...world.emb.rowOf.keys()];
  const ws = Workspace.open(wsDir);
  try {
    ws.putDataset(
      { name: "synth", split: "train", source: "synth", files: [] },
      ids.map((id) => stubItem(id, `img${id}`)),
    );
    writeNpy(join(dir, "emb.npy"), world.emb.data, [ids.length, world.emb.dim]);
    writeFileSync(join(dir, "emb.ids.json"), JSON.stringify(ids));
    importEmbedding(ws, {
      file: join(dir, "emb.npy"),
      idsFile: join(dir, "emb.ids.json"),
      dataset: "synth",
      kind: "joint",
    });
  } finally {
    ws.close();
  }
}
