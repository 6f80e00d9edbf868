//! Browsers: a server-side session in a cookie (docs/console.md, "Signing in").
//!
//! - `POST …/sign-in` takes a user-bound key, `POST …/sign-in/link` a one-time sign-in link's
//!   token; each stores a new [`Session`] (replacing the one the browser came with, and the
//!   link) and sets the cookie: `HttpOnly`, `SameSite=Lax`, `Path=/`, and `Secure` with a
//!   `__Host-` name when the public URL is https. `POST …/sign-out` ends it.
//! - The cookie authenticates an API route only with the [`CSRF_HEADER`] (forms and top-level
//!   navigations can't send it; a cross-site `fetch` with it needs a CORS preflight the server
//!   never grants), and a state-changing request also needs an `Origin` equal to the public
//!   URL's (else the `Host`'s). Sign-in, the link exchange and sign-out check both themselves.
//! - A request that carries `x-api-key` or `Authorization` is judged by them alone: its cookie
//!   is ignored.
//! - A session ends at sign-out, after [`SessionOptions::idle`] without a request, at
//!   [`SessionOptions::max_age`], when it is revoked (`dbconsole sessions revoke`), and when the
//!   key it was made from is revoked. Only the SHA-256 of the cookie's value is stored; its
//!   last use is written at most once a minute, off the request path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};

use super::call::Answer;
use super::call::Call;
use super::error::ApiError;
use super::response::json_response;
use crate::auth::Caller;
use crate::model::{
    Actor, AuditAction, AuditEvent, CredentialKind, KeyId, Scope, Session, SessionKind,
    SignInMethod, Timestamp, key_digest,
};
use crate::storage::{Storage, StorageError};

/// The request header without which a session cookie counts for nothing.
pub const CSRF_HEADER: &str = "x-dbconsole-request";

/// The cookie's name over plain HTTP.
pub const COOKIE: &str = "dbconsole_session";

/// The cookie's name when the public URL is https: the `__Host-` prefix makes the browser keep
/// it only if it is `Secure`, has `Path=/` and no `Domain`, so a sibling subdomain can't set it.
pub const SECURE_COOKIE: &str = "__Host-dbconsole_session";

/// How long a browser session lasts without a request, by default.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(3600);

/// How long a browser session lasts at most, by default.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(12 * 3600);

/// How many live browser sessions a user holds at most, by default: a sign-in beyond it ends
/// the user's oldest.
pub const DEFAULT_MAX_PER_USER: usize = 10;

/// How long a one-time sign-in link lasts.
pub const LINK_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// How often a session's last use is written at most.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// How browser sessions behave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionOptions {
    /// The public URL's origin (`https://console.example.com`), which a state-changing
    /// request's `Origin` must equal; `None`: the scheme below and the request's `Host`.
    pub public_origin: Option<String>,
    /// Whether the console is reached over https (through a proxy that ends TLS, or the
    /// server's own): the cookie is then `Secure` with a `__Host-` name.
    pub secure: bool,
    /// How long a session lasts without a request.
    pub idle: Duration,
    /// How long a session lasts at most.
    pub max_age: Duration,
    /// How many live browser sessions one user holds at most (a sign-in beyond it ends the
    /// user's oldest).
    pub max_per_user: usize,
    /// The origin passkeys are made for (its host is the WebAuthn relying party id): the
    /// public URL's, or `http://localhost:PORT` on a loopback address; `None`: no passkeys.
    pub passkey_origin: Option<String>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            public_origin: None,
            secure: false,
            idle: DEFAULT_IDLE,
            max_age: DEFAULT_MAX_AGE,
            max_per_user: DEFAULT_MAX_PER_USER,
            passkey_origin: None,
        }
    }
}

impl SessionOptions {
    /// Options for a console whose public URL is `url` (`https://host[:port][/path]`): its
    /// origin, and `Secure` cookies when it is https. `None` for a URL that is not http(s).
    pub fn for_public_url(url: &str) -> Option<Self> {
        let uri: http::Uri = url.parse().ok()?;
        let scheme = uri.scheme_str()?;
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let authority = uri.authority()?;
        Some(Self {
            passkey_origin: Some(format!("{scheme}://{authority}")),
            public_origin: Some(format!("{scheme}://{authority}")),
            secure: scheme == "https",
            ..Self::default()
        })
    }

    /// The cookie's name.
    pub fn cookie_name(&self) -> &'static str {
        if self.secure { SECURE_COOKIE } else { COOKIE }
    }

    /// The `Set-Cookie` that gives a browser the session whose secret is `value` for `max_age`
    /// (`""` and zero clear it).
    pub fn set_cookie(&self, value: &str, max_age: Duration) -> Option<HeaderValue> {
        let secure = if self.secure { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
            self.cookie_name(),
            max_age.as_secs()
        ))
        .ok()
    }
}

/// When each session's last use was last written, per node.
#[derive(Debug, Default)]
pub(crate) struct Touched(Mutex<HashMap<String, Instant>>);

impl Touched {
    /// Whether the last use of session `id` is due for a write (and marks it written).
    fn due(&self, id: &str) -> bool {
        let now = Instant::now();
        let mut touched = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if touched.len() > 100_000 {
            touched.retain(|_, at| now.duration_since(*at) < TOUCH_EVERY);
        }
        match touched.get(id) {
            Some(at) if now.duration_since(*at) < TOUCH_EVERY => false,
            _ => {
                touched.insert(id.to_owned(), now);
                true
            }
        }
    }
}

/// `origin` acting as `user` (a sign-in is its user's own act).
fn as_user(origin: &crate::model::Origin, user: &str) -> crate::model::Origin {
    let mut origin = origin.clone();
    origin.actor = Actor::named(user.to_owned());
    origin
}

/// An empty 204 answer.
pub(crate) fn no_content() -> http::Response<super::response::ResponseBody> {
    let mut response =
        http::Response::new(super::response::ResponseBody::full(bytes::Bytes::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

/// The value of cookie `name` in the request, when it has one (and is not empty).
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// Whether a method changes state (everything but `GET`, `HEAD` and `OPTIONS`).
fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// What the browser routes read: the storage (sessions, and the keys that sign in), how sessions behave, and when this
/// node last recorded each session's use.
#[derive(Clone, Debug)]
pub(crate) struct Browser {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// How browser sessions behave.
    pub(crate) sessions: SessionOptions,
    /// When this node last wrote each session's last use.
    pub(crate) session_touched: Arc<Touched>,
    /// Failed sign-ins per address.
    pub(crate) throttle: Arc<super::throttle::SignInThrottle>,
}

impl Browser {
    /// 403 unless the request carries [`CSRF_HEADER`] and, when `method` changes state, an
    /// `Origin` equal to the console's.
    pub(crate) fn check_same_origin(
        &self,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<(), ApiError> {
        if !headers.contains_key(CSRF_HEADER) {
            return Err(ApiError::Denied(format!(
                "a browser request needs the {CSRF_HEADER} header"
            )));
        }
        if !changes_state(method) {
            return Ok(());
        }
        let expected = match &self.sessions.public_origin {
            Some(origin) => Some(origin.clone()),
            None => headers
                .get(header::HOST)
                .and_then(|host| host.to_str().ok())
                .map(|host| {
                    let scheme = if self.sessions.secure {
                        "https"
                    } else {
                        "http"
                    };
                    format!("{scheme}://{host}")
                }),
        };
        let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
        match (origin, expected) {
            (Some(origin), Some(expected)) if origin.eq_ignore_ascii_case(&expected) => Ok(()),
            _ => Err(ApiError::Denied(
                "a browser request that changes something must come from the console's own origin"
                    .to_owned(),
            )),
        }
    }

    /// The session a request's cookie names, when it is live, with the kind of the key it was
    /// signed in with (it reaches only the routes such a key reaches): `None` without a cookie;
    /// 401 for a cookie that names no live session (or one whose key was revoked); 403 without
    /// the header or the origin a cookie needs.
    pub(crate) async fn session_caller(
        &self,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<Option<(Caller, Option<CredentialKind>)>, ApiError> {
        let Some(value) = cookie(headers, self.sessions.cookie_name()) else {
            return Ok(None);
        };
        self.check_same_origin(method, headers)?;
        let expired = ApiError::Unauthorized {
            bearer: false,
            hint: "the session has ended: sign in again",
        };
        let Some(session) = self.live_session(value).await? else {
            return Err(expired);
        };
        let kind = match &session.key_id {
            Some(key_id) => match self.storage.caller_key(key_id.as_str()).await? {
                Some(key) => Some(key.kind),
                None => return Err(expired),
            },
            None => None,
        };
        // A deactivated user's session counts for nothing; a link's, an invitation's or a
        // passkey's carries the user's groups and role as the record has them now.
        let from_record = super::users::from_record(session.method);
        let principal =
            super::users::served(&*self.storage, session.principal.clone(), from_record).await?;
        let scope = if from_record {
            super::users::scope_of(principal.role)
        } else {
            session.scope
        };
        if self.session_touched.due(session.id.as_str())
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let storage = std::sync::Arc::clone(&self.storage);
            let id = session.id.clone();
            runtime.spawn(async move {
                match storage.touch_session(id.as_str(), Timestamp::now()).await {
                    Ok(()) | Err(StorageError::NotFound) => {}
                    Err(error) => tracing::warn!(%error, "could not record the use of a session"),
                }
            });
        }
        let caller = Caller {
            scope,
            actor: Actor {
                id: Some(session.id.as_str().to_owned()),
                name: session.principal.user.clone(),
            },
            principal: Some(principal),
        };
        Ok(Some((caller, kind)))
    }

    /// The live browser session whose secret is `value`.
    async fn live_session(&self, value: &str) -> Result<Option<Session>, ApiError> {
        let found = self
            .storage
            .session_by_digest(&key_digest(value.as_bytes()))
            .await?;
        Ok(found.filter(|session| {
            session.kind == SessionKind::Browser
                && session.live_at(Timestamp::now(), self.sessions.idle)
        }))
    }

    /// The one road every sign-in (a key, a one-time link, the OIDC code flow) ends on: stores
    /// `session` with its `session.create` event (replacing the link `replacing`), ends the
    /// session the browser came with (a sign-in always gets a new id), and answers who signed
    /// in with the cookie that carries the new session.
    pub(crate) async fn start_session(
        &self,
        headers: &HeaderMap,
        request_origin: &crate::model::Origin,
        session: Session,
        secret: &crate::model::Secret,
        replacing: Option<&str>,
    ) -> Result<(Caller, Option<HeaderValue>), ApiError> {
        let current = match cookie(headers, self.sessions.cookie_name()) {
            Some(value) => self.live_session(value).await?,
            None => None,
        };
        let caller = Caller {
            scope: session.scope,
            actor: Actor::named(session.principal.user.clone()),
            principal: Some(session.principal.clone()),
        };
        let mut origin = request_origin.clone();
        origin.actor = caller.actor.clone();
        let session_user = session.principal.user.clone();
        let event = AuditEvent::new(
            &origin,
            AuditAction::SessionCreate,
            session.id.as_str(),
            vec![session.method.as_str().to_owned()],
        );
        let stored = self
            .storage
            .create_session(session, replacing, event.into())
            .await;
        match stored {
            Ok(()) => {}
            Err(StorageError::NotFound) => {
                return Err(ApiError::Unauthorized {
                    bearer: false,
                    hint: "the sign-in link has been used or has expired",
                });
            }
            Err(error) => return Err(error.into()),
        }
        let user = session_user.clone();
        // The session the browser came with ends: a sign-in always gets a new id.
        if let Some(old) = current {
            self.end_session(&origin, &old, "replaced").await?;
        }
        self.cap_sessions(&user, &origin).await?;
        let cookie = self.sessions.set_cookie(
            secret.expose_str().unwrap_or_default(),
            self.sessions.max_age,
        );
        Ok((caller, cookie))
    }

    /// Ends `user`'s oldest live browser sessions beyond [`SessionOptions::max_per_user`]
    /// (each with a `session.revoke` event, `over the cap`).
    async fn cap_sessions(
        &self,
        user: &str,
        origin: &crate::model::Origin,
    ) -> Result<(), ApiError> {
        let mut live = self.sessions_of(user).await?;
        if live.len() <= self.sessions.max_per_user {
            return Ok(());
        }
        live.sort_by_key(|s| (s.created_at, s.id.as_str().to_owned()));
        let over = live.len() - self.sessions.max_per_user;
        for old in live.iter().take(over) {
            self.end_session(origin, old, "over the cap").await?;
        }
        Ok(())
    }

    /// Ends `session` with its `session.revoke` event by `origin`, saying `why` (one already
    /// gone is ended).
    pub(crate) async fn end_session(
        &self,
        origin: &crate::model::Origin,
        session: &Session,
        why: &str,
    ) -> Result<(), ApiError> {
        let event = AuditEvent::new(
            origin,
            AuditAction::SessionRevoke,
            session.id.as_str(),
            vec![why.to_owned()],
        );
        match self
            .storage
            .remove_session(session.id.as_str(), event.into())
            .await
        {
            Ok(()) | Err(StorageError::NotFound) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// A refused sign-in: counted against `peer`; within the limit audited (`session.refused`,
    /// how and from where) and `error` answered, beyond it 429 with the seconds to wait and no
    /// event (at most [`super::throttle::MAX_FAILURES`] events per address and window).
    pub(crate) async fn refused(
        &self,
        origin: &crate::model::Origin,
        peer: Option<std::net::IpAddr>,
        how: &str,
        user: Option<&str>,
        error: ApiError,
    ) -> Answer {
        self.throttle
            .failed(peer)
            .map_err(ApiError::TooManyRequests)?;
        if let Some(user) = user {
            self.throttle
                .failed_for(user)
                .map_err(ApiError::TooManyRequests)?;
        }
        let from = peer.map_or_else(|| "an unknown address".to_owned(), |p| p.to_string());
        let event = AuditEvent::new(
            origin,
            AuditAction::SessionRefused,
            "sign-in",
            vec![how.to_owned(), format!("from {from}")],
        );
        if let Err(failed) = self.storage.append_log(event.into()).await {
            tracing::warn!(error = %failed, "could not audit a refused sign-in");
        }
        Err(error)
    }

    /// A sign-in's answer: who signed in, with the session's cookie.
    pub(crate) fn signed_in((caller, cookie): (Caller, Option<HeaderValue>)) -> Answer {
        let mut response = json_response(StatusCode::OK, &super::me::me_view(&caller));
        if let Some(cookie) = cookie {
            response.headers_mut().insert(header::SET_COOKIE, cookie);
        }
        Ok(response)
    }

    /// `POST …/sign-in`: `{"key": "…"}`, a stored key bound to a user (not an agent's). Only
    /// a stored key: neither a configured one (it names no user) nor an OIDC bearer token (the
    /// issuer's sign-in is the OIDC flow, whose tokens expire as the issuer says).
    pub(crate) async fn sign_in(&self, mut call: Call<'_>) -> Answer {
        self.check_same_origin(&call.method, &call.headers)?;
        let body = call.json().await?;
        let key = body
            .get("key")
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                ApiError::Invalid(crate::validate::ValidationErrors::single(
                    "key",
                    "is required: a key made for a user (dbconsole keys create --user)",
                ))
            })?
            .to_owned();
        let invalid = ApiError::Unauthorized {
            bearer: false,
            hint: "the key is not valid",
        };
        let Some(stored) = self
            .storage
            .caller_key_by_digest(&key_digest(key.as_bytes()))
            .await?
        else {
            return self
                .refused(call.origin, call.peer, "key", None, invalid)
                .await;
        };
        let caller = Caller {
            scope: stored.scope,
            actor: Actor {
                id: Some(stored.id.as_str().to_owned()),
                name: stored.name.clone(),
            },
            principal: stored.principal.clone(),
        };
        let Some(principal) = caller
            .principal
            .clone()
            .map(crate::model::Principal::normalized)
        else {
            return Err(ApiError::Denied(
                "this key is not bound to a user: sign in with a key made with --user".to_owned(),
            ));
        };
        if principal.agent || !matches!(caller.scope, Scope::Full | Scope::Query) {
            return Err(ApiError::Denied(
                "an AI agent's or a setup key can't sign in to the console".to_owned(),
            ));
        }
        // The user's record (made now if it has none) is a super admin's only from a
        // full-scope key; the session carries the key's principal and scope either way.
        let recorded = crate::model::Principal {
            role: if caller.scope == Scope::Full {
                principal.role
            } else {
                crate::model::Role::Member
            },
            ..principal.clone()
        };
        super::users::signing_in(
            &*self.storage,
            &as_user(call.origin, &principal.user),
            &recorded,
            crate::model::UserSource::Key,
        )
        .await?;
        let (mut session, secret) = Session::mint(
            SessionKind::Browser,
            principal,
            caller.scope,
            SignInMethod::Key,
            self.sessions.max_age,
        );
        session.key_id = caller.actor.id.clone().map(KeyId::from_stored);
        Self::signed_in(
            self.start_session(&call.headers, call.origin, session, &secret, None)
                .await?,
        )
    }

    /// `POST …/sign-in/link`: `{"token": "…"}`, a one-time sign-in link's token.
    pub(crate) async fn exchange_sign_in_link(&self, mut call: Call<'_>) -> Answer {
        self.check_same_origin(&call.method, &call.headers)?;
        let body = call.json().await?;
        let token = body
            .get("token")
            .and_then(|v| v.as_str())
            .map(str::trim)
            .unwrap_or_default()
            .to_owned();
        let unusable = ApiError::Unauthorized {
            bearer: false,
            hint: "the sign-in link has been used or has expired",
        };
        let link = if token.is_empty() {
            None
        } else {
            self.storage
                .session_by_digest(&key_digest(token.as_bytes()))
                .await?
                .filter(|link| {
                    link.kind == SessionKind::SignInLink
                        && link.live_at(Timestamp::now(), self.sessions.idle)
                })
        };
        let Some(link) = link else {
            return self
                .refused(call.origin, call.peer, "link", None, unusable)
                .await;
        };
        let principal = super::users::signing_in(
            &*self.storage,
            &as_user(call.origin, &link.principal.user),
            &link.principal,
            crate::model::UserSource::Link,
        )
        .await?;
        let scope = super::users::scope_of(principal.role);
        let (session, secret) = Session::mint(
            SessionKind::Browser,
            principal,
            scope,
            SignInMethod::Link,
            self.sessions.max_age,
        );
        Self::signed_in(
            self.start_session(
                &call.headers,
                call.origin,
                session,
                &secret,
                Some(link.id.as_str()),
            )
            .await?,
        )
    }

    /// `POST …/sign-in/invitation`: `{"token": "…"}`, an invitation link's token: the user
    /// enrolled (their record made with the invitation's groups and role) and signed in; the
    /// invitation is used up in the same atomic change as the session is stored.
    pub(crate) async fn enroll_invitation(&self, mut call: Call<'_>) -> Answer {
        self.check_same_origin(&call.method, &call.headers)?;
        let body = call.json().await?;
        let token = body
            .get("token")
            .and_then(|v| v.as_str())
            .map(str::trim)
            .unwrap_or_default()
            .to_owned();
        let unusable = ApiError::Unauthorized {
            bearer: false,
            hint: "the invitation has been used, revoked or has expired: ask for a new one",
        };
        let invitation = if token.is_empty() {
            None
        } else {
            self.storage
                .session_by_digest(&key_digest(token.as_bytes()))
                .await?
                .filter(|found| {
                    found.kind == SessionKind::Invitation
                        && found.live_at(Timestamp::now(), self.sessions.idle)
                })
        };
        let Some(invitation) = invitation else {
            return self
                .refused(call.origin, call.peer, "invitation", None, unusable)
                .await;
        };
        let origin = as_user(call.origin, &invitation.principal.user);
        // Someone of that name became a user since (a key, the issuer): the invitation can't
        // be theirs, and stays unused.
        if self
            .storage
            .user(&crate::model::identity::normalized(
                &invitation.principal.user,
            ))
            .await?
            .is_some()
        {
            return Err(ApiError::Conflict(
                "a user of this name exists already: ask a super admin for a sign-in link instead"
                    .to_owned(),
            ));
        }
        let (session, secret) = Session::mint(
            SessionKind::Browser,
            invitation.principal.clone(),
            invitation.scope,
            SignInMethod::Invitation,
            self.sessions.max_age,
        );
        let started = self
            .start_session(
                &call.headers,
                &origin,
                session,
                &secret,
                Some(invitation.id.as_str()),
            )
            .await?;
        // The invitation is used: the record follows, new. Should one of that name have been
        // made in between, the session just made ends and nothing is signed in.
        let mut user = crate::model::User::new(
            &invitation.principal.user,
            invitation.principal.groups.clone(),
            invitation.principal.role,
            crate::model::UserSource::Invitation,
        );
        user.last_sign_in_at = Some(Timestamp::now());
        let event = AuditEvent::new(
            &origin,
            AuditAction::UserCreate,
            &user.name,
            vec!["by a sign-in (invitation)".to_owned()],
        );
        match self.storage.put_user(user, None, Some(event.into())).await {
            Ok(()) => Self::signed_in(started),
            Err(StorageError::AlreadyExists) => {
                let value = secret.expose_str().unwrap_or_default();
                if let Some(made) = self.live_session(value).await? {
                    self.end_session(&origin, &made, "user made meanwhile")
                        .await?;
                }
                Err(ApiError::Conflict(
                    "a user of this name exists already: ask a super admin for a sign-in link"
                        .to_owned(),
                ))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// `GET …/me/sessions`: the caller's live browser sessions, newest first (an AI agent has
    /// none to list).
    pub(crate) async fn list_my_sessions(&self, call: Call<'_>) -> Answer {
        let principal = super::call::principal_of(call.caller)?;
        if principal.agent {
            return Err(ApiError::Denied(
                "an AI agent has no browser sessions".to_owned(),
            ));
        }
        let current = call.caller.and_then(|c| c.actor.id.as_deref());
        let mut mine = self.sessions_of(&principal.user).await?;
        mine.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        let data: Vec<super::render::MySessionView<'_>> = mine
            .iter()
            .map(|s| super::render::MySessionView {
                id: s.id.as_str(),
                method: s.method.as_str(),
                created_at: s.created_at.to_string(),
                last_seen_at: s.last_seen_at.to_string(),
                expires_at: s.expires_at.to_string(),
                current: current == Some(s.id.as_str()),
            })
            .collect();
        Ok(json_response(
            StatusCode::OK,
            &super::render::PageView { data, next: None },
        ))
    }

    /// `DELETE …/me/sessions/{id}`: ends one of the caller's own sessions (404 for anyone
    /// else's), with a `session.revoke` event (`by its user`).
    pub(crate) async fn end_my_session(&self, call: Call<'_>) -> Answer {
        let principal = super::call::principal_of(call.caller)?;
        if principal.agent {
            return Err(ApiError::Denied(
                "an AI agent ends no browser session".to_owned(),
            ));
        }
        let id = call.param("id");
        let mine = self.sessions_of(&principal.user).await?;
        let Some(session) = mine.iter().find(|s| s.id.as_str() == id) else {
            return Err(ApiError::NotFound);
        };
        self.end_session(call.origin, session, "by its user")
            .await?;
        Ok(no_content())
    }

    /// `user`'s live browser sessions.
    async fn sessions_of(&self, user: &str) -> Result<Vec<Session>, ApiError> {
        let now = Timestamp::now();
        Ok(self
            .storage
            .list_sessions()
            .await?
            .into_iter()
            .filter(|s| {
                s.kind == SessionKind::Browser
                    && crate::model::identity::same(&s.principal.user, user)
                    && s.live_at(now, self.sessions.idle)
            })
            .collect())
    }

    /// `POST …/sign-out`: ends the browser's session (when it has a live one) and clears the
    /// cookie; 204 either way.
    pub(crate) async fn sign_out(&self, call: Call<'_>) -> Answer {
        self.check_same_origin(&call.method, &call.headers)?;
        if let Some(value) = cookie(&call.headers, self.sessions.cookie_name())
            && let Some(session) = self
                .storage
                .session_by_digest(&key_digest(value.as_bytes()))
                .await?
                .filter(|s| s.kind == SessionKind::Browser)
        {
            let mut origin = crate::model::Origin::clone(call.origin);
            origin.actor = Actor {
                id: Some(session.id.as_str().to_owned()),
                name: session.principal.user.clone(),
            };
            self.end_session(&origin, &session, "sign-out").await?;
        }
        let mut response = no_content();
        if let Some(cookie) = self.sessions.set_cookie("", Duration::ZERO) {
            response.headers_mut().insert(header::SET_COOKIE, cookie);
        }
        Ok(response)
    }
}
