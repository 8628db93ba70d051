/**
 * Options of `lever compare` and `lever report` as zod schemas: every field is described and has its
 * default here, so a command line (or any other front end) only maps flags onto these names. Lists
 * accept either arrays or comma-separated text ("100,200,all"); numbers accept numeric text.
 */
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { COMPARE_TESTS } from "./compare.js";
import { COMPARE_FORMATS } from "./compare-render.js";
import { DEFAULT_RESAMPLES } from "./results.js";

/** An array that may also be written as "a,b,c". */
function commaList<T extends z.ZodType>(list: T) {
  return z.preprocess(
    (value) =>
      typeof value === "string"
        ? value
            .split(",")
            .map((s) => s.trim())
            .filter(Boolean)
        : value,
    list,
  );
}

const SubsetSchema = z.union([z.literal("all"), z.coerce.number().int().positive()], {
  error: 'a subset is a positive whole number of questions or "all"',
});

export const DEFAULT_SUBSETS = [100, 200, 400, 800, "all"] as const;

/** Options shared by `lever compare` and `lever report`: which methods, against what, how tested. */
const ComparisonFields = {
  baseline: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Method every other is compared with: RUN/RETRIEVER (e.g. eval-0003/random), a retriever found in exactly one run, or a seed group's name. Default: the random retriever when exactly one run has it, else the first method.",
    ),
  subsets: commaList(z.array(SubsetSchema).min(1, "give at least one subset"))
    .default([...DEFAULT_SUBSETS])
    .describe(
      'Query subsets, one table each: the first N evaluated questions in question-id order, or "all". Subsets larger than the evaluated questions are skipped with a note.',
    ),
  test: z
    .enum(COMPARE_TESTS)
    .default("mcnemar")
    .describe(
      "p-value of a comparison: exact McNemar on per-question correctness (accuracy = 1), or a sign-flip permutation test on the per-question accuracy differences. Seed groups always use the sign-flip test.",
    ),
  clusterByImage: z
    .boolean()
    .default(false)
    .describe("Resample and flip whole images instead of questions (questions on one image are not independent)."),
  seedGroups: z
    .array(z.string().regex(/^[^=\s]+=[^=]+$/, "a seed group is NAME=METHOD,METHOD,…"))
    .default([])
    .describe(
      "Methods that differ only in their seed, as NAME=METHOD,METHOD,…: one row with mean ± sd over the seeds (per-seed values kept).",
    ),
  seed: z.coerce
    .number()
    .int()
    .min(0)
    .max(0xffffffff)
    .default(0)
    .describe("Seed of the bootstrap and permutation draws."),
  resamples: z.coerce.number().int().min(100).default(DEFAULT_RESAMPLES).describe("Bootstrap resamples per interval."),
};

export const CompareOptionsSchema = z
  .object({
    runs: z
      .array(z.string().min(1))
      .min(1, "name at least one evaluation run")
      .describe("Evaluation runs to compare, by id (eval-0003) or name; every retriever of every run is a method."),
    ...ComparisonFields,
    format: z.enum(COMPARE_FORMATS).default("table").describe("Output: terminal table, Markdown, CSV or JSON."),
  })
  .strict();
export type CompareOptions = z.infer<typeof CompareOptionsSchema>;

export const ReportOptionsSchema = z
  .object({
    runs: z
      .array(z.string().min(1))
      .min(1, "name at least one run")
      .describe(
        "Runs to report, by id or name: evaluation runs are compared, training runs give curves; every run's config is shown.",
      ),
    ...ComparisonFields,
    out: z.string().min(1).optional().describe("HTML file to write. Default: reports/<run ids>.html in the workspace."),
    title: z.string().min(1).default("lever report").describe("Title of the report."),
    examples: z.coerce
      .number()
      .int()
      .min(0)
      .max(200)
      .default(5)
      .describe("Per-question examples to show (questions where the methods disagree first)."),
    warnings: z
      .array(z.string().min(1))
      .default([])
      .describe("Health warnings to show besides the ones found in the runs."),
    json: z.boolean().default(false).describe("Print the path and the report model as JSON instead of the path."),
  })
  .strict();
export type ReportOptions = z.infer<typeof ReportOptionsSchema>;

/** Parses options; the first problem becomes a one-line error naming the flag (--kebab-case). */
export function parseOptions<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const flag = `--${String(issue.path[0] ?? "options").replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  throw new LeverError(issue.message, { field: flag });
}
