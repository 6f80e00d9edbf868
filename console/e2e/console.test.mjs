// The console in a real browser against the real server (redb) and a real PostgreSQL: sign in
// (link, key), run, cap notice, cancel (seen leaving pg_stat_activity), hostile content that
// runs no script, review by another user, the author's disabled approve, a super admin's bypass
// with a reason, CSRF refusals (and a same-origin write allowed), sign-out, a session ended on
// the server sending the page to the Sign in screen; axe-core on each screen; screenshots under
// target/console-screenshots.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  BINARY,
  PG,
  assertAccessible,
  assertClean,
  signedIn as harnessSignedIn,
  eventually,
  launchBrowser,
  screenshot,
  startServer,
  watchedPage,
} from "./harness.mjs";

const HOSTILE = `<img src=x onerror=alert(1)></script><script>alert(2)</script>`;

let server;
let browser;
let bobKey;
const db = {};

async function createDatabase(body) {
  const made = await server.api("POST", "/api/v1/console/databases", body);
  assert.ok(made.status === 200 || made.status === 201, JSON.stringify(made.body));
  return made.body;
}

const postgres = (name, extra = {}, credential = {}) => ({
  name,
  adapter: "postgres",
  hostname: PG.host,
  port: PG.port,
  database: PG.database,
  credentials: [{ username: PG.username, password: PG.password, default_credential: true, ...credential }],
  ...extra,
});

/** A signed-in page (by link for the admin, by key for others), watched. */
const signedIn = (how) => harnessSignedIn(browser, server, how);

async function pick(page, name) {
  await page.getByRole("button", { name: new RegExp(`^${name}`) }).first().click();
}

async function typeSql(page, sql) {
  const editor = page.getByRole("textbox", { name: "SQL editor" });
  await editor.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.press("Delete");
  await editor.pressSequentially(sql, { delay: 0 });
  await page.keyboard.press("Escape");
}



describe("the console", { concurrency: false }, () => {
  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    // A second link for the admin is not printed: the first is the admin's (single use). Keep
    // it for the admin's context, and sign the admin in again with a key later if needed.
    server.admin = server.link;
    bobKey = server.userKey("bob@example.com", { groups: ["analysts"] });
    db.plain = await createDatabase(postgres("E2E Postgres", { group: "Analytics" }));
    db.reviewed = await createDatabase(
      postgres("E2E Reviewed", { group: "Finance", review_bypass_allowed: true }, { reviews_required: 1 }),
    );
    db.hostile = await createDatabase({
      ...postgres(HOSTILE, { group: HOSTILE, slack_channel: HOSTILE }),
      credentials: [
        { username: PG.username, password: PG.password, default_credential: true },
        { username: `${HOSTILE}"'`, password: "unused" },
      ],
    });
    // A table for the editor to complete, made through the API as bob.
    const made = await server.api("POST", "/api/v1/console/queries", {
      database_id: db.plain.id,
      credential_id: db.plain.credentials[0].id,
      query: "create table if not exists e2e_orders (id int, customer_name text)",
    }, bobKey);
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const ran = await server.api("POST", `/api/v1/console/queries/${made.body.id}/run`, undefined, bobKey);
    assert.equal(ran.status, 200, JSON.stringify(ran.body));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("serves a built console, not the page that says how to build it", async () => {
    const page = await fetch(`${server.base}/console/`);
    const html = await page.text();
    assert.doesNotMatch(html, /console not built/, "the binary was built without the console: run npm run build in console/ first");
    assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self';/);
    assert.equal(page.headers.get("referrer-policy"), "same-origin");
  });

  let admin;
  it("signs the admin in with the one-time link, which leaves the address bar and works once", async () => {
    admin = await signedIn("admin");
    assert.doesNotMatch(admin.page.url(), /sign-in=/, "the token left the address bar");
    const storage = await admin.page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
    assert.doesNotMatch(storage, /dbc_/, "no token in browser storage");
    const again = await browser.newContext({ baseURL: server.base });
    const page = await watchedPage(again);
    await page.goto(server.link);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByText(/used or has expired/).waitFor();
    await again.close();
    await screenshot(admin.page, "query-empty");
    await assertAccessible(admin.page, "axe: the query screen");
  });

  it("runs a query: rows stream into the grid, NULL looks unlike 'NULL', N rows in M ms", async () => {
    const { page } = admin;
    await pick(page, "E2E Postgres");
    await typeSql(page, "select n, null as empty, 'NULL' as text from generate_series(1, 5) as n");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/^5 rows in \d+ ms$/).waitFor();
    const grid = page.getByRole("grid", { name: "Result" });
    assert.equal(await grid.getAttribute("aria-rowcount"), "6");
    const firstRow = grid.locator('[role="row"][aria-rowindex="2"]');
    assert.equal(await firstRow.locator(".null").count(), 1, "NULL is marked");
    assert.equal(await firstRow.getByText("NULL", { exact: true }).count(), 2, "and the text NULL is text");
    // A cell copies its value; the row number copies the row as TSV.
    await admin.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
    await firstRow.getByRole("button", { name: "Copy text of row 1" }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "NULL");
    await firstRow.getByRole("button", { name: "Copy row 1 as TSV" }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "1\t\tNULL");
    await screenshot(page, "query-result");
    await assertAccessible(page, "axe: a result");
  });

  it("runs to CSV: the browser downloads what the server streams, once", async () => {
    const { page } = admin;
    await typeSql(page, "select n, '=cmd' as f from generate_series(1, 3) as n");
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Run to CSV" }).click(),
    ]);
    assert.match(download.suggestedFilename(), /^qry_.*\.csv$/);
    const { readFile } = await import("node:fs/promises");
    const text = await readFile(await download.path(), "utf8");
    assert.equal(text, "n,f\r\n1,=cmd\r\n2,=cmd\r\n3,=cmd\r\n");
    await page.getByText("The CSV download started.").waitFor();
  });

  it("completes table and column names from the schema", async () => {
    const { page } = admin;
    await typeSql(page, "");
    const editor = page.getByRole("textbox", { name: "SQL editor" });
    await editor.pressSequentially("select * from e2e_ord", { delay: 0 });
    await page.getByRole("option", { name: /e2e_orders/ }).waitFor();
    await page.keyboard.press("Enter");
    await editor.pressSequentially(" where e2e_orders.cust", { delay: 0 });
    await page.getByRole("option", { name: /customer_name/ }).waitFor();
    await page.keyboard.press("Escape");
  });

  it("cuts long values, the whole value a click away in a dialog", async () => {
    const { page } = admin;
    await typeSql(page, "select repeat('abc', 100) || 'END' as long");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/^1 row in/).waitFor();
    await page.getByRole("button", { name: "Show the whole value of long (303 characters)" }).click();
    const dialog = page.getByRole("dialog", { name: "Whole value of long" });
    await dialog.getByText(/abcabc.*END$/).waitFor();
    await assertAccessible(page, "axe: the whole-value dialog");
    await dialog.getByRole("button", { name: "Close" }).click();
    await dialog.waitFor({ state: "hidden" });
  });

  it("keeps the editor's draft across a reload", async () => {
    const { page } = admin;
    await typeSql(page, "select 'kept across reloads' as draft");
    await page.getByLabel("Row limit").fill("250");
    await page.reload();
    await page.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
    await page.getByText("select 'kept across reloads' as draft").waitFor();
    assert.equal(await page.getByLabel("Row limit").inputValue(), "250", "the row limit is kept too");
    await page.getByLabel("Row limit").fill("1000");
  });

  it("shows a visible notice when the result is cut at the row limit", async () => {
    const { page } = admin;
    await page.getByLabel("Row limit").fill("3");
    await typeSql(page, "select n from generate_series(1, 10) as n");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.getByText("Truncated at 3 rows", { exact: false }).waitFor();
    await page.getByLabel("Row limit").fill("1000");
  });

  it("ends a run at the timeout asked for", async () => {
    const { page } = admin;
    await page.getByLabel("Timeout (s)").fill("1");
    await typeSql(page, "select pg_sleep(20) as slow");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "timeout of 1 s" }).waitFor();
    await page.getByLabel("Timeout (s)").fill("");
    await assertClean(page, "a timed-out run", [504]);
  });

  it("cancels a running query on the database server, and the history says so", async () => {
    const { page } = admin;
    await typeSql(page, "select pg_sleep(60) as slept");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const bob = bobKey;
    const sleeping = async () => {
      const probe = await server.api("POST", "/api/v1/console/queries", {
        database_id: db.plain.id,
        credential_id: db.plain.credentials[0].id,
        query: "select count(*) as n from pg_stat_activity where query like 'select pg_sleep(60)%'",
      }, bob);
      const ran = await server.api("POST", `/api/v1/console/queries/${probe.body.id}/run`, undefined, bob);
      return Number(ran.body.rows[0][0]);
    };
    await eventually(async () => (await sleeping()) === 1, 10_000, "pg_sleep(60) is running");
    // Leaving the console while it runs asks first; staying keeps it running.
    await page.getByRole("link", { name: "History" }).click();
    await eventually(async () => page.seen.dialogs.length === 1, 5_000, "the leave-page question");
    assert.match(page.seen.dialogs.pop(), /still running/);
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.getByText(/^Cancelled/).waitFor();
    await eventually(async () => (await sleeping()) === 0, 10_000, "pg_sleep(60) left pg_stat_activity");
    await page.getByRole("link", { name: "History" }).click();
    await page.getByRole("heading", { name: "History" }).waitFor();
    const row = page.getByRole("row").filter({ hasText: "pg_sleep(60)" }).first();
    await row.getByText(/cancelled/).waitFor();
    await screenshot(page, "history");
    await assertAccessible(page, "axe: the history");
    await page.getByRole("link", { name: "Query", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
  });

  it("renders hostile names, values and errors as text: no script runs", async () => {
    const { page } = admin;
    await page.getByLabel("Search databases").fill("onerror");
    await pick(page, "<img");
    await typeSql(page, `select '${HOSTILE}' as "${HOSTILE.replaceAll('"', "")}", E'\\u202Eevil\\u0007' as bidi`);
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/^1 row in/).waitFor();
    await page.getByText("⟨U+202E⟩evil␇").waitFor();
    await typeSql(page, `select * from "${HOSTILE.replaceAll('"', "")}"`);
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByRole("alert").filter({ hasText: "onerror" }).waitFor();
    await page.getByLabel("Search databases").fill("");
    assert.equal(await page.locator("img:not(.cm-widgetBuffer), script:not([src])").count(), 0, "no element was made from a value");
    await screenshot(page, "hostile");
    // The credential's name is an option's text; the database's page shows every name as text.
    await page.getByRole("combobox", { name: "Credential" }).selectOption({ label: `${HOSTILE}"'` });
    await page.goto(`/console/databases/${db.hostile.id}`);
    await page.getByRole("heading", { name: /^Database <img/ }).waitFor();
    assert.equal(await page.getByLabel("Slack channel for review requests").inputValue(), HOSTILE);
    assert.equal(await page.locator("img:not(.cm-widgetBuffer), script:not([src])").count(), 0, "no element was made from a value");
    await page.goto("/console/");
    await page.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
    // The statement naming a missing table is refused (422) on purpose.
    await assertClean(page, "hostile content", [422]);
  });

  it("reviews: a member requests one, can't approve it, another user approves, the author runs it", async () => {
    const bob = await signedIn(bobKey);
    const { page } = bob;
    await pick(page, "E2E Reviewed");
    await typeSql(page, `select 42 as answer, '${HOSTILE}' as note`);
    const request = page.getByRole("button", { name: "Request review" });
    // A request says what it is for and why: without them it is not sent.
    await request.click();
    await page.getByText("A review request needs a title: what the query is for.").waitFor();
    await page.getByLabel("Title").fill("The answer");
    await page.getByLabel("Description").fill(`Why: ${HOSTILE}`);
    await request.click();
    await page.getByText(/Review requested/).waitFor();
    await page.getByRole("link", { name: "Open the query" }).click();
    await page.getByRole("heading", { level: 1, name: "The answer" }).waitFor();
    await page.getByText(`Why: ${HOSTILE}`).waitFor();
    const approve = page.getByRole("button", { name: "Approve" });
    assert.equal(await approve.isDisabled(), true, "the author can't approve");
    await page.getByText("You wrote this query: someone else must review it.").first().waitFor();
    const queryUrl = page.url();
    await screenshot(page, "query-page-author");

    const reviewer = admin.page;
    await reviewer.getByRole("link", { name: "Reviews" }).click();
    await reviewer.getByRole("heading", { name: "Waiting for your review" }).waitFor();
    const row = reviewer.getByRole("row").filter({ hasText: "bob@example.com" });
    await screenshot(reviewer, "reviews");
    await assertAccessible(reviewer, "axe: the reviews");
    await row.getByRole("link").click();
    // From the keyboard alone: Tab to the comment, type, Tab to Approve, Enter.
    await reviewer.getByRole("heading", { level: 1, name: "The answer" }).waitFor();
    const focused = (label) => reviewer.evaluate((name) => document.activeElement?.id && document.querySelector(`label[for="${document.activeElement.id}"]`)?.textContent === name, label);
    for (let i = 0; i < 40 && !(await focused("Comment")); i++) await reviewer.keyboard.press("Tab");
    assert.ok(await focused("Comment"), "Tab reaches the comment");
    await reviewer.keyboard.type(`looks fine ${HOSTILE}`);
    await reviewer.keyboard.press("Tab");
    assert.equal(await reviewer.evaluate(() => document.activeElement?.textContent), "Approve");
    await reviewer.keyboard.press("Enter");
    await reviewer.getByText(/approved revision 1/).waitFor();
    await reviewer.getByText(`looks fine ${HOSTILE}`).waitFor();
    await assertAccessible(reviewer, "axe: a query's page");

    await page.goto(queryUrl);
    await page.getByText(/approved revision 1/).waitFor();
    await page.getByRole("button", { name: "Run in the editor" }).click();
    // A query runs once: the run is confirmed first.
    await page.getByRole("dialog").getByRole("button", { name: "Run it" }).click();
    await page.getByText(/^1 row in/).waitFor();
    await assertClean(page, "the review path");
    await assertClean(reviewer, "the reviewer's path");
    await bob.context.close();
  });

  it("reviews: changes asked for in the thread, the author changes the statement, the new revision is approved and runs", async () => {
    const bob = await signedIn(bobKey);
    const { page } = bob;
    await pick(page, "E2E Reviewed");
    await typeSql(page, "select 1 as first_try");
    await page.getByLabel("Title").fill(`Counts ${HOSTILE}`);
    await page.getByLabel("Description").fill("For the weekly report.");
    await page.getByRole("button", { name: "Request review" }).click();
    await page.getByRole("link", { name: "Open the query" }).click();
    await page.waitForURL(/\/console\/queries\/qry_/);
    const title = page.getByRole("heading", { level: 1 });
    await title.waitFor();
    assert.equal(await title.textContent(), `Counts ${HOSTILE}`, "a hostile title stays text");
    const queryUrl = page.url();

    const reviewer = admin.page;
    await reviewer.goto(queryUrl);
    await reviewer.getByLabel("Comment", { exact: true }).fill(`Name the column ${HOSTILE}`);
    await reviewer.getByRole("button", { name: "Request changes" }).click();
    await reviewer.getByText(/asked for changes to revision 1/).waitFor();
    assert.equal(await reviewer.getByRole("button", { name: "Approve" }).isDisabled(), true, "no approval until it changes");
    await reviewer.getByLabel("Add to the thread").fill("The report needs it by Friday.");
    await reviewer.getByRole("button", { name: "Comment", exact: true }).click();
    await reviewer.getByText("The report needs it by Friday.").waitFor();

    await page.goto(queryUrl);
    await page.getByText(`Name the column ${HOSTILE}`).waitFor();
    assert.equal(await page.getByRole("button", { name: "Run in the editor" }).isDisabled(), true);
    // The new revision is a write: its run says how many rows it changed.
    await page.getByLabel("Statement").fill("insert into e2e_orders select g, 'reviewed' from generate_series(1, 3) as g");
    await page.getByRole("button", { name: "Save the changes" }).click();
    await page.getByText(/revision 2/).first().waitFor();
    await screenshot(page, "query-page-thread");
    await assertAccessible(page, "axe: a query's thread");

    await reviewer.goto(queryUrl);
    await reviewer.getByRole("button", { name: "Approve" }).click();
    await reviewer.getByText(/approved revision 2/).waitFor();
    await page.goto(queryUrl);
    await page.getByRole("button", { name: "Run in the editor" }).click();
    // A query runs once: the run is confirmed first, and a write says so.
    const confirm = page.getByRole("dialog");
    await confirm.getByText(/It changes data/).waitFor();
    await confirm.getByRole("button", { name: "Run it" }).click();
    await page.getByText(/^3 rows changed in \d+ ms$/).waitFor();
    await page.goto(queryUrl);
    await page.getByText(/^3 rows changed in \d+ ms, run by/).waitFor();
    await assertClean(page, "the changes path");
    await assertClean(reviewer, "the reviewer's changes path");
    await bob.context.close();
  });

  it("lets a super admin bypass the review with a reason, and shows it", async () => {
    const { page } = admin;
    await page.getByRole("link", { name: "Query", exact: true }).click();
    await pick(page, "E2E Reviewed");
    await typeSql(page, "select 'urgent' as why");
    await page.getByLabel("Title").fill("Urgent");
    await page.getByLabel("Description").fill("The incident needs it now.");
    await page.getByRole("button", { name: "Request review" }).click();
    await page.getByRole("link", { name: "Open the query" }).click();
    await page.getByLabel("Reason for the bypass").fill(`incident 42 ${HOSTILE}`);
    await page.getByRole("button", { name: "Bypass the review and run" }).click();
    await page.getByText(/^1 row in/).waitFor();
    await page.getByRole("link", { name: "History" }).click();
    await page.getByRole("row").filter({ hasText: "urgent" }).first().getByRole("link", { name: "Open" }).click();
    await page.getByText(`incident 42 ${HOSTILE}`).waitFor();
    await screenshot(page, "query-page-bypass");
    await assertClean(page, "the bypass");
  });

  it("history: a super admin reads everyone's queries with their authors; every status filter answers", async () => {
    const { page } = admin;
    await page.getByRole("link", { name: "History" }).click();
    await page.getByRole("heading", { name: "History" }).waitFor();
    await page.getByLabel("Whose").selectOption("all");
    await page.getByRole("table", { name: "Queries you may see" }).waitFor();
    await page.getByRole("row").filter({ hasText: "bob@example.com" }).first().waitFor();
    for (const option of await page.getByLabel("Status").locator("option").all()) {
      const value = await option.getAttribute("value");
      await page.getByLabel("Status").selectOption(value);
      await page.waitForLoadState("networkidle");
      assert.equal(await page.getByRole("alert").filter({ hasText: /./ }).count(), 0, `status ${value || "any"} answers`);
    }
    await assertClean(page, "the history's filters");
  });

  it("manages a database: a failing then passing test connection, create, permissions guarded against a concurrent edit, delete", async () => {
    const { page } = admin;
    await page.getByRole("link", { name: "Databases" }).click();
    await page.getByRole("heading", { name: "Databases" }).waitFor();
    await page.getByRole("link", { name: "E2E Postgres" }).waitFor();
    await screenshot(page, "databases");
    await assertAccessible(page, "axe: the databases list");
    await page.getByRole("link", { name: "New database" }).click();
    await page.getByRole("heading", { name: "New database" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("E2E Form");
    await page.getByLabel("Host", { exact: true }).fill(PG.host);
    await page.getByLabel("Port").fill(String(PG.port));
    await page.getByLabel("Database name").fill(PG.database);
    await page.getByLabel("Username").fill(PG.username);
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Test connection" }).click();
    await page.getByText(/password authentication failed/).waitFor();
    await page.getByLabel("Password").fill(PG.password);
    await page.getByRole("button", { name: "Test connection" }).click();
    await page.getByText("ok: the credential connects").waitFor();
    await screenshot(page, "database-new");
    await assertAccessible(page, "axe: the database form");
    await page.getByRole("button", { name: "Create database" }).click();
    await page.getByRole("heading", { name: /^Database E2E Form/ }).waitFor();
    const id = page.url().split("/").pop();
    assert.match(id, /^db_/);
    const stored = await server.api("GET", `/api/v1/console/databases/${id}`);
    assert.equal(stored.body.credentials[0].username, PG.username);
    assert.equal(JSON.stringify(stored.body).includes(PG.password), false, "no password answered");

    await page.getByRole("button", { name: "Add a grant" }).click();
    await page.getByLabel("User or group").fill("bob@example.com");
    await page.getByRole("button", { name: "Save permissions" }).click();
    await page.getByText("Permissions saved.").waitFor();
    // Another admin changes the permissions meanwhile: the page's next save is refused.
    const other = await server.api("PUT", `/api/v1/console/databases/${id}/permissions`, {
      permissions: [{ subject_kind: "group", subject: "auditors", access: "review" }],
    });
    assert.equal(other.status, 200);
    await page.getByRole("button", { name: "Save permissions" }).click();
    await page.getByText(/Changed by someone else/).waitFor();
    const kept = await server.api("GET", `/api/v1/console/databases/${id}/permissions`);
    assert.equal(kept.body.permissions[0].subject, "auditors", "the other admin's change stands");
    // Data protection, and what the database says of the credential's role.
    await page.getByRole("button", { name: "Add a column rule" }).click();
    await page.getByLabel("Column", { exact: true }).fill("public.e2e_orders.customer_name");
    await page.getByRole("button", { name: "Save data protection" }).click();
    await page.getByText(/^Data protection saved/).waitFor();
    await page.getByRole("button", { name: "Check the credentials' roles" }).click();
    await page.getByRole("list", { name: "Credentials checked against the policies" }).getByText(/refused/).waitFor();
    await page.getByText(/customer_name/).first().waitFor();
    await screenshot(page, "database-edit");

    await page.getByRole("button", { name: "Delete this database…" }).click();
    const dialog = page.getByRole("dialog", { name: /Delete E2E Form/ });
    await dialog.getByText(/1 credential\(s\) \(checker\)/).waitFor();
    await assertAccessible(page, "axe: the delete dialog");
    await dialog.getByRole("button", { name: "Delete for good" }).click();
    await page.getByRole("heading", { name: "Databases" }).waitFor();
    assert.equal((await server.api("GET", `/api/v1/console/databases/${id}`)).status, 404);
    await assertClean(page, "the databases screens", [401, 403, 412]);
  });

  it("refuses cookie requests without the header or from another origin (CSRF)", async () => {
    const cookies = await admin.context.cookies();
    const session = cookies.find((c) => c.name === "dbconsole_session");
    assert.ok(session, "a session cookie");
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, "Lax");
    const cookie = `${session.name}=${session.value}`;
    const me = (headers) => fetch(`${server.base}/api/v1/console/me`, { headers: { cookie, ...headers } });
    assert.equal((await me({})).status, 403, "no header: the cookie counts for nothing");
    assert.equal((await me({ "x-dbconsole-request": "1" })).status, 200);
    const write = (origin) =>
      fetch(`${server.base}/api/v1/console/queries`, {
        method: "POST",
        headers: { cookie, "x-dbconsole-request": "1", "content-type": "application/json", ...(origin ? { origin } : {}) },
        body: JSON.stringify({ database_id: db.plain.id, credential_id: db.plain.credentials[0].id, query: "select 1" }),
      });
    assert.equal((await write("http://evil.example")).status, 403);
    assert.equal((await write(null)).status, 403);
    // The control: the same write from the console's own origin is the admin's.
    const same = await write(server.base);
    assert.equal(same.status, 200, "a same-origin write with the header is allowed");
    assert.match((await same.json()).id, /^qry_/);
    const preflight = await fetch(`${server.base}/api/v1/console/me`, { method: "OPTIONS", headers: { origin: "http://evil.example", "access-control-request-method": "GET" } });
    assert.equal(preflight.headers.get("access-control-allow-origin"), null, "no CORS grant");
  });

  it("signs out: the session ends on the server and the drafts are forgotten", async () => {
    const { page, context } = admin;
    const cookie = (await context.cookies()).find((c) => c.name === "dbconsole_session");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await screenshot(page, "sign-in");
    await assertAccessible(page, "axe: the sign-in screen");
    const drafts = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("dbconsole.")));
    assert.deepEqual(drafts, []);
    const after = await fetch(`${server.base}/api/v1/console/me`, { headers: { cookie: `${cookie.name}=${cookie.value}`, "x-dbconsole-request": "1" } });
    assert.equal(after.status, 401, "the old cookie is refused");
    await assertClean(page, "sign-out");
    await context.close();
  });

  it("keeps the page a person opened through signing in (a deep link)", async () => {
    const key = server.userKey("dora@example.com");
    const context = await browser.newContext({ baseURL: server.base });
    const page = await context.newPage();
    await page.goto("/console/history");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.match(page.url(), /\/console\/sign-in\?next=history$/);
    await page.getByText("Open the invitation link a super admin gave you", { exact: false }).waitFor();
    assert.equal(await page.getByText("keys create").count(), 0, "no operator's command for people");
    await page.getByLabel("Key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: /^History/ }).waitFor();
    assert.match(page.url(), /\/console\/history$/);
    await context.close();
    // A `next` that leaves the app lands on the app's first page instead.
    const other = await browser.newContext({ baseURL: server.base });
    const second = await other.newPage();
    await second.goto("/console/sign-in?next=%2F%2Fevil.example%2Fx");
    await second.getByLabel("Key").fill(key);
    await second.getByRole("button", { name: "Sign in" }).click();
    await second.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
    assert.equal(new URL(second.url()).origin, server.base);
    await other.close();
  });

  it("lists a person's sessions and ends another browser's from the account page", async () => {
    const user = "erin@example.com";
    const key = server.userKey(user);
    const laptop = await signedIn(key);
    const phone = await signedIn(key);
    await laptop.page.getByRole("link", { name: user }).click();
    await laptop.page.getByRole("heading", { level: 1, name: "Your account" }).waitFor();
    const sessions = laptop.page.getByRole("table", { name: "Your sessions, newest first" });
    await sessions.getByText("This browser").waitFor();
    assert.equal(await sessions.getByText("Another browser").count(), 1);
    assert.doesNotMatch(await sessions.innerText(), /dbc_/, "no secret on the page");
    await screenshot(laptop.page, "account-sessions");
    await assertAccessible(laptop.page, "axe: the account page");
    await sessions.getByRole("button", { name: /^End it/ }).click();
    await laptop.page.getByText("That session has ended").waitFor({ state: "attached" });
    // The list is read again after the announcement: it goes once that answer is drawn.
    await sessions.getByText("Another browser").waitFor({ state: "detached" });
    // The phone's next request finds its session ended.
    await phone.page.getByRole("link", { name: "History" }).click();
    await phone.page.getByRole("heading", { name: "Sign in" }).waitFor();
    await assertClean(laptop.page, "the account page");
    await laptop.context.close();
    await phone.context.close();
  });

  it("shows the Sign in screen at the next request once the session has ended on the server", async () => {
    const user = "carol@example.com";
    const key = server.userKey(user);
    const { page, context } = await signedIn(key);
    // The server ends the session, as it ends an idle or expired one: the browser keeps its
    // cookie, which the server refuses from now on (401, "the session has ended").
    const ended = spawnSync(BINARY, ["sessions", "revoke", "--user", user, "--data-dir", join(server.dataDir, "data")], { encoding: "utf8" });
    assert.equal(ended.status, 0, `sessions revoke: ${ended.stdout}${ended.stderr}`);
    assert.ok((await context.cookies()).some((c) => c.name === "dbconsole_session"), "the browser still holds the cookie");
    await page.getByRole("link", { name: "History" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    await assertClean(page, "a session ended on the server", [401]);
    // Signing in again works from there, and lands where the person was going.
    await page.getByLabel("Key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: /^History/ }).waitFor();
    await assertClean(page, "signed in again", [401]);
    await context.close();
  });

  it("shows a hostile user name as text", async () => {
    const key = server.userKey(`${HOSTILE}@example.com`);
    const { page, context } = await signedIn(key);
    await page.getByText(`${HOSTILE}@example.com`.toLowerCase()).first().waitFor();
    const made = await page.locator("img:not(.cm-widgetBuffer), script:not([src])").evaluateAll((els) => els.map((e) => `${e.tagName} ${e.className}`));
    assert.deepEqual(made, [], "no element made from the name");
    await assertClean(page, "a hostile user name");
    await context.close();
  });

  it("signs in and runs from the keyboard alone", async () => {
    const context = await browser.newContext({ baseURL: server.base });
    const page = await watchedPage(context);
    await page.goto("/console/");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    for (let i = 0; i < 12 && !(await page.getByLabel("Key").evaluate((el) => el === document.activeElement)); i++) {
      await page.keyboard.press("Tab");
    }
    await page.keyboard.type(bobKey);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
    // The editor has the focus after sign-in.
    await page.keyboard.type("select 7 as seven");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/^1 row in/).waitFor();
    const wrong = await browser.newContext({ baseURL: server.base });
    const refused = await watchedPage(wrong);
    await refused.goto("/console/");
    await refused.getByLabel("Key").fill("dbc_ak_not_a_key");
    await refused.keyboard.press("Enter");
    await refused.getByRole("alert").filter({ hasText: "not valid" }).waitFor();
    await assertClean(page, "keyboard path");
    await context.close();
    await wrong.close();
  });
});
