import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { headlineOf, verdictOf } from "../../src/report/headline.js";
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
    expect(model.format).toBe("lever.report/2");
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
        message:
          "random and topk-image showed identical demonstrations on all 8 questions at 1 shot(s): any accuracy difference between them is VLM noise, not selection",
      },
    ]);
    const overlap = model.comparison!.overlap;
    expect(overlap.map((o) => [o.shot, o.identical, o.n])).toEqual([
      [1, 8, 8],
      [2, 0, 8], // second pick differs: (i + 1) vs (i + 2) mod 10
    ]);
  });

  it("names a selector by its short label, never its checkpoint's absolute path (evaluations, warnings)", () => {
    const other = reportWorkspace();
    const ws = Workspace.open(other.dir, { create: false });
    try {
      const selector = "selector:/somewhere/ckpts/grpo_epoch2.safetensors@0123456789ab";
      ws.putPredictions(
        ws.getPredictions(other.evalRun, { retriever: "random" }).map((r) => ({ ...r, retriever: selector })),
      );
      const built = buildReportModel(
        ws,
        { ...ReportSettingsSchema.parse({ examples: 0, resamples: 100 }), runs: [other.evalRun] },
        () => "2025-01-01T00:00:00.000Z",
      );
      expect([...built.evaluations[0].retrievers].sort()).toEqual(["random", "selector:grpo_epoch2", "topk-image"]);
      expect(built.warnings.map((w) => w.message)).toContain(
        "random and selector:grpo_epoch2 showed identical demonstrations on all 8 questions at 1 shot(s): any accuracy difference between them is VLM noise, not selection",
      );
      expect(JSON.stringify({ e: built.evaluations, w: built.warnings })).not.toContain("/somewhere/");
    } finally {
      ws.close();
    }
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

describe("the report's result first", () => {
  it("states the best method vs the baseline per shot in one sentence and one table", () => {
    const headline = model.headline!;
    expect(headline.baseline).toBe("random");
    expect(headline.table).toBe("all");
    // topk-image is the only method under test; Δ and Holm p as in the comparison test above.
    expect(headline.rows.map((r) => [r.shot, r.label, r.verdict])).toEqual([
      [1, "topk-image", "no significant difference"],
      [2, "topk-image", "no significant difference"],
    ]);
    expect(headline.rows[0].difference).toBeCloseTo(300 / 7, 10);
    expect(headline.rows[0].accuracy).toBeCloseTo(500 / 7, 10); // 5 of 7 scored right
    expect(headline.rows[0].baselineAccuracy).toBeCloseTo(25, 10); // 2 of 8
    expect(headline.rows[1].pHolm).toBeCloseTo(0.25, 15);
    const ci = "\\[[+-]\\d+\\.\\d\\d, [+-]\\d+\\.\\d\\d\\]";
    expect(headline.sentence).toMatch(
      new RegExp(
        "^Best method against the baseline random on all 8 questions: " +
          `at 1 shot topk-image 71\\.43 vs 25\\.00 \\(Δ \\+42\\.86 ${ci}, Holm p 0\\.2500\\): no significant difference; ` +
          `at 2 shots topk-image 78\\.75 vs 32\\.50 \\(Δ \\+46\\.25 ${ci}, Holm p 0\\.2500\\): no significant difference\\.$`,
      ),
    );
  });

  it("opens with the headline, then the comparison, before any chart or training curve", () => {
    const at = (needle: string) => html.indexOf(needle);
    expect(at('<section id="headline">')).toBeGreaterThan(0);
    expect(at('<section id="headline">')).toBeLessThan(at("<svg"));
    expect(at('<section id="headline">')).toBeLessThan(at('<section id="comparison">'));
    expect(at('<section id="comparison">')).toBeLessThan(at('<section id="training">'));
    expect(at('<section id="comparison">')).toBeLessThan(at('<section id="config">'));
    const headline = html.slice(at('<section id="headline">'), at('<section id="comparison">'));
    expect(headline).toContain("Best method against the baseline random on all 8 questions: at 1 shot topk-image");
    expect(headline).toMatch(/<th>best method<\/th>/);
    expect(headline).toMatch(/<td>topk-image<\/td><td class="num">71\.43<\/td><td class="num">25\.00<\/td>/);
  });

  it("takes the headline's confidence level and α from the comparison, as the legend does", async () => {
    expect(html).toContain("<th>Δ [95% CI]</th>");
    expect(html).toContain("significant = Holm-adjusted p ≤ 0.05.");
    const strict = structuredClone(model);
    Object.assign(strict.comparison!.settings, { confidence: 0.99, alpha: 0.01 });
    const text = await renderReportHtml(strict);
    const headline = text.slice(text.indexOf('<section id="headline">'), text.indexOf('<section id="comparison">'));
    expect(headline).toContain("<th>Δ [99% CI]</th>");
    expect(headline).toContain("significant = Holm-adjusted p ≤ 0.01.");
  });

  it("colours a significantly worse Δ red and says so; green only for a significantly better one", async () => {
    expect(verdictOf({ significant: true, difference: -3 })).toBe("worse");
    expect(verdictOf({ significant: true, difference: 3 })).toBe("better");
    expect(verdictOf({ significant: false, difference: 3 })).toBe("no significant difference");
    const worse = structuredClone(model);
    const cell = worse.comparison!.tables[0].rows[1].cells[0]!;
    Object.assign(cell.comparison!, { difference: -20, significant: true, pHolm: 0.01 });
    worse.headline = headlineOf(worse.comparison!); // derived from the changed comparison, not set by hand
    expect(worse.headline?.rows[0]).toMatchObject({ difference: -20, verdict: "worse" });
    const text = await renderReportHtml(worse);
    expect(text).toMatch(/<div class="sig worse">Δ -20\.00 \[[^\]]*\] \* worse<\/div>/);
    expect(text).toMatch(/<td class="sig worse">significantly worse<\/td>/);
    expect(text).toMatch(/\.sig\.worse \{ color: #b3261e; \}/);
    expect(text).not.toMatch(/class="sig better"[^<]*-20\.00/);
    const better = structuredClone(model);
    Object.assign(better.comparison!.tables[0].rows[1].cells[0]!.comparison!, { significant: true });
    expect(await renderReportHtml(better)).toMatch(/<div class="sig better">Δ \+42\.86/);
  });
});

describe("the report's breakdowns", () => {
  it("gives accuracy by answer type (yes/no, number, other) per method and shot", () => {
    const types = model.answerTypes!;
    expect(types.types).toEqual(["yes/no", "number", "other"]);
    const row = (label: string, shot: number) =>
      types.rows.find((r) => r.label === label && r.shot === shot)!.cells.map((c) => [c.type, c.n, c.accuracy]);
    // random at 1 shot: [0, 1 | 0, 0 | 1, 0, 0, 0]; topk-image: [1, 1 | 0, 1 | 1, 0, 1, failed].
    expect(row("random", 1)).toEqual([
      ["yes/no", 2, 50],
      ["number", 2, 0],
      ["other", 4, 25],
    ]);
    const topk = row("topk-image", 1);
    expect(topk.slice(0, 2)).toEqual([
      ["yes/no", 2, 100],
      ["number", 2, 50],
    ]);
    expect(topk[2][1]).toBe(3);
    expect(topk[2][2]).toBeCloseTo(200 / 3, 10);
    // random at 2 shots: number questions [0, 0.6] → 30.
    expect(row("random", 2)[1]).toEqual(["number", 2, 30]);
    expect(html).toMatch(
      /<h3>Accuracy by answer type<\/h3>[\s\S]*<th>yes\/no<\/th><th>number<\/th><th>other<\/th>[\s\S]*<td>random<\/td><td class="num">1<\/td><td class="num">50\.00 \(n 2\)<\/td>/,
    );
  });

  it("gives each stage's wall time and VLM calls", async () => {
    const costs = model.stageCosts.map((c) => [c.runId, c.stage, c.status, c.vlmCalls, c.cacheHits]);
    expect(costs).toEqual([
      [fixture.evalRun, "eval", "done", 30, 2], // from the stored summary
      [fixture.trainRun, "sft", "done", 1290, null], // the last vlm.calls it logged
    ]);
    for (const c of model.stageCosts) {
      expect(c.seconds).not.toBeNull();
      expect(c.seconds).toBeCloseTo((Date.parse(c.finishedAt!) - Date.parse(c.startedAt)) / 1000, 10);
    }
    const shown = structuredClone(model);
    shown.stageCosts[1].seconds = 4000;
    shown.stageCosts[0].seconds = 75;
    const text = await renderReportHtml(shown);
    expect(text).toMatch(
      /<td>eval<\/td><td>done<\/td><td class="num">1 min 15 s<\/td><td class="num">30<\/td><td class="num">2<\/td>/,
    );
    expect(text).toMatch(
      /<td>sft<\/td><td>done<\/td><td class="num">1 h 06 min<\/td><td class="num">1290<\/td><td class="num">—<\/td>/,
    );
  });

  it("names the lever version and commit that wrote it", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(model.lever.version).toBe(pkg.version);
    // The tests run in a git checkout.
    expect(model.lever.commit).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
    expect(html).toContain(`by lever ${pkg.version} (commit <code>${model.lever.commit}</code>)`);
  });
});

describe("reading the workspace", () => {
  it("loads each dataset's items once, for the data statistics, the answer types and the examples", () => {
    const ws = Workspace.open(fixture.dir, { create: false });
    try {
      const loads: string[] = [];
      const loadItems = ws.loadItems.bind(ws);
      ws.loadItems = (name: string) => {
        loads.push(name);
        return loadItems(name);
      };
      const again = buildReportModel(ws, {
        ...ReportSettingsSchema.parse({ examples: 3, resamples: 200 }),
        runs: [fixture.evalRun, "sft-a"],
      });
      expect(again.answerTypes?.types).toEqual(["yes/no", "number", "other"]);
      expect(again.examples.length).toBe(3);
      expect(loads.length).toBeGreaterThan(0);
      expect(loads).toEqual([...new Set(loads)]);
    } finally {
      ws.close();
    }
  });
});

describe("training curves", () => {
  it("are grouped per stage: each stage's loss has its own chart and y scale, titled readably", async () => {
    const ws = Workspace.open(join(mkdtempSync(join(tmpdir(), "lever-curves-")), "ws"));
    try {
      const runs = ["sft", "grpo"].map((kind, k) => {
        const runId = ws.createRun({ kind, config: {}, seed: 0 });
        ws.logMetrics(
          [0, 1, 2].flatMap((step) => [
            { runId, stage: kind, step, epoch: 0, name: "loss", value: k === 0 ? 5 - step : 0.01 * step },
            { runId, stage: kind, step, epoch: 0, name: "gradNorm", value: 1 },
          ]),
        );
        ws.logMetrics([
          { runId, stage: kind, epoch: 0, name: "epoch.valAccuracy", value: 50 },
          { runId, stage: kind, epoch: 0, name: "health.clip-never", value: 1 },
        ]);
        return runId;
      });
      const built = buildReportModel(ws, { ...ReportSettingsSchema.parse({}), runs });
      expect(built.curves.map((c) => [c.stage, c.metric, c.title, c.series.length])).toEqual([
        ["sft", "loss", "Loss", 1],
        ["sft", "gradNorm", "Gradient norm", 1],
        ["sft", "epoch.valAccuracy", "Validation accuracy (per epoch)", 1],
        ["grpo", "loss", "Loss", 1],
        ["grpo", "gradNorm", "Gradient norm", 1],
        ["grpo", "epoch.valAccuracy", "Validation accuracy (per epoch)", 1],
      ]);
      const text = await renderReportHtml(built);
      const training = text.slice(text.indexOf('<section id="training">'));
      expect(training.indexOf("<h3>SFT <span")).toBeLessThan(training.indexOf("<h3>GRPO <span"));
      expect(training).toContain("<figcaption><code>epoch.valAccuracy</code>, per epoch</figcaption>");
    } finally {
      ws.close();
    }
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
