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

  it("gives eighteen series eighteen colours no two of which look alike (CIELAB ΔE ≥ 25: no second orange)", async () => {
    const bars = Array.from({ length: 18 }, (_, i) => ({ series: `m${i}`, group: "1", value: 50 }));
    const svg = await barChart({ title: "accuracy", xTitle: "shots", yTitle: "accuracy %", bars });
    const rects = svg.match(/<g class="mark-rect role-mark[^"]*"[^>]*>(.*?)<\/g>/s)?.[1] ?? "";
    const fills = [...new Set(rects.match(/fill="#[0-9a-f]{6}"/g))].map((f) => f.slice(6, 13));
    expect(fills).toHaveLength(18);
    let closest = { distance: Number.POSITIVE_INFINITY, pair: "" };
    for (const [i, a] of fills.entries())
      for (const b of fills.slice(i + 1)) {
        const distance = deltaE(a, b);
        if (distance < closest.distance) closest = { distance, pair: `${a} ${b}` };
      }
    expect(closest.distance, closest.pair).toBeGreaterThanOrEqual(25);
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

/** CIE76 colour difference of two sRGB hex colours (D65). */
function deltaE(a: string, b: string): number {
  const lab = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
      return c > 0.04045 ? ((c + 0.055) / 1.055) ** 2.4 : c / 12.92;
    });
    const f = (v: number) => (v > 0.008856 ? Math.cbrt(v) : 7.787 * v + 16 / 116);
    const x = f((0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047);
    const y = f(0.2126 * r + 0.7152 * g + 0.0722 * bl);
    const z = f((0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883);
    return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
  };
  const [p, q] = [lab(a), lab(b)];
  return Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}
