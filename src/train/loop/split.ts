import { compareQuestionIds } from "../../data/item.js";
import type { Rng } from "../../util/rng.js";

/**
 * Train/validation split BY QUERY (all trajectories of a query land on the same side), seeded:
 * ids are put in canonical question-id order first so the split depends only on the id set and
 * the seed, never on file order. At least one query goes to each side when there are ≥ 2.
 *
 * With `imageOf` (question id → image id) the split is BY IMAGE: all questions of an image land on
 * the same side, so no validation query shares its image (and hence its image embedding) with a
 * training query — otherwise a selector that memorises per-image choices looks better on validation
 * than it will on new images. Whole images are moved to validation, in a seeded order, until at least
 * round(valFraction · n) queries are there; at least one image stays in training.
 */
export function splitByQuery(
  ids: readonly string[],
  valFraction: number,
  rng: Rng,
  imageOf?: ReadonlyMap<string, string>,
): { train: string[]; val: string[] } {
  const sorted = [...new Set(ids)].sort(compareQuestionIds);
  if (valFraction <= 0 || sorted.length < 2) return { train: sorted, val: [] };
  const nVal = Math.min(sorted.length - 1, Math.max(1, Math.round(valFraction * sorted.length)));
  const val =
    imageOf === undefined ? new Set(rng.shuffle([...sorted]).slice(0, nVal)) : byImage(sorted, nVal, rng, imageOf);
  return { train: sorted.filter((id) => !val.has(id)), val: sorted.filter((id) => val.has(id)) };
}

/** Validation ids as whole images (a query without a known image is its own group). */
function byImage(sorted: readonly string[], nVal: number, rng: Rng, imageOf: ReadonlyMap<string, string>): Set<string> {
  const groups = new Map<string, string[]>(); // in canonical order of each image's first question
  for (const id of sorted) {
    const key = imageOf.has(id) ? `image:${imageOf.get(id)}` : `query:${id}`;
    groups.set(key, [...(groups.get(key) ?? []), id]);
  }
  const val = new Set<string>();
  if (groups.size < 2) return val;
  for (const members of rng.shuffle([...groups.values()]).slice(0, groups.size - 1)) {
    if (val.size >= nVal) break;
    for (const id of members) val.add(id);
  }
  return val;
}
