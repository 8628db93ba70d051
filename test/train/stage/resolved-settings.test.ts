/**
 * Every setting resolved once (issue 26, point 3): what the stages run on is a resolved type in which
 * no defaulted setting is still optional, so a default filled later — at the place that reads it — is
 * a compile error (the type half, checked by `npm run typecheck`), and a new optional setting left out
 * of the resolution fails here (the run-time half, every leaf field of each stage's schema).
 *
 * A resolved config may leave unset only what is not known from the settings themselves (`UNSET`).
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { settingFields } from "../../../src/config/settings.js";
import type { BeamSearchSettings } from "../../../src/datagen/beams.js";
import type { RolloutSettings } from "../../../src/datagen/rollouts.js";
import { ExperimentSchema } from "../../../src/experiment/schema.js";
import { STAGE_TABLE, type StageEntry } from "../../../src/experiment/stages.js";
import type { SelectorConfig } from "../../../src/selector/config.js";
import type { ResolvedGrpoConfig } from "../../../src/train/objective/grpo-settings.js";
import type { KlController } from "../../../src/train/objective/kl-control.js";
import type { OnlineSampler } from "../../../src/train/objective/online.js";
import {
  type GrpoStageConfig,
  GrpoStageConfigSchema,
  RceStageConfigSchema,
  type ResolvedRlStageConfig,
  resolveSettings,
} from "../../../src/train/stage/rl-settings.js";
import { type SftConfig, SftConfigSchema } from "../../../src/train/stage/sft-run.js";

/** The dotted paths of the optional fields of `T`, nested objects included (arrays and records are leaves). */
type OptionalPaths<T, P extends string = ""> = {
  [K in keyof T & string]-?:
    | (Partial<Pick<T, K>> extends Pick<T, K> ? `${P}${K}` : never)
    | (NonNullable<T[K]> extends readonly unknown[]
        ? never
        : NonNullable<T[K]> extends object
          ? string extends keyof NonNullable<T[K]>
            ? never
            : OptionalPaths<NonNullable<T[K]>, `${P}${K}.`>
          : never);
}[keyof T & string];

/**
 * What a resolved training config may leave unset, and why:
 *  - data.shots: the trajectory length of the data (the rollouts' or beams' length, the starting
 *    checkpoint's online), known when the data is read;
 *  - model.voteScale: calibrated on the index's annotations when training starts (recorded in the checkpoint);
 *  - model.featureInit / identity / poolAttention: absent unless set so they stay out of stage identities;
 *    the model options become a `SelectorConfig`, itself complete, when the starting weights are made.
 */
const UNSET = ["data.shots", "model.voteScale", "model.featureInit", "model.identity", "model.poolAttention"] as const;
type Unset = (typeof UNSET)[number];

describe("settings resolved once", () => {
  it("the resolved types leave no defaulted setting optional (a default filled later does not compile)", () => {
    expectTypeOf<OptionalPaths<ResolvedRlStageConfig<"grpo">>>().toEqualTypeOf<Unset>();
    expectTypeOf<OptionalPaths<ResolvedRlStageConfig<"rce">>>().toEqualTypeOf<Unset>();
    expectTypeOf<OptionalPaths<SftConfig>>().toEqualTypeOf<Unset>();
    // The given GRPO settings leave β and credit to the mode; resolved, they are set.
    expectTypeOf<OptionalPaths<GrpoStageConfig>>().toEqualTypeOf<Unset | "kl.beta" | "online.credit">();
    expectTypeOf<ResolvedGrpoConfig["kl"]["beta"]>().toEqualTypeOf<number>();
    // What the objectives' helpers, the data generators and the selector run on: complete.
    expectTypeOf<OptionalPaths<ConstructorParameters<typeof KlController>[0]>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalPaths<ConstructorParameters<typeof OnlineSampler>[0]>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalPaths<RolloutSettings>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalPaths<BeamSearchSettings>>().toEqualTypeOf<never>();
    expectTypeOf<OptionalPaths<SelectorConfig>>().toEqualTypeOf<never>();
    // Unresolved GRPO settings are refused where resolved ones are read.
    expectTypeOf<GrpoStageConfig>().not.toExtend<ResolvedRlStageConfig<"grpo">>();
  });

  const allow = new Set<string>(UNSET);
  /** The leaf settings of `schema` that `resolved` leaves unset (other than `UNSET`). */
  const unsetFields = (schema: Parameters<typeof settingFields>[0], resolved: unknown) =>
    settingFields(schema)
      .map((f) => f.path)
      .filter((path) => !allow.has(path.join(".")))
      .filter(
        (path) =>
          path.reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], resolved) === undefined,
      )
      .map((path) => path.join("."));

  it("every stage's resolved settings set every field of its schema, in every mode", () => {
    const grpo = (over: object) => resolveSettings({ stage: "grpo", config: GrpoStageConfigSchema.parse(over) }).config;
    const rce = resolveSettings({ stage: "rce", config: RceStageConfigSchema.parse({}) }).config;
    const modes: [string, Parameters<typeof settingFields>[0], unknown][] = [
      ["sft", SftConfigSchema, SftConfigSchema.parse({})],
      ["rce", RceStageConfigSchema, rce],
      ["grpo offline", GrpoStageConfigSchema, grpo({})],
      ["grpo online", GrpoStageConfigSchema, grpo({ online: { enabled: true } })],
      ["grpo, validation without answers", GrpoStageConfigSchema, grpo({ validation: { answers: false } })],
    ];
    for (const [mode, schema, resolved] of modes) expect(unsetFields(schema, resolved), mode).toEqual([]);
    expect(grpo({}).kl.beta).toBe(0.04);
    expect(grpo({ online: { enabled: true } }).online.credit).toBe("prefix");
  });

  it("the plan's identities hash the experiment's training sections resolved the same way", () => {
    const experiment = ExperimentSchema.parse({
      name: "x",
      data: { synth: {} },
      sft: {},
      rce: {},
      grpo: {},
      online: {},
    });
    for (const stage of ["sft", "rce", "grpo", "online"] as const) {
      const entry = STAGE_TABLE[stage] as StageEntry<typeof stage>;
      const section = experiment[stage] as NonNullable<(typeof experiment)[typeof stage]>;
      const resolved = entry.filled ? entry.filled(section) : section;
      expect(unsetFields(ExperimentSchema.shape[stage].unwrap(), resolved), stage).toEqual([]);
    }
  });
});
