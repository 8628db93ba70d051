/**
 * Selection overlap of two demonstration choosers: on the questions both were run on, how often they
 * showed the VLM exactly the same demonstrations (same question ids in the same prompt order), and
 * how often the same set in any order. Two selectors that pick identically on every question cannot
 * differ in accuracy except through VLM noise, so an "improvement" between them is not one.
 */

export interface SelectionOverlap {
  /** Questions both choosers have a selection for. */
  n: number;
  /** Identical id lists (same ids, same order). */
  identical: number;
  /** Same ids in any order (includes `identical`). */
  sameSet: number;
  /** identical / n; null when n = 0. */
  share: number | null;
}

/** Compares question id → chosen demonstration ids (prompt order) of two choosers. */
export function selectionOverlap(
  a: ReadonlyMap<string, readonly string[]>,
  b: ReadonlyMap<string, readonly string[]>,
): SelectionOverlap {
  let n = 0;
  let identical = 0;
  let sameSet = 0;
  for (const [questionId, mine] of a) {
    const theirs = b.get(questionId);
    if (theirs === undefined) continue;
    n++;
    if (mine.length !== theirs.length) continue;
    if (mine.every((id, i) => id === theirs[i])) {
      identical++;
      sameSet++;
    } else if (sameMultiset(mine, theirs)) sameSet++;
  }
  return { n, identical, sameSet, share: n === 0 ? null : identical / n };
}

function sameMultiset(a: readonly string[], b: readonly string[]): boolean {
  const sortedA = [...a].sort();
  const sortedB = [...b].sort();
  return sortedA.every((id, i) => id === sortedB[i]);
}
