/**
 * The settings of the RL stages (`lever train rce`, `lever train grpo`), one source of truth for flags,
 * help, experiment files and stored runs: what a run reads (`RlInputsSchema`), the objectives' own
 * settings (`RceSchema`, `GrpoSchema`), each stage's whole config with its defaults, the cross-field
 * checks (`grpoSettingsProblem`) and the "auto" best-epoch metric.
 *
 * A stage's settings travel as `RlStageSettings`, tagged with the stage ("rce" | "grpo"). What differs
 * between the stages is looked up in a per-stage record by the tag (here `STAGE_SETTINGS`, in
 * rl-stage.ts the wiring's), so the stage narrows without casts or `stage === …` chains.
 *
 * Resolved once: `resolveSettings` turns given settings into `ResolvedRlStageSettings` — GRPO's
 * mode-dependent β and credit filled (`resolveModeDefaults`, the type `ModeResolved` makes those
 * sections `Required`), the "auto" metric named — and the wiring, the objectives, the KL controller and
 * the online sampler take only the resolved types, so a default left unfilled is a compile error
 * (test/train/resolved-settings.test.ts lists what a resolved config may still leave unset, and why).
 */
import { z } from "zod";
import { CHECKPOINT_REF_HELP } from "../../icl/checkpoint-ref.js";
import { RewardSchema } from "../../icl/rewards.js";
import { RunNameSchema } from "../../store/runs.js";
import { LeverError } from "../../util/errors.js";
import { type ParseLocation, parseOrThrow } from "../../util/validate.js";
import { FEATURE_LR, optimSchema } from "../loop/loop.js";
import { TrainingFields } from "../loop/run.js";
import { AdvantageSchema } from "../objective/advantages.js";
import {
  KL_BETA_DEFAULT,
  type KlControlConfig,
  KlControlSchema,
  type ResolvedKlControl,
} from "../objective/kl-control.js";
import { CREDIT_DEFAULT, type OnlineConfig, OnlineSchema, type ResolvedOnlineConfig } from "../objective/online.js";
import { PolicyLossSchema } from "../objective/policy-loss.js";
import { TemperatureSchema } from "../objective/rce.js";
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

export const RceSchema = z
  .object({
    temperature: TemperatureSchema.meta({ flagPrefix: "temperature" }).default(TemperatureSchema.parse({})),
    rewards: z
      .enum(["raw", "normalized"])
      .default("raw")
      .describe("weights from raw rewards, or from rewards normalised per query (reward.normalize)"),
    bestOnly: z.boolean().default(false).describe("plain cross-entropy on each query's best trajectory only"),
  })
  .strict();
export type RceConfig = z.infer<typeof RceSchema>;

export const GrpoSchema = z
  .object({
    advantage: AdvantageSchema.meta({ flagPrefix: "advantage" }).default(AdvantageSchema.parse({})),
    loss: PolicyLossSchema.meta({ flagPrefix: "loss" }).default(PolicyLossSchema.parse({})),
    kl: KlControlSchema.meta({ flagPrefix: "kl" }).default(KlControlSchema.parse({})),
    ppoEpochs: z
      .number()
      .int()
      .positive()
      .default(1)
      .describe("epochs between refreshes of the behaviour policy (the ratio's denominator); 1 = every epoch"),
    curriculum: z
      .object({
        epochs: z
          .number()
          .int()
          .nonnegative()
          .default(0)
          .describe("first epochs that train on each query's top-k only"),
        topK: z.number().int().positive().default(5).describe("trajectories kept per query during the curriculum"),
      })
      .strict()
      .meta({ flagPrefix: "curriculum" })
      .default({ epochs: 0, topK: 5 }),
    dropZeroVariance: z
      .boolean()
      .default(true)
      .describe("leave out queries whose rewards are all equal (they carry no policy gradient)"),
    online: OnlineSchema.meta({ flagPrefix: "online" }).default(OnlineSchema.parse({})),
    policyDropout: z
      .boolean()
      .default(false)
      .describe("apply dropout in the policy's forward pass (off: the ratio is exactly 1 at each refresh)"),
  })
  .strict();
export type GrpoConfig = z.infer<typeof GrpoSchema>;

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

/** The GRPO objective's settings resolved: β and credit filled for its mode (`resolveModeDefaults`). */
export type ResolvedGrpoConfig = ModeResolved<GrpoConfig>;
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

/** A cross-field problem of a stage's settings: the field to fix and how. */
export interface SettingsProblem {
  path: string[];
  message: string;
}

/**
 * GRPO defaults that depend on whether it trains online (docs/training.md, "What to expect"), filled
 * where a setting is left unset. Online: each pick credited with the rewards of the prefixes it is in
 * (the evaluation's fewer-shot prompts; S× the VLM calls) — it raised the one-shot gain on four of
 * the five simulator worlds, the fifth equal — and β 0.5, which holds the policy near its start: at 0.04 its 3–4-shot choices
 * drifted significantly below top-k. Offline: the DeepSeekMath β 0.04 and one reward per trajectory.
 */
export const MODE_DEFAULTS = {
  offline: { klBeta: KL_BETA_DEFAULT.offline, credit: CREDIT_DEFAULT.offline },
  online: { klBeta: KL_BETA_DEFAULT.online, credit: CREDIT_DEFAULT.online },
} as const;

/** The sections of a GRPO config with settings left unset until its mode is known (MODE_DEFAULTS fills them). */
interface ModeFields {
  online: OnlineConfig;
  kl: KlControlConfig;
}

/**
 * `C` with its mode-dependent settings filled: the `kl` and `online` sections complete (`Required`), so
 * a setting added to either without a default filled here does not compile where resolved settings are
 * read (the KL controller, the online sampler).
 */
export type ModeResolved<C extends ModeFields> = Omit<C, keyof ModeFields> & {
  kl: ResolvedKlControl;
  online: ResolvedOnlineConfig;
};

/** `config` with its unset mode-dependent settings filled from MODE_DEFAULTS (`mode`: the config's own). */
export function resolveModeDefaults<C extends ModeFields>(
  config: C,
  mode: keyof typeof MODE_DEFAULTS = config.online.enabled ? "online" : "offline",
): ModeResolved<C> {
  const d = MODE_DEFAULTS[mode];
  const online: ResolvedOnlineConfig = { ...config.online, credit: config.online.credit ?? d.credit };
  const kl: ResolvedKlControl = { ...config.kl, beta: config.kl.beta ?? d.klBeta };
  return { ...config, online, kl };
}

/**
 * The GRPO settings' cross-field problem, if any (one source for the schemas' refinements and the stage):
 * prefix credit needs the VLM's answers to every prefix (online) and one advantage per step (step ratios).
 */
export function grpoSettingsProblem(settings: ModeFields & { loss: { ratioLevel: string } }): SettingsProblem | null {
  const s = resolveModeDefaults(settings);
  if (s.online.credit !== "prefix") return null;
  if (!s.online.enabled)
    return {
      path: ["online", "credit"],
      message:
        "prefix credit asks the VLM about every prefix, so it trains online only: add --online (in an experiment file, use the online: section) or set online.credit to trajectory",
    };
  if (s.loss.ratioLevel !== "step")
    return {
      path: ["loss", "ratioLevel"],
      message:
        "prefix credit gives every step its own advantage: set loss.ratioLevel to step (or online.credit to trajectory)",
    };
  return null;
}

/** `grpoSettingsProblem` as a zod refinement. */
export function checkGrpoSettings(s: Parameters<typeof grpoSettingsProblem>[0], ctx: z.RefinementCtx): void {
  const problem = grpoSettingsProblem(s);
  if (problem) ctx.addIssue({ code: "custom", ...problem });
}

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
