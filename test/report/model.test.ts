import { beforeAll, describe, expect, it } from "vitest";
import { renderReportHtml } from "../../src/report/html.js";
import { buildReportModel, downsample, type ReportModel } from "../../src/report/model.js";
import { ReportSettingsSchema } from "../../src/report/options.js";
import { Workspace } from "../../src/store/workspace.js";
import { HOSTILE_QUESTION, type ReportWorkspace, reportWorkspace } from "./report-workspace.js";

let fixture: ReportWorkspace;
let model: ReportModel;
let html: string;

beforeAll(async () => {
  fixture = reportWorkspace();
  const ws = Workspace.open(fixture.dir, { create: false });
  try {
    model = buildReportModel(
      ws,
      {
        ...ReportSettingsSchema.parse({ examples: 3, resamples: 200, warnings: ["checked by hand <b>"] }),
        runs: [fixture.evalRun, "sft-a"],
      },
      () => "2025-01-01T00:00:00.000Z",
    );
  } finally {
    ws.close();
  }
  html = await renderReportHtml(model);
});

describe("buildReportModel", () => {
  it("has every section: runs with configs, datasets, evaluations, curves, warnings, comparison, examples", () => {
    expect(model.format).toBe("lever.report/1");
    expect(model.runs.map((r) => [r.id, r.kind])).toEqual([
      [fixture.evalRun, "eval"],
      [fixture.trainRun, "sft"],
    ]);
    expect(model.runs[1].config).toEqual({ stage: "sft", dataset: "ix", lr: 0.001 });
    expect(model.datasets.map((d) => [d.name, d.items, d.images])).toEqual([
      ["q", 8, 4],
      ["ix", 10, 10],
    ]);
    expect(model.evaluations).toEqual([
      {
        runId: fixture.evalRun,
        dataset: "q",
        index: "ix",
        queries: "all",
        questions: 8,
        retrievers: ["random", "topk-image"],
        shots: [1, 2],
        predictions: 32,
        failures: 1,
      },
    ]);
  });

  it("draws every logged metric by name: per-step series on steps, per-epoch ones on epochs", () => {
    expect(model.curves.map((c) => [c.metric, c.axis, c.series.map((s) => s.name)])).toEqual([
      ["loss", "step", ["sft-a"]],
      ["gradNorm", "step", ["sft-a"]],
      ["epoch.valLoss", "epoch", ["sft-a"]],
    ]);
    expect(model.curves[0].series[0].points[3]).toEqual({ x: 3, y: 0.5 });
    // A value logged without step or epoch is a stage summary (a table row), not an empty chart; the
    // last one logged is current (a resumed stage logs its summary again).
    expect(model.summaries).toEqual([
      { run: "sft-a", runId: fixture.trainRun, stage: "sft", metric: "vlm.calls", value: 1290 },
    ]);
    expect(model.curves[2].series[0].points).toEqual([
      { x: 0, y: 1.5 },
      { x: 1, y: 1.25 },
    ]);
  });

  it("collects health warnings from the caller, health.json files, failed calls and identical selections", () => {
    expect(model.warnings).toEqual([
      { source: "given", message: "checked by hand <b>" },
      { source: fixture.evalRun, message: "1 of 32 VLM calls failed; they are excluded from accuracies and counted" },
      { source: fixture.trainRun, message: "epoch 2: advantage std 0.006 < 0.01: almost no learning signal" },
      {
        // At one shot both retrievers pick index question (i mod 10) + 1 for query i.
        source: "comparison",
        message: `${fixture.evalRun}/random and ${fixture.evalRun}/topk-image showed identical demonstrations on all 8 questions at 1 shot(s): any accuracy difference between them is VLM noise, not selection`,
      },
    ]);
    const overlap = model.comparison!.overlap;
    expect(overlap.map((o) => [o.shot, o.identical, o.n])).toEqual([
      [1, 8, 8],
      [2, 0, 8], // second pick differs: (i + 1) vs (i + 2) mod 10
    ]);
  });

  it("compares the eval run's methods against random on the questions both scored", () => {
    const comparison = model.comparison!;
    expect(comparison.baseline).toBe(`${fixture.evalRun}/random`);
    expect(comparison.tables.map((t) => t.label)).toEqual(["all"]);
    expect(comparison.notes).toContain('subset "first 100" skipped: only 8 questions were evaluated');
    const [one, two] = comparison.tables[0].rows[1].cells.map((c) => c!.comparison!);
    // Shot 1: question 107 failed → 7 pairs; topk 5 right vs random 2 → Δ = 3/7; McNemar 3/0 → p = .25.
    expect(one).toMatchObject({ pairs: 7, excluded: 1, mcnemar: { onlyRow: 3, onlyBaseline: 0 } });
    expect(one.difference).toBeCloseTo(300 / 7, 10);
    expect(one.pValue).toBeCloseTo(0.25, 15);
    // Shot 2: 6.3 vs 2.6 over 8 → Δ = 46.25; McNemar 4/0 → p = .125; Holm over the two: .25 and .25.
    expect(two.difference).toBeCloseTo(46.25, 10);
    expect(two.pValue).toBeCloseTo(0.125, 15);
    expect(one.pHolm).toBeCloseTo(0.25, 15);
    expect(two.pHolm).toBeCloseTo(0.25, 15);
  });

  it("shows examples at the largest shot, questions where the methods disagree first", () => {
    expect(model.exampleShot).toBe(2);
    expect(model.examples.map((x) => x.questionId)).toEqual(["100", "102", "103"]);
    const first = model.examples[0];
    expect(first.question).toBe(HOSTILE_QUESTION);
    expect(first.answers).toEqual([
      { answer: "a0", count: 7 },
      { answer: "other", count: 3 },
    ]);
    const random = first.predictions.find((p) => p.label === "random")!;
    expect(random.demonstrations).toEqual([
      { questionId: "1", question: "index question 0?", answer: "ans0" },
      { questionId: "2", question: "index question 1?", answer: "ans1" },
    ]);
    expect(random).toMatchObject({ answer: "<wrong>", accuracy: 0, failure: null });
  });

  it("averages long series into buckets for the charts", () => {
    const points = Array.from({ length: 10 }, (_, i) => ({ x: i, y: i === 4 ? Number.NaN : i }));
    expect(downsample(points, 20)).toEqual({ points, perPoint: 1 });
    // Buckets of 4: [0..3] → (1.5, 1.5); [4..7] without the NaN → x (5+6+7)/3 = 6, y 6; [8, 9] → 8.5.
    expect(downsample(points, 3)).toEqual({
      points: [
        { x: 1.5, y: 1.5 },
        { x: 6, y: 6 },
        { x: 8.5, y: 8.5 },
      ],
      perPoint: 4,
    });
  });
});

describe("renderReportHtml", () => {
  it("renders user text as text: a question containing <script> never becomes a script", () => {
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; what is &lt;b&gt;this&lt;/b&gt;?");
    expect(html).toContain("answer <b>&lt;wrong&gt;</b>");
    expect(html).toContain("checked by hand &lt;b&gt;");
  });

  it("escapes a failed call's error text too", async () => {
    const failed = structuredClone(model);
    failed.examples[0].predictions[0] = {
      ...failed.examples[0].predictions[0],
      accuracy: null,
      answer: null,
      failure: "HTTP 500 <html><script>x()</script>",
    };
    const text = await renderReportHtml(failed);
    expect(text).toContain("call failed: HTTP 500 &lt;html&gt;&lt;script&gt;x()&lt;/script&gt;");
    expect(text).not.toMatch(/<script/i);
  });

  it("is self-contained: inline SVG charts and styles, nothing to fetch, a CSP that forbids fetching", () => {
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
    expect((html.match(/<svg /g) ?? []).length).toBe(4); // three curves and the accuracy bars
    expect(html).not.toMatch(/<link|<img|<iframe|<object|@import|url\(|\ssrc=/i);
    // The only URLs are the SVG namespace declarations.
    const urls = html.match(/https?:\/\/[^"'\s<>]+/g) ?? [];
    expect(new Set(urls)).toEqual(new Set(["http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"]));
  });

  it("has a section per part of the report with its content", () => {
    for (const id of ["config", "data", "training", "health", "comparison", "examples"])
      expect(html).toContain(`<section id="${id}">`);
    expect(html).toContain("&quot;lr&quot;: 0.001");
    expect(html).toMatch(/<h3>all questions \(8, question-id order\)<\/h3>/);
    expect(html).toMatch(/McNemar 4\/0, p 0\.1250, Holm 0\.2500/);
    expect(html).toContain("Selection overlap");
    expect(html).toContain("advantage std 0.006 &lt; 0.01");
    expect(html).toMatch(
      /<h3>Stage summaries<\/h3>[\s\S]*<td>sft-a \(sft-\d+\)<\/td><td>sft<\/td><td>vlm\.calls<\/td><td[^>]*>1290<\/td>/,
    );
  });
});
