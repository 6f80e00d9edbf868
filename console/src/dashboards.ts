// Dashboards: the list of those the caller may see, and a page per dashboard with its panels on
// the 12-column grid its presentation gives (stacked on a narrow screen). The dashboard's inputs
// and time range sit above the panels, once (dashboard-inputs.ts); a panel runs when the page
// opens if its inputs have values, and again on Apply. Rows stream into the console's grid with
// one button per shown row action; a panel that charts draws the same rows (one run, whatever
// the view), with its points by keyboard and the grid as its data table; choosing a point shows
// that row's buttons. A button whose action prompts opens a modal with one field per prompted
// input; a start shows the workflow run's progress on the row. A row's token (the server's proof
// that the panel returned it) stays in this page's memory: never in the URL or browser storage.

import { actionLabel, actionState, promptLabel, promptedMappings, shownActions, triggerable } from "./actions";
import {
  ApiError,
  call,
  headers,
  read,
  type Action,
  type Dashboard,
  type DeliveryProgress,
  type Page,
  type Panel,
} from "./api";
import type { App, Screen } from "./app";
import { InputBar } from "./dashboard-inputs";
import { formatNumber, planOf, type NumberPlan } from "./chart-model";
import type { DrawnChart } from "./charts";
import { emptyPresentation, mayEdit, placed, readingOrder, type Display, type PanelLook, type Presentation } from "./presentation";
import { dangerDialog, field, h, isolated, replace, table, uid } from "./dom";
import { Grid, streamInto } from "./grid";
import { outcomeText, type Column } from "./ndjson";
import { when } from "./clock";

const DASHBOARDS = "/api/v1/dashboards";

/** The auto-refresh choices, in seconds (0: off). */
const REFRESH_CHOICES: [number, string][] = [
  [0, "Off"],
  [30, "Every 30 s"],
  [60, "Every minute"],
  [300, "Every 5 minutes"],
];

/** How long a started workflow run is followed, and the longest pause between two looks. */
const FOLLOW_FOR_MS = 5 * 60_000;
const FOLLOW_PAUSE_MAX_MS = 10_000;


export async function dashboardsScreen(app: App): Promise<Screen> {
  const all: Dashboard[] = [];
  let after: string | null = null;
  do {
    const query: string = after ? `&after=${encodeURIComponent(after)}` : "";
    const page: Page<Dashboard> = await call<Page<Dashboard>>("GET", `${DASHBOARDS}?limit=500${query}`);
    all.push(...page.data);
    after = page.next;
  } while (after && all.length < 10_000);
  all.sort((a, b) => a.name.localeCompare(b.name));
  const rows = all.map((dashboard) =>
    h(
      "tr",
      {},
      h("td", {}, app.link(`dashboards/${encodeURIComponent(dashboard.id)}`, isolated(dashboard.name))),
      h("td", {}, String(dashboard.panels.length)),
      h("td", {}, dashboard.restricted_access ? h("span", { class: "badge" }, "restricted") : ""),
    ),
  );
  const element = h(
    "section",
    { class: "dashboards" },
    h("h1", {}, "Dashboards"),
    (app.me?.may.manage_dashboards || app.me?.may.make_dashboards) && h("p", {}, app.link("dashboards/new", "New dashboard")),
    all.length === 0
      ? h("p", {}, "No dashboard to show: none exists yet, or the restricted ones query databases you may not query.")
      : table("Dashboards you may see", ["Name", "Panels", "Access"], rows),
  );
  return { title: "Dashboards", element };
}

export async function dashboardScreen(app: App, id: string): Promise<Screen> {
  let dashboard: Dashboard;
  let presentation: Presentation;
  try {
    [dashboard, presentation] = await Promise.all([
      call<Dashboard>("GET", `${DASHBOARDS}/${encodeURIComponent(id)}`),
      call<Presentation>("GET", `${DASHBOARDS}/${encodeURIComponent(id)}/presentation`),
    ]);
    presentation = { ...emptyPresentation(), ...presentation };
  } catch (error) {
    if (error instanceof ApiError && (error.status === 403 || error.status === 404)) {
      const why = error.status === 403 ? error.message : "There is no such dashboard.";
      return {
        title: "Dashboard",
        element: h("section", {}, h("h1", {}, "Dashboard"), h("p", { class: "error", attrs: { role: "alert" } }, why)),
      };
    }
    throw error;
  }
  const params = new URLSearchParams(location.search);
  const usesTime = dashboard.panels.some((panel) => /\$\{__(from|to)\}/.test(panel.details.query));
  const runAll = () => {
    bar.clearErrors();
    for (const view of views) void view.run();
  };
  const bar = new InputBar(dashboard.id, dashboard.panels, presentation, params, runAll, usesTime);
  const views = dashboard.panels.map((panel) => new PanelView(app, dashboard, panel, presentation.panels[panel.id], bar));
  // The chart library starts loading now, beside the runs, when a panel charts.
  if (dashboard.panels.some((p) => (presentation.panels[p.id]?.display?.kind ?? "table") !== "table")) void loadCharts();
  const layouts = placed(
    dashboard.panels.map((p) => p.id),
    presentation.panels,
  );
  const order = readingOrder(layouts);
  views.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
  for (const view of views) {
    const layout = layouts.get(view.id);
    if (layout) view.place(layout.x, layout.y, layout.w, layout.h);
  }
  const refresh = h(
    "select",
    { attrs: { id: uid("refresh") } },
    ...REFRESH_CHOICES.map(([secs, label]) => h("option", { attrs: { value: secs } }, label)),
  );
  const every = Number(params.get("refresh") ?? "0");
  refresh.value = String(REFRESH_CHOICES.some(([secs]) => secs === every) ? every : 0);
  let timer = 0;
  const schedule = () => {
    window.clearInterval(timer);
    const secs = Number(refresh.value);
    if (secs > 0) {
      timer = window.setInterval(() => {
        for (const view of views) if (view.ready() && !view.running) void view.run();
      }, secs * 1000);
    }
  };
  refresh.addEventListener("change", () => {
    const next = new URLSearchParams(location.search);
    if (refresh.value === "0") next.delete("refresh");
    else next.set("refresh", refresh.value);
    const search = next.toString();
    history.replaceState(null, "", `${location.pathname}${search ? `?${search}` : ""}`);
    schedule();
  });
  const element = h(
    "section",
    { class: "dashboard" },
    h(
      "div",
      { class: "dashboard-head" },
      h("h1", {}, isolated(dashboard.name)),
      dashboard.restricted_access && h("span", { class: "badge" }, "restricted"),
      field("Auto-refresh", refresh),
      mayEdit(app.me, presentation) && editorTools(app, dashboard),
    ),
    bar.element,
    dashboard.panels.length === 0 && h("p", {}, "This dashboard has no panels yet."),
    h("div", { class: "panel-grid" }, ...views.map((view) => view.element)),
  );
  // The panels' runs start now, side by side; their grids join the page on the next frame.
  for (const view of views) void view.run();
  requestAnimationFrame(() => {
    for (const view of views) view.mount();
  });
  schedule();
  return {
    title: dashboard.name,
    element,
    leave: () => {
      window.clearInterval(timer);
      for (const view of views) view.destroy();
    },
  };
}

/** Edit, duplicate, export as JSON, and delete (behind a confirmation), for those who manage dashboards. */
function editorTools(app: App, dashboard: Dashboard): HTMLElement {
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const dialog = dangerDialog(
    ["Delete ", isolated(dashboard.name), "?"],
    [`This deletes the dashboard with its ${dashboard.panels.length} panel(s) and their row actions. It can't be undone; the queries and workflow runs it started stay in the audit log.`],
    "Delete for good",
    async () => {
      await call("DELETE", `${DASHBOARDS}/${encodeURIComponent(dashboard.id)}`);
      await app.go("dashboards", true);
    },
  );
  const duplicate = async () => {
    const { dashboardBody, draftOf } = await import("./dashboard-editor");
    const body = dashboardBody(draftOf(dashboard), false);
    body.name = `${dashboard.name} (copy)`;
    try {
      const made = await call<Dashboard>("POST", DASHBOARDS, body);
      await app.go(`dashboards/${encodeURIComponent(made.id)}/edit`);
    } catch (e) {
      error.textContent = e instanceof Error ? e.message : String(e);
    }
  };
  const exportJson = () => {
    const blob = new Blob([JSON.stringify(dashboard, null, 2)], { type: "application/json" });
    const url = URL.createObjectURL(blob);
    const link = h("a", { attrs: { href: url, download: `${dashboard.id}.json` } });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };
  return h(
    "div",
    { class: "editor-tools" },
    app.link(`dashboards/${encodeURIComponent(dashboard.id)}/edit`, "Edit"),
    h("button", { attrs: { type: "button" }, on: { click: () => void duplicate() } }, "Duplicate"),
    h("button", { attrs: { type: "button" }, on: { click: exportJson } }, "Export JSON"),
    h("button", { class: "danger", attrs: { type: "button" }, on: { click: () => dialog.showModal() } }, "Delete…"),
    error,
    dialog,
  );
}

/** A row's workflow runs, as the row shows them. */
interface Progress {
  label: string;
  text: string;
  failed: boolean;
}

/** One panel on the page: its result (as a chart, a number or a table), its row actions. */
class PanelView {
  readonly element: HTMLElement;
  running: AbortController | null = null;
  private readonly grid: Grid;
  private readonly actions: Action[];
  private readonly display: Display | undefined;
  /** Where the chart or number goes. */
  private readonly figure = h("div", { class: "figure" });
  /** The chosen point's row, with its buttons. */
  private readonly selection = h("div", { class: "selected-row", attrs: { hidden: true } });
  private readonly tableToggle: HTMLButtonElement | null = null;
  private chart: DrawnChart | null = null;
  private selected: number | null = null;
  private readonly summary = h("span", { class: "summary", attrs: { role: "status" } });
  private readonly notice = h("p", { class: "notice", attrs: { hidden: true } });
  private readonly error = h("p", { class: "error", attrs: { role: "alert" } });
  private readonly lastRun = h("span", { class: "last-run" });
  private readonly disabledNote = h("ul", { class: "action-notes" });
  private columns: Column[] = [];
  private tokens: (string | null)[] = [];
  /** Which run the rows are of: a start answered after another run follows no old row. */
  private generation = 0;
  private readonly progress = new Map<number, Progress>();
  private destroyed = false;

  constructor(
    private readonly app: App,
    private readonly dashboard: Dashboard,
    private readonly panel: Panel,
    look: PanelLook | undefined,
    private readonly bar: InputBar,
  ) {
    this.actions = shownActions(panel.actions);
    this.display = look?.display && look.display.kind !== "table" ? look.display : undefined;
    this.grid = new Grid(
      `Result of ${panel.title}`,
      this.actions.length > 0 ? { label: "Actions", render: (index) => this.rowControls(index) } : undefined,
    );
    const titleId = uid("panel");
    if (this.display) {
      this.tableToggle = h(
        "button",
        { attrs: { type: "button", "aria-pressed": "false" }, on: { click: () => this.showTable(this.tableToggle?.getAttribute("aria-pressed") !== "true") } },
        "Data table",
      );
    }
    this.element = h(
      "section",
      { class: "panel", attrs: { "aria-labelledby": titleId } },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { attrs: { id: titleId } }, isolated(panel.title)),
        h(
          "div",
          { class: "panel-tools" },
          this.tableToggle,
          h("button", { attrs: { type: "button" }, on: { click: () => void this.run() } }, "Refresh"),
          h("button", { attrs: { type: "button" }, on: { click: () => void this.copy() } }, "Copy"),
          h("button", { attrs: { type: "button", title: "Run the panel and download its rows as a CSV file" }, on: { click: () => void this.csv() } }, "Run to CSV"),
        ),
      ),
      this.disabledNote,
      this.error,
      h("div", { class: "result-head" }, this.summary, this.lastRun, this.notice),
      this.figure,
      this.selection,
      this.grid.element,
    );
    this.figure.hidden = !this.display;
    this.element.classList.toggle("charted", Boolean(this.display));
  }

  get id(): string {
    return this.panel.id;
  }

  /** Puts the panel at its place on the grid (a narrow screen stacks the panels instead). */
  place(x: number, y: number, w: number, height: number): void {
    this.element.style.gridColumn = `${x + 1} / span ${w}`;
    this.element.style.gridRow = `${y + 1} / span ${height}`;
  }

  /** Shows the data table instead of the chart (or back). */
  private showTable(table: boolean): void {
    this.tableToggle?.setAttribute("aria-pressed", String(table));
    this.element.classList.toggle("show-table", table);
    this.figure.hidden = table;
    if (table) this.grid.refresh();
  }

  /** Draws the chart or number from the rows the grid holds (the one run's). */
  private async draw(): Promise<void> {
    this.chart?.destroy();
    this.chart = null;
    const display = this.display;
    if (!display) return;
    const plan = planOf(display, this.grid.resultColumns, this.grid.arrivedRows());
    if (!plan.ok) {
      replace(this.figure, h("p", { class: "notice misfit" }, `This panel's ${display.kind} can't be drawn: ${plan.why} The data table shows the rows.`));
      this.showTable(true);
      return;
    }
    if (plan.plan.kind === "number") {
      replace(this.figure, numberFigure(plan.plan, display));
      return;
    }
    const charts = await loadCharts();
    if (this.destroyed) return;
    this.chart = charts.drawChart(this.figure, plan.plan, this.panel.title, display.format, (row) => this.choose(row));
    if (plan.plan.cut > 0) {
      this.figure.append(h("p", { class: "notice" }, `The chart draws the first ${(this.grid.rowCount - plan.plan.cut).toLocaleString()} rows; the data table has all ${this.grid.rowCount.toLocaleString()}.`));
    }
  }

  /** A chosen point's row: its buttons, below the chart, focused. */
  private choose(row: number): void {
    this.selected = row;
    this.renderSelection();
    this.selection.querySelector<HTMLElement>("button:not([disabled])")?.focus();
  }

  private renderSelection(): void {
    const row = this.selected;
    if (row === null || this.actions.length === 0) {
      this.selection.hidden = true;
      return;
    }
    const cells = this.grid.arrivedRows()[row] ?? [];
    const columns = this.grid.resultColumns;
    const summary = columns
      .slice(0, 3)
      .map((c, i) => `${c.name} = ${cells[i] === null ? "NULL" : String(cells[i])}`)
      .join(", ");
    this.selection.hidden = false;
    replace(
      this.selection,
      h("p", { class: "hint" }, `Row ${row + 1}: `, isolated(summary)),
      this.rowControls(row),
    );
    this.selection.setAttribute("aria-label", `Actions of row ${row + 1}`);
    this.selection.setAttribute("role", "group");
  }

  mount(): void {
    this.grid.mount();
  }

  destroy(): void {
    this.destroyed = true;
    this.running?.abort();
    this.chart?.destroy();
    this.grid.destroy();
  }

  /** Whether every required input has a value (a panel without inputs always has). */
  ready(): boolean {
    return this.bar.missingFor(this.panel).length === 0;
  }

  /** The run's body: the inputs and the time range. */
  private runBody(): Record<string, unknown> {
    const body: Record<string, unknown> = { inputs: this.bar.valuesFor(this.panel) };
    const range = this.bar.timeRange();
    if (range) body.time_range = range;
    return body;
  }

  private path(): string {
    return `${DASHBOARDS}/${encodeURIComponent(this.dashboard.id)}/panels/${encodeURIComponent(this.panel.id)}`;
  }

  async run(): Promise<void> {
    if (!this.ready()) {
      this.summary.textContent = "";
      this.error.textContent = `Fill in ${this.bar.missingFor(this.panel).join(", ")} above, then Apply.`;
      return;
    }
    this.running?.abort();
    const controller = new AbortController();
    this.running = controller;
    this.generation += 1;
    this.progress.clear();
    this.tokens = [];
    this.columns = [];
    this.selected = null;
    this.selection.hidden = true;
    this.error.textContent = "";
    this.notice.hidden = true;
    this.summary.textContent = "Running…";
    this.grid.reset([]);
    this.element.setAttribute("aria-busy", "true");
    const started = performance.now();
    try {
      const body = this.runBody();
      if (triggerable(this.actions)) body.row_tokens = true;
      const response = await fetch(`${this.path()}/run`, {
        method: "POST",
        headers: headers(true, "application/x-ndjson"),
        body: JSON.stringify(body),
        credentials: "same-origin",
        signal: controller.signal,
      });
      const outcome = await streamInto(response, this.grid, {
        columns: (columns) => {
          this.columns = columns;
          this.noteDisabled();
        },
        token: (token) => this.tokens.push(token),
        progress: (rows) => {
          this.summary.textContent = `${rows.toLocaleString("en")} rows so far…`;
        },
      });
      if (!response.ok || !response.body) return;
      const told = outcomeText(outcome, this.grid.rowCount, Math.round(performance.now() - started), "the panel's query returned more.");
      if (told.summary) this.summary.textContent = told.summary;
      this.error.textContent = told.error;
      this.notice.textContent = told.notice;
      this.notice.hidden = !told.notice;
      await this.draw();
    } catch (e) {
      if (controller.signal.aborted) return;
      this.summary.textContent = "";
      const message = e instanceof Error ? e.message : String(e);
      if (e instanceof ApiError && e.status === 422 && this.bar.showErrors(e.fields)) {
        this.error.textContent = "Nothing ran: an input above has a value this panel can't use.";
      } else {
        this.error.textContent = e instanceof ApiError && e.status === 403 ? `No access: ${message}` : message;
      }
    } finally {
      if (this.running === controller) {
        this.running = null;
        this.element.removeAttribute("aria-busy");
        this.lastRun.textContent = `Last run at ${when(new Date().toISOString())}`;
      }
    }
  }

  /** Says, under the panel's title, why an action's buttons are disabled. */
  private noteDisabled(): void {
    replace(
      this.disabledNote,
      ...this.actions.map((action) => {
        const state = actionState(action, this.columns);
        return state.enabled ? null : h("li", {}, isolated(actionLabel(action)), `: ${state.why}`);
      }),
    );
  }

  /** Runs the panel to a CSV file: the server answers a one-minute URL, the browser saves what it streams. */
  private async csv(): Promise<void> {
    if (!this.ready()) {
      this.error.textContent = `Fill in ${this.bar.missingFor(this.panel).join(", ")} above, then Run to CSV.`;
      return;
    }
    try {
      const { url } = await call<{ url: string }>("POST", `${this.path()}/download`, this.runBody());
      const link = h("a", { attrs: { href: url, download: `${this.panel.id}.csv`, hidden: true } });
      document.body.append(link);
      link.click();
      link.remove();
      this.app.announce("The CSV download started");
    } catch (e) {
      this.error.textContent = e instanceof Error ? e.message : String(e);
    }
  }

  private async copy(): Promise<void> {
    try {
      await navigator.clipboard.writeText(this.grid.tsv());
      this.app.announce("Copied the panel's rows");
    } catch {
      this.app.announce("Could not copy: the browser refused the clipboard");
    }
  }

  /** Row `index`'s buttons, one per shown action, and how its workflow runs are doing. */
  private rowControls(index: number): Node {
    const buttons = this.actions.map((action) => {
      const state = actionState(action, this.columns);
      const label = actionLabel(action);
      const button = h(
        "button",
        {
          class: "row-action",
          attrs: {
            type: "button",
            disabled: !state.enabled,
            title: state.enabled ? undefined : state.why,
            "aria-label": state.enabled ? `${label}, row ${index + 1}` : `${label}, row ${index + 1}: unavailable. ${state.why}`,
            "data-focus-key": `${index}:${action.id}`,
            "data-action": action.id,
          },
        },
        isolated(label),
      );
      if (state.enabled) button.addEventListener("click", () => void this.click(index, action, button));
      return button;
    });
    const progress = this.progress.get(index);
    return h(
      "div",
      { class: "row-actions" },
      ...buttons,
      progress && h("span", { class: progress.failed ? "progress failed" : "progress" }, isolated(`${progress.label}: ${progress.text}`)),
    );
  }

  private async click(index: number, action: Action, opener: HTMLButtonElement): Promise<void> {
    const prompted = promptedMappings(action);
    let values: Record<string, string> = {};
    if (prompted.length > 0) {
      const typed = await this.ask(index, action, opener);
      if (!typed) return;
      values = typed;
    }
    await this.trigger(index, action, values);
  }

  /**
   * The prompt modal: one field per prompted mapping, labelled by its prompt (or its workflow
   * input key when the prompt is blank). Resolves with the typed values on Submit, null on
   * Cancel or Escape; the focus goes back to the button.
   */
  private ask(index: number, action: Action, opener: HTMLButtonElement): Promise<Record<string, string> | null> {
    const focusKey = opener.dataset.focusKey;
    return new Promise((resolve) => {
      const titleId = uid("prompt");
      const controls = promptedMappings(action).map((mapping) => {
        const control = h("input", { attrs: { type: "text", name: mapping.workflow_input_key, required: true, autocomplete: "off" } });
        return { mapping, control };
      });
      let answer: Record<string, string> | null = null;
      const dialog = h("dialog", { class: "prompt", attrs: { "aria-labelledby": titleId } });
      const form = h(
        "form",
        {
          on: {
            submit: (event) => {
              event.preventDefault();
              answer = {};
              for (const { mapping, control } of controls) answer[mapping.workflow_input_key] = control.value;
              dialog.close();
            },
          },
        },
        h("h2", { attrs: { id: titleId } }, isolated(actionLabel(action))),
        h("p", { class: "hint" }, `Starts workflow `, isolated(action.workflow_id ?? ""), ` for row ${index + 1} of `, isolated(this.panel.title), "."),
        ...controls.map(({ mapping, control }) => field(promptLabel(mapping), control)),
        h(
          "div",
          { class: "actions" },
          h("button", { class: "primary", attrs: { type: "submit" } }, "Submit"),
          h("button", { attrs: { type: "button" }, on: { click: () => dialog.close() } }, "Cancel"),
        ),
      );
      dialog.append(form);
      dialog.addEventListener("close", () => {
        dialog.remove();
        const back = opener.isConnected
          ? opener
          : [...this.element.querySelectorAll<HTMLElement>("[data-focus-key]")].find((b) => b.dataset.focusKey === focusKey);
        back?.focus();
        resolve(answer);
      });
      this.element.append(dialog);
      dialog.showModal();
      controls[0]?.control.focus();
    });
  }

  private show(index: number, generation: number, progress: Progress): void {
    if (generation !== this.generation || this.destroyed) return;
    this.progress.set(index, progress);
    this.grid.refresh();
    if (this.selected === index) {
      const focused = this.selection.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.focusKey : undefined;
      this.renderSelection();
      if (focused) [...this.selection.querySelectorAll<HTMLElement>("[data-focus-key]")].find((b) => b.dataset.focusKey === focused)?.focus();
    }
  }

  /** Starts `action`'s workflow on row `index` with the typed values, then follows it. */
  private async trigger(index: number, action: Action, prompted: Record<string, string>): Promise<void> {
    const generation = this.generation;
    const label = actionLabel(action);
    const body: Record<string, unknown> = { prompted };
    const token = this.tokens[index];
    if (action.input_mappings.some((mapping) => !mapping.prompt_user)) body.row_token = token ?? null;
    this.show(index, generation, { label, text: "starting…", failed: false });
    let started: { id: string };
    try {
      const request = headers(true);
      request.set("idempotency-key", crypto.randomUUID());
      const response = await fetch(`${this.path()}/actions/${encodeURIComponent(action.id)}/trigger`, {
        method: "POST",
        headers: request,
        body: JSON.stringify(body),
        credentials: "same-origin",
        cache: "no-store",
      });
      started = await read<{ id: string }>(response);
    } catch (e) {
      if (e instanceof ApiError && e.status === 422 && e.fields.row_token) {
        // The row's token expired, or the panel changed: run it again for fresh rows.
        const why = e.fields.row_token.join(", ");
        await this.run();
        this.error.textContent = `Nothing was started: this row's token ${why}. The panel ran again; click the button again.`;
        return;
      }
      const message = e instanceof Error ? e.message : String(e);
      this.show(index, generation, { label, text: `not started: ${message}`, failed: true });
      this.app.announce(`${label} was not started: ${message}`);
      return;
    }
    this.show(index, generation, { label, text: "pending", failed: false });
    this.app.announce(`${label} started`);
    await this.follow(index, generation, label, started.id);
  }

  /** Looks at a started workflow run, ever less often, until it is delivered or failed. */
  private async follow(index: number, generation: number, label: string, id: string): Promise<void> {
    const end = Date.now() + FOLLOW_FOR_MS;
    let pause = 1000;
    while (!this.destroyed && generation === this.generation && Date.now() < end) {
      await new Promise((resolve) => window.setTimeout(resolve, pause));
      pause = Math.min(pause * 1.5, FOLLOW_PAUSE_MAX_MS);
      let progress: DeliveryProgress;
      try {
        progress = await call<DeliveryProgress>("GET", `/api/v1/console/me/deliveries/${encodeURIComponent(id)}`);
      } catch {
        continue;
      }
      if (progress.status === "delivered") {
        this.show(index, generation, { label, text: "delivered", failed: false });
        this.app.announce(`${label} delivered`);
        return;
      }
      if (progress.status === "dead") {
        const why = progress.last_error ?? "the workflow endpoint refused it";
        this.show(index, generation, { label, text: `failed: ${why}`, failed: true });
        this.app.announce(`${label} failed`);
        return;
      }
      const retrying = progress.last_error ? `retrying after: ${progress.last_error}` : progress.status;
      this.show(index, generation, { label, text: retrying, failed: false });
    }
  }
}

let chartsModule: Promise<typeof import("./charts")> | null = null;

/** The chart library, loaded once (only by pages that chart). */
function loadCharts(): Promise<typeof import("./charts")> {
  chartsModule ??= import("./charts");
  return chartsModule;
}

/** A single number, and how it compares with a second column of the same row. */
function numberFigure(plan: NumberPlan, display: Display): HTMLElement {
  const compare = plan.compare;
  let comparison: HTMLElement | null = null;
  if (compare) {
    const sign = compare.difference > 0 ? "+" : compare.difference < 0 ? "−" : "±";
    const percent = compare.percent === null ? "" : ` (${sign}${formatNumber(Math.abs(compare.percent), { decimals: 1 })}%)`;
    comparison = h(
      "p",
      { class: compare.difference >= 0 ? "compare up" : "compare down" },
      `${sign}${formatNumber(Math.abs(compare.difference), display.format)}${percent} against `,
      isolated(compare.name),
      ` (${formatNumber(compare.value, display.format)})`,
    );
  }
  return h(
    "div",
    { class: "big-number", attrs: { role: "group", "aria-label": `${plan.name}: ${formatNumber(plan.value, display.format)}` } },
    h("span", { class: "value" }, formatNumber(plan.value, display.format)),
    h("span", { class: "name" }, isolated(plan.name)),
    comparison,
  );
}
