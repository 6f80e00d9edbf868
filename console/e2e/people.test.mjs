// People in a real browser: a super admin invites a person from the Users screen; the invitee
// opens the link, enrolls a passkey (Chromium's virtual authenticator: ctap2, internal, resident
// keys, user verification), signs out, signs in with the passkey and lands on the page they
// opened; the admin sees their last sign-in, changes their groups, deactivates them, and their
// open page's next request is refused. The server runs with --public-url http://localhost:PORT
// (WebAuthn takes no IP address).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { assertAccessible, freePort, launchBrowser, screenshot, startServer, unexpectedConsoleErrors, watchedPage } from "./harness.mjs";

let server;
let browser;
let origin;

/** A page with a virtual platform authenticator that holds resident keys and verifies users. */
async function withAuthenticator(context, page) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

describe("people: invitations, passkeys, users", { concurrency: false }, () => {
  before(async () => {
    const port = await freePort();
    origin = `http://localhost:${port}`;
    server = await startServer(["--public-url", origin], {}, { listen: `127.0.0.1:${port}` });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("invites, enrolls a passkey, signs in with it to a deep link, and a deactivation ends it", async () => {
    // The first start's link names the public URL.
    assert.match(server.output(), new RegExp(`${origin}/console/#sign-in=dbc_sil_`), "the bootstrap link starts with --public-url");
    const adminLink = `${origin}${new URL(server.link).pathname}${new URL(server.link).hash}`;
    const adminContext = await browser.newContext({ baseURL: origin });
    const admin = await watchedPage(adminContext);
    await admin.goto(adminLink);
    await admin.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
    await admin.getByRole("link", { name: "Users", exact: true }).click();
    await admin.getByRole("heading", { level: 1, name: "Users" }).waitFor();
    await admin.getByLabel("E-mail or login").fill("Erin@Example.com");
    await admin.getByLabel("Groups", { exact: true }).fill("analysts");
    await admin.getByRole("button", { name: "Invite" }).click();
    const handed = admin.getByRole("textbox", { name: /^Invitation link for erin@example.com/ });
    await handed.waitFor();
    const invitation = await handed.inputValue();
    assert.match(invitation, new RegExp(`^${origin}/console/#invite=dbc_inv_[A-Za-z0-9_-]{43}$`));
    await admin.getByRole("table", { name: "Pending invitations" }).getByText("erin@example.com").waitFor();
    await screenshot(admin, "users-invited");
    await assertAccessible(admin, "the Users screen");

    // The invitee enrolls a passkey on their device.
    const erinContext = await browser.newContext({ baseURL: origin });
    const erin = await watchedPage(erinContext);
    const { cdp, authenticatorId } = await withAuthenticator(erinContext, erin);
    await erin.goto(invitation);
    await erin.getByRole("heading", { level: 1, name: /^Welcome, erin@example.com/ }).waitFor();
    assert.doesNotMatch(erin.url(), /invite=/, "the token leaves the address bar");
    await erin.getByLabel("Name it").fill("Erin's laptop");
    await erin.getByRole("button", { name: "Create a passkey" }).click();
    await erin.getByText("Your passkey is ready").waitFor();
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    assert.equal(credentials.length, 1, "one passkey on the device");
    assert.equal(credentials[0].isResidentCredential, true, "a discoverable credential");
    await screenshot(erin, "welcome-passkey");
    // Used once: the same invitation signs nobody in again.
    const again = await fetch(`${server.base}/api/v1/console/sign-in/invitation`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-dbconsole-request": "1", origin },
      body: JSON.stringify({ token: invitation.split("#invite=")[1] }),
    });
    assert.equal(again.status, 401, "an invitation is single use");

    // Signed out, a deep link keeps its place through the passkey sign-in.
    await erin.getByRole("button", { name: "Sign out" }).click();
    await erin.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await erin.goto("/console/history");
    await erin.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    assert.match(erin.url(), /\/console\/sign-in\?next=history$/);
    await screenshot(erin, "sign-in-passkey");
    await erin.getByRole("button", { name: "Sign in with a passkey" }).click();
    await erin.getByRole("heading", { level: 1, name: /^History/ }).waitFor();
    assert.match(erin.url(), /\/console\/history$/);
    const me = await erin.evaluate(async () => (await fetch("/api/v1/console/me", { headers: { "x-dbconsole-request": "1" } })).json());
    assert.equal(me.user, "erin@example.com");
    assert.deepEqual(me.groups, ["analysts"]);
    assert.equal(me.scope, "query", "a member's passkey session has a member's scope");
    await erin.getByRole("link", { name: "erin@example.com" }).click();
    await erin.getByRole("table", { name: "Your passkeys" }).getByText("Erin's laptop").waitFor();
    await erin.getByRole("table", { name: /Your sessions/ }).getByText("a passkey").waitFor();
    await assertAccessible(erin, "the account page with passkeys");

    // The admin sees the last sign-in, and moves Erin to another group: her session follows.
    await admin.reload();
    const row = admin.getByRole("row", { name: /erin@example\.com/ });
    await row.waitFor();
    assert.doesNotMatch(await row.innerText(), /never/, "the last sign-in is shown");
    await row.getByRole("button", { name: "Edit erin@example.com" }).click();
    await admin.getByRole("form", { name: "Edit erin@example.com" }).getByLabel("Groups").fill("analysts, oncall");
    await admin.getByRole("button", { name: "Save" }).click();
    await admin.getByRole("row", { name: /analysts, oncall/ }).waitFor();
    const regrouped = await erin.evaluate(async () => (await fetch("/api/v1/console/me", { headers: { "x-dbconsole-request": "1" } })).json());
    assert.deepEqual(regrouped.groups, ["analysts", "oncall"], "a passkey session carries the record's groups as they are now");

    // Deactivated: her open page's next request is refused, and the passkey no longer signs in.
    await admin.getByRole("button", { name: "Deactivate erin@example.com" }).click();
    await admin.getByRole("dialog").getByRole("button", { name: "Deactivate" }).click();
    await admin.getByRole("row", { name: /erin@example\.com.*Deactivated/ }).waitFor();
    await screenshot(admin, "users-deactivated");
    await erin.getByRole("link", { name: "History" }).click();
    await erin.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await erin.getByRole("button", { name: "Sign in with a passkey" }).click();
    await erin.getByText(/deactivated/).waitFor();
    await erin.goto("/console/");
    await erin.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();

    // Nothing secret in the browser's storage, no script ran that should not have.
    for (const page of [admin, erin]) {
      const stored = await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }));
      assert.doesNotMatch(stored, /dbc_(inv|sil|ses|ak|at)_/, "no token in browser storage");
      assert.deepEqual(await page.violations(), [], "no CSP violation");
      assert.deepEqual(page.seen.pageErrors, []);
      assert.deepEqual(page.seen.dialogs, []);
      assert.deepEqual(unexpectedConsoleErrors(page.seen, [401, 403, 409]), []);
    }
    await adminContext.close();
    await erinContext.close();
  });
});
