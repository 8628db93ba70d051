/**
 * Opens a generated report in headless Chromium (Debian's `chromium`, driven by playwright-core; no
 * browser is downloaded) and checks what a reader sees: charts drawn with visible marks, tables
 * filled, user text shown as text, no console or page errors, and no request besides the file itself.
 * Skipped, with a line saying why, where no Chromium is installed.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderReportHtml } from "../../src/report/html.js";
import { buildReportModel } from "../../src/report/model.js";
import { ReportSettingsSchema } from "../../src/report/options.js";
import { Workspace } from "../../src/store/workspace.js";
import { HOSTILE_QUESTION, reportWorkspace } from "./report-workspace.js";

const CHROMIUM = process.env.LEVER_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.log(`report browser test skipped: no Chromium at ${CHROMIUM} (install Debian's chromium package)`);

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

describe("the HTML report in headless Chromium", () => {
  let context: Awaited<ReturnType<typeof chromium.launchPersistentContext>>;
  let file: string;

  beforeAll(async () => {
    if (!hasChromium) return;
    const fixture = reportWorkspace();
    const ws = Workspace.open(fixture.dir, { create: false });
    let html: string;
    try {
      const options = { ...ReportSettingsSchema.parse({ resamples: 200 }), runs: [fixture.evalRun, fixture.trainRun] };
      html = await renderReportHtml(buildReportModel(ws, options));
    } finally {
      ws.close();
    }
    const dir = mkdtempSync(join(tmpdir(), "lever-browser-"));
    file = join(dir, "report.html");
    writeFileSync(file, html);
    context = await chromium.launchPersistentContext(join(dir, "profile"), {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
    });
  });

  afterAll(async () => {
    await context?.close();
  });

  it.skipIf(!hasChromium)(
    "draws the charts and tables, shows hostile text as text, logs no error and fetches nothing",
    async () => {
      const page = await context.newPage();
      const errors: string[] = [];
      const requests: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error") errors.push(message.text());
      });
      page.on("pageerror", (error) => errors.push(error.message));
      page.on("request", (request) => requests.push(request.url()));
      const url = pathToFileURL(file).href;
      await page.goto(url, { waitUntil: "load" });

      const charts = await page.$$eval("svg.marks", (svgs) =>
        svgs.map((svg) => {
          const box = svg.getBoundingClientRect();
          const marks = [...svg.querySelectorAll(".role-mark path, .role-mark line")].map((mark) => {
            // getBBox exists on SVG graphics elements (the test's types have no DOM library).
            const b = (mark as unknown as { getBBox(): { width: number; height: number } }).getBBox();
            return b.width > 0 || b.height > 0;
          });
          return { width: box.width, height: box.height, marks: marks.length, visible: marks.filter(Boolean).length };
        }),
      );
      expect(charts).toHaveLength(4); // loss, gradNorm, epoch.valLoss, accuracy by shot

      // The result comes first: the headline's sentence and table sit above every chart.
      const headline = await page.locator("#headline").boundingBox();
      const firstChart = await page.locator("svg.marks").first().boundingBox();
      expect(headline!.y + headline!.height).toBeLessThanOrEqual(firstChart!.y);
      expect(await page.locator("section").first().getAttribute("id")).toBe("headline");
      await expect(page.locator("#headline p.sentence").innerText()).resolves.toMatch(
        /^Best method against the baseline random on all 8 questions: at 1 shot topk-image 71\.43 vs 25\.00/,
      );
      expect(await page.locator("#headline tbody tr").count()).toBe(2);
      // A significantly worse Δ is drawn red, a better one green, a non-significant one grey.
      // (A string, evaluated in the page: the test's types have no DOM library.)
      const colours = await page.evaluate(`(() => {
        const colour = (className) => {
          const div = document.createElement("div");
          div.className = className;
          document.body.append(div);
          const c = getComputedStyle(div).color;
          div.remove();
          return c;
        };
        return { worse: colour("sig worse"), better: colour("sig better"), ns: colour("ns") };
      })()`);
      expect(colours).toEqual({ worse: "rgb(179, 38, 30)", better: "rgb(10, 107, 45)", ns: "rgb(119, 119, 119)" });
      for (const chart of charts) {
        expect(chart.width).toBeGreaterThan(100);
        expect(chart.height).toBeGreaterThan(100);
        expect(chart.visible).toBeGreaterThan(0);
      }
      // The accuracy chart: 4 bars and 4 error bars (2 methods × 2 shots).
      expect(await page.locator("#comparison svg .mark-rect.role-mark path").count()).toBe(4);
      expect(await page.locator("#comparison svg .mark-rule.role-mark line").count()).toBe(4);

      const tables = await page.$$eval("table", (list) =>
        list.map((t) => ({
          rows: t.querySelectorAll("tbody tr").length,
          visible: t.getBoundingClientRect().height > 0,
        })),
      );
      // headline, comparison, overlap, answer types, stages, summaries, datasets, evaluations
      expect(tables.length).toBeGreaterThanOrEqual(8);
      for (const t of tables) expect(t).toMatchObject({ visible: true });
      expect(tables.every((t) => t.rows > 0)).toBe(true);
      await expect(page.locator("#comparison table").first().innerText()).resolves.toMatch(/topk-image/);

      expect(await page.locator("script").count()).toBe(0);
      await expect(page.getByText(HOSTILE_QUESTION).count()).resolves.toBe(1);

      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
      await page.close();
    },
  );
});
