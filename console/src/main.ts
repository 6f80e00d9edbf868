// The console's entry: sign in with a link when the address carries one, then route.

import "./style.css";
import { App } from "./app";
import { h } from "./dom";
import { dashboardScreen, dashboardsScreen } from "./dashboards";
import { historyScreen, queryPage, reviewsScreen } from "./queries";
import { queryScreen } from "./query";
import { savedListScreen, savedPage } from "./saved";
import { exchangeLink, signInScreen, takeLinkToken, welcomeScreen } from "./signin";

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
    // The account, the door's client page and the operators' screens load when first opened:
    // someone who queries and reads dashboards never fetches them.
    .add(/^account$/, async (a) => (await import("./account")).accountScreen(a))
    .add(/^connect$/, async (a) => (await import("./connect")).connectScreen(a))
    .add(/^users$/, async (a) => (await import("./users")).usersScreen(a))
    .add(/^audit$/, async (a) => (await import("./operations")).auditScreen(a))
    .add(/^outbox$/, async (a) => (await import("./operations")).outboxScreen(a))
    .add(/^databases$/, async (a) => (await import("./databases")).databasesScreen(a))
    .add(/^databases\/new$/, async (a) => (await import("./databases")).databaseScreen(a, null))
    .add(/^databases\/([A-Za-z0-9_]+)$/, async (a, [id]) => (await import("./databases")).databaseScreen(a, id ?? null));
  if (problem) history.replaceState(null, "", "/console/sign-in");
  try {
    await app.render();
  } catch (error) {
    root.append(h("p", { class: "error", attrs: { role: "alert" } }, error instanceof Error ? error.message : String(error)));
  }
}

void start();
