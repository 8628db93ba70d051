/**
 * The experiment file format (`lever run FILE`): one declarative YAML or JSON object describing the
 * whole chain — data, pools, the VLM backend, beams, SFT, rollouts, RCE, GRPO (offline and online),
 * evaluation, comparison and report — validated by the SAME zod schemas the stage commands use (one
 * source for defaults, flags and help). A stage section takes exactly the keys of its command's
 * settings file minus the inputs the chain wires from earlier stages (datasets, artefact names,
 * checkpoints); a section the chain sets itself is rejected, not ignored. Each stage's section has the
 * stage's name (src/experiment/stages.ts). Loading, `--set` and sweeps: src/experiment/load.ts.
 */

import { z } from "zod";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { SubsetSpecSchema } from "../data/splits.js";
import { BeamsSettingsSchema } from "../datagen/beams-stage.js";
import { RolloutsSettingsSchema } from "../datagen/rollouts-stage.js";
import { EvalSettingsSchema } from "../eval/config.js";
import {
  REFERENCE_RETRIEVERS,
  RETRIEVER_KINDS,
  RETRIEVERS,
  retrieverHelp,
  retrieverKind,
} from "../icl/retriever-catalog.js";
import { checkPoolsSettings, PoolsFieldsSchema } from "../pools/stage.js";
import { CompareSettingsSchema } from "../report/options.js";
import { CaptionWorldParamsSchema } from "../sim/caption/params.js";
import { WorldParamsSchema } from "../sim/params.js";
import { CaptionImportSettingsSchema } from "../store/ingest/captions.js";
import { checkGrpoSettings } from "../train/objective/grpo-settings.js";
import { GrpoStageConfigSchema, RceStageConfigSchema } from "../train/stage/rl-settings.js";
import { SftConfigSchema } from "../train/stage/sft-run.js";
import { VlmSettingsSchema } from "../vlm/settings.js";

/**
 * The `compare` section: `lever compare`'s settings but the output format (the chain writes a table and
 * Markdown) and the seed groups (the chain groups the seeds of its variants itself).
 */
export const ExperimentCompareSchema = CompareSettingsSchema.omit({ format: true, seedGroups: true });

const SplitFilesSchema = z
  .object({
    questions: z.string().min(1).describe("official questions JSON file"),
    annotations: z.string().min(1).describe("official annotations JSON file"),
    images: z.string().min(1).optional().describe("COCO root folder (<dir>/<split>2014/COCO_<split>2014_<id>.jpg)"),
    subset: z.string().optional().describe("items kept: first:N, random:N or all (default all)"),
  })
  .strict();

/** One caption split: `lever data import-captions`' settings but the dataset name (the chain names it) and replace. */
const CaptionSplitSchema = CaptionImportSettingsSchema.omit({ name: true, replace: true });

const EmbeddingFilesSchema = z
  .partialRecord(z.enum(EMBEDDING_KINDS), z.string().min(1))
  .describe("embedding matrix per kind (.npy with ids beside it, or .safetensors)");

const DataSchema = z
  .object({
    synth: WorldParamsSchema.optional().describe("a synthetic world answered by the simulated VLM (docs/simulator.md)"),
    captionSynth: CaptionWorldParamsSchema.optional().describe(
      'a synthetic caption world captioned by the simulated VLM (docs/simulator.md, "Caption world"): the experiment\'s task is then caption',
    ),
    import: z
      .object({
        train: SplitFilesSchema,
        val: SplitFilesSchema,
        embeddings: z.object({ train: EmbeddingFilesSchema, val: EmbeddingFilesSchema }).strict(),
      })
      .strict()
      .optional()
      .describe("official VQA files and their embeddings (real data)"),
    importCaptions: z
      .object({
        train: CaptionSplitSchema.describe("the index (demonstrations and training queries)"),
        val: CaptionSplitSchema.describe("the evaluation images"),
        embeddings: z.object({ train: EmbeddingFilesSchema, val: EmbeddingFilesSchema }).strict(),
      })
      .strict()
      .optional()
      .describe(
        "COCO caption files (official or Karpathy's) and their embeddings (real data): the experiment's task is then caption (docs/captioning.md)",
      ),
  })
  .strict()
  .superRefine((d, ctx) => {
    if ([d.synth, d.captionSynth, d.import, d.importCaptions].filter((x) => x !== undefined).length !== 1)
      ctx.addIssue({
        code: "custom",
        path: [],
        message: "give exactly one of data.synth, data.captionSynth, data.import and data.importCaptions",
      });
  });

/** The retrievers `eval.baselines` takes: every kind but the trained selectors, which the chain adds. */
const BASELINE_KINDS = RETRIEVER_KINDS.filter((kind) => kind !== "selector");
/** The retrievers `guard.baselines` takes: what a deployment can run in the selector's place at a shot count. */
const GUARD_KINDS = BASELINE_KINDS.filter((kind) => kind !== "zero" && !REFERENCE_RETRIEVERS.includes(kind));

export const EvalSectionSchema = EvalSettingsSchema.omit({ dataset: true, index: true, run: true })
  .extend({
    baselines: z
      .array(z.string().min(1))
      .default(["zero", "random", "topk-image", "topk-text", "topk-joint"])
      .describe(`baseline retrievers evaluated beside the trained selectors: ${retrieverHelp(BASELINE_KINDS)}`),
  })
  // Set by the chain: the trained selectors are the retrievers, and every pool is built like the training pools.
  .omit({ retrievers: true, k: true, poolSampler: true, selectorEmbedding: true });

/** The `guard` section (src/experiment/guard.ts: do no harm). */
export const GuardSectionSchema = z
  .object({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        "validate each variant's final selector (and the guard's baselines) against the top-k prior on training questions no stage trained on; at each shot count the final method is the best of those that significantly beat it there, the prior where none did (docs/experiments.md)",
      ),
    queries: SubsetSpecSchema.default("random:1000").describe(
      "training questions the guard asks (drawn from those no stage of the variant trained on; fewer when fewer are left)",
    ),
    margin: z
      .number()
      .min(0)
      .max(100)
      .default(0)
      .describe(
        "points the lower end of a candidate's 95 % paired bootstrap interval (selector or guard baseline − prior, on the guard's questions) must exceed for it to be chosen at a shot count (0: significantly better than the prior)",
      ),
    baselines: z
      .array(
        z.string().refine((name) => (GUARD_KINDS as readonly string[]).includes(retrieverKind(name) ?? ""), {
          message: `a guard baseline is one of ${GUARD_KINDS.flatMap((k) => RETRIEVERS[k].names).join(", ")} (no-training retrievers a deployment can run)`,
        }),
      )
      .optional()
      .describe(
        "no-training retrievers the final method may also be, validated on the same questions: at each shot count the final method is, of the selector and these, the one with the largest gain among those significantly better than the prior (see margin), else the prior ([]: selector or prior only). Default: the task's — [vote] for VQA, [consensus] for captions",
      ),
  })
  .strict();
export type GuardSettings = z.output<typeof GuardSectionSchema>;

export const ExperimentSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' and '-' only")
      .describe("experiment name (names its outputs)"),
    data: DataSchema,
    embedding: z.enum(EMBEDDING_KINDS).default("joint").describe("embedding the selectors read"),
    // The inputs the chain wires itself (datasets, artefact names, checkpoints) are not settings of a section.
    pools: PoolsFieldsSchema.omit({ queries: true, index: true, out: true, replace: true })
      .superRefine(checkPoolsSettings)
      .prefault({})
      .describe("each training query's pool (eval pools use the same sampler and K)"),
    vlm: VlmSettingsSchema.default(VlmSettingsSchema.parse({})),
    beams: BeamsSettingsSchema.omit({ dataset: true, pools: true, out: true, replace: true }).optional(),
    sft: SftConfigSchema.optional(),
    rollouts: RolloutsSettingsSchema.omit({
      dataset: true,
      pools: true,
      checkpoint: true,
      embedding: true,
      out: true,
      replace: true,
    }).optional(),
    rce: RceStageConfigSchema.optional(),
    grpo: GrpoStageConfigSchema.superRefine(checkGrpoSettings).optional(),
    online: GrpoStageConfigSchema.superRefine((s, ctx) => checkGrpoSettings(onlineGrpoConfig(s), ctx))
      .optional()
      .describe("online GRPO from the RCE checkpoint (grpo.online.enabled is set)"),
    guard: GuardSectionSchema.prefault({}).describe(
      "do no harm: the final selector is validated against the top-k prior on training questions no stage trained on (src/experiment/guard.ts)",
    ),
    eval: EvalSectionSchema.default(EvalSectionSchema.parse({})),
    compare: ExperimentCompareSchema.optional(),
    report: z
      .object({ enabled: z.boolean().default(true).describe("write the HTML report") })
      .strict()
      .prefault({}),
  })
  .strict();
export type Experiment = z.output<typeof ExperimentSchema>;

/** The GRPO settings of an experiment's `online` section: the section with online training switched on. */
export function onlineGrpoConfig<C extends { online: { enabled: boolean } }>(section: C): C {
  return { ...section, online: { ...section.online, enabled: true } };
}
