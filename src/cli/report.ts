import { resolve } from "node:path";
import type { Command } from "commander";
import type { z } from "zod";
import { renderComparison } from "../report/compare-render.js";
import { renderReportHtml } from "../report/html.js";
import { compareEvalRuns, resolveRun } from "../report/methods.js";
import { buildReportModel } from "../report/model.js";
import { CompareOptionsSchema, parseOptions, ReportOptionsSchema } from "../report/options.js";
import { Workspace } from "../store/workspace.js";
import { writeFileAtomic } from "../util/atomic.js";
import { hashValue } from "../util/hash.js";
import { printJson, workspaceDir } from "./common.js";

const repeat = (value: string, previous: string[]) => [...previous, value];

/** The option's description from its schema (one source for help text and validation). */
function help(schema: z.ZodObject, key: string): string {
  return schema.shape[key]?.description ?? "";
}

/** Options given on the command line only: absent flags fall to the schema's defaults. */
function given(flags: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined));
}

/** Registers `lever compare` and `lever report`. */
export function register(program: Command): void {
  const c = CompareOptionsSchema;
  program
    .command("compare")
    .description(
      "compare evaluation runs on the same questions: accuracy with CIs per query subset × shot, paired differences vs a baseline with CIs, McNemar / sign-flip p, Holm, MDE, seed groups, selection overlap",
    )
    .argument("<runs...>", help(c, "runs"))
    .option("--baseline <method>", help(c, "baseline"))
    .option("--subsets <list>", `${help(c, "subsets")} (default 100,200,400,800,all)`)
    .option("--format <format>", `${help(c, "format")} (table | markdown | csv | json; default table)`)
    .option("--test <test>", `${help(c, "test")} (mcnemar | sign-flip; default mcnemar)`)
    .option("--cluster-by-image", help(c, "clusterByImage"))
    .option("--seed-group <NAME=METHODS>", `${help(c, "seedGroups")} (repeatable)`, repeat, [])
    .option("--seed <n>", `${help(c, "seed")} (default 0)`)
    .option("--resamples <n>", `${help(c, "resamples")} (default 2000)`)
    .action((runs: string[], flags: Record<string, unknown>, command: Command) => {
      const { seedGroup, ...rest } = flags;
      const options = parseOptions(CompareOptionsSchema, { runs, ...given(rest), seedGroups: seedGroup });
      const ws = Workspace.open(workspaceDir(command), { create: false });
      try {
        const records = options.runs.map((ref) => resolveRun(ws, ref));
        const { result } = compareEvalRuns(ws, records, options);
        process.stdout.write(`${renderComparison(result, options.format)}\n`);
      } finally {
        ws.close();
      }
    });

  const r = ReportOptionsSchema;
  program
    .command("report")
    .description(
      "write one self-contained HTML report (configs, data, training curves, health warnings, comparison tables with intervals and significance, examples); prints its path",
    )
    .argument("<runs...>", help(r, "runs"))
    .option("--baseline <method>", help(r, "baseline"))
    .option("--out <file>", help(r, "out"))
    .option("--title <text>", `${help(r, "title")} (default "lever report")`)
    .option("--subsets <list>", `${help(r, "subsets")} (default 100,200,400,800,all)`)
    .option("--test <test>", `${help(r, "test")} (mcnemar | sign-flip; default mcnemar)`)
    .option("--cluster-by-image", help(r, "clusterByImage"))
    .option("--seed-group <NAME=METHODS>", `${help(r, "seedGroups")} (repeatable)`, repeat, [])
    .option("--examples <n>", `${help(r, "examples")} (default 5)`)
    .option("--warning <text>", `${help(r, "warnings")} (repeatable)`, repeat, [])
    .option("--seed <n>", `${help(r, "seed")} (default 0)`)
    .option("--resamples <n>", `${help(r, "resamples")} (default 2000)`)
    .option("--json", help(r, "json"))
    .action(async (runs: string[], flags: Record<string, unknown>, command: Command) => {
      const { seedGroup, warning, ...rest } = flags;
      const options = parseOptions(ReportOptionsSchema, {
        runs,
        ...given(rest),
        seedGroups: seedGroup,
        warnings: warning,
      });
      const ws = Workspace.open(workspaceDir(command), { create: false });
      try {
        const model = buildReportModel(ws, options);
        const html = await renderReportHtml(model);
        const path = resolve(
          options.out ??
            defaultReportPath(
              ws.dir,
              model.runs.map((run) => run.id),
            ),
        );
        writeFileAtomic(path, html);
        if (options.json) printJson({ path, bytes: Buffer.byteLength(html), model });
        else process.stdout.write(`${path}\n`);
      } finally {
        ws.close();
      }
    });
}

/** reports/<id+id+…>.html in the workspace (a hash of the ids when that name would be long). */
function defaultReportPath(workspace: string, runIds: readonly string[]): string {
  const joined = runIds.join("+");
  const name = joined.length <= 80 ? joined : `report-${hashValue(runIds).slice(0, 12)}`;
  return resolve(workspace, "reports", `${name}.html`);
}
