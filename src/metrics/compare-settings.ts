/**
 * Settings of the comparison engine (src/metrics/compare.ts) that every command summarising
 * evaluations binds — `lever eval` for its summary, `lever compare`, `lever report` and through them
 * `lever run` — as zod fields with their description and default: one definition, so a flag means
 * the same and defaults the same in each, and the same rows give the same numbers.
 */
import { z } from "zod";
import { DEFAULT_RESAMPLES } from "./compare.js";

export const ComparisonFields = {
  resamples: z.number().int().min(100).default(DEFAULT_RESAMPLES).describe("bootstrap resamples per interval"),
  clusterByImage: z
    .boolean()
    .default(false)
    .describe("resample and flip whole images instead of questions (questions on one image are not independent)"),
};
