// What the result grid computes without the page: the order of its rows (sorted by one column,
// filtered by a text), the selected range as TSV, which columns are numbers, and how wide each
// column starts. Kept apart from the DOM so that it is tested in node and costs a known time on
// 100,000 rows.

import type { Column } from "./ndjson";

/** A value as text for the grid and the clipboard (`null` stays null). */
export function valueText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** A value as one TSV field: tabs and newlines become spaces, NULL is empty. */
function tsvField(value: unknown): string {
  return (valueText(value) ?? "").replace(/[\t\r\n]/g, " ");
}

/** A row as one line of tab-separated values. */
export function rowTsv(row: unknown[]): string {
  return row.map(tsvField).join("\t");
}

/** A position in the grid: `row` in the shown order (0 is the first shown row), `col` a data
 * column (0 is the first). */
export interface Cell {
  row: number;
  col: number;
}

/** The rectangle between two cells, inclusive. */
export function rangeOf(a: Cell, b: Cell): { top: number; bottom: number; left: number; right: number } {
  return { top: Math.min(a.row, b.row), bottom: Math.max(a.row, b.row), left: Math.min(a.col, b.col), right: Math.max(a.col, b.col) };
}

/** The cells between `anchor` and `focus` of the rows shown (`order`: the rows' indexes in the
 * shown order, `null` for every row as it came) as TSV: one line per row, a tab between
 * cells. */
export function rangeTsv(rows: unknown[][], order: ArrayLike<number> | null, anchor: Cell, focus: Cell): string {
  const { top, bottom, left, right } = rangeOf(anchor, focus);
  const count = order ? order.length : rows.length;
  const lines: string[] = [];
  for (let r = top; r <= bottom && r < count; r++) {
    const row = rows[order ? (order[r] ?? -1) : r] ?? [];
    const fields: string[] = [];
    for (let c = left; c <= right; c++) fields.push(tsvField(row[c]));
    lines.push(fields.join("\t"));
  }
  return lines.join("\n");
}

const NUMERIC = /^(u?int\d*|integer|smallint|bigint|tinyint|mediumint|serial\d?|bigserial|smallserial|numeric(\(.*\))?|decimal\d*(\(.*\))?|real|double( precision)?|float\d*|money|number(\(.*\))?|binary_(float|double))( unsigned)?$/i;

/** Whether a column of this type holds numbers (they are right-aligned). */
export function isNumericType(type: string): boolean {
  const bare = type.trim().replace(/^nullable\((.*)\)$/i, "$1");
  return NUMERIC.test(bare);
}

/** Orders values as people expect: numbers by value, then text by its code points, booleans
 * false first; NULL last whichever way the sort goes. */
export function compareValues(a: unknown, b: unknown): number {
  const an = a === null || a === undefined;
  const bn = b === null || b === undefined;
  if (an || bn) return an && bn ? 0 : an ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  const x = valueText(a) ?? "";
  const y = valueText(b) ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Numbers kept as text (a `numeric` or a 64-bit integer as a string) compared as numbers. */
function numberOf(value: unknown): number | null {
  if (typeof value === "number") return value;
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value);
    return Number.isNaN(n) ? null : n;
  }
  return null;
}

export type Direction = "ascending" | "descending";

/** The shown order of `rows`: those whose text holds `filter` (case aside; every row when it is
 * blank), sorted by column `sort` when one is given (stable: equal values keep their order;
 * NULL last in both directions). */
export function viewOrder(rows: unknown[][], filter: string, sort: { col: number; direction: Direction; numeric: boolean } | null): Uint32Array {
  const needle = filter.trim().toLowerCase();
  let order: Uint32Array;
  if (needle) {
    const kept: number[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] ?? [];
      for (const value of row) {
        const text = valueText(value);
        if (text !== null && text.toLowerCase().includes(needle)) {
          kept.push(i);
          break;
        }
      }
    }
    order = Uint32Array.from(kept);
  } else {
    order = new Uint32Array(rows.length);
    for (let i = 0; i < rows.length; i++) order[i] = i;
  }
  if (!sort) return order;
  const { col, direction, numeric } = sort;
  const sign = direction === "ascending" ? 1 : -1;
  // The keys once per row: a comparison reads two numbers or two strings.
  const keys: unknown[] = new Array(rows.length);
  for (const i of order) {
    const value = rows[i]?.[col];
    keys[i] = numeric ? (numberOf(value) ?? value) : value;
  }
  const sorted = Array.from(order).sort((a, b) => {
    const x = keys[a];
    const y = keys[b];
    const xn = x === null || x === undefined;
    const yn = y === null || y === undefined;
    if (xn || yn) return xn && yn ? a - b : xn ? 1 : -1;
    return sign * compareValues(x, y) || a - b;
  });
  return Uint32Array.from(sorted);
}

/** A column's starting width in pixels, from its name and the text of the first `sample` rows:
 * wide enough for a timestamp or an id, never wider than 32 characters' worth. */
export function widthOf(column: Column, index: number, rows: unknown[][], charWidth = 7.8, sample = 200): number {
  let longest = column.name.length + Math.min(column.type.length, 16) + 5;
  for (let i = 0; i < rows.length && i < sample; i++) {
    const text = valueText(rows[i]?.[index]);
    if (text !== null) longest = Math.max(longest, Math.min(text.length, 64) + 2);
  }
  return Math.round(Math.min(Math.max(longest, 6), 34) * charWidth + 18);
}

/** A value as one CSV field (RFC 4180: quoted when it holds a comma, a quote or a line break);
 * `safe`: text that a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a
 * tab or a carriage return) gets a leading `'`, numbers stay numbers. */
export function csvField(value: unknown, safe = false): string {
  let text = valueText(value) ?? "";
  if (safe && typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Rows as CSV, the header first, CRLF between lines. */
export function toCsv(columns: Column[], rows: unknown[][], safe = false): string {
  const lines = [columns.map((c) => csvField(c.name, safe)).join(",")];
  for (const row of rows) lines.push(row.map((v) => csvField(v, safe)).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** Rows as a JSON array of objects, by column name (a name twice: the later one is `name_2`). */
export function toJson(columns: Column[], rows: unknown[][]): string {
  const seen = new Map<string, number>();
  const keys = columns.map((c) => {
    const n = (seen.get(c.name) ?? 0) + 1;
    seen.set(c.name, n);
    return n === 1 ? c.name : `${c.name}_${n}`;
  });
  return JSON.stringify(rows.map((row) => Object.fromEntries(keys.map((k, i) => [k, row[i] ?? null]))), null, 1);
}

/** A file name from `title` and the time `at`: `monthly-revenue-2026-12-07-180613.csv`. */
export function fileName(title: string, at: Date, extension: string): string {
  const base =
    title
      .normalize("NFKD")
      .replace(/[^A-Za-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 60)
      .toLowerCase() || "query";
  const pad = (n: number) => String(n).padStart(2, "0");
  const stamp = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}-${pad(at.getHours())}${pad(at.getMinutes())}${pad(at.getSeconds())}`;
  return `${base}-${stamp}.${extension}`;
}
