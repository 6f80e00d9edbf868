// Dashboards in a real browser against the real server (redb), a real PostgreSQL and a local
// workflow endpoint standing in for the receiver. Each rule of the interface's row actions is its
// own case: a hidden action is absent from the DOM; one button per row per shown action; the
// prompt modal holds exactly the prompted mappings, labelled by prompt or by key (null, "" and
// "   "); Cancel and Escape start nothing; Submit starts exactly one workflow with the clicked
// row's values (also after scrolling the virtualised grid) and the typed ones. Then row tokens
// (a changed one is refused and the panel runs again), progress on the row (delivered, failed
// with the reason), inputs in the URL, a failing panel beside working ones, who sees what,
// hostile text, accessibility and the keyboard. Screenshots under target/console-screenshots.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import {
  PG,
  assertAccessible,
  assertClean as harnessAssertClean,
  signedIn as harnessSignedIn,
  eventually,
  launchBrowser,
  screenshot,
  startServer,
} from "./harness.mjs";

const HOSTILE = `<img src=x onerror=alert(1)></script><script>alert(2)</script>`;
const ROWS = 300;

let server;
let browser;
let receiver;
let bobKey;
const dash = {};

/** A workflow endpoint that records each request; workflow `broken` answers 500. */
async function startReceiver() {
  const received = [];
  const http = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      let json;
      try {
        json = JSON.parse(body);
      } catch {
        json = body;
      }
      received.push({ path: request.url, body: json });
      const broken = request.url?.includes("/broken");
      response.writeHead(broken ? 500 : 200, { "content-type": "application/json" });
      response.end(broken ? `{"error":"refund service down ${HOSTILE}"}` : "{}");
    });
  });
  await new Promise((done) => http.listen(0, "127.0.0.1", done));
  return { http, received, url: `http://127.0.0.1:${http.address().port}/run/{workflow_id}` };
}

const postgres = (name, extra = {}) => ({
  name,
  adapter: "postgres",
  hostname: PG.host,
  port: PG.port,
  database: PG.database,
  credentials: [{ username: PG.username, password: PG.password, default_credential: true }],
  ...extra,
});

async function created(method, path, body) {
  const made = await server.api(method, path, body);
  assert.equal(made.status, 200, JSON.stringify(made.body));
  return made.body;
}

const query = (credential, sql) => ({ __type__: "query", query: sql, credential_id: credential });

/** A signed-in page (by link for the admin, by key for others), watched. */
const signedIn = (how) => harnessSignedIn(browser, server, how);

const assertClean = (page, what, provoked = [401, 403, 422]) => harnessAssertClean(page, what, provoked);


/** The panel section titled `title`. */
function panel(page, title) {
  return page.getByRole("region", { name: title });
}

/** The grid row (role row) of result row `n` (1-based) of a panel. */
function row(section, n) {
  return section.locator(`[role="row"][aria-rowindex="${n + 1}"]`);
}

/** What the receiver got for `workflow` since `from`. */
function receivedFor(workflow, from = 0) {
  return receiver.received.slice(from).filter((r) => r.path === `/run/${workflow}`);
}

async function openDashboard(page, dashboard, search = "") {
  await page.goto(`/console/dashboards/${dashboard.id}${search}`);
  await page.getByRole("heading", { level: 1, name: dashboard.name }).waitFor();
}

describe("dashboards", { concurrency: false }, () => {
  let admin;

  before(async () => {
    receiver = await startReceiver();
    server = await startServer(["--workflow-url", receiver.url, "--workflow-secret", "e2e-workflow-secret-0123456789"], {
      DBCONSOLE_DELIVERY_ATTEMPTS: "2",
      DBCONSOLE_DELIVERY_BACKOFF_MS: "50",
    });
    browser = await launchBrowser();
    bobKey = server.userKey("bob@example.com");
    const open = await created("POST", "/api/v1/console/databases", postgres("E2E Dash Postgres"));
    const closed = await created("POST", "/api/v1/console/databases", postgres("E2E Dash Closed", { restrict_access: true }));
    const cred = open.credentials[0].id;
    const closedCred = closed.credentials[0].id;
    dash.orders = await created("POST", "/api/v1/dashboards", {
      name: "Orders",
      restricted_access: false,
      panels: [
        {
          title: "Recent orders",
          details: query(cred, `SELECT n AS id, 'customer ' || n AS customer_name, n * 1.5 AS amount FROM generate_series(1, ${ROWS}) AS n ORDER BY n`),
          actions: [
            {
              label: "Refund",
              workflow_id: "refund",
              input_mappings: [
                { workflow_input_key: "order_id", column: "id" },
                { workflow_input_key: "amount", column: "amount" },
                { workflow_input_key: "reason", prompt_user: true, prompt: "Why refund?" },
                { workflow_input_key: "note", prompt_user: true, prompt: null },
                { workflow_input_key: "ticket", prompt_user: true, prompt: "" },
                { workflow_input_key: "agent", prompt_user: true, prompt: "   " },
              ],
            },
            { label: null, workflow_id: null, input_mappings: [{ workflow_input_key: "x", column: "id" }] },
            { label: null, workflow_id: "notify", input_mappings: [{ workflow_input_key: "customer", column: "customer_name" }] },
            { label: "Label only", workflow_id: null, input_mappings: [] },
            { label: "Escalate", workflow_id: "broken", input_mappings: [{ workflow_input_key: "order_id", column: "id" }] },
            { label: "Mail", workflow_id: "mail", input_mappings: [{ workflow_input_key: "to", column: "email" }] },
          ],
        },
        {
          title: "Greeting",
          inputs: [{ key: "customer", description: "Whom to greet" }],
          details: query(cred, "SELECT 'hello ' || ${customer}::text AS greeting"),
        },
        { title: "Failing", details: query(cred, "SELECT * FROM e2e_no_such_table") },
        { title: "Closed numbers", details: query(closedCred, "SELECT 42 AS answer") },
      ],
    });
    dash.closed = await created("POST", "/api/v1/dashboards", {
      name: "Closed dashboard",
      restricted_access: true,
      panels: [{ title: "Secret", details: query(closedCred, "SELECT 1 AS one") }],
    });
    dash.hostile = await created("POST", "/api/v1/dashboards", {
      name: HOSTILE,
      restricted_access: false,
      panels: [
        {
          title: HOSTILE,
          inputs: [{ key: "k", description: HOSTILE }],
          details: query(cred, `SELECT '${HOSTILE}' || \${k}::text AS "${HOSTILE.replaceAll('"', "")}"`),
          actions: [
            {
              label: HOSTILE,
              workflow_id: HOSTILE.replaceAll("/", ""),
              input_mappings: [{ workflow_input_key: "why", prompt_user: true, prompt: HOSTILE }],
            },
          ],
        },
      ],
    });
  });

  after(async () => {
    await editor?.context.close();
    await browser?.close();
    await server?.stop();
    receiver?.http.close();
  });

  it("lists the dashboards the caller may see", async () => {
    admin = await signedIn("admin");
    const { page } = admin;
    await page.getByRole("link", { name: "Dashboards" }).click();
    await page.getByRole("heading", { level: 1, name: "Dashboards" }).waitFor();
    for (const name of ["Orders", "Closed dashboard"]) await page.getByRole("link", { name }).waitFor();
    await screenshot(page, "dashboards-list");
    await assertAccessible(page, "the dashboard list");
    await assertClean(page, "the dashboard list");
  });

  it("renders no element for an action with neither label nor workflow_id", async () => {
    const { page } = admin;
    await openDashboard(page, dash.orders);
    const orders = panel(page, "Recent orders");
    await row(orders, 1).waitFor();
    const hidden = dash.orders.panels[0].actions[1].id;
    assert.equal(await page.locator(`[data-action="${hidden}"]`).count(), 0, "the hidden action is not in the DOM");
    await assertClean(page, "the hidden action");
  });

  it("shows one button per row per shown action, in the actions' order", async () => {
    const { page } = admin;
    const orders = panel(page, "Recent orders");
    const visibleRows = await orders.locator('[role="row"]:not(.grid-header)').count();
    assert.ok(visibleRows > 3, `rows are painted (${visibleRows})`);
    for (let n = 1; n <= 3; n += 1) {
      const labels = await row(orders, n).locator("button.row-action").allTextContents();
      assert.deepEqual(labels, ["Refund", "Start notify", "Label only", "Escalate", "Mail"], `row ${n}`);
    }
    const labelOnly = row(orders, 1).getByRole("button", { name: /^Label only/ });
    assert.equal(await labelOnly.isDisabled(), true, "an action without a workflow is disabled");
    assert.match((await labelOnly.getAttribute("aria-label")) ?? "", /no workflow/);
    await orders.getByText(/Label only: This action has no workflow/).waitFor();
    // A mapping on a column the result does not have (hidden) disables its action, saying why.
    const mail = row(orders, 1).getByRole("button", { name: /^Mail/ });
    assert.equal(await mail.isDisabled(), true);
    await orders.getByText(/Mail: Its input to takes column email, which the result does not have/).waitFor();
    await screenshot(page, "dashboard-with-actions");
    await assertAccessible(page, "a dashboard with actions");
  });

  it("opens a modal with one field per prompted mapping, labelled by prompt or by key", async () => {
    const { page } = admin;
    const orders = panel(page, "Recent orders");
    const before = receiver.received.length;
    await row(orders, 2).getByRole("button", { name: /^Refund/ }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    const labels = await dialog.locator("label").allTextContents();
    assert.deepEqual(labels, ["Why refund?", "note", "ticket", "agent"], "the prompted mappings, the blank prompts by key");
    assert.equal(await dialog.locator("input").count(), 4, "no other field");
    await screenshot(page, "dashboard-prompt-modal");
    await assertAccessible(page, "the prompt modal");
    // Cancel starts nothing.
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    // Escape starts nothing either, and the focus is back on the button.
    await row(orders, 2).getByRole("button", { name: /^Refund/ }).click();
    await page.getByRole("dialog").waitFor();
    await page.keyboard.press("Escape");
    await page.getByRole("dialog").waitFor({ state: "detached" });
    const focused = await page.evaluate(() => document.activeElement?.getAttribute("aria-label"));
    assert.match(focused ?? "", /^Refund, row 2/);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(receiver.received.length, before, "Cancel and Escape started no workflow");
    await assertClean(page, "cancelled prompts");
  });

  it("starts exactly one workflow with the clicked row's values and the typed ones, also after scrolling", async () => {
    const { page } = admin;
    const orders = panel(page, "Recent orders");
    const before = receiver.received.length;
    // Scroll the virtualised grid far down: row 250 is painted only then.
    const n = 250;
    await orders.locator(".grid-scroll").evaluate((el, y) => el.scrollTo(0, y), (n - 3) * 30);
    await row(orders, n).waitFor();
    await row(orders, n).getByRole("button", { name: /^Refund/ }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("Why refund?").fill("damaged in transit");
    await dialog.getByLabel("note").fill("n");
    await dialog.getByLabel("ticket").fill("T-1");
    await dialog.getByLabel("agent").fill("ann");
    await dialog.getByRole("button", { name: "Submit" }).click();
    const got = await eventually(() => receivedFor("refund", before).length === 1 && receivedFor("refund", before), 10_000, "the refund workflow");
    assert.deepEqual(got[0].body.inputs, {
      order_id: n,
      amount: `${(n * 1.5).toFixed(1)}`,
      reason: "damaged in transit",
      note: "n",
      ticket: "T-1",
      agent: "ann",
    });
    await row(orders, n).getByText(/Refund: delivered/).waitFor();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(receivedFor("refund", before).length, 1, "exactly one");
    // An action without prompts starts on click, with the row's column.
    const notify = receiver.received.length;
    await row(orders, n).getByRole("button", { name: /^Start notify/ }).click();
    const sent = await eventually(() => receivedFor("notify", notify)[0], 10_000, "the notify workflow");
    assert.deepEqual(sent.body.inputs, { customer: `customer ${n}` });
    await assertClean(page, "started workflows");
  });

  it("shows a failed delivery with its reason on the row, as text", async () => {
    const { page } = admin;
    const orders = panel(page, "Recent orders");
    await orders.locator(".grid-scroll").evaluate((el) => el.scrollTo(0, 0));
    await row(orders, 3).getByRole("button", { name: /^Escalate/ }).click();
    await row(orders, 3).getByText(/Escalate: failed: .*500/).waitFor({ timeout: 30_000 });
    await assertClean(page, "a failed delivery");
  });

  it("refuses a changed row token, starting nothing, and runs the panel again", async () => {
    const { page } = admin;
    const orders = panel(page, "Recent orders");
    const before = receiver.received.length;
    let runs = 0;
    await page.route("**/panels/*/run", async (route) => {
      runs += 1;
      await route.continue();
    });
    await page.route("**/actions/*/trigger", async (route) => {
      const body = JSON.parse(route.request().postData() ?? "{}");
      body.row_token = `${body.row_token.slice(0, -4)}AAAA`;
      await route.continue({ postData: JSON.stringify(body) });
    });
    await row(orders, 1).getByRole("button", { name: /^Start notify/ }).click();
    await orders.getByText(/Nothing was started: this row's token/).waitFor();
    await eventually(() => runs >= 1, 10_000, "the panel ran again");
    await page.unrouteAll();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(receiver.received.length, before, "nothing reached the workflow endpoint");
    const deliveries = await server.api("GET", "/api/v1/console/deliveries?limit=500");
    assert.equal(deliveries.body.data.length, 3, "only the three starts before: refund, notify, escalate");
    await assertClean(page, "a changed token");
  });

  it("refuses made-up, changed, foreign, stale and expired row tokens sent with the browser's own session, storing nothing", async () => {
    const { page } = admin;
    const before = receiver.received.length;
    const deliveriesBefore = (await server.api("GET", "/api/v1/console/deliveries?limit=500")).body.data.length;
    /** A request from the page itself: its session cookie and the console's header. */
    const fromPage = (method, path, body) =>
      page.evaluate(
        async ({ method, path, body }) => {
          const response = await fetch(path, {
            method,
            headers: { "x-dbconsole-request": "1", "content-type": "application/json" },
            body: JSON.stringify(body),
          });
          return { status: response.status, body: await response.json() };
        },
        { method, path, body },
      );
    const orders = dash.orders;
    const recent = orders.panels[0];
    const notify = recent.actions[2];
    const run = await fromPage("POST", `/api/v1/dashboards/${orders.id}/panels/${recent.id}/run`, { row_tokens: true });
    assert.equal(run.status, 200);
    const token = run.body.row_tokens[0];
    const trigger = (dashboard, panel, action, rowToken) =>
      fromPage("POST", `/api/v1/dashboards/${dashboard.id}/panels/${panel.id}/actions/${action.id}/trigger`, { row_token: rowToken, prompted: {} });
    const refusedWith = async (answer, why) => {
      assert.equal(answer.status, 422, JSON.stringify(answer.body));
      assert.match(answer.body.errors.row_token.join(" "), why);
    };
    await refusedWith(await trigger(orders, recent, notify, "made-up"), /not a row token/);
    await refusedWith(await trigger(orders, recent, notify, `${token.slice(0, 20)}${token[20] === "A" ? "B" : "A"}${token.slice(21)}`), /not a row token/);
    // Another panel's: the hostile dashboard's prompted action checks the token it is given.
    const hostilePanel = dash.hostile.panels[0];
    const other = await fromPage("POST", `/api/v1/dashboards/${dash.hostile.id}/panels/${hostilePanel.id}/actions/${hostilePanel.actions[0].id}/trigger`, {
      row_token: token,
      prompted: { why: "x" },
    });
    await refusedWith(other, /another panel/);
    // Another caller's: bob's token, from his own key.
    const bobs = await server.api("POST", `/api/v1/dashboards/${orders.id}/panels/${recent.id}/run`, { row_tokens: true }, bobKey);
    assert.equal(bobs.status, 200, JSON.stringify(bobs.body));
    await refusedWith(await trigger(orders, recent, notify, bobs.body.row_tokens[0]), /another caller/);
    // Stale: the panel changed since its run.
    const panelCopy = JSON.parse(JSON.stringify(orders.panels[0]));
    delete panelCopy.id;
    for (const action of panelCopy.actions) delete action.id;
    const copy = await created("POST", "/api/v1/dashboards", { name: "Stale tokens", restricted_access: false, panels: [panelCopy] });
    const copied = copy.panels[0];
    const fresh = await fromPage("POST", `/api/v1/dashboards/${copy.id}/panels/${copied.id}/run`, { row_tokens: true });
    const edited = JSON.parse(JSON.stringify(copy.panels));
    edited[0].details.query = `${edited[0].details.query} LIMIT 5`;
    assert.equal((await server.api("PUT", `/api/v1/dashboards/${copy.id}`, { panels: edited })).status, 200);
    await refusedWith(await trigger(copy, copied, copied.actions[2], fresh.body.row_tokens[0]), /panel changed/);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(receiver.received.length, before, "nothing reached the workflow endpoint");
    assert.equal((await server.api("GET", "/api/v1/console/deliveries?limit=500")).body.data.length, deliveriesBefore, "nothing stored");
    await assertClean(page, "refused tokens");

    // Expired: a server whose tokens live a second.
    const brief = await startServer(["--row-token-life-secs", "1", "--workflow-url", receiver.url, "--workflow-secret", "e2e-workflow-secret-0123456789"]);
    try {
      const db = (await brief.api("POST", "/api/v1/console/databases", postgres("Brief"))).body;
      const board = (
        await brief.api("POST", "/api/v1/dashboards", {
          name: "Brief",
          restricted_access: false,
          panels: [
            {
              title: "One",
              details: query(db.credentials[0].id, "SELECT 1 AS id"),
              actions: [{ label: "Go", workflow_id: "go", input_mappings: [{ workflow_input_key: "id", column: "id" }] }],
            },
          ],
        })
      ).body;
      const context = await browser.newContext({ baseURL: brief.base });
      const briefPage = await context.newPage();
      await briefPage.goto(brief.link);
      await briefPage.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
      const p = board.panels[0];
      const made = await briefPage.evaluate(async (path) => {
        const response = await fetch(path, { method: "POST", headers: { "x-dbconsole-request": "1", "content-type": "application/json" }, body: '{"row_tokens":true}' });
        return response.json();
      }, `/v1/dashboards/${board.id}/panels/${p.id}/run`);
      await new Promise((r) => setTimeout(r, 2100));
      const late = await briefPage.evaluate(
        async ({ path, token }) => {
          const response = await fetch(path, {
            method: "POST",
            headers: { "x-dbconsole-request": "1", "content-type": "application/json" },
            body: JSON.stringify({ row_token: token, prompted: {} }),
          });
          return { status: response.status, body: await response.json() };
        },
        { path: `/v1/dashboards/${board.id}/panels/${p.id}/actions/${p.actions[0].id}/trigger`, token: made.row_tokens[0] },
      );
      await refusedWith(late, /expired/);
      assert.equal((await brief.api("GET", "/api/v1/console/deliveries")).body.data.length, 0);
      await context.close();
    } finally {
      await brief.stop();
    }
  });

  it("keeps inputs in the URL: a panel with inputs runs on Apply, and on open when the URL fills them", async () => {
    const { page } = admin;
    const greeting = panel(page, "Greeting");
    await page.getByText("Whom to greet").waitFor();
    await greeting.getByText(/Fill in customer above/).waitFor();
    assert.equal(await greeting.locator('[role="row"]:not(.grid-header)').count(), 0, "not run before Apply");
    await page.getByLabel("customer", { exact: true }).fill("Ada");
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    await row(greeting, 1).getByText("hello Ada").waitFor();
    assert.match(page.url(), /in\.customer=Ada/);
    await page.reload();
    await row(panel(page, "Greeting"), 1).getByText("hello Ada").waitFor();
    assert.equal(await page.getByLabel("customer", { exact: true }).inputValue(), "Ada");
    await assertClean(page, "inputs in the URL");
  });

  it("runs a panel to CSV with its inputs, through a ticket the server streams", async () => {
    const { page } = admin;
    const greeting = panel(page, "Greeting");
    const [download] = await Promise.all([page.waitForEvent("download"), greeting.getByRole("button", { name: "Run to CSV" }).click()]);
    const path = await download.path();
    const { readFileSync } = await import("node:fs");
    assert.equal(readFileSync(path, "utf8"), "greeting\r\nhello Ada\r\n");
    assert.doesNotMatch(download.url(), /row_token/);
    await assertClean(page, "a panel's CSV");
  });

  it("shows a failing panel's error in place and leaves the others working", async () => {
    const { page } = admin;
    await panel(page, "Failing").getByRole("alert").getByText(/e2e_no_such_table/).waitFor();
    await row(panel(page, "Recent orders"), 1).waitFor();
    await row(panel(page, "Closed numbers"), 1).getByText("42").waitFor();
    await assertClean(page, "a failing panel");
  });

  it("refuses a restricted dashboard to a member without access, in the list and by URL; a restricted panel says no access", async () => {
    const bob = await signedIn(bobKey);
    const { page } = bob;
    await page.getByRole("link", { name: "Dashboards" }).click();
    await page.getByRole("link", { name: "Orders" }).waitFor();
    assert.equal(await page.getByRole("link", { name: "Closed dashboard" }).count(), 0, "not listed");
    await page.goto(`/console/dashboards/${dash.closed.id}`);
    await page.getByRole("alert").getByText(/restricts access/).waitFor();
    await openDashboard(page, dash.orders);
    await panel(page, "Closed numbers").getByRole("alert").getByText(/^No access/).waitFor();
    await row(panel(page, "Recent orders"), 1).waitFor();
    await assertClean(page, "a member's dashboards");
    await bob.context.close();
  });

  it("renders hostile names, labels, prompts, descriptions, columns and values as text", async () => {
    const { page } = admin;
    await openDashboard(page, dash.hostile);
    const section = page.locator("section.panel");
    await page.locator("input[name=k]").fill(HOSTILE);
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    await section.locator('[role="row"][aria-rowindex="2"]').waitFor();
    await section.locator('[role="row"][aria-rowindex="2"] button.row-action').click();
    await page.getByRole("dialog").waitFor();
    assert.equal(await page.getByRole("dialog").locator("label").textContent(), HOSTILE);
    await page.keyboard.press("Escape");
    assert.equal(await page.locator("img").count(), 0, "no element from the values");
    assert.equal(await page.locator("main script").count(), 0);
    await assertClean(page, "hostile dashboard");
  });

  it("works from the keyboard alone: open the modal, fill it, submit", async () => {
    const { page } = admin;
    await openDashboard(page, dash.orders);
    const orders = panel(page, "Recent orders");
    await row(orders, 4).waitFor();
    const before = receiver.received.length;
    await row(orders, 4).getByRole("button", { name: /^Refund/ }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("dialog").waitFor();
    for (const text of ["kbd", "n", "t", "a"]) {
      await page.keyboard.type(text);
      await page.keyboard.press("Tab");
    }
    // The focus stays in the modal: Tab reached Submit.
    const onSubmit = await page.evaluate(() => document.activeElement?.textContent);
    assert.equal(onSubmit, "Submit");
    await page.keyboard.press("Enter");
    const got = await eventually(() => receivedFor("refund", before)[0], 10_000, "the keyboard's refund");
    assert.equal(got.body.inputs.order_id, 4);
    assert.equal(got.body.inputs.reason, "kbd");
    await assertClean(page, "the keyboard");
    await admin.context.close();
  });

  let editor;
  it("builds a dashboard in the editor: a panel, its input, a test run, a row action chosen from its columns", async () => {
    editor = await signedIn(server.userKey("editor@example.com", { role: "super-admin", scope: "full" }));
    const { page } = editor;
    await page.goto("/console/dashboards");
    await page.getByRole("link", { name: "New dashboard" }).click();
    await page.getByRole("heading", { level: 1, name: "New dashboard" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Built in the browser");
    await page.getByRole("button", { name: "Add a panel" }).click();
    const box = page.locator("section.edit-panel").first();
    await box.getByLabel("Title", { exact: true }).fill("Numbers");
    await box.getByLabel("Runs as", { exact: true }).selectOption({ label: `E2E Dash Postgres — ${PG.username}` });
    const sql = box.getByRole("textbox", { name: /^Query of panel/ });
    await sql.click();
    await sql.pressSequentially("SELECT n AS id, ${upto}::text AS upto FROM generate_series(1, 3) AS n", { delay: 0 });
    await page.keyboard.press("Escape");
    await box.locator(".cm-input").first().waitFor();
    await box.getByText(/names inputs the panel does not declare: upto/).waitFor();
    await box.getByRole("button", { name: "Add an input" }).click();
    assert.equal(await box.getByLabel("Key", { exact: true }).inputValue(), "upto", "the undeclared input is offered");
    await box.getByLabel("Description", { exact: true }).fill("How far");
    await box.getByLabel("Test value", { exact: true }).fill("3");
    await box.getByRole("button", { name: "Test run" }).click();
    await eventually(async () => /Test run|rror|:/.test((await box.locator(".test-result").textContent()) ?? ""), 10_000, "the test run's answer");
    assert.match((await box.locator(".test-result").textContent()) ?? "", /Test run: 3 row/);
    await box.getByRole("button", { name: "Add a row action" }).click();
    await box.getByLabel("Button label", { exact: true }).fill("Ping");
    await box.getByLabel("Workflow id", { exact: true }).fill("ping");
    await box.getByRole("button", { name: "Add a mapping" }).click();
    await box.getByLabel("Workflow input key", { exact: true }).fill("number");
    await box.getByLabel("Column of the clicked row", { exact: true }).fill("id");
    const options = await box.locator("datalist option").evaluateAll((list) => list.map((o) => o.getAttribute("value")));
    assert.deepEqual(options, ["id", "upto"], "the test run's columns are offered");
    await screenshot(page, "dashboard-editor");
    await assertAccessible(page, "the dashboard editor");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { level: 1, name: "Built in the browser" }).waitFor();
    const numbers = panel(page, "Numbers");
    await page.getByLabel("upto", { exact: true }).fill("2");
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    await row(numbers, 3).waitFor();
    assert.equal(await numbers.getByRole("button", { name: /^Ping/ }).count(), 3);
    const before = receiver.received.length;
    await row(numbers, 2).getByRole("button", { name: /^Ping/ }).click();
    const got = await eventually(() => receivedFor("ping", before)[0], 10_000, "the ping workflow");
    assert.deepEqual(got.body.inputs, { number: 2 });
    await assertClean(page, "the editor");
  });

  it("saves with If-Match: a change made meanwhile is shown and nothing is overwritten", async () => {
    const { page } = editor;
    const listed = await server.api("GET", "/api/v1/dashboards?name_prefix=Built");
    const built = listed.body.data[0];
    await page.getByRole("link", { name: "Edit", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Edit dashboard" }).waitFor();
    // Someone else renames it meanwhile.
    const other = await server.api("PUT", `/api/v1/dashboards/${built.id}`, { name: "Renamed elsewhere" });
    assert.equal(other.status, 200);
    await page.getByLabel("Name", { exact: true }).fill("Mine");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("alert").getByText(/Nothing was saved\. Changed by someone else/).waitFor();
    const after = await server.api("GET", `/api/v1/dashboards/${built.id}`);
    assert.equal(after.body.name, "Renamed elsewhere", "their change stands");
    assert.deepEqual(after.body.panels, built.panels);
    await assertClean(page, "a conflicting save", [401, 403, 412, 422]);
  });

  it("reorders by keyboard, and deletes behind a confirmation", async () => {
    const { page } = editor;
    await page.goto("/console/dashboards/new");
    await page.getByLabel("Name", { exact: true }).fill("Two panels");
    for (const title of ["First", "Second"]) {
      await page.getByRole("button", { name: "Add a panel" }).click();
      const box = page.locator("section.edit-panel").last();
      await box.getByLabel("Title", { exact: true }).fill(title);
      await box.getByLabel("Runs as", { exact: true }).selectOption({ label: `E2E Dash Postgres — ${PG.username}` });
      const sql = box.getByRole("textbox", { name: /^Query of panel/ });
      await sql.click();
      await sql.pressSequentially(`SELECT '${title}' AS t`, { delay: 0 });
      await page.keyboard.press("Escape");
    }
    await page.getByRole("button", { name: "Move panel 2 up" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { level: 1, name: "Two panels" }).waitFor();
    const titles = await page.locator("section.panel .panel-head h2").allTextContents();
    assert.deepEqual(titles, ["Second", "First"]);
    await page.getByRole("button", { name: "Delete…" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText(/can't be undone/).waitFor();
    await dialog.getByRole("button", { name: "Keep it" }).click();
    await page.getByRole("button", { name: "Delete…" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete for good" }).click();
    await page.getByRole("heading", { level: 1, name: "Dashboards" }).waitFor();
    assert.equal(await page.getByRole("link", { name: "Two panels" }).count(), 0);
    await assertClean(page, "reorder and delete");
  });

  it("shows operators the audit log filtered on the server, and the outbox with a dead letter to retry", async () => {
    const { page } = editor;
    await page.getByRole("link", { name: "Audit" }).click();
    await page.getByRole("heading", { level: 1, name: "Audit log" }).waitFor();
    await page.getByLabel("Action").selectOption("action.trigger");
    await page.getByRole("button", { name: "Filter" }).click();
    const actions = await eventually(async () => {
      const found = await page.locator("table.list tbody tr td:nth-child(2)").allTextContents();
      return found.length > 0 && found.every((a) => a === "action.trigger") && found;
    }, 10_000, "only the starts");
    assert.ok(actions.length >= 4, `the starts so far (${actions.length})`);
    assert.match(page.url(), /action=action\.trigger/);
    await screenshot(page, "audit-log");
    await assertAccessible(page, "the audit log");
    await page.getByRole("link", { name: "Outbox" }).click();
    await page.getByRole("heading", { level: 1, name: "Outbox" }).waitFor();
    await page.getByLabel("Status").selectOption("dead");
    const dead = page.locator("table.list tbody tr").filter({ hasText: "broken" });
    await dead.first().waitFor();
    await dead.first().getByText(/the workflow endpoint answered 500/).waitFor();
    await screenshot(page, "outbox");
    await assertAccessible(page, "the outbox");
    await dead.first().getByRole("button", { name: /^Retry/ }).click();
    await page.getByText("No delivery to show.").waitFor();
    await page.getByLabel("Status").selectOption("");
    await page.locator("table.list tbody tr").filter({ hasText: "broken" }).first().waitFor();
    await assertClean(page, "operator screens");
  });
});
