// The browser tests' harness: the real dbconsole binary (as cargo built it) on a fresh redb
// data directory, a real PostgreSQL to query, and Debian's Chromium driven by playwright-core.
// Nothing downloads a browser. A missing binary, browser or database fails the run loudly.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, "../..");
export const BINARY = process.env.DBCONSOLE_BIN ?? join(ROOT, "target/debug/dbconsole");
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const SCREENSHOTS = join(ROOT, "target/console-screenshots");
/** The PostgreSQL the tests query: what .ci/db-servers-up.sh starts. */
export const PG = { host: "127.0.0.1", port: 5432, database: "checkdb", username: "checker", password: "checkpw" };

export const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Starts the server; resolves once it listens, with what its first start printed. */
export async function startServer(extraArgs = [], extraEnv = {}, { listen = "127.0.0.1:0" } = {}) {
  if (!existsSync(BINARY)) {
    throw new Error(`the dbconsole binary is missing at ${BINARY}: build it first (cargo build -p dbconsole-server)`);
  }
  const dataDir = mkdtempSync(join(tmpdir(), "dbconsole-e2e-"));
  const child = spawn(BINARY, ["serve", "--listen", listen, "--data-dir", join(dataDir, "data"), ...extraArgs], {
    env: { ...process.env, DBCONSOLE_API_KEY: "", DBCONSOLE_ACCESS_TOKEN: "", RUST_LOG: "warn", ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk) => {
    err += chunk;
  });
  const started = await new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within 30 s:\n${out}\n${err}`)), 30_000);
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const listening = /listening on (\S+)/.exec(out);
      if (listening) {
        clearTimeout(timer);
        resolveStart(listening[1]);
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before listening:\n${out}\n${err}`));
    });
  });
  const base = `http://${started}`;
  const apiKey = /api-key\s+\S+\s+(dbc_ak_\S+)/.exec(out)?.[1];
  // The link names the server as its public URL says (localhost for a loopback address): the
  // tests reach it at the address it listens on, where their cookies live.
  const link = /http:\/\/\S+(\/console\/#sign-in=\S+)/.exec(out)?.[1];
  if (!apiKey || !link) throw new Error(`the first start printed no API key or sign-in link:\n${out}`);
  const server = {
    base,
    apiKey,
    link: link && base + link,
    dataDir,
    output: () => out + err,
    /** `dbconsole keys create` for a user; its secret. */
    userKey(user, { role = "member", scope = "query", groups = [] } = {}) {
      const args = ["keys", "create", "--kind", "api-key", "--scope", scope, "--name", `e2e ${user}`, "--user", user, "--role", role, "--data-dir", join(dataDir, "data")];
      if (groups.length) args.push("--groups", groups.join(","));
      const made = spawnSync(BINARY, args, { encoding: "utf8" });
      const secret = /secret:\s+(\S+)/.exec(made.stdout)?.[1];
      if (made.status !== 0 || !secret) throw new Error(`keys create failed: ${made.stdout}${made.stderr}`);
      return secret;
    },
    /** A JSON request with the API key (or `key`), answering status and body. */
    async api(method, path, body, key = apiKey, headers = {}) {
      const response = await fetch(base + path, {
        method,
        headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}), ...headers },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await response.text();
      let json;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = text;
      }
      return { status: response.status, body: json, headers: response.headers };
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await new Promise((done) => child.on("exit", done));
      }
    },
  };
  return server;
}

/** A TCP port free now on 127.0.0.1 (for a server whose public URL must name its port). */
export async function freePort() {
  const { createServer } = await import("node:net");
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolvePort(port));
    });
  });
}

/** Debian's Chromium, headless, with a fresh profile (playwright makes one per launch). */
export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: install Debian's chromium (bash .ci/tools-up.sh)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}

/**
 * A page that records what must never happen: dialogs (a script ran alert()), CSP violations,
 * page errors, and console errors (but for the HTTP refusals a test provokes, listed in
 * `allowed`).
 */
export async function watchedPage(context) {
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const seen = { dialogs: [], violations: [], pageErrors: [], consoleErrors: [] };
  page.on("dialog", (dialog) => {
    seen.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on("pageerror", (error) => seen.pageErrors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") seen.consoleErrors.push(message.text());
  });
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (event) => {
      window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`);
    });
  });
  page.seen = seen;
  page.violations = async () => page.evaluate(() => window.__violations ?? []);
  return page;
}

/** Console errors that are not the HTTP refusals (4xx) a test provoked on purpose. */
export function unexpectedConsoleErrors(seen, allowedStatuses = [401, 403, 409, 412]) {
  return seen.consoleErrors.filter((text) => {
    const status = /status of (\d{3})/.exec(text)?.[1];
    return !(status && allowedStatuses.includes(Number(status)));
  });
}

/** Runs axe-core in the page: its serious and critical violations. */
export async function axeViolations(page) {
  const source = readFileSync(join(ROOT, "console/node_modules/axe-core/axe.min.js"), "utf8");
  await page.evaluate(source);
  const result = await page.evaluate(async () => {
    const report = await axe.run(document, { resultTypes: ["violations"] });
    return report.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) }));
  });
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

export async function screenshot(page, name) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Polls `check` until it answers truthy, at most `ms`. */
export async function eventually(check, ms = 10_000, what = "the condition") {
  const until = Date.now() + ms;
  let last;
  for (;;) {
    last = await check();
    if (last) return last;
    if (Date.now() > until) throw new Error(`${what} did not hold within ${ms} ms (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A watched page signed in: with the server's one-time link for `"admin"`, else with the key `how`. */
export async function signedIn(browser, server, how) {
  const context = await browser.newContext({ baseURL: server.base });
  const page = await watchedPage(context);
  if (how === "admin") {
    await page.goto(server.admin ?? server.link);
  } else {
    await page.goto("/console/");
    await page.getByLabel("Key").fill(how);
    await page.getByRole("button", { name: "Sign in" }).click();
  }
  await page.getByRole("heading", { level: 1, name: /^Query/ }).waitFor();
  return { context, page };
}

export async function assertAccessible(page, what) {
  const found = await axeViolations(page);
  assert.deepEqual(found, [], `${what}: ${JSON.stringify(found, null, 1)}`);
}

/** Nothing a script or a policy violation would leave; the console errors since the last check
 * are only the refusals (`provoked` statuses) the test asked for. */
export async function assertClean(page, what, provoked = [401, 403]) {
  assert.deepEqual(page.seen.dialogs, [], `${what}: no script ran (no dialog)`);
  assert.deepEqual(await page.violations(), [], `${what}: no CSP violation`);
  assert.deepEqual(page.seen.pageErrors, [], `${what}: no page error`);
  assert.deepEqual(unexpectedConsoleErrors(page.seen, provoked), [], `${what}: no console error`);
  page.seen.consoleErrors.length = 0;
}
