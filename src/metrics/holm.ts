/**
 * Holm's step-down correction for a family of m tests (Holm 1979, Scand. J. Statistics 6:65–70):
 * it controls the chance of any false "significant" in the family at α without assuming the tests
 * are independent, and rejects at least whatever Bonferroni rejects.
 *
 * Adjusted p-values: sort p ascending as p_(1) ≤ … ≤ p_(m); then
 *   p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j)),
 * so they never decrease along the sorted order and never exceed 1. A test is significant at level α
 * after correction exactly when p̃ ≤ α. Results come back in the input order.
 */
import { LeverError } from "../util/errors.js";

export function holmAdjust(pValues: readonly number[]): number[] {
  const m = pValues.length;
  for (const [i, p] of pValues.entries())
    if (!(p >= 0 && p <= 1)) throw new LeverError(`p-value ${i} must be in [0, 1], got ${p}`);
  // Ties keep their input order, so equal p-values get equal adjusted values either way.
  const order = pValues.map((_, i) => i).sort((a, b) => pValues[a] - pValues[b] || a - b);
  const adjusted = new Array<number>(m);
  let running = 0;
  for (const [rank, index] of order.entries()) {
    running = Math.max(running, Math.min(1, (m - rank) * pValues[index]));
    adjusted[index] = running;
  }
  return adjusted;
}
