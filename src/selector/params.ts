import { Rng } from "../util/rng.js";
import type { SelectorConfig } from "./config.js";

/**
 * Parameter names, shapes and initialisation of the pointer selector. Names are the PyTorch
 * state-dict keys of the Lever-Plus classes (pointer_selector_v2.py and pointer_selector_v4_2.py /
 * v4_3.py, docs/provenance.md#selector), so checkpoints load into either side without renaming.
 */
/** Every parameter group, for reporting, freezing and per-group learning-rate multipliers. */
export const PARAM_GROUPS = [
  "input_proj",
  "cross_attn",
  "attn_norm",
  "query_proj",
  "cand_proj",
  "gate",
  "gru",
  "step_emb",
  "mmr",
  "prior",
  "features",
  "feature_proj",
  "identity",
  "identity_bias",
  "pool_attn",
  "pool_norm",
] as const;
export type ParamGroup = (typeof PARAM_GROUPS)[number];

export interface ParamSpec {
  name: string;
  shape: number[];
  /** Group used for reporting and for optimiser groups (e.g. freezing the trunk). */
  group: ParamGroup;
}

/**
 * Whether a tensor is a weight matrix of a linear map or an embedding table (nanoGPT decays exactly
 * the tensors with two or more dimensions): not a bias, a LayerNorm gain, the MMR λ, the prior's
 * weight — nor the features' per-step score weights, which are two-dimensional only because they
 * hold one row per step.
 */
export function isDecayedMatrix(spec: ParamSpec): boolean {
  return spec.shape.length >= 2 && spec.group !== "features";
}

export function paramSpecs(config: SelectorConfig): ParamSpec[] {
  const { d, hidden: h, layers, shots } = config;
  const specs: ParamSpec[] = [];
  // nn.Identity when d == hidden_dim: no parameter at all (reference `input_proj = nn.Identity()`).
  if (d !== h) specs.push({ name: "input_proj.weight", shape: [h, d], group: "input_proj" });
  for (let i = 0; i < layers; i++) {
    const p = `cross_attn_layers.${i}.`;
    specs.push({ name: `${p}in_proj_weight`, shape: [3 * h, h], group: "cross_attn" });
    specs.push({ name: `${p}in_proj_bias`, shape: [3 * h], group: "cross_attn" });
    specs.push({ name: `${p}out_proj.weight`, shape: [h, h], group: "cross_attn" });
    specs.push({ name: `${p}out_proj.bias`, shape: [h], group: "cross_attn" });
  }
  for (let i = 0; i < layers; i++) {
    specs.push({ name: `attn_norms.${i}.weight`, shape: [h], group: "attn_norm" });
    specs.push({ name: `attn_norms.${i}.bias`, shape: [h], group: "attn_norm" });
  }
  specs.push({ name: "query_proj.weight", shape: [h, h], group: "query_proj" });
  specs.push({ name: "cand_proj.weight", shape: [h, h], group: "cand_proj" });
  if (config.stateUpdate === "gate") {
    specs.push({ name: "query_update_gate.weight", shape: [h, 2 * h], group: "gate" });
    specs.push({ name: "query_update_gate.bias", shape: [h], group: "gate" });
  }
  if (config.stateUpdate === "gru") {
    // nn.GRUCell(H, H) parameter names; rows ordered (reset, update, new) as in PyTorch.
    specs.push({ name: "decoder_gru.weight_ih", shape: [3 * h, h], group: "gru" });
    specs.push({ name: "decoder_gru.weight_hh", shape: [3 * h, h], group: "gru" });
    specs.push({ name: "decoder_gru.bias_ih", shape: [3 * h], group: "gru" });
    specs.push({ name: "decoder_gru.bias_hh", shape: [3 * h], group: "gru" });
  }
  if (config.stepEmbedding) specs.push({ name: "step_emb.weight", shape: [shots, h], group: "step_emb" });
  if (config.redundancy !== "none") specs.push({ name: "div_lambda", shape: [shots], group: "mmr" });
  // Ours, not a Lever-Plus tensor: the weight of the input-space cosine in the scores.
  if (config.prior !== "none") specs.push({ name: "prior_weight", shape: [1], group: "prior" });
  specs.push(...candidateSpecs(config));
  return specs;
}

/** Ours (issue 17), appended after the Lever-Plus tensors: features, identity, pool attention. */
function candidateSpecs(config: SelectorConfig): ParamSpec[] {
  const { hidden: h, shots } = config;
  const F = config.features.length;
  const specs: ParamSpec[] = [];
  if (F > 0) {
    // Per-step direct score weight u_t; a step t ≥ shots uses the last row (see docs/selector.md).
    specs.push({ name: "feature_weight", shape: [shots, F], group: "features" });
    specs.push({ name: "feature_proj.weight", shape: [h, F], group: "feature_proj" });
  }
  if (config.identity === "embedding") {
    specs.push({ name: "item_emb.weight", shape: [config.indexItems, h], group: "identity" });
    specs.push({ name: "item_bias", shape: [config.indexItems], group: "identity_bias" });
  }
  for (let i = 0; i < config.poolAttention; i++) {
    const p = `pool_attn_layers.${i}.`;
    specs.push({ name: `${p}in_proj_weight`, shape: [3 * h, h], group: "pool_attn" });
    specs.push({ name: `${p}in_proj_bias`, shape: [3 * h], group: "pool_attn" });
    specs.push({ name: `${p}out_proj.weight`, shape: [h, h], group: "pool_attn" });
    specs.push({ name: `${p}out_proj.bias`, shape: [h], group: "pool_attn" });
  }
  for (let i = 0; i < config.poolAttention; i++) {
    specs.push({ name: `pool_norms.${i}.weight`, shape: [h], group: "pool_norm" });
    specs.push({ name: `pool_norms.${i}.bias`, shape: [h], group: "pool_norm" });
  }
  return specs;
}

export function sizeOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

export function parameterCount(config: SelectorConfig): number {
  return paramSpecs(config).reduce((n, s) => n + sizeOf(s.shape), 0);
}

/** Named flat float64 parameter values (row-major), the engine-independent form of a model. */
export type ParamValues = Map<string, Float64Array>;

/**
 * PyTorch-like initialisation from a seeded Rng. Each tensor draws from its own child stream
 * (`rng.child(name)`), so adding an option never shifts another tensor's values.
 * - input_proj, query_update_gate.weight: xavier_uniform_ (reference `_init_weights`);
 * - MultiheadAttention `_reset_parameters`: xavier_uniform_ on in_proj_weight, zero in_proj_bias and
 *   out_proj.bias, out_proj.weight keeps nn.Linear's kaiming_uniform_(a=√5) = U(±1/√fan_in);
 * - LayerNorm: weight 1, bias 0;
 * - query_proj/cand_proj: eye_ + N(0, 0.01²);
 * - GRUCell: every tensor U(±1/√H); step_emb N(0, 0.02²); div_lambda 0.1 (V4-3 `torch.full(…, 0.1)`);
 * - prior_weight 1 (the cosine, or the rank score, counts as much as a perfectly aligned learned similarity);
 * - ours (issue 17), so that every candidate option starts exactly as the model without it:
 *   feature_weight config.featureInit (0 by default), feature_proj, item_emb, item_bias 0; pool attention in_proj Xavier-uniform,
 *   biases 0, out_proj.weight 0 (the residual block starts as the identity); pool_norms 1 / 0.
 */
export function initParams(config: SelectorConfig, seed: number): ParamValues {
  const rng = new Rng(seed);
  const values: ParamValues = new Map();
  for (const spec of paramSpecs(config)) {
    const r = rng.child(spec.name);
    const out = new Float64Array(sizeOf(spec.shape));
    const [rows, cols] = spec.shape;
    const name = spec.name;
    const uniform = (bound: number) => {
      for (let i = 0; i < out.length; i++) out[i] = (2 * r.next() - 1) * bound;
    };
    const normal = (std: number) => {
      for (let i = 0; i < out.length; i++) out[i] = r.normal() * std;
    };
    if (name === "input_proj.weight" || name.endsWith("in_proj_weight") || name === "query_update_gate.weight") {
      uniform(Math.sqrt(6 / (rows + cols)));
    } else if (name.startsWith("pool_attn_layers.") && name.endsWith("out_proj.weight")) {
      // stays zero: a new pool-attention layer starts as the identity
    } else if (name.endsWith("out_proj.weight")) {
      uniform(1 / Math.sqrt(cols));
    } else if ((name.startsWith("attn_norms.") || name.startsWith("pool_norms.")) && name.endsWith(".weight")) {
      out.fill(1);
    } else if (name === "query_proj.weight" || name === "cand_proj.weight") {
      normal(0.01);
      for (let i = 0; i < rows; i++) out[i * cols + i] += 1;
    } else if (name.startsWith("decoder_gru.")) {
      uniform(1 / Math.sqrt(config.hidden));
    } else if (name === "step_emb.weight") {
      normal(0.02);
    } else if (name === "div_lambda") {
      out.fill(0.1);
    } else if (name === "prior_weight") {
      out.fill(1);
    } else if (name === "feature_weight") {
      out.fill(config.featureInit);
    }
    // Everything else (biases of attention, LayerNorm and gate; the feature and identity tensors) stays zero.
    values.set(name, out);
  }
  return values;
}
