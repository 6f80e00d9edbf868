// What a panel's display draws from its rows, worked out before any drawing: which column is the
// x axis (and whether it holds times), which columns are series, how a grouping column splits
// one, and each point's row and accessible name. Charts never aggregate: every point, bar or
// slice is one result row. A display whose columns don't fit the result says why. Pure (the
// drawing is charts.ts, loaded only on dashboards that chart).

import { valueText } from "./grid-model";
import { isNumericType } from "./grid-model";
import type { Column } from "./ndjson";
import type { Display, NumberFormat } from "./presentation";

/** The most rows a chart draws; the data table shows every row. */
export const CHART_ROWS_MAX = 5_000;

export interface Point {
  /** The row it is (its index in the result, the row's buttons' index). */
  row: number;
  /** Its dataset. */
  series: string;
  /** Its x label as text. */
  label: string;
  /** Its x position: a time in ms on a time axis, else its index among the labels. */
  x: number;
  value: number;
}

export interface Dataset {
  name: string;
  points: Point[];
}

export interface ChartPlan {
  kind: "bar" | "line" | "area" | "pie" | "donut";
  xName: string;
  /** The x axis holds times (ms since the epoch). */
  time: boolean;
  labels: string[];
  datasets: Dataset[];
  stacked: boolean;
  /** Rows left out past CHART_ROWS_MAX. */
  cut: number;
}

export interface NumberPlan {
  kind: "number";
  name: string;
  value: number;
  compare?: { name: string; value: number; difference: number; percent: number | null };
}

export type Plan = { ok: true; plan: ChartPlan | NumberPlan } | { ok: false; why: string };

const TIME = /^(date|datetime|datetime2|datetime64|timestamp|timestamptz|timestamp with(out)? time zone|smalldatetime|datetimeoffset|date32)(\(.*\))?$/i;

/** Whether a column of this type holds dates or times. */
export function isTimeType(type: string): boolean {
  const bare = type.trim().replace(/^nullable\((.*)\)$/i, "$1");
  return TIME.test(bare) || /^timestamp\(\d\)( with(out)? time zone)?$/i.test(bare);
}

/** A cell as a number, or null when it is not one (NULL, text that is not a number). */
export function numberOf(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" && value.trim() !== "" && /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(value.trim())) {
    const n = Number(value);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** A cell as a time in ms, or null. */
export function timeOf(value: unknown): number | null {
  if (typeof value !== "string" && typeof value !== "number") return null;
  const text = String(value).trim();
  // `2026-12-07 10:00:00` (no T) and bare dates are read as UTC, as the server wrote them.
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text.replace(" ", "T");
  const withZone = /[zZ]|[+-]\d{2}(:?\d{2})?$/.test(iso.slice(10)) ? iso : `${iso}Z`;
  const ms = Date.parse(withZone);
  return Number.isFinite(ms) ? ms : null;
}

function indexOf(columns: Column[], name: string): number {
  return columns.findIndex((c) => c.name === name);
}

/** What `display` draws from `columns` and `rows`, or why it can't. */
export function planOf(display: Display, columns: Column[], rows: readonly unknown[][]): Plan {
  if (columns.length === 0) return { ok: false, why: "The result has no columns." };
  const missing = [display.x, display.group, display.compare, ...(display.series ?? [])].filter(
    (name): name is string => name !== undefined && indexOf(columns, name) < 0,
  );
  if (missing.length > 0) {
    return { ok: false, why: `The display names columns the result does not have: ${missing.join(", ")}.` };
  }
  const numericIndexes = columns
    .map((c, i) => ({ c, i }))
    .filter(({ c, i }) => isNumericType(c.type) || (rows.length > 0 && rows.slice(0, 20).every((r) => r[i] === null || numberOf(r[i]) !== null)))
    .map(({ i }) => i);
  if (display.kind === "number") {
    const named = display.series?.[0];
    const at = named !== undefined ? indexOf(columns, named) : (numericIndexes.find((i) => columns[i]?.name !== display.compare) ?? -1);
    if (at < 0) return { ok: false, why: "A single number needs a numeric column." };
    const first = rows[0];
    if (!first) return { ok: false, why: "The query returned no row to show." };
    const value = numberOf(first[at]);
    if (value === null) return { ok: false, why: `The column ${columns[at]?.name ?? ""} of the first row is not a number.` };
    const plan: NumberPlan = { kind: "number", name: columns[at]?.name ?? "", value };
    if (display.compare !== undefined) {
      const other = numberOf(first[indexOf(columns, display.compare)]);
      if (other === null) return { ok: false, why: `The column ${display.compare} of the first row is not a number.` };
      plan.compare = { name: display.compare, value: other, difference: value - other, percent: other === 0 ? null : ((value - other) / Math.abs(other)) * 100 };
    }
    return { ok: true, plan };
  }
  if (display.kind === "table") return { ok: false, why: "A table is not a chart." };
  const xAt = display.x !== undefined ? indexOf(columns, display.x) : 0;
  const groupAt = display.group !== undefined ? indexOf(columns, display.group) : -1;
  const seriesAt =
    display.series && display.series.length > 0
      ? display.series.map((name) => indexOf(columns, name))
      : numericIndexes.filter((i) => i !== xAt && i !== groupAt);
  if (seriesAt.length === 0) return { ok: false, why: "The chart needs a numeric column to draw: the result has none besides its x axis." };
  const notNumeric = seriesAt.filter((i) => !numericIndexes.includes(i));
  if (notNumeric.length > 0) {
    return { ok: false, why: `These columns are not numbers, so they can't be drawn: ${notNumeric.map((i) => columns[i]?.name).join(", ")}.` };
  }
  const round = display.kind === "pie" || display.kind === "donut";
  if (round && (seriesAt.length > 1 || groupAt >= 0)) {
    return { ok: false, why: "A pie or donut draws one numeric column, one slice per row, with no grouping." };
  }
  if (groupAt >= 0 && seriesAt.length > 1) return { ok: false, why: "A grouping column splits one series: name a single series." };
  const xColumn = columns[xAt] as Column;
  const time = !round && isTimeType(xColumn.type);
  const shown = rows.slice(0, CHART_ROWS_MAX);
  const labels: string[] = [];
  const datasets = new Map<string, Dataset>();
  const datasetOf = (name: string) => {
    let d = datasets.get(name);
    if (!d) {
      d = { name, points: [] };
      datasets.set(name, d);
    }
    return d;
  };
  // Grouped, rows that share an x label share its place (one point each, per group);
  // otherwise each row has a place of its own.
  const place = new Map<string, number>();
  for (const [row, cells] of shown.entries()) {
    const raw = cells[xAt];
    const label = raw === null || raw === undefined ? "NULL" : (valueText(raw) ?? "");
    let x: number;
    if (time) {
      const ms = timeOf(raw);
      if (ms === null) continue;
      x = ms;
      labels.push(label);
    } else if (groupAt >= 0) {
      x = place.get(label) ?? labels.length;
      if (!place.has(label)) {
        place.set(label, x);
        labels.push(label);
      }
    } else {
      x = labels.length;
      labels.push(label);
    }
    for (const at of seriesAt) {
      const value = numberOf(cells[at]);
      if (value === null) continue;
      const name = groupAt >= 0 ? (valueText(cells[groupAt]) ?? "NULL") : (columns[at]?.name ?? "");
      datasetOf(name).points.push({ row, series: name, label, x, value });
    }
  }
  if (datasets.size === 0) return { ok: false, why: "No row has a number to draw." };
  return {
    ok: true,
    plan: {
      kind: display.kind,
      xName: xColumn.name,
      time,
      labels,
      datasets: [...datasets.values()],
      stacked: Boolean(display.stacked),
      cut: Math.max(0, rows.length - shown.length),
    },
  };
}

/** The formatters made so far, by locale and options: making one costs far more than using it,
 * and a chart's ticks and tooltips format many values. */
const numberFormats = new Map<string, Intl.NumberFormat>();
const timeFormats = new Map<string, Intl.DateTimeFormat>();

function numberFormat(locale: string | undefined, options: Intl.NumberFormatOptions): Intl.NumberFormat {
  const key = `${locale ?? ""} ${JSON.stringify(options)}`;
  let made = numberFormats.get(key);
  if (!made) {
    made = new Intl.NumberFormat(locale, options);
    numberFormats.set(key, made);
  }
  return made;
}

/** `value` as `format` says, in the reader's locale. */
export function formatNumber(value: number, format: NumberFormat | undefined, locale?: string): string {
  const f = format ?? {};
  const shown = f.percent ? value * 100 : value;
  const options: Intl.NumberFormatOptions = { useGrouping: f.separators !== false };
  if (f.decimals !== undefined) {
    options.minimumFractionDigits = f.decimals;
    options.maximumFractionDigits = f.decimals;
  } else {
    options.maximumFractionDigits = 10;
  }
  const text = numberFormat(locale, options).format(shown);
  return `${text}${f.percent ? "%" : ""}${f.unit ? ` ${f.unit}` : ""}`;
}

/** A time on a time axis, as the reader writes a date (and the time, when it has one). */
export function formatTime(ms: number, locale?: string): string {
  const date = new Date(ms);
  const midnight = date.getUTCHours() === 0 && date.getUTCMinutes() === 0 && date.getUTCSeconds() === 0;
  const key = `${locale ?? ""} ${midnight}`;
  let made = timeFormats.get(key);
  if (!made) {
    made = new Intl.DateTimeFormat(locale, midnight ? { dateStyle: "medium", timeZone: "UTC" } : { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" });
    timeFormats.set(key, made);
  }
  return made.format(date);
}

/** A point's accessible name: its series, its label and its value. */
export function pointName(point: Point, format: NumberFormat | undefined, locale?: string): string {
  return `${point.series}, ${point.label}: ${formatNumber(point.value, format, locale)}`;
}

/** Round UTC times between `min` and `max` (ms) for a time axis: at most about 8, a minute,
 * an hour, a day, a week, a month apart… */
export function timeTicks(min: number, max: number): number[] {
  const MINUTE = 60_000;
  const HOUR = 60 * MINUTE;
  const DAY = 24 * HOUR;
  const steps = [MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 91 * DAY, 365 * DAY];
  const span = Math.max(0, max - min);
  const step = steps.find((s) => span / s <= 8) ?? 365 * DAY;
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max && ticks.length < 64; t += step) ticks.push(t);
  return ticks.length > 0 ? ticks : [min];
}
