// Databases (for those who manage them): the list with filters; a form to create and edit one
// (connection, TLS, access, reviews, AI settings, connection parameters, credentials as rows
// whose password is never shown, blank meaning unchanged, one default); "Test connection" per
// credential, before saving too; delete behind a confirmation that names what goes with it;
// its permissions and data protection, each saved with If-Match so that two admins never
// silently overwrite each other.

import { call, errorMessage, headers, problem, withEtag, type Page } from "./api";
import type { App, Screen } from "./app";
import { dangerDialog, field, h, isolated, replace, table, uid, visible } from "./dom";
import { knownSubjects } from "./users";

export const ADAPTERS = ["postgres", "mysql", "clickhouse", "sqlserver", "oracle"] as const;

export interface Credential {
  id?: string;
  username: string;
  hostname: string | null;
  ai_allowed: boolean;
  timeout: number | null;
  reviews_required: number;
  default_credential: boolean;
}

export interface Database {
  id: string;
  name: string;
  adapter: string;
  hostname: string;
  port: number | null;
  database: string;
  ssl: boolean;
  verify_server_hostname: boolean;
  restrict_access: boolean;
  review_bypass_allowed: boolean;
  group: string | null;
  slack_channel: string | null;
  tunnel_id: string | null;
  ai_enabled: boolean;
  ai_max_rows: number;
  connection_parameters: { name: string; value: string }[];
  credentials: Credential[];
}

/** A check-connection answer: `ok`, or the driver's message (plain text). */
async function checkConnection(path: string, body: unknown): Promise<string> {
  const response = await fetch(path, {
    method: "POST",
    headers: headers(true, "text/plain"),
    body: JSON.stringify(body),
    credentials: "same-origin",
    cache: "no-store",
  });
  const text = await response.text();
  if (response.ok) return text.trim();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  return errorMessage(response.status, parsed).message;
}

/** Every text in an answer's problems (strings, lists and objects of them), in order. */
export function flatten(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(flatten);
  if (value && typeof value === "object") return Object.values(value).flatMap(flatten);
  return value === null || value === undefined ? [] : [String(value)];
}

/** UTF-8 text as base64 (how TLS material travels). */
export function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * What the form rules say before anything is sent: a name, an adapter, a host, at least one
 * credential with a username, usernames unique, exactly one default, a new credential with a
 * password. Answers field → message.
 */
export function formProblems(db: Pick<Database, "name" | "adapter" | "hostname" | "credentials">, passwords: (string | null)[]): Record<string, string> {
  const problems: Record<string, string> = {};
  if (!db.name.trim()) problems.name = "A name is required.";
  if (!ADAPTERS.includes(db.adapter as (typeof ADAPTERS)[number])) problems.adapter = "Pick an adapter.";
  if (!db.hostname.trim()) problems.hostname = "A host is required.";
  if (db.credentials.length === 0) problems.credentials = "Add at least one credential.";
  const seen = new Set<string>();
  db.credentials.forEach((credential, index) => {
    const name = credential.username.trim();
    if (!name) problems[`credentials.${index}.username`] = "A username is required.";
    else if (seen.has(name)) problems[`credentials.${index}.username`] = "Usernames must be unique.";
    seen.add(name);
    if (!credential.id && !(passwords[index] ?? "")) problems[`credentials.${index}.password`] = "A new credential needs its password.";
  });
  const defaults = db.credentials.filter((c) => c.default_credential).length;
  if (db.credentials.length > 0 && defaults !== 1) problems.default_credential = "Mark exactly one credential as the default.";
  return problems;
}

export async function databasesScreen(app: App): Promise<Screen> {
  const adapter = h("select", {}, h("option", { attrs: { value: "" } }, "Any adapter"), ...ADAPTERS.map((a) => h("option", { attrs: { value: a } }, a)));
  const group = h("input", { attrs: { type: "search", autocomplete: "off" } });
  const prefix = h("input", { attrs: { type: "search", autocomplete: "off" } });
  const body = h("div", {});
  const more = h("button", { attrs: { type: "button", hidden: true } }, "More databases");
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  let next: string | null = null;
  const rows: HTMLElement[] = [];

  async function load(reset: boolean): Promise<void> {
    if (reset) {
      rows.length = 0;
      next = null;
    }
    const params = new URLSearchParams({ limit: "100" });
    if (adapter.value) params.set("adapter", adapter.value);
    if (group.value.trim()) params.set("group", group.value.trim());
    if (prefix.value.trim()) params.set("name_prefix", prefix.value.trim());
    if (next) params.set("after", next);
    try {
      const page = await call<Page<Database>>("GET", `/api/v1/console/databases?${params}`);
      error.textContent = "";
      for (const db of page.data) {
        rows.push(
          h(
            "tr",
            {},
            h("td", {}, app.link(`databases/${db.id}`, isolated(db.name))),
            h("td", {}, db.group ? isolated(db.group) : ""),
            h("td", {}, db.adapter),
            h("td", {}, isolated(`${db.hostname}${db.port ? `:${db.port}` : ""}/${db.database}`)),
            h("td", {}, String(db.credentials.length)),
            h("td", {}, db.restrict_access ? "restricted" : "open"),
          ),
        );
      }
      next = page.next;
      more.hidden = next === null;
      replace(
        body,
        rows.length
          ? table("Databases", ["Name", "Group", "Adapter", "Where", "Credentials", "Access"], rows)
          : h("p", {}, "No database matches."),
      );
    } catch (e) {
      error.textContent = problem(e);
    }
  }
  for (const input of [adapter, group, prefix]) input.addEventListener("change", () => void load(true));
  more.addEventListener("click", () => void load(false));
  await load(true);
  return {
    title: "Databases",
    element: h(
      "section",
      { class: "page" },
      h("h1", {}, "Databases"),
      h("p", {}, app.link("databases/new", "New database")),
      h("div", { class: "filters" }, field("Adapter", adapter), field("Group", group), field("Name starts with", prefix)),
      error,
      body,
      more,
    ),
  };
}

function checkbox(label: string, checked: boolean): { element: HTMLElement; input: HTMLInputElement } {
  const input = h("input", { attrs: { type: "checkbox", checked } });
  const id = uid("check");
  input.id = id;
  return { input, element: h("div", { class: "check" }, input, h("label", { attrs: { for: id } }, label)) };
}

function text(value: string | null | undefined, attrs: Record<string, string | number | boolean | undefined> = {}): HTMLInputElement {
  const input = h("input", { attrs: { type: "text", autocomplete: "off", spellcheck: "false", ...attrs } });
  input.value = value ?? "";
  return input;
}

export async function databaseScreen(app: App, id: string | null): Promise<Screen> {
  let etag = "";
  let stored: Database | null = null;
  if (id) {
    const read = await withEtag<Database>("GET", `/api/v1/console/databases/${encodeURIComponent(id)}`);
    stored = read.value;
    etag = read.etag;
  }
  const db = stored;
  const name = text(db?.name, { required: true });
  const adapter = h("select", {}, ...ADAPTERS.map((a) => h("option", { attrs: { value: a, selected: db?.adapter === a } }, a)));
  const hostname = text(db?.hostname, { required: true });
  const port = h("input", { attrs: { type: "number", min: 1, max: 65535, inputmode: "numeric" } });
  port.value = db?.port ? String(db.port) : "";
  const database = text(db?.database);
  const group = text(db?.group);
  const slack = text(db?.slack_channel);
  const tunnel = text(db?.tunnel_id);
  const aiMaxRows = h("input", { attrs: { type: "number", min: 1, inputmode: "numeric" } });
  aiMaxRows.value = String(db?.ai_max_rows ?? 500);
  const ssl = checkbox("Use TLS", db?.ssl ?? false);
  const verify = checkbox("Verify the server's host name (needs a CA certificate)", db?.verify_server_hostname ?? false);
  const restrict = checkbox("Restrict access to those granted below", db?.restrict_access ?? false);
  const bypass = checkbox("Let a super admin bypass reviews of their own queries, with a reason", db?.review_bypass_allowed ?? false);
  const aiEnabled = checkbox("AI agents may query it", db?.ai_enabled ?? false);
  const tls = () => h("textarea", { attrs: { rows: 3, spellcheck: "false", placeholder: db ? "Unchanged when blank" : "PEM" } });
  const ca = tls();
  const cert = tls();
  const key = tls();
  const parameters = h("div", { class: "rows" });
  const credentials = h("div", { class: "rows" });
  const status = h("p", { class: "summary", attrs: { role: "status" } });
  const error = h("div", { class: "error", attrs: { role: "alert" } });

  function parameterRow(p?: { name: string; value: string }): void {
    const pname = text(p?.name);
    const pvalue = text(p?.value);
    const row: HTMLElement = h(
      "div",
      { class: "row param" },
      field("Parameter name", pname),
      field("Value", pvalue),
      h("button", { attrs: { type: "button", "aria-label": "Remove this parameter" }, on: { click: () => row.remove() } }, "Remove"),
    );
    parameters.append(row);
  }

  interface CredentialRow {
    id?: string;
    element: HTMLElement;
    username: HTMLInputElement;
    password: HTMLInputElement;
    host: HTMLInputElement;
    reviews: HTMLInputElement;
    timeout: HTMLInputElement;
    ai: HTMLInputElement;
    isDefault: HTMLInputElement;
    result: HTMLElement;
  }
  const credentialRows: CredentialRow[] = [];
  const defaultGroup = uid("default");

  function credentialRow(c?: Credential): void {
    const username = text(c?.username, { required: true });
    const password = h("input", { attrs: { type: "password", autocomplete: "new-password", placeholder: c?.id ? "Unchanged when blank" : "" } });
    const host = text(c?.hostname, { placeholder: "the database's host" });
    const reviews = h("input", { attrs: { type: "number", min: 0, max: 10, inputmode: "numeric" } });
    reviews.value = String(c?.reviews_required ?? 0);
    const timeout = h("input", { attrs: { type: "number", min: 1, inputmode: "numeric", placeholder: "server default" } });
    timeout.value = c?.timeout ? String(c.timeout) : "";
    const ai = checkbox("AI agents may run as it", c?.ai_allowed ?? false);
    const isDefault = h("input", { attrs: { type: "radio", name: defaultGroup, checked: c?.default_credential ?? credentialRows.length === 0 } });
    const defaultId = uid("default");
    isDefault.id = defaultId;
    const result = h("p", { class: "check-result", attrs: { role: "status", "aria-live": "polite" } });
    const row: CredentialRow = { id: c?.id, element: h("fieldset", { class: "credential" }), username, password, host, reviews, timeout, ai: ai.input, isDefault, result };
    const legend = h("legend", {}, c ? isolated(c.username) : "New credential");
    replace(
      row.element,
      legend,
      h("div", { class: "row" }, field("Username", username), field("Password", password), field("Host (override)", host)),
      h(
        "div",
        { class: "row" },
        field("Reviews required", reviews),
        field("Timeout (seconds)", timeout),
        ai.element,
        h("div", { class: "check" }, isDefault, h("label", { attrs: { for: defaultId } }, "Default credential")),
      ),
      h(
        "div",
        { class: "actions" },
        h("button", { attrs: { type: "button" }, on: { click: () => void test(row) } }, `Test connection`),
        h(
          "button",
          {
            attrs: { type: "button" },
            on: {
              click: () => {
                credentialRows.splice(credentialRows.indexOf(row), 1);
                row.element.remove();
              },
            },
          },
          "Remove credential",
        ),
      ),
      result,
    );
    credentialRows.push(row);
    credentials.append(row.element);
  }

  /** The body the form describes (a create, or an update: blank secrets left out). */
  function bodyOf(): { body: Record<string, unknown>; problems: Record<string, string> } {
    const creds: Credential[] = credentialRows.map((row) => ({
      ...(row.id ? { id: row.id } : {}),
      username: row.username.value.trim(),
      hostname: row.host.value.trim() || null,
      ai_allowed: row.ai.checked,
      timeout: row.timeout.value ? Number(row.timeout.value) : null,
      reviews_required: Number(row.reviews.value || 0),
      default_credential: row.isDefault.checked,
    }));
    const body: Record<string, unknown> = {
      name: name.value.trim(),
      adapter: adapter.value,
      hostname: hostname.value.trim(),
      port: port.value ? Number(port.value) : null,
      database: database.value.trim(),
      group: group.value.trim() || null,
      slack_channel: slack.value.trim() || null,
      tunnel_id: tunnel.value.trim() || null,
      ssl: ssl.input.checked,
      verify_server_hostname: verify.input.checked,
      restrict_access: restrict.input.checked,
      review_bypass_allowed: bypass.input.checked,
      ai_enabled: aiEnabled.input.checked,
      ai_max_rows: Number(aiMaxRows.value || 500),
      connection_parameters: [...parameters.querySelectorAll<HTMLElement>(".param")].map((row) => {
        const [n, v] = row.querySelectorAll("input");
        return { name: n?.value.trim() ?? "", value: v?.value ?? "" };
      }),
      credentials: creds.map((c, index) => {
        const password = credentialRows[index]?.password.value ?? "";
        return password ? { ...c, password } : c;
      }),
    };
    if (ca.value.trim()) body.ssl_ca_cert = base64(ca.value.trim());
    if (cert.value.trim()) body.ssl_cert = base64(cert.value.trim());
    if (key.value.trim()) body.ssl_key = base64(key.value.trim());
    const problems = formProblems(
      { name: name.value, adapter: adapter.value, hostname: hostname.value, credentials: creds },
      credentialRows.map((row) => row.password.value),
    );
    return { body, problems };
  }

  async function test(row: CredentialRow): Promise<void> {
    const { body } = bodyOf();
    row.result.textContent = "Connecting…";
    const path = db ? `/api/v1/console/databases/${encodeURIComponent(db.id)}/check-connection` : "/api/v1/console/databases/check-connection";
    const answer = await checkConnection(path, { ...body, username: row.username.value.trim() });
    row.result.replaceChildren(answer === "ok" ? "ok: the credential connects" : isolated(answer));
    row.result.className = answer === "ok" ? "check-result ok" : "check-result failed";
  }

  async function save(): Promise<void> {
    const { body, problems } = bodyOf();
    const list = Object.values(problems);
    if (list.length) {
      error.replaceChildren(list.join(" "));
      return;
    }
    error.textContent = "";
    try {
      if (db) {
        const saved = await withEtag<Database>("PATCH", `/api/v1/console/databases/${encodeURIComponent(db.id)}`, body, etag);
        etag = saved.etag;
        status.textContent = "Saved.";
        app.announce("Saved");
        await app.go(`databases/${saved.value.id}`, true);
      } else {
        const saved = await withEtag<Database>("POST", "/api/v1/console/databases", body);
        await app.go(`databases/${saved.value.id}`, true);
      }
    } catch (e) {
      error.textContent = problem(e);
    }
  }

  for (const p of db?.connection_parameters ?? []) parameterRow(p);
  for (const c of db?.credentials ?? []) credentialRow(c);
  if (!db) credentialRow();

  const form = h(
    "form",
    {
      class: "database-form",
      attrs: { "aria-labelledby": "database-title" },
      on: {
        submit: (event) => {
          event.preventDefault();
          void save();
        },
      },
    },
    h("h1", { attrs: { id: "database-title" } }, db ? h("span", {}, "Database ", isolated(db.name)) : "New database"),
    h(
      "fieldset",
      {},
      h("legend", {}, "Connection"),
      h("div", { class: "row" }, field("Name", name), field("Adapter", adapter), field("Group", group)),
      h("div", { class: "row" }, field("Host", hostname), field("Port", port), field("Database name", database), field("Tunnel id", tunnel)),
    ),
    h("fieldset", {}, h("legend", {}, "TLS"), ssl.element, verify.element, h("div", { class: "row" }, field("CA certificate (PEM)", ca), field("Client certificate (PEM)", cert), field("Client key (PEM)", key))),
    h("fieldset", {}, h("legend", {}, "Access and reviews"), restrict.element, bypass.element, field("Slack channel for review requests", slack)),
    h("fieldset", {}, h("legend", {}, "AI agents"), aiEnabled.element, field("Most rows an agent's query returns", aiMaxRows)),
    h(
      "fieldset",
      {},
      h("legend", {}, "Connection parameters (PostgreSQL)"),
      parameters,
      h("button", { attrs: { type: "button" }, on: { click: () => parameterRow() } }, "Add a parameter"),
    ),
    h(
      "fieldset",
      {},
      h("legend", {}, "Credentials"),
      credentials,
      h("button", { attrs: { type: "button" }, on: { click: () => credentialRow() } }, "Add a credential"),
    ),
    error,
    h("div", { class: "actions" }, h("button", { class: "primary", attrs: { type: "submit" } }, db ? "Save changes" : "Create database"), status),
  );

  const parts: (HTMLElement | null)[] = [form];
  if (db) {
    parts.push(await accessEditors(db));
    parts.push(deleteSection(app, db));
  }
  return { title: db ? `Database ${db.name}` : "New database", element: h("section", { class: "page" }, app.link("databases", "All databases"), ...parts) };
}

/** The data protection document as the API answers it. */
type ProtectionDocument = {
  inherits_from: string | null;
  policies: { name: string; description: string | null; columns: Rule[]; exempt?: { subject_kind: string; subject: string }[] }[];
  provisioning: { username: string; schemas: string[]; auto_apply: boolean } | null;
};

/** A provisioning plan as the API answers it. */
type PlanAnswer = {
  empty: boolean;
  applied?: number;
  roles: { role: string; steps: Step[] }[];
  unmatched: string[];
  notes: string[];
};

/** One statement of a plan and why. */
type Step = { sql: string; reason: string };

/** One column a policy protects, as the data protection document writes it. */
type Rule = { column: string; action: string; mask?: string; keep_first?: number; keep_last?: number };

/** A rule's treatment as the editor offers it: `hide`, or `mask:<mask>`. */
const TREATMENTS: [string, string][] = [
  ["hide", "hide"],
  ["mask:full", "mask (****)"],
  ["mask:partial", "mask, keep some characters"],
  ["mask:email", "mask, keep the e-mail domain"],
  ["mask:null", "mask as null"],
];

/** The permissions and data protection of `db`, each a document saved with If-Match. */
async function accessEditors(db: Database): Promise<HTMLElement> {
  const base = `/api/v1/console/databases/${encodeURIComponent(db.id)}`;
  const permissions = await withEtag<{ permissions: { subject_kind: string; subject: string; access: string }[] }>("GET", `${base}/permissions`);
  const protection = await withEtag<ProtectionDocument>("GET", `${base}/data-protection`);
  let permissionsTag = permissions.etag;
  let protectionTag = protection.etag;
  // The pickers suggest the users and groups there are, and say when a name is nobody's.
  const known = await knownSubjects();
  const usersId = uid("users");
  const groupsId = uid("groups");
  const userList = h("datalist", { attrs: { id: usersId } }, ...known.users.map((u) => h("option", { attrs: { value: u.name } }, u.display_name)));
  const groupList = h("datalist", { attrs: { id: groupsId } }, ...known.groups.map((g) => h("option", { attrs: { value: g } })));
  const subjectPicker = (kind: HTMLSelectElement, subject: HTMLInputElement): HTMLElement => {
    const warning = h("small", { class: "warning", attrs: { "aria-live": "polite" } });
    const check = () => {
      subject.setAttribute("list", kind.value === "group" ? groupsId : usersId);
      const name = subject.value.trim().toLowerCase();
      if (!name || known.users.length === 0) {
        warning.textContent = "";
        return;
      }
      if (kind.value === "group") {
        warning.textContent = known.groups.includes(name) ? "" : "No user is in this group yet.";
        return;
      }
      const user = known.users.find((u) => u.name === name);
      warning.textContent = !user ? "Nobody has this name yet: check the spelling, or invite them." : user.active ? "" : "This user is deactivated: the grant is inactive.";
    };
    kind.addEventListener("change", check);
    subject.addEventListener("input", check);
    check();
    return warning;
  };

  const grants = h("div", { class: "rows" });
  const grantRow = (g?: { subject_kind: string; subject: string; access: string }) => {
    const kind = h("select", {}, ...["user", "group"].map((k) => h("option", { attrs: { value: k, selected: g?.subject_kind === k } }, k)));
    const subject = text(g?.subject);
    const access = h("select", {}, ...["query", "review", "admin"].map((a) => h("option", { attrs: { value: a, selected: g?.access === a } }, a)));
    const row: HTMLElement = h(
      "div",
      { class: "row grant" },
      field("Kind", kind),
      field("User or group", subject),
      subjectPicker(kind, subject),
      field("Access", access),
      h("button", { attrs: { type: "button", "aria-label": "Remove this grant" }, on: { click: () => row.remove() } }, "Remove"),
    );
    grants.append(row);
  };
  for (const g of permissions.value.permissions) grantRow(g);
  const permissionsStatus = h("p", { class: "summary", attrs: { role: "status" } });
  const permissionsError = h("p", { class: "error", attrs: { role: "alert" } });

  const inherits = text(protection.value.inherits_from, { placeholder: "db_… (optional)" });
  const provisioning = protection.value.provisioning;
  const provUser = text(provisioning?.username, { placeholder: "the tables' owner (optional)" });
  const provPassword = h("input", { attrs: { type: "password", autocomplete: "new-password", placeholder: provisioning ? "kept when left empty" : "" } });
  const provSchemas = text(provisioning?.schemas.join(", "), { placeholder: "every schema" });
  const autoApply = h("input", { attrs: { type: "checkbox" } });
  autoApply.checked = provisioning?.auto_apply ?? false;
  // The column picker: the catalog as the provisioning login sees it.
  const columnsId = uid("catalog");
  const catalog = h("datalist", { attrs: { id: columnsId } });
  if (provisioning) {
    void call<{ columns: { schema: string; table: string; column: string; type: string }[] }>("GET", `${base}/data-protection/catalog`)
      .then((answer) => replace(catalog, ...answer.columns.map((c) => h("option", { attrs: { value: `${c.schema}.${c.table}.${c.column}` } }, `${c.type}`))))
      .catch(() => replace(catalog));
  }
  const rules = h("div", { class: "rows" });
  const ruleRow = (policy: string, r?: Rule) => {
    const policyName = text(policy);
    const column = text(r?.column, { placeholder: "schema.table.column", list: columnsId });
    const current = r?.action === "mask" ? `mask:${r.mask ?? "full"}` : (r?.action ?? "hide");
    const keepFirst = h("input", { attrs: { type: "number", min: "0", max: "16", value: String(r?.keep_first ?? 2) } });
    const keepLast = h("input", { attrs: { type: "number", min: "0", max: "16", value: String(r?.keep_last ?? 0) } });
    const keep = h("span", { class: "keep" }, field("Keep first", keepFirst), field("Keep last", keepLast));
    const action = h(
      "select",
      { on: { change: () => (keep.hidden = action.value !== "mask:partial") } },
      ...TREATMENTS.map(([value, label]) => h("option", { attrs: { value, selected: current === value } }, label)),
    );
    keep.hidden = current !== "mask:partial";
    const row: HTMLElement = h(
      "div",
      { class: "row rule" },
      field("Policy", policyName),
      field("Column", column),
      field("Action", action),
      keep,
      h("button", { attrs: { type: "button", "aria-label": "Remove this rule" }, on: { click: () => row.remove() } }, "Remove"),
    );
    rules.append(row);
  };
  for (const policy of protection.value.policies) for (const r of policy.columns) ruleRow(policy.name, r);
  // What the rows don't edit is kept as read: each policy's description.
  const descriptions = new Map(protection.value.policies.map((p) => [p.name, p.description]));
  // Who a policy exempts (sees the values; runs as the provisioning credential).
  const exempts = h("div", { class: "rows" });
  const exemptRow = (policy: string, e?: { subject_kind: string; subject: string }) => {
    const policyName = text(policy);
    const kind = h("select", {}, ...["user", "group"].map((k) => h("option", { attrs: { value: k, selected: e?.subject_kind === k } }, k)));
    const subject = text(e?.subject);
    const row: HTMLElement = h(
      "div",
      { class: "row exempt" },
      field("Policy", policyName),
      field("Kind", kind),
      field("Exempt user or group", subject),
      subjectPicker(kind, subject),
      h("button", { attrs: { type: "button", "aria-label": "Remove this exemption" }, on: { click: () => row.remove() } }, "Remove"),
    );
    exempts.append(row);
  };
  for (const policy of protection.value.policies) for (const e of policy.exempt ?? []) exemptRow(policy.name, e);
  const planView = h("div", { class: "plan", attrs: { "aria-live": "polite" } });

  /** The provisioning plan: each login's statements with their reasons, and Apply. */
  function renderPlan(plan: PlanAnswer): void {
    const roles = plan.roles.filter((r) => r.steps.length);
    replace(
      planView,
      plan.empty ? h("p", { attrs: { role: "status" } }, "Nothing to change: every credential's login is as the policies make it.") : "",
      ...roles.map((r) =>
        h(
          "section",
          { class: "plan-role" },
          h("h3", {}, "Login ", isolated(r.role), ` (${r.steps.length} statement${r.steps.length === 1 ? "" : "s"})`),
          h("ol", {}, ...r.steps.map((s) => h("li", {}, h("code", {}, visible(s.sql)), h("p", { class: "reason" }, visible(s.reason))))),
        ),
      ),
      plan.unmatched.length ? h("p", { class: "error" }, "Unmatched policy columns (they protect nothing): ", visible(plan.unmatched.join(", "))) : "",
      ...plan.notes.map((n) => h("p", { class: "note" }, visible(n))),
      plan.empty ? "" : h("button", { attrs: { type: "button" }, on: { click: () => void applyPlan() } }, "Apply the plan"),
    );
  }

  async function showPlan(): Promise<void> {
    replace(planView, h("p", {}, "Planning…"));
    try {
      renderPlan(await call<PlanAnswer>("GET", `${base}/data-protection/plan`));
    } catch (e) {
      replace(planView, h("p", { class: "error", attrs: { role: "alert" } }, problem(e)));
    }
  }

  async function applyPlan(): Promise<void> {
    replace(planView, h("p", {}, "Applying…"));
    try {
      const applied = await call<PlanAnswer>("POST", `${base}/data-protection/apply`);
      replace(planView, h("p", { attrs: { role: "status" } }, `Applied ${applied.applied ?? 0} statement(s).`));
      await checkRoles();
    } catch (e) {
      replace(planView, h("p", { class: "error", attrs: { role: "alert" } }, problem(e)));
    }
  }
  const protectionStatus = h("p", { class: "summary", attrs: { role: "status" } });
  const protectionError = h("p", { class: "error", attrs: { role: "alert" } });
  const checks = h("ul", { class: "checks", attrs: { "aria-label": "Credentials checked against the policies" } });

  /** Each credential's role checked as a run checks it: verified, or what to change. */
  async function checkRoles(): Promise<void> {
    replace(checks, h("li", {}, "Checking…"));
    try {
      const status = await call<{ protected: boolean; credentials: { username: string; status: string; problems: unknown; managed?: boolean; plan?: Step[] }[] }>(
        "GET",
        `${base}/data-protection/status`,
      );
      if (!status.protected) {
        replace(checks, h("li", {}, "No policy protects this database (its own or inherited): nothing to check."));
        return;
      }
      replace(
        checks,
        ...status.credentials.map((c) =>
          h(
            "li",
            { class: `check-${c.status}` },
            isolated(c.username),
            `: ${c.status.replace("_", " ")}`,
            c.managed ? " (provisioned by dbconsole)" : "",
            c.problems ? h("pre", { class: "problems" }, visible(flatten(c.problems).join("\n"))) : "",
            c.plan && c.plan.length ? h("pre", { class: "problems" }, visible(c.plan.map((s) => `${s.sql};  -- ${s.reason}`).join("\n"))) : "",
          ),
        ),
      );
    } catch (e) {
      replace(checks, h("li", { class: "error" }, problem(e)));
    }
  }

  async function savePermissions(): Promise<void> {
    const list = [...grants.querySelectorAll<HTMLElement>(".grant")].map((row) => {
      const [kind, access] = row.querySelectorAll("select");
      const subject = row.querySelector("input");
      return { subject_kind: kind?.value ?? "user", subject: subject?.value.trim() ?? "", access: access?.value ?? "query" };
    });
    try {
      const saved = await withEtag("PUT", `${base}/permissions`, { permissions: list }, permissionsTag);
      permissionsTag = saved.etag;
      permissionsError.textContent = "";
      permissionsStatus.textContent = "Permissions saved.";
    } catch (e) {
      permissionsStatus.textContent = "";
      permissionsError.textContent = problem(e);
    }
  }

  async function saveProtection(): Promise<void> {
    const byPolicy = new Map<string, Rule[]>();
    for (const row of rules.querySelectorAll<HTMLElement>(".rule")) {
      const [policy, column, keepFirst, keepLast] = row.querySelectorAll("input");
      const choice = row.querySelector("select")?.value ?? "hide";
      const name = policy?.value.trim() || "policy";
      const list = byPolicy.get(name) ?? [];
      const rule: Rule = { column: column?.value.trim() ?? "", action: choice.startsWith("mask") ? "mask" : "hide" };
      const mask = choice.split(":")[1];
      if (mask && mask !== "full") rule.mask = mask;
      if (mask === "partial") {
        rule.keep_first = Number(keepFirst?.value || 0);
        rule.keep_last = Number(keepLast?.value || 0);
      }
      list.push(rule);
      byPolicy.set(name, list);
    }
    const exemptions = new Map<string, { subject_kind: string; subject: string }[]>();
    for (const row of exempts.querySelectorAll<HTMLElement>(".exempt")) {
      const [policy, subject] = row.querySelectorAll("input");
      const name = policy?.value.trim() || "policy";
      const list = exemptions.get(name) ?? [];
      list.push({ subject_kind: row.querySelector("select")?.value ?? "user", subject: subject?.value.trim() ?? "" });
      exemptions.set(name, list);
    }
    const username = provUser.value.trim();
    const schemas = provSchemas.value
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s);
    const document = {
      inherits_from: inherits.value.trim() || null,
      policies: [...byPolicy.entries()].map(([name, columns]) => ({ name, description: descriptions.get(name) ?? null, columns, exempt: exemptions.get(name) ?? [] })),
      provisioning: username ? { username, schemas, auto_apply: autoApply.checked, ...(provPassword.value ? { password: provPassword.value } : {}) } : null,
    };
    try {
      const saved = await withEtag("PUT", `${base}/data-protection`, document, protectionTag);
      protectionTag = saved.etag;
      provPassword.value = "";
      protectionError.textContent = "";
      protectionStatus.textContent = username
        ? "Data protection saved. Show the plan to see what provisioning changes, then apply it."
        : "Data protection saved. Runs on this database now need a role that can't read what it protects (see the docs' Data protection page).";
    } catch (e) {
      protectionStatus.textContent = "";
      protectionError.textContent = problem(e);
    }
  }

  return h(
    "div",
    { class: "access" },
    h(
      "section",
      { attrs: { "aria-labelledby": "permissions-title" } },
      h("h2", { attrs: { id: "permissions-title" } }, "Permissions"),
      grants,
      userList,
      groupList,
      h("div", { class: "actions" }, h("button", { attrs: { type: "button" }, on: { click: () => grantRow() } }, "Add a grant"), h("button", { attrs: { type: "button" }, on: { click: () => void savePermissions() } }, "Save permissions")),
      permissionsError,
      permissionsStatus,
    ),
    h(
      "section",
      { attrs: { "aria-labelledby": "protection-title" } },
      h("h2", { attrs: { id: "protection-title" } }, "Data protection"),
      field("Inherit the policies of", inherits),
      h(
        "fieldset",
        { class: "provisioning" },
        h("legend", {}, "Provisioning credential"),
        h("p", { class: "hint" }, "A login that owns the tables (or may grant them): dbconsole grants each credential what the policies allow and makes its masking views. Leave it empty to make the roles by hand; dbconsole then verifies them."),
        field("Username", provUser),
        field("Password", provPassword),
        field("Schemas (comma-separated)", provSchemas),
        field("Apply automatically when the catalog moves", autoApply),
      ),
      catalog,
      rules,
      h("h3", {}, "Exemptions"),
      h("p", { class: "hint" }, "Who sees the values: a caller every policy exempts runs as the provisioning credential, unprotected (it needs one)."),
      exempts,
      h(
        "div",
        { class: "actions" },
        h("button", { attrs: { type: "button" }, on: { click: () => ruleRow("pii") } }, "Add a column rule"),
        h("button", { attrs: { type: "button" }, on: { click: () => exemptRow("pii") } }, "Add an exemption"),
        h("button", { attrs: { type: "button" }, on: { click: () => void saveProtection() } }, "Save data protection"),
        h("button", { attrs: { type: "button" }, on: { click: () => void showPlan() } }, "Show the plan"),
        h("button", { attrs: { type: "button" }, on: { click: () => void checkRoles() } }, "Check the credentials' roles"),
      ),
      protectionError,
      protectionStatus,
      planView,
      checks,
    ),
  );
}

/** Delete, behind a dialog that names the database and what goes with it. */
function deleteSection(app: App, db: Database): HTMLElement {
  const titleId = uid("delete-title");
  const dialog = dangerDialog(
    ["Delete ", isolated(db.name), "?"],
    [
      `This deletes the database with its ${db.credentials.length} credential(s) (`,
      ...db.credentials.flatMap((c, i) => [i ? ", " : "", isolated(c.username)]),
      "), its permissions and its data protection policies. Its queries stay in the history. This can't be undone.",
    ],
    "Delete for good",
    async () => {
      try {
        await call("DELETE", `/api/v1/console/databases/${encodeURIComponent(db.id)}`);
      } catch (e) {
        throw new Error(problem(e), { cause: e });
      }
      await app.go("databases", true);
    },
  );
  return h(
    "section",
    { class: "danger-zone", attrs: { "aria-labelledby": `${titleId}-section` } },
    h("h2", { attrs: { id: `${titleId}-section` } }, "Delete"),
    h("button", { class: "danger", attrs: { type: "button" }, on: { click: () => dialog.showModal() } }, "Delete this database…"),
    dialog,
  );
}
