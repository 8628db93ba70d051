/**
 * Charts as SVG strings, rendered headlessly in Node: a Vega-Lite spec is compiled with `vega-lite`
 * and drawn by `vega`'s View with the "none" renderer and `toSVG()` (https://vega.github.io/vega/usage/).
 * Data is always inline; the view gets a loader that refuses every URL or file, so rendering never
 * touches the network or disk, and without the optional `canvas` package text widths are estimated
 * (no fonts are loaded). Vega escapes the text it writes into the SVG, so labels taken from data are
 * safe to inline into HTML.
 */
import { type Loader, parse, View } from "vega";
import { compile, type TopLevelSpec } from "vega-lite";

export interface Point {
  x: number;
  y: number;
}

export interface LineSeries {
  name: string;
  points: readonly Point[];
}

export interface LineChartInput {
  title: string;
  xTitle: string;
  yTitle: string;
  series: readonly LineSeries[];
  /** x counts something (steps, epochs): ticks only at whole numbers. */
  integerX?: boolean;
  width?: number;
  height?: number;
}

export interface Bar {
  /** Series (e.g. method) the bar belongs to: colour and position within its group. */
  series: string;
  /** Group on the x axis (e.g. "1 shot"). */
  group: string;
  value: number;
  /** Interval drawn as an error bar, when given. */
  lower?: number;
  upper?: number;
}

export interface BarChartInput {
  title: string;
  xTitle: string;
  yTitle: string;
  bars: readonly Bar[];
  /** Group order along the x axis (default: first appearance). */
  groups?: readonly string[];
  width?: number;
  height?: number;
}

/** A loader that loads nothing and remembers what was asked for (Vega only logs load errors). */
function offlineLoader(refused: string[]): Loader {
  const refuse = (what: string): Promise<never> => {
    refused.push(what);
    return Promise.reject(new Error(`refusing to load "${what}"`));
  };
  return { load: refuse, sanitize: refuse, http: refuse, file: refuse };
}

/** Compiles a Vega-Lite spec and renders it to an SVG string; a spec that needs a URL or file throws. */
export async function renderVegaLite(spec: TopLevelSpec): Promise<string> {
  const refused: string[] = [];
  const view = new View(parse(compile(spec).spec), {
    renderer: "none",
    loader: offlineLoader(refused),
    logLevel: 0, // failures are reported below, not logged to the console
  });
  try {
    const svg = await view.toSVG();
    if (refused.length > 0)
      throw new Error(`charts are drawn from inline data only; the spec asked to load "${refused[0]}"`);
    return svg;
  } finally {
    view.finalize();
  }
}

/**
 * Lines of y over x, one per series (e.g. a metric over training steps for several runs). Points
 * with a non-finite coordinate are dropped (a diverged loss leaves a gap, not a broken axis).
 */
export function lineChart(input: LineChartInput): Promise<string> {
  const values = input.series.flatMap((s) =>
    s.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)).map((p) => ({ series: s.name, ...p })),
  );
  const many = input.series.length > 1;
  // A flat series would give a zero-width y domain; anchor such a chart at 0 instead.
  const ys = values.map((v) => v.y);
  const flat = ys.length === 0 || Math.max(...ys) - Math.min(...ys) <= 1e-9 * Math.max(1, ...ys.map(Math.abs));
  return renderVegaLite({
    title: input.title,
    width: input.width ?? 420,
    height: input.height ?? 220,
    data: { values },
    mark: { type: "line", point: values.length <= 60, interpolate: "linear" },
    encoding: {
      x: {
        field: "x",
        type: "quantitative",
        title: input.xTitle,
        ...(input.integerX ? { axis: { tickMinStep: 1, format: "d" } } : {}),
      },
      y: { field: "y", type: "quantitative", title: input.yTitle, scale: { zero: flat } },
      color: many
        ? { field: "series", type: "nominal", title: null, ...seriesColors(input.series.length) }
        : { value: "#3366aa" },
    },
  });
}

const MAX_BAR_CHART_WIDTH = 900;

/**
 * Vega's tableau10, then eight more chosen one by one from Kelly's colours of maximum contrast (and
 * dark2) as the farthest in CIELAB from every colour before it: the first ten series keep their colours
 * when an eleventh is added, eighteen series get eighteen colours, and no two are closer than tableau10's
 * own closest pair (ΔE 27; dark2 had put a second orange 15 from tableau's, and a second yellow).
 */
const SERIES_COLORS = [
  "#4c78a8",
  "#f58518",
  "#e45756",
  "#72b7b2",
  "#54a24b",
  "#eeca3b",
  "#b279a2",
  "#ff9da6",
  "#9d755d",
  "#bab0ac",
  "#000000",
  "#e7298a",
  "#8db600",
  "#a6761d",
  "#882d17",
  "#2b3d26",
  "#604e97",
  "#a1caf1",
];

/** The colour scale and legend of a chart's series: a legend in rows of three below the chart, never wider than the page. */
function seriesColors(count: number) {
  return {
    scale: { range: SERIES_COLORS },
    legend: { orient: "bottom", labelLimit: 340, columns: Math.min(3, count) },
  } as const;
}

/** Grouped bars (a bar per series within each group) with optional interval error bars. */
export function barChart(input: BarChartInput): Promise<string> {
  const groups = input.groups ?? [...new Set(input.bars.map((b) => b.group))];
  const series = [...new Set(input.bars.map((b) => b.series))];
  const values = input.bars.filter((b) => Number.isFinite(b.value));
  const intervals = values.filter((b) => Number.isFinite(b.lower) && Number.isFinite(b.upper));
  const x = { field: "group", type: "nominal", sort: groups, title: input.xTitle, axis: { labelAngle: 0 } } as const;
  const xOffset = { field: "series", type: "nominal", sort: series } as const;
  return renderVegaLite({
    title: input.title,
    // 22 px per bar, but never wider than the report's column (1,152 px, with room for the axes and legend).
    width: input.width ?? Math.min(MAX_BAR_CHART_WIDTH, Math.max(240, groups.length * (series.length * 22 + 24))),
    height: input.height ?? 240,
    layer: [
      {
        data: { values },
        mark: { type: "bar" },
        encoding: {
          x,
          xOffset,
          y: { field: "value", type: "quantitative", title: input.yTitle },
          color: {
            field: "series",
            type: "nominal",
            sort: series,
            title: null,
            ...seriesColors(series.length),
          },
        },
      },
      ...(intervals.length === 0
        ? []
        : [
            {
              data: { values: intervals },
              mark: { type: "rule" as const, color: "#222", strokeWidth: 1.5 },
              encoding: {
                x,
                xOffset,
                y: { field: "lower", type: "quantitative" as const },
                y2: { field: "upper" },
              },
            },
          ]),
    ],
  });
}
