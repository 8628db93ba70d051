/**
 * Import of a Lever-Plus PyTorch state dict (docs/provenance.md#checkpoints) exported to safetensors, e.g.
 *   sd = torch.load(p, map_location="cpu"); sd = sd.get("state_dict", sd.get("model_state_dict", sd))
 *   safetensors.torch.save_file({k: v.contiguous() for k, v in sd.items()}, out)
 * The architecture (d, H, layers, state update, step embedding, redundancy) is inferred from the
 * tensor names and shapes; what shapes cannot tell (heads, temperature, shots) comes from options.
 * Only two renamings are applied: the Lightning prefixes `lever_lm.` and `pointer_selector.` are
 * stripped. The frozen CLIP towers of a Lightning checkpoint (`img_model.*`, `sen_model.*`) are
 * skipped and counted. Everything else must match the selector exactly (strict loading).
 */
import { readSafetensors, type Tensor as StTensor } from "../data/safetensors.js";
import { LeverError } from "../util/errors.js";
import { sha256File } from "../util/hash.js";
import { parseOrThrow } from "../util/validate.js";
import { type Checkpoint, stateDictToParams } from "./checkpoint.js";
import { type SelectorConfig, SelectorConfigSchema } from "./config.js";

export interface ImportOptions {
  heads?: number;
  temperature?: number;
  /** Shot count recorded in the checkpoint (and the config's when no step table fixes it). */
  shots?: number;
  /** Overrides the state update inferred from the tensor names (then strictness decides). */
  stateUpdate?: "none" | "gate" | "gru";
}

const PREFIXES = ["lever_lm.", "pointer_selector."];
const ENCODER_PREFIXES = ["img_model.", "sen_model."];
/** Keys written by the reference's broken converters (convert_v3_to_v2_format.py and the V4-2/3/5 ones). */
const RENAMED = /^(cross_attn|attn_norm)\./;

export interface ImportResult {
  checkpoint: Omit<Checkpoint, "provenance">;
  skippedEncoderTensors: number;
}

/** Strips the Lightning prefixes, drops the CLIP encoders, refuses renamed keys. */
export function normaliseTorchKeys(
  tensors: Map<string, StTensor>,
  file: string,
): { tensors: Map<string, StTensor>; skipped: number } {
  const out = new Map<string, StTensor>();
  let skipped = 0;
  const renamed: string[] = [];
  for (const [raw, tensor] of tensors) {
    let name = raw;
    for (const prefix of PREFIXES) if (name.startsWith(prefix)) name = name.slice(prefix.length);
    if (ENCODER_PREFIXES.some((p) => name.startsWith(p))) {
      skipped++;
      continue;
    }
    if (RENAMED.test(name)) renamed.push(raw);
    if (out.has(name))
      throw new LeverError(`two tensors map to "${name}" after stripping prefixes`, { file, field: raw });
    out.set(name, tensor);
  }
  if (renamed.length > 0)
    throw new LeverError(
      `refusing renamed keys ${renamed.slice(0, 4).join(", ")}${renamed.length > 4 ? ", …" : ""}: they come from the reference's ` +
        "v3→v2 / V4-x converters, which renamed cross_attn_layers.0.* → cross_attn.* and attn_norms.0.* → attn_norm.*; the " +
        "Python loader then ignored them (strict=False) and ran with freshly initialised attention (see docs/selector.md). " +
        "Export the original RCE/GRPO checkpoint's model_state_dict instead.",
      { file },
    );
  return { tensors: out, skipped };
}

/** The selector config implied by the tensor shapes plus the options. */
export function inferConfig(tensors: Map<string, StTensor>, opts: ImportOptions, file: string): SelectorConfig {
  const shapeOf = (name: string) => tensors.get(name)?.shape;
  const queryProj = shapeOf("query_proj.weight");
  if (!queryProj || queryProj.length !== 2)
    throw new LeverError("no query_proj.weight [H, H]: not a Lever-Plus pointer selector state dict", { file });
  const hidden = queryProj[0];
  const inputProj = shapeOf("input_proj.weight");
  const d = inputProj && inputProj.length === 2 ? inputProj[1] : hidden;
  let layers = 0;
  while (tensors.has(`cross_attn_layers.${layers}.in_proj_weight`)) layers++;
  const inferred = tensors.has("decoder_gru.weight_ih")
    ? "gru"
    : tensors.has("query_update_gate.weight")
      ? "gate"
      : "none";
  const stepShape = shapeOf("step_emb.weight");
  const lambdaShape = shapeOf("div_lambda");
  const tableRows = stepShape?.[0] ?? lambdaShape?.[0];
  const shots = tableRows ?? opts.shots ?? 2;
  return parseOrThrow(
    SelectorConfigSchema,
    {
      d,
      hidden,
      heads: opts.heads ?? 1,
      layers,
      temperature: opts.temperature ?? 0.1,
      shots,
      stateUpdate: opts.stateUpdate ?? inferred,
      stepEmbedding: stepShape !== undefined,
      redundancy: lambdaShape !== undefined ? "max" : "none",
    },
    { file },
  );
}

export async function importTorchStateDict(
  file: string,
  opts: ImportOptions = {},
): Promise<ImportResult & { sha256: string }> {
  const raw = readSafetensors(file);
  const { tensors, skipped } = normaliseTorchKeys(raw.tensors, file);
  const config = inferConfig(tensors, opts, file);
  const params = stateDictToParams(config, tensors, file);
  return {
    checkpoint: { config, params, trainedK: null, shots: opts.shots ?? config.shots },
    skippedEncoderTensors: skipped,
    sha256: await sha256File(file),
  };
}
