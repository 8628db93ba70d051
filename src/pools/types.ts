import { z } from "zod";

/**
 * A pool set: for each query, the K candidate demonstrations (question ids of the index dataset),
 * chosen by one sampler through the pool contract (design §2.2). Stored as a JSON artefact and
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
