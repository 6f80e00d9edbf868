// Editing a dashboard (for those who manage dashboards): its name and access; its panels in
// order (title, a credential that needs no review picked by database and username, the query in
// the SQL editor with `${key}` inputs marked, the inputs), each with a test run that goes through
// every rule of a saved panel's run; their row actions (label, workflow, mappings from a column
// of the test run's result or typed, or prompted with a prompt). Panels, inputs, actions and
// mappings move up and down by keyboard (buttons), panels also by drag. Each panel's display
// (a chart, a number or the table) is chosen with a live preview from its test run; the layout
// map places the panels on the 12 columns; each input gets its type; the editors and viewers
// are named (dashboard-look.ts). A save sends If-Match, for the dashboard and for its
// presentation document: a change made meanwhile by someone else is shown as such and nothing is
// overwritten.

import { ApiError, call, fieldProblems, headers, problem, read, withEtag, type Dashboard, type Page, type QueryableDatabase } from "./api";
import type { DrawnChart } from "./charts";
import { accessEditor, displayEditor, initialLayouts, inputEditor, layoutMap, preview } from "./dashboard-look";
import type { Column } from "./ndjson";
import { emptyPresentation, pruned, type InputSpec, type Layout, type PanelLook, type Presentation } from "./presentation";
import type { App, Screen } from "./app";
import { field, h, isolated, replace, uid } from "./dom";
import { SqlEditor } from "./editor";
import { valueText } from "./grid";

export interface MappingDraft {
  workflow_input_key: string;
  column: string;
  prompt_user: boolean;
  prompt: string;
}

export interface ActionDraft {
  id?: string;
  label: string;
  workflow_id: string;
  input_mappings: MappingDraft[];
}

export interface PanelDraft {
  id?: string;
  title: string;
  credential_id: string;
  query: string;
  inputs: { key: string; description: string }[];
  actions: ActionDraft[];
}

export interface DashboardDraft {
  name: string;
  restricted_access: boolean;
  panels: PanelDraft[];
}

/** A stored dashboard as the editor holds it. */
export function draftOf(dashboard: Dashboard): DashboardDraft {
  return {
    name: dashboard.name,
    restricted_access: dashboard.restricted_access,
    panels: dashboard.panels.map((panel) => ({
      id: panel.id,
      title: panel.title,
      credential_id: panel.details.credential_id,
      query: panel.details.query,
      inputs: panel.inputs.map((input) => ({ ...input })),
      actions: panel.actions.map((action) => ({
        id: action.id,
        label: action.label ?? "",
        workflow_id: action.workflow_id ?? "",
        input_mappings: action.input_mappings.map((m) => ({
          workflow_input_key: m.workflow_input_key,
          column: m.column ?? "",
          prompt_user: m.prompt_user,
          prompt: m.prompt ?? "",
        })),
      })),
    })),
  };
}

/** The panel as the API takes it (ids kept only when `keepIds`). */
export function panelBody(panel: PanelDraft, keepIds = true): Record<string, unknown> {
  return {
    ...(keepIds && panel.id ? { id: panel.id } : {}),
    title: panel.title,
    inputs: panel.inputs.map((input) => ({ key: input.key, description: input.description })),
    actions: panel.actions.map((action) => ({
      ...(keepIds && action.id ? { id: action.id } : {}),
      label: action.label === "" ? null : action.label,
      workflow_id: action.workflow_id === "" ? null : action.workflow_id,
      input_mappings: action.input_mappings.map((m) =>
        m.prompt_user
          ? { workflow_input_key: m.workflow_input_key, prompt_user: true, prompt: m.prompt === "" ? null : m.prompt }
          : { workflow_input_key: m.workflow_input_key, column: m.column },
      ),
    })),
    details: { __type__: "query", query: panel.query, credential_id: panel.credential_id },
  };
}

/** The dashboard as the API takes it. */
export function dashboardBody(draft: DashboardDraft, keepIds = true): Record<string, unknown> {
  return {
    name: draft.name,
    restricted_access: draft.restricted_access,
    panels: draft.panels.map((panel) => panelBody(panel, keepIds)),
  };
}

/** `list` with the item at `from` moved to `to` (both kept within the list). */
export function moved<T>(list: T[], from: number, to: number): T[] {
  const next = [...list];
  if (from < 0 || from >= next.length) return next;
  const [item] = next.splice(from, 1);
  next.splice(Math.max(0, Math.min(to, next.length)), 0, item as T);
  return next;
}

/** The keys the query names as `${key}`, in order, once each (not the time range's own
 * `${__from}` and `${__to}`, which no panel declares). */
export function placeholders(query: string): string[] {
  const keys: string[] = [];
  for (const match of query.matchAll(/\$\{([A-Za-z0-9_.-]+)\}/g)) {
    const key = match[1] ?? "";
    if (key.startsWith("__")) continue;
    if (!keys.includes(key)) keys.push(key);
  }
  return keys;
}

/** A credential a panel may run as: one that needs no review, named by database and username. */
interface Choice {
  id: string;
  label: string;
}

interface StoredDatabase {
  id: string;
  name: string;
  credentials: { id: string; username: string; reviews_required: number }[];
}

/** The credentials the person may run a panel as: those needing no review of the databases they
 * may query (all of them for a key without a user). */
async function credentialChoices(app: App): Promise<Choice[]> {
  if (app.me?.user) {
    const page = await call<Page<QueryableDatabase>>("GET", "/api/v1/console/me/databases");
    const mine: Choice[] = [];
    for (const db of page.data) {
      for (const credential of db.credentials) {
        if (credential.reviews_required === 0) mine.push({ id: credential.id, label: `${db.name} — ${credential.username}` });
      }
    }
    return mine.sort((a, b) => a.label.localeCompare(b.label));
  }
  const choices: Choice[] = [];
  let after: string | null = null;
  do {
    const query: string = after ? `&after=${encodeURIComponent(after)}` : "";
    const page: Page<StoredDatabase> = await call<Page<StoredDatabase>>("GET", `/api/v1/console/databases?limit=500${query}`);
    for (const db of page.data) {
      for (const credential of db.credentials) {
        if (credential.reviews_required === 0) choices.push({ id: credential.id, label: `${db.name} — ${credential.username}` });
      }
    }
    after = page.next;
  } while (after && choices.length < 20_000);
  return choices.sort((a, b) => a.label.localeCompare(b.label));
}

function text(value: string, label: string, onInput: (value: string) => void, attrs: Record<string, string | boolean> = {}): HTMLElement {
  const input = h("input", { attrs: { type: "text", autocomplete: "off", ...attrs } });
  input.value = value;
  input.addEventListener("input", () => onInput(input.value));
  return field(label, input);
}

function check(checked: boolean, label: string, onChange: (value: boolean) => void): HTMLElement {
  const id = uid("check");
  const input = h("input", { attrs: { type: "checkbox", id } });
  input.checked = checked;
  input.addEventListener("change", () => onChange(input.checked));
  return h("div", { class: "check" }, input, h("label", { attrs: { for: id } }, label));
}

/** Move up, move down and remove buttons for item `index` of `count`, named after `what`. */
function itemTools(what: string, index: number, count: number, move: (to: number) => void, remove: () => void): HTMLElement {
  return h(
    "div",
    { class: "item-tools" },
    h("button", { attrs: { type: "button", disabled: index === 0, "aria-label": `Move ${what} up` }, on: { click: () => move(index - 1) } }, "↑"),
    h("button", { attrs: { type: "button", disabled: index === count - 1, "aria-label": `Move ${what} down` }, on: { click: () => move(index + 1) } }, "↓"),
    h("button", { class: "danger", attrs: { type: "button", "aria-label": `Remove ${what}` }, on: { click: remove } }, "Remove"),
  );
}

export async function dashboardEditor(app: App, id: string | null): Promise<Screen> {
  const [choices, stored, storedLook] = await Promise.all([
    credentialChoices(app),
    id ? withEtag<Dashboard>("GET", `/api/v1/dashboards/${encodeURIComponent(id)}`) : Promise.resolve(null),
    id ? withEtag<Presentation>("GET", `/api/v1/dashboards/${encodeURIComponent(id)}/presentation`) : Promise.resolve(null),
  ]);
  let etag = stored?.etag ?? "";
  let lookEtag = storedLook?.etag ?? "";
  let draft: DashboardDraft = stored ? draftOf(stored.value) : { name: "", restricted_access: false, panels: [] };
  const presentation: Presentation = { ...emptyPresentation(), ...(storedLook?.value ?? {}) };
  if (!storedLook && app.me?.user) presentation.editors = [{ kind: "user", name: app.me.user }];
  /** Each panel's display (and layout, below), by draft. */
  const looks = new Map<PanelDraft, PanelLook>(draft.panels.map((p) => [p, { ...(p.id ? presentation.panels[p.id] : undefined) }]));
  /** The places stored or set in the layout map; the other panels stack in their order. */
  const explicit = new Map<object, Layout>();
  for (const [panel, look] of looks) if (look.layout) explicit.set(panel, look.layout);
  const lookOf = (panel: PanelDraft): PanelLook => {
    let look = looks.get(panel);
    if (!look) {
      look = {};
      looks.set(panel, look);
    }
    return look;
  };
  const layoutOf = (panel: object): Layout =>
    explicit.get(panel) ?? initialLayouts(draft.panels, (p) => explicit.get(p)).get(panel) ?? { x: 0, y: 0, w: 12, h: 5 };
  const lookBox = h("div", { class: "edit-look" });
  const editors = new Map<PanelDraft, { editor: SqlEditor; host: HTMLElement }>();
  /** Each panel's test values, last test run's columns and rows, and its display's preview. */
  const tests = new Map<
    PanelDraft,
    { values: Record<string, string>; columns: string[]; full: Column[]; rows: unknown[][]; result: HTMLElement; preview: HTMLElement; chart: DrawnChart | null }
  >();
  /** Each panel's note of the inputs its query names and does not declare, kept up to date. */
  const notes = new Map<PanelDraft, HTMLElement>();
  const problems = h("div", { class: "error", attrs: { role: "alert" } });
  const panelsBox = h("div", { class: "edit-panels" });
  const saved = h("p", { class: "saved", attrs: { role: "status" } });
  let dragged: number | null = null;
  let dirty = false;
  const touched = () => {
    dirty = true;
    saved.textContent = "";
  };
  /** A change to the draft's shape: made, noted, and the panels drawn again. */
  const reshape =
    (change: () => void): (() => void) =>
    () => {
      change();
      touched();
      render();
    };

  function editorOf(panel: PanelDraft): HTMLElement {
    let entry = editors.get(panel);
    if (!entry) {
      const host = h("div", { class: "editor" });
      const editor = new SqlEditor(
        host,
        panel.query,
        () => void testRun(panel),
        (value) => {
          panel.query = value;
          noteMissing(panel);
          touched();
        },
        { label: `Query of panel ${panel.title || "(untitled)"}`, inputs: true },
      );
      entry = { editor, host };
      editors.set(panel, entry);
    }
    return entry.host;
  }

  function noteOf(panel: PanelDraft): HTMLElement {
    let note = notes.get(panel);
    if (!note) {
      note = h("p", { class: "notice", attrs: { role: "status" } });
      notes.set(panel, note);
    }
    return note;
  }

  function missingOf(panel: PanelDraft): string[] {
    return placeholders(panel.query).filter((key) => !panel.inputs.some((input) => input.key === key));
  }

  function noteMissing(panel: PanelDraft): void {
    const missing = missingOf(panel);
    const note = noteOf(panel);
    note.hidden = missing.length === 0;
    note.textContent = missing.length ? `The query names inputs the panel does not declare: ${missing.join(", ")}.` : "";
  }

  function testOf(panel: PanelDraft) {
    let entry = tests.get(panel);
    if (!entry) {
      entry = { values: {}, columns: [], full: [], rows: [], result: h("div", { class: "test-result" }), preview: h("div", { class: "display-preview", attrs: { hidden: true } }), chart: null };
      tests.set(panel, entry);
    }
    return entry;
  }

  async function testRun(panel: PanelDraft): Promise<void> {
    const test = testOf(panel);
    replace(test.result, h("p", { attrs: { role: "status" } }, "Running…"));
    try {
      const inputs: Record<string, string> = {};
      for (const input of panel.inputs) inputs[input.key] = test.values[input.key] ?? "";
      const response = await fetch("/api/v1/dashboards/test-run", {
        method: "POST",
        headers: headers(true),
        body: JSON.stringify({ panel: panelBody(panel, false), inputs, limit: 20 }),
        credentials: "same-origin",
        cache: "no-store",
      });
      const result = await read<{ columns: { name: string; type: string }[]; rows: unknown[][]; row_count: number; truncated: boolean; error?: { detail: string } }>(response);
      test.columns = result.columns.map((c) => c.name);
      test.full = result.columns;
      test.rows = result.rows;
      replace(
        test.result,
        h("p", { attrs: { role: "status" } }, `Test run: ${result.row_count} row(s)${result.truncated ? " (the first 20)" : ""}. Its columns can be chosen for the mappings.`),
        result.error && h("p", { class: "error" }, result.error.detail),
        h(
          "table",
          { class: "list test-rows" },
          h("caption", { class: "sr-only" }, "Test run result"),
          h("thead", {}, h("tr", {}, ...result.columns.map((c) => h("th", { attrs: { scope: "col" } }, isolated(c.name))))),
          h("tbody", {}, ...result.rows.map((row) => h("tr", {}, ...row.map((value) => h("td", {}, value === null ? h("span", { class: "null" }, "NULL") : isolated(valueText(value) ?? "")))))),
        ),
      );
      render();
      await refreshPreview(panel);
    } catch (error) {
      const detail = error instanceof ApiError ? fieldProblems(error.body) : [];
      replace(test.result, h("p", { class: "error", attrs: { role: "alert" } }, detail.length ? detail.join("\n") : problem(error)));
    }
  }

  /** Draws the panel's display from its last test run (the chart library loads only then). */
  async function refreshPreview(panel: PanelDraft): Promise<void> {
    const test = testOf(panel);
    test.chart = await preview(test.preview, lookOf(panel), panel.title, test.full, test.rows, test.chart);
  }

  function mappingRow(panel: PanelDraft, action: ActionDraft, mapping: MappingDraft, index: number): HTMLElement {
    const columns = testOf(panel).columns;
    const listId = uid("columns");
    const columnField = text(mapping.column, "Column of the clicked row", (v) => ((mapping.column = v), touched()), { list: listId });
    return h(
      "li",
      { class: "mapping" },
      text(mapping.workflow_input_key, "Workflow input key", (v) => ((mapping.workflow_input_key = v), touched())),
      check(mapping.prompt_user, "Ask the user", (v) => {
        mapping.prompt_user = v;
        touched();
        render();
      }),
      mapping.prompt_user
        ? text(mapping.prompt, "Prompt (blank: the key)", (v) => ((mapping.prompt = v), touched()))
        : h("div", {}, columnField, h("datalist", { attrs: { id: listId } }, ...columns.map((c) => h("option", { attrs: { value: c } })))),
      itemTools(
        `mapping ${index + 1}`,
        index,
        action.input_mappings.length,
        (to) => reshape(() => { action.input_mappings = moved(action.input_mappings, index, to); })(),
        reshape(() => { action.input_mappings.splice(index, 1); }),
      ),
    );
  }

  function actionBox(panel: PanelDraft, action: ActionDraft, index: number): HTMLElement {
    const name = action.label || action.workflow_id || `${index + 1}`;
    return h(
      "fieldset",
      { class: "edit-action" },
      h("legend", {}, "Action ", isolated(name)),
      h(
        "div",
        { class: "row" },
        text(action.label, "Button label", (v) => ((action.label = v), touched())),
        text(action.workflow_id, "Workflow id", (v) => ((action.workflow_id = v), touched())),
        itemTools(
          `action ${index + 1}`,
          index,
          panel.actions.length,
          (to) => reshape(() => { panel.actions = moved(panel.actions, index, to); })(),
          reshape(() => { panel.actions.splice(index, 1); }),
        ),
      ),
      h("ol", { class: "mappings" }, ...action.input_mappings.map((m, i) => mappingRow(panel, action, m, i))),
      h(
        "button",
        {
          attrs: { type: "button" },
          on: {
            click: reshape(() => { action.input_mappings.push({ workflow_input_key: "", column: "", prompt_user: false, prompt: "" }); }),
          },
        },
        "Add a mapping",
      ),
    );
  }

  function panelBox(panel: PanelDraft, index: number): HTMLElement {
    const count = draft.panels.length;
    const credential = h("select", { attrs: { required: true } }, h("option", { attrs: { value: "" } }, "Choose a credential…"));
    for (const choice of choices) credential.append(h("option", { attrs: { value: choice.id } }, choice.label));
    if (panel.credential_id && !choices.some((c) => c.id === panel.credential_id)) {
      credential.append(h("option", { attrs: { value: panel.credential_id } }, `${panel.credential_id} (not a credential without reviews)`));
    }
    credential.value = panel.credential_id;
    credential.addEventListener("change", () => {
      panel.credential_id = credential.value;
      touched();
    });
    const test = testOf(panel);
    noteMissing(panel);
    const titleId = uid("edit-panel");
    const section = h(
      "section",
      { class: "edit-panel", attrs: { "aria-labelledby": titleId, draggable: "true" } },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { attrs: { id: titleId } }, `Panel ${index + 1}: `, isolated(panel.title || "(untitled)")),
        itemTools(
          `panel ${index + 1}`,
          index,
          count,
          (to) => reshape(() => { draft.panels = moved(draft.panels, index, to); })(),
          reshape(() => {
            draft.panels.splice(index, 1);
            editors.get(panel)?.editor.view.destroy();
            editors.delete(panel);
          }),
        ),
      ),
      h(
        "div",
        { class: "row" },
        text(panel.title, "Title", (v) => ((panel.title = v), touched()), { required: true }),
        field("Runs as", credential, "Credentials that need no review, by database and username"),
      ),
      h("div", { class: "field" }, h("span", { class: "label" }, "Query (inputs as ${key})"), editorOf(panel)),
      noteOf(panel),
      h("h3", {}, "Inputs"),
      h(
        "ol",
        { class: "inputs" },
        ...panel.inputs.map((input, i) =>
          h(
            "li",
            { class: "row" },
            text(input.key, "Key", (v) => ((input.key = v), touched())),
            text(input.description, "Description", (v) => ((input.description = v), touched())),
            text(test.values[input.key] ?? "", "Test value", (v) => (test.values[input.key] = v)),
            itemTools(
              `input ${i + 1}`,
              i,
              panel.inputs.length,
              (to) => reshape(() => { panel.inputs = moved(panel.inputs, i, to); })(),
              reshape(() => { panel.inputs.splice(i, 1); }),
            ),
          ),
        ),
      ),
      h(
        "div",
        { class: "row" },
        h(
          "button",
          {
            attrs: { type: "button" },
            on: {
              click: reshape(() => { panel.inputs.push({ key: missingOf(panel)[0] ?? "", description: "" }); }),
            },
          },
          "Add an input",
        ),
        h("button", { attrs: { type: "button" }, on: { click: () => void testRun(panel) } }, "Test run"),
      ),
      test.result,
      h("h3", {}, "Display"),
      displayEditor(lookOf(panel), test.columns, () => {
        touched();
        void refreshPreview(panel);
      }),
      test.preview,
      h("h3", {}, "Row actions"),
      ...panel.actions.map((action, i) => actionBox(panel, action, i)),
      h(
        "button",
        {
          attrs: { type: "button" },
          on: {
            click: reshape(() => { panel.actions.push({ label: "", workflow_id: "", input_mappings: [] }); }),
          },
        },
        "Add a row action",
      ),
    );
    section.addEventListener("dragstart", (event) => {
      if (!(event.target instanceof HTMLElement) || !event.target.classList.contains("edit-panel")) return;
      dragged = index;
      event.dataTransfer?.setData("text/plain", String(index));
    });
    section.addEventListener("dragover", (event) => {
      if (dragged !== null) event.preventDefault();
    });
    section.addEventListener("drop", (event) => {
      event.preventDefault();
      if (dragged === null || dragged === index) return;
      draft.panels = moved(draft.panels, dragged, index);
      dragged = null;
      touched();
      render();
    });
    return section;
  }

  function render(): void {
    replace(panelsBox, ...draft.panels.map((panel, index) => panelBox(panel, index)));
    renderLook();
  }

  /** The layout map, the inputs' types, the time range and who edits and views. */
  function renderLook(): void {
    const keys: { key: string; description: string }[] = [];
    for (const panel of draft.panels) for (const input of panel.inputs) if (input.key && !keys.some((k) => k.key === input.key)) keys.push(input);
    replace(
      lookBox,
      h("h2", {}, "Layout"),
      draft.panels.length === 0
        ? h("p", { class: "hint" }, "Add a panel to place it.")
        : layoutMap(
            draft.panels.map((panel) => ({ key: panel, title: panel.title })),
            layoutOf,
            (panel, layout) => {
              explicit.set(panel, layout);
              touched();
            },
          ),
      h("h2", {}, "Inputs"),
      keys.length === 0
        ? h("p", { class: "hint" }, "No panel declares an input. A panel binds the time range as ${__from} and ${__to} without declaring it.")
        : h(
            "div",
            {},
            ...keys.map(({ key }) =>
              inputEditor(key, presentation.inputs[key], choices, (spec: InputSpec | undefined) => {
                if (spec) presentation.inputs[key] = spec;
                else delete presentation.inputs[key];
                touched();
              }),
            ),
          ),
      h("h2", {}, "Time range and access"),
      accessEditor(presentation, touched),
    );
  }

  /** Saves the presentation document of dashboard `dashboardId`, whose panels are `saved`. */
  async function saveLook(dashboardId: string, saved: Dashboard): Promise<void> {
    const panels: Record<string, PanelLook> = {};
    saved.panels.forEach((panel, i) => {
      const draftPanel = draft.panels[i];
      if (!draftPanel) return;
      const look = lookOf(draftPanel);
      const layout = explicit.get(draftPanel);
      panels[panel.id] = { ...(look.display ? { display: look.display } : {}), ...(layout ? { layout } : {}) };
    });
    const keys = saved.panels.flatMap((p) => p.inputs.map((i) => i.key));
    const body = pruned({ ...presentation, panels }, Object.keys(panels), keys);
    const answer = await withEtag<Presentation>("PUT", `/api/v1/dashboards/${encodeURIComponent(dashboardId)}/presentation`, body, lookEtag || undefined);
    lookEtag = answer.etag;
  }

  async function save(): Promise<void> {
    replace(problems);
    saved.textContent = "Saving…";
    try {
      const body = dashboardBody(draft);
      if (stored && id) {
        const answer = await withEtag<Dashboard>("PUT", `/api/v1/dashboards/${encodeURIComponent(id)}`, body, etag);
        etag = answer.etag;
        await saveLook(id, answer.value);
        const next = draftOf(answer.value);
        // Keep the editors and test runs of the panels: the saved draft has the ids now.
        next.panels.forEach((panel, i) => {
          const old = draft.panels[i];
          if (!old) return;
          Object.assign(old, panel);
        });
        draft = { ...next, panels: draft.panels.slice(0, next.panels.length) };
        dirty = false;
        saved.textContent = "Saved.";
        render();
      } else {
        const created = await call<Dashboard>("POST", "/api/v1/dashboards", body);
        const made = await withEtag<Presentation>("GET", `/api/v1/dashboards/${encodeURIComponent(created.id)}/presentation`);
        lookEtag = made.etag;
        await saveLook(created.id, created);
        dirty = false;
        await app.go(`dashboards/${encodeURIComponent(created.id)}`);
      }
    } catch (error) {
      saved.textContent = "";
      const detail = error instanceof ApiError && error.status === 422 ? fieldProblems(error.body) : [];
      replace(
        problems,
        h("p", {}, error instanceof ApiError && error.status === 412 ? `Nothing was saved. ${problem(error)}` : `Nothing was saved: ${problem(error)}`),
        detail.length > 0 && h("ul", {}, ...detail.map((line) => h("li", {}, line))),
      );
      problems.focus();
    }
  }

  const nameField = text(draft.name, "Name", (v) => ((draft.name = v), touched()), { required: true });
  const element = h(
    "section",
    { class: "dashboard-editor" },
    h("h1", {}, stored ? "Edit dashboard" : "New dashboard"),
    problems,
    h(
      "div",
      { class: "row" },
      nameField,
      check(draft.restricted_access, "Restricted: only super admins, its editors and viewers, and those who may query every panel's database see it", (v) => {
        draft.restricted_access = v;
        touched();
      }),
    ),
    panelsBox,
    h(
      "div",
      { class: "row" },
      h(
        "button",
        {
          attrs: { type: "button" },
          on: {
            click: reshape(() => { draft.panels.push({ title: "", credential_id: "", query: "", inputs: [], actions: [] }); }),
          },
        },
        "Add a panel",
      ),
    ),
    lookBox,
    h(
      "div",
      { class: "row save-row" },
      h("button", { class: "primary", attrs: { type: "button" }, on: { click: () => void save() } }, "Save"),
      stored && id ? app.link(`dashboards/${encodeURIComponent(id)}`, "Back to the dashboard") : app.link("dashboards", "Back to the dashboards"),
      saved,
    ),
  );
  problems.tabIndex = -1;
  render();
  return {
    title: stored ? `Edit ${stored.value.name}` : "New dashboard",
    element,
    busy: () => (dirty ? "Your changes to this dashboard are not saved. Leave without saving them?" : false),
    leave: () => {
      for (const { editor } of editors.values()) editor.view.destroy();
    },
  };
}
