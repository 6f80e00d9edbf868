// The history (the caller's queries, newest first, filtered, paged), the reviews waiting for
// the caller, and one query's page: its text, where it runs, its author, status, outcome,
// reviews and bypass; Approve and Reject with a comment; Run for its author once it may; a super
// admin's bypass with a reason. Buttons that can't be used are disabled and say why.

import { ApiError, call, type Page, type Query, type QueryableDatabase } from "./api";
import type { App, Screen } from "./app";
import { field, h, isolated, replace, table, visible } from "./dom";

const STATUSES = ["ready", "awaiting_review", "rejected", "running", "succeeded", "failed", "cancelled"];

async function databaseNames(): Promise<Map<string, QueryableDatabase>> {
  const page = await call<Page<QueryableDatabase>>("GET", "/api/v1/console/me/databases");
  return new Map(page.data.map((db) => [db.id, db]));
}

/** The approvals a query's credential requires now (`null` when it is gone). */
function requiredFor(names: Map<string, QueryableDatabase>, query: Query): number | null {
  const credential = names.get(query.database_id)?.credentials.find((c) => c.id === query.credential_id);
  return credential ? credential.reviews_required : null;
}

function when(at: string | null | undefined): string {
  if (!at) return "";
  const date = new Date(at);
  return Number.isNaN(date.getTime()) ? at : date.toLocaleString();
}

function excerpt(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 140 ? `${line.slice(0, 140)}…` : line;
}

/** What a query's run came to, in a few words. */
export function outcome(query: Query, required: number | null): string {
  const run = query.run;
  if (!run) return query.status === "awaiting_review" ? `${query.approvals} of ${required ?? "?"} approvals` : "";
  if (run.error) return visible(/client went away|cancel/i.test(run.error) ? `cancelled: ${run.error}` : run.error);
  if (run.finished_at === null) return "running";
  return `${run.row_count ?? 0} rows${run.truncated ? " (truncated)" : ""} in ${run.duration_ms ?? "?"} ms`;
}


export async function historyScreen(app: App): Promise<Screen> {
  const names = await databaseNames();
  const database = h("select", {}, h("option", { attrs: { value: "" } }, "Every database"), ...[...names.values()].map((db) => h("option", { attrs: { value: db.id } }, db.name)));
  const status = h("select", {}, h("option", { attrs: { value: "" } }, "Any status"), ...STATUSES.map((s) => h("option", { attrs: { value: s } }, s.replace("_", " "))));
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
    const params = new URLSearchParams({ limit: "50", author: app.me?.user ?? "" });
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
            h("td", {}, db ? isolated(db.name) : query.database_id),
            h("td", {}, h("span", { class: `status ${query.status}` }, query.status.replace("_", " "))),
            h("td", {}, outcome(query, requiredFor(names, query))),
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
      replace(body, rows.length ? table("Your queries", ["Created", "Database", "Status", "Outcome", "Query", ""], rows) : h("p", {}, "No query yet."));
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
  }

  database.addEventListener("change", () => void load(true));
  status.addEventListener("change", () => void load(true));
  more.addEventListener("click", () => void load(false));
  await load(true);
  return {
    title: "History",
    element: h("section", { class: "page" }, h("h1", {}, "History"), h("div", { class: "filters" }, field("Database", database), field("Status", status)), error, body, more),
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
      h("td", { class: "sql" }, h("code", {}, visible(excerpt(query.query)))),
      h("td", {}, app.link(`queries/${query.id}`, `Review ${query.id}`)),
    ),
  );
  return {
    title: "Reviews",
    element: h(
      "section",
      { class: "page" },
      h("h1", {}, "Waiting for your review"),
      rows.length ? table("Queries waiting for your review", ["Asked by", "When", "Database", "Approvals", "Query", ""], rows) : h("p", {}, "Nothing waits for your review."),
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
    const error = h("p", { class: "error", attrs: { role: "alert" } });
    const comment = h("textarea", { attrs: { rows: 3, maxlength: 2000 } });
    const reviewReason = !me?.may.review
      ? "You may not review queries."
      : isAuthor
        ? "You wrote this query: someone else must review it."
        : !open
          ? "This query is past reviewing."
          : query.reviews.some((r) => r.reviewer === me?.user)
            ? "You have reviewed this query."
            : "";
    const review = (decision: "approve" | "reject") => async () => {
      try {
        query = await call<Query>("POST", `/api/v1/console/queries/${encodeURIComponent(query.id)}/reviews`, {
          decision,
          comment: comment.value.trim() || undefined,
        });
        app.announce(decision === "approve" ? "Approved" : "Rejected");
        draw();
      } catch (e) {
        error.textContent = e instanceof ApiError ? e.message : String(e);
      }
    };
    const reviewButton = (label: string, decision: "approve" | "reject") =>
      h("button", { attrs: { type: "button", disabled: reviewReason !== "", title: reviewReason || undefined, "aria-describedby": reviewReason ? "review-why" : undefined }, on: { click: () => void review(decision)() } }, label);

    const approvals = query.approvals;
    const required = requiredFor(names, query) ?? 0;
    const runReason = !isAuthor
      ? "Only its author runs a query."
      : query.status === "awaiting_review" && approvals < required
        ? `It has ${approvals} of ${required} approvals.`
        : query.status !== "ready" && query.status !== "awaiting_review"
          ? "A query runs once: it has run, or was rejected."
          : "";
    const runIt = h(
      "button",
      {
        class: "primary",
        attrs: { type: "button", disabled: runReason !== "", title: runReason || undefined },
        on: {
          click: () => {
            app.handoff = { run: query.id };
            void app.go("");
          },
        },
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
      h("h1", {}, "Query ", h("code", {}, query.id)),
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
        h("dd", {}, h("span", { class: `status ${query.status}` }, query.status.replace("_", " "))),
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
              : `${query.run.row_count ?? 0} rows${query.run.truncated ? " (truncated)" : ""} in ${query.run.duration_ms ?? "?"} ms, run by `,
            query.run.error ? "" : isolated(query.run.run_by),
          ),
        query.bypass && h("dt", {}, "Bypass"),
        query.bypass && h("dd", {}, "By ", isolated(query.bypass.by), ` at ${when(query.bypass.at)} with ${query.bypass.approvals} of ${query.bypass.required} approvals: `, isolated(query.bypass.reason, { class: "reason" })),
      ),
      h("h2", {}, "Statement"),
      h("pre", { class: "sql" }, visible(query.query)),
      h("h2", {}, "Reviews"),
      query.reviews.length
        ? h(
            "ul",
            { class: "reviews" },
            ...query.reviews.map((r) =>
              h("li", {}, isolated(r.reviewer), ` ${r.decision === "approve" ? "approved" : "rejected"} at ${when(r.reviewed_at)}`, r.comment ? h("blockquote", {}, visible(r.comment)) : ""),
            ),
          )
        : h("p", {}, "No review yet."),
      open &&
      h(
        "div",
        { class: "review card", attrs: { role: "group", "aria-labelledby": "review-title" } },
        h("h2", { attrs: { id: "review-title" } }, "Review"),
        field("Comment", comment),
        h("div", { class: "actions" }, reviewButton("Approve", "approve"), reviewButton("Reject", "reject")),
        reviewReason ? h("p", { class: "why", attrs: { id: "review-why" } }, reviewReason) : "",
      ),
      h("div", { class: "actions" }, runIt, runReason ? h("span", { class: "why" }, runReason) : ""),
      bypass,
      error,
    );
  }
  draw();
  return { title: `Query ${query.id}`, element };
}
