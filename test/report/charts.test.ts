import { describe, expect, it } from "vitest";
import { barChart, lineChart, renderVegaLite } from "../../src/report/charts.js";

const count = (svg: string, pattern: RegExp) => (svg.match(pattern) ?? []).length;

describe("charts (Vega-Lite → SVG in Node)", () => {
  it("draws one line per series, with axis titles, and escapes series names", async () => {
    const svg = await lineChart({
      title: "loss",
      xTitle: "step",
      yTitle: "loss",
      series: [
        { name: "run <script>alert(1)</script>", points: [0, 1, 2, 3].map((x) => ({ x, y: 1 / (x + 1) })) },
        { name: "other & co", points: [0, 1, 2, 3].map((x) => ({ x, y: 2 / (x + 1) })) },
      ],
    });
    expect(svg).toMatch(/^<svg [^>]*width="\d+" height="\d+"/);
    // A line mark per series, each with its path.
    expect(count(svg, /<g class="mark-line role-mark[^>]*><path /g)).toBe(2);
    expect(svg).toContain(">step<");
    expect(svg).not.toContain("<script");
    expect(svg).toContain("run &lt;script&gt;alert(1)&lt;/script&gt;");
    expect(svg).toContain("other &amp; co");
  });

  it("drops non-finite points instead of failing", async () => {
    const svg = await lineChart({
      title: "loss",
      xTitle: "step",
      yTitle: "loss",
      series: [
        {
          name: "a",
          points: [
            { x: 0, y: 1 },
            { x: 1, y: Number.NaN },
            { x: 2, y: 0.5 },
          ],
        },
      ],
    });
    expect(svg).toContain("mark-line");
    expect(svg).not.toContain("NaN");
  });

  it("draws a bar per (series, group) and an error bar per interval", async () => {
    const svg = await barChart({
      title: "accuracy",
      xTitle: "shots",
      yTitle: "accuracy %",
      bars: [
        { series: "random", group: "1", value: 48.5, lower: 45, upper: 52 },
        { series: "grpo", group: "1", value: 50.1, lower: 46.6, upper: 53.6 },
        { series: "random", group: "2", value: 47.7, lower: 44, upper: 51 },
        { series: "grpo", group: "2", value: 48.3 },
      ],
    });
    const rects = svg.match(/<g class="mark-rect role-mark[^"]*"[^>]*>(.*?)<\/g>/s)?.[1] ?? "";
    const rules = svg.match(/<g class="mark-rule role-mark[^"]*"[^>]*>(.*?)<\/g>/s)?.[1] ?? "";
    expect(count(rects, /<path /g)).toBe(4);
    expect(count(rules, /<line /g)).toBe(3);
  });

  it("keeps many bars within the report's column (the bars get narrower, not the page wider)", async () => {
    const bars = Array.from({ length: 5 * 12 }, (_, i) => ({ series: `m${i % 12}`, group: String(i % 5), value: 50 }));
    const svg = await barChart({ title: "accuracy", xTitle: "shots", yTitle: "accuracy %", bars });
    const width = Number(svg.match(/^<svg [^>]*width="(\d+)"/)?.[1]);
    expect(width).toBeLessThanOrEqual(1200 - 2 * 24);
    const rects = svg.match(/<g class="mark-rect role-mark[^"]*"[^>]*>(.*?)<\/g>/s)?.[1] ?? "";
    expect(count(rects, /<path /g)).toBe(60);
    // Twelve series, twelve colours; line charts share the palette.
    expect(new Set(rects.match(/fill="#[0-9a-f]{6}"/g)).size).toBe(12);
    const lines = await lineChart({
      title: "loss",
      xTitle: "step",
      yTitle: "loss",
      series: Array.from({ length: 12 }, (_, i) => ({
        name: `run${i}`,
        points: [
          { x: 0, y: i },
          { x: 1, y: i + 1 },
        ],
      })),
    });
    const paths = [...lines.matchAll(/<g class="mark-line role-mark[^"]*"[^>]*>(.*?)<\/g>/gs)]
      .map((m) => m[1])
      .join("");
    expect(new Set(paths.match(/stroke="#[0-9a-f]{6}"/g)).size).toBe(12);
  });

  it("refuses to load data from a URL", async () => {
    await expect(renderVegaLite({ data: { url: "https://example.invalid/data.json" }, mark: "point" })).rejects.toThrow(
      /inline data only/,
    );
  });
});
