/**
 * The settings of the RL stages (`lever train rce`, `lever train grpo`), one source of truth for flags,
 * help, experiment files and stored runs: what a run reads (`RlInputsSchema`), each stage's whole config
 * with its defaults — the common sections (model, reward, data, validation, optimiser) around the
 * objective's own settings (`RceSchema`, src/train/objective/rl-objectives.ts; `GrpoSchema` with its
 * cross-field check `grpoSettingsProblem`, src/train/objective/grpo-settings.ts) — and the "auto"
 * best-epoch metric.
 *
 * A stage's settings travel as `RlStageSettings`, tagged with the stage ("rce" | "grpo"). What differs
 * between the stages is looked up in a per-stage record by the tag (here `STAGE_SETTINGS`, in
 * rl-wiring.ts `RL_WIRING`, the wiring's), so the stage narrows without casts or `stage === …` chains.
 *
 * Resolved once: `resolveSettings` turns given settings into `ResolvedRlStageSettings` — GRPO's
 * mode-dependent β and credit filled (`resolveModeDefaults`, the type `ModeResolved` makes those
 * sections `Required`), the "auto" metric named — and the wiring, the objectives, the KL controller and
 * the online sampler take only the resolved types, so a default left unfilled is a compile error
 * (test/train/stage/resolved-settings.test.ts lists what a resolved config may still leave unset, and why).
 */
import { z } from "zod";
import { CHECKPOINT_REF_HELP } from "../../icl/checkpoint-ref.js";
import { RewardSchema } from "../../icl/rewards.js";
import { RunNameSchema } from "../../store/runs.js";
import { LeverError } from "../../util/errors.js";
import { type ParseLocation, parseOrThrow } from "../../util/validate.js";
import { FEATURE_LR, optimSchema } from "../loop/loop.js";
import { TrainingFields } from "../loop/run.js";
import {
  GrpoSchema,
  grpoSettingsProblem,
  type ModeResolved,
  resolveModeDefaults,
  type SettingsProblem,
} from "../objective/grpo-settings.js";
import type { ResolvedOnlineConfig } from "../objective/online.js";
import { RceSchema } from "../objective/rl-objectives.js";
import { TrainingInputFields } from "./inputs.js";

/** `--init random`: start from a seeded random init (said explicitly; RCE and GRPO otherwise need a checkpoint). */
export const RANDOM_INIT = "random";

/** What an RL run reads (not part of the hashed training config). */
export const RlInputsSchema = z
  .object({
    rollouts: z
      .string()
      .min(1)
      .optional()
      .describe("rollout set: a name under artifacts/rollouts/, or a file (not needed with --online)"),
    pools: z
      .string()
      .min(1)
      .optional()
      .describe(
        "pool set the rollouts were drawn from (needed when the rollouts do not carry their pools, and with --online)",
      ),
    ...TrainingInputFields,
    init: z
      .string()
      .min(1)
      .optional()
      .describe(
        `starting checkpoint, required: ${CHECKPOINT_REF_HELP} (e.g. sft-0001, the SFT run's best), or random for a seeded random init`,
      ),
    reference: z
      .string()
      .min(1)
      .optional()
      .describe(`GRPO: frozen KL reference checkpoint, ${CHECKPOINT_REF_HELP} (default: the starting weights)`),
    name: RunNameSchema.optional().describe("run name"),
  })
  .strict();
export type RlInputs = z.output<typeof RlInputsSchema>;

const RlDataSchema = z
  .object({
    valFraction: TrainingFields.valFraction,
    shots: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("trajectory length (default: the rollouts' length; longer trajectories are cut)"),
  })
  .strict();

const ValidationSchema = z
  .object({
    answers: z
      .boolean()
      .default(true)
      .describe(
        "answer the validation queries with the VLM after every epoch (valAccuracy: the honest selection metric; cached)",
      ),
  })
  .strict();

const common = {
  model: TrainingFields.model,
  reward: RewardSchema.meta({ flagPrefix: "reward" }).default(RewardSchema.parse({})),
  data: RlDataSchema.default(RlDataSchema.parse({})),
  validation: ValidationSchema.meta({ flagPrefix: "validation" }).default(ValidationSchema.parse({})),
  seed: TrainingFields.seed,
  dtype: TrainingFields.dtype,
};

/**
 * "auto" selects the best epoch by valAccuracy when the VLM answers the validation queries, by valRce
 * otherwise (see `resolveSettings`).
 */
const AUTO_METRIC = "auto";

/**
 * The RL stages' optimiser defaults: 5 epochs, weight decay 0.01, constant LR, the "auto" best-epoch
 * metric, the answer features' score weights at `featureLr`× the rate (FEATURE_LR).
 */
const rlOptim = (lr: number, featureLr: number) =>
  optimSchema({
    epochs: 5,
    lr,
    weightDecay: 0.01,
    schedule: { kind: "constant", warmupRatio: 0, minLrRatio: 0 },
    metric: AUTO_METRIC,
    groupLr: { features: featureLr },
  });

const rceOptim = rlOptim(1e-4, FEATURE_LR.supervised);
export const RceStageConfigSchema = z
  .object({
    ...common,
    optim: rceOptim.default(rceOptim.parse({})),
    ...RceSchema.shape,
  })
  .strict();
export type RceStageConfig = z.output<typeof RceStageConfigSchema>;

const grpoOptim = rlOptim(3e-5, FEATURE_LR.grpo);
export const GrpoStageConfigSchema = z
  .object({
    ...common,
    optim: grpoOptim.default(grpoOptim.parse({})),
    ...GrpoSchema.shape,
  })
  .strict();
export type GrpoStageConfig = z.output<typeof GrpoStageConfigSchema>;

interface RlStageConfigs {
  rce: RceStageConfig;
  grpo: GrpoStageConfig;
}
export type RlStage = keyof RlStageConfigs;
export type RlStageConfig<S extends RlStage = RlStage> = RlStageConfigs[S];

/** A stage's config tagged with its stage; `RlStageSettings<"grpo">` is GRPO's, `RlStageSettings` either. */
export type RlStageSettings<S extends RlStage = RlStage> = { [K in S]: { stage: K; config: RlStageConfigs[K] } }[S];

export type ResolvedGrpoStageConfig = ModeResolved<GrpoStageConfig>;

/**
 * Each stage's config as `resolveSettings` hands it on — the only type the stage's wiring, objectives and
 * controllers take (RCE has no mode-dependent setting; its "auto" metric is resolved like GRPO's).
 */
interface ResolvedRlStageConfigs {
  rce: RceStageConfig;
  grpo: ResolvedGrpoStageConfig;
}
export type ResolvedRlStageConfig<S extends RlStage = RlStage> = ResolvedRlStageConfigs[S];
export type ResolvedRlStageSettings<S extends RlStage = RlStage> = {
  [K in S]: { stage: K; config: ResolvedRlStageConfigs[K] };
}[S];

/** What each stage's settings have of their own (`C` as given, `R` resolved). */
interface StageSettings<C, R> {
  schema: z.ZodType<C>;
  /** Online GRPO's settings, or null (RCE, offline GRPO). */
  online(config: R): ResolvedOnlineConfig | null;
  /** The cross-field problem of the config, if any. */
  problem(config: C): SettingsProblem | null;
  /** The config with its unset mode-dependent defaults filled. */
  fill(config: C): R;
}

const STAGE_SETTINGS: { [S in RlStage]: StageSettings<RlStageConfigs[S], ResolvedRlStageConfigs[S]> } = {
  rce: { schema: RceStageConfigSchema, online: () => null, problem: () => null, fill: (config) => config },
  grpo: {
    schema: GrpoStageConfigSchema,
    online: (config) => (config.online.enabled ? config.online : null),
    problem: grpoSettingsProblem,
    fill: (config) => resolveModeDefaults(config),
  },
};

/** Online GRPO's settings, or null (RCE, offline GRPO). */
export function onlineOf<S extends RlStage>(settings: ResolvedRlStageSettings<S>): ResolvedOnlineConfig | null {
  return STAGE_SETTINGS[settings.stage].online(settings.config);
}

/** A stage's stored config, parsed with that stage's schema (problems name `where`). */
export function parseRlSettings<S extends RlStage>(
  stage: S,
  config: unknown,
  where: ParseLocation,
): RlStageSettings<S> {
  return { stage, config: parseOrThrow(STAGE_SETTINGS[stage].schema, config, where) };
}

/**
 * The one place a stage's settings are resolved: the stage's cross-field checks, the mode-dependent
 * defaults filled, then the "auto" best-epoch metric resolved. Idempotent (a stored run's resolved
 * config resolves to itself).
 */
export function resolveSettings<S extends RlStage>(given: RlStageSettings<S>): ResolvedRlStageSettings<S> {
  const stage = STAGE_SETTINGS[given.stage];
  const problem = stage.problem(given.config);
  if (problem) throw new LeverError(problem.message, { field: problem.path.join(".") });
  const config = stage.fill(given.config);
  const settings = { ...given, config };
  if (config.optim.earlyStopping.metric !== AUTO_METRIC) return settings;
  if (onlineOf(settings) !== null && !config.validation.answers)
    throw new LeverError(
      "online GRPO has no stored trajectories to validate on, so its best epoch needs the VLM's answers: keep validation.answers on, or name a metric (optim.earlyStopping.metric)",
      { field: "validation.answers" },
    );
  const metric = config.validation.answers ? "valAccuracy" : "valRce";
  const optim = { ...config.optim, earlyStopping: { ...config.optim.earlyStopping, metric } };
  return { ...settings, config: { ...config, optim } };
}
