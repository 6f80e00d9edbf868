// The query workspace in a real browser against the real server (redb) and a real PostgreSQL:
// a query saved from the editor and shared with a group, whose member opens its address and
// runs it with a parameter (bound, not pasted) while a non-member is refused; hostile names
// render as text; axe-core on each new screen; screenshots under target/console-screenshots.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { PG, assertAccessible, assertClean, signedIn as harnessSignedIn, launchBrowser, screenshot, startServer } from "./harness.mjs";

const HOSTILE = `<img src=x onerror=alert(1)></script><script>alert(2)</script>`;

let server;
let browser;
const keys = {};
const db = {};

const postgres = (name, credential = {}) => ({
  name,
  adapter: "postgres",
  hostname: PG.host,
  port: PG.port,
  database: PG.database,
  credentials: [{ username: PG.username, password: PG.password, default_credential: true, ...credential }],
});

const signedIn = (how) => harnessSignedIn(browser, server, how);

async function typeSql(page, sql) {
  const editor = page.getByRole("textbox", { name: "SQL editor" });
  await editor.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.press("Delete");
  await editor.pressSequentially(sql, { delay: 0 });
  await page.keyboard.press("Escape");
}

describe("the query workspace", { concurrency: false }, () => {
  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    keys.ann = server.userKey("ann@example.com", { groups: ["analysts"] });
    keys.bob = server.userKey("bob@example.com", { groups: ["analysts"] });
    keys.eve = server.userKey("eve@example.com", { groups: ["sales"] });
    const made = await server.api("POST", "/api/v1/console/databases", postgres("Workspace PG"));
    assert.ok(made.status === 200 || made.status === 201, JSON.stringify(made.body));
    db.plain = made.body;
    // A table of the test's own, for the schema browser.
    for (const query of [
      "drop table if exists ws_items",
      "create table ws_items as select n as id, 'item ' || n as label from generate_series(1, 150) as n",
    ]) {
      const made = await server.api("POST", "/api/v1/console/queries", { database_id: db.plain.id, credential_id: db.plain.credentials[0].id, query }, keys.ann);
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const ran = await server.api("POST", `/api/v1/console/queries/${made.body.id}/run`, undefined, keys.ann);
      assert.equal(ran.status, 200, JSON.stringify(ran.body));
    }
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  let savedUrl;
  it("saves a query from the editor, shared with a group", async () => {
    const { page, context } = await signedIn(keys.ann);
    await page.getByRole("button", { name: /^Workspace PG/ }).first().click();
    await typeSql(page, "select ${word}::text as said, length(${word}) as n");
    await page.getByRole("button", { name: "Save…" }).click();
    const dialog = page.getByRole("dialog", { name: "Save the query" });
    await dialog.getByLabel("Name").fill(`Echo ${HOSTILE}`);
    await dialog.getByLabel("Description").fill("Says a word back");
    await dialog.getByLabel("Tags").fill("demo, e2e");
    await dialog.getByLabel("Who sees it").selectOption("groups");
    await dialog.getByLabel("Groups").fill("analysts");
    await screenshot(page, "saved-query-dialog");
    await dialog.getByRole("button", { name: "Save" }).click();
    await page.waitForURL(/\/console\/saved\/sq_[0-9a-z]+$/);
    savedUrl = new URL(page.url()).pathname;
    await page.getByRole("heading", { level: 1, name: `Echo ${HOSTILE}` }).waitFor();
    await page.getByText("Groups: analysts").waitFor();
    await screenshot(page, "saved-query-page");
    await assertAccessible(page, "axe: a saved query's page");
    await page.getByRole("link", { name: "Saved", exact: true }).click();
    await page.getByRole("link", { name: `Echo ${HOSTILE}` }).waitFor();
    await page.getByLabel("Search").fill("no such thing");
    await page.getByText("No saved query matches.").waitFor();
    await page.getByLabel("Search").fill("says WORD");
    await page.getByRole("link", { name: `Echo ${HOSTILE}` }).waitFor();
    await screenshot(page, "saved-queries");
    await assertAccessible(page, "axe: the saved queries");
    await assertClean(page, "saving a query");
    await context.close();
  });

  it("a member of the group opens its address and runs it with a value, bound as a parameter", async () => {
    const { page, context } = await signedIn(keys.bob);
    await page.goto(savedUrl);
    await page.getByRole("heading", { level: 1, name: `Echo ${HOSTILE}` }).waitFor();
    const value = "it's'); drop table x; --";
    await page.getByLabel("word", { exact: true }).fill(value);
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.getByText(/^1 rows? in \d+ ms$/).waitFor();
    const grid = page.getByRole("grid", { name: "Result" });
    const row = grid.locator('[role="row"][aria-rowindex="2"]');
    await row.getByText(value, { exact: true }).waitFor();
    await row.getByText(String(value.length), { exact: true }).waitFor();
    // The history links the run to the saved query.
    await page.getByRole("link", { name: "History" }).click();
    await page.getByRole("link", { name: "saved" }).first().waitFor();
    await page.getByRole("link", { name: "Open" }).first().click();
    await page.getByRole("table", { name: "Parameter values" }).getByText(value).waitFor();
    await assertClean(page, "running a saved query");
    await context.close();
  });

  it("the grid from the keyboard alone: one Tab stop, arrows, a range with Shift copied as TSV, sort, filter", async () => {
    const { page, context } = await signedIn(keys.ann);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
    await page.getByRole("button", { name: /^Workspace PG/ }).first().click();
    await typeSql(page, "select n, n * 1000 as big, 'r' || n as label, now() as at from generate_series(1, 50) as n");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/^50 rows in \d+ ms$/).waitFor();
    const grid = page.getByRole("grid", { name: "Result" });
    const inGrid = () => page.evaluate(() => document.activeElement?.closest("[role=grid]") !== null);
    for (let i = 0; i < 12 && !(await inGrid()); i++) await page.keyboard.press("Tab");
    assert.ok(await inGrid(), "Tab reaches the grid");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("role")), "grid", "the grid itself holds the focus");
    const active = () => page.evaluate(() => {
      const grid = document.activeElement;
      const cell = document.getElementById(grid?.getAttribute("aria-activedescendant") ?? "");
      return cell ? { text: cell.textContent, row: cell.closest("[role=row]")?.getAttribute("aria-rowindex"), col: cell.getAttribute("aria-colindex") } : null;
    });
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowRight");
    assert.deepEqual(await active(), { text: "2,000", row: "3", col: "3" }, "numbers in the reader's separators");
    const align = await grid.locator('[role="row"][aria-rowindex="3"] [aria-colindex="3"]').evaluate((cell) => window.getComputedStyle(cell).textAlign);
    assert.equal(align, "right", "numbers right-aligned");
    await page.keyboard.press("Shift+ArrowDown");
    await page.keyboard.press("Shift+ArrowDown");
    await page.keyboard.press("Shift+ArrowRight");
    assert.equal(await grid.locator('[aria-selected="true"]').count(), 6, "a 3×2 range is selected");
    await page.keyboard.press("ControlOrMeta+c");
    await page.waitForFunction(() => navigator.clipboard.readText().then((t) => t.includes("\t")));
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "2000\tr2\n3000\tr3\n4000\tr4", "the range as TSV, values as they came");
    // The timestamp column is as wide as a timestamp: its text is not cut.
    const fits = await grid.locator('[role="row"][aria-rowindex="2"] [aria-colindex="5"] bdi').evaluate((bdi) => bdi.scrollWidth <= bdi.parentElement.clientWidth);
    assert.ok(fits, "a timestamp fits its column");
    // Past the last row and column; Home goes back.
    await page.keyboard.press("ControlOrMeta+End");
    await page.keyboard.press("End");
    assert.deepEqual(await active().then((a) => [a.row, a.col]), ["51", "5"]);
    await page.keyboard.press("ControlOrMeta+Home");
    await page.keyboard.press("Home");
    assert.deepEqual(await active().then((a) => [a.row, a.col]), ["2", "2"]);
    // Up to the header of "label", Enter sorts by it (as text), Enter again the other way.
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("Enter");
    const header = grid.getByRole("columnheader", { name: /^label/ });
    assert.equal(await header.getAttribute("aria-sort"), "ascending");
    const labels = async () => grid.locator('[role="row"]:not(.grid-header) [aria-colindex="4"]').allTextContents();
    assert.deepEqual((await labels()).slice(0, 3), ["r1", "r10", "r11"]);
    await page.keyboard.press("Enter");
    assert.equal(await header.getAttribute("aria-sort"), "descending");
    assert.deepEqual((await labels()).slice(0, 2), ["r9", "r8"]);
    await screenshot(page, "grid-sorted");
    // One Tab leaves the grid.
    await page.keyboard.press("Tab");
    assert.equal(await inGrid(), false, "the grid is one Tab stop");
    await page.getByRole("searchbox", { name: "Filter the rows of Result" }).fill("R4");
    await page.getByText("11 of 50 rows shown").waitFor();
    // Download saves the rows shown, sorted and filtered, with no second run.
    await page.getByLabel("Download as").selectOption("safe");
    const [file] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download", exact: true }).click()]);
    assert.match(file.suggestedFilename(), /^select-n-n-1000-as-big-.*-\d{4}-\d\d-\d\d-\d{6}\.csv$/);
    const saved = await readFile(await file.path(), "utf8");
    const lines = saved.trim().split("\r\n");
    assert.equal(lines.length, 12, "the header and the 11 rows shown");
    assert.equal(lines[0], "n,big,label,at");
    assert.match(lines[1], /^49,49000,r49,/, "in the order shown (descending by label)");
    await assertAccessible(page, "axe: the grid, sorted and filtered");
    await assertClean(page, "the grid");
    await context.close();
  });

  it("follows the system's dark theme, readable (axe's contrast check)", async () => {
    const context = await browser.newContext({ baseURL: server.base, colorScheme: "dark" });
    const page = await context.newPage();
    await page.goto("/console/");
    await page.getByLabel("Key").fill(keys.ann);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
    const background = await page.evaluate(() => window.getComputedStyle(document.documentElement).backgroundColor);
    assert.equal(background, "rgb(17, 21, 29)", "the dark background");
    await page.getByRole("button", { name: /^Workspace PG/ }).first().click();
    await typeSql(page, "select 1 as one, 'two' as two, null as three");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/^1 rows? in \d+ ms$/).waitFor();
    await screenshot(page, "query-dark");
    await assertAccessible(page, "axe: the query screen in the dark theme");
    await page.goto(savedUrl);
    await page.getByRole("heading", { level: 1, name: `Echo ${HOSTILE}` }).waitFor();
    await assertAccessible(page, "axe: a saved query in the dark theme");
    await context.close();
  });

  it("keeps a person's theme and clock in their settings: dark and UTC everywhere, on every browser", async () => {
    const { page, context } = await signedIn(keys.bob);
    await page.getByRole("link", { name: "bob@example.com" }).click();
    await page.getByLabel("Theme").selectOption("dark");
    await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    await page.getByLabel("Times shown in").selectOption("UTC");
    await page.getByText(/Times read like this: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/).waitFor();
    await screenshot(page, "account-settings");
    await assertAccessible(page, "axe: the account page, dark");
    // Another browser of the same person: the same theme and clock.
    const other = await signedIn(keys.bob);
    assert.equal(await other.page.evaluate(() => document.documentElement.dataset.theme), "dark");
    await other.page.getByRole("link", { name: "History" }).click();
    const created = await other.page.getByRole("table").locator("tbody tr td").first().textContent();
    assert.match(created ?? "", /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/, "History's times in UTC, with the zone");
    await other.context.close();
    await page.getByLabel("Theme").selectOption("");
    await page.waitForFunction(() => document.documentElement.dataset.theme === undefined);
    await page.getByLabel("Times shown in").selectOption("");
    await page.getByText(/Times read like this: .* (UTC|GMT[+-]?\d*|[A-Z]{2,5})$/).waitFor();
    await assertClean(page, "settings");
    await context.close();
  });

  it("the schema browser lists a table's columns with types, inserts a name, and previews 100 rows", async () => {
    const { page, context } = await signedIn(keys.ann);
    await page.getByRole("button", { name: /^Workspace PG/ }).first().click();
    const tree = page.getByRole("region", { name: "Tables" });
    await tree.getByLabel("Filter tables and columns").fill("ws_items");
    const table = tree.locator("details.table").filter({ hasText: "ws_items" }).first();
    await table.locator(".columns li").filter({ hasText: /^label/ }).getByText("text").waitFor();
    await typeSql(page, "select ");
    await table.locator(".columns li").filter({ hasText: /^label/ }).getByRole("button").click();
    assert.equal(await page.getByRole("textbox", { name: "SQL editor" }).textContent(), "select label");
    await table.getByRole("button", { name: "Preview ws_items" }).click();
    await page.getByText(/^100 rows in \d+ ms$/).waitFor();
    await page.getByRole("link", { name: "History" }).click();
    await page.getByText("SELECT * FROM ws_items LIMIT 100").first().waitFor();
    await assertClean(page, "the schema browser");
    await context.close();
  });

  it("the editor formats, lists its shortcuts, marks an error's position, and keeps EXPLAIN's indentation", async () => {
    const { page, context } = await signedIn(keys.ann);
    await page.getByRole("button", { name: /^Workspace PG/ }).first().click();
    await typeSql(page, "select id, label from ws_items where id > ${min} order by id");
    await page.getByRole("button", { name: "Format", exact: true }).click();
    await page.waitForFunction(() => document.querySelectorAll(".cm-line").length >= 4);
    const lines = await page.locator(".cm-line").allTextContents();
    assert.ok(lines.length >= 4, `formatted on several lines: ${JSON.stringify(lines)}`);
    assert.ok(lines.some((l) => l.includes("${min}")), "the parameter is kept");
    // "?" outside the editor lists the shortcuts.
    await page.getByRole("heading", { level: 1 }).click();
    await page.keyboard.press("?");
    const list = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    await list.getByText("Shift+Alt+F").waitFor();
    await assertAccessible(page, "axe: the shortcuts");
    await list.getByRole("button", { name: "Close" }).click();
    // The database's position of an error, marked in the editor.
    await typeSql(page, "select 1\nfrom ws_items wherre id = 1");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/line 2, column \d+ \(marked in the editor\)/).waitFor();
    const selected = await page.evaluate(() => window.getSelection()?.toString() ?? "");
    assert.ok(selected.length <= 1, "the cursor is at the position");
    // EXPLAIN's plan keeps its indentation in the grid.
    await typeSql(page, "explain select * from ws_items a join ws_items b on a.id = b.id where a.id > 3");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/rows in \d+ ms$/).waitFor();
    const indented = await page.getByRole("grid", { name: "Result" }).locator("bdi").evaluateAll((cells) =>
      cells.some((c) => /^ +->/.test(c.textContent ?? "") && window.getComputedStyle(c).whiteSpace === "pre"),
    );
    assert.ok(indented, "a plan line keeps its leading spaces");
    // EXPLAIN (FORMAT JSON) as a collapsible tree.
    await typeSql(page, "explain (format json) select * from ws_items a join ws_items b on a.id = b.id");
    await page.keyboard.press("ControlOrMeta+Enter");
    const tree = page.getByRole("region", { name: "Query plan" });
    // The join the planner chose (its statistics decide which), over scans of both sides.
    await tree.locator("summary").filter({ hasText: /^(Hash Join|Merge Join|Nested Loop)/ }).first().waitFor();
    await tree.locator("summary").filter({ hasText: /Scan on ws_items a/ }).first().waitFor();
    await screenshot(page, "explain-tree");
    await assertAccessible(page, "axe: a plan's tree");
    await assertClean(page, "the editor", [401, 422]);
    await context.close();
  });

  it("keeps the editor's tabs per person in the browser, and forgets them at sign-out", async () => {
    const { page, context } = await signedIn(keys.ann);
    await page.getByRole("button", { name: /^Workspace PG/ }).first().click();
    await typeSql(page, "select 'first tab' as one");
    await page.getByRole("button", { name: "+ New tab" }).click();
    const tabs = page.getByRole("tablist", { name: "Editor tabs" });
    await tabs.getByRole("tab", { name: "New tab", selected: true }).waitFor();
    await typeSql(page, "select 'second tab' as two");
    await tabs.getByRole("tab", { name: /first tab/ }).click();
    await page.getByRole("textbox", { name: "SQL editor" }).getByText("select 'first tab' as one").waitFor();
    // From the keyboard: arrows move between tabs.
    await tabs.getByRole("tab", { selected: true }).focus();
    await page.keyboard.press("ArrowRight");
    await page.getByRole("textbox", { name: "SQL editor" }).getByText("select 'second tab' as two").waitFor();
    await page.reload();
    await page.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
    assert.deepEqual(await tabs.getByRole("tab").allTextContents(), ["select 'first tab' as one", "select 'second tab' as two"]);
    await page.getByRole("textbox", { name: "SQL editor" }).getByText("select 'second tab' as two").waitFor();
    await assertAccessible(page, "axe: the editor's tabs");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    const left = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("dbconsole.")));
    assert.deepEqual(left, [], "the tabs and drafts are forgotten at sign-out");
    await context.close();
  });

  it("one outside the group is refused: the address says it is not shared with them", async () => {
    const { page, context } = await signedIn(keys.eve);
    await page.goto(savedUrl);
    await page.getByRole("heading", { level: 1, name: "Saved query not found" }).waitFor();
    await page.getByText("not shared with you").waitFor();
    await page.getByRole("link", { name: "Saved", exact: true }).click();
    await page.getByText("No saved query yet").waitFor();
    await assertClean(page, "a refused saved query", [401, 404]);
    await context.close();
  });
});
