// Small time-series charts over uPlot (vendored: vendor/uplot). uPlot
// draws on a canvas and styles only through the CSSOM, so it fits the
// console's CSP. Colours come from the stylesheet's variables, so that a
// chart drawn after a theme change follows it.
import uPlot from "./vendor/uplot/uPlot.esm.js";
import { h } from "./dom.js";

// Distinct in light and dark alike.
const PALETTE = ["#2f7ed8", "#e8743b", "#19a979", "#945ecf", "#d64550", "#13a4b4", "#c4a000", "#6c8893"];
export const colour = (i) => PALETTE[i % PALETTE.length];

// Tick steps for counts: no half a sandbox.
const INTEGER_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8, 1e9];

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

// A chart in a figure: x is unix seconds, series [{label, values}];
// opts.bars draws bars (daily totals), else lines; opts.xRange [min, max]
// fixes the time axis (else uPlot stretches one point over years);
// opts.format formats values; opts.integer keeps y ticks whole (counts);
// opts.empty says why there is no data. Every series here counts something, so
// the y axis starts at 0.
// Bars only for a single series: uPlot's bars of several series overlap.
// Returns the figure; the chart follows the figure's width.
export function timeChart(title, x, series, opts = {}) {
  const plotBox = h("div.plot");
  const fig = h("figure.chart", { "aria-label": title }, h("figcaption", null, title), plotBox);
  if (!x.length) {
    plotBox.append(h("p.empty", null, opts.empty ?? "No data in this range."));
    return fig;
  }
  const fg = css("--muted"), grid = css("--grid");
  const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  const fmt = opts.format ?? ((v) => v);
  const bars = opts.bars && series.length === 1;
  const options = {
    width: 300, height: opts.height ?? 180,
    scales: {
      x: { time: true, ...(opts.xRange ? { range: () => opts.xRange } : {}) },
      y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
    },
    axes: [axis, { ...axis, size: 70, values: (u, vals) => vals.map((v) => (v === null ? "" : fmt(v))),
      ...(opts.integer ? { incrs: INTEGER_STEPS } : {}) }],
    legend: { show: series.length > 1 || !!opts.legend },
    cursor: { drag: { x: false, y: false } },
    series: [{}, ...series.map((s, i) => ({
      label: s.label,
      stroke: s.colour ?? colour(i),
      fill: bars ? (s.colour ?? colour(i)) + "99" : undefined,
      width: bars ? 1 : 1.5,
      paths: bars ? uPlot.paths.bars({ size: [0.7, 48] }) : undefined,
      points: { show: x.length < 40 },
      value: (u, v) => (v === null || v === undefined ? "—" : fmt(v)),
      spanGaps: false,
    }))],
  };
  const plot = new uPlot(options, [x, ...series.map((s) => s.values)], plotBox);
  // Follow the figure's width (the page is fluid down to a phone's).
  const ro = new ResizeObserver(() => {
    const w = Math.floor(plotBox.clientWidth);
    if (w > 0 && w !== plot.width) plot.setSize({ width: w, height: options.height });
  });
  ro.observe(plotBox);
  fig.destroy = () => { ro.disconnect(); plot.destroy(); };
  return fig;
}
