/**
 * Packs query groups into one selector batch: B queries padded to the largest pool K (padding slots
 * masked), G = the most trajectories of any query (missing rows repeat the query's first trajectory
 * with weight 0, so they cost compute but never affect loss or gradients). Candidates are gathered
 * into a compact table of the distinct index rows, so a row shared by several pools is projected once.
 */
import type { SelectorInput } from "../selector/model.js";
import type { Data, DType } from "../tensor/tensor.js";
import type { EmbeddingTable, QueryGroup } from "./data.js";

export interface Batch {
  groups: QueryGroup[];
  input: SelectorInput;
  /** Rows per query. */
  G: number;
  steps: number;
  /** [B·G·steps] pool positions, query-major rows. */
  labels: Int32Array;
  /** [B·G] row weights (0 for padding rows). */
  weights: Float64Array;
  /** [B·G] 1 for real rows. */
  real: Uint8Array;
  /** [B·G] index into the group's trajectories (−1 for padding rows). */
  trajectoryOf: Int32Array;
}

function alloc(dtype: DType, n: number): Data {
  return dtype === "float64" ? new Float64Array(n) : new Float32Array(n);
}

/** The selector input of B queries: their embeddings and their pools over a compact table of the distinct index rows. */
export function buildQueryInput(
  groups: readonly Pick<QueryGroup, "queryRow" | "candRows">[],
  queryEmb: EmbeddingTable,
  indexEmb: EmbeddingTable,
  dtype: DType,
): SelectorInput {
  const B = groups.length;
  const d = queryEmb.dim;
  const K = Math.max(...groups.map((g) => g.candRows.length));
  const queries = alloc(dtype, B * d);
  groups.forEach((g, b) => {
    queries.set(queryEmb.data.subarray(g.queryRow * d, (g.queryRow + 1) * d), b * d);
  });
  const compact = new Map<number, number>();
  const slots = new Int32Array(B * K).fill(-1);
  for (let b = 0; b < B; b++) {
    const rows = groups[b].candRows;
    for (let k = 0; k < rows.length; k++) {
      let c = compact.get(rows[k]);
      if (c === undefined) {
        c = compact.size;
        compact.set(rows[k], c);
      }
      slots[b * K + k] = c;
    }
  }
  const table = alloc(dtype, compact.size * d);
  for (const [row, c] of compact) table.set(indexEmb.data.subarray(row * d, (row + 1) * d), c * d);
  return { queries, table, slots, K };
}

export function buildBatch(
  groups: QueryGroup[],
  queryEmb: EmbeddingTable,
  indexEmb: EmbeddingTable,
  dtype: DType,
): Batch {
  const B = groups.length;
  const G = Math.max(...groups.map((g) => g.trajectories.length));
  const steps = groups[0].trajectories[0].length;
  const labels = new Int32Array(B * G * steps);
  const weights = new Float64Array(B * G);
  const real = new Uint8Array(B * G);
  const trajectoryOf = new Int32Array(B * G).fill(-1);
  for (let b = 0; b < B; b++) {
    const g = groups[b];
    for (let i = 0; i < G; i++) {
      const r = b * G + i;
      const has = i < g.trajectories.length;
      labels.set(g.trajectories[has ? i : 0], r * steps);
      if (has) {
        weights[r] = g.weights[i];
        real[r] = 1;
        trajectoryOf[r] = i;
      }
    }
  }
  return {
    groups,
    input: buildQueryInput(groups, queryEmb, indexEmb, dtype),
    G,
    steps,
    labels,
    weights,
    real,
    trajectoryOf,
  };
}

/** Splits groups into batches of `size` queries in the given order. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
