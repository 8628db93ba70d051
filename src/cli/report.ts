import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { type CompareFormat, renderComparison } from "../report/compare-render.js";
import { renderReportHtml } from "../report/html.js";
import { buildReportModel } from "../report/model.js";
import { CompareSettingsSchema, ReportSettingsSchema } from "../report/options.js";
import { compareEvalRuns, resolveRun } from "../report/workspace-methods.js";
import { writeFileAtomic, writeUserFile } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import { printJson, withWorkspace } from "./common.js";
import { bindSettings, resolve } from "./options.js";

/** Registers `lever compare` and `lever report` (flags from src/report/options.ts). */
export function register(program: Command): void {
  const compare = program
    .command("compare")
    .description(
      "compare evaluation runs on the same questions: accuracy with CIs per query subset × shot, paired differences vs a baseline with CIs, McNemar / sign-flip p, Holm, MDE, seed groups, selection overlap",
    )
    .argument("<runs...>", "evaluation runs, by id (eval-0003) or name; every retriever of every run is a method")
    .option("--json", "the same as --format json (like lever eval --json)");
  const compareSettings = bindSettings(compare, CompareSettingsSchema, { fileOption: "config" });
  compare.action(async (runs: string[], flags: { json?: boolean }, cmd: Command) => {
    const settings = jsonFormat(resolve(cmd, compareSettings), flags.json === true, cmd.getOptionValue("format"));
    await withWorkspace(
      cmd,
      (ws) => {
        const { result } = compareEvalRuns(
          ws,
          runs.map((ref) => resolveRun(ws, ref)),
          settings,
        );
        process.stdout.write(`${renderComparison(result, settings.format)}\n`);
      },
      { readOnly: true }, // it only reads: works on a read-only workspace
    );
  });

  const report = program
    .command("report")
    .description(
      "write one self-contained HTML report (configs, data, training curves, health warnings, comparison tables with intervals and significance, examples); prints its path",
    )
    .argument(
      "<runs...>",
      "runs, by id or name: evaluation runs are compared, training runs give curves; every run's config is shown",
    )
    .option("--json", "print the path and the report model as JSON instead of the path");
  const reportSettings = bindSettings(report, ReportSettingsSchema, { fileOption: "config" });
  report.action(async (runs: string[], flags: { json?: boolean }, cmd: Command) => {
    const settings = resolve(cmd, reportSettings);
    await withWorkspace(cmd, async (ws) => {
      const model = buildReportModel(ws, { ...settings, runs });
      const html = await renderReportHtml(model);
      const path = resolvePath(
        settings.out ??
          defaultReportPath(
            ws.dir,
            model.runs.map((run) => run.id),
          ),
      );
      // A file the user named is never overwritten silently; the default reports/ file is the report's own.
      if (settings.out !== undefined) writeUserFile(path, html, { replace: settings.replace });
      else writeFileAtomic(path, html);
      if (flags.json) printJson({ path, bytes: Buffer.byteLength(html), model });
      else process.stdout.write(`${path}\n`);
    });
  });
}

/** `--json` is `--format json`; flags override a settings file, but `--json` with another `--format` is refused. */
function jsonFormat<S extends { format: CompareFormat }>(settings: S, json: boolean, formatFlag: unknown): S {
  if (!json) return settings;
  if (formatFlag !== undefined && formatFlag !== "json")
    throw new LeverError(`--json is --format json; it cannot go with --format ${formatFlag}`, { field: "--json" });
  return { ...settings, format: "json" };
}

/** reports/<id+id+…>.html in the workspace (a hash of the ids when that name would be long). */
function defaultReportPath(workspace: string, runIds: readonly string[]): string {
  const joined = runIds.join("+");
  const name = joined.length <= 80 ? joined : `report-${hashValue(runIds).slice(0, 12)}`;
  return resolvePath(workspace, "reports", `${name}.html`);
}
