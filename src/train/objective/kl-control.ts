/**
 * The KL coefficient β of the GRPO loss: fixed, or adapted toward a target KL with the proportional
 * controller of Ziegler et al. 2019, "Fine-Tuning Language Models from Human Preferences"
 * (arXiv 1909.08593, section 2.2; openai/lm-human-preferences train_policy.py), as implemented by
 * `AdaptiveKLController` in TRL (its PPO trainer) and verl (verl/trainer/ppo/core_algos.py):
 *   e = clip(KL / targetKl − 1, −0.2, 0.2),   β ← β·(1 + e·n / horizon),
 * where n is the number of trajectories the KL was measured on (TRL and verl pass their batch
 * size), so β changes by at most ±20 %·n/horizon per update. The KL is the per-step estimate the
 * loss reports.
 * The state (β) is serialisable so a resumed run continues with the same coefficient.
 *
 * Defaults: β = 0.04 offline (the DeepSeekMath GRPO paper, arXiv 2402.03300) and 0.5 online (measured;
 * grpo-settings.ts MODE_DEFAULTS fills an unset β when a run's settings are resolved); targetKl 0.05 nats per step,
 * a moderate move of a pointer distribution over tens of candidates; horizon 10000 (TRL).
 * The controller takes only resolved settings (`ResolvedKlControl`, β given): an unresolved config does
 * not compile.
 */
import { z } from "zod";

/** β when `beta` is unset: offline and online GRPO (grpo-settings.ts MODE_DEFAULTS fills it). */
export const KL_BETA_DEFAULT = { offline: 0.04, online: 0.5 } as const;

export const KlControlSchema = z
  .object({
    kind: z.enum(["fixed", "adaptive"]).default("fixed").describe("Keep β fixed, or adapt it toward targetKl"),
    beta: z
      .number()
      .min(0)
      .optional()
      .describe(
        `KL coefficient β (initial value when adaptive); 0 = no KL term; default ${KL_BETA_DEFAULT.offline}, with --online ${KL_BETA_DEFAULT.online} (docs/training.md)`,
      ),
    targetKl: z
      .number()
      .positive()
      .default(0.05)
      .meta({ flag: "target-kl", description: "adaptive: KL per step that β is steered toward" }),
    horizon: z.number().positive().default(10000).describe("adaptive: trajectories over which β may change by ±20 %"),
  })
  .strict()
  .refine((c) => c.kind === "fixed" || c.beta === undefined || c.beta > 0, {
    message: "an adaptive β must start above 0 (it is adjusted multiplicatively); set beta, e.g. 0.04",
    path: ["beta"],
  });
export type KlControlConfig = z.infer<typeof KlControlSchema>;
/** The settings with β filled (grpo-settings.ts `resolveModeDefaults`): what the controller runs on. */
export type ResolvedKlControl = Required<KlControlConfig>;

export interface KlControlState {
  beta: number;
}

export class KlController {
  beta: number;

  constructor(
    readonly config: ResolvedKlControl,
    state?: KlControlState,
  ) {
    this.beta = state === undefined ? config.beta : state.beta;
  }

  /** Records the KL measured on `n` trajectories; returns the β for the next step. */
  update(kl: number, n: number): number {
    if (this.config.kind === "adaptive" && Number.isFinite(kl)) {
      const e = Math.min(0.2, Math.max(-0.2, kl / this.config.targetKl - 1));
      this.beta *= 1 + (e * n) / this.config.horizon;
    }
    return this.beta;
  }

  /** Serializable state (for resuming). */
  state(): KlControlState {
    return { beta: this.beta };
  }
}
