/**
 * The report model: everything `lever report` shows, gathered from the workspace as plain data (so
 * it can be printed as JSON, tested, and rendered by src/report/html.ts). Sections: the lever version
 * and commit that made it, the headline (src/report/headline.ts), the comparison of the evaluation runs'
 * methods, accuracy by answer type and each stage's wall time and VLM calls (src/report/breakdown.ts),
 * health warnings, per-question examples, training curves (every metric series the runs logged, per
 * stage and name), data statistics, and the runs and their configs.
 *
 * Health warnings come from the caller, from the runs' state (failed, unfinished, failed stages), from
 * their data (non-finite metrics, failed VLM calls, methods choosing identical demonstrations), and
 * from the `health.json` artefacts training stages store (src/data/health-file.ts).
 */
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { describeHealthWarning, HEALTH_FILE, readHealthFile } from "../data/health-file.js";
import { compareQuestionIds, type VqaItem } from "../data/item.js";
import { shortRetriever } from "../icl/retriever-methods.js";
import type { ComparisonResult } from "../metrics/compare.js";
import { type DatasetSummary, summarizeDataset } from "../store/ingest/vqa.js";
import type { MetricRecord, RunRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { maxOf } from "../util/extent.js";
import { type LeverVersion, leverVersion } from "../util/version.js";
import { type AnswerTypes, answerTypeAccuracy, type StageCost, stageCosts } from "./breakdown.js";
import type { Point } from "./charts.js";
import { finalSources, type Headline, headlineOf } from "./headline.js";
import { metricTitle } from "./metric-names.js";
import type { ReportOptions } from "./options.js";
import { compareEvalRuns, type EvalMethods, evalConfigOf, resolveRun } from "./workspace-methods.js";

export interface ReportRun {
  id: string;
  kind: string;
  name: string | null;
  status: string;
  seed: number;
  createdAt: string;
  finishedAt: string | null;
  error: string | null;
  config: unknown;
  stages: { name: string; status: string; progressDone: number; progressTotal: number; error: string | null }[];
}

export interface EvaluationStats {
  runId: string;
  dataset: string;
  index: string;
  queries: string | null;
  questions: number;
  retrievers: string[];
  shots: number[];
  predictions: number;
  failures: number;
}

export interface CurveSeries {
  name: string;
  points: Point[];
  /** Points averaged per bucket of this many steps to keep the chart light (1 = as logged). */
  perPoint: number;
}

/** One metric of one stage (its own chart and y scale), a series per run. */
export interface Curve {
  /** The stage that logged it ("sft", "grpo", …): charts are grouped by stage. */
  stage: string;
  metric: string;
  /** A readable title (src/report/metric-names.ts); `metric` is the name as logged. */
  title: string;
  axis: "step" | "epoch";
  series: CurveSeries[];
}

/** A value a stage logged once, without step or epoch (data generation's counts, for example). */
export interface StageSummary {
  /** The run's label (its name, or its stage under `lever run`) … */
  run: string;
  /** … and its id, as health warnings and `runs` name it. */
  runId: string;
  stage: string;
  metric: string;
  value: number;
}

export interface HealthWarning {
  /** Where it comes from: a run id, or "given" for the caller's. */
  source: string;
  message: string;
}

export interface ExamplePrediction {
  method: string;
  label: string;
  shot: number;
  demonstrations: { questionId: string; question: string | null; answer: string | null }[];
  answer: string | null;
  rawAnswer: string | null;
  accuracy: number | null;
  failure: string | null;
}

export interface Example {
  questionId: string;
  imageId: string | null;
  question: string | null;
  /** The annotators' answers with how many gave each, most frequent first. */
  answers: { answer: string; count: number }[];
  predictions: ExamplePrediction[];
}

export interface ReportModel {
  format: "lever.report/2";
  title: string;
  createdAt: string;
  /** The lever that wrote the report: package version and git commit. */
  lever: LeverVersion;
  workspace: string;
  runs: ReportRun[];
  datasets: Omit<DatasetSummary, "examples" | "files">[];
  evaluations: EvaluationStats[];
  curves: Curve[];
  summaries: StageSummary[];
  warnings: HealthWarning[];
  comparison: ComparisonResult | null;
  /** The best method against the baseline per shot, null without a comparison. */
  headline: Headline | null;
  /** Accuracy by answer type per method and shot, null without an evaluation. */
  answerTypes: AnswerTypes | null;
  /** Each stage's wall time and VLM calls. */
  stageCosts: StageCost[];
  /** Shot the examples show (the largest evaluated), null without examples. */
  exampleShot: number | null;
  examples: Example[];
}

/** Points per chart series at most; longer series are averaged in equal buckets. */
export const MAX_CURVE_POINTS = 300;

export function buildReportModel(
  ws: Workspace,
  options: ReportOptions,
  now: () => string = () => new Date().toISOString(),
): ReportModel {
  const runs = uniqueRuns(options.runs.map((ref) => resolveRun(ws, ref)));
  const evalRuns = runs.filter((r) => r.kind === "eval");
  let comparison: ComparisonResult | null = null;
  let loaded: EvalMethods | null = null;
  if (evalRuns.length > 0) ({ result: comparison, loaded } = compareEvalRuns(ws, evalRuns, options));

  const labelOf = (run: RunRecord) => options.runLabels?.[run.id] ?? run.name ?? run.id;
  const warnings: HealthWarning[] = options.warnings.map((message) => ({ source: "given", message }));
  // Each run's metrics, read once for the warnings, the curves and the stage summaries.
  const metrics = new Map(runs.map((run) => [run.id, ws.getMetrics(run.id)]));
  const metricsOf = (run: RunRecord) => metrics.get(run.id) ?? [];
  warnings.push(...runWarnings(ws, runs, metricsOf));
  // Each dataset's items, read once for the data statistics, the answer types and the examples.
  const items = new Map<string, readonly VqaItem[]>();
  const itemsOf: ItemsOf = (name) => {
    let list = items.get(name);
    if (list === undefined) items.set(name, (list = ws.getDataset(name) === undefined ? [] : ws.loadItems(name)));
    return list;
  };
  if (comparison !== null) warnings.push(...comparisonWarnings(comparison));

  return {
    format: "lever.report/2",
    title: options.title,
    createdAt: now(),
    lever: leverVersion(),
    workspace: ws.dir,
    runs: runs.map((run) => ({
      id: run.id,
      kind: run.kind,
      name: run.name,
      status: run.status,
      seed: run.seed,
      createdAt: run.createdAt,
      finishedAt: run.finishedAt,
      error: run.error,
      config: run.config,
      stages: ws.listStages(run.id).map((s) => ({
        name: s.name,
        status: s.status,
        progressDone: s.progressDone,
        progressTotal: s.progressTotal,
        error: s.error,
      })),
    })),
    datasets: datasetNames(runs)
      .filter((name) => ws.getDataset(name) !== undefined)
      .map((name) => {
        const {
          examples: _examples,
          files: _files,
          ...summary
        } = summarizeDataset(ws.requireDataset(name), itemsOf(name));
        return summary;
      }),
    evaluations: evalRuns.map((run) => evaluationStats(ws, run)),
    curves: curves(runs, metricsOf, labelOf),
    summaries: summaries(runs, metricsOf, labelOf),
    warnings,
    comparison,
    headline:
      comparison === null ? null : headlineOf(comparison, loaded === null ? undefined : finalSources(loaded.methods)),
    answerTypes: loaded === null ? null : answerTypeAccuracy(loaded.methods, answerTypesOf(itemsOf(loaded.dataset))),
    stageCosts: stageCosts(ws, runs, metricsOf, labelOf),
    ...examples(ws, itemsOf, loaded, options.examples),
  };
}

function uniqueRuns(runs: RunRecord[]): RunRecord[] {
  return [...new Map(runs.map((r) => [r.id, r])).values()];
}

/** Datasets a run's config names: an eval run's query and index datasets, a training run's `dataset`. */
function datasetNames(runs: readonly RunRecord[]): string[] {
  const names = new Set<string>();
  for (const run of runs) {
    const config = run.config as Record<string, unknown> | null;
    if (config === null || typeof config !== "object") continue;
    for (const key of ["dataset", "index"]) {
      const value = config[key];
      if (typeof value === "string") names.add(value);
      else if (value !== null && typeof value === "object" && typeof (value as { name?: unknown }).name === "string")
        names.add((value as { name: string }).name);
    }
  }
  return [...names];
}

function evaluationStats(ws: Workspace, run: RunRecord): EvaluationStats {
  const config = evalConfigOf(run);
  const rows = ws.getPredictions(run.id);
  const queries = (run.config as { queries?: unknown }).queries;
  return {
    runId: run.id,
    dataset: config.dataset.name,
    index: config.index.name,
    queries: typeof queries === "string" ? queries : null,
    questions: new Set(rows.map((r) => r.questionId)).size,
    // By their short names (a selector by its training run or file name), as the comparison labels them.
    retrievers: [...new Set(rows.map((r) => shortRetriever(r.retriever)))],
    shots: [...new Set(rows.map((r) => r.shot))].sort((a, b) => a - b),
    predictions: rows.length,
    failures: rows.filter((r) => r.failure !== null || r.accuracy === null).length,
  };
}

/**
 * Values logged without step or epoch: a table, not a curve. A stage that ran again (resumed, retried)
 * logged its summary again: the last value per (run, stage, name) is the current one.
 */
type MetricsOf = (run: RunRecord) => readonly MetricRecord[];
/** A dataset's items (none when the dataset is not in the workspace). */
type ItemsOf = (dataset: string) => readonly VqaItem[];

function summaries(
  runs: readonly RunRecord[],
  metricsOf: MetricsOf,
  labelOf: (run: RunRecord) => string,
): StageSummary[] {
  return runs.flatMap((run) => {
    const last = new Map<string, StageSummary>();
    for (const m of metricsOf(run))
      if (m.step === null && m.epoch === null)
        last.set(`${m.stage}\u0000${m.name}`, {
          run: labelOf(run),
          runId: run.id,
          stage: m.stage,
          metric: m.name,
          value: m.value,
        });
    return [...last.values()];
  });
}

/**
 * One curve per stage and metric name — each its own chart and y scale, so SFT's loss and GRPO's are
 * never drawn against one axis — with a series per run; grouped by stage in order of first appearance.
 * Names logged only without step or epoch have no curve (`summaries`); `health.*` markers are the
 * health warnings' (listed in their section), not curves.
 */
function curves(runs: readonly RunRecord[], metricsOf: MetricsOf, labelOf: (run: RunRecord) => string): Curve[] {
  type Row = { run: RunRecord; step: number | null; epoch: number | null; value: number };
  const byKey = new Map<string, { stage: string; metric: string; rows: Row[] }>();
  for (const run of runs)
    for (const m of metricsOf(run)) {
      if (m.name.startsWith("health.")) continue;
      const key = `${m.stage}\u0000${m.name}`;
      let entry = byKey.get(key);
      if (entry === undefined) byKey.set(key, (entry = { stage: m.stage, metric: m.name, rows: [] }));
      entry.rows.push({ run, step: m.step, epoch: m.epoch, value: m.value });
    }
  const out: Curve[] = [];
  for (const { stage, metric, rows } of byKey.values()) {
    const axis = rows.some((r) => r.step !== null) ? "step" : "epoch";
    const byRun = new Map<string, { run: RunRecord; points: Point[] }>();
    for (const r of rows) {
      const x = axis === "step" ? r.step : r.epoch;
      if (x === null) continue;
      let series = byRun.get(r.run.id);
      if (series === undefined) byRun.set(r.run.id, (series = { run: r.run, points: [] }));
      series.points.push({ x, y: r.value });
    }
    if (byRun.size === 0) continue;
    out.push({
      stage,
      metric,
      title: metricTitle(metric),
      axis,
      series: [...byRun.values()].map((s) => ({ name: labelOf(s.run), ...downsample(s.points, MAX_CURVE_POINTS) })),
    });
  }
  const stageOrder = [...new Set(out.map((c) => c.stage))];
  return out.sort((a, b) => stageOrder.indexOf(a.stage) - stageOrder.indexOf(b.stage));
}

/** Question id → answer type of the query dataset's items. */
function answerTypesOf(items: readonly VqaItem[]): Map<string, string> {
  return new Map(items.map((item) => [item.questionId, item.answerType]));
}

/** Averages consecutive points in buckets of ⌈n / max⌉ (non-finite values are skipped). */
export function downsample(points: readonly Point[], max: number): { points: Point[]; perPoint: number } {
  if (points.length <= max) return { points: [...points], perPoint: 1 };
  const size = Math.ceil(points.length / max);
  const out: Point[] = [];
  for (let start = 0; start < points.length; start += size) {
    const bucket = points.slice(start, start + size).filter((p) => Number.isFinite(p.y));
    if (bucket.length === 0) continue;
    out.push({
      x: bucket.reduce((s, p) => s + p.x, 0) / bucket.length,
      y: bucket.reduce((s, p) => s + p.y, 0) / bucket.length,
    });
  }
  return { points: out, perPoint: size };
}

function runWarnings(ws: Workspace, runs: readonly RunRecord[], metricsOf: MetricsOf): HealthWarning[] {
  const out: HealthWarning[] = [];
  for (const run of runs) {
    const source = run.id;
    if (run.status === "failed") out.push({ source, message: `run failed: ${run.error ?? "no error recorded"}` });
    if (run.status === "running") out.push({ source, message: "run is not finished (still running)" });
    if (run.status === "interrupted")
      out.push({ source, message: "run is not finished: its process died (rerun the same command to resume it)" });
    for (const stage of ws.listStages(run.id)) {
      if (stage.status === "failed")
        out.push({ source, message: `stage "${stage.name}" failed: ${stage.error ?? "no error recorded"}` });
      for (const artifact of stage.artifacts) {
        if (basename(artifact.path) !== HEALTH_FILE) continue;
        const file = ws.resolveArtifact(artifact.path);
        if (!existsSync(file)) {
          out.push({ source, message: `health file ${artifact.path} is missing` });
          continue;
        }
        const stored = readHealthFile(file);
        if (stored === null)
          out.push({
            source,
            message: `health file ${artifact.path} is not {"warnings": [{epoch, code, message}, …]}`,
          });
        else for (const w of stored.warnings) out.push({ source, message: describeHealthWarning(w) });
      }
    }
    const reported = new Set<string>();
    for (const m of metricsOf(run)) {
      if (Number.isFinite(m.value) || reported.has(m.name)) continue;
      reported.add(m.name);
      const at = m.step !== null ? `step ${m.step}` : m.epoch !== null ? `epoch ${m.epoch}` : "a logged point";
      out.push({ source, message: `metric "${m.name}" is ${m.value} at ${at} (diverged?)` });
    }
    if (run.kind === "eval") {
      const rows = ws.getPredictions(run.id);
      const failed = rows.filter((r) => r.failure !== null || r.accuracy === null).length;
      if (failed > 0)
        out.push({
          source,
          message: `${failed} of ${rows.length} VLM calls failed; they are excluded from accuracies and counted`,
        });
    }
  }
  return out;
}

/** Methods with identical selections everywhere, by their labels (an id holds a checkpoint's full path). */
function comparisonWarnings(result: ComparisonResult): HealthWarning[] {
  const labelOf = new Map(result.rows.flatMap((r) => r.members.map((m) => [m.id, m.label] as const)));
  return result.overlap
    .filter((o) => o.n > 0 && o.identical === o.n)
    .map((o) => ({
      source: "comparison",
      message: `${labelOf.get(o.a) ?? o.a} and ${labelOf.get(o.b) ?? o.b} showed identical demonstrations on all ${o.n} questions at ${o.shot} shot(s): any accuracy difference between them is VLM noise, not selection`,
    }));
}

/**
 * Up to `count` questions at the largest evaluated shot, where the methods' accuracies disagree
 * first (question-id order), then others; each with every method's demonstrations and answer.
 */
function examples(
  ws: Workspace,
  itemsOf: ItemsOf,
  loaded: EvalMethods | null,
  count: number,
): { exampleShot: number | null; examples: Example[] } {
  if (loaded === null || count === 0) return { exampleShot: null, examples: [] };
  const shots = loaded.methods.flatMap((m) => m.rows.map((r) => r.shot));
  const shot = maxOf(shots);
  const rowsAt = loaded.methods
    .map((m) => ({
      method: m,
      rows: new Map(m.rows.filter((r) => r.shot === shot).map((r) => [r.questionId, r])),
    }))
    .filter((m) => m.rows.size > 0);
  const ids = [...new Set(rowsAt.flatMap((m) => [...m.rows.keys()]))].sort(compareQuestionIds);
  // Methods that answered a question disagree when their accuracies (or failures) differ.
  const disagree = (id: string) =>
    new Set(rowsAt.flatMap((m) => (m.rows.has(id) ? [String(m.rows.get(id)?.accuracy)] : []))).size > 1;
  const chosen = [...ids.filter(disagree), ...ids.filter((id) => !disagree(id))].slice(0, count);

  const queries = itemsById(itemsOf, [loaded.dataset]);
  const index = itemsById(itemsOf, loaded.indexDatasets);
  const predictions = new Map<string, Map<string, { answer: string | null; rawAnswer: string | null }>>();
  for (const m of loaded.methods) {
    const source = loaded.sources.get(m.id)!;
    const answers = new Map(
      ws
        .getPredictions(source.run.id, { retriever: source.retriever, shot })
        .map((p) => [p.questionId, { answer: p.answer, rawAnswer: p.rawAnswer }]),
    );
    predictions.set(m.id, answers);
  }
  return {
    exampleShot: shot,
    examples: chosen.map((id) => {
      const item = queries.get(id);
      return {
        questionId: id,
        imageId: item?.imageId ?? null,
        question: item?.question ?? null,
        answers: item ? answerCounts(item) : [],
        predictions: rowsAt.flatMap(({ method, rows }) => {
          const row = rows.get(id);
          if (row === undefined) return [];
          const said = predictions.get(method.id)?.get(id);
          return [
            {
              method: method.id,
              label: method.label,
              shot,
              demonstrations: row.demonstrations.map((d) => ({
                questionId: d,
                question: index.get(d)?.question ?? null,
                answer: index.get(d)?.answer ?? null,
              })),
              answer: said?.answer ?? null,
              rawAnswer: said?.rawAnswer ?? null,
              accuracy: row.accuracy,
              failure: row.failure,
            },
          ];
        }),
      };
    }),
  };
}

function itemsById(itemsOf: ItemsOf, datasets: readonly string[]): Map<string, VqaItem> {
  const out = new Map<string, VqaItem>();
  for (const name of datasets)
    for (const item of itemsOf(name)) if (!out.has(item.questionId)) out.set(item.questionId, item);
  return out;
}

function answerCounts(item: VqaItem): { answer: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const a of item.answers) counts.set(a.answer, (counts.get(a.answer) ?? 0) + 1);
  return [...counts].map(([answer, count]) => ({ answer, count })).sort((a, b) => b.count - a.count);
}
