/**
 * What the RL objectives share, and RCE with its settings (`RceSchema`). Both run on the one training loop (src/train/loop/loop.ts) over
 * `RlObjectiveData`; GRPO, offline and online, is src/train/objective/grpo.ts.
 *
 * RCE (warm-up) — every trajectory of a query is a teacher-forced target weighted by softmax(R/τ)
 * (src/train/objective/rce.ts), τ following its schedule over the run's steps, rewards raw or normalised per
 * query; dropout as in SFT.
 */
import { z } from "zod";
import { normalizeGroup, type RewardConfig } from "../../icl/rewards.js";
import type { SelectorSources } from "../../selector/inputs.js";
import { type PointerSelector, sequenceLogProbs } from "../../selector/model.js";
import type { RlGroup } from "../data/rl-groups.js";
import { type Batch, buildBatch } from "../loop/batch.js";
import type { Objective } from "../loop/loop.js";
import { rceLoss, rceTemperature, TemperatureSchema } from "./rce.js";
import type { RlValidator } from "./rl-validate.js";

/** The RCE objective's settings: the temperature's schedule, raw or normalised rewards, or the best trajectory only. */
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

export interface RlObjectiveData {
  train: RlGroup[];
  sources: SelectorSources;
  batchQueries: number;
  validator: RlValidator;
}

/**
 * A batch's rows × S table [R·S] of a per-trajectory quantity: `value(b, t, s)` for row t of group b at
 * step s (S = 1 for one value per trajectory); 0 on padding rows.
 */
export function rowTable(batch: Batch, S: number, value: (b: number, t: number, s: number) => number): Float64Array {
  const out = new Float64Array(batch.trajectoryOf.length * S);
  for (let r = 0; r < batch.trajectoryOf.length; r++) {
    const t = batch.trajectoryOf[r];
    if (t < 0) continue;
    const b = Math.floor(r / batch.G);
    for (let s = 0; s < S; s++) out[r * S + s] = value(b, t, s);
  }
  return out;
}

export function rceObjective(
  model: PointerSelector,
  data: RlObjectiveData,
  cfg: RceConfig,
  reward: RewardConfig,
): Objective<RlGroup> {
  return {
    batchLoss(groups, ctx) {
      const batch = buildBatch(groups, data.sources, model.dtype);
      const enc = model.encode(batch.input, { training: true, rng: ctx.rng });
      const tf = model.teacherForce(enc, batch.G, batch.labels, batch.steps);
      const perGroup = groups.map((g) => (cfg.rewards === "raw" ? g.rewards : normalizeGroup(g.rewards, reward)));
      const rewards = rowTable(batch, 1, (b, t) => perGroup[b][t]); // normalised once per query, not per row
      const temperature = rceTemperature(cfg.temperature, ctx.step, ctx.totalSteps);
      return {
        loss: rceLoss(sequenceLogProbs(tf, batch.labels), rewards, batch.real, batch.G, {
          temperature,
          bestOnly: cfg.bestOnly,
        }),
        metrics: { temperature, rows: groups.reduce((n, g) => n + g.trajectories.length, 0) },
      };
    },
    validate: () => data.validator.validate(model),
  };
}
