/**
 * Settings of the comparison engine (src/metrics/compare.ts) that every command summarising
 * evaluations binds — `lever eval` for its summary, `lever compare`, `lever report` and through them
 * `lever run` — as zod fields with their description and default: one definition, so a flag means
 * the same and defaults the same in each, and the same rows give the same numbers.
 */
import { z } from "zod";
import { DEFAULT_RESAMPLES } from "./compare.js";

/** The most bootstrap resamples an interval takes: 1e6 pins a 95 % percentile far below any reported digit. */
export const MAX_RESAMPLES = 1_000_000;

export const ComparisonFields = {
  resamples: z
    .number()
    .int()
    .min(100)
    .max(MAX_RESAMPLES, `at most ${MAX_RESAMPLES} (1e6): more only takes longer, the intervals no longer move`)
    .default(DEFAULT_RESAMPLES)
    .describe(`bootstrap resamples per interval (100 to ${MAX_RESAMPLES})`),
  clusterByImage: z
    .boolean()
    .default(false)
    .describe("resample and flip whole images instead of questions (questions on one image are not independent)"),
};
