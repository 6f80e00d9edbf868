// The app's frame: who is signed in, the navigation, the routes under /console/, and signing
// out (which ends the session on the server and forgets the drafts).

import { call, type Me, type Page, type Query, type Settings } from "./api";
import { applySettings } from "./clock";
import { h, replace } from "./dom";

export const BASE = "/console/";

export interface Screen {
  /** The screen's title (the page's `<h1>` and `document.title`). */
  title: string;
  element: HTMLElement;
  /** Called when the screen leaves the page. */
  leave?: () => void;
  /** Whether leaving would lose work (a query running, unsaved changes): the router asks first,
   * with this question when it is text. */
  busy?: () => boolean | string;
}

export type Route = (app: App, params: string[]) => Screen | Promise<Screen>;

interface RouteEntry {
  pattern: RegExp;
  route: Route;
}

/** What one screen hands the query console: a query to load into the editor, or to run. */
export interface Handoff {
  load?: string;
  run?: string;
  bypass?: string;
  /** A statement to put into the editor for a database and credential (a saved query's). */
  text?: { database_id: string; credential_id: string; query: string; title?: string };
}

export class App {
  me: Me | null = null;
  handoff: Handoff | null = null;
  /** Whose settings the page follows now. */
  private settingsFor: string | null = null;
  private readonly routes: RouteEntry[] = [];
  private current: Screen | null = null;
  private readonly main: HTMLElement;
  private readonly nav: HTMLElement;
  private readonly status: HTMLElement;
  /** How many queries wait for the caller's review, beside "Reviews". */
  private readonly pending = h("span", { class: "badge", attrs: { hidden: true } });

  constructor(root: HTMLElement) {
    this.nav = h("nav", { attrs: { "aria-label": "Console" } });
    this.main = h("main", { attrs: { id: "main", tabindex: -1 } });
    this.status = h("div", { class: "sr-only", attrs: { role: "status", "aria-live": "polite" } });
    replace(
      root,
      h("a", { class: "skip", attrs: { href: "#main" } }, "Skip to content"),
      h("header", { class: "top" }, h("span", { class: "brand" }, "dbconsole"), this.nav),
      this.main,
      this.status,
    );
    window.addEventListener("popstate", () => void this.render());
    window.addEventListener("dbconsole:signed-out", () => {
      if (this.me) {
        this.me = null;
        void this.go(signInPath(currentPath()), true);
      }
    });
    document.addEventListener("click", (event) => {
      const link = (event.target as Element | null)?.closest?.("a[data-route]");
      if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
      event.preventDefault();
      void this.go((link.getAttribute("href") ?? BASE).slice(BASE.length));
    });
  }

  add(pattern: RegExp, route: Route): this {
    this.routes.push({ pattern, route });
    return this;
  }

  /** Says `text` to screen readers. */
  announce(text: string): void {
    this.status.textContent = text;
  }

  /** A link to a route of the app. */
  link(path: string, ...children: (string | Node)[]): HTMLAnchorElement {
    return h("a", { attrs: { href: BASE + path, "data-route": "" } }, ...children);
  }

  async go(path: string, replaceState = false): Promise<void> {
    const busy = this.current?.busy?.();
    if (busy && !window.confirm(typeof busy === "string" ? busy : "A query is still running. Leave and cancel it?")) return;
    const url = BASE + path;
    if (replaceState) history.replaceState(null, "", url);
    else history.pushState(null, "", url);
    await this.render();
  }

  async render(): Promise<void> {
    const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "";
    if (!this.me && path !== "sign-in") {
      try {
        this.me = await call<Me>("GET", "/api/v1/console/me");
      } catch {
        this.me = null;
      }
      if (!this.me) {
        // The page asked for is kept: signing in lands on it.
        history.replaceState(null, "", BASE + signInPath(path + location.search));
        return this.render();
      }
    }
    // The person's theme and clock, before any screen shows a time (once per person: a sign-in
    // sets `me` without this path's read).
    if (this.me?.may.query && this.settingsFor !== this.me.user) {
      this.settingsFor = this.me.user;
      try {
        applySettings(await call<Settings>("GET", "/api/v1/console/me/settings"));
      } catch {
        // The defaults: the system's theme, the browser's zone.
      }
    }
    this.drawNav(path);
    if (this.me?.may.review) void this.countPending();
    for (const { pattern, route } of this.routes) {
      const match = pattern.exec(path);
      if (!match) continue;
      this.current?.leave?.();
      let screen: Screen;
      try {
        screen = await route(this, match.slice(1).map(decodeURIComponent));
      } catch (error) {
        // A 401 while the screen loaded signed the app out: the sign-in screen is on its way.
        if (!this.me) return;
        throw error;
      }
      this.current = screen;
      document.title = `${screen.title} · dbconsole`;
      replace(this.main, screen.element);
      this.main.dispatchEvent(new CustomEvent("screen:shown", { bubbles: true }));
      return;
    }
    replace(this.main, h("h1", {}, "Not found"), h("p", {}, "There is no such page in the console."));
  }

  private drawNav(path: string): void {
    if (!this.me) {
      this.nav.replaceChildren();
      return;
    }
    const item = (target: string, label: string, ...more: Node[]) => {
      const link = this.link(target, label, ...more);
      const here = target === "" ? path === "" : path.startsWith(target);
      if (here) link.setAttribute("aria-current", "page");
      return h("li", {}, link);
    };
    const me = this.me;
    replace(
      this.nav,
      h(
        "ul",
        {},
        me.may.query && item("", "Query"),
        me.may.query && item("saved", "Saved"),
        me.may.query && item("history", "History"),
        me.may.query && !me.agent && item("connect", "Your client"),
        me.may.review && item("reviews", "Reviews", this.pending),
        (me.may.query || me.may.manage_dashboards) && item("dashboards", "Dashboards"),
        me.may.manage_databases && item("databases", "Databases"),
        me.may.read_audit && item("audit", "Audit"),
        me.may.read_audit && item("outbox", "Outbox"),
        me.may.manage_databases && item("users", "Users"),
      ),
      h(
        "div",
        { class: "who" },
        me.user ? this.link("account", me.user) : h("span", {}, "(no user)"),
        h("button", { attrs: { type: "button" }, on: { click: () => void this.signOut() } }, "Sign out"),
      ),
    );
  }

  /** Counts what waits for the caller's review (up to 100; "99+" past it) for the navigation. */
  async countPending(): Promise<void> {
    try {
      const page = await call<Page<Query>>("GET", "/api/v1/console/queries?status=awaiting_review&reviewer=me&limit=100");
      const count = page.data.length;
      this.pending.hidden = count === 0;
      replace(this.pending, page.next ? "99+" : String(count), h("span", { class: "sr-only" }, " waiting"));
    } catch {
      // The count is a hint: the Reviews screen says what waits.
    }
  }

  async signOut(): Promise<void> {
    try {
      await call<void>("POST", "/api/v1/console/sign-out");
    } finally {
      forgetDrafts();
      applySettings({ theme: null, time_zone: null });
      this.settingsFor = null;
      this.me = null;
      this.current?.leave?.();
      this.current = null;
      history.replaceState(null, "", `${BASE}sign-in`);
      await this.render();
    }
  }
}

/** The app path (below /console/, with its query) the address bar shows now. */
function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "";
  return path + location.search;
}

/** The sign-in screen's path, keeping `next` (an app path) to land on after signing in. */
export function signInPath(next: string): string {
  const kept = safeNext(next);
  return kept && !kept.startsWith("sign-in") ? `sign-in?next=${encodeURIComponent(kept)}` : "sign-in";
}

/**
 * `next` when it is a path of the app (letters, digits, `_`, `-`, `/` and a query): anything
 * else (another origin, `//`, `..`, a scheme) is no place to land, and is dropped.
 */
export function safeNext(next: string | null): string {
  if (!next) return "";
  if (!/^[A-Za-z0-9_\-/]*(\?[A-Za-z0-9_\-=&%.+]*)?$/.test(next)) return "";
  if (next.startsWith("/") || next.includes("//") || next.includes("..")) return "";
  return next;
}

/** Where to land after signing in: the `next` of the sign-in screen's address. */
export function landing(): string {
  return safeNext(new URLSearchParams(location.search).get("next"));
}

const DRAFT_PREFIX = "dbconsole.draft.";

/** The draft of the editor for this user and database (text only: never rows or secrets). */
export function loadDraft(user: string, database: string): string | null {
  try {
    return localStorage.getItem(`${DRAFT_PREFIX}${user}.${database}`);
  } catch {
    return null;
  }
}

export function saveDraft(user: string, database: string, text: string): void {
  try {
    localStorage.setItem(`${DRAFT_PREFIX}${user}.${database}`, text);
  } catch {
    // Storage full or refused: drafts are a convenience.
  }
}

export function forgetDrafts(): void {
  try {
    for (const key of Object.keys(localStorage)) {
      if (key.startsWith("dbconsole.")) localStorage.removeItem(key);
    }
  } catch {
    // Nothing stored.
  }
}
