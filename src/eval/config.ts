/**
 * The evaluation's settings (validated with zod) and the run identity. A run is identified by
 * everything that changes what a stored prediction means — data, query subset, seed, VLM, prompt
 * order, pools, metric — but NOT by the retriever list or shot counts: later invocations with other
 * retrievers add rows to the same run, so every retriever is compared on the same questions under
 * the same settings (and stored rows are reused).
 */
import { z } from "zod";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { SubsetSpecSchema } from "../data/splits.js";
import { POOL_RETRIEVER_NAMES, RETRIEVERS, retrieverHelp } from "../icl/retriever-catalog.js";
import { ComparisonFields } from "../metrics/compare-settings.js";
import { VQA_VARIANTS } from "../metrics/vqa.js";
import { DEFAULT_POOL, SAMPLERS, type SamplerName } from "../pools/samplers.js";
import { RunNameSchema } from "../store/runs.js";
import { OPERATIONAL } from "../util/operational.js";
import { parseFlags } from "../util/validate.js";
import { checkVlmSettings, VlmFieldsSchema } from "../vlm/settings.js";
import { PROMPT_ORDERS } from "./types.js";

/** The name of the evaluation's one stage in its run (its predictions). */
export const EVAL_STAGE = "predict";

/** The evaluation's own settings (the VLM backend's are `VlmSettingsSchema`, bound beside them). */
export const EvalSettingsSchema = z
  .object({
    dataset: z.string().min(1).describe("query dataset (the eval split)"),
    index: z.string().min(1).describe("index dataset the demonstrations come from (the train split)"),
    // Every query by default: an evaluation's claim is about the split, and a small or id-ordered subset
    // gives wide intervals on a non-random sample (docs/report.md, "Which questions `lever eval` asks").
    queries: SubsetSpecSchema.default("all").describe(
      "query subset: all, first:N (lowest question ids) or random:N (seeded)",
    ),
    shots: z.array(z.number().int().min(0).max(32)).min(1).default([1, 2, 3, 4]).describe("shot counts"),
    retrievers: z
      .array(z.string().min(1))
      .min(1)
      .default(["zero", "random"])
      .meta({
        flag: "retriever",
        description: `retrievers to evaluate — ${retrieverHelp()}`,
      }),
    k: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        `pool size K of each query's pool (${POOL_RETRIEVER_NAMES.join(", ")}; default ${DEFAULT_POOL.k} / the checkpoint's)`,
      ),
    poolSampler: z
      .enum(SAMPLERS)
      .optional()
      .describe(`sampler of each query's pool (default ${DEFAULT_POOL.sampler} / the checkpoint's)`),
    selectorEmbedding: z
      .enum(EMBEDDING_KINDS)
      .optional()
      .describe("embedding selectors read (default: the checkpoint's, else joint)"),
    voteScale: z
      .number()
      .positive()
      .max(1e6)
      .optional()
      .describe(
        "scale ρ of the vote retriever's similarity weights exp(−rank/ρ) (default: calibrated per index from its annotations, no VLM; docs/report.md)",
      ),
    seed: z
      .number()
      .int()
      .min(0)
      .max(0xffffffff)
      .default(0)
      .describe("seed of query subsets, random retrieval, pools and the bootstrap"),
    run: RunNameSchema.optional().describe(
      "name of the run (resumed if it exists); default: identified by the config hash",
    ),
    metricVariant: z
      .enum(VQA_VARIANTS)
      .default("official")
      .describe("VQA accuracy: official (normalise only when annotators disagree) or always-normalize"),
    order: z
      .enum(PROMPT_ORDERS)
      .default("nearest")
      .describe("prompt order: nearest (first selected next to the query) or farthest"),
    batchSize: z.number().int().positive().default(64).describe("prompts per VLM call").meta(OPERATIONAL),
    concurrency: z.number().int().positive().default(4).describe("VLM calls in flight").meta(OPERATIONAL),
    // The summary's settings are the comparison engine's (the same as lever compare's).
    ...ComparisonFields,
  })
  .strict();

export const EvalOptionsSchema = z
  .object({ ...EvalSettingsSchema.shape, ...VlmFieldsSchema.shape })
  .strict()
  .superRefine(checkVlmSettings)
  .superRefine(checkSomethingToPredict);

/**
 * Zero-shot runs at 0 shots only and every other retriever at positive shot counts only, so `--shots 0`
 * without `zero` would plan no prediction at all: refused, not an empty evaluation that succeeds.
 */
function checkSomethingToPredict(s: { shots: number[]; retrievers: string[] }, ctx: z.RefinementCtx): void {
  if (s.shots.some((shot) => shot > 0) || s.retrievers.includes(RETRIEVERS.zero.names[0])) return;
  ctx.addIssue({
    code: "custom",
    path: ["shots"],
    message: `only 0 shots, where only the zero retriever runs: --retriever ${s.retrievers.join(",")} would make no prediction; add a positive shot count or the zero retriever`,
  });
}

export type EvalOptions = z.infer<typeof EvalOptionsSchema>;

/** Parses CLI-shaped options; the first problem becomes a one-line error naming the flag. */
export function parseEvalOptions(raw: unknown): EvalOptions {
  return parseFlags(EvalOptionsSchema, raw);
}

/** Content identities the run depends on, resolved from the workspace and the VLM. */
export interface EvalInputs {
  datasetItemsHash: string;
  indexItemsHash: string;
  vlmId: string;
  /** "dataset/kind" → sha256 of every embedding the pools may read. */
  embeddings: Record<string, string>;
  /** Hash of the question ids left out of the query set (absent: none). */
  excluded?: string;
  /** The task's metric record (`Task.metricRecord`). */
  metric: Record<string, unknown>;
}

/**
 * The pool of the pool retrievers and of the vote's calibration, resolved once: --pool-sampler and
 * --k, else DEFAULT_POOL (a selector's unset ones are its checkpoint's: the identity's `selector`).
 */
export function evalPool(options: Pick<EvalOptions, "poolSampler" | "k">): { sampler: SamplerName; k: number } {
  return { sampler: options.poolSampler ?? DEFAULT_POOL.sampler, k: options.k ?? DEFAULT_POOL.k };
}

/** The stored, hashed identity of an evaluation run. */
export function evalRunConfig(options: EvalOptions, inputs: EvalInputs) {
  return {
    format: "lever.eval/1",
    dataset: { name: options.dataset, items: inputs.datasetItemsHash },
    index: { name: options.index, items: inputs.indexItemsHash },
    queries: options.queries,
    seed: options.seed,
    vlm: inputs.vlmId,
    order: options.order,
    pool: evalPool(options),
    // What the stored `vote` rows mean: similarity weights by rank at a calibrated (or given) scale.
    vote: { weighting: "rank", scale: options.voteScale ?? "calibrated" },
    selector: {
      poolSampler: options.poolSampler ?? null,
      k: options.k ?? null,
      embedding: options.selectorEmbedding ?? null,
    },
    embeddings: inputs.embeddings,
    metric: inputs.metric,
    ...(inputs.excluded !== undefined ? { excluded: inputs.excluded } : {}),
  };
}

export type EvalRunConfig = ReturnType<typeof evalRunConfig>;
