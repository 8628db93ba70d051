import { z } from "zod";

/**
 * The per-candidate answer features the data side can compute, in the column order of
 * `SelectorInput.features`: "vote" = similarity-weighted share of the query's pool whose answer
 * matches the candidate's; "agreement" = how strongly the candidate's own annotators agree;
 * "consensus" (captions) = the candidate's rank in its pool by caption consensus, 1 the most typical.
 */
export const CANDIDATE_FEATURES = ["vote", "agreement", "consensus"] as const;
export type CandidateFeature = (typeof CANDIDATE_FEATURES)[number];

/**
 * Configuration of the Lever-Plus pointer selector (docs/selector.md, docs/provenance.md#selector). One
 * model with options instead of one class per variant:
 *   stateUpdate "none" → v2 before 2025-12-25 (constant query state),
 *               "gate" → V4-1 (= v2/v3 after 2025-12-25),
 *               "gru"  → V4-2 (GRUCell decoder);
 *   redundancy  "max"  → V4-3 learnable MMR penalty (per-step λ_t);
 *   stepEmbedding      → V4-2/V4-3 `step_emb` table (rows = shots);
 *   prior "cosine"     → our addition (not in Lever-Plus): a learned weight on the raw query–candidate
 *                        cosine added to every score, so the selector starts as top-k retrieval;
 *   features, identity, poolAttention → ours (issue 17): per-candidate answer features, a learned
 *                        per-index-item embedding and bias, self-attention over the pool
 *                        (docs/selector.md, "Candidate features, identity, pool attention").
 * The pool size K is not part of the config: it comes from the pool at run time.
 */
export const SelectorFieldsSchema = z
  .object({
    d: z.number().int().positive().describe("input embedding width (512 for CLIP ViT-B/32)"),
    hidden: z
      .number()
      .int()
      .positive()
      .default(256)
      .describe("hidden width H; input_proj is the identity (no parameter) when d = H"),
    heads: z.number().int().positive().default(1).describe("attention heads of the cross-attention layers"),
    layers: z.number().int().nonnegative().default(1).describe("cross-attention layers over the candidates"),
    dropout: z
      .number()
      .min(0)
      .lt(1)
      .default(0.5)
      .describe("dropout on the enhanced query and the projected candidates"),
    attnDropout: z.number().min(0).lt(1).default(0.1).describe("dropout on the attention weights"),
    temperature: z
      .number()
      .positive()
      .default(0.1)
      .describe("fixed (not learned) softmax temperature of the pointer scores"),
    shots: z
      .number()
      .int()
      .positive()
      .default(2)
      .describe("demonstrations the model was built for (the step tables have this many rows)"),
    stateUpdate: z
      .enum(["none", "gate", "gru"])
      .default("gate")
      .describe("query-state update after each pick: none (v2), gate (V4-1) or gru (V4-2); see docs/selector.md"),
    stepEmbedding: z
      .boolean()
      .default(false)
      .describe("add a learned per-step embedding to the query state (V4-2/V4-3)"),
    redundancy: z
      .enum(["none", "max"])
      .default("none")
      .describe("learnable penalty on candidates similar to those already chosen (V4-3)"),
    prior: z
      .enum(["none", "cosine", "rank"])
      .default("none")
      .describe(
        "add w·prior(query, candidate) to every score (w learned, starts at 1), so an untrained selector already ranks like top-k retrieval (not in Lever-Plus): cosine = the cosine of the input embeddings; rank = a score of the candidate's rank in its pool by that cosine (0.25·Φ⁻¹ of its rank quantile), unchanged by any monotone change of the cosines (docs/selector.md)",
      ),
    center: z
      .enum(["none", "index-mean"])
      .default("none")
      .describe(
        "index-mean: the selector reads its query and candidate embeddings minus the index's mean embedding, re-normalised (removes the component every embedding shares, e.g. CLIP's; docs/selector.md)",
      ),
    features: z
      .array(z.enum(CANDIDATE_FEATURES))
      .refine((f) => new Set(f).size === f.length, "features must be distinct (name each feature once)")
      .default([])
      .describe(
        "per-candidate answer features the selector reads (VQA — vote: similarity-weighted share of the pool agreeing with the candidate's answer; agreement: how strongly the candidate's annotators agree; captions — consensus: 1 − rank/(K−1) of the candidate's caption by its CIDEr-D against the pool's other captions); each enters the candidate representation and, with a per-step weight, the score (starts at 0; docs/selector.md)",
      ),
    featureInit: z
      .number()
      .min(-10)
      .max(10)
      .default(0)
      .describe(
        "initial per-step score weight u of every feature (0: each feature starts with no effect, so the selector starts as the model without it; 1 with a rank feature such as consensus: the untrained selector ranks mostly by that feature — it starts as that no-training rule, with the cosine prior as tie-break; docs/selector.md)",
      ),
    voteScale: z
      .number()
      .min(0)
      .max(1e6)
      .default(0)
      .describe(
        "scale ρ of the vote feature's similarity weights exp(−rank/ρ), by the candidates' cosine order (a new run calibrates it on the index's annotations unless given; 0: the linear max(0, cos) weight of checkpoints made before it existed; docs/selector.md)",
      ),
    identity: z
      .enum(["none", "embedding"])
      .default("none")
      .describe(
        "embedding: a learned embedding and score bias per index item (Lever-LM style), both starting at 0; the checkpoint then only fits its own index",
      ),
    indexItems: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe("rows of the identity table: the index's item count (set from the data, like d)"),
    poolAttention: z
      .number()
      .int()
      .min(0)
      .max(4)
      .default(0)
      .describe(
        "pre-norm self-attention layers over each query's pool before the pointer (0 = none; each starts as the identity)",
      ),
  })
  .strict();

const headsDivideHidden = (c: { hidden: number; heads: number }) => c.hidden % c.heads === 0;
const headsMessage = {
  message: "hidden must be divisible by heads (choose heads among the divisors of hidden)",
  path: ["heads"],
};

const identityHasItems = (c: { identity: string; indexItems: number }) => c.identity === "none" || c.indexItems > 0;
const identityMessage = {
  message:
    'identity "embedding" needs indexItems > 0 (the index\'s item count; set it from the data) — or use identity "none"',
  path: ["indexItems"],
};

export const SelectorConfigSchema = SelectorFieldsSchema.refine(headsDivideHidden, headsMessage).refine(
  identityHasItems,
  identityMessage,
);

/** A defaulted field as an optional one with the same description (its default named in it). */
function absentByDefault<T extends z.ZodType>(field: z.ZodDefault<T>) {
  const fallback = JSON.stringify(field.parse(undefined));
  return field
    .unwrap()
    .optional()
    .describe(`${field.description ?? ""} (default: ${fallback})`);
}

/** A defaulted field with another default for training runs, named in its description. */
function trainingDefault<T extends z.ZodType>(field: z.ZodDefault<T>, value: z.util.NoUndefined<z.output<T>>) {
  const shown = Array.isArray(value) ? value.join(", ") : String(value);
  return field
    .unwrap()
    .default(value)
    .describe(`${field.description ?? ""} (training default: ${shown})`);
}

/**
 * The model settings a training run chooses: everything but d, shots and indexItems, which come from the
 * data. Two defaults differ from the selector's own, by measurement (docs/training.md, "What to expect"):
 * a new run gets the cosine prior and the answer features (`{ prior: none, features: [] }` builds the
 * plain Lever-Plus pointer selector). The options that did not measure better (identity, pool
 * attention) stay ABSENT unless set — their selector defaults apply when the config is parsed — so they
 * do not enter the settings, nor the `lever run` stage identities hashed from them.
 */
export const ModelOptionsSchema = SelectorFieldsSchema.omit({ d: true, shots: true, indexItems: true })
  .extend({
    prior: trainingDefault(SelectorFieldsSchema.shape.prior, "cosine"),
    center: trainingDefault(SelectorFieldsSchema.shape.center, "index-mean"),
    features: trainingDefault(SelectorFieldsSchema.shape.features, ["vote", "agreement"]),
    voteScale: SelectorFieldsSchema.shape.voteScale
      .unwrap()
      .optional()
      .describe(
        "scale ρ of the vote feature's similarity weights exp(−rank/ρ) (default: calibrated on the index's annotations when training starts — the `vote` retriever's rule — and recorded in the checkpoint; 0: the linear max(0, cos) weight of earlier builds)",
      ),
    featureInit: absentByDefault(SelectorFieldsSchema.shape.featureInit),
    identity: absentByDefault(SelectorFieldsSchema.shape.identity),
    poolAttention: absentByDefault(SelectorFieldsSchema.shape.poolAttention),
  })
  .refine(headsDivideHidden, headsMessage);

export type SelectorConfig = z.infer<typeof SelectorConfigSchema>;
export type SelectorConfigInput = z.input<typeof SelectorConfigSchema>;

/** True when the model reads per-candidate data beyond the embeddings (`SelectorInput.features` / `.items`). */
export function readsCandidateData(config: { features?: readonly string[]; identity?: string }): boolean {
  return (config.features?.length ?? 0) > 0 || (config.identity ?? "none") !== "none";
}

/** True when a candidate's representation depends on the rest of its pool (pool attention). */
export function mixesCandidates(config: SelectorConfig): boolean {
  return config.poolAttention > 0;
}

/** Human-readable variant name used in checkpoint metadata and `selector inspect`. */
export function variantName(config: SelectorConfig): string {
  return baseVariantName(config) + candidateSuffix(config);
}

/** "+feat(vote,agreement)", "+id", "+pool1" for the candidate options that are on ("" when all are off). */
function candidateSuffix(config: SelectorConfig): string {
  const feat = config.features.length > 0 ? `+feat(${config.features.join(",")})` : "";
  const id = config.identity === "embedding" ? "+id" : "";
  const pool = config.poolAttention > 0 ? `+pool${config.poolAttention}` : "";
  return feat + id + pool;
}

function baseVariantName(config: SelectorConfig): string {
  const prior = config.prior === "cosine" ? "+prior" : config.prior === "rank" ? "+rankprior" : "";
  if (config.stateUpdate === "gru" && config.redundancy === "max") return `v4-3${prior}`;
  if (config.stateUpdate === "gru") return `v4-2${prior}`;
  if (config.redundancy === "max") return `${config.stateUpdate === "gate" ? "v4-1" : "v2"}+mmr${prior}`;
  return `${config.stateUpdate === "gate" ? "v4-1" : "v2"}${prior}`;
}
