// A dashboard's presentation document (docs/dashboards.md): each panel's display and place on
// the 12-column grid, each input's type, the default time range, the editors and viewers. It
// lives beside the dashboard (GET|PUT …/dashboards/{id}/presentation, its own ETag), so a client
// that knows only the interface never erases it. Pure: the layout arithmetic is tested alone.

import type { Me } from "./api";

export type DisplayKind = "table" | "bar" | "line" | "area" | "pie" | "donut" | "number";
export const DISPLAY_KINDS: DisplayKind[] = ["table", "bar", "line", "area", "pie", "donut", "number"];

export interface NumberFormat {
  decimals?: number;
  separators?: boolean;
  unit?: string;
  percent?: boolean;
}

export interface Display {
  kind: DisplayKind;
  x?: string;
  series?: string[];
  group?: string;
  compare?: string;
  stacked?: boolean;
  format?: NumberFormat;
}

export interface Layout {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface PanelLook {
  display?: Display;
  layout?: Layout;
}

export type InputKind = "text" | "number" | "date" | "datetime" | "choice";
export const INPUT_KINDS: InputKind[] = ["text", "number", "date", "datetime", "choice"];

export interface InputSpec {
  type: InputKind;
  default?: string;
  required?: boolean;
  choices?: string[];
  choices_query?: { query: string; credential_id: string };
}

export interface Member {
  kind: "user" | "group";
  name: string;
}

export type RangePreset = "1h" | "24h" | "7d" | "30d" | "90d" | "365d";
export const RANGE_PRESETS: [RangePreset, string][] = [
  ["1h", "Last hour"],
  ["24h", "Last 24 hours"],
  ["7d", "Last 7 days"],
  ["30d", "Last 30 days"],
  ["90d", "Last 90 days"],
  ["365d", "Last 365 days"],
];
const PRESET_SECONDS: Record<RangePreset, number> = { "1h": 3600, "24h": 86_400, "7d": 604_800, "30d": 2_592_000, "90d": 7_776_000, "365d": 31_536_000 };

export interface Presentation {
  editors: Member[];
  viewers: Member[];
  time_range?: RangePreset;
  panels: Record<string, PanelLook>;
  inputs: Record<string, InputSpec>;
}

export const COLUMNS = 12;
export const ROWS_MAX = 24;
/** A panel without a place: full width, this many rows tall. */
export const DEFAULT_HEIGHT = 5;

export function emptyPresentation(): Presentation {
  return { editors: [], viewers: [], panels: {}, inputs: {} };
}

/** The range a preset stands for, ending at `now`. */
export function presetRange(preset: RangePreset, now = new Date()): { from: string; to: string } {
  const from = new Date(now.getTime() - PRESET_SECONDS[preset] * 1000);
  return { from: from.toISOString(), to: now.toISOString() };
}

/** Whether `me` may edit a dashboard with this presentation (the server decides again). */
export function mayEdit(me: Me | null, presentation: Presentation): boolean {
  if (!me) return false;
  if (me.may.manage_dashboards) return true;
  if (!me.may.make_dashboards || !me.user) return false;
  const fold = (s: string) => s.normalize("NFKC").toLowerCase().trim();
  const user = fold(me.user);
  const groups = new Set(me.groups.map(fold));
  return presentation.editors.some((m) => (m.kind === "user" ? fold(m.name) === user : groups.has(fold(m.name))));
}

/** Members as the editor writes them, one per line: `group:name`, or a user's name. */
export function membersText(members: Member[]): string {
  return members.map((m) => (m.kind === "group" ? `group:${m.name}` : m.name)).join("\n");
}

export function parseMembers(text: string): Member[] {
  const members: Member[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed) continue;
    if (/^group:/i.test(trimmed)) members.push({ kind: "group", name: trimmed.slice(6).trim() });
    else members.push({ kind: "user", name: trimmed.replace(/^user:/i, "").trim() });
  }
  return members;
}

/**
 * Every panel's place: a stored layout where it has one (kept within the grid), and, for the
 * others in order, full width below everything placed so far.
 */
export function placed(ids: string[], looks: Record<string, PanelLook>): Map<string, Layout> {
  const out = new Map<string, Layout>();
  let bottom = 0;
  for (const id of ids) {
    const layout = looks[id]?.layout;
    if (!layout) continue;
    const w = clamp(layout.w, 1, COLUMNS);
    const fit = { x: clamp(layout.x, 0, COLUMNS - w), y: Math.max(0, layout.y), w, h: clamp(layout.h, 1, ROWS_MAX) };
    out.set(id, fit);
    bottom = Math.max(bottom, fit.y + fit.h);
  }
  for (const id of ids) {
    if (out.has(id)) continue;
    out.set(id, { x: 0, y: bottom, w: COLUMNS, h: DEFAULT_HEIGHT });
    bottom += DEFAULT_HEIGHT;
  }
  return out;
}

/** The panel ids in reading order of their places: by row, then by column. */
export function readingOrder(layouts: Map<string, Layout>): string[] {
  return [...layouts.entries()].sort(([, a], [, b]) => a.y - b.y || a.x - b.x).map(([id]) => id);
}

/** `layout` moved by (dx, dy) and resized by (dw, dh), kept within the grid. */
export function nudged(layout: Layout, dx: number, dy: number, dw = 0, dh = 0): Layout {
  const w = clamp(layout.w + dw, 1, COLUMNS);
  const h = clamp(layout.h + dh, 1, ROWS_MAX);
  return { x: clamp(layout.x + dx, 0, COLUMNS - w), y: Math.max(0, layout.y + dy), w, h };
}

function clamp(n: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, Math.round(Number.isFinite(n) ? n : low)));
}

/** The document as a PUT sends it: only the panels and inputs that are still there. */
export function pruned(presentation: Presentation, panelIds: string[], inputKeys: string[]): Presentation {
  const panels: Record<string, PanelLook> = {};
  for (const id of panelIds) {
    const look = presentation.panels[id];
    if (look && (look.display || look.layout)) panels[id] = look;
  }
  const inputs: Record<string, InputSpec> = {};
  for (const key of inputKeys) {
    const spec = presentation.inputs[key];
    if (spec) inputs[key] = spec;
  }
  return { ...presentation, panels, inputs };
}
