// The dashboard editor's parts for the presentation document: a panel's display (kind, axes,
// series, grouping, comparison, number format) with a live preview from its test run; the
// layout map (panels as blocks on the 12 columns: arrow keys move the focused block, Shift and
// arrows resize it, a drag moves it); each input's type, default and choices; the default time
// range; the editors and viewers.

import type { DrawnChart } from "./charts";
import { planOf } from "./chart-model";
import { field, h, isolated, replace, uid } from "./dom";
import type { Column } from "./ndjson";
import {
  COLUMNS,
  DISPLAY_KINDS,
  INPUT_KINDS,
  RANGE_PRESETS,
  membersText,
  nudged,
  parseMembers,
  placed,
  type Display,
  type DisplayKind,
  type InputKind,
  type InputSpec,
  type Layout,
  type PanelLook,
  type Presentation,
  type RangePreset,
} from "./presentation";

const KIND_NAMES: Record<DisplayKind, string> = {
  table: "Table",
  bar: "Bar chart",
  line: "Line chart",
  area: "Area chart",
  pie: "Pie",
  donut: "Donut",
  number: "Single number",
};

/** A text field bound to `get`/`set`, with a list of the result's columns to pick from. */
function columnField(label: string, value: string, columns: string[], onChange: (value: string) => void, hint?: string): HTMLElement {
  const listId = uid("cols");
  const input = h("input", { attrs: { type: "text", autocomplete: "off", list: listId } });
  input.value = value;
  input.addEventListener("change", () => onChange(input.value.trim()));
  return h("div", {}, field(label, input, hint), h("datalist", { attrs: { id: listId } }, ...columns.map((c) => h("option", { attrs: { value: c } }))));
}

/**
 * A panel's display editor. `columns` are its last test run's; `changed` is called with the new
 * display (undefined: a table) on every change.
 */
export function displayEditor(look: PanelLook, columns: string[], changed: () => void): HTMLElement {
  const box = h("div", { class: "display-editor" });
  const render = () => {
    const display: Display = look.display ?? { kind: "table" };
    const kind = h("select", { attrs: { name: "display" } }, ...DISPLAY_KINDS.map((k) => h("option", { attrs: { value: k } }, KIND_NAMES[k])));
    kind.value = display.kind;
    kind.addEventListener("change", () => {
      look.display = kind.value === "table" ? undefined : { ...display, kind: kind.value as DisplayKind };
      changed();
      render();
    });
    const set = (patch: Partial<Display>) => {
      const next: Display = { ...display, ...patch };
      for (const key of Object.keys(next) as (keyof Display)[]) {
        const value = next[key];
        if (value === "" || value === undefined || (Array.isArray(value) && value.length === 0)) delete next[key];
      }
      look.display = next;
      changed();
    };
    const parts: HTMLElement[] = [field("Display", kind)];
    if (display.kind !== "table") {
      const round = display.kind === "pie" || display.kind === "donut";
      if (display.kind !== "number") {
        parts.push(columnField(round ? "Labels column" : "X axis column", display.x ?? "", columns, (v) => set({ x: v || undefined }), "The first column when blank"));
      }
      parts.push(
        columnField(
          display.kind === "number" || round ? "Value column" : "Series columns",
          (display.series ?? []).join(", "),
          columns,
          (v) => set({ series: v.split(",").map((s) => s.trim()).filter(Boolean) }),
          display.kind === "number" || round ? "The first numeric column when blank" : "Comma-separated; every numeric column when blank",
        ),
      );
      if (!round && display.kind !== "number") {
        parts.push(columnField("Group by column", display.group ?? "", columns, (v) => set({ group: v || undefined }), "Splits one series by its values"));
        const stacked = h("input", { attrs: { type: "checkbox", id: uid("stacked") } });
        stacked.checked = Boolean(display.stacked);
        stacked.addEventListener("change", () => set({ stacked: stacked.checked || undefined }));
        parts.push(h("div", { class: "check" }, stacked, h("label", { attrs: { for: stacked.id } }, "Stacked")));
      }
      if (display.kind === "number") {
        parts.push(columnField("Compare with column", display.compare ?? "", columns, (v) => set({ compare: v || undefined }), "Shown as a difference and a percentage"));
      }
      const format = display.format ?? {};
      const decimals = h("input", { attrs: { type: "number", min: 0, max: 10, step: 1, name: "decimals" } });
      decimals.value = format.decimals === undefined ? "" : String(format.decimals);
      decimals.addEventListener("change", () => set({ format: { ...format, decimals: decimals.value === "" ? undefined : Math.max(0, Math.min(10, Number(decimals.value))) } }));
      const unit = h("input", { attrs: { type: "text", maxlength: 16, name: "unit", autocomplete: "off" } });
      unit.value = format.unit ?? "";
      unit.addEventListener("change", () => set({ format: { ...format, unit: unit.value || undefined } }));
      const percent = h("input", { attrs: { type: "checkbox", id: uid("percent") } });
      percent.checked = Boolean(format.percent);
      percent.addEventListener("change", () => set({ format: { ...format, percent: percent.checked || undefined } }));
      const separators = h("input", { attrs: { type: "checkbox", id: uid("separators") } });
      separators.checked = format.separators !== false;
      separators.addEventListener("change", () => set({ format: { ...format, separators: separators.checked ? undefined : false } }));
      parts.push(
        field("Decimals", decimals, "Blank: as the value has them"),
        field("Unit", unit),
        h("div", { class: "check" }, percent, h("label", { attrs: { for: percent.id } }, "Percent (× 100)")),
        h("div", { class: "check" }, separators, h("label", { attrs: { for: separators.id } }, "Thousands separators")),
      );
    }
    replace(box, ...parts);
  };
  render();
  return box;
}

/** Draws the preview of `look` from a test run's rows into `host` (a table needs none). */
export async function preview(host: HTMLElement, look: PanelLook, title: string, columns: Column[], rows: unknown[][], previous: DrawnChart | null): Promise<DrawnChart | null> {
  previous?.destroy();
  const display = look.display;
  if (!display || display.kind === "table") {
    replace(host);
    host.hidden = true;
    return null;
  }
  host.hidden = false;
  if (columns.length === 0) {
    replace(host, h("p", { class: "hint" }, "Test run the panel to see its display."));
    return null;
  }
  const plan = planOf(display, columns, rows);
  if (!plan.ok) {
    replace(host, h("p", { class: "notice" }, `Its columns don't fit this display: ${plan.why}`));
    return null;
  }
  if (plan.plan.kind === "number") {
    replace(host, h("p", { class: "big-number" }, h("span", { class: "value" }, String(plan.plan.value)), h("span", { class: "name" }, isolated(plan.plan.name))));
    return null;
  }
  // Chart.js loads only when a chart is drawn.
  const { drawChart } = await import("./charts");
  return drawChart(host, plan.plan, `Preview of ${title}`, display.format, () => undefined);
}

/**
 * The layout map: a block per panel on the 12 columns. Arrow keys move the focused block by a
 * column or a row, Shift and arrows resize it; a drag moves it to where it is dropped.
 */
export function layoutMap(panels: { key: object; title: string }[], layoutOf: (key: object) => Layout, setLayout: (key: object, layout: Layout) => void): HTMLElement {
  const map = h("div", { class: "layout-map", attrs: { role: "group", "aria-label": "Layout: arrow keys move the focused panel, Shift and arrow keys resize it" } });
  const status = h("p", { class: "hint", attrs: { role: "status" } });
  let dragged: object | null = null;
  const render = (focusKey?: object) => {
    const blocks = panels.map((panel, index) => {
      const layout = layoutOf(panel.key);
      const describe = (l: Layout) => `${panel.title || `Panel ${index + 1}`}: column ${l.x + 1}, row ${l.y + 1}, ${l.w} wide, ${l.h} tall`;
      const block = h(
        "button",
        {
          class: "layout-block",
          attrs: { type: "button", draggable: "true", "aria-label": describe(layout), "data-panel": index },
          on: {
            keydown: (event) => {
              const d = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[event.key];
              if (!d) return;
              event.preventDefault();
              const [dx, dy] = d as [number, number];
              const next = event.shiftKey ? nudged(layout, 0, 0, dx, dy) : nudged(layout, dx, dy);
              setLayout(panel.key, next);
              status.textContent = describe(next);
              render(panel.key);
            },
            dragstart: (event) => {
              dragged = panel.key;
              event.dataTransfer?.setData("text/plain", String(index));
            },
          },
        },
        isolated(panel.title || `Panel ${index + 1}`),
      );
      block.style.gridColumn = `${layout.x + 1} / span ${layout.w}`;
      block.style.gridRow = `${layout.y + 1} / span ${layout.h}`;
      return { key: panel.key, block };
    });
    replace(map, ...blocks.map((b) => b.block));
    if (focusKey) blocks.find((b) => b.key === focusKey)?.block.focus();
  };
  map.addEventListener("dragover", (event) => {
    if (dragged) event.preventDefault();
  });
  map.addEventListener("drop", (event) => {
    event.preventDefault();
    if (!dragged) return;
    const box = map.getBoundingClientRect();
    const column = Math.floor(((event.clientX - box.left) / box.width) * COLUMNS);
    const row = Math.max(0, Math.floor((event.clientY - box.top) / 32));
    const layout = layoutOf(dragged);
    setLayout(dragged, nudged({ ...layout, x: column, y: row }, 0, 0));
    const key = dragged;
    dragged = null;
    render(key);
  });
  render();
  return h("div", {}, map, status);
}

/** The layouts of panels given by key, for the map: stored or placed as the page would. */
export function initialLayouts(keys: object[], stored: (key: object) => Layout | undefined): Map<object, Layout> {
  const ids = keys.map((_, i) => String(i));
  const looks: Record<string, PanelLook> = {};
  keys.forEach((key, i) => {
    const layout = stored(key);
    if (layout) looks[String(i)] = { layout };
  });
  const places = placed(ids, looks);
  return new Map(keys.map((key, i) => [key, places.get(String(i)) as Layout]));
}

/** One input's type, default, whether it is required, and its choices. */
export function inputEditor(key: string, spec: InputSpec | undefined, credentials: { id: string; label: string }[], changed: (spec: InputSpec | undefined) => void): HTMLElement {
  const box = h("fieldset", { class: "edit-input" }, h("legend", {}, "Input ", isolated(key)));
  const render = () => {
    const current: InputSpec | undefined = spec;
    const type = h("select", { attrs: { name: `type-${key}` } }, h("option", { attrs: { value: "" } }, "Text (untyped)"), ...INPUT_KINDS.map((k) => h("option", { attrs: { value: k } }, k === "datetime" ? "date and time" : k)));
    type.value = current?.type ?? "";
    type.addEventListener("change", () => {
      spec = type.value === "" ? undefined : { ...(current ?? {}), type: type.value as InputKind };
      if (spec && spec.type !== "choice") {
        delete spec.choices;
        delete spec.choices_query;
      }
      changed(spec);
      render();
    });
    const parts: HTMLElement[] = [field("Type", type)];
    if (current) {
      const fallback = h("input", { attrs: { type: "text", autocomplete: "off", name: `default-${key}` } });
      fallback.value = current.default ?? "";
      fallback.addEventListener("change", () => {
        spec = { ...current, default: fallback.value || undefined };
        if (!spec.default) delete spec.default;
        changed(spec);
      });
      const required = h("input", { attrs: { type: "checkbox", id: uid("required") } });
      required.checked = current.required !== false;
      required.addEventListener("change", () => {
        spec = { ...current, required: required.checked ? undefined : false };
        if (spec.required === undefined) delete spec.required;
        changed(spec);
      });
      parts.push(
        field("Default", fallback, current.type === "date" ? "YYYY-MM-DD" : current.type === "datetime" ? "YYYY-MM-DDTHH:MM" : undefined),
        h("div", { class: "check" }, required, h("label", { attrs: { for: required.id } }, "Required (an optional blank input binds NULL)")),
      );
      if (current.type === "choice") {
        const fromQuery = h("input", { attrs: { type: "checkbox", id: uid("from-query") } });
        fromQuery.checked = Boolean(current.choices_query);
        fromQuery.addEventListener("change", () => {
          spec = { ...current };
          if (fromQuery.checked) {
            delete spec.choices;
            spec.choices_query = { query: "", credential_id: credentials[0]?.id ?? "" };
          } else {
            delete spec.choices_query;
            spec.choices = [];
          }
          changed(spec);
          render();
        });
        parts.push(h("div", { class: "check" }, fromQuery, h("label", { attrs: { for: fromQuery.id } }, "Choices from a query")));
        if (current.choices_query) {
          const source = current.choices_query;
          const query = h("textarea", { attrs: { rows: 2, name: `choices-query-${key}` } });
          query.value = source.query;
          query.addEventListener("change", () => {
            spec = { ...current, choices_query: { ...source, query: query.value } };
            changed(spec);
          });
          const credential = h("select", { attrs: { name: `choices-credential-${key}` } }, ...credentials.map((c) => h("option", { attrs: { value: c.id } }, c.label)));
          credential.value = source.credential_id;
          credential.addEventListener("change", () => {
            spec = { ...current, choices_query: { ...source, credential_id: credential.value } };
            changed(spec);
          });
          parts.push(field("Query (its first column)", query, "Run read-only when the page opens, at most 500 values"), field("Runs as", credential));
        } else {
          const list = h("textarea", { attrs: { rows: 3, name: `choices-${key}` } });
          list.value = (current.choices ?? []).join("\n");
          list.addEventListener("change", () => {
            spec = { ...current, choices: list.value.split("\n").map((c) => c.trim()).filter(Boolean) };
            changed(spec);
          });
          parts.push(field("Choices, one per line", list));
        }
      }
    }
    replace(box, h("legend", {}, "Input ", isolated(key)), h("div", { class: "row" }, ...parts));
  };
  render();
  return box;
}

/** The dashboard's default time range, editors and viewers. */
export function accessEditor(presentation: Presentation, changed: () => void): HTMLElement {
  const range = h("select", { attrs: { name: "default-range" } }, ...RANGE_PRESETS.map(([value, label]) => h("option", { attrs: { value } }, label)));
  range.value = presentation.time_range ?? "7d";
  range.addEventListener("change", () => {
    presentation.time_range = range.value as RangePreset;
    changed();
  });
  const editors = h("textarea", { attrs: { rows: 3, name: "editors" } });
  editors.value = membersText(presentation.editors);
  editors.addEventListener("change", () => {
    presentation.editors = parseMembers(editors.value);
    changed();
  });
  const viewers = h("textarea", { attrs: { rows: 3, name: "viewers" } });
  viewers.value = membersText(presentation.viewers);
  viewers.addEventListener("change", () => {
    presentation.viewers = parseMembers(viewers.value);
    changed();
  });
  return h(
    "div",
    { class: "row" },
    field("Default time range", range, "Panels bind it as ${__from} and ${__to}"),
    field("Editors", editors, "One per line: a user's name, or group:name"),
    field("Viewers", viewers, "Of a restricted dashboard; one per line: a user's name, or group:name"),
  );
}
