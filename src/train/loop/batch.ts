/**
 * Packs query groups into one training batch: the selector input of their pools (src/selector/inputs.ts:
 * B queries padded to the largest pool K, a compact table of the distinct candidate rows) and their
 * trajectories as rows, G = the most trajectories of any query (missing rows repeat the query's first
 * trajectory with weight 0, so they cost compute but never affect loss or gradients).
 */
import { type SelectorSources, selectorInput } from "../../selector/inputs.js";
import type { SelectorInput } from "../../selector/model.js";
import type { DType } from "../../tensor/tensor.js";
import type { QueryGroup } from "../data/groups.js";

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

export function buildBatch(groups: QueryGroup[], sources: SelectorSources, dtype: DType): Batch {
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
    input: selectorInput(groups, sources, dtype),
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
