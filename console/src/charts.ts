// Drawing a panel's chart with Chart.js (on a canvas: no inline script or style, so it keeps to
// the console's CSP). Loaded only by dashboards that chart. A canvas has no roles, so beside it
// each point is a button (one Tab stop, arrow keys between points), named by its series, label
// and value; focusing one shows its tooltip on the chart, and Enter chooses its row (which shows
// that row's action buttons). Every text drawn (labels, legend, tooltip) is the value as text.

import {
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  DoughnutController,
  Filler,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  PieController,
  PointElement,
  Tooltip,
  type ChartConfiguration,
  type ChartDataset,
} from "chart.js";

import { formatNumber, formatTime, pointName, timeTicks, type ChartPlan, type Point } from "./chart-model";
import { h, visible } from "./dom";
import type { NumberFormat } from "./presentation";

Chart.register(
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  DoughnutController,
  Filler,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  PieController,
  PointElement,
  Tooltip,
);

export interface DrawnChart {
  element: HTMLElement;
  destroy(): void;
}

/** The longest label drawn on the canvas; the data table has the whole value. */
const LABEL_MAX = 40;

function shortLabel(text: string): string {
  const shown = visible(text);
  return shown.length > LABEL_MAX ? `${shown.slice(0, LABEL_MAX - 1)}…` : shown;
}

interface Palette {
  colours: string[];
  text: string;
  grid: string;
  background: string;
}

/** The palette read last, and the theme it was read for. */
let cached: { theme: string; palette: Palette } | null = null;

/** The theme's chart colours, from its CSS variables (so dark has its own); read once per theme
 * (reading computed style costs a style recalculation on a page that is still changing). */
function palette(): Palette {
  const theme = `${document.documentElement.dataset.theme ?? ""} ${matchMedia("(prefers-color-scheme: dark)").matches}`;
  if (cached?.theme !== theme) cached = { theme, palette: readPalette() };
  return cached.palette;
}

function readPalette(): Palette {
  const style = getComputedStyle(document.documentElement);
  const colours: string[] = [];
  for (let i = 1; i <= 8; i += 1) {
    const colour = style.getPropertyValue(`--chart-${i}`).trim();
    if (colour) colours.push(colour);
  }
  return {
    colours: colours.length ? colours : ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"],
    text: style.getPropertyValue("--fg").trim() || "#1f2937",
    grid: style.getPropertyValue("--line").trim() || "#d1d5db",
    background: style.getPropertyValue("--bg").trim() || "#fff",
  };
}

/**
 * Draws `plan` titled `title` into `host` (its children replaced); `choose(row)` when a point is
 * chosen (a click on the canvas, or Enter on a point's button). The canvas is in the page before
 * the chart is made, so that its first drawing has its size (and is its only one).
 */
export function drawChart(host: HTMLElement, plan: ChartPlan, title: string, format: NumberFormat | undefined, choose: (row: number) => void): DrawnChart {
  const { colours, text, grid, background } = palette();
  const canvas = h("canvas", { attrs: { role: "img", "aria-label": `Chart: ${visible(title)}. Its points follow as buttons; the data table lists every row.` } });
  const round = plan.kind === "pie" || plan.kind === "donut";
  const points: Point[] = plan.datasets.flatMap((d) => d.points);
  const colourOf = (i: number) => colours[i % colours.length] ?? "#2563eb";
  const datasets: ChartDataset[] = plan.datasets.map((dataset, i) => {
    const data = dataset.points.map((p) => (round ? p.value : { x: p.x, y: p.value }));
    const base = { label: shortLabel(dataset.name), data: data as never };
    if (round) {
      return { ...base, backgroundColor: dataset.points.map((_, j) => colourOf(j)), borderColor: background };
    }
    if (plan.kind === "bar") return { ...base, backgroundColor: colourOf(i), borderColor: colourOf(i) };
    return { ...base, borderColor: colourOf(i), backgroundColor: `${colourOf(i)}55`, fill: plan.kind === "area" ? (plan.stacked ? (i === 0 ? "origin" : "-1") : "origin") : false, pointRadius: 3, tension: 0 };
  });
  const xTick = (value: number | string): string => {
    const n = Number(value);
    if (plan.time) return formatTime(n);
    return shortLabel(plan.labels[n] ?? "");
  };
  const type = round ? (plan.kind === "donut" ? "doughnut" : "pie") : plan.kind === "bar" ? "bar" : "line";
  const config: ChartConfiguration = {
    type,
    data: round ? { labels: (plan.datasets[0]?.points ?? []).map((p) => shortLabel(p.label)), datasets } : { datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: round ? undefined : false,
      normalized: true,
      color: text,
      interaction: round ? { mode: "nearest", intersect: true } : { mode: "nearest", intersect: false, axis: "x" },
      plugins: {
        legend: { display: round || plan.datasets.length > 1, labels: { color: text } },
        tooltip: {
          callbacks: {
            title: (items) => {
              const item = items[0];
              if (!item) return "";
              const point = plan.datasets[item.datasetIndex]?.points[item.dataIndex];
              return point ? shortLabel(point.label) : "";
            },
            label: (item) => {
              const point = plan.datasets[item.datasetIndex]?.points[item.dataIndex];
              return point ? `${shortLabel(point.series)}: ${formatNumber(point.value, format)}` : "";
            },
          },
        },
      },
      scales: round
        ? {}
        : {
            x: {
              type: "linear",
              stacked: plan.stacked,
              grid: { color: grid },
              ticks: {
                color: text,
                callback: (value) => xTick(value),
                stepSize: plan.time ? undefined : 1,
                autoSkip: true,
                maxRotation: 0,
              },
              title: { display: true, text: shortLabel(plan.xName), color: text },
            // Ticks where the points are: at each label (an index), or at round times.
            afterBuildTicks: (axis) => {
                if (plan.time) {
                  axis.ticks = timeTicks(axis.min, axis.max).map((value) => ({ value }));
                } else {
                  const every = Math.max(1, Math.ceil(plan.labels.length / 24));
                  axis.ticks = plan.labels.flatMap((_, i) => (i % every === 0 ? [{ value: i }] : []));
                }
              },
              min: plan.time ? undefined : plan.kind === "bar" ? -0.5 : 0,
              max: plan.time ? undefined : plan.kind === "bar" ? plan.labels.length - 0.5 : Math.max(0, plan.labels.length - 1),
            },
            y: { stacked: plan.stacked, beginAtZero: true, grace: "5%", grid: { color: grid }, ticks: { color: text, callback: (value) => formatNumber(Number(value), format) } },
          },
      onClick: (_event, elements) => {
        const element = elements[0];
        const point = element ? plan.datasets[element.datasetIndex]?.points[element.index] : undefined;
        if (point) choose(point.row);
      },
    },
  };
  const canvasBox = h("div", { class: "chart-canvas" }, canvas);
  const element = h("div", { class: "chart" }, canvasBox);
  host.replaceChildren(element);
  const chart = new Chart(canvas, config);

  // The points by keyboard: one Tab stop (the current point), arrows between them.
  let current = 0;
  const buttons = points.map((point, i) =>
    h(
      "button",
      {
        class: "chart-point",
        attrs: { type: "button", tabindex: i === 0 ? 0 : -1, "aria-label": visible(pointName(point, format)), "data-row": point.row },
        on: {
          focus: () => show(i),
          click: () => choose(point.row),
        },
      },
      // The button's own text is its name too (for the eye, when focused).
      visible(pointName(point, format)),
    ),
  );
  const locate = (i: number): { datasetIndex: number; index: number } | null => {
    const point = points[i];
    if (!point) return null;
    const datasetIndex = plan.datasets.findIndex((d) => d.name === point.series);
    const index = plan.datasets[datasetIndex]?.points.indexOf(point) ?? -1;
    return datasetIndex >= 0 && index >= 0 ? { datasetIndex, index } : null;
  };
  function show(i: number): void {
    current = i;
    buttons.forEach((b, j) => b.setAttribute("tabindex", j === i ? "0" : "-1"));
    const at = locate(i);
    if (!at) return;
    chart.setActiveElements([at]);
    chart.tooltip?.setActiveElements([at], { x: 0, y: 0 });
    chart.update("none");
  }
  const list = h(
    "div",
    {
      class: "chart-points",
      attrs: { role: "group", "aria-label": `Points of ${visible(title)}: arrow keys move, Enter shows the row's actions` },
      on: {
        keydown: (event) => {
          const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
          let next: number;
          if (step !== undefined) next = current + step;
          else if (event.key === "Home") next = 0;
          else if (event.key === "End") next = buttons.length - 1;
          else return;
          event.preventDefault();
          next = Math.max(0, Math.min(buttons.length - 1, next));
          buttons[next]?.focus();
        },
        focusout: (event) => {
          if (!(event.relatedTarget instanceof Node) || !list.contains(event.relatedTarget)) {
            chart.setActiveElements([]);
            chart.tooltip?.setActiveElements([], { x: 0, y: 0 });
            chart.update("none");
          }
        },
      },
    },
    ...buttons,
  );
  element.append(list);
  return {
    element,
    destroy: () => chart.destroy(),
  };
}

