/**
 * The two RL objectives on the one training loop (src/train/loop.ts):
 *
 * RCE (warm-up) — every trajectory of a query is a teacher-forced target weighted by softmax(R/τ)
 * (src/train/rce.ts), τ following its schedule over the run's steps, rewards raw or normalised per
 * query; dropout as in SFT.
 *
 * GRPO — group-relative advantages over ALL trajectories of a query (src/train/advantages.ts), the
 * clipped surrogate against a BEHAVIOUR policy and a KL penalty toward a separate frozen REFERENCE
 * (src/train/policy-loss.ts):
 *  - behaviour = a snapshot of the policy, refreshed at the start of every `ppoEpochs`-th epoch; its
 *    per-step log-probabilities of every training trajectory are computed once per refresh (the
 *    Lever-Plus trainer kept the pre-RCE weights for all epochs, so its ratios and KL measured the
 *    distance to a stale model);
 *  - reference = the starting checkpoint (or a named one), frozen; its log-probabilities are computed
 *    once. Both are evaluated with dropout off, and so is the policy unless `policyDropout` (Lever-Plus
 *    compared a dropout-0.5 policy with a dropout-free reference, which put noise into every ratio);
 *  - β fixed or adaptive (src/train/kl-control.ts); β = 0 removes the KL term;
 *  - optional curriculum: in the first `curriculum.epochs` epochs only each query's top-k trajectories
 *    by reward (the share of negative advantages left is reported);
 *  - zero-variance groups (all rewards equal) carry no policy gradient: counted per batch, and with
 *    `dropZeroVariance` left out of training altogether (DAPO dynamic sampling, offline).
 * The objective's state (β, the behaviour snapshot) is saved with every epoch so a resumed run
 * continues exactly.
 */
import { z } from "zod";
import { isDegenerate, normalizeGroup, type RewardConfig } from "../icl/rewards.js";
import { PointerSelector, sequenceLogProbs, stepLogProbs, stepLogSoftmax } from "../selector/model.js";
import { noGrad } from "../tensor/tensor.js";
import { AdvantageSchema, groupAdvantages, stepAdvantages } from "./advantages.js";
import { type Batch, buildBatch, chunk } from "./batch.js";
import type { EmbeddingTable } from "./data.js";
import { KlController, KlControlSchema } from "./kl-control.js";
import type { Objective, StepContext } from "./loop.js";
import { type OnlineSampler, OnlineSchema, type OnlineStats } from "./online.js";
import { PolicyLossSchema, policyLoss, stepEntropy } from "./policy-loss.js";
import { rceLoss, rceTemperature, TemperatureSchema } from "./rce.js";
import type { RlGroup } from "./rl-data.js";
import type { RlValidator } from "./rl-validate.js";
import type { ObjectiveState } from "./train-state.js";

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

export interface RlObjectiveData {
  train: RlGroup[];
  queryEmb: EmbeddingTable;
  indexEmb: EmbeddingTable;
  batchQueries: number;
  validator: RlValidator;
}

/**
 * A batch's rows × S table [R·S] of a per-trajectory quantity: `value(b, t, s)` for row t of group b at
 * step s (S = 1 for one value per trajectory); 0 on padding rows.
 */
function rowTable(batch: Batch, S: number, value: (b: number, t: number, s: number) => number): Float64Array {
  const out = new Float64Array(batch.trajectoryOf.length * S);
  for (let r = 0; r < batch.trajectoryOf.length; r++) {
    const t = batch.trajectoryOf[r];
    if (t < 0) continue;
    const b = Math.floor(r / batch.G);
    for (let s = 0; s < S; s++) out[r * S + s] = value(b, t, s);
  }
  return out;
}

/** No comparison anywhere in the group: equal rewards (with prefix credit: equal returns at every step). */
function degenerateGroup(g: RlGroup): boolean {
  const returns = g.returns;
  if (returns === undefined) return isDegenerate(g.rewards);
  return returns[0].every((_, s) => isDegenerate(returns.map((row) => row[s])));
}

export function rceObjective(
  model: PointerSelector,
  data: RlObjectiveData,
  cfg: RceConfig,
  reward: RewardConfig,
): Objective<RlGroup> {
  return {
    batchLoss(groups, ctx) {
      const batch = buildBatch(groups, data.queryEmb, data.indexEmb, model.dtype);
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

/** Per-step log-probabilities [G_g·S] of every group's trajectories under `policy` (eval mode). */
function groupLogProbs(policy: PointerSelector, groups: readonly RlGroup[], data: RlObjectiveData): Float64Array[] {
  const out: Float64Array[] = [];
  noGrad(() => {
    for (const part of chunk(groups, data.batchQueries)) {
      const batch = buildBatch(part, data.queryEmb, data.indexEmb, policy.dtype);
      const tf = policy.teacherForce(policy.encode(batch.input), batch.G, batch.labels, batch.steps);
      const lp = stepLogProbs(tf, batch.labels).data;
      const S = batch.steps;
      for (let b = 0; b < part.length; b++) {
        const n = part[b].trajectories.length;
        const own = new Float64Array(n * S);
        for (let i = 0; i < n; i++) for (let t = 0; t < S; t++) own[i * S + t] = lp[(b * batch.G + i) * S + t];
        out.push(own);
      }
    }
  });
  return out;
}

/** Same architecture, dtype and bit-identical weights: every forward pass gives the same numbers. */
function sameModel(a: PointerSelector, b: PointerSelector): boolean {
  if (a === b) return true;
  if (a.dtype !== b.dtype) return false;
  const keys = Object.keys(a.config) as (keyof PointerSelector["config"])[];
  if (keys.length !== Object.keys(b.config).length || keys.some((k) => a.config[k] !== b.config[k])) return false;
  for (const [name, p] of a.params) {
    const q = b.params.get(name)?.data;
    if (q === undefined || q.length !== p.data.length) return false;
    for (let i = 0; i < q.length; i++) if (!Object.is(p.data[i], q[i])) return false;
  }
  return true;
}

/** The trajectories of a group kept by the curriculum: the top k by reward (ties: listed order). */
function topK(g: RlGroup, k: number): number[] {
  return g.rewards
    .map((r, i) => [r, i] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, k)
    .map(([, i]) => i)
    .sort((a, b) => a - b);
}

export interface GrpoObjective extends Objective<RlGroup> {
  /** Current KL coefficient. */
  readonly beta: number;
}

/**
 * `online`: the batches' trajectories are sampled from the current policy and scored by `prepare`
 * (src/train/online.ts); the behaviour policy is then the policy itself (ratio 1) and the reference's
 * log-probabilities are computed per batch. Offline, both come from the tables computed per refresh.
 */
export function grpoObjective(
  model: PointerSelector,
  data: RlObjectiveData,
  cfg: GrpoConfig,
  reference: PointerSelector,
  online?: OnlineSampler,
): GrpoObjective {
  const behaviour = new PointerSelector(model.config, model.values(), model.dtype);
  const index = new Map(data.train.map((g, i) => [g.queryId, i]));
  const refLogp = online ? [] : groupLogProbs(reference, data.train, data);
  let oldLogp: Float64Array[] = [];
  let behaviourEpoch = -1;
  let sampled: OnlineStats | null = null;
  const kl = new KlController(cfg.kl);
  // A behaviour snapshot equal to the reference (the first refresh when the reference is the
  // starting checkpoint) has the reference's log-probabilities: the same pass would recompute them.
  const behaviourLogProbs = () =>
    sameModel(behaviour, reference) ? refLogp : groupLogProbs(behaviour, data.train, data);
  const refresh = (epoch: number) => {
    behaviour.load(model.values());
    behaviourEpoch = epoch;
    if (!online) oldLogp = behaviourLogProbs();
  };
  return {
    get beta() {
      return kl.beta;
    },
    startEpoch(epoch) {
      if (online) return;
      if (behaviourEpoch < 0 || epoch - behaviourEpoch >= cfg.ppoEpochs) refresh(epoch);
      else if (oldLogp.length === 0) oldLogp = behaviourLogProbs(); // resumed mid-cycle
    },
    ...(online
      ? {
          async prepare(groups: RlGroup[], ctx: StepContext) {
            const drawn = await online.sample(model, groups, ctx.rng.child(`online-${ctx.step}`));
            sampled = drawn.stats;
            return cfg.dropZeroVariance ? drawn.groups.filter((g) => !degenerateGroup(g)) : drawn.groups;
          },
        }
      : {}),
    batchLoss(groups, ctx) {
      const S = groups[0].trajectories[0].length;
      const curriculum = ctx.epoch < cfg.curriculum.epochs;
      const kept = groups.map((g) => (curriculum ? topK(g, cfg.curriculum.topK) : g.rewards.map((_, i) => i)));
      const views: RlGroup[] = groups.map((g, b) => ({
        ...g,
        trajectories: kept[b].map((i) => g.trajectories[i]),
        rewards: kept[b].map((i) => g.rewards[i]),
        ...(g.returns ? { returns: kept[b].map((i) => (g.returns as number[][])[i]) } : {}),
        methods: kept[b].map((i) => g.methods[i]),
        weights: kept[b].map(() => 1),
        best: 0,
      }));
      const batch = buildBatch(views, data.queryEmb, data.indexEmb, model.dtype);
      const enc = model.encode(batch.input, { training: cfg.policyDropout, rng: ctx.rng });
      const tf = model.teacherForce(enc, batch.G, batch.labels, batch.steps);
      const logSoftmax = stepLogSoftmax(tf);
      const logp = stepLogProbs(tf, batch.labels, logSoftmax);
      // Prefix credit (online): one advantage per step from the reward-to-go; else one per trajectory.
      const perStepCredit = views[0].returns !== undefined;
      const { advantages, stats } = perStepCredit
        ? stepAdvantages(
            views.map((v) => v.returns as number[][]),
            cfg.advantage,
          )
        : groupAdvantages(
            views.map((v) => v.rewards),
            cfg.advantage,
          );
      const sourceOf = groups.map((g) => index.get(g.queryId) as number);
      // The behaviour's or reference's table row of each batch row (the curriculum keeps a subset).
      const perStep = (source: Float64Array[]) =>
        rowTable(batch, S, (b, t, s) => source[sourceOf[b]][kept[b][t] * S + s]);
      // Online: the samples come from this very policy, so its (detached) log-probabilities are the behaviour's.
      const old = online ? Float64Array.from(logp.data) : perStep(oldLogp);
      const ref = online
        ? noGrad(() => {
            const refTf = reference.teacherForce(reference.encode(batch.input), batch.G, batch.labels, batch.steps);
            return Float64Array.from(stepLogProbs(refTf, batch.labels).data);
          })
        : perStep(refLogp);
      const beta = kl.beta;
      const { loss, diagnostics: d } = policyLoss(
        {
          logp,
          oldLogp: old,
          refLogp: ref,
          advantages: perStepCredit
            ? rowTable(batch, S, (b, t, s) => (advantages[b] as number[][])[t][s])
            : rowTable(batch, 1, (b, t) => (advantages[b] as number[])[t]),
          weights: batch.weights,
        },
        cfg.loss,
        beta,
      );
      const entropy = stepEntropy(tf, batch.weights, logSoftmax);
      const metrics: Record<string, number> = {
        policyLoss: d.policyLoss,
        kl: d.kl ?? Number.NaN,
        beta,
        klTerm: d.klTerm,
        klShare: d.klShare,
        advMean: d.advMean,
        advStd: d.advStd,
        advMaxAbs: d.advMaxAbs,
        zeroVarianceShare: stats.zeroVarianceGroups / stats.groups,
        lowAdvStdShare: stats.lowStdShare,
        ratioMean: d.ratioMean,
        ratioMin: d.ratioMin,
        ratioMax: d.ratioMax,
        clipLow: d.clipLow,
        clipHigh: d.clipHigh,
        entropy: entropy.reduce((a, v) => a + v, 0) / entropy.length,
        rows: stats.trajectories,
      };
      entropy.forEach((e, t) => {
        metrics[`entropy@${t + 1}`] = e;
      });
      if (sampled !== null) {
        metrics.sampledReward = sampled.meanReward;
        metrics.sampledAccuracy = sampled.meanAccuracy;
        metrics.sampleFailures = sampled.failed;
        metrics.droppedQueries = sampled.droppedQueries;
      }
      if (curriculum)
        metrics.curriculumNegatives =
          (advantages as (number | number[])[][]).flat().filter((a) => (typeof a === "number" ? a : a[0]) < 0).length /
          Math.max(1, stats.trajectories);
      return { loss, metrics };
    },
    afterStep(metrics) {
      kl.update(metrics.kl, metrics.rows);
    },
    validate: () => data.validator.validate(model),
    state(): ObjectiveState {
      const arrays = new Map<string, Float64Array>();
      for (const [name, v] of behaviour.values()) arrays.set(`behaviour.${name}`, Float64Array.from(v));
      return { json: { kl: kl.state(), behaviourEpoch }, arrays };
    },
    restore(state) {
      const json = state.json as { kl: { beta: number }; behaviourEpoch: number };
      kl.beta = json.kl.beta;
      behaviourEpoch = json.behaviourEpoch;
      const values = new Map<string, Float64Array>();
      for (const [name, v] of state.arrays)
        if (name.startsWith("behaviour.")) values.set(name.slice("behaviour.".length), v);
      behaviour.load(values);
      oldLogp = [];
    },
  };
}
