import { describe, expect, it } from "vitest";
import { CANDIDATE_FEATURES, type SelectorConfig, SelectorConfigSchema } from "../../src/selector/config.js";
import { beamDecode, greedyDecode, predict, sampleDecode } from "../../src/selector/decode.js";
import { PointerSelector } from "../../src/selector/model.js";
import { initParams } from "../../src/selector/params.js";
import { noGrad } from "../../src/tensor/tensor.js";
import { Rng } from "../../src/util/rng.js";
import { refForward, refSequenceLogProb } from "./reference.js";

const config: SelectorConfig = SelectorConfigSchema.parse({
  d: 6,
  hidden: 4,
  layers: 1,
  shots: 3,
  stateUpdate: "gru",
  stepEmbedding: true,
  redundancy: "max",
  temperature: 0.5,
});
const values = initParams(config, 5);
{
  const rng = new Rng(99);
  for (const v of values.values()) for (let i = 0; i < v.length; i++) v[i] += 0.5 * rng.normal();
}
const model = new PointerSelector(config, values, "float64");

function world(seed: number, B: number, K: number) {
  const rng = new Rng(seed);
  const queries = Array.from({ length: B }, () => Array.from({ length: config.d }, () => rng.normal()));
  const cands = Array.from({ length: B }, () =>
    Array.from({ length: K }, () => Array.from({ length: config.d }, () => rng.normal())),
  );
  const input = {
    queries: new Float64Array(queries.flat()),
    table: new Float64Array(cands.flat(2)),
    slots: Int32Array.from({ length: B * K }, (_, i) => i),
    K,
  };
  return { queries, cands, input };
}

function permutations(K: number, S: number): number[][] {
  if (S === 0) return [[]];
  return permutations(K, S - 1).flatMap((p) =>
    [...Array(K).keys()].filter((k) => !p.includes(k)).map((k) => [...p, k]),
  );
}

describe("selector decoding", () => {
  const { queries, cands, input } = world(1, 3, 5);
  const enc = noGrad(() => model.encode(input));

  it("greedy picks the reference argmax at every step, with the reference log-probability", () => {
    const got = greedyDecode(model, enc, 3);
    got.forEach((traj, b) => {
      const ref = refForward(config, values, queries[b], cands[b], undefined, 3);
      expect(traj.positions).toEqual(ref.chosen);
      expect(traj.logprob).toBeCloseTo(refSequenceLogProb(config, values, queries[b], cands[b], ref.chosen), 10);
    });
  });

  it("beam search as wide as all 60 ordered trajectories returns them all, sorted by exact log-probability", () => {
    const all = permutations(5, 3);
    const got = beamDecode(model, enc, 3, all.length);
    got.forEach((beams, b) => {
      const exact = all
        .map((p) => ({ p, lp: refSequenceLogProb(config, values, queries[b], cands[b], p) }))
        .sort((x, y) => y.lp - x.lp);
      expect(beams).toHaveLength(all.length);
      beams.forEach((beam, i) => {
        expect(beam.logprob).toBeCloseTo(exact[i].lp, 9);
        expect(refSequenceLogProb(config, values, queries[b], cands[b], beam.positions)).toBeCloseTo(beam.logprob, 9);
      });
      // Probabilities of all ordered trajectories sum to 1.
      expect(beams.reduce((s, x) => s + Math.exp(x.logprob), 0)).toBeCloseTo(1, 10);
    });
  });

  it("beam width 1 equals greedy, and wider beams never find a worse best trajectory", () => {
    const greedy = greedyDecode(model, enc, 3);
    const one = beamDecode(model, enc, 3, 1);
    const four = beamDecode(model, enc, 3, 4);
    greedy.forEach((g, b) => {
      expect(one[b][0].positions).toEqual(g.positions);
      expect(four[b][0].logprob).toBeGreaterThanOrEqual(g.logprob - 1e-12);
      for (const beam of four[b]) expect(new Set(beam.positions).size).toBe(3);
    });
  });

  it("returns fewer beams than the width when the pool has fewer ordered trajectories", () => {
    const small = world(3, 1, 2);
    const beams = beamDecode(
      model,
      noGrad(() => model.encode(small.input)),
      2,
      5,
    )[0];
    expect(beams.map((x) => x.positions).sort()).toEqual([
      [0, 1],
      [1, 0],
    ]);
  });

  it("samples reproducibly per seed, never repeats a position, and follows softmax(scores/τ)", () => {
    const a = sampleDecode(model, enc, 3, { samples: 20, temperature: 1.5, rng: new Rng(4) });
    const b = sampleDecode(model, enc, 3, { samples: 20, temperature: 1.5, rng: new Rng(4) });
    const c = sampleDecode(model, enc, 3, { samples: 20, temperature: 1.5, rng: new Rng(5) });
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    for (const q of a) for (const s of q) expect(new Set(s.positions).size).toBe(3);
    // First-step frequencies over many draws vs the exact tempered distribution.
    const n = 4000;
    const draws = sampleDecode(model, enc, 1, { samples: n, temperature: 1.5, rng: new Rng(6) })[0];
    const ref = refForward(config, values, queries[0], cands[0], undefined, 1);
    const tempered = ref.logits[0].map((v) => Math.exp(v / 1.5));
    const z = tempered.reduce((s, v) => s + v, 0);
    for (let k = 0; k < 5; k++) {
      const p = tempered[k] / z;
      const freq = draws.filter((s) => s.positions[0] === k).length / n;
      expect(Math.abs(freq - p)).toBeLessThan(4 * Math.sqrt((p * (1 - p)) / n) + 1e-3);
    }
    // log-probability under the model (τ = 1) and under the sampling distribution.
    const s0 = a[0][0];
    expect(s0.logprob).toBeCloseTo(refSequenceLogProb(config, values, queries[0], cands[0], s0.positions), 10);
    const t1 = sampleDecode(model, enc, 3, { samples: 3, temperature: 1, rng: new Rng(1) });
    for (const q of t1) for (const s of q) expect(s.sampleLogprob).toBeCloseTo(s.logprob, 12);
  });

  it("refuses more shots than a query has candidates", () => {
    const padded = { ...input, slots: Int32Array.from(input.slots, (v, i) => (i >= 12 ? -1 : v)) };
    const e = noGrad(() => model.encode(padded));
    expect(() => greedyDecode(model, e, 3)).toThrow(/query 2 has 2 candidates; cannot choose 3/);
    expect(() => predict(model, padded, { shots: 3 })).toThrow(/query 2 has 2 candidates; cannot choose 3/);
    expect(() => beamDecode(model, enc, 6, 2)).toThrow(/has 5 candidates; cannot choose 6/);
  });

  it("predict over an index shared by all pools equals decoding each query on its own", () => {
    const rng = new Rng(8);
    const N = 12;
    const index = new Float64Array(Array.from({ length: N * config.d }, () => rng.normal()));
    const Q = 7;
    const K = 4;
    const qs = new Float64Array(Array.from({ length: Q * config.d }, () => rng.normal()));
    const slots = new Int32Array(Q * K);
    for (let q = 0; q < Q; q++) slots.set(rng.sampleWithoutReplacement(N, K), q * K);
    const got = predict(model, { queries: qs, table: index, slots, K }, { shots: 2, chunk: 3 });
    const beamGot = predict(model, { queries: qs, table: index, slots, K }, { shots: 2, beam: 3, chunk: 2 });
    for (let q = 0; q < Q; q++) {
      const cs = [...slots.subarray(q * K, (q + 1) * K)].map((r) => [
        ...index.subarray(r * config.d, (r + 1) * config.d),
      ]);
      const ref = refForward(config, values, [...qs.subarray(q * config.d, (q + 1) * config.d)], cs, undefined, 2);
      expect(got[q].positions).toEqual(ref.chosen);
      expect(beamGot[q].logprob).toBeGreaterThanOrEqual(got[q].logprob - 1e-12);
    }
  });
});

describe("predict with candidate features and identity", () => {
  it("slices features and items with each chunk: every query decodes as on its own (float64 reference)", () => {
    const cfg = SelectorConfigSchema.parse({
      ...{ d: 6, hidden: 4, layers: 1, shots: 2, heads: 2, temperature: 0.5 },
      ...{ features: ["vote", "agreement"], identity: "embedding", indexItems: 9, poolAttention: 1 },
    });
    const vals = initParams(cfg, 6);
    const rng = new Rng(12);
    for (const v of vals.values()) for (let i = 0; i < v.length; i++) v[i] += 0.5 * rng.normal();
    const m = new PointerSelector(cfg, vals, "float64");
    const N = 12;
    const Q = 7;
    const K = 4;
    const F = CANDIDATE_FEATURES.length;
    const index = Float64Array.from({ length: N * cfg.d }, () => rng.normal());
    const qs = Float64Array.from({ length: Q * cfg.d }, () => rng.normal());
    const slots = new Int32Array(Q * K);
    for (let q = 0; q < Q; q++) slots.set(rng.sampleWithoutReplacement(N, K), q * K);
    // Per slot (not per index row): the same index row has other features in another query's pool.
    const features = Float64Array.from({ length: Q * K * F }, () => 2 * rng.normal());
    const items = Int32Array.from(slots, (r) => (r < 9 ? r : -1));
    const input = { queries: qs, table: index, slots, K, features, items };
    for (const [chunk, beam] of [
      [3, 1],
      [2, 3],
    ]) {
      const got = predict(m, input, { shots: 2, chunk, beam });
      for (let q = 0; q < Q; q++) {
        const rows = [...slots.subarray(q * K, (q + 1) * K)];
        const cs = rows.map((r) => [...index.subarray(r * cfg.d, (r + 1) * cfg.d)]);
        const extras = {
          features: rows.map((_, k) => [...features.subarray((q * K + k) * F, (q * K + k + 1) * F)]),
          items: [...items.subarray(q * K, (q + 1) * K)],
        };
        const query = [...qs.subarray(q * cfg.d, (q + 1) * cfg.d)];
        if (beam === 1) {
          const ref = refForward(cfg, vals, query, cs, undefined, 2, undefined, extras);
          expect(got[q].positions).toEqual(ref.chosen);
        }
        expect(got[q].logprob).toBeCloseTo(refSequenceLogProb(cfg, vals, query, cs, got[q].positions, extras), 10);
      }
    }
  });
});

describe("cosine prior", () => {
  const priorConfig = SelectorConfigSchema.parse({ d: 6, hidden: 4, layers: 1, shots: 3, prior: "cosine" });
  const { queries, cands, input } = world(7, 4, 6);
  const cosine = (a: number[], b: number[]) => {
    const dot = a.reduce((s, v, i) => s + v * b[i], 0);
    return dot / (Math.hypot(...a) * Math.hypot(...b));
  };
  const topk = queries.map((q, b) =>
    [...cands[b].keys()].sort((i, j) => cosine(q, cands[b][j]) - cosine(q, cands[b][i])).slice(0, 3),
  );

  it("with a dominant prior weight the selector picks exactly the top-k by input cosine, through either encoding", () => {
    const v = initParams(priorConfig, 3);
    v.set("prior_weight", Float64Array.of(1e4));
    const m = new PointerSelector(priorConfig, v, "float64");
    expect(
      greedyDecode(
        m,
        noGrad(() => m.encode(input)),
        3,
      ).map((t) => t.positions),
    ).toEqual(topk);
    expect(predict(m, input, { shots: 3 }).map((t) => t.positions)).toEqual(topk);
  });

  it("at its initial weight an untrained selector picks the most similar candidate far more often than without the prior", () => {
    const big = world(8, 200, 16);
    const m = new PointerSelector(priorConfig, initParams(priorConfig, 4), "float64");
    const plain = new PointerSelector(
      { ...priorConfig, prior: "none" },
      initParams({ ...priorConfig, prior: "none" }, 4),
      "float64",
    );
    const first = (sel: PointerSelector) => predict(sel, big.input, { shots: 1 }).map((t) => t.positions[0]);
    const best = big.queries.map((q, b) =>
      big.cands[b].reduce((bi, c, i) => (cosine(q, c) > cosine(q, big.cands[b][bi]) ? i : bi), 0),
    );
    const agree = (picks: number[]) => picks.filter((p, b) => p === best[b]).length / best.length;
    expect(agree(first(m))).toBeGreaterThan(agree(first(plain)) + 0.2);
  });
});
