// Dashboards: the list of those the caller may see, and a page per dashboard with its panels in
// order. A panel without inputs runs when the page opens; one with inputs runs on an explicit
// Run (its values live in the page's URL, so a shared URL with every input filled runs on open).
// Rows stream into the console's grid with one button per shown row action; a button whose
// action prompts opens a modal with one field per prompted input; a start shows the workflow
// run's progress on the row. A row's token (the server's proof that the panel returned it) stays
// in this page's memory: never in the URL or browser storage.

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
import { dashboardBody, draftOf } from "./dashboard-editor";
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

/** The URL parameter that holds an input's value: `in.<panel id>.<key>`. */
function inputParam(panel: Panel, key: string): string {
  return `in.${panel.id}.${key}`;
}

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
    app.me?.may.manage_dashboards && h("p", {}, app.link("dashboards/new", "New dashboard")),
    all.length === 0
      ? h("p", {}, "No dashboard to show: none exists yet, or the restricted ones query databases you may not query.")
      : table("Dashboards you may see", ["Name", "Panels", "Access"], rows),
  );
  return { title: "Dashboards", element };
}

export async function dashboardScreen(app: App, id: string): Promise<Screen> {
  let dashboard: Dashboard;
  try {
    dashboard = await call<Dashboard>("GET", `${DASHBOARDS}/${encodeURIComponent(id)}`);
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
  const views = dashboard.panels.map((panel) => new PanelView(app, dashboard, panel, params));
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
      app.me?.may.manage_dashboards && editorTools(app, dashboard),
    ),
    dashboard.panels.length === 0 && h("p", {}, "This dashboard has no panels yet."),
    ...views.map((view) => view.element),
  );
  // The panels' runs start now, side by side; their grids join the page on the next frame.
  for (const view of views) if (view.ready()) void view.run();
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

/** One panel on the page: its inputs, its result, its row actions. */
class PanelView {
  readonly element: HTMLElement;
  running: AbortController | null = null;
  private readonly grid: Grid;
  private readonly actions: Action[];
  private readonly fields = new Map<string, HTMLInputElement>();
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
    params: URLSearchParams,
  ) {
    this.actions = shownActions(panel.actions);
    this.grid = new Grid(
      `Result of ${panel.title}`,
      this.actions.length > 0 ? { label: "Actions", render: (index) => this.rowControls(index) } : undefined,
    );
    const titleId = uid("panel");
    const inputs =
      panel.inputs.length > 0
        ? h(
            "form",
            {
              class: "panel-inputs",
              on: {
                submit: (event) => {
                  event.preventDefault();
                  this.keepInputs();
                  void this.run();
                },
              },
            },
            ...panel.inputs.map((input) => {
              const control = h("input", { attrs: { type: "text", name: input.key, autocomplete: "off" } });
              control.value = params.get(inputParam(panel, input.key)) ?? "";
              this.fields.set(input.key, control);
              return field(input.key, control, input.description || undefined);
            }),
            h("button", { attrs: { type: "submit" } }, "Run"),
          )
        : null;
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
          this.lastRun,
          h("button", { attrs: { type: "button" }, on: { click: () => void this.run() } }, "Refresh"),
          h("button", { attrs: { type: "button" }, on: { click: () => void this.copy() } }, "Copy"),
          h("button", { attrs: { type: "button", title: "Run the panel and download its rows as a CSV file" }, on: { click: () => void this.csv() } }, "Run to CSV"),
        ),
      ),
      inputs,
      this.disabledNote,
      this.error,
      h("div", { class: "result-head" }, this.summary, this.notice),
      this.grid.element,
    );
  }

  mount(): void {
    this.grid.mount();
  }

  destroy(): void {
    this.destroyed = true;
    this.running?.abort();
    this.grid.destroy();
  }

  /** Whether every input has a value (a panel without inputs always has). */
  ready(): boolean {
    return [...this.fields.values()].every((control) => control.value !== "");
  }

  /** Puts the inputs' values into the page's URL, so that it can be shared and reloaded. */
  private keepInputs(): void {
    const next = new URLSearchParams(location.search);
    for (const [key, control] of this.fields) next.set(inputParam(this.panel, key), control.value);
    history.replaceState(null, "", `${location.pathname}?${next.toString()}`);
  }

  private path(): string {
    return `${DASHBOARDS}/${encodeURIComponent(this.dashboard.id)}/panels/${encodeURIComponent(this.panel.id)}`;
  }

  async run(): Promise<void> {
    if (!this.ready()) {
      this.error.textContent = "Fill in every input, then Run.";
      return;
    }
    this.running?.abort();
    const controller = new AbortController();
    this.running = controller;
    this.generation += 1;
    this.progress.clear();
    this.tokens = [];
    this.columns = [];
    this.error.textContent = "";
    this.notice.hidden = true;
    this.summary.textContent = "Running…";
    this.grid.reset([]);
    this.element.setAttribute("aria-busy", "true");
    const started = performance.now();
    try {
      const inputs: Record<string, string> = {};
      for (const [key, control] of this.fields) inputs[key] = control.value;
      const body: Record<string, unknown> = { inputs };
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
    } catch (e) {
      if (controller.signal.aborted) return;
      this.summary.textContent = "";
      const message = e instanceof Error ? e.message : String(e);
      this.error.textContent = e instanceof ApiError && e.status === 403 ? `No access: ${message}` : message;
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
      this.error.textContent = "Fill in every input, then Run to CSV.";
      return;
    }
    this.keepInputs();
    try {
      const inputs: Record<string, string> = {};
      for (const [key, control] of this.fields) inputs[key] = control.value;
      const { url } = await call<{ url: string }>("POST", `${this.path()}/download`, { inputs });
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
