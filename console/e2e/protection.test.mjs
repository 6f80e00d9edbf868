// Data protection set up from the console alone, in a real browser against the real server,
// PostgreSQL and MariaDB (docs/data-protection.md, "Provisioning"): on `provdb`, whose tables
// belong to the non-superuser `dp_app` (on MariaDB `mprovdb_e2e_<pid>`, `mp_app`'s), the admin types the provisioning credential and the policies (column
// names picked from the catalog the provisioning login sees), reads the plan with its reasons,
// applies it, sees the credential verified and a query answer masked values — no SQL typed by
// hand into the database. Screenshots under target/console-screenshots.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { assertAccessible, assertClean, launchBrowser, screenshot, signedIn, startServer } from "./harness.mjs";

const SCHEMA = `e2e_prov_${process.pid}`;
const MASKS = `prov_reader_mask_${SCHEMA}`;
const MARIADB = `mprovdb_e2e_${process.pid}`;
const SHADOW = `mprov_e2e_mask_${MARIADB}`;

/** Runs `sql` on provdb as its owner, dp_app (the test's own setup, not the admin's). */
function asOwner(sql) {
  const ran = spawnSync("psql", ["-v", "ON_ERROR_STOP=1", "-qAt", "-h", "127.0.0.1", "-U", "dp_app", "-d", "provdb", "-c", sql], {
    encoding: "utf8",
    env: { ...process.env, PGPASSWORD: "checkpw" },
  });
  assert.equal(ran.status, 0, `psql as dp_app failed (start the servers with .ci/db-servers-up.sh): ${ran.stderr}`);
  return ran.stdout;
}

/** Runs `sql` on MariaDB as `mp_app`, the owner of the `mprovdb_*` databases. */
function asMariadbOwner(sql) {
  const ran = spawnSync("mariadb", ["-h", "127.0.0.1", "-u", "mp_app", "-pcheckpw", "-e", sql], { encoding: "utf8" });
  assert.equal(ran.status, 0, `mariadb as mp_app failed (start the servers with .ci/db-servers-up.sh): ${ran.stderr}`);
  return ran.stdout;
}

let server;
let browser;
let page;
let dbId;
let mariadbId;

/**
 * On database `name`'s page: types the provisioning credential (`owner`, in `schemas`), masks
 * `<prefix>users.email` and hides `<prefix>users.ssn` (picked from the catalog), shows the plan
 * (it holds `grant`), applies it, and sees the credential verified.
 */
async function provisionFromConsole({ id, name, owner, schemas, prefix, reader, grant }) {
  await page.goto(`${server.base}/console/databases/${id}`);
  const heading = page.getByRole("heading", { name: new RegExp(`^Database ${name}`) });
  await heading.waitFor();
  const provisioning = page.getByRole("group", { name: "Provisioning credential" });
  await provisioning.getByLabel("Username").fill(owner);
  await provisioning.getByLabel("Password").fill("checkpw");
  if (schemas) await provisioning.getByLabel("Schemas (comma-separated)").fill(schemas);
  await page.getByRole("button", { name: "Add a column rule" }).click();
  await page.getByLabel("Column", { exact: true }).fill(`${prefix}users.email`);
  await page.getByLabel("Action", { exact: true }).selectOption("mask:email");
  await page.getByRole("button", { name: "Save data protection" }).click();
  await page.getByText(/^Data protection saved\. Show the plan/).waitFor();
  const document = await server.api("GET", `/api/v1/console/databases/${id}/data-protection`);
  assert.equal(document.body.provisioning.username, owner);
  assert.equal(JSON.stringify(document.body).includes("checkpw"), false, "the password is never answered");
  // The column picker offers the catalog the provisioning login sees (after a reload).
  await page.reload();
  await heading.waitFor();
  await page.waitForFunction(() => document.querySelectorAll("datalist[id^=catalog] option").length > 0);
  const options = await page.locator("datalist[id^=catalog] option").evaluateAll((nodes) => nodes.map((n) => n.getAttribute("value")));
  assert.ok(options.includes(`${prefix}users.ssn`), `the picker lists the columns: ${options}`);
  await page.getByRole("button", { name: "Add a column rule" }).click();
  await page.getByLabel("Column", { exact: true }).last().fill(`${prefix}users.ssn`);
  await page.getByRole("button", { name: "Save data protection" }).click();
  await page.getByText(/^Data protection saved/).waitFor();
  await page.getByRole("button", { name: "Show the plan" }).click();
  await page.getByRole("heading", { name: new RegExp(`Login ${reader} \\(\\d+ statements\\)`) }).waitFor();
  await page.getByText(grant).waitFor();
  await page.getByText(/the columns of .* no policy protects/).first().waitFor();
  return async () => {
    await page.getByRole("button", { name: "Apply the plan" }).click();
    await page.getByText(/^Applied \d+ statement\(s\)\.$/).waitFor();
    await page.getByRole("list", { name: "Credentials checked against the policies" }).getByText(/verified/).waitFor();
    await page.getByRole("button", { name: "Show the plan" }).click();
    await page.getByText("Nothing to change: every credential's login is as the policies make it.").waitFor();
  };
}

/** Runs `select * from users` on database `name` from the console, the table's name put in by
 * the schema browser (in `schema`: its columns listed with the masked one's badge and without
 * the hidden one): the grid shows the mask. */
async function maskedInTheConsole(name, schema) {
  await page.goto(`${server.base}/console/`);
  await page.getByRole("button", { name: new RegExp(`^${name}`) }).first().click();
  const tree = page.getByRole("region", { name: "Tables" });
  await tree.getByLabel("Filter tables and columns").fill("users");
  const inSchema = tree.locator("details.schema").filter({ has: page.locator("summary > bdi", { hasText: new RegExp(`^${schema}$`) }) });
  const table = inSchema.locator("details.table").filter({ hasText: "users" }).first();
  await table.locator(".columns li").filter({ hasText: /^email/ }).locator(".masked-badge").waitFor();
  const columns = await table.locator(".columns li button").allTextContents();
  assert.deepEqual(columns.sort(), ["email", "id", "name"], "the hidden column is not listed");
  await screenshot(page, `schema-browser-${name.includes("MariaDB") ? "mariadb" : "postgres"}`);
  // A column's name put in by the browser (the table's stays bare: the protected role reads
  // its masks through its search path).
  // The tab keeps the statement it held when another database is picked: it is cleared first.
  const editor = page.getByRole("textbox", { name: "SQL editor" });
  await editor.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.press("Delete");
  await editor.pressSequentially("select id, ", { delay: 0 });
  await page.keyboard.press("Escape");
  await table.locator(".columns li").filter({ hasText: /^email/ }).getByRole("button").click();
  await editor.pressSequentially(" from users", { delay: 0 });
  await page.keyboard.press("Escape");
  assert.equal(await editor.textContent(), "select id, email from users", "the browser put the column's name in");
  await page.keyboard.press("ControlOrMeta+Enter");
  await page.getByText(/^1 row in \d+ ms$/).waitFor();
  const grid = page.getByRole("grid", { name: "Result" });
  await grid.getByText("****@example.org").waitFor();
  const text = await grid.innerText();
  assert.doesNotMatch(text, /alice@example\.org|999-11-0001/, "no protected value in the grid");
}

describe("data protection from the console", { concurrency: false }, () => {
  before(async () => {
    asOwner(
      `DROP SCHEMA IF EXISTS ${MASKS} CASCADE; DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE; CREATE SCHEMA ${SCHEMA};
       CREATE TABLE ${SCHEMA}.users (id int PRIMARY KEY, name text, email text, ssn text);
       INSERT INTO ${SCHEMA}.users VALUES (1, 'Alice', 'alice@example.org', '999-11-0001');`,
    );
    server = await startServer();
    browser = await launchBrowser();
    const made = await server.api("POST", "/api/v1/console/databases", {
      name: "E2E Provisioned",
      adapter: "postgres",
      hostname: "127.0.0.1",
      port: 5432,
      database: "provdb",
      connection_parameters: [{ name: "search_path", value: SCHEMA }],
      credentials: [{ username: "prov_reader", password: "checkpw", default_credential: true }],
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    dbId = made.body.id;
    asMariadbOwner(
      `DROP DATABASE IF EXISTS \`${SHADOW}\`; DROP DATABASE IF EXISTS \`${MARIADB}\`; CREATE DATABASE \`${MARIADB}\`;
       CREATE TABLE \`${MARIADB}\`.users (id INT PRIMARY KEY, name VARCHAR(32), email VARCHAR(64), ssn VARCHAR(16));
       INSERT INTO \`${MARIADB}\`.users VALUES (1, 'Alice', 'alice@example.org', '999-11-0001');`,
    );
    const mariadb = await server.api("POST", "/api/v1/console/databases", {
      name: "E2E MariaDB Provisioned",
      adapter: "mysql",
      hostname: "127.0.0.1",
      port: 3306,
      database: MARIADB,
      credentials: [{ username: "mprov_e2e", password: "checkpw", default_credential: true }],
    });
    assert.equal(mariadb.status, 200, JSON.stringify(mariadb.body));
    mariadbId = mariadb.body.id;
    // The server's sign-in link is good once: both cases use this page.
    ({ page } = await signedIn(browser, server, "admin"));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    asOwner(`DROP SCHEMA IF EXISTS ${MASKS} CASCADE; DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE;`);
    asMariadbOwner(`DROP DATABASE IF EXISTS \`${SHADOW}\`; DROP DATABASE IF EXISTS \`${MARIADB}\`;`);
  });

  it("sets protection up with the provisioning credential, the plan and Apply", async () => {
    const apply = await provisionFromConsole({
      id: dbId,
      name: "E2E Provisioned",
      owner: "dp_app",
      schemas: SCHEMA,
      prefix: `${SCHEMA}.`,
      reader: "prov_reader",
      grant: `GRANT SELECT ("id", "name") ON "${SCHEMA}"."users" TO "prov_reader"`,
    });
    await screenshot(page, "protection-plan");
    await assertAccessible(page, "axe: the provisioning plan");
    await apply();
    // An exemption, kept with the policy it names.
    await page.getByRole("button", { name: "Add an exemption" }).click();
    await page.getByLabel("Kind").last().selectOption("group");
    await page.getByLabel("Exempt user or group").fill("auditors");
    await page.getByRole("button", { name: "Save data protection" }).click();
    await page.getByText(/^Data protection saved/).waitFor();
    const exempting = await server.api("GET", `/api/v1/console/databases/${dbId}/data-protection`);
    assert.deepEqual(exempting.body.policies[0].exempt, [{ subject_kind: "group", subject: "auditors" }]);
    assert.equal(exempting.body.provisioning.username, "dp_app", "the provisioning credential stays");

    // A query as the admin: masked, the hidden column gone.
    await maskedInTheConsole("E2E Provisioned", SCHEMA);
    await screenshot(page, "protection-masked-result");
    // A write on a protected database is refused as read-only, and its query says so in the
    // history (failed, refused before it ran), rather than staying ready.
    const editor = page.getByRole("textbox", { name: "SQL editor" });
    await editor.click();
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.press("Delete");
    await editor.pressSequentially("delete from users", { delay: 0 });
    await page.keyboard.press("Escape");
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.getByText(/runs read-only/).first().waitFor();
    await page.getByRole("link", { name: "History" }).click();
    const refused = page.getByRole("row").filter({ hasText: "delete from users" });
    await refused.getByText("failed").waitFor();
    await refused.getByText(/refused before it ran/).waitFor();
    await assertClean(page, "the data protection screens", [401, 403, 412, 422]);
  });

  it("sets masking up on MariaDB the same way: the login's shadow database of views", async () => {
    const apply = await provisionFromConsole({
      id: mariadbId,
      name: "E2E MariaDB Provisioned",
      owner: "mp_app",
      schemas: "",
      prefix: `${MARIADB}.`,
      reader: "mprov_e2e",
      grant: `GRANT SELECT (\`id\`, \`name\`) ON \`${MARIADB}\`.\`users\` TO 'mprov_e2e'@'%'`,
    });
    await page.getByText(`CREATE DATABASE \`${SHADOW}\``).waitFor();
    await screenshot(page, "protection-plan-mariadb");
    await apply();
    await maskedInTheConsole("E2E MariaDB Provisioned", MARIADB);
    await screenshot(page, "protection-masked-result-mariadb");
    await assertClean(page, "the MariaDB data protection screens", [401, 403, 412, 422]);
  });
});
