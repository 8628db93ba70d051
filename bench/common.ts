/** Small helpers the benches share: the median of timings and the machine's load while they ran. */
import { loadavg } from "node:os";
import { quantileSorted } from "../src/metrics/stats.js";

/** Median of the values (the mean of the two middle ones for an even count). */
export function median(xs: readonly number[]): number {
  return quantileSorted(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
}

/** The 1, 5 and 15-minute load averages, as `uptime` prints them. */
export function loadAverage(): string {
  return loadavg()
    .map((v) => v.toFixed(2))
    .join(" ");
}
