// The result grid, as the ARIA grid pattern: one Tab stop (the grid itself, its active cell
// named by aria-activedescendant), arrow keys, Home/End, Page Up/Down, Ctrl+Home/End; a cell or
// a range selected with the mouse or with Shift, Ctrl+A for all, Shift+Space a row, Ctrl+Space
// a column; Ctrl+C copies the selection as TSV. Sort by a column (its header, or Enter on it)
// and filter by a text, on the rows in the browser; columns as wide as their content, resized by
// dragging their edge (a double click fits them again); numbers right-aligned with the reader's
// separators. Rows stay real DOM, only the visible ones are in the page
// (@tanstack/virtual-core), and every value renders as text: NULL unlike the text "NULL", masked
// columns marked, long values cut with the whole value a click (or Enter) away, each value
// bidi-isolated with its control characters visible.

import { Virtualizer, elementScroll, observeElementOffset, observeElementRect } from "@tanstack/virtual-core";
import { h, isolated, replace, uid, visible } from "./dom";
import { read } from "./api";
import { icon } from "./icons";
import { readNdjson, type Column, type Outcome } from "./ndjson";
import { isNumericType, rangeOf, rangeTsv, rowTsv, valueText, viewOrder, widthOf, type Cell, type Direction } from "./grid-model";

export { rowTsv, valueText } from "./grid-model";

/** Values longer than this are cut in the grid. */
export const CUT_AT = 120;

const ROW_HEIGHT = 30;
/** The row number column's width, in pixels. */
const NUMBER_WIDTH = 56;
const CONTROLS_WIDTH = 220;
const MIN_WIDTH = 48;

/** A last column of controls on each row (a dashboard panel's row action buttons). */
export interface RowControls {
  /** The column's header. */
  label: string;
  /** The controls of row `index` (of the rows as they arrived), made each time the row is
   * painted. */
  render: (index: number) => Node;
}

/** The reader's digit grouping and decimal mark. */
function separators(): { group: string; decimal: string } {
  const parts = new Intl.NumberFormat(undefined).formatToParts(1234567.5);
  return {
    group: parts.find((p) => p.type === "group")?.value ?? ",",
    decimal: parts.find((p) => p.type === "decimal")?.value ?? ".",
  };
}

/** A number as the reader writes it (`1234567.25` → `1,234,567.25`), digit for digit: text
 * that is not a plain decimal number stays as it is. */
export function formatDecimal(text: string, marks = separators()): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) return text;
  const [, sign, whole = "", fraction] = match;
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, marks.group);
  return `${sign}${grouped}${fraction !== undefined ? marks.decimal + fraction : ""}`;
}

export class Grid {
  /** The grid with its filter: what a screen puts in the page. */
  readonly element: HTMLElement;
  /** The `role="grid"` element: the one Tab stop. */
  private readonly gridElement: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly header: HTMLElement;
  private readonly filter: HTMLInputElement;
  private readonly shown: HTMLElement;
  private readonly id = uid("grid");
  private columns: Column[] = [];
  private rows: unknown[][] = [];
  /** The rows' indexes in the shown order (filtered and sorted); `null`: every row, as it came. */
  private order: Uint32Array | null = null;
  private orderDirty = false;
  private sort: { col: number; direction: Direction } | null = null;
  private widths: number[] = [];
  private widthsFixed = false;
  private numeric: boolean[] = [];
  private marks = separators();
  /** The active cell (row -1: the header), and the other corner of the selection. */
  private focus: Cell | null = null;
  private anchor: Cell | null = null;
  private dragging = false;
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
    this.spacer = h("div", { class: "grid-spacer", attrs: { role: "rowgroup" } });
    // The scroller is the grid: one element, one Tab stop (Chromium makes a scroller inside
    // a grid a Tab stop of its own).
    this.scroller = h(
      "div",
      {
        class: "grid grid-scroll",
        attrs: { role: "grid", tabindex: 0, "aria-label": label, "aria-rowcount": 1, "aria-colcount": 1, "aria-multiselectable": "true" },
      },
      h("div", { class: "grid-head", attrs: { role: "rowgroup" } }, this.header),
      this.spacer,
    );
    this.gridElement = this.scroller;
    this.filter = h("input", { attrs: { type: "search", autocomplete: "off", "aria-label": `Filter the rows of ${label}`, placeholder: "Filter rows" } });
    this.shown = h("span", { class: "shown", attrs: { "aria-live": "polite" } });
    const titleId = uid("value-title");
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
    this.element = h(
      "div",
      { class: "grid-wrap", attrs: { hidden: true } },
      h("div", { class: "grid-tools" }, this.filter, this.shown),
      this.gridElement,
      this.dialog,
    );
    this.filter.addEventListener("input", () => {
      this.orderDirty = true;
      this.focus = this.anchor = null;
      this.update();
    });
    this.gridElement.addEventListener("keydown", (event) => this.key(event));
    this.gridElement.addEventListener("focus", () => {
      if (!this.focus && this.columns.length > 0) this.focus = this.anchor = { row: this.viewLength() > 0 ? 0 : -1, col: 0 };
      this.schedule();
    });
    this.spacer.addEventListener("pointerdown", (event) => this.press(event));
    this.header.addEventListener("pointerdown", (event) => this.press(event));
    this.spacer.addEventListener("pointermove", (event) => {
      if (!this.dragging) return;
      const cell = this.cellAt(event.target);
      if (cell && cell.row >= 0 && (cell.row !== this.focus?.row || cell.col !== this.focus.col)) {
        this.focus = cell;
        this.schedule();
      }
    });
    window.addEventListener("pointerup", this.release);
    this.virtualizer = new Virtualizer<HTMLElement, HTMLElement>({
      count: 0,
      getScrollElement: () => this.scroller,
      estimateSize: () => ROW_HEIGHT,
      scrollToFn: elementScroll,
      // The rows start below the sticky header row.
      scrollMargin: ROW_HEIGHT,
      scrollPaddingStart: ROW_HEIGHT,
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

  private readonly release = (): void => {
    this.dragging = false;
  };

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
    window.removeEventListener("pointerup", this.release);
  }

  /** Starts a new result with these columns. */
  reset(columns: Column[]): void {
    this.element.hidden = columns.length === 0;
    this.columns = columns;
    this.rows = [];
    this.order = null;
    this.orderDirty = false;
    this.sort = null;
    this.focus = this.anchor = null;
    this.filter.value = "";
    this.numeric = columns.map((c) => isNumericType(c.type));
    this.widths = columns.map((c, i) => widthOf(c, i, []));
    this.widthsFixed = false;
    this.marks = separators();
    this.gridElement.setAttribute("aria-colcount", String(columns.length + (this.controls ? 2 : 1)));
    this.drawHeader();
    this.update();
  }

  /** Adds rows (one batch as it arrived). The first batch of a result paints at once (when the
   * grid is in the page): a person waits for it; later ones wait for the next frame. */
  add(rows: unknown[][]): void {
    const first = this.rows.length === 0;
    for (const row of rows) this.rows.push(row);
    if (first && !this.widthsFixed) {
      // Widths from the first rows' content: a timestamp or an id is not cut.
      this.widths = this.columns.map((c, i) => widthOf(c, i, this.rows));
      this.drawHeader();
    }
    if (this.order) this.orderDirty = true;
    this.update();
    if (first && rows.length > 0 && this.unmount && this.frame) this.paintNow();
  }

  /** Paints the visible rows again (their controls changed). */
  refresh(): void {
    this.schedule();
  }

  /** How many rows arrived. */
  get rowCount(): number {
    return this.rows.length;
  }

  /** The columns of the result. */
  get resultColumns(): Column[] {
    return this.columns;
  }

  /** Every row as it arrived (a row's index is its buttons' and its token's). */
  arrivedRows(): readonly unknown[][] {
    return this.rows;
  }

  /** The rows shown, in the order shown (filtered and sorted). */
  shownRows(): unknown[][] {
    this.ensureOrder();
    if (!this.order) return this.rows;
    return Array.from(this.order, (i) => this.rows[i] ?? []);
  }

  /** Every row as TSV, the header first. */
  tsv(): string {
    return [this.columns.map((c) => c.name).join("\t"), ...this.rows.map(rowTsv)].join("\n");
  }

  private viewLength(): number {
    this.ensureOrder();
    return this.order ? this.order.length : this.rows.length;
  }

  /** The index (as the rows arrived) of shown row `row`. */
  private rowIndex(row: number): number {
    return this.order ? (this.order[row] ?? -1) : row;
  }

  private ensureOrder(): void {
    if (!this.orderDirty) return;
    this.orderDirty = false;
    const filter = this.filter.value;
    if (!filter.trim() && !this.sort) {
      this.order = null;
      return;
    }
    const sort = this.sort ? { ...this.sort, numeric: this.numeric[this.sort.col] ?? false } : null;
    this.order = viewOrder(this.rows, filter, sort);
  }

  private template(): string {
    const controls = this.controls && this.columns.length > 0 ? ` ${CONTROLS_WIDTH}px` : "";
    return `${NUMBER_WIDTH}px ${this.widths.map((w) => `${w}px`).join(" ")}${controls}`;
  }

  private totalWidth(): number {
    return NUMBER_WIDTH + this.widths.reduce((a, b) => a + b, 0) + (this.controls && this.columns.length > 0 ? CONTROLS_WIDTH : 0);
  }

  private drawHeader(): void {
    const template = this.template();
    this.header.style.gridTemplateColumns = template;
    this.header.style.width = `${this.totalWidth()}px`;
    this.spacer.style.width = `${this.totalWidth()}px`;
    replace(
      this.header,
      h("div", { class: "grid-cell row-number", attrs: { role: "columnheader", "aria-colindex": 1 } }, "#"),
      ...this.columns.map((column, index) => {
        const sorted = this.sort?.col === index ? this.sort.direction : null;
        return h(
          "div",
          {
            class: `grid-cell${this.numeric[index] ? " number" : ""}`,
            attrs: {
              role: "columnheader",
              "aria-colindex": index + 2,
              "aria-sort": sorted ?? "none",
              title: visible(`${column.name} (${column.type})`),
              "data-row": -1,
              "data-col": index,
              id: this.cellId(-1, index),
            },
          },
          h(
            "button",
            {
              class: "sort",
              attrs: { type: "button", tabindex: -1, title: `Sort by ${visible(column.name)}` },
              on: { click: () => this.toggleSort(index) },
            },
            isolated(column.name),
            h("span", { class: column.type === "masked" ? "type masked" : "type" }, column.type === "masked" ? "masked" : visible(column.type)),
            sorted ? icon(sorted === "ascending" ? "up" : "down") : "",
          ),
          h("span", {
            class: "resize",
            attrs: { "aria-hidden": "true", title: "Drag to resize; double-click to fit" },
            on: {
              pointerdown: (event) => this.resize(event as PointerEvent, index),
              dblclick: () => {
                this.widths[index] = widthOf(column, index, this.rows, 7.8, 2000);
                this.widthsFixed = true;
                this.drawHeader();
                this.schedule();
              },
            },
          }),
        );
      }),
      this.controls &&
        this.columns.length > 0 &&
        h("div", { class: "grid-cell", attrs: { role: "columnheader", "aria-colindex": this.columns.length + 2 } }, this.controls.label),
    );
  }

  private resize(event: PointerEvent, index: number): void {
    event.preventDefault();
    event.stopPropagation();
    const start = event.clientX;
    const width = this.widths[index] ?? 100;
    const move = (e: PointerEvent) => {
      this.widths[index] = Math.max(MIN_WIDTH, Math.round(width + e.clientX - start));
      this.widthsFixed = true;
      const template = this.template();
      this.header.style.gridTemplateColumns = template;
      this.header.style.width = `${this.totalWidth()}px`;
      this.spacer.style.width = `${this.totalWidth()}px`;
      for (const row of this.spacer.children) (row as HTMLElement).style.gridTemplateColumns = template;
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  }

  private toggleSort(col: number): void {
    const direction: Direction | null =
      this.sort?.col !== col ? "ascending" : this.sort.direction === "ascending" ? "descending" : null;
    this.sort = direction ? { col, direction } : null;
    this.orderDirty = true;
    this.drawHeader();
    this.update();
    this.paintNow();
  }

  private update(): void {
    const count = this.viewLength();
    this.gridElement.setAttribute("aria-rowcount", String(count + 1));
    this.shown.textContent =
      this.filter.value.trim() && this.columns.length > 0 ? `${count.toLocaleString()} of ${this.rows.length.toLocaleString()} rows shown` : "";
    if (this.focus && this.focus.row >= count) this.focus = this.anchor = null;
    this.virtualizer.setOptions({ ...this.virtualizer.options, count });
    this.schedule();
  }

  /** Paints now: a key or a click shows its effect in the same frame. */
  private paintNow(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.virtualizer._willUpdate();
    this.paint();
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

  private cellId(row: number, col: number): string {
    return `${this.id}-r${row}-c${col}`;
  }

  private selected(row: number, col: number): boolean {
    if (!this.focus || !this.anchor || row < 0) return false;
    const { top, bottom, left, right } = rangeOf(this.anchor, this.focus);
    return row >= top && row <= bottom && col >= left && col <= right;
  }

  private paint(): void {
    this.ensureOrder();
    // A repaint makes new elements: the control that had the focus hands it to its successor.
    const active = document.activeElement;
    const focusKey = active instanceof HTMLElement && this.spacer.contains(active) ? active.dataset.focusKey : undefined;
    this.measure();
    this.spacer.style.height = `${this.virtualizer.getTotalSize() - ROW_HEIGHT}px`;
    const template = this.template();
    const items = this.virtualizer.getVirtualItems();
    this.spacer.replaceChildren(
      ...items.map((item) => {
        const index = this.rowIndex(item.index);
        const row = this.rows[index] ?? [];
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
                attrs: { type: "button", tabindex: -1, "aria-label": `Copy row ${item.index + 1} as TSV`, title: "Copy the row as TSV" },
                on: { click: () => void this.copy(rowTsv(row)) },
              },
              String(item.index + 1),
            ),
          ),
          ...this.columns.map((column, col) => this.cell(row[col], column, col, item.index)),
          this.controls &&
            h(
              "div",
              { class: "grid-cell row-controls", attrs: { role: "gridcell", "aria-colindex": this.columns.length + 2, "data-row": item.index, "data-col": this.columns.length, id: this.cellId(item.index, this.columns.length) } },
              this.controls.render(index),
            ),
        );
        element.style.gridTemplateColumns = template;
        element.style.width = `${this.totalWidth()}px`;
        element.style.transform = `translateY(${item.start - ROW_HEIGHT}px)`;
        return element;
      }),
    );
    for (const cell of this.header.querySelectorAll<HTMLElement>("[role=columnheader][data-col]")) {
      cell.classList.toggle("active", this.focus?.row === -1 && Number(cell.dataset.col) === this.focus.col);
    }
    const activeId = this.focus ? this.cellId(this.focus.row, this.focus.col) : null;
    if (activeId && document.getElementById(activeId)) this.gridElement.setAttribute("aria-activedescendant", activeId);
    else this.gridElement.removeAttribute("aria-activedescendant");
    if (focusKey) {
      for (const candidate of this.spacer.querySelectorAll<HTMLElement>("[data-focus-key]")) {
        if (candidate.dataset.focusKey === focusKey) candidate.focus();
      }
    }
  }

  private cell(value: unknown, column: Column, col: number, row: number): HTMLElement {
    const isActive = this.focus?.row === row && this.focus.col === col;
    const isSelected = this.selected(row, col);
    const attrs = {
      role: "gridcell",
      "aria-colindex": col + 2,
      "aria-selected": isSelected ? "true" : "false",
      "data-row": row,
      "data-col": col,
      id: this.cellId(row, col),
    };
    const classes = `grid-cell${this.numeric[col] ? " number" : ""}${isSelected ? " selected" : ""}${isActive ? " active" : ""}`;
    const text = valueText(value);
    if (text === null) {
      return h("div", { class: classes, attrs }, h("span", { class: "null", attrs: { title: "SQL NULL" } }, "NULL"));
    }
    const copy = h(
      "button",
      {
        class: "copy",
        attrs: { type: "button", tabindex: -1, "aria-label": `Copy ${visible(column.name)} of row ${row + 1}`, title: "Copy the value" },
        on: { click: () => void this.copy(text) },
      },
      icon("copy"),
    );
    if (text.length <= CUT_AT) {
      const shown = this.numeric[col] ? formatDecimal(text, this.marks) : text;
      return h("div", { class: classes, attrs }, isolated(shown), copy);
    }
    // The button that shows the whole value comes first: the cut text may overflow the cell.
    return h(
      "div",
      { class: classes, attrs },
      copy,
      h(
        "button",
        {
          class: "more",
          attrs: { type: "button", tabindex: -1, "aria-label": `Show the whole value of ${visible(column.name)} (${text.length} characters)` },
          on: { click: () => this.show(column.name, text) },
        },
        "…",
      ),
      isolated(`${text.slice(0, CUT_AT)}`),
    );
  }

  /** The cell an event's target is in, if any. */
  private cellAt(target: EventTarget | null): Cell | null {
    const cell = (target as Element | null)?.closest?.<HTMLElement>("[data-row][data-col]");
    if (!cell) return null;
    return { row: Number(cell.dataset.row), col: Number(cell.dataset.col) };
  }

  private press(event: PointerEvent): void {
    if (event.button !== 0) return;
    const cell = this.cellAt(event.target);
    if (!cell) return;
    // A button in a cell (copy, the whole value, a row action) is its own: a repaint now would
    // take it from under the pointer before its click.
    if ((event.target as Element).closest("button") !== null && cell.row >= 0) return;
    const onButton = (event.target as Element).closest("button") !== null;
    if (cell.row >= 0 && event.shiftKey && this.anchor && this.anchor.row >= 0) {
      this.focus = cell;
      event.preventDefault();
    } else {
      this.focus = this.anchor = cell;
      this.dragging = cell.row >= 0 && !onButton;
    }
    if (!onButton) {
      event.preventDefault();
      this.gridElement.focus({ preventScroll: true });
    }
    this.paintNow();
  }

  /** The last column the keyboard reaches (the row controls' when there are). */
  private lastCol(): number {
    return this.columns.length - (this.controls ? 0 : 1);
  }

  private key(event: KeyboardEvent): void {
    if (event.target !== this.gridElement || this.columns.length === 0) return;
    const mod = event.ctrlKey || event.metaKey;
    const rows = this.viewLength();
    const focus = this.focus ?? { row: rows > 0 ? 0 : -1, col: 0 };
    const page = Math.max(1, Math.floor(this.scroller.clientHeight / ROW_HEIGHT) - 2);
    let next: Cell;
    switch (event.key) {
      case "ArrowDown":
        next = { row: Math.min(rows - 1, focus.row + 1), col: focus.col };
        break;
      case "ArrowUp":
        next = { row: Math.max(-1, focus.row - 1), col: focus.col };
        break;
      case "ArrowRight":
        next = { row: focus.row, col: Math.min(this.lastCol(), focus.col + 1) };
        break;
      case "ArrowLeft":
        next = { row: focus.row, col: Math.max(0, focus.col - 1) };
        break;
      case "Home":
        next = mod ? { row: rows > 0 ? 0 : -1, col: focus.col } : { row: focus.row, col: 0 };
        break;
      case "End":
        next = mod ? { row: rows - 1, col: focus.col } : { row: focus.row, col: this.lastCol() };
        break;
      case "PageDown":
        next = { row: Math.min(rows - 1, focus.row + page), col: focus.col };
        break;
      case "PageUp":
        next = { row: Math.max(0, focus.row - page), col: focus.col };
        break;
      case "a":
      case "A":
        if (!mod || rows === 0) return;
        this.anchor = { row: 0, col: 0 };
        this.focus = { row: rows - 1, col: this.columns.length - 1 };
        event.preventDefault();
        this.paintNow();
        return;
      case "c":
      case "C":
        if (!mod || event.altKey) return;
        event.preventDefault();
        void this.copySelection();
        return;
      case " ":
        if (focus.row < 0 || !(event.shiftKey || mod)) return;
        event.preventDefault();
        if (event.shiftKey) {
          this.anchor = { row: focus.row, col: 0 };
          this.focus = { row: focus.row, col: this.columns.length - 1 };
        } else {
          this.anchor = { row: 0, col: focus.col };
          this.focus = { row: rows - 1, col: focus.col };
        }
        this.paintNow();
        return;
      case "Enter":
        event.preventDefault();
        this.activate(focus);
        return;
      case "Escape":
        if (this.anchor && this.focus && (this.anchor.row !== this.focus.row || this.anchor.col !== this.focus.col)) {
          event.preventDefault();
          this.anchor = this.focus;
          this.paintNow();
        }
        return;
      default:
        return;
    }
    event.preventDefault();
    if (next.row < -1) return;
    // The header row takes no range: Shift extends over rows of data only.
    const extend = event.shiftKey && next.row >= 0 && (this.anchor?.row ?? -1) >= 0 && next.col < this.columns.length;
    this.focus = next;
    if (!extend) this.anchor = next;
    this.reveal(next);
    this.paintNow();
  }

  /** Scrolls `cell` into view. */
  private reveal(cell: Cell): void {
    if (cell.row >= 0) this.virtualizer.scrollToIndex(cell.row, { align: "auto" });
    let left = NUMBER_WIDTH;
    for (let i = 0; i < cell.col; i++) left += this.widths[i] ?? 0;
    const width = cell.col < this.columns.length ? (this.widths[cell.col] ?? 0) : CONTROLS_WIDTH;
    const view = this.scroller;
    if (left - NUMBER_WIDTH < view.scrollLeft) view.scrollLeft = left - NUMBER_WIDTH;
    else if (left + width > view.scrollLeft + view.clientWidth) view.scrollLeft = left + width - view.clientWidth;
  }

  /** Enter on a cell: sorts by a header, shows a cut value whole, or hands the focus to the
   * row's controls (Escape or Tab leaves them). */
  private activate(cell: Cell): void {
    if (cell.row === -1) {
      this.toggleSort(cell.col);
      return;
    }
    const element = document.getElementById(this.cellId(cell.row, cell.col));
    const button = element?.querySelector<HTMLButtonElement>(cell.col >= this.columns.length ? "button" : "button.more");
    if (!button) return;
    if (cell.col >= this.columns.length) {
      button.focus();
      element?.addEventListener(
        "keydown",
        (event) => {
          if (event.key === "Escape") this.gridElement.focus();
        },
        { once: true },
      );
    } else button.click();
  }

  private async copySelection(): Promise<void> {
    if (!this.focus || this.focus.row < 0) return;
    const anchor = this.anchor ?? this.focus;
    const single = anchor.row === this.focus.row && anchor.col === this.focus.col;
    this.ensureOrder();
    const text = single
      ? (valueText(this.rows[this.rowIndex(this.focus.row)]?.[this.focus.col]) ?? "")
      : rangeTsv(this.rows, this.order, anchor, this.focus);
    await this.copy(text);
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
