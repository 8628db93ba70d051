/**
 * Training examples grouped by query: the query's pool resolved in the selector sources
 * (src/selector/inputs.ts) and its trajectories as pool positions in SELECTION order, with
 * per-trajectory weights (and, for the RL stages, rewards). One query group is the unit of batching,
 * splitting and per-query sharing.
 */
import { compareQuestionIds } from "../../data/item.js";
import type { PoolSet } from "../../data/pool-set.js";
import type { BeamSet } from "../../data/trajectories.js";
import { type ResolvedPool, resolvePool, type SelectorSources } from "../../selector/inputs.js";
import { LeverError } from "../../util/errors.js";

export interface QueryGroup extends ResolvedPool {
  /** Trajectories as pool positions, selection order; all of the same length. */
  trajectories: Int32Array[];
  /** One weight per trajectory (> 0). */
  weights: number[];
  /** One reward per trajectory (RL stages). */
  rewards?: number[];
  /** Index of the reference ("best") trajectory used for agreement metrics. */
  best: number;
}

export interface SftDataOptions {
  /** Trajectory length; longer beams are cut to their first `shots` selections. Default: the beams' length. */
  shots?: number;
  /** "uniform": every beam weight 1 (the reference); "rank": 1/(1 + rank by score). */
  weighting: "uniform" | "rank";
  /** A beam ICD that is not in the query's pool: "error" (default) or "skip" the beam and count it. */
  missing: "error" | "skip";
}

export interface SftDataStats {
  queries: number;
  trajectories: number;
  shots: number;
  K: number;
  skippedBeams: number;
  /** Queries dropped because none of their beams survived (only with missing = "skip"). */
  skippedQueries: number;
}

/**
 * The one trajectory length of a stage's data: `shots` when given (longer trajectories are cut),
 * else the length all trajectories share; different lengths without `shots` are an error.
 */
export function trajectoryLength(lengths: Iterable<number>, shots: number | undefined, what: string, file: string) {
  const distinct = [...new Set(lengths)];
  const length = shots ?? (distinct.length === 1 ? distinct[0] : undefined);
  if (length === undefined)
    throw new LeverError(`${what} have different lengths (${distinct.sort().join(", ")}); choose one with --shots`, {
      file,
    });
  return length;
}

/** Pool positions of the first `shots` selections, or the first selection (its index) that is not in the pool. */
export function poolPositions(
  position: ReadonlyMap<string, number>,
  selected: readonly string[],
  shots: number,
): Int32Array | { missing: number } {
  const positions = new Int32Array(shots);
  for (let t = 0; t < shots; t++) {
    const p = position.get(selected[t]);
    if (p === undefined) return { missing: t };
    positions[t] = p;
  }
  return positions;
}

/**
 * SFT labels (docs/selector.md, "Differences"): each beam's ICDs located inside the query's pool, in the
 * recorded selection order — never `index mod K`. Queries are taken in the beam set's key order
 * sorted by question id, so the result does not depend on JSON key order.
 */
export function buildSftGroups(
  beams: BeamSet,
  pools: PoolSet,
  sources: SelectorSources,
  opts: SftDataOptions,
  files: { beams: string; pools: string },
): { groups: QueryGroup[]; stats: SftDataStats } {
  const lengths = Object.values(beams.queries).flatMap((q) => q.beams.map((b) => b.selected.length));
  const shots = trajectoryLength(lengths, opts.shots, "beams", files.beams);
  const groups: QueryGroup[] = [];
  let skippedBeams = 0;
  let skippedQueries = 0;
  for (const queryId of Object.keys(beams.queries).sort(compareQuestionIds)) {
    if (beams.queries[queryId].beams.length === 0) continue;
    const group = sftGroup(beams, pools, sources, queryId, shots, opts, files);
    skippedBeams += group.skippedBeams;
    if (group.group === null) skippedQueries++;
    else groups.push(group.group);
  }
  const K = groups.reduce((m, g) => Math.max(m, g.candRows.length), 0);
  return {
    groups,
    stats: {
      queries: groups.length,
      trajectories: groups.reduce((n, g) => n + g.trajectories.length, 0),
      shots,
      K,
      skippedBeams,
      skippedQueries,
    },
  };
}

/** One query's SFT group (null when every beam was skipped) and the beams it skipped. */
function sftGroup(
  beams: BeamSet,
  pools: PoolSet,
  sources: SelectorSources,
  queryId: string,
  shots: number,
  opts: SftDataOptions,
  files: { beams: string; pools: string },
): { group: QueryGroup | null; skippedBeams: number } {
  const pool = pools.pools[queryId];
  if (pool === undefined)
    throw new LeverError("query has beams but no pool", { file: files.pools, record: queryId, field: "pools" });
  if (pool.length < shots)
    throw new LeverError(`pool has ${pool.length} candidates, fewer than ${shots} shots`, {
      file: files.pools,
      record: queryId,
    });
  const resolved = resolvePool(sources, queryId, pool, { queryFile: files.beams, poolFile: files.pools });
  const position = new Map(pool.map((id, j) => [id, j]));
  const kept: { positions: Int32Array; score: number; order: number }[] = [];
  let skippedBeams = 0;
  beams.queries[queryId].beams.forEach((beam, b) => {
    if (beam.selected.length < shots)
      throw new LeverError(`beam has ${beam.selected.length} ICDs, fewer than ${shots} shots`, {
        file: files.beams,
        record: queryId,
        field: `beams[${b}].selected`,
      });
    const positions = poolPositions(position, beam.selected, shots);
    if (positions instanceof Int32Array) kept.push({ positions, score: beam.score, order: b });
    else if (opts.missing === "skip") skippedBeams++;
    else
      throw new LeverError(
        `ICD "${beam.selected[positions.missing]}" is not in the query's pool (were the beams searched over another pool set? use --skip-missing to drop such beams)`,
        { file: files.beams, record: queryId, field: `beams[${b}].selected[${positions.missing}]` },
      );
  });
  if (kept.length === 0) return { group: null, skippedBeams };
  // Rank by score (best first; ties keep the listed order).
  const ranked = [...kept].sort((a, b) => b.score - a.score || a.order - b.order);
  const rankOf = new Map(ranked.map((k, r) => [k, r]));
  const group: QueryGroup = {
    ...resolved,
    trajectories: kept.map((k) => k.positions),
    weights: kept.map((k) => (opts.weighting === "rank" ? 1 / (1 + rankOf.get(k)!) : 1)),
    best: kept.indexOf(ranked[0]),
  };
  return { group, skippedBeams };
}
