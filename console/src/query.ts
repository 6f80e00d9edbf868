// The query console: pick a database (search, group shown, pinned first) and a credential,
// write SQL, run the selection or the statement under the cursor (Mod-Enter), watch rows stream
// into the grid, cancel (the server cancels the statement on the database when the request goes
// away), or, for a credential that needs reviews, request one.

import { ApiError, call, headers, type Page, type Query, type QueryableDatabase } from "./api";
import { loadDraft, saveDraft, type App, type Screen } from "./app";
import { field, h, isolated, replace, uid } from "./dom";
import { SqlEditor, completionOf, type Table } from "./editor";
import { Grid, streamInto } from "./grid";
import { fileName, toCsv, toJson } from "./grid-model";
import { planOf, planTree } from "./plan";
import { outcomeText } from "./ndjson";
import { icon } from "./icons";
import { formatSql } from "./format";
import { saveDialog } from "./saved";
import { MAX_TABS, TabBar, loadTabs, newTab, saveTabs, type Tab } from "./tabs";
import { shortcutsDialog } from "./shortcuts";
import { SchemaTree, previewStatement } from "./schema-tree";
import { runnableSpan } from "./statement";

const PINS = "dbconsole.pins.";

function pins(user: string): Set<string> {
  try {
    return new Set(JSON.parse(localStorage.getItem(PINS + user) ?? "[]") as string[]);
  } catch {
    return new Set();
  }
}

function savePins(user: string, ids: Set<string>): void {
  try {
    localStorage.setItem(PINS + user, JSON.stringify([...ids]));
  } catch {
    // A convenience only.
  }
}

/** Databases matching `search` (name or group), pinned first, then by group and name. */
export function pickable(databases: QueryableDatabase[], search: string, pinned: Set<string>): QueryableDatabase[] {
  const needle = search.trim().toLowerCase();
  return databases
    .filter((db) => !needle || db.name.toLowerCase().includes(needle) || (db.group ?? "").toLowerCase().includes(needle))
    .sort((a, b) => {
      const pin = Number(pinned.has(b.id)) - Number(pinned.has(a.id));
      if (pin !== 0) return pin;
      return (a.group ?? "").localeCompare(b.group ?? "") || a.name.localeCompare(b.name);
    });
}

/** The row limit `user` chose last (kept in this browser until sign-out, as drafts are). */
export function keptLimit(user: string): number {
  try {
    const kept = Number(localStorage.getItem(`dbconsole.limit.${user}`));
    return Number.isInteger(kept) && kept >= 1 && kept <= 100000 ? kept : 1000;
  } catch {
    return 1000;
  }
}

function keepLimit(user: string, value: string): void {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100000) return;
  try {
    localStorage.setItem(`dbconsole.limit.${user}`, String(limit));
  } catch {
    // Storage full or refused: the limit is a convenience.
  }
}

export async function queryScreen(app: App): Promise<Screen> {
  const me = app.me;
  const handoff = app.handoff;
  app.handoff = null;
  const handed = handoff?.load ?? handoff?.run;
  const preset = handed ? await call<Query>("GET", `/api/v1/console/queries/${encodeURIComponent(handed)}`) : null;
  const user = me?.user ?? "";
  const databases = (await call<Page<QueryableDatabase>>("GET", "/api/v1/console/me/databases")).data;
  const pinned = pins(user);
  let database: QueryableDatabase | null = null;
  let running: AbortController | null = null;
  let timer = 0;

  const search = h("input", { attrs: { type: "search", autocomplete: "off" } });
  const list = h("ul", { class: "databases", attrs: { "aria-label": "Databases" } });
  const credential = h("select", {});
  const limit = h("input", { attrs: { type: "number", min: 1, max: 100000, value: keptLimit(user), inputmode: "numeric" } });
  limit.addEventListener("input", () => keepLimit(user, limit.value));
  const timeoutField = h("input", { attrs: { type: "number", min: 1, max: 86400, inputmode: "numeric", placeholder: "credential's" } });
  const runButton = h("button", { class: "primary", attrs: { type: "button" } }, "Run");
  const csvButton = h("button", { attrs: { type: "button", title: "Run once and download every row (up to the row limit) as a CSV file" } }, "Run to CSV");
  const cancelButton = h("button", { attrs: { type: "button", hidden: true } }, "Cancel");
  const saveButton = h("button", { attrs: { type: "button", title: "Save the statement under a name, to run again and share" } }, "Save…");
  const formatButton = h("button", { attrs: { type: "button", title: "Format the selection, or the whole text (Shift-Alt-F)" } }, "Format");
  formatButton.addEventListener("click", () => void formatNow());
  const shortcuts = shortcutsDialog();
  const shortcutsButton = h("button", { attrs: { type: "button", "aria-label": "Keyboard shortcuts", title: "Keyboard shortcuts (?)" } }, "?");
  shortcutsButton.addEventListener("click", () => shortcuts.showModal());
  // "?" anywhere but where it is typed opens the list.
  const onKey = (event: KeyboardEvent) => {
    const target = event.target as HTMLElement | null;
    const typing = target?.closest("input, textarea, select, [contenteditable=true], .cm-editor") !== null;
    if (event.key === "?" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      shortcuts.showModal();
    }
  };
  document.addEventListener("keydown", onKey);
  const elapsed = h("span", { class: "elapsed", attrs: { "aria-live": "off" } });
  // A request for review says what it is for and why: its reviewers read that first.
  const titleField = h("input", { attrs: { type: "text", maxlength: 200, autocomplete: "off" } });
  const descriptionField = h("textarea", { attrs: { rows: 2, maxlength: 10000 } });
  const request = h(
    "div",
    { class: "review-request", attrs: { hidden: true, role: "group", "aria-label": "Review request" } },
    field("Title", titleField, "What the query is for, in a line"),
    field("Description", descriptionField, "Why it should run: the reviewers read it first"),
  );
  const summary = h("p", { class: "summary", attrs: { role: "status" } });
  // "Download" saves the rows shown (filtered and sorted as they are), with no second run.
  const downloadFormat = h(
    "select",
    { attrs: { "aria-label": "Download as" } },
    h("option", { attrs: { value: "csv" } }, "CSV"),
    h("option", { attrs: { value: "safe" } }, "CSV for spreadsheets"),
    h("option", { attrs: { value: "json" } }, "JSON"),
  );
  const downloadButton = h("button", { attrs: { type: "button", title: "Save the rows shown, as they are shown: no second run" } }, "Download");
  const downloads = h("span", { class: "downloads", attrs: { hidden: true } }, downloadFormat, downloadButton);
  // EXPLAIN (FORMAT JSON): the plan as a collapsible tree above the grid.
  const plan = h("section", { class: "plan", attrs: { hidden: true, "aria-label": "Query plan" } });
  /** The title of the shown result's query (its file's name). */
  let shownTitle = "query";
  downloadButton.addEventListener("click", () => {
    const columns = grid.resultColumns;
    const rows = grid.shownRows();
    const kind = downloadFormat.value;
    const text = kind === "json" ? toJson(columns, rows) : toCsv(columns, rows, kind === "safe");
    const blob = new Blob([text], { type: kind === "json" ? "application/json" : "text/csv;charset=utf-8" });
    const url = URL.createObjectURL(blob);
    const link = h("a", { attrs: { href: url, download: fileName(shownTitle, new Date(), kind === "json" ? "json" : "csv"), hidden: true } });
    document.body.append(link);
    link.click();
    link.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
    app.announce(`Downloaded ${rows.length} rows`);
  });
  const notice = h("p", { class: "notice", attrs: { hidden: true } });
  const error = h("div", { class: "error", attrs: { role: "alert" } });
  const editorHost = h("div", { class: "editor", attrs: { id: uid("editor") } });
  // The tabs: each its statement, database and credential, kept in this browser per user.
  const kept = loadTabs(user);
  let tabTimer = 0;
  // Kept at each change, as drafts are; the bar's labels follow a moment later.
  const keepTabs = () => {
    saveTabs(user, kept);
    window.clearTimeout(tabTimer);
    tabTimer = window.setTimeout(() => tabBar.draw(kept.tabs, kept.active), 300);
  };
  const tabBar = new TabBar(
    {
      select: (index) => switchTab(index),
      close: (index) => {
        if (kept.tabs.length < 2) return;
        kept.tabs.splice(index, 1);
        kept.active = Math.min(kept.active > index ? kept.active - 1 : kept.active, kept.tabs.length - 1);
        showTab();
      },
      add: () => openTab(newTab(database?.id ?? null)),
    },
    editorHost.id,
  );
  function switchTab(index: number): void {
    if (index === kept.active || !kept.tabs[index]) return;
    kept.active = index;
    showTab();
  }
  /** Shows the active tab: its database, credential and statement. */
  function showTab(): void {
    const tab = kept.tabs[kept.active];
    if (!tab) return;
    const db = databases.find((d) => d.id === tab.database_id) ?? database ?? databases[0];
    if (db) choose(db, tab.text, tab.credential_id ?? undefined);
    saveTabs(user, kept);
    tabBar.draw(kept.tabs, kept.active);
  }
  function openTab(tab: Tab): void {
    kept.tabs.push(tab);
    if (kept.tabs.length > MAX_TABS) kept.tabs.shift();
    kept.active = kept.tabs.length - 1;
    showTab();
  }
  const grid = new Grid("Result");
  const heading = h("h1", {}, "Query");

  const editor = new SqlEditor(
    editorHost,
    "",
    () => void run(),
    (text) => {
      if (database) saveDraft(user, database.id, text);
      const tab = kept.tabs[kept.active];
      if (tab) {
        tab.text = text;
        keepTabs();
      }
    },
    { onFormat: () => void formatNow() },
  );

  /** Formats the selection, or the whole text (sql-formatter, loaded the first time). */
  async function formatNow(): Promise<void> {
    if (!database) return;
    const { from, to } = editor.selection;
    const [start, end] = from === to ? [0, editor.text.length] : [from, to];
    try {
      const formatted = await formatSql(editor.text.slice(start, end), database.adapter);
      editor.replaceRange(start, end, formatted);
      app.announce("Formatted");
    } catch (e) {
      error.textContent = `It could not be formatted: ${e instanceof Error ? e.message : String(e)}`;
    }
  }

  /** The statement of the last run: where it starts in the editor, and its text. */
  let lastRun: { from: number; text: string } | null = null;
  /** Marks in the editor where the database said the error is ("at character N"). */
  function markError(message: string): void {
    const at = /\(at character (\d+)\)/.exec(message);
    if (!at || !lastRun || editor.text.slice(lastRun.from, lastRun.from + lastRun.text.length) !== lastRun.text) return;
    const lead = lastRun.text.length - lastRun.text.trimStart().length;
    const { line, column } = editor.markAt(lastRun.from + lead + Number(at[1]) - 1);
    error.append(h("span", { class: "position" }, ` — line ${line}, column ${column} (marked in the editor)`));
  }

  const schemas = new Map<string, Promise<{ tables: Table[]; unavailable?: string }>>();
  const tree = new SchemaTree();
  /** The tables the editor completes and the schema browser lists, read as a credential that
   * needs no review (a reviewed credential's catalog is not read without one). */
  async function loadSchema(db: QueryableDatabase): Promise<void> {
    const chosen = db.credentials.find((c) => c.id === credential.value);
    const reader = chosen && chosen.reviews_required === 0 ? chosen : db.credentials.find((c) => c.reviews_required === 0);
    const insert = (text: string) => editor.insert(text);
    if (!reader) {
      tree.show([], db.adapter, { insert }, "Tables are read as a credential that needs no review, and this database has none.");
      return;
    }
    const key = `${db.id}/${reader.id}`;
    let tables = schemas.get(key);
    if (!tables) {
      const path = `/api/v1/console/me/databases/${encodeURIComponent(db.id)}/schema?credential_id=${encodeURIComponent(reader.id)}`;
      tables = call<{ tables: Table[]; unavailable?: string }>("GET", path).catch((e: unknown) => ({
        tables: [],
        unavailable: e instanceof ApiError ? e.message : String(e),
      }));
      schemas.set(key, tables);
    }
    const loaded = await tables;
    if (database?.id !== db.id) return;
    editor.configure(db.adapter, completionOf(db.adapter, loaded.tables));
    const why = loaded.unavailable ? `The tables could not be read: ${loaded.unavailable}` : loaded.tables.length === 0 ? "No table." : "";
    tree.show(loaded.tables, db.adapter, { insert, preview: (table) => void preview(db, reader.id, table) }, why);
  }

  /** The first 100 rows of `table`: a query stored and run like any other (in the history,
   * audited), as the credential the tables were read as. */
  async function preview(db: QueryableDatabase, credentialId: string, table: Table): Promise<void> {
    if (running) return;
    error.textContent = "";
    try {
      const query = await call<Query>("POST", "/api/v1/console/queries", {
        database_id: db.id,
        credential_id: credentialId,
        query: previewStatement(db.adapter, table),
        limit: 100,
      });
      shownTitle = `${table.table} preview`;
      await stream(query.id);
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
  }

  const selectedCredential = () => database?.credentials.find((c) => c.id === credential.value) ?? null;

  function drawRunButton(): void {
    const needsReview = (selectedCredential()?.reviews_required ?? 0) > 0;
    runButton.textContent = needsReview ? "Request review" : "Run";
    runButton.title = needsReview
      ? `This credential needs ${selectedCredential()?.reviews_required} approval(s) before a query runs (Mod-Enter)`
      : "Run the selection, or the statement under the cursor (Mod-Enter)";
    runButton.disabled = !database || running !== null;
    csvButton.hidden = needsReview;
    csvButton.disabled = runButton.disabled;
    saveButton.disabled = !database;
    request.hidden = !needsReview;
  }

  function choose(db: QueryableDatabase, text?: string, credentialId?: string): void {
    database = db;
    const tab = kept.tabs[kept.active];
    if (tab) {
      tab.database_id = db.id;
      // Another database keeps the tab's statement (to run it there); an empty tab takes the
      // database's draft.
      if (text === undefined && tab.text) text = tab.text;
    }
    replace(heading, "Query ", isolated(db.name));
    replace(
      credential,
      ...db.credentials.map((c) =>
        h(
          "option",
          { attrs: { value: c.id, selected: credentialId ? c.id === credentialId : c.default_credential } },
          c.reviews_required > 0 ? `${c.username} (${c.reviews_required} review(s) required)` : c.username,
        ),
      ),
    );
    editor.configure(db.adapter);
    void loadSchema(db);
    editor.text = text ?? loadDraft(user, db.id) ?? "";
    drawList();
    drawRunButton();
  }

  function drawList(): void {
    const shown = pickable(databases, search.value, pinned);
    replace(
      list,
      ...shown.map((db) => {
        const isPinned = pinned.has(db.id);
        return h(
          "li",
          { class: db.id === database?.id ? "current" : "" },
          h(
            "button",
            {
              class: "pick",
              attrs: { type: "button", "aria-pressed": db.id === database?.id ? "true" : "false" },
              on: { click: () => choose(db) },
            },
            isolated(db.name, { class: "name" }),
            h("span", { class: "meta" }, db.group ? isolated(db.group, { class: "group" }) : "", ` ${db.adapter}`),
          ),
          h(
            "button",
            {
              class: "pin",
              attrs: { type: "button", "aria-pressed": isPinned ? "true" : "false", "aria-label": `Pin ${db.name}`, title: isPinned ? "Unpin" : "Pin to the top" },
              on: {
                click: () => {
                  if (isPinned) pinned.delete(db.id);
                  else pinned.add(db.id);
                  savePins(user, pinned);
                  drawList();
                },
              },
            },
            icon("star", !isPinned),
          ),
        );
      }),
    );
    if (shown.length === 0) list.append(h("li", { class: "empty" }, databases.length ? "No database matches." : "No database you may query."));
  }

  function finish(): void {
    running = null;
    window.clearInterval(timer);
    elapsed.textContent = "";
    cancelButton.hidden = true;
    drawRunButton();
    window.removeEventListener("beforeunload", guard);
  }

  function guard(event: BeforeUnloadEvent): void {
    event.preventDefault();
  }

  async function run(to: "grid" | "csv" = "grid"): Promise<void> {
    if (!database || running) return;
    const span = runnableSpan(editor.text, editor.selection);
    error.textContent = "";
    notice.hidden = true;
    if (!span) {
      error.textContent = "Write a statement first.";
      return;
    }
    const text = editor.text.slice(span.from, span.to);
    lastRun = { from: span.from, text };
    const rowLimit = Number(limit.value);
    if (timeoutField.value && !(Number.isInteger(Number(timeoutField.value)) && Number(timeoutField.value) >= 1)) {
      error.textContent = "The timeout is a whole number of seconds from 1.";
      timeoutField.focus();
      return;
    }
    if (!Number.isInteger(rowLimit) || rowLimit < 1) {
      error.textContent = "The row limit is a whole number from 1.";
      limit.focus();
      return;
    }
    const needsReview = (selectedCredential()?.reviews_required ?? 0) > 0;
    if (needsReview) {
      for (const [input, what] of [
        [titleField, "A review request needs a title: what the query is for."],
        [descriptionField, "A review request needs a description: why it should run."],
      ] as const) {
        if (!input.value.trim()) {
          error.textContent = what;
          input.focus();
          return;
        }
      }
    }
    let query: Query;
    try {
      query = await call<Query>("POST", "/api/v1/console/queries", {
        database_id: database.id,
        credential_id: credential.value,
        query: text,
        limit: rowLimit,
        ...(needsReview ? { title: titleField.value.trim(), description: descriptionField.value.trim() } : {}),
      });
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.message : String(e);
      return;
    }
    if (query.status === "awaiting_review") {
      titleField.value = "";
      descriptionField.value = "";
      summary.replaceChildren("Review requested: the query waits for approvals. ", app.link(`queries/${query.id}`, "Open the query"));
      return;
    }
    shownTitle = query.title;
    if (to === "csv") await download(query.id);
    else await stream(query.id);
  }

  /** The query's one run as a CSV file: the server answers a one-time URL, the browser saves
   * what it streams (no rows pass through the page). */
  async function download(id: string): Promise<void> {
    try {
      const { url } = await call<{ url: string }>("POST", `/api/v1/console/queries/${encodeURIComponent(id)}/download`);
      const link = h("a", { attrs: { href: url, download: `${id}.csv`, hidden: true } });
      document.body.append(link);
      link.click();
      link.remove();
      summary.replaceChildren("The CSV download started. ", app.link(`queries/${id}`, "Open the query"), " to see how it ended.");
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
  }

  async function stream(id: string, bypass?: string): Promise<void> {
    if (running) return;
    error.textContent = "";
    notice.hidden = true;
    const controller = new AbortController();
    running = controller;
    drawRunButton();
    window.addEventListener("beforeunload", guard);
    const started = performance.now();
    grid.reset([]);
    downloads.hidden = true;
    plan.hidden = true;
    summary.textContent = "Running…";
    try {
      cancelButton.hidden = false;
      timer = window.setInterval(() => {
        elapsed.textContent = `${((performance.now() - started) / 1000).toFixed(1)} s`;
      }, 100);
      const body: Record<string, unknown> = {};
      if (bypass !== undefined) body.bypass_review = { acknowledge: true, reason: bypass };
      if (timeoutField.value) body.timeout_secs = Number(timeoutField.value);
      const hasBody = Object.keys(body).length > 0;
      const response = await fetch(`/api/v1/console/queries/${encodeURIComponent(id)}/run`, {
        method: "POST",
        headers: headers(hasBody, "application/x-ndjson"),
        body: hasBody ? JSON.stringify(body) : undefined,
        credentials: "same-origin",
        signal: controller.signal,
      });
      const outcome = await streamInto(response, grid, {
        progress: (rows) => {
          summary.textContent = `${rows.toLocaleString("en")} rows so far…`;
        },
      });
      if (!response.ok || !response.body) return;
      const told = outcomeText(
        outcome,
        grid.rowCount,
        Math.round(performance.now() - started),
        "the query returned more. Raise the row limit, or narrow the query.",
      );
      if (told.summary) summary.textContent = told.summary;
      downloads.hidden = grid.resultColumns.length === 0;
      const top = planOf(grid.resultColumns, grid.shownRows());
      if (top) {
        replace(plan, h("h2", {}, "Query plan"), planTree(top));
        plan.hidden = false;
      }
      error.textContent = told.error;
      if (told.error) markError(told.error);
      notice.textContent = told.notice;
      notice.hidden = !told.notice;
    } catch (e) {
      if (controller.signal.aborted) {
        summary.textContent = `Cancelled after ${grid.rowCount.toLocaleString("en")} rows.`;
      } else {
        summary.textContent = "";
        error.textContent = e instanceof ApiError ? e.message : e instanceof Error ? e.message : String(e);
        markError(error.textContent);
      }
    } finally {
      finish();
    }
  }

  // The dialog is in the page only while it is open: its fields are not the editor's.
  saveButton.addEventListener("click", () => {
    const save = saveDialog(app, () => (database ? { database_id: database.id, credential_id: credential.value, query: editor.text } : null));
    save.addEventListener("close", () => save.remove());
    element.append(save);
    save.showModal();
  });
  runButton.addEventListener("click", () => void run());
  csvButton.addEventListener("click", () => void run("csv"));
  cancelButton.addEventListener("click", () => running?.abort());
  credential.addEventListener("change", () => {
    const tab = kept.tabs[kept.active];
    if (tab) {
      tab.credential_id = credential.value;
      keepTabs();
    }
    drawRunButton();
    if (database) void loadSchema(database);
  });
  search.addEventListener("input", drawList);

  const element = h(
    "div",
    { class: "query-screen" },
    h("aside", { class: "picker" }, h("h2", {}, "Databases"), field("Search databases", search), list, tree.element),
    h(
      "section",
      { class: "work" },
      heading,
      h("div", { class: "toolbar" }, field("Credential", credential), field("Row limit", limit), field("Timeout (s)", timeoutField, "Blank: the credential's"), runButton, csvButton, cancelButton, saveButton, formatButton, shortcutsButton, elapsed),
      shortcuts,
      request,
      tabBar.element,
      editorHost,
      error,
      h("div", { class: "result-head" }, summary, notice, downloads),
      plan,
      grid.element,
    ),
  );

  const text = handoff?.text;
  const first =
    (text && databases.find((db) => db.id === text.database_id)) ??
    (preset && databases.find((db) => db.id === preset.database_id)) ??
    databases.find((db) => pinned.has(db.id)) ??
    databases[0];
  // A statement handed over (a saved query, a query of the history) opens in a tab of its own;
  // otherwise the tabs kept come back, or a first one on the first database.
  if (text || preset) {
    openTab(
      newTab(
        first?.id ?? null,
        text?.query ?? preset?.query ?? "",
        text?.title ?? preset?.title ?? "",
        text?.credential_id ?? preset?.credential_id ?? null,
      ),
    );
  } else if (kept.tabs.length > 0) showTab();
  else if (first) openTab(newTab(first.id, loadDraft(user, first.id) ?? ""));
  if (!database) drawList();
  drawRunButton();
  if (preset) shownTitle = preset.title;
  requestAnimationFrame(() => {
    grid.mount();
    editor.focus();
    if (handoff?.run) void stream(handoff.run, handoff.bypass);
  });
  return {
    title: "Query",
    element,
    busy: () => running !== null,
    leave: () => {
      document.removeEventListener("keydown", onKey);
      running?.abort();
      grid.destroy();
      editor.view.destroy();
    },
  };
}
