// Signing in: a user-bound key typed into the form, or a one-time sign-in link whose token
// arrives in the URL's fragment (never sent to a server by the browser) and leaves the address
// bar before it is exchanged.

import { ApiError, call, type Me } from "./api";
import { type App, landing, type Screen } from "./app";
import { field, h, isolated, replace } from "./dom";
import { deviceName, enrollPasskey, passkeyProblem, passkeysSupported, signInWithPasskey } from "./passkeys";

/** A one-time link's token in the fragment (a sign-in link's or an invitation's), removed from
 * the address bar at once. */
export function takeLinkToken(): { kind: "sign-in" | "invite"; token: string } | null {
  const match = /^#(sign-in|invite)=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (!match) return null;
  history.replaceState(null, "", location.pathname + location.search);
  return { kind: match[1] === "invite" ? "invite" : "sign-in", token: match[2] ?? "" };
}

export async function exchangeLink(app: App, link: { kind: "sign-in" | "invite"; token: string }): Promise<string | null> {
  const path = link.kind === "invite" ? "/api/v1/console/sign-in/invitation" : "/api/v1/console/sign-in/link";
  try {
    app.me = await call<Me>("POST", path, { token: link.token });
    return null;
  } catch (error) {
    return error instanceof ApiError ? error.message : String(error);
  }
}

/** The screen an invitation lands on: welcome, and a passkey for this device. */
export function welcomeScreen(app: App): Screen {
  const name = h("input", { attrs: { type: "text", value: deviceName(), maxlength: 100, required: true } });
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const done = h("p", { attrs: { role: "status" } });
  const create = h("button", { class: "primary", attrs: { type: "submit" } }, "Create a passkey");
  const next = app.link(landing(), "Continue to the console");
  const form = h(
    "form",
    {
      class: "card",
      on: {
        submit: (event) => {
          event.preventDefault();
          create.disabled = true;
          error.textContent = "";
          void enrollPasskey(name.value.trim())
            .then(() => {
              form.hidden = true;
              replace(done, "Your passkey is ready. Next time, choose ", h("strong", {}, "Sign in with a passkey"), ". ", next);
              next.focus();
            })
            .catch((e: unknown) => {
              error.textContent = passkeyProblem(e);
              create.disabled = false;
            });
        },
      },
    },
    h("p", {}, "Sign in next time with a passkey: your device's screen lock, fingerprint or face, and no password to remember or leak."),
    field("Name it", name, "So you can tell your passkeys apart on your account page."),
    error,
    create,
  );
  return {
    title: "Welcome",
    element: h(
      "section",
      { class: "sign-in" },
      h("h1", {}, "Welcome, ", isolated(app.me?.user ?? "")),
      passkeysSupported() ? form : h("p", {}, "This browser can't make passkeys: use another, or ask a super admin for a sign-in link each time."),
      done,
      h("p", {}, app.link(landing(), "Skip for now")),
    ),
  };
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
      "Sign in with your passkey. New here? Open the invitation link a super admin gave you. " +
        "Lost your passkey? Ask a super admin for a recovery link.",
    ),
    h("p", { class: "hint" }, "Or paste a personal key made for you:"),
    field("Key", key),
    error,
    submit,
  );
  const passkeyError = h("p", { class: "error", attrs: { role: "alert" } });
  const passkeyButton = h("button", { class: "primary", attrs: { type: "button" } }, "Sign in with a passkey");
  passkeyButton.addEventListener("click", () => {
    passkeyButton.disabled = true;
    passkeyError.textContent = "";
    void signInWithPasskey()
      .then((me) => {
        app.me = me;
        return app.go(landing(), true);
      })
      .catch((e: unknown) => {
        passkeyError.textContent = e instanceof ApiError ? e.message : passkeyProblem(e);
      })
      .finally(() => {
        passkeyButton.disabled = false;
      });
  });
  const passkey = h("div", { class: "passkey", attrs: { hidden: true } }, passkeyButton, passkeyError);
  form.insertBefore(passkey, form.children[1] ?? null);
  const sso = h("p", { class: "sso", attrs: { hidden: true } });
  // The server answers 200 here when browsers may sign in through its OIDC issuer.
  void fetch("/api/v1/console/oidc", { credentials: "same-origin", cache: "no-store" }).then(async (response) => {
    const answer = (await response.json().catch(() => null)) as { enabled?: boolean; passkeys?: boolean } | null;
    // Offered when this browser has WebAuthn and the server has a relying party for it.
    if (response.ok && answer?.passkeys === true && passkeysSupported()) passkey.hidden = false;
    if (!response.ok || answer?.enabled !== true) return;
    const returnTo = encodeURIComponent(`/console/${landing()}`);
    replace(sso, h("a", { class: "button primary", attrs: { href: `/api/v1/console/oidc/start?return_to=${returnTo}` } }, "Sign in with your organisation's account"));
    sso.hidden = false;
  }, () => undefined);
  form.insertBefore(sso, form.children[2] ?? null);
  return { title: "Sign in", element: h("section", { class: "sign-in" }, form) };
}
