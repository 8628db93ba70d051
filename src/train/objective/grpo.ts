/**
 * The GRPO objective on the one training loop (src/train/loop/loop.ts): group-relative advantages over ALL
 * trajectories of a query (src/train/objective/advantages.ts), the clipped surrogate against a BEHAVIOUR policy
 * and a KL penalty toward a separate frozen REFERENCE (src/train/objective/policy-loss.ts). Two ways to get the
 * trajectories, each its own objective over the shared batch loss:
 *
 * Offline (`offlineGrpo`), on stored rollouts:
 *  - behaviour = a snapshot of the policy, refreshed at the start of every `ppoEpochs`-th epoch; its
 *    per-step log-probabilities of every training trajectory are computed once per refresh (the
 *    Lever-Plus trainer, docs/provenance.md#grpo, kept the pre-RCE weights for all epochs, so its
 *    ratios and KL measured the distance to a stale model);
 *  - reference = the starting checkpoint (or a named one), frozen; its log-probabilities are computed
 *    once. Both are evaluated with dropout off, and so is the policy unless `policyDropout` (Lever-Plus
 *    compared a dropout-0.5 policy with a dropout-free reference, which put noise into every ratio).
 * Online (`onlineGrpo`): every batch's trajectories are sampled from the current policy and scored in
 * `prepare` (src/train/objective/online.ts); the behaviour policy is then the policy itself (ratio 1) and the
 * reference's log-probabilities are computed per batch.
 * Both: β fixed or adaptive (src/train/objective/kl-control.ts), β = 0 removes the KL term; an optional
 * curriculum — in the first `curriculum.epochs` epochs only each query's top-k trajectories by reward
 * (the share of negative advantages left is reported); zero-variance groups (all rewards equal) carry
 * no policy gradient: counted per batch, and with `dropZeroVariance` left out of training (offline by
 * the stage, online per sampled batch — DAPO dynamic sampling). The objective's state (β, the
 * behaviour snapshot) is saved with every epoch so a resumed run continues exactly. Both take only
 * resolved settings (`ResolvedGrpoConfig`: β and credit filled for the mode, grpo-settings.ts).
 */
import { isDegenerate } from "../../icl/rewards.js";
import { PointerSelector, stepLogProbs, stepLogSoftmax, type TeacherForced } from "../../selector/model.js";
import { noGrad, type Tensor } from "../../tensor/tensor.js";
import type { RlGroup } from "../data/rl-groups.js";
import { type Batch, buildBatch, chunk } from "../loop/batch.js";
import type { Objective, StepContext } from "../loop/loop.js";
import type { ObjectiveState } from "../loop/train-state.js";
import { type AdvantageStats, groupAdvantages, stepAdvantages } from "./advantages.js";
import type { ResolvedGrpoConfig } from "./grpo-settings.js";
import { KlController } from "./kl-control.js";
import type { OnlineSampler, OnlineStats } from "./online.js";
import { type PolicyDiagnostics, policyLoss, stepEntropy } from "./policy-loss.js";
import { type RlObjectiveData, rowTable } from "./rl-objectives.js";

export interface GrpoObjective extends Objective<RlGroup> {
  /** Current KL coefficient. */
  readonly beta: number;
}

/** Offline GRPO on `data.train`'s stored trajectories, or online GRPO on trajectories `online` samples. */
export function grpoObjective(
  model: PointerSelector,
  data: RlObjectiveData,
  cfg: ResolvedGrpoConfig,
  reference: PointerSelector,
  online?: OnlineSampler,
): GrpoObjective {
  return online ? onlineGrpo(model, data, cfg, reference, online) : offlineGrpo(model, data, cfg, reference);
}

function offlineGrpo(
  model: PointerSelector,
  data: RlObjectiveData,
  cfg: ResolvedGrpoConfig,
  reference: PointerSelector,
): GrpoObjective {
  const shared = grpoState(model, cfg);
  const index = new Map(data.train.map((g, i) => [g.queryId, i]));
  const refLogp = groupLogProbs(reference, data.train, data);
  let oldLogp: Float64Array[] = [];
  // A behaviour snapshot equal to the reference (the first refresh when the reference is the
  // starting checkpoint) has the reference's log-probabilities: the same pass would recompute them.
  const behaviourLogProbs = () =>
    sameModel(shared.behaviour, reference) ? refLogp : groupLogProbs(shared.behaviour, data.train, data);
  return {
    get beta() {
      return shared.kl.beta;
    },
    startEpoch(epoch) {
      if (shared.behaviourEpoch < 0 || epoch - shared.behaviourEpoch >= cfg.ppoEpochs) {
        shared.refresh(epoch);
        oldLogp = behaviourLogProbs();
      } else if (oldLogp.length === 0) oldLogp = behaviourLogProbs(); // resumed mid-cycle
    },
    batchLoss(groups, ctx) {
      const pass = policyPass(model, groups, data, cfg, ctx);
      // The behaviour's or reference's table row of each batch row (the curriculum keeps a subset).
      const sourceOf = groups.map((g) => index.get(g.queryId) as number);
      const S = pass.steps;
      const perStep = (source: Float64Array[]) =>
        rowTable(pass.batch, S, (b, t, s) => source[sourceOf[b]][pass.kept[b][t] * S + s]);
      return grpoLoss(pass, { old: perStep(oldLogp), ref: perStep(refLogp) }, cfg, shared.kl.beta, null);
    },
    afterStep: shared.afterStep,
    validate: () => data.validator.validate(model),
    state: shared.state,
    restore(state) {
      shared.restore(state);
      oldLogp = [];
    },
  };
}

function onlineGrpo(
  model: PointerSelector,
  data: RlObjectiveData,
  cfg: ResolvedGrpoConfig,
  reference: PointerSelector,
  sampler: OnlineSampler,
): GrpoObjective {
  const shared = grpoState(model, cfg);
  let sampled: OnlineStats | null = null;
  return {
    get beta() {
      return shared.kl.beta;
    },
    async prepare(groups: RlGroup[], ctx: StepContext) {
      const drawn = await sampler.sample(model, groups, ctx.rng.child(`online-${ctx.step}`));
      sampled = drawn.stats;
      return cfg.dropZeroVariance ? drawn.groups.filter((g) => !degenerateGroup(g)) : drawn.groups;
    },
    batchLoss(groups, ctx) {
      const pass = policyPass(model, groups, data, cfg, ctx);
      const { batch } = pass;
      // The samples come from this very policy, so its (detached) log-probabilities are the behaviour's.
      const old = Float64Array.from(pass.logp.data);
      const ref = noGrad(() => {
        const refTf = reference.teacherForce(reference.encode(batch.input), batch.G, batch.labels, batch.steps);
        return Float64Array.from(stepLogProbs(refTf, batch.labels).data);
      });
      return grpoLoss(pass, { old, ref }, cfg, shared.kl.beta, sampled);
    },
    afterStep: shared.afterStep,
    validate: () => data.validator.validate(model),
    state: shared.state,
    restore: shared.restore,
  };
}

/** What offline and online GRPO keep across steps: β and the behaviour snapshot, saved with every epoch. */
function grpoState(model: PointerSelector, cfg: ResolvedGrpoConfig) {
  const kl = new KlController(cfg.kl);
  const behaviour = new PointerSelector(model.config, model.values(), model.dtype);
  const shared = {
    kl,
    behaviour,
    /** The epoch the snapshot was taken at (−1: the starting weights). */
    behaviourEpoch: -1,
    refresh(epoch: number) {
      behaviour.load(model.values());
      shared.behaviourEpoch = epoch;
    },
    afterStep(metrics: Record<string, number>) {
      kl.update(metrics.kl, metrics.rows);
    },
    state(): ObjectiveState {
      const arrays = new Map<string, Float64Array>();
      for (const [name, v] of behaviour.values()) arrays.set(`behaviour.${name}`, Float64Array.from(v));
      return { json: { kl: kl.state(), behaviourEpoch: shared.behaviourEpoch }, arrays };
    },
    restore(state: ObjectiveState) {
      const json = state.json as { kl: { beta: number }; behaviourEpoch: number };
      kl.beta = json.kl.beta;
      shared.behaviourEpoch = json.behaviourEpoch;
      const values = new Map<string, Float64Array>();
      for (const [name, v] of state.arrays)
        if (name.startsWith("behaviour.")) values.set(name.slice("behaviour.".length), v);
      behaviour.load(values);
    },
  };
  return shared;
}

/** The policy's forward pass over a batch: the curriculum's view of the groups, their batch, the log-probabilities. */
interface PolicyPass {
  /** The groups with only the trajectories the curriculum keeps (all after it). */
  views: RlGroup[];
  /** Per group, the indices of the kept trajectories. */
  kept: number[][];
  curriculum: boolean;
  /** Steps per trajectory. */
  steps: number;
  batch: Batch;
  tf: TeacherForced;
  logSoftmax: Tensor[];
  /** Per-step log-probabilities of the chosen positions [R, S] (differentiable). */
  logp: Tensor;
}

function policyPass(
  model: PointerSelector,
  groups: RlGroup[],
  data: RlObjectiveData,
  cfg: ResolvedGrpoConfig,
  ctx: StepContext,
): PolicyPass {
  const steps = groups[0].trajectories[0].length;
  const curriculum = ctx.epoch < cfg.curriculum.epochs;
  const kept = groups.map((g) => (curriculum ? topK(g, cfg.curriculum.topK) : g.rewards.map((_, i) => i)));
  const views = groups.map((g, b) => keptView(g, kept[b]));
  const batch = buildBatch(views, data.sources, model.dtype);
  const enc = model.encode(batch.input, { training: cfg.policyDropout, rng: ctx.rng });
  const tf = model.teacherForce(enc, batch.G, batch.labels, batch.steps);
  const logSoftmax = stepLogSoftmax(tf);
  const logp = stepLogProbs(tf, batch.labels, logSoftmax);
  return { views, kept, curriculum, steps, batch, tf, logSoftmax, logp };
}

/** A group with only the trajectories at `kept`. */
function keptView(g: RlGroup, kept: number[]): RlGroup {
  const { returns } = g;
  return {
    ...g,
    trajectories: kept.map((i) => g.trajectories[i]),
    rewards: kept.map((i) => g.rewards[i]),
    ...(returns ? { returns: kept.map((i) => returns[i]) } : {}),
    methods: kept.map((i) => g.methods[i]),
    weights: kept.map(() => 1),
    best: 0,
  };
}

/** The GRPO loss and step metrics of a pass, given the behaviour's and the reference's log-probabilities [R·S]. */
function grpoLoss(
  pass: PolicyPass,
  logProbs: { old: Float64Array; ref: Float64Array },
  cfg: ResolvedGrpoConfig,
  beta: number,
  sampled: OnlineStats | null,
): { loss: Tensor; metrics: Record<string, number> } {
  const { batch } = pass;
  const advantages = batchAdvantages(pass, cfg);
  const { loss, diagnostics } = policyLoss(
    {
      logp: pass.logp,
      oldLogp: logProbs.old,
      refLogp: logProbs.ref,
      advantages: advantages.table,
      weights: batch.weights,
    },
    cfg.loss,
    beta,
  );
  const entropy = stepEntropy(pass.tf, batch.weights, pass.logSoftmax);
  const metrics = grpoMetrics(diagnostics, advantages.stats, entropy, beta);
  if (sampled !== null) {
    metrics.sampledReward = sampled.meanReward;
    metrics.sampledAccuracy = sampled.meanAccuracy;
    metrics.sampleFailures = sampled.failed;
    metrics.droppedQueries = sampled.droppedQueries;
  }
  if (pass.curriculum)
    metrics.curriculumNegatives =
      advantages.first.filter((a) => a < 0).length / Math.max(1, advantages.stats.trajectories);
  return { loss, metrics };
}

/**
 * The advantages of a pass's trajectories as a row table: one per trajectory, or with prefix credit
 * (online) one per trajectory and step from the reward-to-go; and each trajectory's first one.
 */
function batchAdvantages(
  pass: PolicyPass,
  cfg: ResolvedGrpoConfig,
): { table: Float64Array; first: number[]; stats: AdvantageStats } {
  const returns = pass.views.map((v) => v.returns);
  if (allDefined(returns)) {
    const { advantages, stats } = stepAdvantages(returns, cfg.advantage);
    const table = rowTable(pass.batch, pass.steps, (b, t, s) => advantages[b][t][s]);
    return { table, first: advantages.flat().map((a) => a[0]), stats };
  }
  const { advantages, stats } = groupAdvantages(
    pass.views.map((v) => v.rewards),
    cfg.advantage,
  );
  return { table: rowTable(pass.batch, 1, (b, t) => advantages[b][t]), first: advantages.flat(), stats };
}

function grpoMetrics(
  d: PolicyDiagnostics,
  stats: AdvantageStats,
  entropy: number[],
  beta: number,
): Record<string, number> {
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
  return metrics;
}

/** Per-step log-probabilities [G_g·S] of every group's trajectories under `policy` (eval mode). */
function groupLogProbs(policy: PointerSelector, groups: readonly RlGroup[], data: RlObjectiveData): Float64Array[] {
  const out: Float64Array[] = [];
  noGrad(() => {
    for (const part of chunk(groups, data.batchQueries)) {
      const batch = buildBatch(part, data.sources, policy.dtype);
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

function allDefined<T>(values: readonly (T | undefined)[]): values is T[] {
  return values.every((v) => v !== undefined);
}

/** No comparison anywhere in the group: equal rewards (with prefix credit: equal returns at every step). */
function degenerateGroup(g: RlGroup): boolean {
  const returns = g.returns;
  if (returns === undefined) return isDegenerate(g.rewards);
  return returns[0].every((_, s) => isDegenerate(returns.map((row) => row[s])));
}
