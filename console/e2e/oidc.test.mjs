// Signing in to the console through an OIDC issuer (a stand-in the test serves): the browser
// follows the server's redirect to the issuer and back, lands on the console as the user the ID
// token names, with the role its groups give; tokens never reach the page.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startIssuer } from "./issuer.mjs";
import { launchBrowser, screenshot, startServer, unexpectedConsoleErrors, watchedPage } from "./harness.mjs";

const CLIENT_ID = "dbconsole-console";
const CLIENT_SECRET = "e2e-client-secret";

let issuer;
let server;
let browser;

describe("OIDC sign-in", { concurrency: false }, () => {
  before(async () => {
    issuer = await startIssuer({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      claims: { email: "Dana@Example.com", email_verified: true, groups: ["console-admins"] },
    });
    server = await startServer(
      [
        "--oidc-issuer", issuer.base,
        "--oidc-audience", "dbconsole-api",
        "--oidc-client-id", CLIENT_ID,
        "--oidc-super-admin-group", "console-admins",
      ],
      { DBCONSOLE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    );
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await issuer?.close();
  });

  it("signs a browser in through the issuer with PKCE, state and nonce", async () => {
    const context = await browser.newContext({ baseURL: server.base });
    const page = await watchedPage(context);
    await page.goto("/console/history");
    const sso = page.getByRole("link", { name: "Sign in with your organisation's account" });
    await sso.waitFor();
    await screenshot(page, "sign-in-oidc");
    await sso.click();
    // It lands on the page asked for before signing in.
    await page.getByRole("heading", { level: 1, name: /^History/ }).waitFor();
    assert.match(page.url(), /\/console\/history$/);
    await page.getByText("dana@example.com").waitFor();
    await page.getByRole("link", { name: "Databases" }).waitFor();
    const asked = issuer.seen.authorizations[0];
    assert.equal(asked.code_challenge_method, "S256");
    assert.ok(asked.nonce.length >= 32 && asked.state.length >= 32, "a fresh nonce and state");
    assert.equal(asked.redirect_uri, `${server.base}/api/v1/console/oidc/callback`);
    assert.equal(issuer.seen.exchanges, 1);
    const cookies = await context.cookies();
    assert.deepEqual(cookies.map((c) => c.name).sort(), ["dbconsole_session"], "the flow's cookie is gone");
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    assert.doesNotMatch(stored, /eyJ|dbc_/, "no token in the page's reach");
    assert.deepEqual(page.seen.dialogs, []);
    assert.deepEqual(page.seen.pageErrors, []);
    assert.deepEqual(unexpectedConsoleErrors(page.seen), []);
    assert.match(server.output(), /listening on/);
    assert.doesNotMatch(server.output(), new RegExp(CLIENT_SECRET), "the client secret is never logged");
    await context.close();
  });
});
