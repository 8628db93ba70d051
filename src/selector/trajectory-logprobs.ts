/**
 * Sequence log-probabilities of given trajectories (teacher forced, Σ over steps), grouped by query
 * so each query's per-query work is done once however many trajectories it has.
 */
import { type Data, noGrad } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import { type PointerSelector, type SelectorInput, sequenceLogProbs } from "./model.js";

export interface TrajectoryRef {
  /** Query index (row of the query embeddings / pool list). */
  query: number;
  positions: number[];
}

/** Groups trajectories by query into a G-rows-per-query label matrix (padding rows reuse a real trajectory). */
export function groupRows(
  trajectories: readonly TrajectoryRef[],
  queryIds: readonly number[],
): { G: number; labels: Int32Array; rowOf: Int32Array; steps: number } {
  const steps = trajectories[0]?.positions.length ?? 0;
  const byQuery = new Map<number, number[]>(queryIds.map((q) => [q, []]));
  trajectories.forEach((t, i) => {
    if (t.positions.length !== steps)
      throw new LeverError(`has ${t.positions.length} positions; all trajectories must have ${steps}`, {
        record: i,
        field: "positions",
      });
    byQuery.get(t.query)?.push(i);
  });
  const G = Math.max(1, ...[...byQuery.values()].map((v) => v.length));
  const labels = new Int32Array(queryIds.length * G * steps);
  const rowOf = new Int32Array(trajectories.length);
  queryIds.forEach((q, b) => {
    const list = byQuery.get(q) ?? [];
    for (let g = 0; g < G; g++) {
      const src = list.length > 0 ? list[Math.min(g, list.length - 1)] : -1;
      const row = b * G + g;
      if (src >= 0 && g < list.length) rowOf[src] = row;
      // A query without trajectories gets the trivial path 0,1,2… (never read).
      for (let t = 0; t < steps; t++) labels[row * steps + t] = src >= 0 ? trajectories[src].positions[t] : t;
    }
  });
  return { G, labels, rowOf, steps };
}

/** log p(trajectory) for each trajectory, in input order. */
export function trajectoryLogProbs(
  model: PointerSelector,
  input: SelectorInput,
  trajectories: readonly TrajectoryRef[],
  /** Source of the trajectories, for error messages. */
  file?: string,
): number[] {
  const { d } = model.config;
  const Q = input.queries.length / d;
  trajectories.forEach((t, i) => {
    if (!Number.isInteger(t.query) || t.query < 0 || t.query >= Q)
      throw new LeverError(`query ${t.query} is not in [0, ${Q})`, { file, record: i, field: "query" });
    const valid = new Set<number>();
    for (let k = 0; k < input.K; k++) if (input.slots[t.query * input.K + k] >= 0) valid.add(k);
    t.positions.forEach((p) => {
      if (!valid.has(p))
        throw new LeverError(`position ${p} is not a candidate of query ${t.query}`, {
          file,
          record: i,
          field: "positions",
        });
    });
    if (new Set(t.positions).size !== t.positions.length)
      throw new LeverError("repeats a position", { file, record: i, field: "positions" });
  });
  if (trajectories.length === 0) return [];
  // Only the queries that have trajectories are encoded.
  const queryIds = [...new Set(trajectories.map((t) => t.query))].sort((a, b) => a - b);
  const pick = <A extends Data | Int32Array>(data: A, out: A, width: number): A => {
    queryIds.forEach((q, b) => {
      out.set(data.subarray(q * width, (q + 1) * width), b * width);
    });
    return out;
  };
  const queries = pick(
    input.queries,
    input.queries instanceof Float64Array
      ? new Float64Array(queryIds.length * d)
      : new Float32Array(queryIds.length * d),
    d,
  );
  const slots = pick(input.slots, new Int32Array(queryIds.length * input.K), input.K);
  const prior =
    input.prior === undefined
      ? undefined
      : pick(
          input.prior,
          input.prior instanceof Float64Array
            ? new Float64Array(queryIds.length * input.K)
            : new Float32Array(queryIds.length * input.K),
          input.K,
        );
  const { G, labels, rowOf, steps } = groupRows(trajectories, queryIds);
  const logp = noGrad(() => {
    const enc = model.encode({ queries, table: input.table, slots, K: input.K, ...(prior ? { prior } : {}) });
    return sequenceLogProbs(model.teacherForce(enc, G, labels, steps), labels).data;
  });
  return Array.from(rowOf, (r) => logp[r]);
}
