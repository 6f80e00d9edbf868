// "Connect your own client" in a real browser: a person opens the screen, sees each PostgreSQL
// database's connection facts (a hostile name stays text), makes a door password (shown once),
// and psql 15 connects through the door with it; revoked from the screen, it no longer does.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { assertAccessible, assertClean, PG, launchBrowser, screenshot, signedIn, startServer } from "./harness.mjs";

let server;
let browser;
let door;

function psql(conninfo, password, sql) {
  const ran = spawnSync("psql", [conninfo, "-X", "-Atc", sql], {
    encoding: "utf8",
    env: { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: "10" },
    timeout: 30_000,
  });
  if (ran.error) throw new Error(`psql (Debian's postgresql-client) must be installed: ${ran.error.message}`);
  return ran;
}

describe("the door's screen", { concurrency: false }, () => {
  before(async () => {
    server = await startServer(["--door-listen", "127.0.0.1:0"]);
    door = /PostgreSQL door on (\S+)/.exec(server.output())?.[1];
    assert.ok(door, `the server printed its door: ${server.output()}`);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("shows the facts, makes a password psql signs in with, and revokes it", async () => {
    const hostile = "<img src=x onerror=alert(1)> orders\u202e";
    const made = await server.api("POST", "/api/v1/console/databases", {
      name: hostile,
      adapter: "postgres",
      hostname: PG.host,
      port: PG.port,
      database: PG.database,
      credentials: [{ username: PG.username, password: PG.password }],
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const id = made.body.id;
    const { page } = await signedIn(browser, server, "admin");
    await page.getByRole("link", { name: "Your client", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Connect your own client" }).waitFor();
    const panel = page.getByRole("region", { name: /orders/ });
    await panel.waitFor();
    assert.equal(await page.locator("img").count(), 0, "the hostile name is text");
    const [, port] = door.split(":");
    const psqlText = await panel.locator("code").first().textContent();
    assert.equal(psqlText, `psql "host=localhost port=${port} dbname=${id} user=admin sslmode=require"`);
    const jdbc = await panel.locator("code").nth(1).textContent();
    assert.equal(jdbc, `jdbc:postgresql://localhost:${port}/${id}?user=admin&sslmode=require`);
    await assertAccessible(page, "the door's screen");

    await page.getByLabel("Days it lasts").fill("3");
    await page.getByRole("button", { name: "Make a door password" }).click();
    const secret = page.getByRole("textbox", { name: "Your new door password" });
    await secret.waitFor();
    const password = await secret.inputValue();
    assert.match(password, /^dbc_dpw_/);
    await page.getByRole("table", { name: "Your door passwords" }).waitFor();
    await screenshot(page, "door-connect");
    assert.equal(await page.evaluate(() => JSON.stringify(localStorage) + JSON.stringify(sessionStorage)).then((s) => s.includes(password)), false, "the password is in no browser storage");

    const conninfo = `host=127.0.0.1 port=${port} dbname=${id} user=admin sslmode=require`;
    const ran = psql(conninfo, password, "select 40 + 2");
    assert.equal(ran.status, 0, ran.stderr);
    assert.equal(ran.stdout, "42\n");

    await page.getByRole("button", { name: /^Revoke the door password/ }).click();
    await page.getByText("You have no door password.").waitFor();
    const refused = psql(conninfo, password, "select 1");
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /password authentication failed/);
    await assertClean(page, "the door's screen");
  });
});
