// The query workspace in a real browser against the real server (redb) and a real PostgreSQL:
// a query saved from the editor and shared with a group, whose member opens its address and
// runs it with a parameter (bound, not pasted) while a non-member is refused; hostile names
// render as text; axe-core on each new screen; screenshots under target/console-screenshots.

import assert from "node:assert/strict";
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
