// Signing in: a user-bound key typed into the form, or a one-time sign-in link whose token
// arrives in the URL's fragment (never sent to a server by the browser) and leaves the address
// bar before it is exchanged.

import { ApiError, call, type Me } from "./api";
import { type App, landing, type Screen } from "./app";
import { field, h, replace } from "./dom";

/** The token of a sign-in link in the fragment, removed from the address bar at once. */
export function takeLinkToken(): string | null {
  const match = /^#sign-in=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (!match) return null;
  history.replaceState(null, "", location.pathname + location.search);
  return match[1] ?? null;
}

export async function exchangeLink(app: App, token: string): Promise<string | null> {
  try {
    app.me = await call<Me>("POST", "/api/v1/console/sign-in/link", { token });
    return null;
  } catch (error) {
    return error instanceof ApiError ? error.message : String(error);
  }
}

export function signInScreen(app: App, problem: string | null = null): Screen {
  const key = h("input", { attrs: { type: "password", autocomplete: "off", required: true, spellcheck: "false" } });
  const error = h("p", { class: "error", attrs: { role: "alert" } }, problem ?? "");
  const submit = h("button", { attrs: { type: "submit" } }, "Sign in");
  const form = h(
    "form",
    {
      class: "card",
      attrs: { "aria-labelledby": "sign-in-title" },
      on: {
        submit: (event) => {
          event.preventDefault();
          submit.disabled = true;
          error.textContent = "";
          void call<Me>("POST", "/api/v1/console/sign-in", { key: key.value })
            .then((me) => {
              key.value = "";
              app.me = me;
              return app.go(landing(), true);
            })
            .catch((e: unknown) => {
              error.textContent = e instanceof ApiError ? e.message : String(e);
              key.focus();
            })
            .finally(() => {
              submit.disabled = false;
            });
        },
      },
    },
    h("h1", { attrs: { id: "sign-in-title" } }, "Sign in"),
    h(
      "p",
      {},
      "Open the sign-in link your administrator gave you, or paste the personal key they made for you. " +
        "If you have neither, ask whoever runs dbconsole for your team.",
    ),
    field("Key", key),
    error,
    submit,
  );
  const sso = h("p", { class: "sso", attrs: { hidden: true } });
  // The server answers 200 here when browsers may sign in through its OIDC issuer.
  void fetch("/api/v1/console/oidc", { credentials: "same-origin", cache: "no-store" }).then(async (response) => {
    const answer = (await response.json().catch(() => null)) as { enabled?: boolean } | null;
    if (!response.ok || answer?.enabled !== true) return;
    const returnTo = encodeURIComponent(`/console/${landing()}`);
    replace(sso, h("a", { class: "button primary", attrs: { href: `/api/v1/console/oidc/start?return_to=${returnTo}` } }, "Sign in with your organisation's account"));
    sso.hidden = false;
  }, () => undefined);
  form.insertBefore(sso, form.children[2] ?? null);
  return { title: "Sign in", element: h("section", { class: "sign-in" }, form) };
}
