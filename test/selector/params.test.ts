import { describe, expect, it } from "vitest";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams, PARAM_GROUPS, parameterCount, paramSpecs } from "../../src/selector/params.js";

const cfg = (over: Record<string, unknown>) => SelectorConfigSchema.parse({ d: 512, hidden: 256, layers: 1, ...over });

describe("pointer selector parameters", () => {
  it("match the Python counts (docs/selector.md) for v2 with and without the V4-1 gate (d=512 and d=768)", () => {
    expect(parameterCount(cfg({ stateUpdate: "gate" }))).toBe(657_152);
    expect(parameterCount(cfg({ stateUpdate: "none" }))).toBe(525_824);
    expect(parameterCount(cfg({ d: 768, stateUpdate: "gate" }))).toBe(722_688);
    expect(parameterCount(cfg({ d: 768, stateUpdate: "none" }))).toBe(591_360);
  });

  it("match the Python counts (docs/selector.md) for V4-2 (GRU + step embedding) and V4-3 (+ per-step λ), shots 2", () => {
    expect(parameterCount(cfg({ stateUpdate: "gru", stepEmbedding: true, shots: 2 }))).toBe(921_088);
    expect(parameterCount(cfg({ stateUpdate: "gru", stepEmbedding: true, redundancy: "max", shots: 2 }))).toBe(921_090);
  });

  it("use the PyTorch state-dict names, with no input_proj when d equals hidden", () => {
    const names = paramSpecs(cfg({ stateUpdate: "gru", stepEmbedding: true, redundancy: "max", layers: 2 })).map(
      (s) => s.name,
    );
    expect(names).toEqual([
      "input_proj.weight",
      "cross_attn_layers.0.in_proj_weight",
      "cross_attn_layers.0.in_proj_bias",
      "cross_attn_layers.0.out_proj.weight",
      "cross_attn_layers.0.out_proj.bias",
      "cross_attn_layers.1.in_proj_weight",
      "cross_attn_layers.1.in_proj_bias",
      "cross_attn_layers.1.out_proj.weight",
      "cross_attn_layers.1.out_proj.bias",
      "attn_norms.0.weight",
      "attn_norms.0.bias",
      "attn_norms.1.weight",
      "attn_norms.1.bias",
      "query_proj.weight",
      "cand_proj.weight",
      "decoder_gru.weight_ih",
      "decoder_gru.weight_hh",
      "decoder_gru.bias_ih",
      "decoder_gru.bias_hh",
      "step_emb.weight",
      "div_lambda",
    ]);
    expect(paramSpecs(cfg({ d: 256 })).some((s) => s.name === "input_proj.weight")).toBe(false);
  });

  it("initialise like PyTorch: bounds, identity-plus-noise projections, zero biases, unit LayerNorm", () => {
    const c = cfg({ d: 64, hidden: 32, stateUpdate: "gate" });
    const p = initParams(c, 7);
    const maxAbs = (a: Float64Array) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    expect(maxAbs(p.get("input_proj.weight")!)).toBeLessThanOrEqual(Math.sqrt(6 / (64 + 32)));
    expect(maxAbs(p.get("input_proj.weight")!)).toBeGreaterThan(0.5 * Math.sqrt(6 / (64 + 32)));
    expect(maxAbs(p.get("cross_attn_layers.0.in_proj_weight")!)).toBeLessThanOrEqual(Math.sqrt(6 / (32 + 96)));
    expect(maxAbs(p.get("cross_attn_layers.0.out_proj.weight")!)).toBeLessThanOrEqual(1 / Math.sqrt(32));
    expect(maxAbs(p.get("cross_attn_layers.0.in_proj_bias")!)).toBe(0);
    expect(maxAbs(p.get("cross_attn_layers.0.out_proj.bias")!)).toBe(0);
    expect([...p.get("attn_norms.0.weight")!].every((v) => v === 1)).toBe(true);
    expect(maxAbs(p.get("query_update_gate.bias")!)).toBe(0);
    const qp = p.get("query_proj.weight")!;
    let diagErr = 0;
    let offSq = 0;
    for (let i = 0; i < 32; i++)
      for (let j = 0; j < 32; j++) {
        const v = qp[i * 32 + j];
        if (i === j) diagErr = Math.max(diagErr, Math.abs(v - 1));
        else offSq += v * v;
      }
    expect(diagErr).toBeLessThan(0.05);
    const offStd = Math.sqrt(offSq / (32 * 31));
    expect(offStd).toBeGreaterThan(0.008);
    expect(offStd).toBeLessThan(0.012);
  });

  it("initialise deterministically per seed and independently per tensor", () => {
    const a = initParams(cfg({ d: 64, hidden: 32 }), 1);
    const b = initParams(cfg({ d: 64, hidden: 32 }), 1);
    const c = initParams(cfg({ d: 64, hidden: 32 }), 2);
    expect(a.get("cand_proj.weight")).toEqual(b.get("cand_proj.weight"));
    expect(a.get("cand_proj.weight")).not.toEqual(c.get("cand_proj.weight"));
    // Adding the GRU does not shift the other tensors' draws.
    const g = initParams(cfg({ d: 64, hidden: 32, stateUpdate: "gru" }), 1);
    expect(g.get("cross_attn_layers.0.in_proj_weight")).toEqual(a.get("cross_attn_layers.0.in_proj_weight"));
  });

  it("add the candidate-option tensors after the Lever-Plus ones, each in a listed group, starting at zero", () => {
    const c = cfg({
      ...{ d: 16, hidden: 8, heads: 2, shots: 3 },
      ...{ features: ["vote", "agreement"], identity: "embedding", indexItems: 5, poolAttention: 2 },
    });
    const specs = paramSpecs(c);
    const plainNames = paramSpecs(cfg({ d: 16, hidden: 8, heads: 2, shots: 3 })).map((s) => s.name);
    expect(specs.slice(0, plainNames.length).map((s) => s.name)).toEqual(plainNames);
    const extra = Object.fromEntries(specs.slice(plainNames.length).map((s) => [s.name, [s.group, s.shape]]));
    expect(extra).toEqual({
      feature_weight: ["features", [3, 2]],
      "feature_proj.weight": ["feature_proj", [8, 2]],
      "item_emb.weight": ["identity", [5, 8]],
      item_bias: ["identity_bias", [5]],
      "pool_attn_layers.0.in_proj_weight": ["pool_attn", [24, 8]],
      "pool_attn_layers.0.in_proj_bias": ["pool_attn", [24]],
      "pool_attn_layers.0.out_proj.weight": ["pool_attn", [8, 8]],
      "pool_attn_layers.0.out_proj.bias": ["pool_attn", [8]],
      "pool_attn_layers.1.in_proj_weight": ["pool_attn", [24, 8]],
      "pool_attn_layers.1.in_proj_bias": ["pool_attn", [24]],
      "pool_attn_layers.1.out_proj.weight": ["pool_attn", [8, 8]],
      "pool_attn_layers.1.out_proj.bias": ["pool_attn", [8]],
      "pool_norms.0.weight": ["pool_norm", [8]],
      "pool_norms.0.bias": ["pool_norm", [8]],
      "pool_norms.1.weight": ["pool_norm", [8]],
      "pool_norms.1.bias": ["pool_norm", [8]],
    });
    for (const s of specs) expect(PARAM_GROUPS).toContain(s.group);
    const used = new Set([
      ...specs.map((s) => s.group),
      ...paramSpecs(cfg({ stateUpdate: "gru", stepEmbedding: true, redundancy: "max", prior: "cosine", d: 16 })).map(
        (s) => s.group,
      ),
      "gate",
    ]);
    expect([...PARAM_GROUPS].sort()).toEqual([...used].sort());
    const p = initParams(c, 3);
    const maxAbs = (a: Float64Array) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    for (const name of ["feature_weight", "feature_proj.weight", "item_emb.weight", "item_bias"])
      expect(maxAbs(p.get(name)!)).toBe(0);
    for (const l of [0, 1]) {
      const w = p.get(`pool_attn_layers.${l}.in_proj_weight`)!;
      expect(maxAbs(w)).toBeLessThanOrEqual(Math.sqrt(6 / (8 + 24)));
      expect(maxAbs(w)).toBeGreaterThan(0.5 * Math.sqrt(6 / (8 + 24)));
      for (const z of ["in_proj_bias", "out_proj.weight", "out_proj.bias"])
        expect(maxAbs(p.get(`pool_attn_layers.${l}.${z}`)!)).toBe(0);
      expect([...p.get(`pool_norms.${l}.weight`)!].every((v) => v === 1)).toBe(true);
      expect(maxAbs(p.get(`pool_norms.${l}.bias`)!)).toBe(0);
    }
  });

  it("reject a hidden width not divisible by the head count", () => {
    expect(() => cfg({ hidden: 30, heads: 4 })).toThrow(/divisible/);
  });
});
