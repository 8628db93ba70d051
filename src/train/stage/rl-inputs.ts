/**
 * What an RL run reads, resolved: the starting checkpoint and KL reference as files (`startingFiles`:
 * a run RUN[:best|last|epoch-N] resolved to its file, `--init random` for a seeded init), the data it
 * trains on — stored rollouts (with their pool set when given) or, online, a pool set — with the
 * dataset of its queries and their prompt order, everything every training stage reads besides
 * (src/train/stage/inputs.ts: embeddings, files and their hashes), and the query groups built from it
 * (`rlGroups`, src/train/data/rl-groups.ts).
 */
import type { PoolSet } from "../../data/pool-set.js";
import type { PromptOrder, RolloutSet } from "../../data/trajectories.js";
import { resolveCheckpoint } from "../../icl/checkpoint-ref.js";
import { type ResolvedSet, resolvePoolSet, resolveRolloutSet } from "../../store/sets.js";
import type { Workspace } from "../../store/workspace.js";
import { LeverError } from "../../util/errors.js";
import { buildOnlineGroups, buildRlGroups, type RlDataStats, type RlGroup } from "../data/rl-groups.js";
import type { ResolvedOnlineConfig } from "../objective/online.js";
import { type TrainingInputs, trainingInputs } from "./inputs.js";
import {
  onlineOf,
  RANDOM_INIT,
  type ResolvedRlStageConfig,
  type ResolvedRlStageSettings,
  type RlInputs,
  type RlStage,
} from "./rl-settings.js";

/** The data a run trains on: stored rollouts (with the pool set when given), or online, a pool set. */
type RlData =
  | { rollouts: ResolvedSet<RolloutSet>; pools: ResolvedSet<PoolSet> | null; online: null }
  | { rollouts: null; pools: ResolvedSet<PoolSet>; online: ResolvedOnlineConfig };

export interface ResolvedRlInputs extends TrainingInputs {
  data: RlData;
  /** The dataset of the training queries (the rollouts' or the pools' queries). */
  queryDataset: string;
  promptOrder: PromptOrder;
}

/** Everything the run reads (its `inputs` as the stage was given them, the starting files resolved). */
export function resolveRlInputs<S extends RlStage>(
  ws: Workspace,
  inputs: RlInputs,
  settings: ResolvedRlStageSettings<S>,
): ResolvedRlInputs {
  const { data, queryDataset, promptOrder } = resolveData(ws, inputs, onlineOf(settings));
  const resolved = trainingInputs(ws, {
    stage: "rl",
    data: {
      ...(data.rollouts !== null ? { rollouts: data.rollouts.file } : {}),
      ...(data.pools !== null ? { pools: data.pools.file } : {}),
    },
    pools: data.pools,
    queryDataset,
    indexDataset: inputs.dataset,
    embedding: inputs.embedding,
    checkpoints: { init: inputs.init, reference: inputs.reference },
    model: settings.config.model,
    rewardMode: settings.config.reward.mode,
  });
  return { ...resolved, data, queryDataset, promptOrder };
}

/** The run's data set(s), the dataset of its queries and their prompt order. */
function resolveData(
  ws: Workspace,
  inputs: RlInputs,
  online: ResolvedOnlineConfig | null,
): { data: RlData; queryDataset: string; promptOrder: PromptOrder } {
  if (online !== null) {
    if (inputs.pools === undefined)
      throw new LeverError("online GRPO samples from each query's pool: give --pools", { field: "--pools" });
    const pools = resolvePoolSet(ws, inputs.pools);
    const data: RlData = { rollouts: null, pools, online };
    return { data, queryDataset: pools.set.queryDataset, promptOrder: online.order };
  }
  if (inputs.rollouts === undefined)
    throw new LeverError("give the rollouts to train on (or train online with --online)", { field: "--rollouts" });
  const rollouts = resolveRolloutSet(ws, inputs.rollouts);
  const pools = inputs.pools !== undefined ? resolvePoolSet(ws, inputs.pools) : null;
  const data: RlData = { rollouts, pools, online: null };
  return { data, queryDataset: rollouts.set.dataset, promptOrder: rollouts.set.promptOrder };
}

/**
 * The starting checkpoint and the KL reference as files (a training run RUN[:best|last|epoch-N]
 * resolved to its file). A starting point is required: a checkpoint, or `random` for a seeded init
 * (stored as no checkpoint, as runs made before this was required).
 */
export function startingFiles(ws: Workspace, stage: RlStage, inputs: RlInputs): RlInputs {
  const { init, reference, ...rest } = inputs;
  if (init === undefined)
    throw new LeverError(
      `${stage.toUpperCase()} starts from a checkpoint: give --init RUN (e.g. the SFT run: --init sft-0001) or a file, or --init random to train from a seeded random init`,
      { field: "--init" },
    );
  return {
    ...rest,
    ...(init !== RANDOM_INIT ? { init: resolveCheckpoint(ws, init, "--init") } : {}),
    ...(reference !== undefined ? { reference: resolveCheckpoint(ws, reference, "--reference") } : {}),
  };
}

/** The run's groups: from the rollouts, or (online) the chosen queries of the pool set without trajectories. */
export function rlGroups(
  ws: Workspace,
  inputs: ResolvedRlInputs,
  config: ResolvedRlStageConfig,
  initShots: number | undefined,
): { groups: RlGroup[]; stats: RlDataStats } {
  const { data } = inputs;
  if (data.rollouts !== null) {
    const built = buildRlGroups(data.rollouts.set, data.pools?.set ?? null, inputs.sources, {
      reward: config.reward,
      shots: config.data.shots,
      files: { rollouts: data.rollouts.file, pools: data.pools?.file ?? data.rollouts.file },
    });
    if (built.groups.length === 0)
      throw new LeverError("no query has a scored trajectory", { file: data.rollouts.file });
    return built;
  }
  const shots = config.data.shots ?? initShots;
  if (shots === undefined)
    throw new LeverError("online GRPO needs the number of shots: give --shots or start from a checkpoint (--init)", {
      field: "--shots",
    });
  const items = ws.loadItems(inputs.queryDataset);
  const built = buildOnlineGroups(items, data.pools.set, inputs.sources, data.online.queries, config.seed, shots);
  if (built.groups.length === 0) throw new LeverError("no query has a scored trajectory");
  return built;
}
