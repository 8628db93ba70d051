/**
 * Shared set-up of the data-generation tests: a small simulated workspace (train/val datasets, their
 * embeddings, world.json) with a stored pool set over the training split, built through `lever pools`.
 */

import { type SimWorkspace, simWorkspace } from "../eval/sim-workspace.js";
import { runCliOk } from "../helpers/cli.js";

export interface DatagenWorkspace extends SimWorkspace {
  /** `--workspace DIR` followed by ARGS. */
  args(...args: string[]): string[];
  /** `--world FILE` (the sim backend's world, for the datasets made here). */
  worldFlag: string[];
}

export async function datagenWorkspace(
  options: { k?: number; sampler?: string; trainItems?: number } = {},
): Promise<DatagenWorkspace> {
  const sim = simWorkspace({ trainItems: options.trainItems ?? 300, valItems: 40, concepts: 6 });
  const args = (...rest: string[]) => ["--workspace", sim.ws.dir, ...rest];
  await runCliOk(
    args(
      "pools",
      "--queries",
      "train",
      "--index",
      "train",
      "--sampler",
      options.sampler ?? "mix",
      "--k",
      String(options.k ?? 12),
      "--out",
      "p",
    ),
  );
  return { ...sim, args, worldFlag: ["--world", sim.worldFile] };
}
