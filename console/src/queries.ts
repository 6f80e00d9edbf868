// The history (the caller's queries, newest first, filtered, paged), the reviews waiting for
// the caller, and one query's page: its title and description, text, where it runs, its author,
// status, outcome and bypass; its thread (reviews of every revision and comments, in order);
// Approve, Request changes and Reject with a comment; a comment box for its author and
// reviewers; its author's change of title, description or statement; Run for its author once
// it may; a super admin's bypass with a reason. Buttons that can't be used are disabled and say
// why.

import { ApiError, call, type Page, type Query, type QueryableDatabase } from "./api";
import type { App, Screen } from "./app";
import { dangerDialog, field, h, isolated, replace, table, visible } from "./dom";
import { when } from "./clock";
import { changedText } from "./ndjson";

const STATUSES = ["ready", "awaiting_review", "changes_requested", "rejected", "running", "succeeded", "failed"];

/** A status as people read it. */
function statusLabel(status: string): string {
  return status.replaceAll("_", " ");
}

/** What a review decided, as a verb. */
function decided(decision: string): string {
  return decision === "approve" ? "approved" : decision === "reject" ? "rejected" : "asked for changes to";
}

async function databaseNames(): Promise<Map<string, QueryableDatabase>> {
  const page = await call<Page<QueryableDatabase>>("GET", "/api/v1/console/me/databases");
  return new Map(page.data.map((db) => [db.id, db]));
}

/** The approvals a query's credential requires now (`null` when it is gone). */
function requiredFor(names: Map<string, QueryableDatabase>, query: Query): number | null {
  const credential = names.get(query.database_id)?.credentials.find((c) => c.id === query.credential_id);
  return credential ? credential.reviews_required : null;
}



function excerpt(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 140 ? `${line.slice(0, 140)}…` : line;
}

/** Whether a statement reads as a write (its first word is not a read's): a hint for the
 * confirmation, never a rule (the server decides what runs). */
export function looksLikeWrite(text: string): boolean {
  const first = text.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, " ").split(/[\s(;]+/).find((word) => word !== "")?.toLowerCase() ?? "";
  return !["select", "with", "show", "explain", "values", "table", "describe", "desc"].includes(first);
}

/** What a query's run came to, in a few words. */
export function outcome(query: Query, required: number | null): string {
  const run = query.run;
  if (!run) return query.status === "awaiting_review" ? `${query.approvals} of ${required ?? "?"} approvals` : "";
  if (run.error) return visible(/client went away|cancel/i.test(run.error) ? `cancelled: ${run.error}` : run.error);
  if (run.finished_at === null) return "running";
  if (typeof run.affected_rows === "number" && !run.row_count) return `${changedText(run.affected_rows)} in ${run.duration_ms ?? "?"} ms`;
  return `${run.row_count ?? 0} rows${run.truncated ? " (truncated)" : ""} in ${run.duration_ms ?? "?"} ms`;
}


export async function historyScreen(app: App): Promise<Screen> {
  const names = await databaseNames();
  const database = h("select", {}, h("option", { attrs: { value: "" } }, "Every database"), ...[...names.values()].map((db) => h("option", { attrs: { value: db.id } }, db.name)));
  const status = h("select", {}, h("option", { attrs: { value: "" } }, "Any status"), ...STATUSES.map((s) => h("option", { attrs: { value: s } }, statusLabel(s))));
  // Everyone's: the queries of every database the caller may query (all of them for a super
  // admin), as the server lets them see.
  const whose = h("select", {}, h("option", { attrs: { value: "mine" } }, "Mine"), h("option", { attrs: { value: "all" } }, "Everyone's I may see"));
  const body = h("div", {});
  const more = h("button", { attrs: { type: "button", hidden: true } }, "Older queries");
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  let next: string | null = null;
  const rows: HTMLElement[] = [];

  async function load(reset: boolean): Promise<void> {
    if (reset) {
      rows.length = 0;
      next = null;
    }
    const params = new URLSearchParams({ limit: "50" });
    if (whose.value === "mine") params.set("author", app.me?.user ?? "");
    if (database.value) params.set("database_id", database.value);
    if (status.value) params.set("status", status.value);
    if (next) params.set("after", next);
    try {
      const page = await call<Page<Query>>("GET", `/api/v1/console/queries?${params}`);
      for (const query of page.data) {
        const db = names.get(query.database_id);
        rows.push(
          h(
            "tr",
            {},
            h("td", {}, when(query.inserted_at)),
            h("td", {}, isolated(query.author)),
            h("td", {}, db ? isolated(db.name) : query.database_id),
            h("td", {}, h("span", { class: `status ${query.status}` }, statusLabel(query.status))),
            h("td", {}, outcome(query, requiredFor(names, query))),
            h("td", {}, isolated(visible(query.title)), query.saved_query_id ? " " : "", query.saved_query_id ? app.link(`saved/${query.saved_query_id}`, h("span", { class: "tag" }, "saved")) : ""),
            h("td", { class: "sql" }, h("code", {}, visible(excerpt(query.query)))),
            h(
              "td",
              {},
              app.link(`queries/${query.id}`, "Open"),
              " ",
              h(
                "button",
                {
                  class: "link",
                  attrs: { type: "button", "aria-label": `Load into editor: ${query.id}` },
                  on: {
                    click: () => {
                      app.handoff = { load: query.id };
                      void app.go("");
                    },
                  },
                },
                "Load into editor",
              ),
            ),
          ),
        );
      }
      next = page.next;
      more.hidden = next === null;
      replace(body, rows.length ? table(whose.value === "mine" ? "Your queries" : "Queries you may see", ["Created", "Author", "Database", "Status", "Outcome", "Title", "Query", ""], rows) : h("p", {}, "No query yet."));
      error.textContent = "";
    } catch (e) {
      // What was listed before answers another filter: it goes.
      rows.length = 0;
      next = null;
      more.hidden = true;
      replace(body);
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
  }

  database.addEventListener("change", () => void load(true));
  status.addEventListener("change", () => void load(true));
  whose.addEventListener("change", () => void load(true));
  more.addEventListener("click", () => void load(false));
  await load(true);
  return {
    title: "History",
    element: h("section", { class: "page" }, h("h1", {}, "History"), h("div", { class: "filters" }, field("Whose", whose), field("Database", database), field("Status", status)), error, body, more),
  };
}

export async function reviewsScreen(app: App): Promise<Screen> {
  const names = await databaseNames();
  const page = await call<Page<Query>>("GET", "/api/v1/console/queries?status=awaiting_review&reviewer=me&limit=100");
  const rows = page.data.map((query) =>
    h(
      "tr",
      {},
      h("td", {}, isolated(query.author)),
      h("td", {}, when(query.inserted_at)),
      h("td", {}, names.get(query.database_id) ? isolated(names.get(query.database_id)?.name ?? "") : query.database_id),
      h("td", {}, `${query.approvals} of ${requiredFor(names, query) ?? "?"}`),
      // The title opens the query's page: a reviewer reads what it is for first.
      h("td", {}, app.link(`queries/${query.id}`, isolated(visible(query.title)))),
      h("td", { class: "sql" }, h("code", {}, visible(excerpt(query.query)))),
    ),
  );
  return {
    title: "Reviews",
    element: h(
      "section",
      { class: "page" },
      h("h1", {}, "Waiting for your review"),
      rows.length ? table("Queries waiting for your review", ["Asked by", "When", "Database", "Approvals", "Title", "Query"], rows) : h("p", {}, "Nothing waits for your review."),
    ),
  };
}

export async function queryPage(app: App, id: string): Promise<Screen> {
  const names = await databaseNames();
  let query = await call<Query>("GET", `/api/v1/console/queries/${encodeURIComponent(id)}`);
  const element = h("section", { class: "page query-page" });
  const me = app.me;

  function draw(): void {
    const db = names.get(query.database_id);
    const credential = db?.credentials.find((c) => c.id === query.credential_id);
    const isAuthor = me?.user === query.author;
    const open = query.status === "awaiting_review" || query.status === "ready";
    const changeable = open || query.status === "changes_requested";
    const error = h("p", { class: "error", attrs: { role: "alert" } });
    const comment = h("textarea", { attrs: { rows: 3, maxlength: 2000 } });
    const current = query.reviews.filter((r) => r.revision === query.revision);
    // Why a reviewer can't decide: a reject stays possible while changes are asked for.
    const rejectReason = !me?.may.review
      ? "You may not review queries."
      : isAuthor
        ? "You wrote this query: someone else must review it."
        : !changeable
          ? "This query is past reviewing."
          : current.some((r) => r.reviewer === me?.user)
            ? "You have reviewed this revision."
            : "";
    const reviewReason = rejectReason || (query.status === "changes_requested" ? "Changes were asked for: its author changes it, then it is reviewed again." : "");
    type Decision = "approve" | "reject" | "request_changes";
    const done: Record<Decision, string> = { approve: "Approved", reject: "Rejected", request_changes: "Changes requested" };
    const fail = (e: unknown) => {
      error.textContent = e instanceof ApiError ? e.message : String(e);
    };
    const review = (decision: Decision) => async () => {
      if (decision !== "approve" && !comment.value.trim()) {
        error.textContent = decision === "reject" ? "Say why you reject it, in the comment." : "Say what should change, in the comment.";
        comment.focus();
        return;
      }
      try {
        query = await call<Query>("POST", `/api/v1/console/queries/${encodeURIComponent(query.id)}/reviews`, {
          decision,
          comment: comment.value.trim() || undefined,
        });
        app.announce(done[decision]);
        void app.countPending();
        draw();
      } catch (e) {
        fail(e);
      }
    };
    const reviewButton = (label: string, decision: Decision, why: string) =>
      h("button", { attrs: { type: "button", disabled: why !== "", title: why || undefined, "aria-describedby": why ? "review-why" : undefined }, on: { click: () => void review(decision)() } }, label);

    // The thread: every review, of every revision, and every comment, in the order they came.
    const entries = [
      ...query.reviews.map((r) => ({
        at: r.reviewed_at,
        node: h(
          "li",
          { class: `entry ${r.decision}` },
          isolated(r.reviewer),
          ` ${decided(r.decision)} revision ${r.revision + 1} · ${when(r.reviewed_at)}`,
          r.comment ? h("blockquote", {}, visible(r.comment)) : "",
        ),
      })),
      ...query.comments.map((c) => ({
        at: c.at,
        node: h("li", { class: "entry comment" }, isolated(c.author), ` · ${when(c.at)}`, h("blockquote", {}, visible(c.text))),
      })),
    ].sort((x, y) => (x.at < y.at ? -1 : x.at > y.at ? 1 : 0));
    const mayComment = !!me && (isAuthor || !!me.may.review);
    const said = h("textarea", { attrs: { rows: 2, maxlength: 2000 } });
    const commentForm = mayComment
      ? h(
          "form",
          {
            class: "comment",
            on: {
              submit: (event) => {
                event.preventDefault();
                if (!said.value.trim()) {
                  error.textContent = "Write the comment first.";
                  said.focus();
                  return;
                }
                void call<Query>("POST", `/api/v1/console/queries/${encodeURIComponent(query.id)}/comments`, { text: said.value.trim() }).then((answer) => {
                  query = answer;
                  app.announce("Comment added");
                  draw();
                }, fail);
              },
            },
          },
          field("Add to the thread", said),
          h("button", { attrs: { type: "submit" } }, "Comment"),
        )
      : null;

    // The author's change: a new statement (or any change once changes were asked for) is a new
    // revision, reviewed again.
    const newTitle = h("input", { attrs: { type: "text", maxlength: 200, value: query.title } });
    const newDescription = h("textarea", { attrs: { rows: 3, maxlength: 10000 } });
    newDescription.value = query.description;
    const newStatement = h("textarea", { class: "sql", attrs: { rows: 6, spellcheck: "false" } });
    newStatement.value = query.query;
    const editForm =
      isAuthor && changeable
        ? h(
            "details",
            { class: "edit card", attrs: { open: query.status === "changes_requested" } },
            h("summary", {}, "Change the query"),
            h(
              "form",
              {
                on: {
                  submit: (event) => {
                    event.preventDefault();
                    if (!newTitle.value.trim() || !newStatement.value.trim()) {
                      error.textContent = "A query keeps a title and a statement.";
                      return;
                    }
                    void call<Query>("PATCH", `/api/v1/console/queries/${encodeURIComponent(query.id)}`, {
                      title: newTitle.value.trim(),
                      description: newDescription.value.trim(),
                      query: newStatement.value,
                    }).then((answer) => {
                      query = answer;
                      app.announce(answer.revision > 0 ? `Saved as revision ${answer.revision + 1}` : "Saved");
                      draw();
                    }, fail);
                  },
                },
              },
              field("Title", newTitle),
              field("Description", newDescription),
              field("Statement", newStatement, "A new statement is a new revision: its approvals are counted again."),
              h("button", { attrs: { type: "submit" } }, "Save the changes"),
            ),
          )
        : null;

    const approvals = query.approvals;
    const required = requiredFor(names, query) ?? 0;
    const runReason = !isAuthor
      ? "Only its author runs a query."
      : query.status === "changes_requested"
        ? "Changes were asked for: change it first."
        : query.status === "awaiting_review" && approvals < required
        ? `It has ${approvals} of ${required} approvals.`
        : query.status !== "ready" && query.status !== "awaiting_review"
          ? "A query runs once: it has run, or was rejected."
          : "";
    // A query runs once: the run is confirmed, its statement shown again, and a write said so.
    const confirmRun = dangerDialog(
      ["Run ", isolated(visible(query.title)), " now?"],
      [
        looksLikeWrite(query.query) ? "It changes data: " : "",
        `it runs once, as ${credential?.username ?? query.credential_id}, with ${approvals} approval(s). `,
        h("code", { class: "sql" }, visible(excerpt(query.query))),
      ],
      "Run it",
      async () => {
        app.handoff = { run: query.id };
        await app.go("");
      },
    );
    const runIt = h(
      "button",
      {
        class: "primary",
        attrs: { type: "button", disabled: runReason !== "", title: runReason || undefined },
        on: { click: () => confirmRun.showModal() },
      },
      "Run in the editor",
    );
    const bypassReason = h("textarea", { attrs: { rows: 2, maxlength: 2000 } });
    const canBypass = me?.may.bypass_reviews && isAuthor && query.status === "awaiting_review" && db?.review_bypass_allowed;
    const bypass = canBypass
      ? h(
          "form",
          {
            class: "bypass",
            attrs: { "aria-labelledby": "bypass-title" },
            on: {
              submit: (event) => {
                event.preventDefault();
                if (!bypassReason.value.trim()) {
                  error.textContent = "A bypass needs a reason.";
                  bypassReason.focus();
                  return;
                }
                app.handoff = { run: query.id, bypass: bypassReason.value.trim() };
                void app.go("");
              },
            },
          },
          h("h2", { attrs: { id: "bypass-title" } }, "Run without the approvals (super admin)"),
          field("Reason for the bypass", bypassReason, "Recorded with the query and in the audit trail."),
          h("button", { attrs: { type: "submit" } }, "Bypass the review and run"),
        )
      : null;

    replace(
      element,
      h("h1", {}, isolated(visible(query.title))),
      h("p", { class: "query-id" }, "Query ", h("code", {}, query.id), query.revision > 0 ? ` · revision ${query.revision + 1}` : ""),
      query.description ? h("p", { class: "description" }, visible(query.description)) : "",
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Database"),
        h("dd", {}, db ? isolated(db.name) : query.database_id),
        h("dt", {}, "Credential"),
        h("dd", {}, credential ? isolated(credential.username) : query.credential_id),
        h("dt", {}, "Author"),
        h("dd", {}, isolated(query.author)),
        h("dt", {}, "Created"),
        h("dd", {}, when(query.inserted_at)),
        h("dt", {}, "Status"),
        h("dd", {}, h("span", { class: `status ${query.status}` }, statusLabel(query.status))),
        h("dt", {}, "Approvals"),
        h("dd", {}, `${approvals} of ${required}`),
        h("dt", {}, "Row limit"),
        h("dd", {}, String(query.limit)),
        query.run && h("dt", {}, "Outcome"),
        query.run &&
          h(
            "dd",
            {},
            query.run.error
              ? isolated(query.run.error)
              : `${outcome(query, null)}, run by `,
            query.run.error ? "" : isolated(query.run.run_by),
          ),
        query.bypass && h("dt", {}, "Bypass"),
        query.bypass && h("dd", {}, "By ", isolated(query.bypass.by), ` at ${when(query.bypass.at)} with ${query.bypass.approvals} of ${query.bypass.required} approvals: `, isolated(query.bypass.reason, { class: "reason" })),
      ),
      h("h2", {}, "Statement"),
      h("pre", { class: "sql" }, visible(query.query)),
      query.saved_query_id ? h("p", {}, "A run of ", app.link(`saved/${query.saved_query_id}`, "a saved query"), query.params?.length ? ", with these values (sent as bind parameters):" : ".") : "",
      query.params?.length
        ? h(
            "table",
            { class: "list params" },
            h("caption", { class: "sr-only" }, "Parameter values"),
            h("thead", {}, h("tr", {}, h("th", { attrs: { scope: "col" } }, "Parameter"), h("th", { attrs: { scope: "col" } }, "Value"))),
            h("tbody", {}, ...query.params.map((p) => h("tr", {}, h("td", {}, h("code", {}, visible(p.name))), h("td", {}, isolated(p.value))))),
          )
        : "",
      h("h2", {}, "Thread"),
      entries.length ? h("ol", { class: "thread" }, ...entries.map((e) => e.node)) : h("p", {}, "No review or comment yet."),
      commentForm,
      changeable &&
        h(
          "div",
          { class: "review card", attrs: { role: "group", "aria-labelledby": "review-title" } },
          h("h2", { attrs: { id: "review-title" } }, "Review"),
          field("Comment", comment, "Needed to ask for changes or to reject"),
          h(
            "div",
            { class: "actions" },
            reviewButton("Approve", "approve", reviewReason),
            reviewButton("Request changes", "request_changes", reviewReason),
            reviewButton("Reject (final)", "reject", rejectReason),
          ),
          reviewReason ? h("p", { class: "why", attrs: { id: "review-why" } }, reviewReason) : "",
        ),
      editForm,
      h("div", { class: "actions" }, runIt, runReason ? h("span", { class: "why" }, runReason) : ""),
      confirmRun,
      bypass,
      error,
    );
  }
  draw();
  return { title: `Query ${query.id}`, element };
}
