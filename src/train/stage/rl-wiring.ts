/**
 * What the RL stages' wiring does differently per stage, looked up by the stage's tag (`RL_WIRING`): the
 * metrics on the progress line, the health checks of an epoch, the groups trained on (offline GRPO
 * leaves out the queries whose rewards are all equal) and the objective on the one training loop
 * (src/train/objective/rl-objectives.ts for RCE, src/train/objective/grpo.ts for GRPO). The stage itself
 * is src/train/stage/rl-stage.ts; the settings per stage are src/train/stage/rl-settings.ts.
 */
import type { PointerSelector } from "../../selector/model.js";
import { LeverError } from "../../util/errors.js";
import type { RlGroup } from "../data/rl-groups.js";
import type { Objective } from "../loop/loop.js";
import { grpoObjective } from "../objective/grpo.js";
import { type HealthWarning, healthWarnings } from "../objective/health.js";
import type { OnlineSampler } from "../objective/online.js";
import { type RlObjectiveData, rceObjective } from "../objective/rl-objectives.js";
import type { ResolvedRlStageConfig, RlStage } from "./rl-settings.js";

/** What the wiring does differently per stage (`C`: the stage's resolved config). */
interface StageWiring<C> {
  /** Metrics shown on the per-epoch progress line. */
  display: readonly string[];
  /** The health checks of an epoch's metrics. */
  health(online: boolean): (epoch: number, metrics: Record<string, number>) => HealthWarning[];
  /** The groups trained on, of those built (`rollouts`: the rollout file offline, null online). */
  trainGroups(config: C, groups: RlGroup[], rollouts: string | null): RlGroup[];
  objective(
    config: C,
    model: PointerSelector,
    data: RlObjectiveData,
    reference: PointerSelector,
    sampler: OnlineSampler | undefined,
  ): Objective<RlGroup>;
}

export const RL_WIRING: { [S in RlStage]: StageWiring<ResolvedRlStageConfig<S>> } = {
  rce: {
    display: ["trainLoss", "temperature", "valRce", "valTop1", "selectionChange", "valAccuracy", "valAccuracyGain"],
    health: () => (epoch, m) => healthWarnings(epoch, { selectionChange: m.selectionChange }),
    trainGroups: (_config, groups) => groups,
    objective: (config, model, data) => rceObjective(model, data, config, config.reward),
  },
  grpo: {
    display: [
      "trainLoss",
      "policyLoss",
      "kl",
      "beta",
      "klShare",
      "advStd",
      "zeroVarianceShare",
      "clipLow",
      "clipHigh",
      "entropy",
      "sampledAccuracy",
      "valRce",
      "selectionChange",
      "valAccuracy",
      "valAccuracyGain",
    ],
    health: (online) => (epoch, m) => healthWarnings(epoch, m, { onPolicy: online }),
    trainGroups: (config, groups, rollouts) =>
      config.dropZeroVariance && rollouts !== null ? informativeGroups(groups, rollouts) : groups,
    objective: (config, model, data, reference, sampler) => grpoObjective(model, data, config, reference, sampler),
  },
};

/** Offline GRPO without the queries whose rewards are all equal (they carry no policy gradient). */
function informativeGroups(groups: RlGroup[], file: string): RlGroup[] {
  const kept = groups.filter((g) => !g.rewards.every((r) => r === g.rewards[0]));
  if (kept.length < 2)
    throw new LeverError(
      `${groups.length - kept.length} of ${groups.length} queries have all-equal rewards and carry no policy gradient; use a denser reward (--reward-mode hybrid) or more diverse rollouts`,
      { file },
    );
  return kept;
}
