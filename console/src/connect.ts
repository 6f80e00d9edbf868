// "Connect your own client": psql, DBeaver, DataGrip and drivers through the server's
// PostgreSQL door, under the console's rules. A person mints a door password here (shown once,
// never again), sees and revokes theirs, ends their open door sessions, and copies each
// PostgreSQL database's connection facts (host, port, database string, psql command, JDBC URL).
// A password never goes into a URL or a copied command: the client asks for it.

import { ApiError, call, type Page, type QueryableDatabase } from "./api";
import type { App, Screen } from "./app";
import { field, h, isolated, replace, table, uid } from "./dom";
import { when } from "./clock";

interface DoorPassword {
  id: string;
  created_at: string;
  expires_at: string;
}

interface DoorSession {
  id: string;
  database_id: string;
  username: string;
  client_address: string;
  application_name: string;
  opened_at: string;
}

interface MyDoor {
  address: string | null;
  max_password_lifetime_days: number;
  passwords: DoorPassword[];
  sessions: DoorSession[];
}

interface Minted {
  id: string;
  password: string;
  expires_at: string;
}



/** A libpq connection-string value: quoted, with `\` and `'` escaped. */
export function conninfoValue(value: string): string {
  return /^[A-Za-z0-9_.@:-]+$/.test(value) ? value : `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** The psql command for a database string, as `user`, over TLS (the password is asked). */
export function psqlCommand(host: string, port: string, database: string, user: string): string {
  const info = [
    `host=${conninfoValue(host)}`,
    `port=${conninfoValue(port)}`,
    `dbname=${conninfoValue(database)}`,
    `user=${conninfoValue(user)}`,
    "sslmode=require",
  ].join(" ");
  return `psql "${info.replace(/(["\\$`])/g, "\\$1")}"`;
}

/** The JDBC URL (pgjdbc) for a database string, as `user`, over TLS. */
export function jdbcUrl(host: string, port: string, database: string, user: string): string {
  return `jdbc:postgresql://${host}:${port}/${encodeURIComponent(database)}?user=${encodeURIComponent(user)}&sslmode=require`;
}

/** Text to copy, with its button. */
function copyable(label: string, text: string, app: App): HTMLElement {
  const id = uid("copy");
  const value = h("code", { attrs: { id } }, text);
  const button = h("button", { attrs: { type: "button", "aria-label": `Copy the ${label}`, "aria-describedby": id } }, "Copy");
  button.addEventListener("click", () => {
    void navigator.clipboard.writeText(text).then(
      () => app.announce(`The ${label} is copied`),
      () => app.announce("Could not copy: the browser refused the clipboard"),
    );
  });
  return h("div", { class: "copyable" }, h("span", { class: "copy-label" }, `${label}: `), value, " ", button);
}

export async function connectScreen(app: App): Promise<Screen> {
  const me = app.me;
  const user = me?.user ?? "";
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const passwords = h("div");
  const sessions = h("div");
  const shown = h("div", { attrs: { "aria-live": "polite" } });
  let door = await call<MyDoor>("GET", "/api/v1/console/me/door");
  const databases = (await call<Page<QueryableDatabase>>("GET", "/api/v1/console/me/databases")).data.filter((db) => db.adapter === "postgres");

  async function load(): Promise<void> {
    door = await call<MyDoor>("GET", "/api/v1/console/me/door");
    const passwordRows = door.passwords.map((password) => {
      const revoke = h("button", { attrs: { type: "button", "aria-label": `Revoke the door password made ${when(password.created_at)}` } }, "Revoke");
      revoke.addEventListener("click", () => {
        revoke.disabled = true;
        error.textContent = "";
        void call<void>("DELETE", `/api/v1/console/me/door/passwords/${encodeURIComponent(password.id)}`)
          .then(() => {
            app.announce("The door password is revoked: its sessions end");
            return load();
          })
          .catch((e: unknown) => {
            error.textContent = e instanceof ApiError ? e.message : String(e);
            revoke.disabled = false;
          });
      });
      return h("tr", {}, h("td", {}, when(password.created_at)), h("td", {}, when(password.expires_at)), h("td", {}, revoke));
    });
    replace(
      passwords,
      passwordRows.length === 0 ? h("p", {}, "You have no door password.") : table("Your door passwords", ["Made", "Ends", ""], passwordRows),
    );
    const sessionRows = door.sessions.map((session) => {
      const end = h("button", { attrs: { type: "button", "aria-label": `End the door session of ${session.application_name}` } }, "End it");
      end.addEventListener("click", () => {
        end.disabled = true;
        void call<void>("DELETE", `/api/v1/console/me/door/sessions/${encodeURIComponent(session.id)}`)
          .then(() => {
            app.announce("That door session has ended");
            return load();
          })
          .catch((e: unknown) => {
            error.textContent = e instanceof ApiError ? e.message : String(e);
            end.disabled = false;
          });
      });
      const db = databases.find((d) => d.id === session.database_id);
      return h(
        "tr",
        {},
        h("td", {}, isolated(session.application_name)),
        h("td", {}, isolated(db ? db.name : session.database_id), " as ", isolated(session.username)),
        h("td", {}, isolated(session.client_address)),
        h("td", {}, when(session.opened_at)),
        h("td", {}, end),
      );
    });
    replace(
      sessions,
      sessionRows.length === 0
        ? h("p", {}, "No client is connected as you through the door (on this server).")
        : table("Your open door sessions", ["Client", "Database", "From", "Since", ""], sessionRows),
    );
  }

  const lifetime = h("input", {
    attrs: { type: "number", min: 1, max: door.max_password_lifetime_days, value: Math.min(30, door.max_password_lifetime_days), required: true },
  });
  const mint = h("button", { attrs: { type: "submit" } }, "Make a door password");
  const mintForm = h(
    "form",
    {
      class: "inline",
      on: {
        submit: (event) => {
          event.preventDefault();
          mint.disabled = true;
          error.textContent = "";
          void call<Minted>("POST", "/api/v1/console/me/door/passwords", { lifetime_days: Number(lifetime.value) })
            .then((minted) => {
              const secret = h("input", { attrs: { type: "text", readonly: true, value: minted.password, "aria-label": "Your new door password", autocomplete: "off", spellcheck: "false" } });
              const copy = h("button", { attrs: { type: "button" } }, "Copy the password");
              copy.addEventListener("click", () => {
                void navigator.clipboard.writeText(minted.password).then(
                  () => app.announce("The password is copied"),
                  () => app.announce("Could not copy: the browser refused the clipboard"),
                );
              });
              replace(
                shown,
                h(
                  "div",
                  { class: "handover" },
                  h("p", {}, h("strong", {}, "Your new door password, shown this once"), ` (it ends ${when(minted.expires_at)}). Paste it when your client asks for the password:`),
                  secret,
                  " ",
                  copy,
                ),
              );
              return load();
            })
            .catch((e: unknown) => {
              error.textContent = e instanceof ApiError ? e.message : String(e);
            })
            .finally(() => {
              mint.disabled = false;
            });
        },
      },
    },
    field("Days it lasts", lifetime, `At most ${door.max_password_lifetime_days} days.`),
    mint,
  );

  const panels = databases.map((db) => {
    const [host = "", port = ""] = door.address ? splitAddress(door.address) : [];
    const credential = h(
      "select",
      {},
      ...db.credentials.map((c) =>
        h("option", { attrs: { value: c.username, selected: c.default_credential } }, c.username + (c.reviews_required > 0 ? ` (needs ${c.reviews_required} review${c.reviews_required > 1 ? "s" : ""})` : "")),
      ),
    );
    const facts = h("div");
    const draw = () => {
      const chosen = db.credentials.find((c) => c.username === credential.value);
      // Without `:username`, the door runs as the default credential (else the first).
      const fallback = db.credentials.find((c) => c.default_credential) ?? db.credentials[0];
      const database = chosen && chosen !== fallback ? `${db.id}:${chosen.username}` : db.id;
      replace(
        facts,
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "Host"),
          h("dd", {}, isolated(host)),
          h("dt", {}, "Port"),
          h("dd", {}, isolated(port)),
          h("dt", {}, "Database"),
          h("dd", {}, isolated(database)),
          h("dt", {}, "User"),
          h("dd", {}, isolated(user)),
          h("dt", {}, "SSL"),
          h("dd", {}, "required"),
        ),
        copyable("psql command", psqlCommand(host, port, database, user), app),
        copyable("JDBC URL", jdbcUrl(host, port, database, user), app),
        chosen && chosen.reviews_required > 0
          ? h("p", { class: "hint" }, "Statements as this credential wait for review: the first send stores the request; once approved, send the same text again to run it once.")
          : null,
      );
    };
    credential.addEventListener("change", draw);
    draw();
    const headingId = uid("db");
    return h(
      "section",
      { class: "door-database", attrs: { "aria-labelledby": headingId } },
      h("h3", { attrs: { id: headingId } }, isolated(db.name)),
      field("Credential", credential),
      facts,
    );
  });

  await load();
  return {
    title: "Connect your own client",
    element: h(
      "section",
      {},
      h("h1", {}, "Connect your own client"),
      door.address
        ? h(
            "p",
            {},
            "psql, DBeaver, DataGrip and drivers connect to this server as to PostgreSQL, over TLS, with your name as the user and a door password. Every statement follows the console's rules: access, reviews, data protection, the row cap and the timeout. COPY, LISTEN and role changes are refused.",
          )
        : h("p", { class: "error" }, "The PostgreSQL door is off on this server: an operator turns it on with --door-listen."),
      h("h2", {}, "Door passwords"),
      error,
      shown,
      door.address ? mintForm : null,
      passwords,
      h("h2", {}, "Open door sessions"),
      sessions,
      h("h2", {}, "Your PostgreSQL databases"),
      databases.length === 0 ? h("p", {}, "You may query no PostgreSQL database.") : null,
      ...(door.address ? panels : []),
    ),
  };
}

/** `host:port` (an IPv6 host in brackets) as its host and port. */
function splitAddress(address: string): [string, string] {
  const at = address.lastIndexOf(":");
  if (at < 0) return [address, "5432"];
  return [address.slice(0, at).replace(/^\[|\]$/g, ""), address.slice(at + 1)];
}
