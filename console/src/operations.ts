// Operator screens (full-scope callers and super admins): the audit log, filtered on the server
// by database (its own events and its queries'), actor, action and time, paged; and the outbox,
// deliveries by status with a dead letter's error and a retry. Filters live in the page's URL.

import { ApiError, call, headers, read, type Page } from "./api";
import type { App, Screen } from "./app";
import { field, h, isolated, replace, table, uid } from "./dom";
import { inputToRfc3339, rfc3339ToInput, when } from "./clock";
import { changedText } from "./ndjson";

/** The audit trail's actions, as the server names them. */
export const AUDIT_ACTIONS = [
  "database.create",
  "database.update",
  "database.setup",
  "database.delete",
  "database.remove",
  "access_control.update",
  "dashboard.create",
  "dashboard.update",
  "dashboard.delete",
  "caller_key.create",
  "caller_key.revoke",
  "session.create",
  "session.revoke",
  "session.refused",
  "query.create",
  "query.run",
  "panel.run",
  "panel.test_run",
  "query.review",
  "query.review_bypass",
  "agent.call",
  "database.schema_read",
  "data_protection.check",
  "action.trigger",
  "delivery.retry",
  "user.create",
  "user.update",
  "invitation.create",
  "invitation.revoke",
  "door.session_open",
  "door.session_close",
  "door.statement",
  "door_password.create",
  "door_password.revoke",
] as const;

interface AuditEvent {
  id: string;
  at: string;
  action: string;
  resource: { kind: string; id: string };
  actor: { id: string | null; name: string };
  request_id: string | null;
  changes: string[];
  /** A run's facts: never its text or rows. */
  run?: { rows: number; affected_rows: number | null; duration_ms: number; outcome: string } | null;
}

/** A run's facts in a few words: "3 rows changed, succeeded in 12 ms". */
function runFacts(run: NonNullable<AuditEvent["run"]>): string {
  const what = run.affected_rows !== null && run.rows === 0 ? changedText(run.affected_rows) : `${run.rows.toLocaleString("en")} row(s)`;
  return `${what}, ${run.outcome.replaceAll("_", " ")} in ${run.duration_ms} ms`;
}

interface Delivery {
  id: string;
  kind: string;
  workflow_id: string | null;
  channel: string | null;
  resource_id: string;
  status: string;
  attempts: number;
  due_at: string | null;
  last_error: string | null;
  updated_at: string;
}


/** The page's URL with `params` (empty ones left out), replacing the current entry. */
function keepInUrl(params: Record<string, string>): URLSearchParams {
  const next = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) next.set(key, value);
  const search = next.toString();
  history.replaceState(null, "", `${location.pathname}${search ? `?${search}` : ""}`);
  return next;
}

export async function auditScreen(app: App): Promise<Screen> {
  const params = new URLSearchParams(location.search);
  const databases = (await call<Page<{ id: string; name: string }>>("GET", "/api/v1/console/databases?limit=500")).data;
  const database = h("select", {}, h("option", { attrs: { value: "" } }, "Any database"));
  for (const db of databases) database.append(h("option", { attrs: { value: db.id } }, db.name));
  database.value = params.get("database") ?? "";
  const action = h("select", {}, h("option", { attrs: { value: "" } }, "Any action"));
  for (const name of AUDIT_ACTIONS) action.append(h("option", { attrs: { value: name } }, name));
  action.value = params.get("action") ?? "";
  const actor = h("input", { attrs: { type: "text", autocomplete: "off" } });
  actor.value = params.get("actor") ?? "";
  const since = h("input", { attrs: { type: "datetime-local" } });
  since.value = params.get("since") ? rfc3339ToInput(params.get("since") ?? "") : "";
  const until = h("input", { attrs: { type: "datetime-local" } });
  until.value = params.get("until") ? rfc3339ToInput(params.get("until") ?? "") : "";
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const body = h("tbody");
  const more = h("button", { attrs: { type: "button", hidden: true } }, "Older events");
  const count = h("p", { attrs: { role: "status" } });
  let next: string | null = null;
  let shown = 0;

  async function load(reset: boolean): Promise<void> {
    error.textContent = "";
    const filter = keepInUrl({
      database: database.value,
      action: action.value,
      actor: actor.value.trim(),
      since: inputToRfc3339(since.value),
      until: inputToRfc3339(until.value),
    });
    if (!reset && next) filter.set("after", next);
    filter.set("limit", "100");
    try {
      const page = await call<Page<AuditEvent>>("GET", `/api/v1/console/audit?${filter.toString()}`);
      if (reset) {
        replace(body);
        shown = 0;
      }
      for (const event of page.data) {
        body.append(
          h(
            "tr",
            {},
            h("td", {}, h("time", { attrs: { datetime: event.at } }, when(event.at))),
            h("td", {}, event.action),
            h("td", {}, `${event.resource.kind} `, isolated(event.resource.id)),
            h("td", {}, isolated(event.actor.name), event.actor.id ? h("small", { class: "hint" }, " ", isolated(event.actor.id)) : ""),
            h("td", {}, isolated(event.request_id ?? "")),
            h("td", {}, isolated(event.changes.join(", ")), event.run ? h("div", { class: "hint" }, runFacts(event.run)) : ""),
          ),
        );
      }
      shown += page.data.length;
      next = page.next;
      more.hidden = !next;
      count.textContent = `${shown} event(s)${next ? ", more below" : ""}`;
    } catch (e) {
      error.textContent = e instanceof Error ? e.message : String(e);
    }
  }

  const form = h(
    "form",
    {
      class: "row filters",
      on: {
        submit: (event) => {
          event.preventDefault();
          void load(true);
        },
      },
    },
    field("Database", database, "Its own events and its queries'"),
    field("Actor", actor, "A key's or session's id, or a name"),
    field("Action", action),
    field("From", since),
    field("Until", until),
    h("button", { class: "primary", attrs: { type: "submit" } }, "Filter"),
  );
  more.addEventListener("click", () => void load(false));
  const tableId = uid("audit");
  const element = h(
    "section",
    { class: "audit" },
    h("h1", { attrs: { id: tableId } }, "Audit log"),
    form,
    error,
    count,
    h(
      "table",
      { class: "list", attrs: { "aria-labelledby": tableId } },
      h("thead", {}, h("tr", {}, ...["Time", "Action", "Record", "Actor", "Request", "Changed"].map((label) => h("th", { attrs: { scope: "col" } }, label)))),
      body,
    ),
    more,
  );
  await load(true);
  app.announce(count.textContent ?? "");
  return { title: "Audit log", element };
}

export async function outboxScreen(app: App): Promise<Screen> {
  const params = new URLSearchParams(location.search);
  const status = h(
    "select",
    {},
    ...["", "pending", "delivering", "delivered", "dead"].map((value) => h("option", { attrs: { value } }, value || "Any status")),
  );
  status.value = params.get("status") ?? "";
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const list = h("div");
  const more = h("button", { attrs: { type: "button", hidden: true } }, "More");
  let next: string | null = null;
  let rows: HTMLElement[] = [];

  async function retry(delivery: Delivery, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      const request = headers(false);
      request.set("idempotency-key", crypto.randomUUID());
      const response = await fetch(`/api/v1/console/deliveries/${encodeURIComponent(delivery.id)}/retry`, {
        method: "POST",
        headers: request,
        credentials: "same-origin",
        cache: "no-store",
      });
      await read(response);
      app.announce(`Delivery ${delivery.id} is pending again`);
      await load(true);
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.message : String(e);
      button.disabled = false;
    }
  }

  async function load(reset: boolean): Promise<void> {
    error.textContent = "";
    const filter = keepInUrl({ status: status.value });
    if (!reset && next) filter.set("after", next);
    filter.set("limit", "100");
    try {
      const page = await call<Page<Delivery>>("GET", `/api/v1/console/deliveries?${filter.toString()}`);
      if (reset) rows = [];
      for (const delivery of page.data) {
        const retryButton = h("button", { attrs: { type: "button", "aria-label": `Retry delivery ${delivery.id}` } }, "Retry");
        retryButton.addEventListener("click", () => void retry(delivery, retryButton));
        rows.push(
          h(
            "tr",
            {},
            h("td", {}, isolated(delivery.id)),
            h("td", {}, delivery.kind === "workflow" ? "workflow " : "Slack ", isolated((delivery.kind === "workflow" ? delivery.workflow_id : delivery.channel) ?? "")),
            h("td", {}, h("span", { class: `status ${delivery.status}` }, delivery.status)),
            h("td", {}, String(delivery.attempts)),
            h("td", {}, when(delivery.due_at)),
            h("td", {}, isolated(delivery.last_error ?? "")),
            h("td", {}, delivery.status === "dead" ? retryButton : ""),
          ),
        );
      }
      next = page.next;
      more.hidden = !next;
      replace(
        list,
        rows.length === 0
          ? h("p", {}, "No delivery to show.")
          : table("Deliveries, newest first", ["Delivery", "To", "Status", "Attempts", "Next try", "Last error", ""], rows),
      );
    } catch (e) {
      error.textContent = e instanceof Error ? e.message : String(e);
    }
  }

  status.addEventListener("change", () => void load(true));
  more.addEventListener("click", () => void load(false));
  const element = h("section", { class: "outbox" }, h("h1", {}, "Outbox"), h("div", { class: "row" }, field("Status", status)), error, list, more);
  await load(true);
  return { title: "Outbox", element };
}
