/**
 * What the data-generation stages read from the workspace: a stored pool set (with the sha256 that
 * identifies it), the items to work on (a subset of the query dataset's items that have a pool),
 * and cosine similarities from an embedding matrix.
 */
import { type EmbeddingMatrix, rowIndex } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import type { PoolSet } from "../data/pool-set.js";
import { formatSubsetSpec, parseSubsetSpec, selectSubset } from "../data/splits.js";
import type { PoolRef } from "../data/trajectories.js";
import { hashFileSync } from "../store/files.js";
import { poolArtifactPath, readPoolSet } from "../store/sets.js";
import type { DatasetRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { stageTask } from "../task/guard.js";
import type { Task } from "../task/types.js";
import { LeverError } from "../util/errors.js";

export interface ResolvedPools {
  set: PoolSet;
  ref: PoolRef;
}

/** A pool set stored under artifacts/pools/, checked to hold the queries of `dataset`. */
export function resolvePools(ws: Workspace, name: string, dataset: string): ResolvedPools {
  const set = readPoolSet(ws, name);
  if (set.queryDataset !== dataset)
    throw new LeverError(`pool set "${name}" holds pools of dataset "${set.queryDataset}", not "${dataset}"`, {
      field: "--pools",
    });
  return { set, ref: { set: name, sha256: hashFileSync(ws.artifactPath(poolArtifactPath(name))).sha256 } };
}

/**
 * The subset (`first:N`, `random:N` with `seed`, or `all`) of the dataset's items that have a pool
 * in the set, in question-id order.
 */
export function selectWithPools(
  items: readonly VqaItem[],
  pools: PoolSet,
  spec: string,
  seed: number,
  field: string,
): VqaItem[] {
  const parsed = parseSubsetSpec(spec, field);
  const withPool = items.filter((item) => pools.pools[item.questionId] !== undefined);
  if (withPool.length === 0)
    throw new LeverError(`no item of dataset "${pools.queryDataset}" has a pool in this pool set`, {
      field: "--pools",
    });
  if (parsed.kind !== "all" && parsed.n > withPool.length)
    throw new LeverError(
      `${formatSubsetSpec(parsed)} asks for more than the ${withPool.length} items that have a pool`,
      { field },
    );
  return selectSubset(withPool, parsed, seed);
}

/** What both stages open first: the query dataset, its pool set, the index dataset and the items. */
export interface StageInputs {
  dataset: DatasetRecord;
  pools: ResolvedPools;
  index: DatasetRecord;
  /** The task of the datasets (src/task/guard.ts). */
  task: Task<unknown>;
  /** The chosen items (anchors, queries), in question-id order. */
  items: VqaItem[];
  indexById: Map<string, VqaItem>;
}

export function openStageInputs(
  ws: Workspace,
  settings: { dataset: string; pools: string; seed: number },
  subset: string,
  field: string,
): StageInputs {
  const dataset = ws.requireDataset(settings.dataset);
  const pools = resolvePools(ws, settings.pools, settings.dataset);
  const index = ws.requireDataset(pools.set.indexDataset);
  const task = stageTask(field === "--anchors" ? "beams" : "rollouts", { query: dataset, index });
  const items = selectWithPools(ws.loadItems(settings.dataset), pools.set, subset, settings.seed, field);
  const indexById = new Map(ws.loadItems(index.name).map((item) => [item.questionId, item]));
  return { dataset, pools, index, task, items, indexById };
}

/** The items of a pool, in pool order, from the index dataset's items. */
export function poolItems(ids: readonly string[], indexById: ReadonlyMap<string, VqaItem>, queryId: string): VqaItem[] {
  return ids.map((id, p) => {
    const item = indexById.get(id);
    if (item === undefined)
      throw new LeverError(`candidate "${id}" is not in the index dataset`, { record: queryId, field: `pools[${p}]` });
    return item;
  });
}

/** Cosine similarities between rows of two embedding matrices, looked up by question id. */
export class Similarity {
  private readonly queryRows: Map<string, number>;
  private readonly indexRows: Map<string, number>;

  constructor(
    private readonly queries: EmbeddingMatrix,
    private readonly index: EmbeddingMatrix,
  ) {
    if (queries.dim !== index.dim)
      throw new LeverError(`query embeddings have dim ${queries.dim}, candidates ${index.dim}`, { field: "embedding" });
    this.queryRows = rowIndex(queries);
    this.indexRows = rowIndex(index);
  }

  /** cos(query, candidate) for every candidate id, in the given order. */
  toCandidates(queryId: string, candidateIds: readonly string[]): Float64Array {
    const { dim } = this.queries;
    const q = this.row(this.queries, this.queryRows, queryId, "query");
    const qNorm = Math.sqrt(dot(q, q, dim));
    return Float64Array.from(candidateIds, (id) => {
      const c = this.row(this.index, this.indexRows, id, "candidate");
      const norm = qNorm * Math.sqrt(dot(c, c, dim));
      return norm > 0 ? dot(q, c, dim) / norm : 0;
    });
  }

  private row(matrix: EmbeddingMatrix, rows: Map<string, number>, id: string, role: string): Float32Array {
    const r = rows.get(id);
    if (r === undefined)
      throw new LeverError(`no ${role} embedding row for this item`, { record: id, field: "embedding" });
    return matrix.data.subarray(r * matrix.dim, (r + 1) * matrix.dim);
  }
}

function dot(a: Float32Array, b: Float32Array, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}
