/** Small helpers the benches share: the median of timings, the machine's load while they ran, smoke sizes. */
import { loadavg } from "node:os";
import { quantileSorted } from "../src/metrics/stats.js";

/**
 * `npm run bench -- --smoke` (bench/run.ts sets LEVER_BENCH_SMOKE=1): every bench at its smallest
 * sizes, in seconds, so a test can run each one (test/bench.test.ts) and a bench that no longer runs
 * fails CI. Its numbers measure nothing.
 */
export const SMOKE = process.env.LEVER_BENCH_SMOKE === "1";

/** The bench's size `full`, or `smoke` under --smoke. */
export function sized<T>(full: T, smoke: T): T {
  return SMOKE ? smoke : full;
}

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
