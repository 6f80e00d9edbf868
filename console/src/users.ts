// People, for super admins: everyone who uses the console (search, last sign-in, groups, role,
// active or not), each editable; invitations to hand over (the link is shown once) and the
// pending ones, revocable; a recovery link for someone who lost their passkeys; deactivation,
// which ends their sessions at once and stops their keys.

import { ApiError, call, type Page } from "./api";
import type { App, Screen } from "./app";
import { dangerDialog, field, h, isolated, replace, table } from "./dom";
import { when } from "./clock";

export interface User {
  name: string;
  display_name: string;
  groups: string[];
  role: string;
  source: string;
  managed_by_issuer: boolean;
  created_at: string;
  last_sign_in_at: string | null;
  active: boolean;
  deactivated_at: string | null;
  passkeys: number;
}

interface Invitation {
  id: string;
  user: string;
  groups: string[];
  role: string;
  created_at: string;
  expires_at: string;
  link?: string;
}

const USERS = "/api/v1/console/users";
const INVITATIONS = "/api/v1/console/invitations";

function whenOrNever(text: string | null): string {
  return text ? when(text) : "never";
}

/** Comma-separated group names, as a list (blanks dropped). */
function groupList(text: string): string[] {
  return text
    .split(",")
    .map((g) => g.trim())
    .filter((g) => g !== "");
}

/** A link to hand over, shown this once, with a button that copies it. */
function handOver(app: App, what: string, link: string): HTMLElement {
  const absolute = link.startsWith("/") ? `${location.origin}${link}` : link;
  const input = h("input", { attrs: { type: "text", readonly: true, value: absolute, "aria-label": what, spellcheck: "false" } });
  const copy = h("button", { attrs: { type: "button" } }, "Copy");
  copy.addEventListener("click", () => {
    void navigator.clipboard?.writeText(absolute).then(
      () => app.announce("Copied"),
      () => input.select(),
    );
  });
  return h("div", { class: "hand-over", attrs: { role: "status" } }, h("p", {}, `${what} (shown this once: copy it now and hand it over privately):`), input, copy);
}

export async function usersScreen(app: App): Promise<Screen> {
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const search = h("input", { attrs: { type: "search", placeholder: "Name, e-mail or group" } });
  const list = h("div");
  const editor = h("div");
  const pending = h("div");
  const given = h("div");

  async function loadUsers(): Promise<void> {
    const query = search.value.trim() ? `?search=${encodeURIComponent(search.value.trim())}` : "";
    const page = await call<Page<User>>("GET", `${USERS}${query}`);
    const rows = page.data.map((user) => {
      const edit = h("button", { attrs: { type: "button", "aria-label": `Edit ${user.name}` } }, "Edit");
      edit.addEventListener("click", () => showEditor(user));
      const toggle = h("button", { attrs: { type: "button", "aria-label": `${user.active ? "Deactivate" : "Make active"} ${user.name}` } }, user.active ? "Deactivate" : "Make active");
      toggle.addEventListener("click", () => setActive(user, !user.active));
      const recover = h("button", { attrs: { type: "button", "aria-label": `Recovery link for ${user.name}`, disabled: !user.active } }, "Recovery link");
      recover.addEventListener("click", () => void recovery(user));
      return h(
        "tr",
        { class: user.active ? "" : "inactive" },
        h("td", {}, isolated(user.display_name), user.display_name !== user.name ? h("small", {}, " ", isolated(user.name)) : null),
        h("td", {}, user.groups.length ? isolated(user.groups.join(", ")) : "—"),
        h("td", {}, user.role),
        h("td", {}, whenOrNever(user.last_sign_in_at)),
        h("td", {}, user.active ? "Active" : `Deactivated ${when(user.deactivated_at)}`),
        h("td", {}, String(user.passkeys)),
        h("td", { class: "actions" }, edit, toggle, recover),
      );
    });
    replace(list, rows.length === 0 ? h("p", {}, "No user matches.") : table("Users", ["Name", "Groups", "Role", "Last sign-in", "Status", "Passkeys", ""], rows));
  }

  function showEditor(user: User): void {
    const groups = h("input", { attrs: { type: "text", value: user.groups.join(", "), disabled: user.managed_by_issuer } });
    const role = h("select", { attrs: { disabled: user.managed_by_issuer } }, ...["member", "super-admin"].map((r) => h("option", { attrs: { value: r, selected: r === user.role } }, r)));
    const display = h("input", { attrs: { type: "text", value: user.display_name, maxlength: 200 } });
    const problem = h("p", { class: "error", attrs: { role: "alert" } });
    const save = h("button", { class: "primary", attrs: { type: "submit" } }, "Save");
    const form = h(
      "form",
      {
        class: "card",
        attrs: { "aria-label": `Edit ${user.name}` },
        on: {
          submit: (event) => {
            event.preventDefault();
            save.disabled = true;
            problem.textContent = "";
            const body: Record<string, unknown> = { display_name: display.value.trim() };
            if (!user.managed_by_issuer) {
              body.groups = groupList(groups.value);
              body.role = role.value;
            }
            void call<User>("PATCH", `${USERS}/${encodeURIComponent(user.name)}`, body)
              .then(async (saved) => {
                app.announce(`Saved ${saved.name}`);
                replace(editor);
                await loadUsers();
              })
              .catch((e: unknown) => {
                problem.textContent = e instanceof ApiError ? e.message : String(e);
              })
              .finally(() => {
                save.disabled = false;
              });
          },
        },
      },
      h("h2", {}, "Edit ", isolated(user.name)),
      field("Display name", display),
      field("Groups", groups, user.managed_by_issuer ? "From the organisation's sign-in at each sign-in: change them there." : "Comma-separated: what group permissions name."),
      field("Role", role),
      problem,
      h("div", { class: "actions" }, save, h("button", { attrs: { type: "button" }, on: { click: () => replace(editor) } }, "Cancel")),
    );
    replace(editor, form);
    groups.focus();
  }

  function setActive(user: User, active: boolean): void {
    const change = async () => {
      await call<User>("PATCH", `${USERS}/${encodeURIComponent(user.name)}`, { active });
      app.announce(active ? `${user.name} is active again` : `${user.name} is deactivated`);
      await loadUsers();
    };
    if (active) {
      void change().catch((e: unknown) => {
        error.textContent = e instanceof ApiError ? e.message : String(e);
      });
      return;
    }
    const dialog = dangerDialog(
      ["Deactivate ", isolated(user.name), "?"],
      ["Their browser sessions end at once; their keys and tokens stop working. Their queries, reviews and grants stay (shown as inactive). You can make them active again."],
      "Deactivate",
      change,
    );
    document.body.append(dialog);
    dialog.addEventListener("close", () => dialog.remove());
    dialog.showModal();
  }

  async function recovery(user: User): Promise<void> {
    error.textContent = "";
    try {
      const made = await call<{ link: string; expires_at: string }>("POST", `${USERS}/${encodeURIComponent(user.name)}/recovery-link`);
      replace(given, handOver(app, `Recovery link for ${user.name}, good once within 24 hours`, made.link));
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
  }

  async function loadInvitations(): Promise<void> {
    const page = await call<Page<Invitation>>("GET", INVITATIONS);
    const rows = page.data.map((invitation) => {
      const revoke = h("button", { attrs: { type: "button", "aria-label": `Revoke the invitation of ${invitation.user}` } }, "Revoke");
      revoke.addEventListener("click", () => {
        revoke.disabled = true;
        void call<void>("DELETE", `${INVITATIONS}/${encodeURIComponent(invitation.id)}`)
          .then(() => loadInvitations())
          .catch((e: unknown) => {
            error.textContent = e instanceof ApiError ? e.message : String(e);
            revoke.disabled = false;
          });
      });
      return h(
        "tr",
        {},
        h("td", {}, isolated(invitation.user)),
        h("td", {}, invitation.groups.length ? isolated(invitation.groups.join(", ")) : "—"),
        h("td", {}, invitation.role),
        h("td", {}, when(invitation.expires_at)),
        h("td", {}, revoke),
      );
    });
    replace(pending, rows.length === 0 ? h("p", {}, "No invitation is pending.") : table("Pending invitations", ["Person", "Groups", "Role", "Expires", ""], rows));
  }

  const inviteUser = h("input", { attrs: { type: "text", required: true, placeholder: "ann@example.com", spellcheck: "false", maxlength: 200 } });
  const inviteGroups = h("input", { attrs: { type: "text", placeholder: "analysts, oncall" } });
  const inviteRole = h("select", {}, h("option", { attrs: { value: "member" } }, "member"), h("option", { attrs: { value: "super-admin" } }, "super-admin"));
  const inviteProblem = h("p", { class: "error", attrs: { role: "alert" } });
  const invite = h("button", { class: "primary", attrs: { type: "submit" } }, "Invite");
  const inviteForm = h(
    "form",
    {
      class: "card",
      attrs: { "aria-labelledby": "invite-title" },
      on: {
        submit: (event) => {
          event.preventDefault();
          invite.disabled = true;
          inviteProblem.textContent = "";
          void call<Invitation>("POST", INVITATIONS, { user: inviteUser.value.trim(), groups: groupList(inviteGroups.value), role: inviteRole.value })
            .then(async (made) => {
              replace(given, handOver(app, `Invitation link for ${made.user}, good once within 7 days`, made.link ?? ""));
              inviteUser.value = "";
              inviteGroups.value = "";
              await loadInvitations();
            })
            .catch((e: unknown) => {
              inviteProblem.textContent = e instanceof ApiError ? e.message : String(e);
            })
            .finally(() => {
              invite.disabled = false;
            });
        },
      },
    },
    h("h2", { attrs: { id: "invite-title" } }, "Invite a person"),
    field("E-mail or login", inviteUser),
    field("Groups", inviteGroups, "Comma-separated: what group permissions name."),
    field("Role", inviteRole),
    inviteProblem,
    invite,
  );

  let searching = 0;
  search.addEventListener("input", () => {
    window.clearTimeout(searching);
    searching = window.setTimeout(() => {
      void loadUsers().catch((e: unknown) => {
        error.textContent = e instanceof ApiError ? e.message : String(e);
      });
    }, 200);
  });

  await Promise.all([loadUsers(), loadInvitations()]);
  return {
    title: "Users",
    element: h(
      "section",
      {},
      h("h1", {}, "Users"),
      h("p", {}, "Everyone who uses the console. People join by an invitation you hand over, by the organisation's sign-in when it is on, or by a key made for them."),
      error,
      given,
      field("Search users", search),
      list,
      editor,
      inviteForm,
      h("h2", {}, "Pending invitations"),
      pending,
    ),
  };
}

/** The users and groups a permission may name, for the pickers (empty when the caller may not
 * list users). */
export async function knownSubjects(): Promise<{ users: User[]; groups: string[] }> {
  try {
    const page = await call<Page<User>>("GET", USERS);
    const groups = [...new Set(page.data.flatMap((u) => u.groups))].sort();
    return { users: page.data, groups };
  } catch {
    return { users: [], groups: [] };
  }
}
