import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { parseOrThrow } from "../util/validate.js";

/**
 * A pool set: for each query, the K candidate demonstrations (question ids of the index dataset),
 * chosen by one sampler through the pool contract (docs/architecture.md, "The pool contract"). Stored as a JSON artefact and
 * referenced by every later stage (beam search, SFT, rollouts, RL training, evaluation).
 * Trajectories are lists of positions into `pools[queryId]`.
 */
export const PoolSetSchema = z.object({
  format: z.literal("lever.pools/1"),
  sampler: z.string(),
  /** Sampler settings (ratios, embedding kind, …) as recorded for reproducibility. */
  settings: z.record(z.string(), z.unknown()),
  k: z.number().int().positive(),
  seed: z.number().int(),
  /** Dataset whose items are the candidates (the train split). */
  indexDataset: z.string(),
  /** Dataset whose items are the queries (train split for data generation, val split for evaluation). */
  queryDataset: z.string(),
  /** queryId → candidate question ids, length k, no duplicates, never the query or a same-image item. */
  pools: z.record(z.string(), z.array(z.string())),
});

export type PoolSet = z.infer<typeof PoolSetSchema>;

/** Parses a stored pool set, with errors naming the file, query and field. */
export function parsePoolSet(json: unknown, file: string): PoolSet {
  const set = parseOrThrow(PoolSetSchema, json, { file, recordsAt: "pools" });
  checkPoolSet(set, file);
  return set;
}

/** Throws unless there is a pool and every pool has exactly k distinct ids. */
export function checkPoolSet(poolSet: PoolSet, file: string): void {
  if (Object.keys(poolSet.pools).length === 0)
    throw new LeverError("the pool set holds no pools (an empty artefact would train and evaluate nothing)", {
      file,
      field: "pools",
    });
  for (const [queryId, ids] of Object.entries(poolSet.pools)) {
    if (ids.length !== poolSet.k)
      throw new LeverError(`pool has ${ids.length} candidates, expected k=${poolSet.k}`, {
        file,
        record: queryId,
        field: "pools",
      });
    if (new Set(ids).size !== ids.length)
      throw new LeverError("pool contains a duplicate candidate", { file, record: queryId, field: "pools" });
    if (ids.includes(queryId))
      throw new LeverError("pool contains the query itself", { file, record: queryId, field: "pools" });
  }
}
