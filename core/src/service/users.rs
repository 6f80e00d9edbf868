//! People (docs/people.md): the user records a super admin lists, edits and deactivates
//! (`…/users`), the invitations that enroll new people (`…/invitations`), recovery links, and
//! the two rules every sign-in and every request follow:
//!
//! - `signing_in`: a sign-in finds or creates its user's record, refuses a deactivated user,
//!   and records the time (and an OIDC user's groups and role from the claims).
//! - `served`: a request whose credential names a user is refused once that user is
//!   deactivated; a session signed in with a link, an invitation or a passkey carries the
//!   record's groups and role as they are now.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Map, Value};

use super::browser::Browser;
use super::call::{Answer, Call};
use super::error::ApiError;
use super::render::{InvitationView, PageView, UserView};
use super::response::json_response;
use crate::model::{
    AuditAction, AuditEvent, Origin, Principal, Role, Scope, Session, SessionKind, SignInMethod,
    Timestamp, User, UserSource, identity,
};
use crate::storage::{Storage, StorageError, WriteLog};
use crate::validate::ValidationErrors;

/// How long an invitation lasts.
pub const INVITATION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// How long a recovery link made from the Users screen lasts.
pub const RECOVERY_LIFETIME: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The setting under which a server records its public URL at start (the links it makes
/// start with it).
pub const PUBLIC_URL_SETTING: &str = "public_url";

/// How many times a write of a user record is tried again after another write came in between.
const RETRIES: usize = 8;

/// The scope of a session that carries `role`: a super admin's is full, a member's query.
pub(crate) fn scope_of(role: Role) -> Scope {
    match role {
        Role::SuperAdmin => Scope::Full,
        Role::Member => Scope::Query,
    }
}

/// The answer to a request by a deactivated user.
fn deactivated() -> ApiError {
    ApiError::Unauthorized {
        bearer: false,
        hint: "this user has been deactivated: ask a super admin",
    }
}

/// The principal a request is served as: `principal` as its credential says, refused when its
/// user's record is deactivated; with `from_record`, the record's groups and role instead (a
/// session signed in with a link, an invitation or a passkey). A user with no record (a key
/// made before users were, an embedding program's principal) is served as it is.
pub(crate) async fn served(
    storage: &dyn Storage,
    principal: Principal,
    from_record: bool,
) -> Result<Principal, ApiError> {
    let name = identity::normalized(&principal.user);
    if name.is_empty() {
        return Ok(principal);
    }
    match storage.user(&name).await? {
        Some(user) if !user.active() => Err(deactivated()),
        Some(user) if from_record => Ok(Principal {
            agent: principal.agent,
            ..user.principal()
        }),
        _ => Ok(principal),
    }
}

/// [`served`] for a key's or a bearer token's principal, whose user gets a record at their
/// first request when they have none (an OIDC user who only calls the API: a super admin can
/// then find and deactivate them). The record is a member's in the token's groups, but for a
/// full-scope credential's super admin.
pub(crate) async fn served_credential(
    storage: &dyn Storage,
    origin: &Origin,
    principal: Principal,
    scope: Scope,
    source: UserSource,
) -> Result<Principal, ApiError> {
    let name = identity::normalized(&principal.user);
    if !name.is_empty() && storage.user(&name).await?.is_none() {
        let recorded = Principal {
            role: if scope == Scope::Full {
                principal.role
            } else {
                Role::Member
            },
            agent: false,
            ..principal.clone()
        };
        ensure_user(storage, origin, &recorded, source).await?;
    }
    served(storage, principal, false).await
}

/// Whether sessions signed in with `method` carry the record's groups and role (rather than a
/// key's or the issuer's claims').
pub(crate) fn from_record(method: SignInMethod) -> bool {
    matches!(
        method,
        SignInMethod::Link | SignInMethod::Passkey | SignInMethod::Invitation
    )
}

/// A sign-in of `principal` by `origin`: the user's record made when it has none (from
/// `source`, with a `user.create` event), the time of the sign-in recorded, an OIDC user's
/// groups and role taken from `principal` (its claims); 403 for a deactivated user. Answers
/// the principal the session carries: the record's, but for a key's or the issuer's.
pub(crate) async fn signing_in(
    storage: &dyn Storage,
    origin: &Origin,
    principal: &Principal,
    source: UserSource,
) -> Result<Principal, ApiError> {
    let name = identity::normalized(&principal.user);
    for _ in 0..RETRIES {
        let now = Timestamp::now();
        match storage.user(&name).await? {
            None => {
                let mut user = User::new(&name, principal.groups.clone(), principal.role, source);
                user.last_sign_in_at = Some(now);
                let event = AuditEvent::new(
                    origin,
                    AuditAction::UserCreate,
                    &name,
                    vec![format!("by a sign-in ({})", source.as_str())],
                );
                match storage
                    .put_user(user.clone(), None, Some(event.into()))
                    .await
                {
                    Ok(()) => return Ok(carried(&user, principal, source)),
                    Err(StorageError::AlreadyExists) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            Some(user) if !user.active() => {
                return Err(ApiError::Denied(
                    "this user has been deactivated: ask a super admin".to_owned(),
                ));
            }
            Some(stored) => {
                let mut user = stored.clone();
                user.last_sign_in_at = Some(now);
                user.updated_at =
                    now.max(stored.updated_at.plus(std::time::Duration::from_micros(1)));
                let mut log: Option<WriteLog> = None;
                if source == UserSource::Oidc
                    && (user.groups != principal.groups
                        || user.role != principal.role
                        || user.source != UserSource::Oidc)
                {
                    // From now on the issuer manages it: groups and role are its claims.
                    user.groups.clone_from(&principal.groups);
                    user.role = principal.role;
                    user.source = UserSource::Oidc;
                    log = Some(
                        AuditEvent::new(
                            origin,
                            AuditAction::UserUpdate,
                            &name,
                            vec!["groups and role from the issuer's claims".to_owned()],
                        )
                        .into(),
                    );
                }
                match storage
                    .put_user(user.clone(), Some(stored.updated_at), log)
                    .await
                {
                    Ok(()) => return Ok(carried(&user, principal, source)),
                    Err(StorageError::Conflict | StorageError::NotFound) => {}
                    Err(error) => return Err(error.into()),
                }
            }
        }
    }
    Err(ApiError::Busy(
        "the user's record kept changing: try again".to_owned(),
    ))
}

/// The principal a session of `user` signed in from `source` carries.
fn carried(user: &User, principal: &Principal, source: UserSource) -> Principal {
    match source {
        UserSource::Key | UserSource::Oidc => principal.clone(),
        _ => user.principal(),
    }
}

/// Reads `user`, applies `change` and stores it with the event `changes` describes, again from
/// a fresh read when another write came in between; 404 when there is no such user.
pub(crate) async fn update_user<F>(
    storage: &dyn Storage,
    origin: &Origin,
    name: &str,
    mut change: F,
) -> Result<User, ApiError>
where
    F: FnMut(&mut User) -> Result<Vec<String>, ApiError>,
{
    let name = identity::normalized(name);
    for _ in 0..RETRIES {
        let Some(stored) = storage.user(&name).await? else {
            return Err(ApiError::NotFound);
        };
        let mut user = stored.clone();
        let changes = change(&mut user)?;
        if changes.is_empty() {
            return Ok(stored);
        }
        user.updated_at =
            Timestamp::now().max(stored.updated_at.plus(std::time::Duration::from_micros(1)));
        let event = AuditEvent::new(origin, AuditAction::UserUpdate, &name, changes);
        match storage
            .put_user(user.clone(), Some(stored.updated_at), Some(event.into()))
            .await
        {
            Ok(()) => return Ok(user),
            Err(StorageError::Conflict) => {}
            Err(StorageError::NotFound) => return Err(ApiError::NotFound),
            Err(error) => return Err(error.into()),
        }
    }
    Err(ApiError::Busy(
        "the user's record kept changing: try again".to_owned(),
    ))
}

/// A user name as a person types it: required, at most 200 characters, no control character.
fn user_name(field: &str, value: Option<&Value>) -> Result<String, ValidationErrors> {
    let Some(text) = value.and_then(Value::as_str) else {
        return Err(ValidationErrors::single(
            field,
            "is required: a user name or e-mail",
        ));
    };
    let name = identity::normalized(text);
    if name.is_empty() {
        return Err(ValidationErrors::single(field, "must not be blank"));
    }
    if text.chars().count() > 200
        || name.chars().count() > 200
        || name.chars().any(char::is_control)
    {
        return Err(ValidationErrors::single(
            field,
            "must be at most 200 characters, none of them a control character",
        ));
    }
    Ok(name)
}

/// A list of group names (normalised, each at most 200 characters, no control character, no
/// duplicates).
fn group_names(value: Option<&Value>) -> Result<Option<Vec<String>>, ValidationErrors> {
    let Some(value) = value else {
        return Ok(None);
    };
    let Some(items) = value.as_array() else {
        return Err(ValidationErrors::single(
            "groups",
            "must be an array of group names",
        ));
    };
    let mut groups: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Some(text) = item.as_str() else {
            return Err(ValidationErrors::single(
                "groups",
                "must be an array of group names",
            ));
        };
        let group = identity::normalized(text);
        // At most 200 characters as sent and as kept.
        if group.is_empty()
            || text.chars().count() > 200
            || group.chars().count() > 200
            || group.chars().any(char::is_control)
        {
            return Err(ValidationErrors::single(
                "groups",
                "each group must be 1 to 200 characters, none of them a control character",
            ));
        }
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    Ok(Some(groups))
}

/// A role by its wire name.
fn role(value: Option<&Value>) -> Result<Option<Role>, ValidationErrors> {
    match value {
        None => Ok(None),
        Some(value) => value
            .as_str()
            .and_then(|r| r.parse::<Role>().ok())
            .map(Some)
            .ok_or_else(|| ValidationErrors::single("role", "must be one of: super-admin, member")),
    }
}

/// A display name: at most 200 characters, no control character (blank: the user name).
fn display_name(value: Option<&Value>) -> Result<Option<String>, ValidationErrors> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(sent)) => {
            let text = sent.trim();
            if sent.chars().count() > 200 || text.chars().any(char::is_control) {
                return Err(ValidationErrors::single(
                    "display_name",
                    "must be at most 200 characters, none of them a control character",
                ));
            }
            Ok(Some(text.to_owned()))
        }
        Some(_) => Err(ValidationErrors::single("display_name", "must be a string")),
    }
}

/// Refuses fields a body may not have.
fn only(body: &Map<String, Value>, allowed: &[&str]) -> Result<(), ValidationErrors> {
    match body.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(ValidationErrors::single(
            key,
            format!(
                "is not a field of this request (it takes: {})",
                allowed.join(", ")
            ),
        )),
    }
}

/// What the people routes read: the storage, and the browser sessions they end.
#[derive(Clone, Debug)]
pub(crate) struct Users {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// The browser sessions (a deactivated user's end).
    pub(crate) browser: Browser,
    /// The open door sessions (a deactivated user's end).
    pub(crate) door: Arc<super::door::live::Live>,
}

impl Users {
    /// The link that opens the console at `fragment` (`#invite=…`, `#sign-in=…`): absolute
    /// when the public URL is known, else from the console's root.
    async fn link(&self, fragment: &str) -> Result<String, ApiError> {
        let origin = match &self.browser.sessions.public_origin {
            Some(origin) => origin.clone(),
            None => self
                .storage
                .setting(PUBLIC_URL_SETTING)
                .await?
                .map(|url| url.trim_end_matches('/').to_owned())
                .unwrap_or_default(),
        };
        Ok(format!("{origin}/console/#{fragment}"))
    }

    /// `GET …/users`: every user, by name; `search` keeps those whose name, display name or a
    /// group holds it (case aside).
    pub(crate) async fn list_users(&self, call: Call<'_>) -> Answer {
        let search = call.query.as_deref().and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "search")
                .map(|(_, v)| identity::normalized(&v))
        });
        let users = self.storage.list_users().await?;
        let data: Vec<UserView<'_>> = users
            .iter()
            .filter(|u| match &search {
                None => true,
                Some(s) if s.is_empty() => true,
                Some(s) => {
                    u.name.contains(s.as_str())
                        || identity::normalized(&u.display_name).contains(s.as_str())
                        || u.groups.iter().any(|g| g.contains(s.as_str()))
                }
            })
            .map(UserView::of)
            .collect();
        Ok(json_response(
            StatusCode::OK,
            &PageView { data, next: None },
        ))
    }

    /// `GET …/users/{name}`.
    pub(crate) async fn get_user(&self, call: Call<'_>) -> Answer {
        let name = identity::normalized(call.param("name"));
        let user = self.storage.user(&name).await?.ok_or(ApiError::NotFound)?;
        Ok(json_response(StatusCode::OK, &UserView::of(&user)))
    }

    /// `PATCH …/users/{name}`: `display_name`, `groups`, `role` (not an OIDC user's: its
    /// issuer's claims decide them) and `active` (false deactivates: its sessions and sign-in
    /// links end, its keys and tokens are refused; true makes it active again). Left-out fields
    /// stay; a super admin can't deactivate or demote themselves.
    pub(crate) async fn update_user(&self, mut call: Call<'_>) -> Answer {
        let body = call.json().await?;
        only(&body, &["display_name", "groups", "role", "active"])?;
        let groups = group_names(body.get("groups"))?;
        let new_role = role(body.get("role"))?;
        let new_display = display_name(body.get("display_name"))?;
        let active = match body.get("active") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                return Err(ValidationErrors::single("active", "must be true or false").into());
            }
        };
        let name = identity::normalized(call.param("name"));
        let me = call
            .caller
            .and_then(|c| c.principal.as_ref())
            .map(|p| identity::normalized(&p.user));
        if me.as_deref() == Some(name.as_str())
            && (active == Some(false) || new_role == Some(Role::Member))
        {
            return Err(ApiError::Conflict(
                "you can't deactivate or demote yourself: another super admin can".to_owned(),
            ));
        }
        if active == Some(false) || new_role == Some(Role::Member) {
            self.keep_a_super_admin(&name).await?;
        }
        let user = update_user(&*self.storage, call.origin, &name, |user| {
            let mut changes = Vec::new();
            if user.source == UserSource::Oidc
                && (groups.as_ref().is_some_and(|g| *g != user.groups)
                    || new_role.is_some_and(|r| r != user.role))
            {
                return Err(ValidationErrors::single(
                    if groups.is_some() { "groups" } else { "role" },
                    "come from the OIDC issuer's claims at each sign-in: change them at the issuer",
                )
                .into());
            }
            if let Some(display) = &new_display {
                let display = if display.is_empty() {
                    user.name.clone()
                } else {
                    display.clone()
                };
                if display != user.display_name {
                    user.display_name = display;
                    changes.push("display name".to_owned());
                }
            }
            if let Some(groups) = &groups
                && *groups != user.groups
            {
                changes.push(format!("groups: {}", groups.join(", ")));
                user.groups.clone_from(groups);
            }
            if let Some(role) = new_role
                && role != user.role
            {
                changes.push(format!("role: {}", role.as_str()));
                user.role = role;
            }
            match active {
                Some(false) if user.active() => {
                    user.deactivated_at = Some(Timestamp::now());
                    changes.push("deactivated".to_owned());
                }
                Some(true) if !user.active() => {
                    user.deactivated_at = None;
                    changes.push("active again".to_owned());
                }
                _ => {}
            }
            Ok(changes)
        })
        .await?;
        if !user.active() {
            self.end_everything_of(call.origin, &user.name, "user deactivated")
                .await?;
        }
        Ok(json_response(StatusCode::OK, &UserView::of(&user)))
    }

    /// 409 when deactivating or demoting `name` would leave no active super admin (the last
    /// one is recovered only from the host).
    async fn keep_a_super_admin(&self, name: &str) -> Result<(), ApiError> {
        let users = self.storage.list_users().await?;
        let is_admin = users
            .iter()
            .any(|u| u.name == name && u.active() && u.role == Role::SuperAdmin);
        let others = users
            .iter()
            .filter(|u| u.active() && u.role == Role::SuperAdmin && u.name != name)
            .count();
        if is_admin && others == 0 {
            return Err(ApiError::Conflict(
                "this is the last active super admin: make another one first".to_owned(),
            ));
        }
        Ok(())
    }

    /// Ends every browser session, sign-in link, pending invitation, door password and open
    /// door session (on this node; the others' end at their next check) of user `name`.
    async fn end_everything_of(
        &self,
        origin: &Origin,
        name: &str,
        why: &str,
    ) -> Result<(), ApiError> {
        for session in self.storage.list_sessions().await? {
            if identity::same(&session.principal.user, name) {
                self.browser.end_session(origin, &session, why).await?;
            }
        }
        self.door.end_user(&identity::normalized(name));
        Ok(())
    }

    /// `POST …/users/{name}/recovery-link`: a one-time sign-in link for an active user (24
    /// hours), to hand over so they can enroll a new passkey; shown once.
    pub(crate) async fn create_recovery_link(&self, call: Call<'_>) -> Answer {
        let name = identity::normalized(call.param("name"));
        let user = self.storage.user(&name).await?.ok_or(ApiError::NotFound)?;
        if !user.active() {
            return Err(ApiError::Conflict(
                "this user is deactivated: make them active again first".to_owned(),
            ));
        }
        let (link, token) = Session::mint(
            SessionKind::SignInLink,
            user.principal(),
            scope_of(user.role),
            SignInMethod::Link,
            RECOVERY_LIFETIME,
        );
        let event = AuditEvent::new(
            call.origin,
            AuditAction::SessionCreate,
            link.id.as_str(),
            vec![format!("recovery link for {name}")],
        );
        let expires_at = link.expires_at;
        self.storage
            .create_session(link, None, event.into())
            .await?;
        let token = token.expose_str().unwrap_or_default().to_owned();
        Ok(json_response(
            StatusCode::CREATED,
            &serde_json::json!({
                "user": name,
                "expires_at": expires_at.to_string(),
                "link": self.link(&format!("sign-in={token}")).await?,
            }),
        ))
    }

    /// `GET …/invitations`: the pending invitations, newest first (never their tokens).
    pub(crate) async fn list_invitations(&self, _call: Call<'_>) -> Answer {
        let now = Timestamp::now();
        let mut pending: Vec<Session> = self
            .storage
            .list_sessions()
            .await?
            .into_iter()
            .filter(|s| s.kind == SessionKind::Invitation && s.expires_at > now)
            .collect();
        pending.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        let data: Vec<InvitationView<'_>> = pending.iter().map(InvitationView::of).collect();
        Ok(json_response(
            StatusCode::OK,
            &PageView { data, next: None },
        ))
    }

    /// `POST …/invitations`: `{"user", "groups", "role"}`; a one-time link (7 days) to hand
    /// over, shown once. 409 when the user exists (a deactivated one is made active again on
    /// the Users screen) or has a pending invitation.
    pub(crate) async fn create_invitation(&self, mut call: Call<'_>) -> Answer {
        let body = call.json().await?;
        only(&body, &["user", "groups", "role"])?;
        let name = user_name("user", body.get("user"))?;
        let groups = group_names(body.get("groups"))?.unwrap_or_default();
        let role = role(body.get("role"))?.unwrap_or(Role::Member);
        if self.storage.user(&name).await?.is_some() {
            return Err(ApiError::Conflict(format!(
                "{name} is already a user: edit them on the Users screen"
            )));
        }
        let now = Timestamp::now();
        if self.storage.list_sessions().await?.iter().any(|s| {
            s.kind == SessionKind::Invitation
                && s.expires_at > now
                && identity::same(&s.principal.user, &name)
        }) {
            return Err(ApiError::Conflict(format!(
                "{name} has a pending invitation: revoke it to invite them again"
            )));
        }
        let principal = Principal {
            user: name.clone(),
            groups,
            role,
            agent: false,
        };
        let (invitation, token) = Session::mint(
            SessionKind::Invitation,
            principal,
            scope_of(role),
            SignInMethod::Invitation,
            INVITATION_LIFETIME,
        );
        let event = AuditEvent::new(
            call.origin,
            AuditAction::InvitationCreate,
            invitation.id.as_str(),
            vec![format!("{name} as {}", role.as_str())],
        );
        self.storage
            .create_session(invitation.clone(), None, event.into())
            .await?;
        let token = token.expose_str().unwrap_or_default().to_owned();
        let mut view = serde_json::to_value(InvitationView::of(&invitation))
            .map_err(|_| ApiError::Internal)?;
        view["link"] = Value::String(self.link(&format!("invite={token}")).await?);
        Ok(json_response(StatusCode::CREATED, &view))
    }

    /// `DELETE …/invitations/{id}`: revokes a pending invitation (404 for anything else).
    pub(crate) async fn revoke_invitation(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        let invitation = self
            .storage
            .list_sessions()
            .await?
            .into_iter()
            .find(|s| s.kind == SessionKind::Invitation && s.id.as_str() == id)
            .ok_or(ApiError::NotFound)?;
        let event = AuditEvent::new(
            call.origin,
            AuditAction::InvitationRevoke,
            invitation.id.as_str(),
            vec![invitation.principal.user.clone()],
        );
        match self
            .storage
            .remove_session(invitation.id.as_str(), event.into())
            .await
        {
            Ok(()) => Ok(super::browser::no_content()),
            Err(StorageError::NotFound) => Err(ApiError::NotFound),
            Err(error) => Err(error.into()),
        }
    }
}

/// Makes a record for `principal`'s user when it has none (from `source`, with a `user.create`
/// event by `origin`): a key made for a new user, an upgrade. A record already there stays as
/// it is. Answers whether one was made.
pub async fn ensure_user(
    storage: &dyn Storage,
    origin: &Origin,
    principal: &Principal,
    source: UserSource,
) -> Result<bool, StorageError> {
    let name = identity::normalized(&principal.user);
    if name.is_empty() || storage.user(&name).await?.is_some() {
        return Ok(false);
    }
    let user = User::new(&name, principal.groups.clone(), principal.role, source);
    let event = AuditEvent::new(
        origin,
        AuditAction::UserCreate,
        &name,
        vec![format!("from {}", source.as_str())],
    );
    match storage.put_user(user, None, Some(event.into())).await {
        Ok(()) => Ok(true),
        Err(StorageError::AlreadyExists) => Ok(false),
        Err(error) => Err(error),
    }
}

/// The setting that says the identities stored before users were have their records.
const ADOPTED: &str = "users_adopted";

/// Once per store (an upgrade from a version without users, or a new store): every user named
/// by a key, a session or link, a query's author or a `user` permission gets a record (source
/// `upgrade`, a member in no group but as a key or session says). Answers how many were made.
pub async fn adopt_identities(
    storage: &dyn Storage,
    origin: &Origin,
) -> Result<usize, StorageError> {
    if storage.setting(ADOPTED).await?.is_some() {
        return Ok(0);
    }
    let mut named: std::collections::BTreeMap<String, Principal> =
        std::collections::BTreeMap::new();
    // A super admin only where a full-scope credential or a session says so: a query key's
    // `--role super-admin` is no grant of the console.
    let mut note = |principal: Principal| {
        let name = identity::normalized(&principal.user);
        if name.is_empty() {
            return;
        }
        let entry = named.entry(name).or_insert_with(|| Principal {
            role: Role::Member,
            ..principal.clone()
        });
        if principal.role == Role::SuperAdmin {
            entry.role = Role::SuperAdmin;
        }
    };
    for key in storage.list_caller_keys().await? {
        if let Some(principal) = key.principal {
            let role = if key.scope == Scope::Full {
                principal.role
            } else {
                Role::Member
            };
            note(Principal {
                agent: false,
                role,
                ..principal
            });
        }
    }
    for session in storage.list_sessions().await? {
        if session.kind != SessionKind::Invitation {
            note(Principal {
                agent: false,
                ..session.principal
            });
        }
    }
    let mut after: Option<String> = None;
    loop {
        let page = storage
            .list_queries(
                crate::storage::Page {
                    after: after.as_deref(),
                    limit: 500,
                },
                crate::storage::QueryFilter::default(),
            )
            .await?;
        let full = page.len() == 500;
        after = page.last().map(|q| q.id.to_string());
        for query in page {
            note(Principal::member(query.author));
        }
        if !full {
            break;
        }
    }
    let mut after: Option<String> = None;
    loop {
        let page = storage
            .list_databases(
                crate::storage::Page {
                    after: after.as_deref(),
                    limit: 500,
                },
                crate::storage::DatabaseFilter::default(),
            )
            .await?;
        let full = page.len() == 500;
        after = page.last().map(|db| db.id.to_string());
        for db in page {
            if let Some(access) = storage.access_control(db.id.as_str()).await? {
                for permission in access.permissions {
                    if permission.subject_kind == crate::model::SubjectKind::User {
                        note(Principal::member(permission.subject));
                    }
                }
            }
        }
        if !full {
            break;
        }
    }
    let mut made = 0;
    for principal in named.values() {
        if ensure_user(storage, origin, principal, UserSource::Upgrade).await? {
            made += 1;
        }
    }
    storage
        .put_setting(ADOPTED, &Timestamp::now().to_string())
        .await?;
    Ok(made)
}
