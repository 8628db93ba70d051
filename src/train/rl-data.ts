/**
 * RL training groups from a rollout set: per query, its pool (rows of the index embedding table)
 * and ALL its scored trajectories as pool positions in selection order, with their rewards. Failed
 * trajectories (`evalFailed`) are left out and counted; a query whose trajectories all failed is
 * dropped and counted. The pool is the rollout set's own (our rollouts store it) or, for imported
 * files without one, the pool set's; when both exist they must agree, so a selector is always trained
 * on the pool it will choose from at test time.
 */
import { compareQuestionIds } from "../data/item.js";
import type { PoolSet } from "../data/pool-set.js";
import type { RolloutSet } from "../data/trajectories.js";
import { type RewardConfig, scoredTrajectories, trajectoryReward } from "../icl/rewards.js";
import { LeverError } from "../util/errors.js";
import type { EmbeddingTable, QueryGroup } from "./data.js";

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
  queryEmb: EmbeddingTable,
  indexEmb: EmbeddingTable,
  opts: RlDataOptions,
): { groups: RlGroup[]; stats: RlDataStats } {
  const lengths = new Set(Object.values(rollouts.queries).flatMap((q) => q.trajectories.map((t) => t.selected.length)));
  const shots = opts.shots ?? (lengths.size === 1 ? [...lengths][0] : undefined);
  if (shots === undefined)
    throw new LeverError(
      `trajectories have different lengths (${[...lengths].sort().join(", ")}); choose one with --shots`,
      { file: opts.files.rollouts },
    );
  const groups: RlGroup[] = [];
  let failedTrajectories = 0;
  let droppedQueries = 0;
  let positives = 0;
  let zeroVarianceQueries = 0;
  for (const queryId of Object.keys(rollouts.queries).sort(compareQuestionIds)) {
    const query = rollouts.queries[queryId];
    const pool = poolOf(queryId, query.pool, pools, opts.files);
    const queryRow = queryEmb.rowOf.get(queryId);
    if (queryRow === undefined)
      throw new LeverError("query has no embedding row", { file: opts.files.rollouts, record: queryId });
    const candRows = Int32Array.from(pool, (id, j) => {
      const row = indexEmb.rowOf.get(id);
      if (row === undefined)
        throw new LeverError(`candidate "${id}" has no embedding row`, {
          file: opts.files.pools,
          record: queryId,
          field: `pool[${j}]`,
        });
      return row;
    });
    const position = new Map(pool.map((id, j) => [id, j]));
    const { kept, failed } = scoredTrajectories(query.trajectories);
    failedTrajectories += failed;
    if (kept.length === 0) {
      droppedQueries++;
      continue;
    }
    const trajectories: Int32Array[] = [];
    const rewards: number[] = [];
    const methods: string[] = [];
    for (const { trajectory, index } of kept) {
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
      const positions = new Int32Array(shots);
      for (let t = 0; t < shots; t++) {
        const p = position.get(trajectory.selected[t]);
        if (p === undefined)
          throw new LeverError(
            `ICD "${trajectory.selected[t]}" is not in the query's pool (were the rollouts made with another pool set?)`,
            at(`selected[${t}]`),
          );
        positions[t] = p;
      }
      trajectories.push(positions);
      rewards.push(trajectoryReward(trajectory, opts.reward, { file: opts.files.rollouts, queryId, index }));
      methods.push(trajectory.genMethod ?? "");
      if ((trajectory.vqaAccScore ?? 0) > 0) positives++;
    }
    if (rewards.every((r) => r === rewards[0])) zeroVarianceQueries++;
    const best = rewards.reduce((b, r, i) => (r > rewards[b] ? i : b), 0);
    groups.push({
      queryId,
      queryRow,
      candRows,
      trajectories,
      weights: trajectories.map(() => 1),
      rewards,
      methods,
      best,
    });
  }
  const trajectories = groups.reduce((n, g) => n + g.trajectories.length, 0);
  return {
    groups,
    stats: {
      queries: groups.length,
      trajectories,
      shots,
      K: groups.reduce((m, g) => Math.max(m, g.candRows.length), 0),
      failedTrajectories,
      droppedQueries,
      zeroVarianceQueries,
      positiveFraction: trajectories === 0 ? 0 : positives / trajectories,
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
