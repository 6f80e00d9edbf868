// Dashboards that chart, in a real browser against the real server (redb), a real PostgreSQL and
// a local workflow endpoint: a bar chart, a line chart over a date column, a single number and a
// table with row actions on the 12-column grid; a date input and a choice input filled from a
// query; the time range changes every bound panel; choosing a bar by keyboard opens the row
// action's modal and starts the workflow with that row (the receiver gets it, signed); a narrow
// viewport stacks the panels; keyboard-only editing moves a panel; hostile column names and values
// stay text in the data table, the points' names, the legend and tooltips; axe clean; no console
// error. One server, one browser. Screenshots under target/console-screenshots.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { PG, assertAccessible, assertClean as harnessAssertClean, signedIn as harnessSignedIn, eventually, launchBrowser, screenshot, startServer } from "./harness.mjs";

const HOSTILE = `<img src=x onerror=alert(1)>‮gnp.exe`;
const SECRET = "e2e-charts-secret-0123456789abcdef";

let server;
let browser;
let receiver;
let admin;
const dash = {};

/** A workflow endpoint that records each request with its headers and raw body. */
async function startReceiver() {
  const received = [];
  const http = createServer((request, response) => {
    let raw = "";
    request.on("data", (chunk) => (raw += chunk));
    request.on("end", () => {
      received.push({ path: request.url, headers: request.headers, raw, body: JSON.parse(raw || "null") });
      response.writeHead(200, { "content-type": "application/json" });
      response.end("{}");
    });
  });
  await new Promise((done) => http.listen(0, "127.0.0.1", done));
  return { http, received, url: `http://127.0.0.1:${http.address().port}/run/{workflow_id}` };
}

async function made(method, path, body) {
  const answer = await server.api(method, path, body);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

const query = (credential, sql) => ({ __type__: "query", query: sql, credential_id: credential });
const panel = (page, title) => page.getByRole("region", { name: title, exact: true });
const assertClean = (page, what, provoked = [401, 403, 422]) => harnessAssertClean(page, what, provoked);

async function openDashboard(page, dashboard, search = "") {
  await page.goto(`/console/dashboards/${dashboard.id}${search}`);
  await page.getByRole("heading", { level: 1, name: dashboard.name }).waitFor();
}

/** The chart's points (buttons, by their accessible names) of a panel, once drawn. */
async function points(section) {
  await section.locator("canvas").waitFor();
  return section.locator("button.chart-point").evaluateAll((list) => list.map((b) => b.getAttribute("aria-label")));
}

describe("charts", { concurrency: false }, () => {
  before(async () => {
    receiver = await startReceiver();
    server = await startServer(["--workflow-url", receiver.url, "--workflow-secret", SECRET], {
      DBCONSOLE_DELIVERY_ATTEMPTS: "2",
      DBCONSOLE_DELIVERY_BACKOFF_MS: "50",
    });
    browser = await launchBrowser();
    const db = await made("POST", "/api/v1/console/databases", {
      name: "E2E Charts Postgres",
      adapter: "postgres",
      hostname: PG.host,
      port: PG.port,
      database: PG.database,
      credentials: [{ username: PG.username, password: PG.password, default_credential: true }],
    });
    const cred = db.credentials[0].id;
    const statuses = "(VALUES ('paid', 12, 1), ('new', 5, 2), ('refunded', 3, 3)) AS t(status, orders, id)";
    dash.board = await made("POST", "/api/v1/dashboards", {
      name: "Sales at a glance",
      restricted_access: false,
      panels: [
        {
          title: "Orders by status",
          details: query(cred, `SELECT status, orders FROM ${statuses} WHERE \${__to}::timestamptz > \${__from}::timestamptz ORDER BY id`),
          actions: [
            {
              label: "Chase",
              workflow_id: "chase",
              input_mappings: [
                { workflow_input_key: "status", column: "status" },
                { workflow_input_key: "orders", column: "orders" },
                { workflow_input_key: "note", prompt_user: true, prompt: "Why chase?" },
              ],
            },
          ],
        },
        {
          title: "Signups per day",
          details: query(cred, "SELECT d::date AS day, (extract(day FROM d))::int AS signups FROM generate_series(date_trunc('day', ${__from}::timestamptz), date_trunc('day', ${__to}::timestamptz), interval '1 day') AS d ORDER BY 1"),
        },
        { title: "Revenue", details: query(cred, "SELECT 1234.5 AS revenue, 1000 AS last_week") },
        {
          title: "Orders",
          inputs: [
            { key: "since", description: "Placed on or after" },
            { key: "status", description: "Only this status" },
            { key: "most", description: "At most this many" },
          ],
          details: query(cred, `SELECT id, status, orders FROM ${statuses} WHERE \${since}::date <= current_date AND (\${status}::text IS NULL OR status = \${status}::text) ORDER BY id LIMIT \${most}::int`),
          actions: [{ label: "Refund", workflow_id: "refund", input_mappings: [{ workflow_input_key: "order_id", column: "id" }] }],
        },
      ],
    });
    const [bar, line, number, table] = dash.board.panels.map((p) => p.id);
    dash.look = {
      editors: [],
      viewers: [],
      time_range: "7d",
      panels: {
        [bar]: { display: { kind: "bar", x: "status", series: ["orders"] }, layout: { x: 0, y: 0, w: 6, h: 4 } },
        [line]: { display: { kind: "line", x: "day", series: ["signups"] }, layout: { x: 6, y: 0, w: 6, h: 4 } },
        [number]: { display: { kind: "number", series: ["revenue"], compare: "last_week", format: { decimals: 1, unit: "€" } }, layout: { x: 0, y: 4, w: 4, h: 3 } },
        [table]: { layout: { x: 4, y: 4, w: 8, h: 5 } },
      },
      inputs: {
        since: { type: "date", default: "2026-01-01" },
        status: { type: "choice", required: false, choices_query: { query: `SELECT status FROM ${statuses} ORDER BY id`, credential_id: cred } },
        most: { type: "number", default: "10" },
      },
    };
    await made("PUT", `/api/v1/dashboards/${dash.board.id}/presentation`, dash.look);
    dash.hostile = await made("POST", "/api/v1/dashboards", {
      name: "Hostile chart",
      restricted_access: false,
      panels: [{ title: HOSTILE, details: query(cred, `SELECT '${HOSTILE}' AS "${HOSTILE}", 7 AS "n ${HOSTILE}" UNION ALL SELECT 'two', 3`) }],
    });
    await made("PUT", `/api/v1/dashboards/${dash.hostile.id}/presentation`, {
      panels: { [dash.hostile.panels[0].id]: { display: { kind: "pie" } } },
    });
    admin = await harnessSignedIn(browser, server, "admin");
  });

  after(async () => {
    await admin?.context.close();
    await browser?.close();
    await server?.stop();
    receiver?.http.close();
  });

  it("draws a bar chart, a line chart over dates, a single number and a table on the 12-column grid", async () => {
    const { page } = admin;
    await page.setViewportSize({ width: 1400, height: 1000 });
    await openDashboard(page, dash.board);
    const bar = panel(page, "Orders by status");
    assert.deepEqual(await points(bar), ["orders, paid: 12", "orders, new: 5", "orders, refunded: 3"]);
    const line = panel(page, "Signups per day");
    assert.equal((await points(line)).length, 8, "the last 7 days, one point a day");
    const revenue = panel(page, "Revenue");
    await revenue.getByText("1,234.5 €", { exact: true }).waitFor();
    await revenue.getByText(/^\+234\.5 € \(\+23\.5%\) against/).waitFor();
    const orders = panel(page, "Orders");
    await orders.locator('[role="row"][aria-rowindex="4"]').waitFor();
    // Side by side: the bar and the line share a top; the number sits left of the table.
    const [b, l, n, t] = await Promise.all([bar, line, revenue, orders].map((s) => s.boundingBox()));
    assert.ok(Math.abs(b.y - l.y) < 2 && l.x > b.x + b.width - 2, `bar ${JSON.stringify(b)} line ${JSON.stringify(l)}`);
    assert.ok(Math.abs(n.y - t.y) < 2 && t.x > n.x && n.y > b.y + b.height - 2, `number ${JSON.stringify(n)} table ${JSON.stringify(t)}`);
    assert.ok(Math.abs(b.width - l.width) < 4 && t.width > 1.8 * n.width, "widths follow the columns");
    await screenshot(page, "dashboard-charts");
    await assertAccessible(page, "a charted dashboard");
    await assertClean(page, "a charted dashboard");
  });

  it("opens the data table from the same run and keeps the chart's rows", async () => {
    const { page } = admin;
    const bar = panel(page, "Orders by status");
    await bar.getByRole("button", { name: "Data table" }).click();
    await bar.locator('[role="row"][aria-rowindex="2"]').getByText("paid").waitFor();
    assert.equal(await bar.locator('[role="row"][aria-rowindex="4"]').count(), 1);
    await bar.getByRole("button", { name: "Data table" }).click();
    await bar.locator("canvas").waitFor();
  });

  it("chooses a bar by keyboard: its row's action opens the modal and starts the workflow with that row, signed", async () => {
    const { page } = admin;
    const bar = panel(page, "Orders by status");
    await bar.locator("button.chart-point").first().focus();
    await page.keyboard.press("ArrowRight");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), "orders, new: 5");
    await page.keyboard.press("Enter");
    const chosen = bar.getByRole("group", { name: "Actions of row 2" });
    await chosen.waitFor();
    assert.match(await page.evaluate(() => document.activeElement?.textContent ?? ""), /Chase/, "the row's first button has the focus");
    const before = receiver.received.length;
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("Why chase?").waitFor();
    await page.keyboard.type("stuck since Monday");
    await page.keyboard.press("Enter");
    const got = await eventually(() => receiver.received.slice(before).find((r) => r.path === "/run/chase"), 10_000, "the chase workflow");
    assert.deepEqual(got.body.inputs, { status: "new", orders: 5, note: "stuck since Monday" });
    const signature = got.headers["dbconsole-signature"];
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature) ?? [];
    assert.ok(t && v1, `signed: ${signature}`);
    assert.equal(createHmac("sha256", SECRET).update(`${t}.${got.raw}`).digest("hex"), v1, "the signature verifies");
    await chosen.getByText(/Chase: (pending|delivered)/).waitFor();
    await assertClean(page, "a chosen bar");
  });

  it("changes every bound panel with the time range, and fills a choice from its query", async () => {
    const { page } = admin;
    await page.getByLabel("Time range").selectOption("30d");
    await eventually(async () => (await points(panel(page, "Signups per day"))).length === 31, 10_000, "31 days of points");
    assert.match(page.url(), /range=30d/);
    const status = page.getByLabel("status", { exact: true });
    await eventually(async () => (await status.locator("option").count()) === 4, 10_000, "the query's choices");
    assert.deepEqual(await status.locator("option").allTextContents(), ["(none)", "paid", "new", "refunded"]);
    assert.equal(await page.getByLabel("since", { exact: true }).inputValue(), "2026-01-01", "the date input's default");
    await status.selectOption("refunded");
    await page.getByRole("button", { name: "Apply" }).click();
    const orders = panel(page, "Orders");
    await eventually(async () => (await orders.locator('[role="row"]').count()) === 2, 10_000, "one refunded row");
    await orders.locator('[role="row"][aria-rowindex="2"]').getByText("refunded").waitFor();
    // A bad value is an error on its field, from the server.
    await page.getByLabel("most", { exact: true }).fill("ten");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText("must be a number, such as 42 or -1.5").waitFor();
    assert.equal(await page.getByLabel("most", { exact: true }).getAttribute("aria-invalid"), "true");
    await page.getByLabel("most", { exact: true }).fill("10");
    await page.getByRole("button", { name: "Apply" }).click();
    await eventually(async () => (await page.getByLabel("most", { exact: true }).getAttribute("aria-invalid")) === null, 10_000, "the error cleared");
    await screenshot(page, "dashboard-inputs");
    await assertClean(page, "inputs and the time range");
  });

  it("stacks the panels on a narrow screen", async () => {
    const { page } = admin;
    await page.setViewportSize({ width: 480, height: 900 });
    await openDashboard(page, dash.board);
    await panel(page, "Revenue").getByText("1,234.5 €", { exact: true }).waitFor();
    const boxes = await Promise.all(["Orders by status", "Signups per day", "Revenue", "Orders"].map((t) => panel(page, t).boundingBox()));
    for (let i = 1; i < boxes.length; i += 1) {
      assert.ok(Math.abs(boxes[i].x - boxes[0].x) < 2, "one column");
      assert.ok(boxes[i].y >= boxes[i - 1].y + boxes[i - 1].height - 1, "one below the other");
    }
    await screenshot(page, "dashboard-narrow");
    await page.setViewportSize({ width: 1400, height: 1000 });
  });

  it("moves a panel on the layout map by keyboard alone, and the dashboard follows", async () => {
    const { page } = admin;
    await page.goto(`/console/dashboards/${dash.board.id}/edit`);
    await page.getByRole("heading", { level: 1, name: "Edit dashboard" }).waitFor();
    const block = page.getByRole("button", { name: /^Revenue: column 1, row 5, 4 wide, 3 tall$/ });
    await block.focus();
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("Shift+ArrowRight");
    await page.getByRole("status").getByText("Revenue: column 3, row 5, 5 wide, 3 tall").waitFor();
    await screenshot(page, "dashboard-editor-layout");
    await assertAccessible(page, "the dashboard editor with charts");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").getByText("Saved.").waitFor();
    const look = await server.api("GET", `/api/v1/dashboards/${dash.board.id}/presentation`);
    assert.deepEqual(look.body.panels[dash.board.panels[2].id].layout, { x: 2, y: 4, w: 5, h: 3 });
    assert.deepEqual(look.body.panels[dash.board.panels[0].id], dash.look.panels[dash.board.panels[0].id], "the others as they were");
    assert.deepEqual(look.body.inputs, dash.look.inputs);
    await assertClean(page, "keyboard layout");
  });

  it("keeps hostile column names and values text in the data table, the points' names, the legend and tooltips", async () => {
    const { page } = admin;
    await openDashboard(page, dash.hostile);
    const section = page.locator("section.panel");
    const names = await points(section);
    assert.deepEqual(names, [`n ${HOSTILE}, ${HOSTILE}: 7`.replaceAll("‮", "⟨U+202E⟩"), `n ${HOSTILE}, two: 3`.replaceAll("‮", "⟨U+202E⟩")]);
    await section.locator("button.chart-point").first().focus();
    await section.getByRole("button", { name: "Data table" }).click();
    await section.locator('[role="columnheader"]').getByText(`n ${HOSTILE}`.replaceAll("‮", "⟨U+202E⟩")).waitFor();
    await section.locator('[role="row"][aria-rowindex="2"]').getByText(HOSTILE.replaceAll("‮", "⟨U+202E⟩")).waitFor();
    assert.equal(await page.locator("img").count(), 0, "no element from the values");
    await screenshot(page, "dashboard-hostile-chart");
    await assertAccessible(page, "a hostile chart");
    await assertClean(page, "a hostile chart");
  });
});
