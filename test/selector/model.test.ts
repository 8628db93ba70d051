import { describe, expect, it } from "vitest";
import { CANDIDATE_FEATURES, type SelectorConfig, SelectorConfigSchema } from "../../src/selector/config.js";
import { PointerSelector, sequenceLogProbs, sftLoss } from "../../src/selector/model.js";
import { initParams, type ParamValues } from "../../src/selector/params.js";
import * as T from "../../src/tensor/ops.js";
import { noGrad } from "../../src/tensor/tensor.js";
import { Rng } from "../../src/util/rng.js";
import { type RefExample, refForward, refSequenceLogProb, refSftLoss } from "./reference.js";

const VARIANTS: Record<string, Partial<SelectorConfig>> = {
  "v2 (no state update), 2 heads": { stateUpdate: "none", heads: 2 },
  "V4-1 gate": { stateUpdate: "gate" },
  "V4-2 GRU + step embedding": { stateUpdate: "gru", stepEmbedding: true },
  "V4-3 GRU + step embedding + MMR, 2 heads": { stateUpdate: "gru", stepEmbedding: true, redundancy: "max", heads: 2 },
  "gate + MMR": { stateUpdate: "gate", redundancy: "max" },
  "gate + cosine prior": { stateUpdate: "gate", prior: "cosine" },
  "V4-3 + cosine prior, 2 heads": {
    stateUpdate: "gru",
    stepEmbedding: true,
    redundancy: "max",
    prior: "cosine",
    heads: 2,
  },
  // Ours (issue 17): candidate features, identity, pool attention, alone and combined.
  "gate + features (vote, agreement)": { stateUpdate: "gate", features: ["vote", "agreement"] },
  "v2 + features (agreement only) + identity, 2 heads": {
    stateUpdate: "none",
    features: ["agreement"],
    identity: "embedding",
    heads: 2,
  },
  "gate + identity": { stateUpdate: "gate", identity: "embedding" },
  "gate + MMR + prior + 2 pool-attention layers, 2 heads": {
    stateUpdate: "gate",
    redundancy: "max",
    prior: "cosine",
    poolAttention: 2,
    heads: 2,
  },
  "V4-3 + prior + features (agreement, vote) + identity + pool attention, 2 heads": {
    stateUpdate: "gru",
    stepEmbedding: true,
    redundancy: "max",
    prior: "cosine",
    features: ["agreement", "vote"],
    identity: "embedding",
    poolAttention: 1,
    heads: 2,
  },
};

const ITEMS = 7;

function makeConfig(over: Partial<SelectorConfig>): SelectorConfig {
  const indexItems = over.identity === "embedding" ? ITEMS : 0;
  return SelectorConfigSchema.parse({
    d: 6,
    hidden: 4,
    layers: 2,
    shots: 3,
    dropout: 0,
    attnDropout: 0,
    indexItems,
    ...over,
  });
}

/** initParams plus noise on everything, so biases, LayerNorm affine and λ are all exercised. */
function randomParams(config: SelectorConfig, seed: number): ParamValues {
  const values = initParams(config, seed);
  const rng = new Rng(seed + 1000);
  for (const v of values.values()) for (let i = 0; i < v.length; i++) v[i] += 0.4 * rng.normal();
  return values;
}

function randomVec(rng: Rng, n: number): number[] {
  return Array.from({ length: n }, () => rng.normal());
}

/**
 * Examples with random candidates, features (all columns) and identity items: items run over
 * −1 … ITEMS + 1, so some candidates have no item and some an item outside the table.
 */
function makeExamples(config: SelectorConfig, seed: number, sizes: number[]): RefExample[] {
  const rng = new Rng(seed);
  return sizes.map((k, i) => {
    const labels = rng.sampleWithoutReplacement(k, config.shots);
    return {
      query: randomVec(rng, config.d),
      cands: Array.from({ length: k }, () => randomVec(rng, config.d)),
      labels,
      weight: 0.5 + i,
      extras: {
        features: Array.from({ length: k }, () => randomVec(rng, CANDIDATE_FEATURES.length)),
        items: Array.from({ length: k }, () => rng.int(ITEMS + 3) - 1),
      },
    };
  });
}

/**
 * Packs examples (one trajectory each) into a padded SelectorInput. Padding slots get features 9 and
 * item 0 (a real row), so a model that let padding leak into the pool would disagree with the reference.
 */
function pack(config: SelectorConfig, examples: RefExample[]) {
  const K = Math.max(...examples.map((e) => e.cands.length));
  const F = CANDIDATE_FEATURES.length;
  const queries = new Float64Array(examples.flatMap((e) => e.query));
  const tableRows = examples.flatMap((e) => e.cands);
  const table = new Float64Array(tableRows.flat());
  const slots = new Int32Array(examples.length * K).fill(-1);
  const features = new Float64Array(examples.length * K * F).fill(9);
  const items = new Int32Array(examples.length * K).fill(0);
  let row = 0;
  examples.forEach((e, b) => {
    e.cands.forEach((_, k) => {
      slots[b * K + k] = row++;
      if (e.extras?.features) features.set(e.extras.features[k], (b * K + k) * F);
      if (e.extras?.items) items[b * K + k] = e.extras.items[k];
    });
  });
  const labels = new Int32Array(examples.flatMap((e) => e.labels));
  const weights = new Float64Array(examples.map((e) => e.weight));
  return { input: { queries, table, slots, K, features, items }, labels, weights, K, d: config.d };
}

describe.each(Object.entries(VARIANTS))("pointer selector parity with the float64 reference: %s", (_name, over) => {
  const config = makeConfig(over);
  const values = randomParams(config, 11);
  const model = new PointerSelector(config, values, "float64");
  const examples = makeExamples(config, 5, [5, 3, 5]);
  const packed = pack(config, examples);

  it("gives the reference's teacher-forced log-probabilities at every step (padded batch)", () => {
    const tf = noGrad(() => model.teacherForce(model.encode(packed.input), 1, packed.labels, config.shots));
    examples.forEach((ex, b) => {
      const ref = refForward(config, values, ex.query, ex.cands, ex.labels, undefined, undefined, ex.extras);
      for (let t = 0; t < config.shots; t++) {
        const lp = T.logSoftmax(tf.scores[t], tf.masks[t]);
        for (let k = 0; k < ex.cands.length; k++) {
          const got = lp.data[b * packed.K + k];
          const want = ref.logProbs[t][k];
          if (want === Number.NEGATIVE_INFINITY) expect(got).toBe(Number.NEGATIVE_INFINITY);
          else expect(Math.abs(got - want)).toBeLessThan(1e-10);
        }
        for (let k = ex.cands.length; k < packed.K; k++) expect(tf.masks[t][b * packed.K + k]).toBe(1);
      }
    });
  });

  it("gives the reference's sequence log-probabilities and SFT loss (label smoothing 0.1, row weights)", () => {
    const { seq, loss } = noGrad(() => {
      const tf = model.teacherForce(model.encode(packed.input), 1, packed.labels, config.shots);
      return { seq: sequenceLogProbs(tf, packed.labels), loss: sftLoss(tf, packed.labels, packed.weights, 0.1) };
    });
    examples.forEach((ex, b) => {
      expect(seq.data[b]).toBeCloseTo(refSequenceLogProb(config, values, ex.query, ex.cands, ex.labels, ex.extras), 10);
    });
    expect(loss.item()).toBeCloseTo(refSftLoss(config, values, examples, 0.1), 10);
  });

  it("has autograd gradients equal to central finite differences of the reference loss", () => {
    model.parameters().forEach((p) => {
      p.grad = null;
    });
    const tf = model.teacherForce(model.encode(packed.input), 1, packed.labels, config.shots);
    sftLoss(tf, packed.labels, packed.weights, 0.1).backward();
    const eps = 1e-6;
    let worst = 0;
    for (const spec of model.specs) {
      const grad = model.params.get(spec.name)!.grad;
      const base = values.get(spec.name)!;
      for (let i = 0; i < base.length; i++) {
        const keep = base[i];
        base[i] = keep + eps;
        const up = refSftLoss(config, values, examples, 0.1);
        base[i] = keep - eps;
        const down = refSftLoss(config, values, examples, 0.1);
        base[i] = keep;
        const fd = (up - down) / (2 * eps);
        const got = grad === null ? 0 : grad[i];
        worst = Math.max(worst, Math.abs(got - fd) / Math.max(1, Math.abs(fd)));
      }
    }
    expect(worst).toBeLessThan(1e-6);
  });
});

describe("pointer selector behaviour", () => {
  const config = makeConfig({ stateUpdate: "gru", stepEmbedding: true, redundancy: "max", prior: "cosine" });
  const values = randomParams(config, 3);
  const model = new PointerSelector(config, values, "float64");
  const examples = makeExamples(config, 9, [5, 5]);
  const packed = pack(config, examples);

  it("projects a shared candidate table once and gives the same scores as per-query candidates", () => {
    const direct = noGrad(() => model.teacherForce(model.encode(packed.input), 1, packed.labels, config.shots));
    const table = model.encodeTable(packed.input.table);
    const viaTable = noGrad(() =>
      model.teacherForce(model.encode({ ...packed.input, table }), 1, packed.labels, config.shots),
    );
    for (let t = 0; t < config.shots; t++) {
      const a = direct.scores[t].data;
      const b = viaTable.scores[t].data;
      for (let i = 0; i < a.length; i++) expect(b[i]).toBeCloseTo(a[i], 12);
    }
  });

  it("shares per-query work across G rows: each row equals its own single-row forward", () => {
    const G = 3;
    const rng = new Rng(2);
    const labels = new Int32Array(2 * G * config.shots);
    for (let r = 0; r < 2 * G; r++) labels.set(rng.sampleWithoutReplacement(5, config.shots), r * config.shots);
    const tf = noGrad(() => sequenceLogProbs(model.teacherForce(model.encode(packed.input), G, labels, 3), labels));
    for (let r = 0; r < 2 * G; r++) {
      const ex = examples[Math.floor(r / G)];
      const want = refSequenceLogProb(
        config,
        values,
        ex.query,
        ex.cands,
        [...labels.subarray(r * 3, r * 3 + 3)],
        ex.extras,
      );
      expect(tf.data[r]).toBeCloseTo(want, 10);
    }
  });

  it("gives the same values and gradients when the gate's candidate half is precomputed per slot (G·S > K)", () => {
    const cfg = makeConfig({ stateUpdate: "gate" });
    const vals = randomParams(cfg, 21);
    const m = new PointerSelector(cfg, vals, "float64");
    const exs = makeExamples(cfg, 22, [4, 4]);
    const one = pack(cfg, exs);
    const G = 3; // 3 rows × 3 shots > K = 4: the per-slot path
    const rng = new Rng(5);
    const labels = new Int32Array(2 * G * 3);
    for (let r = 0; r < 2 * G; r++) labels.set(rng.sampleWithoutReplacement(4, 3), r * 3);
    const grads = (run: () => void) => {
      m.parameters().forEach((p) => {
        p.grad = null;
      });
      run();
      return m.specs.map((s) => Array.from(m.params.get(s.name)!.grad ?? []));
    };
    let perSlot: number[] = [];
    const gA = grads(() => {
      const seq = sequenceLogProbs(m.teacherForce(m.encode(one.input), G, labels, 3), labels);
      perSlot = Array.from(seq.data);
      T.sum(seq).backward();
    });
    const gB = grads(() => {
      // Each row on its own (G = 1: the per-row path), gradients accumulated over the rows.
      for (let r = 0; r < 2 * G; r++) {
        const b = Math.floor(r / G);
        const single = pack(cfg, [exs[b]]);
        const lab = labels.slice(r * 3, r * 3 + 3);
        const seq = sequenceLogProbs(m.teacherForce(m.encode(single.input), 1, lab, 3), lab);
        expect(seq.data[0]).toBeCloseTo(perSlot[r], 12);
        expect(seq.data[0]).toBeCloseTo(refSequenceLogProb(cfg, vals, exs[b].query, exs[b].cands, [...lab]), 10);
        seq.backward();
      }
    });
    gA.forEach((g, i) => {
      g.forEach((v, j) => {
        expect(v).toBeCloseTo(gB[i][j], 10);
      });
    });
  });

  it("reproduces training-mode dropout (attention weights, query, candidates) of the reference", () => {
    const cfg = makeConfig({ stateUpdate: "gate", heads: 2, dropout: 0.3, attnDropout: 0.2 });
    const vals = randomParams(cfg, 4);
    const m = new PointerSelector(cfg, vals, "float64");
    const [ex] = makeExamples(cfg, 6, [5]);
    const one = pack(cfg, [ex]);
    const tf = noGrad(() =>
      m.teacherForce(m.encode(one.input, { training: true, rng: new Rng(77) }), 1, one.labels, cfg.shots),
    );
    const ref = refForward(cfg, vals, ex.query, ex.cands, ex.labels, undefined, {
      p: 0.3,
      attnP: 0.2,
      rng: new Rng(77),
    });
    for (let t = 0; t < cfg.shots; t++) {
      const lp = T.logSoftmax(tf.scores[t], tf.masks[t]);
      for (let k = 0; k < 5; k++) {
        const want = ref.logProbs[t][k];
        if (want === Number.NEGATIVE_INFINITY) expect(lp.data[k]).toBe(want);
        else expect(lp.data[k]).toBeCloseTo(want, 10);
      }
    }
    // Eval mode ignores dropout entirely.
    const evalRef = refForward(cfg, vals, ex.query, ex.cands, ex.labels);
    const evalTf = noGrad(() => m.teacherForce(m.encode(one.input), 1, one.labels, cfg.shots));
    expect(T.logSoftmax(evalTf.scores[0]).data[0]).toBeCloseTo(evalRef.logProbs[0][0], 10);
  });

  it("rejects a label that is padding or already chosen", () => {
    const bad = new Int32Array([0, 0, 1, 0, 1, 2]);
    expect(() => noGrad(() => model.teacherForce(model.encode(packed.input), 1, bad, 3))).toThrow(/already chosen/);
  });
});
