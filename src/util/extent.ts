/**
 * Smallest and largest of many numbers. `Math.max(...values)` passes every value as an argument and
 * overflows the call stack past about 10⁵ values (a 5,000-question evaluation has 200,000 rows), so
 * anything sized by the data uses these loops instead.
 */

/** The largest value (−∞ for none, as Math.max()). */
export function maxOf(values: Iterable<number>): number {
  let m = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > m || Number.isNaN(v)) m = Number.isNaN(m) ? m : v;
  return m;
}

/** The smallest value (+∞ for none, as Math.min()). */
export function minOf(values: Iterable<number>): number {
  let m = Number.POSITIVE_INFINITY;
  for (const v of values) if (v < m || Number.isNaN(v)) m = Number.isNaN(m) ? m : v;
  return m;
}
