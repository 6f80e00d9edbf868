// The person's own page: who they are, and their browser sessions on every device, each of
// which they may end (another laptop left signed in, a phone lost). Never a secret: the server
// lists ids and times only.

import { ApiError, call, type Page, type Settings } from "./api";
import type { App, Screen } from "./app";
import { field, h, isolated, replace, table } from "./dom";
import { deviceName, enrollPasskey, passkeyProblem, passkeysSupported } from "./passkeys";
import { applySettings, when } from "./clock";

interface MySession {
  id: string;
  method: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  current: boolean;
}

const METHODS: Record<string, string> = {
  key: "a key",
  link: "a sign-in link",
  oidc: "your organisation's account",
  passkey: "a passkey",
  invitation: "an invitation",
};

interface MyPasskey {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}



export async function accountScreen(app: App): Promise<Screen> {
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const list = h("div");

  async function end(session: MySession, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    error.textContent = "";
    try {
      await call<void>("DELETE", `/api/v1/console/me/sessions/${encodeURIComponent(session.id)}`);
      if (session.current) {
        window.dispatchEvent(new Event("dbconsole:signed-out"));
        return;
      }
      app.announce("That session has ended");
      await load();
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.message : String(e);
      button.disabled = false;
    }
  }

  async function load(): Promise<void> {
    const page = await call<Page<MySession>>("GET", "/api/v1/console/me/sessions");
    const rows = page.data.map((session) => {
      const button = h(
        "button",
        { attrs: { type: "button", "aria-label": session.current ? "Sign out here" : `End it: the session signed in ${when(session.created_at)}` } },
        session.current ? "Sign out here" : "End it",
      );
      button.addEventListener("click", () => void end(session, button));
      return h(
        "tr",
        {},
        h("td", {}, session.current ? h("strong", {}, "This browser") : "Another browser"),
        h("td", {}, METHODS[session.method] ?? isolated(session.method)),
        h("td", {}, when(session.created_at)),
        h("td", {}, when(session.last_seen_at)),
        h("td", {}, when(session.expires_at)),
        h("td", {}, button),
      );
    });
    replace(
      list,
      rows.length === 0
        ? h("p", {}, "No session to show.")
        : table("Your sessions, newest first", ["Where", "Signed in with", "Since", "Last seen", "Ends", ""], rows),
    );
  }

  const keysError = h("p", { class: "error", attrs: { role: "alert" } });
  const keysList = h("div");
  async function loadPasskeys(): Promise<void> {
    const page = await call<Page<MyPasskey>>("GET", "/api/v1/console/me/passkeys");
    const rows = page.data.map((passkey) => {
      const remove = h("button", { attrs: { type: "button", "aria-label": `Remove the passkey ${passkey.name}` } }, "Remove");
      remove.addEventListener("click", () => {
        remove.disabled = true;
        keysError.textContent = "";
        void call<void>("DELETE", `/api/v1/console/me/passkeys/${encodeURIComponent(passkey.id)}`)
          .then(() => {
            app.announce(`The passkey ${passkey.name} is removed`);
            return loadPasskeys();
          })
          .catch((e: unknown) => {
            keysError.textContent = e instanceof ApiError ? e.message : String(e);
            remove.disabled = false;
          });
      });
      return h("tr", {}, h("td", {}, isolated(passkey.name)), h("td", {}, when(passkey.created_at)), h("td", {}, passkey.last_used_at ? when(passkey.last_used_at) : "never"), h("td", {}, remove));
    });
    replace(keysList, rows.length === 0 ? h("p", {}, "You have no passkey yet.") : table("Your passkeys", ["Name", "Enrolled", "Last used", ""], rows));
  }
  const keyName = h("input", { attrs: { type: "text", value: deviceName(), maxlength: 100, required: true } });
  const addKey = h("button", { attrs: { type: "submit" } }, "Add a passkey");
  const addForm = h(
    "form",
    {
      class: "inline",
      on: {
        submit: (event) => {
          event.preventDefault();
          addKey.disabled = true;
          keysError.textContent = "";
          void enrollPasskey(keyName.value.trim())
            .then(() => {
              app.announce("Passkey added");
              return loadPasskeys();
            })
            .catch((e: unknown) => {
              keysError.textContent = passkeyProblem(e);
            })
            .finally(() => {
              addKey.disabled = false;
            });
        },
      },
    },
    field("New passkey's name", keyName),
    addKey,
  );

  // Appearance: the theme and the clock, kept in the person's record (every browser they use).
  const settings = await call<Settings>("GET", "/api/v1/console/me/settings");
  const theme = h("select", {}, h("option", { attrs: { value: "" } }, "As the system"), h("option", { attrs: { value: "light" } }, "Light"), h("option", { attrs: { value: "dark" } }, "Dark"));
  theme.value = settings.theme ?? "";
  const zone = h("select", {}, h("option", { attrs: { value: "" } }, `This browser's (${Intl.DateTimeFormat().resolvedOptions().timeZone})`), h("option", { attrs: { value: "UTC" } }, "UTC"));
  zone.value = settings.time_zone ?? "";
  const sample = h("p", { class: "hint" });
  const settingsError = h("p", { class: "error", attrs: { role: "alert" } });
  const drawSample = () => replace(sample, "Times read like this: ", h("time", {}, when(new Date().toISOString())));
  drawSample();
  const keep = () => {
    settingsError.textContent = "";
    void call<Settings>("PUT", "/api/v1/console/me/settings", { theme: theme.value || null, time_zone: zone.value || null }).then(
      (kept) => {
        applySettings(kept);
        drawSample();
        app.announce("Settings kept");
      },
      (e: unknown) => {
        settingsError.textContent = e instanceof ApiError ? e.message : String(e);
      },
    );
  };
  theme.addEventListener("change", keep);
  zone.addEventListener("change", keep);

  await load();
  await loadPasskeys();
  const me = app.me;
  return {
    title: "Your account",
    element: h(
      "section",
      {},
      h("h1", {}, "Your account"),
      h("p", {}, "Signed in as ", h("strong", {}, isolated(me?.user ?? "")), me?.role === "super-admin" ? " (a super admin)." : "."),
      h("h2", {}, "Appearance"),
      h("div", { class: "row" }, field("Theme", theme), field("Times shown in", zone)),
      sample,
      settingsError,
      h("h2", {}, "Your passkeys"),
      h("p", {}, "Sign in with a passkey on each device you use. You add one from a session signed in with a passkey, an invitation or a link (not with a key, nor your organisation's account, which stays your way in)."),
      keysError,
      keysList,
      passkeysSupported() ? addForm : h("p", {}, "This browser can't make passkeys."),
      h("h2", {}, "Your sessions"),
      h("p", {}, "Every browser signed in as you. End one you no longer use, or one you do not recognise."),
      error,
      list,
    ),
  };
}
