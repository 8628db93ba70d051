/**
 * RL training groups from a rollout set: per query, its pool resolved in the selector sources
 * (src/selector/inputs.ts) and ALL its scored trajectories as pool positions in selection order,
 * with their rewards. Failed trajectories (`evalFailed`) are left out and counted; a query whose
 * trajectories all failed is dropped and counted. The pool is the rollout set's own (our rollouts
 * store it) or, for imported files without one, the pool set's; when both exist they must agree, so
 * a selector is always trained on the pool it will choose from at test time. Online GRPO's groups
 * are the chosen queries of a pool set with their pools and no trajectories yet (`buildOnlineGroups`).
 */
import { compareQuestionIds, type VqaItem } from "../../data/item.js";
import type { PoolSet } from "../../data/pool-set.js";
import { type SubsetSpec, selectSubset } from "../../data/splits.js";
import type { RolloutSet } from "../../data/trajectories.js";
import { type RewardConfig, scoredTrajectories, trajectoryReward } from "../../icl/rewards.js";
import { type ResolvedPool, resolvePool, type SelectorSources } from "../../selector/inputs.js";
import { LeverError } from "../../util/errors.js";
import { poolPositions, type QueryGroup, trajectoryLength } from "./groups.js";

/** A query group whose rewards are known (RL stages). */
export interface RlGroup extends QueryGroup {
  /** Raw (clipped, unnormalised) reward of each trajectory (with prefix credit: its reward-to-go at step 1). */
  rewards: number[];
  /** Prefix credit only (online): reward-to-go of every trajectory at every step [trajectory][step]. */
  returns?: number[][];
  /** How each trajectory was proposed (greedy, beam, sample, retrieval, random, …; "" when unknown). */
  methods: string[];
}

export interface RlDataStats {
  queries: number;
  trajectories: number;
  shots: number;
  K: number;
  /** Trajectories left out because their VLM call failed. */
  failedTrajectories: number;
  /** Queries with no scored trajectory left. */
  droppedQueries: number;
  /** Queries whose rewards are all equal (no group-relative signal). */
  zeroVarianceQueries: number;
  /** Share of trajectories with accuracy > 0. */
  positiveFraction: number;
}

export interface RlDataOptions {
  reward: RewardConfig;
  /** Trajectory length; default: the rollouts' (which must then all have one length). */
  shots?: number;
  files: { rollouts: string; pools: string };
}

export function buildRlGroups(
  rollouts: RolloutSet,
  pools: PoolSet | null,
  sources: SelectorSources,
  opts: RlDataOptions,
): { groups: RlGroup[]; stats: RlDataStats } {
  const lengths = Object.values(rollouts.queries).flatMap((q) => q.trajectories.map((t) => t.selected.length));
  const shots = trajectoryLength(lengths, opts.shots, "trajectories", opts.files.rollouts);
  const groups: RlGroup[] = [];
  const counts = { failedTrajectories: 0, droppedQueries: 0, positives: 0, zeroVarianceQueries: 0 };
  for (const queryId of Object.keys(rollouts.queries).sort(compareQuestionIds)) {
    const query = rollouts.queries[queryId];
    const pool = poolOf(queryId, query.pool, pools, opts.files);
    const resolved = resolvePool(sources, queryId, pool, {
      queryFile: opts.files.rollouts,
      poolFile: opts.files.pools,
      poolField: "pool",
    });
    const { kept, failed } = scoredTrajectories(query.trajectories);
    counts.failedTrajectories += failed;
    if (kept.length === 0) {
      counts.droppedQueries++;
      continue;
    }
    const group = rlGroup(resolved, kept, shots, opts);
    counts.positives += kept.filter(({ trajectory }) => (trajectory.vqaAccScore ?? 0) > 0).length;
    if (group.rewards.every((r) => r === group.rewards[0])) counts.zeroVarianceQueries++;
    groups.push(group);
  }
  const trajectories = groups.reduce((n, g) => n + g.trajectories.length, 0);
  return {
    groups,
    stats: {
      queries: groups.length,
      trajectories,
      shots,
      K: groups.reduce((m, g) => Math.max(m, g.candRows.length), 0),
      failedTrajectories: counts.failedTrajectories,
      droppedQueries: counts.droppedQueries,
      zeroVarianceQueries: counts.zeroVarianceQueries,
      positiveFraction: trajectories === 0 ? 0 : counts.positives / trajectories,
    },
  };
}

/** A query's group from its scored trajectories: positions in its pool, rewards and how each was proposed. */
function rlGroup(
  resolved: ResolvedPool,
  kept: ReturnType<typeof scoredTrajectories>["kept"],
  shots: number,
  opts: RlDataOptions,
): RlGroup {
  const { queryId } = resolved;
  const position = new Map(resolved.poolIds.map((id, j) => [id, j]));
  const trajectories = kept.map(({ trajectory, index }) => {
    const at = (field: string) => ({
      file: opts.files.rollouts,
      record: queryId,
      field: `trajectories[${index}].${field}`,
    });
    if (trajectory.selected.length < shots)
      throw new LeverError(
        `trajectory has ${trajectory.selected.length} ICDs, fewer than ${shots} shots`,
        at("selected"),
      );
    const positions = poolPositions(position, trajectory.selected, shots);
    if (!(positions instanceof Int32Array))
      throw new LeverError(
        `ICD "${trajectory.selected[positions.missing]}" is not in the query's pool (were the rollouts made with another pool set?)`,
        at(`selected[${positions.missing}]`),
      );
    return positions;
  });
  const rewards = kept.map(({ trajectory, index }) =>
    trajectoryReward(trajectory, opts.reward, { file: opts.files.rollouts, queryId, index }),
  );
  const best = rewards.reduce((b, r, i) => (r > rewards[b] ? i : b), 0);
  return {
    ...resolved,
    trajectories,
    weights: trajectories.map(() => 1),
    rewards,
    methods: kept.map(({ trajectory }) => trajectory.genMethod ?? ""),
    best,
  };
}

/** Online GRPO's queries: the `subset` of the dataset's items that have a pool, drawn with `seed`. */
export function onlineQueries(
  items: readonly VqaItem[],
  pools: PoolSet,
  subset: SubsetSpec | string,
  seed: number,
): VqaItem[] {
  return selectSubset(
    items.filter((item) => pools.pools[item.questionId] !== undefined),
    subset,
    seed,
  );
}

/** Their question ids (what `lever run`'s guard leaves out). */
export function onlineQueryIds(
  items: readonly VqaItem[],
  pools: PoolSet,
  subset: SubsetSpec | string,
  seed: number,
): string[] {
  return onlineQueries(items, pools, subset, seed).map((item) => item.questionId);
}

/**
 * Online GRPO's groups: the chosen queries (`subset` of the dataset's items that have a pool, drawn
 * with `seed`) with their pools resolved and no trajectories yet — they are sampled during training.
 */
export function buildOnlineGroups(
  items: readonly VqaItem[],
  pools: PoolSet,
  sources: SelectorSources,
  subset: SubsetSpec | string,
  seed: number,
  shots: number,
): { groups: RlGroup[]; stats: RlDataStats } {
  const chosen = onlineQueries(items, pools, subset, seed);
  const groups: RlGroup[] = chosen.map((item) => ({
    ...resolvePool(sources, item.questionId, pools.pools[item.questionId]),
    trajectories: [],
    rewards: [],
    methods: [],
    weights: [],
    best: 0,
  }));
  return {
    groups,
    stats: {
      queries: groups.length,
      trajectories: 0,
      shots,
      K: pools.k,
      failedTrajectories: 0,
      droppedQueries: 0,
      zeroVarianceQueries: 0,
      positiveFraction: Number.NaN,
    },
  };
}

function poolOf(
  queryId: string,
  own: readonly string[] | undefined,
  pools: PoolSet | null,
  files: { rollouts: string; pools: string },
): readonly string[] {
  const fromSet = pools?.pools[queryId];
  if (own !== undefined && fromSet !== undefined) {
    if (own.length !== fromSet.length || own.some((id, j) => fromSet[j] !== id))
      throw new LeverError(
        "the rollouts' pool of this query differs from the pool set's (pass the pool set the rollouts were made with)",
        { file: files.pools, record: queryId, field: "pools" },
      );
    return own;
  }
  const pool = own ?? fromSet;
  if (pool === undefined)
    throw new LeverError("query has no pool in the rollouts nor in the pool set", {
      file: files.pools,
      record: queryId,
      field: "pools",
    });
  return pool;
}
