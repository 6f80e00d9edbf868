// The console's entry: sign in with a link when the address carries one, then route.

import "./style.css";
import { App } from "./app";
import { h } from "./dom";
import { dashboardScreen, dashboardsScreen } from "./dashboards";
import { databaseScreen, databasesScreen } from "./databases";
import { accountScreen } from "./account";
import { auditScreen, outboxScreen } from "./operations";
import { historyScreen, queryPage, reviewsScreen } from "./queries";
import { queryScreen } from "./query";
import { savedListScreen, savedPage } from "./saved";
import { connectScreen } from "./connect";
import { exchangeLink, signInScreen, takeLinkToken, welcomeScreen } from "./signin";
import { usersScreen } from "./users";

async function start(): Promise<void> {
  const root = document.getElementById("app");
  if (!root) return;
  const app = new App(root);
  let problem: string | null = null;
  const link = takeLinkToken();
  if (link) problem = await exchangeLink(app, link);
  if (link?.kind === "invite" && !problem) {
    // Enrolled: a passkey for this device first, then the page the link was opened on.
    const opened = location.pathname.startsWith("/console/") ? location.pathname.slice("/console/".length) : "";
    history.replaceState(null, "", `/console/welcome${opened ? `?next=${encodeURIComponent(opened)}` : ""}`);
  }
  app
    .add(/^sign-in$/, (a) => {
      const screen = signInScreen(a, problem);
      problem = null;
      return screen;
    })
    .add(/^$/, (a) => queryScreen(a))
    .add(/^history$/, (a) => historyScreen(a))
    .add(/^reviews$/, (a) => reviewsScreen(a))
    .add(/^saved$/, (a) => savedListScreen(a))
    .add(/^saved\/([A-Za-z0-9_]+)$/, (a, [id]) => savedPage(a, id ?? ""))
    .add(/^queries\/([A-Za-z0-9_]+)$/, (a, [id]) => queryPage(a, id ?? ""))
    .add(/^dashboards$/, (a) => dashboardsScreen(a))
    // The editor (and its layout and display parts) loads only for those who edit.
    .add(/^dashboards\/new$/, async (a) => (await import("./dashboard-editor")).dashboardEditor(a, null))
    .add(/^dashboards\/([A-Za-z0-9_]+)\/edit$/, async (a, [id]) => (await import("./dashboard-editor")).dashboardEditor(a, id ?? null))
    .add(/^dashboards\/([A-Za-z0-9_]+)$/, (a, [id]) => dashboardScreen(a, id ?? ""))
    .add(/^welcome$/, (a) => welcomeScreen(a))
    .add(/^account$/, (a) => accountScreen(a))
    .add(/^connect$/, (a) => connectScreen(a))
    .add(/^users$/, (a) => usersScreen(a))
    .add(/^audit$/, (a) => auditScreen(a))
    .add(/^outbox$/, (a) => outboxScreen(a))
    .add(/^databases$/, (a) => databasesScreen(a))
    .add(/^databases\/new$/, (a) => databaseScreen(a, null))
    .add(/^databases\/([A-Za-z0-9_]+)$/, (a, [id]) => databaseScreen(a, id ?? null));
  if (problem) history.replaceState(null, "", "/console/sign-in");
  try {
    await app.render();
  } catch (error) {
    root.append(h("p", { class: "error", attrs: { role: "alert" } }, error instanceof Error ? error.message : String(error)));
  }
}

void start();
