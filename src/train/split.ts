import { compareQuestionIds } from "../data/item.js";
import type { Rng } from "../util/rng.js";

/**
 * Train/validation split BY QUERY (all trajectories of a query land on the same side), seeded:
 * ids are put in canonical question-id order first so the split depends only on the id set and
 * the seed, never on file order. At least one query goes to each side when there are ≥ 2.
 */
export function splitByQuery(
  ids: readonly string[],
  valFraction: number,
  rng: Rng,
): { train: string[]; val: string[] } {
  const sorted = [...new Set(ids)].sort(compareQuestionIds);
  if (valFraction <= 0 || sorted.length < 2) return { train: sorted, val: [] };
  const shuffled = rng.shuffle([...sorted]);
  const nVal = Math.min(sorted.length - 1, Math.max(1, Math.round(valFraction * sorted.length)));
  const val = new Set(shuffled.slice(0, nVal));
  return { train: sorted.filter((id) => !val.has(id)), val: sorted.filter((id) => val.has(id)) };
}
