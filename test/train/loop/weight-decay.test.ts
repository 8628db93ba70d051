/**
 * optim.decayScope: which tensors AdamW's decoupled weight decay shrinks. One step with zero gradients
 * leaves Adam's update at 0, so each tensor is either multiplied by exactly 1 − lr·wd or left as it was;
 * every tensor starts at 0.5; the tensors left alone under `matrices` are listed by hand here (not by the rule under test).
 */
import { describe, expect, it } from "vitest";
import { SelectorConfigSchema } from "../../../src/selector/config.js";
import { PointerSelector } from "../../../src/selector/model.js";
import { initParams } from "../../../src/selector/params.js";
import { OptimSchema, selectorOptimizer } from "../../../src/train/loop/loop.js";

const config = SelectorConfigSchema.parse({
  d: 8,
  hidden: 6,
  shots: 2,
  layers: 1,
  prior: "cosine",
  features: ["vote", "agreement"],
  redundancy: "max",
  identity: "embedding",
  indexItems: 5,
  poolAttention: 1,
});
const UNDECAYED = [
  "cross_attn_layers.0.in_proj_bias",
  "cross_attn_layers.0.out_proj.bias",
  "attn_norms.0.weight",
  "attn_norms.0.bias",
  "query_update_gate.bias",
  "div_lambda",
  "prior_weight",
  "feature_weight",
  "item_bias",
  "pool_attn_layers.0.in_proj_bias",
  "pool_attn_layers.0.out_proj.bias",
  "pool_norms.0.weight",
  "pool_norms.0.bias",
];

/** Each parameter's value after / before one step with zero gradients (lr 0.1, weight decay 0.5). */
function ratios(decayScope: "all" | "matrices"): Map<string, number> {
  const model = new PointerSelector(config, initParams(config, 3));
  for (const p of model.params.values()) p.data.fill(0.5); // biases and some weights start at 0
  const before = new Map([...model.params].map(([name, p]) => [name, Float64Array.from(p.data)]));
  const { optimizer } = selectorOptimizer(model, OptimSchema.parse({ lr: 0.1, weightDecay: 0.5, decayScope }));
  for (const p of model.params.values()) p.grad = new Float32Array(p.size);
  optimizer.step();
  const out = new Map<string, number>();
  for (const [name, p] of model.params) {
    const b = before.get(name)!;
    out.set(name, p.data[0] / b[0]);
  }
  return out;
}

describe("weight decay scope", () => {
  it("all: every tensor shrinks by 1 − lr·wd (PyTorch AdamW's default)", () => {
    for (const [name, r] of ratios("all")) expect(r, name).toBeCloseTo(0.95, 6);
  });

  it("matrices: weight matrices and embeddings shrink; biases, norms, the prior's and features' weights do not", () => {
    const r = ratios("matrices");
    for (const name of UNDECAYED) expect(r.get(name), name).toBe(1);
    const decayed = [...r.keys()].filter((name) => !UNDECAYED.includes(name));
    expect(decayed).toContain("item_emb.weight");
    expect(decayed).toContain("cross_attn_layers.0.in_proj_weight");
    expect(decayed).toContain("feature_proj.weight");
    for (const name of decayed) expect(r.get(name), name).toBeCloseTo(0.95, 6);
  });
});
