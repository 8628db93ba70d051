/**
 * The last step of `lever run`: the comparison (with a `compare` section: printed as a table and
 * written to `experiments/<name>/comparison.md`) and the HTML report (`reports/<name>.html`, unless
 * `report.enabled` is false) of the methods evaluated in this execution — an evaluation run is shared
 * by the experiment's runs with the same evaluation settings, so it may hold earlier checkpoints' rows
 * too. The methods and seed groups come as data from the evaluation step; the report's training
 * curves name each run by its stage's label.
 */
import { resolve } from "node:path";
import type { ComparisonResult } from "../metrics/compare.js";
import { renderComparison } from "../report/compare-render.js";
import { renderReportHtml } from "../report/html.js";
import { buildReportModel } from "../report/model.js";
import { compareEvalRuns, resolveRun } from "../report/workspace-methods.js";
import type { Workspace } from "../store/workspace.js";
import { writeFileAtomic } from "../util/atomic.js";
import type { Evaluation } from "./evaluate.js";
import type { RunPlan } from "./plan.js";
import { ExperimentCompareSchema } from "./schema.js";

/** Writes the report and the comparison; `runLabels`: the chain's training runs (run id → stage label). */
export async function compareAndReport(
  ws: Workspace,
  p: RunPlan,
  evaluation: Evaluation,
  runLabels: Record<string, string>,
): Promise<{ comparison: string | null; reportPath: string | null }> {
  const e0 = p.loaded.variants[0].experiment;
  const { evalRuns } = evaluation;
  const compareOptions = {
    ...(e0.compare ?? ExperimentCompareSchema.parse({})),
    seedGroups: evaluation.seedGroups,
    methods: evaluation.methods,
  };
  let result: ComparisonResult | null = null;
  let reportPath: string | null = null;
  if (e0.report.enabled && evalRuns.length > 0) {
    const model = buildReportModel(ws, {
      ...compareOptions,
      title: `lever run ${e0.name}`,
      examples: 5,
      warnings: [],
      runs: [...evalRuns, ...Object.keys(runLabels)],
      runLabels,
    });
    result = model.comparison;
    reportPath = resolve(ws.dir, "reports", `${e0.name}.html`);
    writeFileAtomic(reportPath, await renderReportHtml(model));
  }
  let comparison: string | null = null;
  if (e0.compare !== undefined && evalRuns.length > 0) {
    result ??= compareEvalRuns(
      ws,
      evalRuns.map((id) => resolveRun(ws, id)),
      compareOptions,
    ).result;
    comparison = renderComparison(result, "table");
    writeFileAtomic(ws.artifactPath(`experiments/${e0.name}/comparison.md`), renderComparison(result, "markdown"));
  }
  return { comparison, reportPath };
}
