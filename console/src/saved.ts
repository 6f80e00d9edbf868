// Saved queries: the list (search, tags), one saved query's page (its statement, where it runs,
// who sees it; a Run with a field per `${name}` parameter for everyone it is shared with; its
// author's change and delete), and the editor's "Save" dialog. A run is a new query that links
// back to the saved one: it streams in the editor, or waits for its reviews.

import { ApiError, call, type Page, type Query, type QueryableDatabase, type SavedQuery } from "./api";
import type { App, Screen } from "./app";
import { dangerDialog, field, h, isolated, replace, table, uid, visible } from "./dom";
import { when } from "./clock";

const SAVED = "/api/v1/console/saved-queries";

/** Who sees a saved query, as people read it. */
export function sharingLabel(saved: Pick<SavedQuery, "sharing" | "groups">): string {
  if (saved.sharing === "author") return "Only its author";
  if (saved.sharing === "database") return "Everyone who may query its database";
  return `Groups: ${saved.groups.join(", ")}`;
}

/** Words typed with commas between them: trimmed, blanks dropped. */
export function words(text: string): string[] {
  return text
    .split(",")
    .map((word) => word.trim())
    .filter((word) => word !== "");
}

/** The fields of a saved query's name, description, tags and sharing, and the body they make. */
function savedFields(initial?: SavedQuery) {
  const name = h("input", { attrs: { type: "text", maxlength: 200, autocomplete: "off", value: initial?.name ?? "" } });
  const description = h("textarea", { attrs: { rows: 2, maxlength: 10000 } });
  description.value = initial?.description ?? "";
  const tags = h("input", { attrs: { type: "text", autocomplete: "off", value: initial?.tags.join(", ") ?? "" } });
  const sharing = h(
    "select",
    {},
    h("option", { attrs: { value: "author" } }, "Only me"),
    h("option", { attrs: { value: "groups" } }, "Named groups"),
    h("option", { attrs: { value: "database" } }, "Everyone who may query the database"),
  );
  sharing.value = initial?.sharing ?? "author";
  const groups = h("input", { attrs: { type: "text", autocomplete: "off", value: initial?.groups.join(", ") ?? "" } });
  const groupsField = field("Groups", groups, "Separated by commas: their members who may query the database see it");
  const drawGroups = () => {
    groupsField.hidden = sharing.value !== "groups";
  };
  sharing.addEventListener("change", drawGroups);
  drawGroups();
  return {
    name,
    nodes: [
      field("Name", name),
      field("Description", description, "What it is for"),
      field("Tags", tags, "Separated by commas"),
      field("Who sees it", sharing),
      groupsField,
    ],
    body: () => ({
      name: name.value.trim(),
      description: description.value.trim(),
      tags: words(tags.value),
      sharing: sharing.value,
      groups: sharing.value === "groups" ? words(groups.value) : null,
    }),
  };
}

/** The editor's "Save" dialog: what `source` gives (database, credential, statement) saved
 * under a name; the saved query's page opens once saved. */
export function saveDialog(app: App, source: () => { database_id: string; credential_id: string; query: string } | null): HTMLDialogElement {
  const titleId = uid("save-title");
  const fields = savedFields();
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const dialog = h(
    "dialog",
    { class: "save-dialog", attrs: { "aria-labelledby": titleId } },
    h(
      "form",
      {
        on: {
          submit: (event) => {
            event.preventDefault();
            const what = source();
            if (!what || !what.query.trim()) {
              error.textContent = "Write a statement first.";
              return;
            }
            if (!fields.name.value.trim()) {
              error.textContent = "A saved query needs a name.";
              fields.name.focus();
              return;
            }
            void call<SavedQuery>("POST", SAVED, { ...what, ...fields.body() }).then(
              (saved) => {
                dialog.close();
                app.announce("Saved");
                void app.go(`saved/${saved.id}`);
              },
              (e: unknown) => {
                error.textContent = e instanceof ApiError ? e.message : String(e);
              },
            );
          },
        },
      },
      h("h2", { attrs: { id: titleId } }, "Save the query"),
      ...fields.nodes,
      error,
      h("div", { class: "actions" }, h("button", { class: "primary", attrs: { type: "submit" } }, "Save"), h("button", { attrs: { type: "button" }, on: { click: () => dialog.close() } }, "Cancel")),
    ),
  );
  return dialog;
}

async function databaseNames(): Promise<Map<string, QueryableDatabase>> {
  const page = await call<Page<QueryableDatabase>>("GET", "/api/v1/console/me/databases");
  return new Map(page.data.map((db) => [db.id, db]));
}

export async function savedListScreen(app: App): Promise<Screen> {
  const names = await databaseNames();
  const search = h("input", { attrs: { type: "search", autocomplete: "off" } });
  const body = h("div", {});
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  let timer = 0;

  async function load(): Promise<void> {
    const params = new URLSearchParams();
    if (search.value.trim()) params.set("search", search.value.trim());
    try {
      const page = await call<Page<SavedQuery>>("GET", `${SAVED}?${params}`);
      const rows = page.data.map((saved) =>
        h(
          "tr",
          {},
          h("td", {}, app.link(`saved/${saved.id}`, isolated(saved.name))),
          h("td", {}, visible(saved.description)),
          h("td", {}, names.get(saved.database_id) ? isolated(names.get(saved.database_id)?.name ?? "") : saved.database_id),
          h("td", {}, ...saved.tags.map((tag) => h("span", { class: "tag" }, isolated(tag)))),
          h("td", {}, sharingLabel(saved)),
          h("td", {}, saved.mine ? "You" : isolated(saved.author)),
        ),
      );
      replace(body, rows.length ? table("Saved queries", ["Name", "Description", "Database", "Tags", "Who sees it", "Author"], rows) : h("p", {}, search.value.trim() ? "No saved query matches." : "No saved query yet: save one from the editor."));
      error.textContent = "";
    } catch (e) {
      replace(body);
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
  }

  search.addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(() => void load(), 200);
  });
  await load();
  return {
    title: "Saved queries",
    element: h("section", { class: "page" }, h("h1", {}, "Saved queries"), h("div", { class: "filters" }, field("Search", search, "Name, description, statement or tags")), error, body),
    leave: () => window.clearTimeout(timer),
  };
}

export async function savedPage(app: App, id: string): Promise<Screen> {
  const names = await databaseNames();
  const element = h("section", { class: "page saved-page" });
  let saved: SavedQuery;
  try {
    saved = await call<SavedQuery>("GET", `${SAVED}/${encodeURIComponent(id)}`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      replace(element, h("h1", {}, "Saved query not found"), h("p", {}, "It does not exist, or it is not shared with you."));
      return { title: "Saved query", element };
    }
    throw e;
  }

  function draw(): void {
    const db = names.get(saved.database_id);
    const credential = db?.credentials.find((c) => c.id === saved.credential_id);
    const error = h("p", { class: "error", attrs: { role: "alert" } });
    const fail = (e: unknown) => {
      error.textContent = e instanceof ApiError ? e.message : String(e);
    };
    const values = saved.params.map((name) => ({ name, input: h("input", { attrs: { type: "text", autocomplete: "off" } }) }));
    const needsReview = (credential?.reviews_required ?? 0) > 0;
    const runReason = !db ? "You may not query its database." : !credential ? "Its credential is gone." : "";
    const runForm = h(
      "form",
      {
        class: "run card",
        on: {
          submit: (event) => {
            event.preventDefault();
            const params: Record<string, string> = {};
            for (const { name, input } of values) params[name] = input.value;
            void call<Query>("POST", `${SAVED}/${encodeURIComponent(saved.id)}/queries`, { params }).then((query) => {
              if (query.status === "ready") {
                app.handoff = { run: query.id };
                void app.go("");
              } else {
                app.announce("Review requested");
                void app.go(`queries/${query.id}`);
              }
            }, fail);
          },
        },
      },
      h("h2", {}, "Run it"),
      values.length ? h("div", { class: "params" }, ...values.map(({ name, input }) => field(name, input))) : h("p", {}, "It has no parameters."),
      h("p", { class: "hint" }, "Each value is sent as a bind parameter, never pasted into the statement."),
      h(
        "div",
        { class: "actions" },
        h("button", { class: "primary", attrs: { type: "submit", disabled: runReason !== "", title: runReason || undefined } }, needsReview ? "Request review" : "Run"),
        runReason ? h("span", { class: "why" }, runReason) : "",
      ),
    );
    const open = h(
      "button",
      {
        attrs: { type: "button", disabled: runReason !== "" },
        on: {
          click: () => {
            app.handoff = { text: { database_id: saved.database_id, credential_id: saved.credential_id, query: saved.query, title: saved.name } };
            void app.go("");
          },
        },
      },
      "Open in the editor",
    );
    const fields = savedFields(saved);
    const statement = h("textarea", { class: "sql", attrs: { rows: 6, spellcheck: "false" } });
    statement.value = saved.query;
    const change = saved.mine
      ? h(
          "details",
          { class: "edit card" },
          h("summary", {}, "Change it"),
          h(
            "form",
            {
              on: {
                submit: (event) => {
                  event.preventDefault();
                  void call<SavedQuery>("PATCH", `${SAVED}/${encodeURIComponent(saved.id)}`, { ...fields.body(), query: statement.value }).then((answer) => {
                    saved = answer;
                    app.announce("Saved");
                    draw();
                  }, fail);
                },
              },
            },
            ...fields.nodes,
            field("Statement", statement, "${name} marks a parameter"),
            h("button", { attrs: { type: "submit" } }, "Save the changes"),
          ),
        )
      : null;
    const remove = dangerDialog(["Delete ", isolated(saved.name), "?"], ["Its runs stay in the history."], "Delete it", async () => {
      await call<SavedQuery>("DELETE", `${SAVED}/${encodeURIComponent(saved.id)}`);
      app.announce("Deleted");
      await app.go("saved");
    });
    const mayDelete = saved.mine || app.me?.role === "super_admin";
    replace(
      element,
      h("h1", {}, isolated(saved.name)),
      saved.description ? h("p", { class: "description" }, visible(saved.description)) : "",
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Database"),
        h("dd", {}, db ? isolated(db.name) : saved.database_id),
        h("dt", {}, "Credential"),
        h("dd", {}, credential ? isolated(credential.username) : saved.credential_id, needsReview ? ` (${credential?.reviews_required} review(s) required)` : ""),
        h("dt", {}, "Who sees it"),
        h("dd", {}, sharingLabel(saved)),
        h("dt", {}, "Author"),
        h("dd", {}, saved.mine ? "You" : isolated(saved.author)),
        h("dt", {}, "Changed"),
        h("dd", {}, when(saved.updated_at)),
        saved.tags.length ? h("dt", {}, "Tags") : "",
        saved.tags.length ? h("dd", {}, ...saved.tags.map((tag) => h("span", { class: "tag" }, isolated(tag)))) : "",
      ),
      h("h2", {}, "Statement"),
      h("pre", { class: "sql" }, visible(saved.query)),
      runForm,
      h("div", { class: "actions" }, open, mayDelete ? h("button", { class: "danger", attrs: { type: "button" }, on: { click: () => remove.showModal() } }, "Delete") : ""),
      change,
      remove,
      error,
    );
  }
  draw();
  return { title: saved.name, element };
}
