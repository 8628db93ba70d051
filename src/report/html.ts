/**
 * The report as one self-contained HTML file: inline CSS, charts as inline SVG (src/report/charts.ts),
 * no scripts, no external styles, fonts or images, so it opens offline and can be mailed or archived.
 * A Content-Security-Policy meta tag forbids loading anything, as a second line of defence. Every
 * piece of user text (questions, answers, run names, configs) goes through `escapeHtml`.
 *
 * The result comes first: the headline (best method vs the baseline per shot), the comparison with
 * accuracy by answer type, then health warnings, examples, what each stage cost, the training curves
 * grouped by stage, the data and the configs. A significantly better Δ is green, a significantly worse
 * one red and marked "worse" in words, the rest grey.
 */

import {
  type CellComparison,
  type CellResult,
  type ComparedMetric,
  type ComparisonResult,
  VQA_COMPARED_METRIC,
} from "../metrics/compare.js";
import type { AnswerTypes, StageCost } from "./breakdown.js";
import { barChart, lineChart } from "./charts.js";
import { accuracyText, holmText, legend, levelText, seedText, significanceMark } from "./compare-render.js";
import { deltaText, type Headline, type Verdict, verdictOf, verdictText } from "./headline.js";
import { stageTitle } from "./metric-names.js";
import type { Curve, Example, ReportModel, StageSummary } from "./model.js";
import { formatNumber, formatPValue } from "./table.js";

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

const e = escapeHtml;

const STYLE = `
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 24px 48px; color: #1b1b1b; }
h1 { font-size: 24px; margin: 24px 0 4px; } h2 { font-size: 19px; margin: 32px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 20px 0 6px; }
nav a { margin-right: 14px; } .meta { color: #555; }
table { border-collapse: collapse; margin: 8px 0 12px; } th, td { border: 1px solid #ddd; padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: #f4f5f7; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f8fa; padding: 10px; overflow: auto; max-height: 420px; font-size: 12px; }
.cell .acc { font-weight: 600; } .cell .ci, .cell .p, .cell .mde, .cell .seeds { color: #555; font-size: 12px; }
.cell .fail { color: #a15c00; font-size: 12px; }
.sig { font-weight: 600; } .sig.better { color: #0a6b2d; } .sig.worse { color: #b3261e; } .ns { color: #777; }
.headline p.sentence { font-size: 15px; margin: 6px 0; }
.warnings li { margin: 2px 0; } .warnings .src { font-family: ui-monospace, monospace; color: #555; }
figure { display: inline-block; margin: 8px 16px 8px 0; vertical-align: top; } figcaption { color: #555; font-size: 12px; }
.example { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
.example ol { margin: 4px 0 4px 18px; padding: 0; } .right { color: #0a6b2d; } .wrong { color: #a11; }
.legend p { margin: 2px 0; color: #444; font-size: 13px; }
`;

const NAV = [
  ["headline", "Headline"],
  ["comparison", "Comparison"],
  ["health", "Health"],
  ["examples", "Examples"],
  ["stages", "Stages"],
  ["training", "Training"],
  ["data", "Data"],
  ["config", "Config"],
] as const;

export async function renderReportHtml(model: ReportModel): Promise<string> {
  const sections = [
    headlineSection(model.headline, model.comparison),
    await comparisonSection(model.comparison, model.answerTypes),
    healthSection(model),
    examplesSection(model),
    stagesSection(model.stageCosts),
    await trainingSection(model.curves, model.summaries),
    dataSection(model),
    configSection(model),
  ];
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    `<title>${e(model.title)}</title>`,
    `<style>${STYLE}</style>`,
    "</head>",
    "<body>",
    `<h1>${e(model.title)}</h1>`,
    `<p class="meta">Generated ${e(model.createdAt)} by lever ${e(model.lever.version)} (commit <code>${e(model.lever.commit ?? "unknown: not run from a git checkout")}</code>) from workspace <code>${e(model.workspace)}</code>; runs ${model.runs
      .map((r) => `<code>${e(r.id)}</code>`)
      .join(", ")}.</p>`,
    `<nav>${NAV.map(([id, text]) => `<a href="#${id}">${text}</a>`).join("")}</nav>`,
    ...sections,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

function configSection(model: ReportModel): string {
  const runs = model.runs.map((run) => {
    const stages = run.stages
      .map((s) => `${e(s.name)}: ${e(s.status)} (${s.progressDone}/${s.progressTotal})`)
      .join("; ");
    return [
      `<details${model.runs.length <= 3 ? " open" : ""}><summary><code>${e(run.id)}</code>${run.name ? ` “${e(run.name)}”` : ""} — ${e(run.kind)}, ${e(run.status)}, seed ${run.seed}, created ${e(run.createdAt)}${stages ? `; stages ${stages}` : ""}</summary>`,
      `<pre>${e(JSON.stringify(run.config, null, 2))}</pre>`,
      "</details>",
    ].join("\n");
  });
  return section("config", "Experiment configuration", runs.join("\n"));
}

function dataSection(model: ReportModel): string {
  const parts: string[] = [];
  if (model.datasets.length > 0)
    parts.push(
      table(
        ["dataset", "split", "source", "items", "images", "questions / image", "answer types", "mean agreement"],
        model.datasets.map((d) => [
          e(d.name),
          e(d.split),
          e(d.source),
          num(String(d.items)),
          num(String(d.images)),
          num(d.images === 0 ? "n/a" : formatNumber(d.items / d.images, 2)),
          e(d.answerTypes.map((a) => `${a.value} ${a.count}`).join(", ")),
          num(formatNumber(d.agreement.mean, 2)),
        ]),
      ),
    );
  if (model.evaluations.length > 0)
    parts.push(
      "<h3>Evaluations</h3>",
      table(
        ["run", "queries", "index", "questions", "retrievers", "shots", "predictions", "failed calls"],
        model.evaluations.map((v) => [
          `<code>${e(v.runId)}</code>`,
          e(`${v.dataset}${v.queries ? ` (${v.queries})` : ""}`),
          e(v.index),
          num(String(v.questions)),
          e(v.retrievers.join(", ")),
          e(v.shots.join(", ")),
          num(String(v.predictions)),
          num(String(v.failures)),
        ]),
      ),
    );
  return section("data", "Data", parts.length > 0 ? parts.join("\n") : "<p>No dataset is named by these runs.</p>");
}

async function trainingSection(curves: readonly Curve[], summaries: readonly StageSummary[]): Promise<string> {
  if (curves.length === 0 && summaries.length === 0)
    return section("training", "Training curves", "<p>These runs logged no metrics.</p>");
  const figures: string[] = [];
  if (summaries.length > 0)
    figures.push(
      "<h3>Stage summaries</h3>",
      table(
        ["run", "stage", "metric", "value"],
        summaries.map((s) => [
          e(s.run === s.runId ? s.run : `${s.run} (${s.runId})`),
          e(s.stage),
          e(s.metric),
          num(summaryValue(s.value)),
        ]),
      ),
    );
  for (const stage of [...new Set(curves.map((c) => c.stage))]) {
    const ofStage = curves.filter((c) => c.stage === stage);
    figures.push(
      `<h3>${e(stageTitle(stage))} <span class="meta">(stage ${e(stage)}, ${ofStage.length} charts)</span></h3>`,
    );
    for (const curve of ofStage) figures.push(await curveFigure(curve));
  }
  return section("training", "Training curves", figures.join("\n"));
}

/** One metric of one stage: its own chart and y scale, titled readably, the logged name in the caption. */
async function curveFigure(curve: Curve): Promise<string> {
  const averaged = Math.max(...curve.series.map((s) => s.perPoint));
  const svg = await lineChart({
    title: curve.title,
    xTitle: curve.axis,
    yTitle: curve.title,
    series: curve.series,
    integerX: true,
  });
  const note = averaged > 1 ? `mean per ${averaged} ${curve.axis}s` : `per ${curve.axis}`;
  return `<figure class="chart">${svg}<figcaption><code>${e(curve.metric)}</code>, ${e(note)}</figcaption></figure>`;
}

function healthSection(model: ReportModel): string {
  if (model.warnings.length === 0) return section("health", "Health warnings", "<p>No warnings.</p>");
  const items = model.warnings.map((w) => `<li><span class="src">${e(w.source)}</span>: ${e(w.message)}</li>`);
  return section("health", "Health warnings", `<ul class="warnings">${items.join("")}</ul>`);
}

/** What the compared values are (VQA accuracy unless the comparison names its task's metric). */
function metricOf(comparison: ComparisonResult | null): ComparedMetric {
  return comparison?.metric ?? VQA_COMPARED_METRIC;
}

function headlineSection(headline: Headline | null, comparison: ComparisonResult | null): string {
  if (headline === null || comparison === null)
    return section("headline", "Headline", "<p>No method was compared with a baseline among these runs.</p>");
  const rows = headline.rows.map((r) => [
    num(String(r.shot)),
    e(r.label),
    num(formatNumber(r.accuracy, 2)),
    num(r.baselineAccuracy === null ? "n/a" : formatNumber(r.baselineAccuracy, 2)),
    `<td class="num ${verdictClass(r.verdict)}">${e(deltaText(r.difference, r.ci))}</td>`,
    num(r.pHolm === null ? "—" : formatPValue(r.pHolm)),
    `<td class="${verdictClass(r.verdict)}">${e(verdictText(r.verdict))}</td>`,
  ]);
  return section(
    "headline",
    "Headline",
    [
      `<div class="headline"><p class="sentence">${e(headline.sentence)}</p>`,
      table(
        [
          "shot",
          "best method",
          metricOf(comparison).name,
          `baseline (${headline.baseline})`,
          `Δ [${levelText(comparison.settings)} CI]`,
          "Holm p",
          "verdict",
        ],
        rows,
      ),
      `<p class="meta">Best = highest ${e(metricOf(comparison).name)} among the methods under test at that shot (not the baseline, not the simulator's references), on ${e(headline.table)} ${e(metricOf(comparison).unit)}s (${headline.questions}); Δ in points on the questions both scored; significant = Holm-adjusted p ≤ ${comparison.settings.alpha}. Details in the comparison below.</p></div>`,
    ].join("\n"),
  );
}

/** The colour class of a Δ: green only when significantly better, red when significantly worse. */
function verdictClass(verdict: Verdict): string {
  return verdict === "better" ? "sig better" : verdict === "worse" ? "sig worse" : "ns";
}

function stagesSection(costs: readonly StageCost[]): string {
  if (costs.length === 0)
    return section("stages", "Stages: time and VLM calls", "<p>These runs recorded no stages.</p>");
  const rows = costs.map((c) => [
    e(c.run === c.runId ? c.run : `${c.run} (${c.runId})`),
    e(c.stage),
    e(c.status),
    num(c.seconds === null ? "not finished" : duration(c.seconds)),
    num(c.vlmCalls === null ? "—" : String(c.vlmCalls)),
    num(c.cacheHits === null ? "—" : String(c.cacheHits)),
  ]);
  return section(
    "stages",
    "Stages: time and VLM calls",
    [
      table(["run", "stage", "status", "wall time", "VLM calls", "cache hits"], rows),
      '<p class="meta">Wall time of the stage\'s last execution, start to finish. VLM calls: the requests the backend answered or failed, cache hits apart, as the beam search and rollouts log them and as each <code>lever eval</code> call stored them (summed); — where a stage recorded none (training without the VLM, or online GRPO, which does not count them yet).</p>',
    ].join("\n"),
  );
}

/** "42.1 s", "12 min 5 s", "3 h 02 min". */
function duration(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const s = Math.round(seconds);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}

function answerTypesHtml(answerTypes: AnswerTypes | null): string[] {
  if (answerTypes === null || answerTypes.rows.length === 0) return [];
  return [
    "<h3>Accuracy by answer type</h3>",
    table(
      ["method", "shot", ...answerTypes.types],
      answerTypes.rows.map((r) => [
        e(r.label),
        num(String(r.shot)),
        ...r.cells.map((c) => num(c.accuracy === null ? "—" : `${formatNumber(c.accuracy, 2)} (n ${c.n})`)),
      ]),
    ),
    '<p class="meta">Mean VQA accuracy (%) on every evaluated question of that answer type (the query dataset\'s <code>answer_type</code>), failed calls left out; n = questions scored.</p>',
  ];
}

async function comparisonSection(result: ComparisonResult | null, answerTypes: AnswerTypes | null): Promise<string> {
  if (result === null) return section("comparison", "Comparison", "<p>No evaluation run among these runs.</p>");
  const parts = [
    `<div class="legend">${legend(result)
      .map((l) => `<p>${e(l)}</p>`)
      .join("")}</div>`,
  ];
  const labelOf = new Map(result.rows.map((r) => [r.id, r.isBaseline ? `${r.label} (baseline)` : r.label]));
  const widest = result.tables[result.tables.length - 1];
  if (widest !== undefined) {
    const bars = widest.rows.flatMap((r) =>
      r.cells.flatMap((c) =>
        c === null || c.accuracy === null
          ? []
          : [
              {
                series: labelOf.get(r.row) as string,
                group: `${c.shot} shot${c.shot === 1 ? "" : "s"}`,
                value: c.accuracy,
                lower: c.ci?.lower,
                upper: c.ci?.upper,
              },
            ],
      ),
    );
    if (bars.length > 0) {
      const svg = await barChart({
        title: `${metricOf(result).name} by shot (${widest.label} ${metricOf(result).unit}s)`,
        xTitle: "shots",
        yTitle: metricOf(result).axis,
        bars,
      });
      parts.push(
        `<figure class="chart">${svg}<figcaption>bars: ${e(metricOf(result).name)}; lines: ${Math.round(100 * result.settings.confidence)}% bootstrap CI</figcaption></figure>`,
      );
    }
  }
  for (const t of result.tables) {
    parts.push(
      `<h3>${e(t.label)} questions (${t.questions}, question-id order)</h3>`,
      table(
        ["method", ...result.shots.map((s) => `shot ${s}`)],
        t.rows.map((r) => [e(labelOf.get(r.row) as string), ...r.cells.map((c) => (c === null ? "" : cellHtml(c)))]),
      ),
      `<p class="meta">${t.comparisons} comparisons in the Holm family${
        t.mde === null
          ? "."
          : `; MDE ${formatNumber(t.mde.lower, 2)}–${formatNumber(t.mde.upper, 2)} points (differences smaller than this are not something ${t.questions} questions can show).`
      }</p>`,
    );
  }
  if (result.overlap.length > 0) {
    const methodLabel = new Map(result.rows.flatMap((r) => r.members.map((m) => [m.id, m.label] as const)));
    const shots = [...new Set(result.overlap.map((o) => o.shot))].sort((a, b) => a - b);
    const pairs = [...new Set(result.overlap.map((o) => `${o.a}\u0000${o.b}`))];
    parts.push(
      "<h3>Selection overlap</h3>",
      '<p class="meta">Share of questions on which two methods showed identical demonstrations (same ids, same order).</p>',
      table(
        ["methods", ...shots.map((s) => `shot ${s}`)],
        pairs.map((pair) => {
          const [a, b] = pair.split("\u0000");
          return [
            e(`${methodLabel.get(a)} vs ${methodLabel.get(b)}`),
            ...shots.map((shot) => {
              const o = result.overlap.find((x) => x.shot === shot && x.a === a && x.b === b);
              return o === undefined || o.share === null
                ? ""
                : num(`${formatNumber(100 * o.share, 1)}% (${o.identical}/${o.n})`);
            }),
          ];
        }),
      ),
    );
  }
  parts.push(...answerTypesHtml(answerTypes));
  if (result.notes.length > 0) parts.push(`<ul>${result.notes.map((n) => `<li>${e(n)}</li>`).join("")}</ul>`);
  return section("comparison", "Comparison", parts.join("\n"));
}

function cellHtml(cell: CellResult): string {
  const lines = [`<div class="acc">${e(accuracyText(cell))}</div>`];
  if (cell.comparison !== null) lines.push(...comparisonHtml(cell.comparison));
  return `<div class="cell">${lines.join("")}</div>`;
}

function comparisonHtml(c: CellComparison): string[] {
  const mark = significanceMark(c);
  const verdict = verdictOf(c);
  const test = c.mcnemar === null ? "sign-flip" : `McNemar ${c.mcnemar.onlyRow}/${c.mcnemar.onlyBaseline}`;
  return [
    `<div class="${verdictClass(verdict)}">Δ ${e(deltaText(c.difference, c.ci))} ${mark}${verdict === "worse" ? " worse" : ""}</div>`,
    `<div class="p">${e(test)}, p ${e(formatPValue(c.pValue))}, ${c.reference ? "reference, outside Holm" : `Holm ${e(holmText(c))}`}</div>`,
    `<div class="mde">${c.pairs} pairs${c.excluded > 0 ? `, ${c.excluded} excluded` : ""}${c.mde === null ? "" : `, MDE ${e(formatNumber(c.mde, 2))}`}</div>`,
    ...(c.seeds === null ? [] : [`<div class="seeds">Δ ${e(seedText(c.seeds))}</div>`]),
  ];
}

function examplesSection(model: ReportModel): string {
  if (model.examples.length === 0) return section("examples", "Examples", "<p>No examples.</p>");
  const metric = metricOf(model.comparison);
  const cards = model.examples.map((x) => exampleHtml(x, metric));
  return section(
    "examples",
    `Examples (${model.exampleShot} shot${model.exampleShot === 1 ? "" : "s"})`,
    `<p class="meta">Questions where the methods disagree come first. Demonstrations are listed in prompt order: the last one is next to the question.</p>\n${cards.join("\n")}`,
  );
}

function exampleHtml(x: Example, metric: ComparedMetric): string {
  const answers = x.answers.map((a) => `${e(a.answer)} ×${a.count}`).join(", ");
  const predictions = x.predictions.map((p) => {
    const demos = p.demonstrations.map(
      (d) =>
        `<li>${d.question === null ? `<em>question ${e(d.questionId)} (not in the index dataset)</em>` : `${e(d.question)} → <b>${e(d.answer ?? "")}</b>`} <span class="meta">(${e(d.questionId)})</span></li>`,
    );
    const outcome =
      p.failure !== null || p.accuracy === null
        ? `<span class="wrong">call failed: ${e(p.failure ?? "no answer")}</span>`
        : metric.share
          ? `answer <b>${e(p.answer ?? "")}</b> — accuracy <span class="${p.accuracy >= 1 ? "right" : "wrong"}">${e(formatNumber(100 * p.accuracy, 0))}%</span>`
          : `<b>${e(p.answer ?? "")}</b> — ${e(metric.name)} ${e(formatNumber(100 * p.accuracy, 1))}`;
    return `<div><b>${e(p.label)}</b>: ${outcome}${demos.length > 0 ? `<ol>${demos.join("")}</ol>` : ""}</div>`;
  });
  return [
    '<div class="example">',
    `<p><b>Q ${e(x.questionId)}</b>${x.imageId === null ? "" : ` (image ${e(x.imageId)})`}: ${x.question === null ? "<em>not in the query dataset</em>" : e(x.question)}</p>`,
    `<p class="meta">annotators: ${answers}</p>`,
    ...predictions,
    "</div>",
  ].join("\n");
}

function section(id: string, title: string, body: string): string {
  return `<section id="${id}">\n<h2>${e(title)}</h2>\n${body}\n</section>`;
}

/** A table from already-escaped cell HTML; a cell that is a whole `<td …>` (see `num`) is used as is. */
function table(headers: readonly string[], rows: readonly string[][]): string {
  const head = `<tr>${headers.map((h) => `<th>${e(h)}</th>`).join("")}</tr>`;
  const body = rows.map((r) => `<tr>${r.map((c) => (c.startsWith("<td") ? c : `<td>${c}</td>`)).join("")}</tr>`);
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${body.join("\n")}\n</tbody>\n</table>`;
}

/** Counts as integers, large values with one decimal, others with four significant digits; n/a when not finite. */
function summaryValue(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 1000 ? value.toFixed(1) : String(Number(value.toPrecision(4)));
}

/** A right-aligned numeric cell. */
function num(text: string): string {
  return `<td class="num">${e(text)}</td>`;
}
