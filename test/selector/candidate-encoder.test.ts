import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  CANDIDATE_FEATURES,
  type SelectorConfig,
  SelectorConfigSchema,
  variantName,
} from "../../src/selector/config.js";
import { greedyDecode } from "../../src/selector/decode.js";
import { candHatOf, type Encoded, PointerSelector, type SelectorInput } from "../../src/selector/model.js";
import { initParams, type ParamValues } from "../../src/selector/params.js";
import { noGrad } from "../../src/tensor/tensor.js";
import { LeverError } from "../../src/util/errors.js";
import { Rng } from "../../src/util/rng.js";

const base = { d: 8, hidden: 4, layers: 2, shots: 3, dropout: 0, attnDropout: 0 };
const ALL_ON = { features: ["vote", "agreement"], identity: "embedding", indexItems: 5, poolAttention: 2 } as const;

function world(seed: number, B: number, K: number, d: number): SelectorInput {
  const rng = new Rng(seed);
  const slots = Int32Array.from({ length: B * K }, (_, i) => (i % K === K - 1 ? -1 : i)); // last slot padding
  return {
    queries: Float64Array.from({ length: B * d }, () => rng.normal()),
    table: Float64Array.from({ length: B * K * d }, () => rng.normal()),
    slots,
    K,
    features: Float64Array.from({ length: B * K * CANDIDATE_FEATURES.length }, () => rng.normal()),
    items: Int32Array.from({ length: B * K }, (_, i) => (slots[i] < 0 ? -1 : rng.int(7) - 1)),
  };
}

function scores(model: PointerSelector, input: SelectorInput, labels: Int32Array, steps: number): number[][] {
  return noGrad(() => model.teacherForce(model.encode(input), 1, labels, steps).scores.map((s) => Array.from(s.data)));
}

function noisy(values: ParamValues, seed: number): ParamValues {
  const rng = new Rng(seed);
  for (const v of values.values()) for (let i = 0; i < v.length; i++) v[i] += 0.3 * rng.normal();
  return values;
}

function hashOf(values: ParamValues): string {
  const h = createHash("sha256");
  for (const [name, v] of values) {
    h.update(name);
    h.update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  }
  return h.digest("hex");
}

describe("candidate features and identity: the score formula by hand", () => {
  // d = H = 2 (no input_proj), no cross-attention layer, constant query state, τ = 0.5, shots 2.
  const config = SelectorConfigSchema.parse({
    d: 2,
    hidden: 2,
    layers: 0,
    shots: 2,
    stateUpdate: "none",
    temperature: 0.5,
    features: ["agreement"],
    identity: "embedding",
    indexItems: 2,
  });
  const values: ParamValues = new Map([
    ["query_proj.weight", Float64Array.of(1, 0, 0, 1)],
    ["cand_proj.weight", Float64Array.of(1, 0, 0, 1)],
    ["feature_weight", Float64Array.of(0.25, 0.75)], // u_0, u_1 (step 2 reuses u_1)
    ["feature_proj.weight", Float64Array.of(0, 1)], // W_f = [0; 1]
    ["item_emb.weight", Float64Array.of(0, 0, 0, 0.5)], // E[0] = 0, E[1] = (0, 0.5)
    ["item_bias", Float64Array.of(0.2, 0.7)],
  ]);
  const model = new PointerSelector(config, values, "float64");
  const input: SelectorInput = {
    queries: Float64Array.of(1, 0),
    table: Float64Array.of(1, 0, 0, 1, -1, 0),
    slots: Int32Array.of(0, 1, 2),
    K: 3,
    // columns (vote, agreement); vote is not selected, so its values must not matter
    // per slot: vote, agreement, consensus (only agreement is read)
    features: Float64Array.of(100, 0.5, 9, -100, 2, 9, 7, 1, 9),
    items: Int32Array.of(1, -1, 0),
  };

  it("gives s = (ĉ·h + u_t·f + item_bias)/τ with r = c + W_f f + E[item], u_t = last row beyond shots", () => {
    // r₀ = (1,0) + (0,0.5) + (0,0.5) = (1,1): ĉ₀·h = 1/√2; r₁ = (0,1) + (0,2) = (0,3): 0; r₂ = (−1,0) + (0,1) = (−1,1): −1/√2.
    // step 0: ((1/√2 + 0.25·0.5 + 0.7), (0 + 0.25·2 + 0), (−1/√2 + 0.25·1 + 0.2)) / 0.5
    // step 1 (0 taken): (0 + 0.75·2)/0.5, (−1/√2 + 0.75 + 0.2)/0.5;  step 2 (1 taken): the same u_1.
    const got = scores(model, input, Int32Array.of(0, 1, 2), 3);
    const r = Math.SQRT1_2;
    expect(got[0][0]).toBeCloseTo((r + 0.125 + 0.7) / 0.5, 14);
    expect(got[0][1]).toBeCloseTo(1, 14);
    expect(got[0][2]).toBeCloseTo((-r + 0.45) / 0.5, 14);
    expect(got[1][1]).toBeCloseTo(3, 14);
    expect(got[1][2]).toBeCloseTo((-r + 0.95) / 0.5, 14);
    expect(got[2][2]).toBeCloseTo((-r + 0.95) / 0.5, 14);
    expect(got[0][0]).toBeCloseTo(3.064213562373095, 14);
  });

  it("names what is missing when the config reads candidate data the input lacks", () => {
    const { features: _f, ...noFeatures } = input;
    const { items: _i, ...noItems } = input;
    expect(() => model.encode(noFeatures)).toThrow(LeverError);
    expect(() => model.encode(noFeatures)).toThrow(
      /reads candidate features \[agreement\] but the input has no features/,
    );
    expect(() => model.encode(noItems)).toThrow(/identity "embedding" but the input has no items/);
    expect(() => model.encode({ ...input, features: Float64Array.of(1, 2, 3) })).toThrow(
      /candidate features hold 3 values, expected 3 slots × 3/,
    );
    expect(() => model.encode({ ...input, features: Float64Array.of(0, Number.NaN, 0, 0, 0, 0, 0, 0, 0) })).toThrow(
      /feature agreement of slot 0 is not finite/,
    );
    expect(() => model.encode({ ...input, items: Int32Array.of(0) })).toThrow(/items hold 1 entries, expected 3/);
  });
});

describe("all candidate options off", () => {
  it("keeps every parameter bit-identical to the model before the options existed", () => {
    // sha256 of initParams(…, 42) computed with the code before this change (commit a0d9222).
    const plain = SelectorConfigSchema.parse({ d: 8, hidden: 4, layers: 2, shots: 3 });
    const v43 = SelectorConfigSchema.parse({
      ...{ d: 8, hidden: 4, layers: 1, shots: 2, heads: 2 },
      ...{ stateUpdate: "gru", stepEmbedding: true, redundancy: "max", prior: "cosine" },
    });
    expect(hashOf(initParams(plain, 42))).toBe("52fc4d52a779bbd8ec9d5e062f0fdd588a06b3c01d85b372f576419daf1fedde");
    expect(hashOf(initParams(v43, 42))).toBe("702969ca038d0bfdda84c2778bd979bf4e926ee5386669ac8d74c84a5474434f");
    const explicit = SelectorConfigSchema.parse({
      ...{ d: 8, hidden: 4, layers: 2, shots: 3 },
      ...{ features: [], identity: "none", indexItems: 0, poolAttention: 0 },
    });
    expect(explicit).toEqual(plain);
    expect(variantName(explicit)).toBe("v4-1");
  });

  it("runs none of the candidate code: no candidate data read, the table's candHat used as before", () => {
    const config = SelectorConfigSchema.parse(base);
    const model = new PointerSelector(config, noisy(initParams(config, 1), 2), "float64");
    const { features: _f, items: _i, ...plainInput } = world(3, 2, 5, 8);
    const enc = noGrad(() =>
      model.encode({ ...plainInput, features: Float64Array.of(Number.NaN), items: Int32Array.of(9) }),
    );
    expect(enc.candidateData).toBeNull();
    const table = model.encodeTable(plainInput.table as Float64Array);
    const viaTable = noGrad(() => model.encode({ ...plainInput, table }));
    // Every slot's ĉ is its table row's (padding gathers row 0), not only the first slot's.
    const H = config.hidden;
    const rows = Array.from(plainInput.slots, (r) => Math.max(r, 0));
    const gathered = rows.flatMap((r) => Array.from(table.candHat.data.subarray(r * H, (r + 1) * H)));
    expect(Array.from(candHatOf(viaTable).data)).toEqual(gathered);
    expect(candHatOf(viaTable).data.length).toBe(plainInput.slots.length * H);
  });
});

describe("every candidate option starts as the model without it", () => {
  const config = SelectorConfigSchema.parse({ ...base, heads: 2 });
  const values = noisy(initParams(config, 7), 8);
  const labels = Int32Array.of(0, 2, 1, 3, 1, 0);
  const input = world(4, 2, 5, 8);
  const want = scores(new PointerSelector(config, values, "float64"), input, labels, 3);
  it.each([
    ["features", { features: ["vote", "agreement"] }],
    ["identity", { identity: "embedding", indexItems: 5 }],
    ["pool attention", { poolAttention: 2 }],
    ["all three", ALL_ON],
  ] as const)("%s: fresh tensors leave the existing ones and every score exactly unchanged", (_name, over) => {
    const withOption: SelectorConfig = SelectorConfigSchema.parse({ ...base, heads: 2, ...over });
    const fresh = initParams(withOption, 7);
    for (const [name, v] of initParams(config, 7)) expect(fresh.get(name)).toEqual(v); // own rng streams
    const start = new Map(fresh);
    for (const [name, v] of values) start.set(name, v);
    expect(scores(new PointerSelector(withOption, start, "float64"), input, labels, 3)).toEqual(want);
  });
});

describe("featureInit starts the selector as its feature's rule", () => {
  const over = { ...base, heads: 2, temperature: 0.5, features: ["consensus"] } as const;
  const input = world(4, 2, 5, 8);
  const at = (u: number) => {
    const config = SelectorConfigSchema.parse({ ...over, featureInit: u });
    return { config, values: initParams(config, 7) };
  };
  it("fills every step's weight with u and draws every other tensor as without it", () => {
    const [zero, one] = [at(0), at(1.5)];
    expect([...(one.values.get("feature_weight") as Float64Array)]).toEqual([1.5, 1.5, 1.5]);
    for (const [name, v] of zero.values) if (name !== "feature_weight") expect(one.values.get(name)).toEqual(v);
  });
  it("moves each score by exactly u·f/τ (f = the candidate's consensus column)", () => {
    const [zero, one] = [at(0), at(1.5)];
    const first = Int32Array.of(0, 2);
    const s0 = scores(new PointerSelector(zero.config, zero.values, "float64"), input, first, 1)[0];
    const s1 = scores(new PointerSelector(one.config, one.values, "float64"), input, first, 1)[0];
    const F = CANDIDATE_FEATURES.length;
    const column = CANDIDATE_FEATURES.indexOf("consensus");
    s0.forEach((v, i) => {
      if (!Number.isFinite(v)) return;
      expect(s1[i] - v).toBeCloseTo((1.5 * (input.features as Float64Array)[i * F + column]) / 0.5, 10);
    });
  });
  it("defaults to 0: the model without it", () => {
    expect(SelectorConfigSchema.parse(over).featureInit).toBe(0);
  });
});

describe("evaluation through a TableEncoding with candidate options", () => {
  it.each([
    [
      "features + identity (ĉ from the table's linear parts)",
      { features: ["agreement", "vote"], identity: "embedding", indexItems: 5 },
    ],
    ["features + identity + pool attention (ĉ per slot)", ALL_ON],
    ["features only (ĉ kept factored, factored.ts)", { features: ["agreement", "vote"] }],
    ["features + redundancy penalty (factored, Gram built from it)", { features: ["vote"], redundancy: "max" }],
  ] as const)("%s: enriches each slot after the gather and matches the direct path", (_name, over) => {
    const config = SelectorConfigSchema.parse({ ...base, ...over, heads: 2 });
    const model = new PointerSelector(config, noisy(initParams(config, 5), 6), "float64");
    const input = world(9, 3, 5, 8);
    const labels = Int32Array.of(0, 1, 2, 3, 2, 1, 1, 0, 3);
    const direct = scores(model, input, labels, 3);
    const table = model.encodeTable(input.table as Float64Array);
    expect(table.linear === null).toBe(config.poolAttention > 0);
    // Features without identity or pool attention take the factored path (and the Gram matrix is built from it).
    const factored = config.identity === "none" && config.poolAttention === 0;
    const enc = noGrad(() => model.encode({ ...input, table }));
    expect(enc.factored !== null).toBe(factored);
    expect(enc.gram !== null).toBe(config.redundancy === "max");
    const viaTable = scores(model, { ...input, table }, labels, 3);
    direct.forEach((row, t) => {
      row.forEach((v, i) => {
        expect(viaTable[t][i]).toBeCloseTo(v, 12);
      });
    });
  });
});

describe("evaluation with features only keeps ĉ factored", () => {
  const config = SelectorConfigSchema.parse({ ...base, heads: 2, features: ["vote", "agreement"] });
  const model = new PointerSelector(config, noisy(initParams(config, 11), 12), "float64");
  const input = world(13, 3, 5, 8);
  const table = model.encodeTable(input.table as Float64Array);

  it("builds no slot's ĉ for greedy decoding, and the same picks and log-probabilities as the direct path", () => {
    expect(table.linear?.factors).not.toBeNull();
    const enc = noGrad(() => model.encode({ ...input, table }));
    expect(enc.candHat).toBeNull();
    const viaTable = greedyDecode(model, enc, 3);
    expect(enc.candHat).toBeNull(); // the state update built the chosen rows only
    const direct = greedyDecode(
      model,
      noGrad(() => model.encode(input)),
      3,
    );
    expect(viaTable.map((t) => t.positions)).toEqual(direct.map((t) => t.positions));
    viaTable.forEach((t, b) => {
      expect(t.logprob).toBeCloseTo(direct[b].logprob, 12);
    });
  });

  it("with rows that repeat slots (the gate's per-slot half), builds every ĉ once and still matches", () => {
    const G = 2; // G · shots = 6 > K = 5: the gate's candidate half is taken per slot
    const labels = Int32Array.of(0, 1, 2, 3, 2, 1, 1, 0, 3, 2, 3, 0, 3, 1, 2, 0, 2, 1); // slot 4 is padding
    const run = (enc: Encoded) =>
      noGrad(() => model.teacherForce(enc, G, labels, 3).scores.map((s) => Array.from(s.data)));
    const direct = run(noGrad(() => model.encode(input)));
    const enc = noGrad(() => model.encode({ ...input, table }));
    const viaTable = run(enc);
    expect(enc.gate?.perSlot).not.toBeNull(); // the per-slot half was taken, from every slot's ĉ …
    expect(enc.candHat).not.toBeNull();
    expect(candHatOf(enc)).toBe(enc.candHat); // … built once and kept
    direct.forEach((row, t) => {
      row.forEach((v, i) => {
        expect(viaTable[t][i]).toBeCloseTo(v, 12);
      });
    });
  });

  it("the factored ĉ equals the per-slot normalised projection", () => {
    const enc = noGrad(() => model.encode({ ...input, table }));
    const direct = noGrad(() => model.encode(input));
    const built = noGrad(() => candHatOf(enc));
    expect(enc.candHat).toBe(built);
    const want = candHatOf(direct).data;
    built.data.forEach((v, i) => {
      expect(v).toBeCloseTo(want[i], 12);
    });
  });
});
