/**
 * Settings of `lever compare` and `lever report` as zod schemas (every field described, with its
 * default): the CLI derives its flags from them (src/cli/options.ts) and a `--config` file may hold
 * any of them. The runs themselves are positional arguments, not settings.
 */
import { z } from "zod";
import { COMPARE_TESTS, DEFAULT_TEST, type SubsetSpec } from "../metrics/compare.js";
import { ComparisonFields } from "../metrics/compare-settings.js";
import { COMPARE_FORMATS } from "./compare-render.js";

/** How a seed group is written on the command line and in settings files: NAME=METHOD+METHOD+… */
export const SEED_GROUP_PATTERN = /^([^=\s]+)=([^=]+\+[^=]+)$/;

/** Methods that differ only in their seed: one row of the comparison (mean ± sd over the seeds). */
export interface SeedGroup {
  name: string;
  /** Method references: "RUN/RETRIEVER" ids, labels, or what else `resolveMethod` accepts. */
  members: readonly string[];
}

/** "NAME=A+B+…" (validated by SEED_GROUP_PATTERN) → the group. */
export function parseSeedGroup(text: string): SeedGroup {
  const at = text.indexOf("=");
  const members = text
    .slice(at + 1)
    .split("+")
    .map((s) => s.trim())
    .filter(Boolean);
  return { name: text.slice(0, at).trim(), members };
}

/** Settings shared by `lever compare` and `lever report`: which baseline, which subsets, how tested. */
const ComparisonSettings = {
  baseline: z
    .string()
    .min(1)
    .optional()
    .describe(
      "method every other is compared with: RUN/RETRIEVER (e.g. eval-0003/random), a retriever found in exactly one run, or a seed group's name (default: the random retriever when exactly one run has it, else the first method)",
    ),
  subsets: z
    .array(z.string().regex(/^(all|[1-9]\d*)$/, 'a subset is a positive number of questions or "all"'))
    .min(1, "give at least one subset")
    .default(["100", "200", "400", "800", "all"])
    .describe(
      'query subsets, one table each: the first N evaluated questions in question-id order, or "all" (subsets larger than the evaluated questions are skipped with a note)',
    ),
  test: z
    .enum(COMPARE_TESTS)
    .default(DEFAULT_TEST)
    .describe(
      "p-value of a comparison: exact McNemar on per-question correctness (accuracy = 1), or a sign-flip permutation test on the per-question accuracy differences; seed groups always use the sign-flip test",
    ),
  clusterByImage: ComparisonFields.clusterByImage,
  // Written as text, parsed here once into groups.
  seedGroups: z
    .array(z.string().regex(SEED_GROUP_PATTERN, "a seed group is NAME=METHOD+METHOD+…"))
    .default([])
    .meta({
      flag: "seed-group",
      description:
        "methods that differ only in their seed, as NAME=METHOD+METHOD+…: one row with mean ± sd over the seeds (per-seed values kept)",
    })
    .transform((specs): SeedGroup[] => specs.map(parseSeedGroup)),
  seed: z.number().int().min(0).max(0xffffffff).default(0).describe("seed of the bootstrap and permutation draws"),
  resamples: ComparisonFields.resamples,
};

export const CompareSettingsSchema = z
  .object({
    ...ComparisonSettings,
    format: z.enum(COMPARE_FORMATS).default("table").describe("output: terminal table, Markdown, CSV or JSON"),
  })
  .strict();

export const ReportSettingsSchema = z
  .object({
    ...ComparisonSettings,
    out: z.string().min(1).optional().describe("HTML file to write (default: reports/<run ids>.html in the workspace)"),
    replace: z.boolean().optional().describe("overwrite --out when it exists with other content"),
    title: z.string().min(1).default("lever report").describe("title of the report"),
    examples: z
      .number()
      .int()
      .min(0)
      .max(200)
      .default(5)
      .describe("per-question examples to show (questions where the methods disagree first)"),
    warnings: z
      .array(z.string().min(1))
      .default([])
      .meta({ flag: "warning", description: "health warnings to show besides the ones found in the runs" }),
  })
  .strict();
export type ReportSettings = z.infer<typeof ReportSettingsSchema>;

/** What `buildReportModel` needs: the runs and the report's settings. */
export type ReportOptions = ReportSettings & {
  runs: readonly string[];
  /** Only these methods of the evaluation runs ("RUN/RETRIEVER"; all when absent). */
  methods?: readonly string[];
  /** Readable names of runs in curves and tables (`lever run`: the stage's label, e.g. "online"); else the run's name or id. */
  runLabels?: Readonly<Record<string, string>>;
};

/** "100", "all" → 100, "all". */
export function subsetSpecs(subsets: readonly string[]): SubsetSpec[] {
  return subsets.map((s) => (s === "all" ? "all" : Number(s)));
}
