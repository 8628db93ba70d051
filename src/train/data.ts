/**
 * Training examples grouped by query: the query's pool (rows of the index embedding matrix) and
 * its trajectories as pool positions in SELECTION order, with per-trajectory weights (and, for the
 * RL stages, rewards). One query group is the unit of batching, splitting and per-query sharing.
 */
import { compareQuestionIds } from "../data/item.js";
import type { PoolSet } from "../data/pool-set.js";
import type { BeamSet } from "../data/trajectories.js";
import { LeverError } from "../util/errors.js";

/** Row-major float32 embeddings with the row of each question id. */
export interface EmbeddingTable {
  dim: number;
  data: Float32Array;
  rowOf: Map<string, number>;
}

export interface QueryGroup {
  queryId: string;
  /** Row of the query in the query embedding table. */
  queryRow: number;
  /** Pool candidates as rows of the index embedding table (pool order = position order). */
  candRows: Int32Array;
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
 * SFT labels (docs/selector.md, "Differences"): each beam's ICDs located inside the query's pool, in the
 * recorded selection order — never `index mod K`. Queries are taken in the beam set's key order
 * sorted by question id, so the result does not depend on JSON key order.
 */
export function buildSftGroups(
  beams: BeamSet,
  pools: PoolSet,
  queryEmb: EmbeddingTable,
  indexEmb: EmbeddingTable,
  opts: SftDataOptions,
  files: { beams: string; pools: string },
): { groups: QueryGroup[]; stats: SftDataStats } {
  const lengths = new Set(Object.values(beams.queries).flatMap((q) => q.beams.map((b) => b.selected.length)));
  const shots = opts.shots ?? (lengths.size === 1 ? [...lengths][0] : undefined);
  if (shots === undefined)
    throw new LeverError(`beams have different lengths (${[...lengths].join(", ")}); choose one with --shots`, {
      file: files.beams,
    });
  const groups: QueryGroup[] = [];
  let skippedBeams = 0;
  let skippedQueries = 0;
  const ids = Object.keys(beams.queries).sort(compareQuestionIds);
  for (const queryId of ids) {
    const query = beams.queries[queryId];
    if (query.beams.length === 0) continue;
    const pool = pools.pools[queryId];
    if (pool === undefined)
      throw new LeverError("query has beams but no pool", { file: files.pools, record: queryId, field: "pools" });
    if (pool.length < shots)
      throw new LeverError(`pool has ${pool.length} candidates, fewer than ${shots} shots`, {
        file: files.pools,
        record: queryId,
      });
    const queryRow = queryEmb.rowOf.get(queryId);
    if (queryRow === undefined)
      throw new LeverError("query has no embedding row", { file: files.beams, record: queryId });
    const candRows = Int32Array.from(pool, (id, j) => {
      const row = indexEmb.rowOf.get(id);
      if (row === undefined)
        throw new LeverError(`candidate "${id}" has no embedding row`, {
          file: files.pools,
          record: queryId,
          field: `pools[${j}]`,
        });
      return row;
    });
    const position = new Map(pool.map((id, j) => [id, j]));
    const kept: { positions: Int32Array; score: number; order: number }[] = [];
    query.beams.forEach((beam, b) => {
      if (beam.selected.length < shots)
        throw new LeverError(`beam has ${beam.selected.length} ICDs, fewer than ${shots} shots`, {
          file: files.beams,
          record: queryId,
          field: `beams[${b}].selected`,
        });
      const positions = new Int32Array(shots);
      for (let t = 0; t < shots; t++) {
        const p = position.get(beam.selected[t]);
        if (p === undefined) {
          if (opts.missing === "skip") {
            skippedBeams++;
            return;
          }
          throw new LeverError(
            `ICD "${beam.selected[t]}" is not in the query's pool (were the beams searched over another pool set? use --skip-missing to drop such beams)`,
            { file: files.beams, record: queryId, field: `beams[${b}].selected[${t}]` },
          );
        }
        positions[t] = p;
      }
      kept.push({ positions, score: beam.score, order: b });
    });
    if (kept.length === 0) {
      skippedQueries++;
      continue;
    }
    // Rank by score (best first; ties keep the listed order).
    const ranked = [...kept].sort((a, b) => b.score - a.score || a.order - b.order);
    const rankOf = new Map(ranked.map((k, r) => [k, r]));
    groups.push({
      queryId,
      queryRow,
      candRows,
      trajectories: kept.map((k) => k.positions),
      weights: kept.map((k) => (opts.weighting === "rank" ? 1 / (1 + rankOf.get(k)!) : 1)),
      best: kept.indexOf(ranked[0]),
    });
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
