// The editor's tabs: each a statement with its database and credential, kept in the browser per
// user (localStorage, `dbconsole.tabs.<user>`), and forgotten at sign-out as drafts are.

import { h, replace, visible } from "./dom";

export interface Tab {
  id: string;
  /** A name given to it (a saved query's, a query's title), or "" for its statement's start. */
  title: string;
  database_id: string | null;
  credential_id: string | null;
  text: string;
}

interface Kept {
  tabs: Tab[];
  active: number;
}

const KEY = "dbconsole.tabs.";
/** The most tabs kept. */
export const MAX_TABS = 20;

export function newTab(database_id: string | null, text = "", title = "", credential_id: string | null = null): Tab {
  return { id: Math.random().toString(36).slice(2, 10), title, database_id, credential_id, text };
}

/** The tabs `user` kept in this browser (none: an empty list). */
export function loadTabs(user: string): Kept {
  try {
    const kept = JSON.parse(localStorage.getItem(KEY + user) ?? "null") as Kept | null;
    if (kept && Array.isArray(kept.tabs) && kept.tabs.length > 0) {
      const tabs = kept.tabs
        .filter((t) => t && typeof t.text === "string")
        .slice(0, MAX_TABS)
        .map((t) => ({ ...newTab(null), ...t }));
      const active = Number.isInteger(kept.active) && kept.active >= 0 && kept.active < tabs.length ? kept.active : 0;
      if (tabs.length > 0) return { tabs, active };
    }
  } catch {
    // Nothing kept, or not readable: start afresh.
  }
  return { tabs: [], active: 0 };
}

export function saveTabs(user: string, kept: Kept): void {
  try {
    localStorage.setItem(KEY + user, JSON.stringify(kept));
  } catch {
    // Storage full or refused: tabs are a convenience.
  }
}

/** A tab's label: its title, else its statement's first words, else "New tab". */
export function tabLabel(tab: Tab): string {
  const words = visible(tab.title || tab.text.replace(/\s+/g, " ").trim());
  if (!words) return "New tab";
  return words.length > 28 ? `${words.slice(0, 27)}…` : words;
}

/** The tab bar (the ARIA tabs pattern: arrow keys move between tabs). */
export class TabBar {
  readonly element: HTMLElement;
  private readonly list: HTMLElement;
  private readonly closeButton: HTMLButtonElement;

  constructor(
    private readonly actions: { select: (index: number) => void; close: (index: number) => void; add: () => void },
    controls: string,
  ) {
    this.list = h("div", { class: "tab-list", attrs: { role: "tablist", "aria-label": "Editor tabs" } });
    this.closeButton = h("button", { attrs: { type: "button", title: "Close the tab shown" }, on: { click: () => actions.close(this.active) } }, "Close tab");
    this.list.addEventListener("keydown", (event) => {
      const tabs = [...this.list.querySelectorAll<HTMLElement>("[role=tab]")];
      const at = tabs.indexOf(document.activeElement as HTMLElement);
      if (at < 0) return;
      const to = event.key === "ArrowRight" ? (at + 1) % tabs.length : event.key === "ArrowLeft" ? (at - 1 + tabs.length) % tabs.length : event.key === "Home" ? 0 : event.key === "End" ? tabs.length - 1 : -1;
      if (to < 0) return;
      event.preventDefault();
      this.actions.select(to);
      this.list.querySelectorAll<HTMLElement>("[role=tab]")[to]?.focus();
    });
    this.element = h(
      "div",
      { class: "tabs" },
      this.list,
      h("button", { class: "new-tab", attrs: { type: "button", title: "A new tab" }, on: { click: () => actions.add() } }, "+ New tab"),
      this.closeButton,
    );
    this.controls = controls;
  }

  private readonly controls: string;

  private active = 0;

  draw(tabs: Tab[], active: number): void {
    this.active = active;
    this.closeButton.disabled = tabs.length < 2;
    replace(
      this.list,
      ...tabs.map((tab, index) =>
        h(
          "button",
          {
            class: `tab${index === active ? " active" : ""}`,
            attrs: { type: "button", role: "tab", "aria-selected": index === active ? "true" : "false", "aria-controls": this.controls, tabindex: index === active ? 0 : -1 },
            on: { click: () => this.actions.select(index) },
          },
          tabLabel(tab),
        ),
      ),
    );
  }
}
