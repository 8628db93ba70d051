/**
 * The GRPO objective's own settings (`GrpoSchema`: advantages, policy loss, KL control, the behaviour
 * refresh, curriculum, zero-variance groups, online sampling, policy dropout), its defaults that depend on
 * whether it trains online (`MODE_DEFAULTS`, filled once by `resolveModeDefaults` into `ModeResolved`,
 * the only type the objective, the KL controller and the online sampler take) and its cross-field check
 * (`grpoSettingsProblem`). The stages' whole configs around it are src/train/stage/rl-settings.ts.
 */
import { z } from "zod";
import { AdvantageSchema } from "./advantages.js";
import { KL_BETA_DEFAULT, type KlControlConfig, KlControlSchema, type ResolvedKlControl } from "./kl-control.js";
import { CREDIT_DEFAULT, type OnlineConfig, OnlineSchema, type ResolvedOnlineConfig } from "./online.js";
import { PolicyLossSchema } from "./policy-loss.js";

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

/** The GRPO objective's settings resolved: β and credit filled for its mode (`resolveModeDefaults`). */
export type ResolvedGrpoConfig = ModeResolved<GrpoConfig>;

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
