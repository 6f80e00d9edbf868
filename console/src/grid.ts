// The result grid: rows stay real DOM (buttons in rows are real buttons), only the visible ones
// are in the page (@tanstack/virtual-core), and every value renders as text: NULL unlike the
// text "NULL", masked columns marked, long values cut with the whole value a click away, each
// value bidi-isolated with its control characters visible.

import {
  Virtualizer,
  elementScroll,
  observeElementOffset,
  observeElementRect,
} from "@tanstack/virtual-core";
import { h, isolated, replace, visible } from "./dom";
import { read } from "./api";
import { readNdjson, type Column, type Outcome } from "./ndjson";

/** Values longer than this are cut in the grid. */
export const CUT_AT = 120;

const ROW_HEIGHT = 30;

/** A value as text for the grid and the clipboard (`null` stays null). */
export function valueText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** A row as one line of tab-separated values (tabs and newlines in values become spaces). */
export function rowTsv(row: unknown[]): string {
  return row.map((v) => (valueText(v) ?? "").replace(/[\t\r\n]/g, " ")).join("\t");
}

/** A last column of controls on each row (a dashboard panel's row action buttons). */
export interface RowControls {
  /** The column's header. */
  label: string;
  /** The controls of row `index`, made each time the row is painted. */
  render: (index: number) => Node;
}

export class Grid {
  readonly element: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly header: HTMLElement;
  private columns: Column[] = [];
  private rows: unknown[][] = [];
  private readonly virtualizer: Virtualizer<HTMLElement, HTMLElement>;
  private unmount: (() => void) | null = null;
  private frame = 0;
  private readonly dialog: HTMLDialogElement;
  private readonly dialogTitle: HTMLElement;
  private readonly dialogValue: HTMLElement;
  private reportRect: ((rect: { width: number; height: number }) => void) | null = null;

  constructor(
    label: string,
    private readonly controls?: RowControls,
  ) {
    this.header = h("div", { class: "grid-row grid-header", attrs: { role: "row", "aria-rowindex": 1 } });
    this.spacer = h("div", { class: "grid-spacer" });
    this.scroller = h("div", { class: "grid-scroll" }, this.spacer);
    this.element = h(
      "div",
      { class: "grid", attrs: { role: "grid", "aria-label": label, "aria-rowcount": 1, "aria-colcount": 1, hidden: true } },
      h("div", { attrs: { role: "rowgroup" } }, this.header),
      this.scroller,
    );
    const titleId = "value-dialog-title";
    this.dialogTitle = h("h2", { attrs: { id: titleId } });
    this.dialogValue = h("pre", { class: "whole-value" });
    this.dialog = h(
      "dialog",
      { attrs: { "aria-labelledby": titleId } },
      this.dialogTitle,
      this.dialogValue,
      h(
        "div",
        { class: "actions" },
        h("button", { attrs: { type: "button" }, on: { click: () => void this.copy(this.dialogValue.dataset.value ?? "") } }, "Copy value"),
        h("button", { attrs: { type: "button" }, on: { click: () => this.dialog.close() } }, "Close"),
      ),
    );
    this.element.append(this.dialog);
    this.virtualizer = new Virtualizer<HTMLElement, HTMLElement>({
      count: 0,
      getScrollElement: () => this.scroller,
      estimateSize: () => ROW_HEIGHT,
      scrollToFn: elementScroll,
      // The scroller's size, as the virtualizer's own observer reports it, and also read at each
      // paint: a grid that just became visible paints its rows in that frame, not the next.
      observeElementRect: (instance, report) => {
        this.reportRect = report;
        return observeElementRect(instance, report);
      },
      observeElementOffset,
      overscan: 8,
      // Until the scroller is measured, assume a viewport's worth: the first rows paint on the
      // first frame rather than after a measurement.
      initialRect: { width: 1024, height: 480 },
      onChange: () => this.schedule(),
    });
  }

  /** Call once the grid is in the page. */
  mount(): void {
    this.unmount?.();
    this.unmount = this.virtualizer._didMount();
    this.virtualizer._willUpdate();
    // Rows that arrived before the grid was in the page are painted now.
    this.schedule();
  }

  destroy(): void {
    this.unmount?.();
    this.unmount = null;
  }

  /** Starts a new result with these columns. */
  reset(columns: Column[]): void {
    this.element.hidden = columns.length === 0;
    this.columns = columns;
    this.rows = [];
    const controls = this.controls && columns.length > 0 ? " minmax(10rem, max-content)" : "";
    const template = `3rem repeat(${Math.max(columns.length, 1)}, minmax(8rem, 1fr))${controls}`;
    this.header.style.gridTemplateColumns = template;
    this.spacer.style.setProperty("--grid-columns", template);
    replace(
      this.header,
      h("div", { class: "grid-cell row-number", attrs: { role: "columnheader", "aria-colindex": 1 } }, "#"),
      ...columns.map((column, index) =>
        h(
          "div",
          { class: "grid-cell", attrs: { role: "columnheader", "aria-colindex": index + 2, title: visible(`${column.name} (${column.type})`) } },
          isolated(column.name),
          h("span", { class: column.type === "masked" ? "type masked" : "type" }, column.type === "masked" ? "masked" : visible(column.type)),
        ),
      ),
      this.controls &&
        columns.length > 0 &&
        h("div", { class: "grid-cell", attrs: { role: "columnheader", "aria-colindex": columns.length + 2 } }, this.controls.label),
    );
    this.element.setAttribute("aria-colcount", String(columns.length + (this.controls ? 2 : 1)));
    this.update();
  }

  /** Adds rows (one batch as it arrived). The first batch of a result paints at once (when the
   * grid is in the page): a person waits for it; later ones wait for the next frame. */
  add(rows: unknown[][]): void {
    const first = this.rows.length === 0;
    for (const row of rows) this.rows.push(row);
    this.update();
    if (first && rows.length > 0 && this.unmount && this.frame) {
      cancelAnimationFrame(this.frame);
      this.frame = 0;
      this.virtualizer._willUpdate();
      this.paint();
    }
  }

  /** Paints the visible rows again (their controls changed). */
  refresh(): void {
    this.schedule();
  }

  get rowCount(): number {
    return this.rows.length;
  }

  /** Every row as TSV, the header first. */
  tsv(): string {
    return [this.columns.map((c) => c.name).join("\t"), ...this.rows.map(rowTsv)].join("\n");
  }

  private update(): void {
    this.element.setAttribute("aria-rowcount", String(this.rows.length + 1));
    this.virtualizer.setOptions({ ...this.virtualizer.options, count: this.rows.length });
    this.schedule();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.virtualizer._willUpdate();
      this.paint();
    });
  }

  /** Tells the virtualizer the scroller's size now (a layout read), when it has one. */
  private measure(): void {
    const height = this.scroller.clientHeight;
    if (height > 0) this.reportRect?.({ width: this.scroller.clientWidth, height });
  }

  private paint(): void {
    // A repaint makes new elements: the control that had the focus hands it to its successor.
    const active = document.activeElement;
    const focusKey = active instanceof HTMLElement && this.spacer.contains(active) ? active.dataset.focusKey : undefined;
    this.measure();
    this.spacer.style.height = `${this.virtualizer.getTotalSize()}px`;
    const template = this.header.style.gridTemplateColumns;
    const items = this.virtualizer.getVirtualItems();
    this.spacer.replaceChildren(
      ...items.map((item) => {
        const row = this.rows[item.index] ?? [];
        const element = h(
          "div",
          { class: "grid-row", attrs: { role: "row", "aria-rowindex": item.index + 2 } },
          h(
            "div",
            { class: "grid-cell row-number", attrs: { role: "gridcell", "aria-colindex": 1 } },
            h(
              "button",
              {
                class: "link",
                attrs: { type: "button", "aria-label": `Copy row ${item.index + 1} as TSV`, title: "Copy the row as TSV" },
                on: { click: () => void this.copy(rowTsv(row)) },
              },
              String(item.index + 1),
            ),
          ),
          ...this.columns.map((column, index) => this.cell(row[index], column, index, item.index)),
          this.controls &&
            h(
              "div",
              { class: "grid-cell row-controls", attrs: { role: "gridcell", "aria-colindex": this.columns.length + 2 } },
              this.controls.render(item.index),
            ),
        );
        element.style.gridTemplateColumns = template;
        element.style.transform = `translateY(${item.start}px)`;
        return element;
      }),
    );
    if (focusKey) {
      for (const candidate of this.spacer.querySelectorAll<HTMLElement>("[data-focus-key]")) {
        if (candidate.dataset.focusKey === focusKey) candidate.focus();
      }
    }
  }

  private cell(value: unknown, column: Column, index: number, row: number): HTMLElement {
    const attrs = { role: "gridcell", "aria-colindex": index + 2 };
    const text = valueText(value);
    if (text === null) {
      return h("div", { class: "grid-cell", attrs }, h("span", { class: "null", attrs: { title: "SQL NULL" } }, "NULL"));
    }
    const copy = h(
      "button",
      {
        class: "copy",
        attrs: { type: "button", "aria-label": `Copy ${visible(column.name)} of row ${row + 1}`, title: "Copy the value" },
        on: { click: () => void this.copy(text) },
      },
      "⧉",
    );
    if (text.length <= CUT_AT) {
      return h("div", { class: "grid-cell", attrs }, isolated(text), copy);
    }
    // The button that shows the whole value comes first: the cut text may overflow the cell.
    return h(
      "div",
      { class: "grid-cell", attrs },
      copy,
      h(
        "button",
        {
          class: "more",
          attrs: { type: "button", "aria-label": `Show the whole value of ${visible(column.name)} (${text.length} characters)` },
          on: { click: () => this.show(column.name, text) },
        },
        "…",
      ),
      isolated(`${text.slice(0, CUT_AT)}`),
    );
  }

  private show(name: string, text: string): void {
    this.dialogTitle.replaceChildren("Whole value of ", isolated(name));
    this.dialogValue.replaceChildren(visible(text));
    this.dialogValue.dataset.value = text;
    this.dialog.showModal();
  }

  private async copy(text: string): Promise<void> {
    try {
      await navigator.clipboard.writeText(text);
      this.element.dispatchEvent(new CustomEvent("grid:copied", { bubbles: true }));
    } catch {
      this.element.dispatchEvent(new CustomEvent("grid:copy-failed", { bubbles: true }));
    }
  }
}

/** What a caller of [`streamInto`] hears of a run's answer besides its rows. */
export interface StreamHooks {
  /** The columns arrived (the grid was reset with them). */
  columns?: (columns: Column[]) => void;
  /** The token of the row before it (a panel run asked for row tokens). */
  token?: (token: string | null) => void;
  /** A batch of rows was added: how many the grid holds now. */
  progress?: (rows: number) => void;
}

/**
 * Reads a run's NDJSON answer into `grid` as it arrives (the columns, then each batch of rows)
 * and answers its outcome, or null when the answer was cut before its last line. A refused
 * answer throws its ApiError.
 */
export async function streamInto(response: Response, grid: Grid, hooks: StreamHooks = {}): Promise<Outcome | null> {
  if (!response.ok || !response.body) {
    await read(response);
    return null;
  }
  let outcome: Outcome | null = null;
  await readNdjson(response.body, (lines) => {
    const rows: unknown[][] = [];
    for (const line of lines) {
      if (line.kind === "columns") {
        grid.reset(line.columns);
        hooks.columns?.(line.columns);
      } else if (line.kind === "row") rows.push(line.row);
      else if (line.kind === "token") hooks.token?.(line.token);
      else outcome = line.outcome;
    }
    if (rows.length) grid.add(rows);
    hooks.progress?.(grid.rowCount);
  });
  return outcome;
}
