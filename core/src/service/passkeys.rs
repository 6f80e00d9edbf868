//! Passkeys (docs/people.md, "Passkeys"): WebAuthn credentials, discoverable, with user
//! verification, through `webauthn-rs`. A person enrolls one from a session signed in with an
//! invitation, a link or a passkey (never from a key's session, whose scope a passkey must not
//! outgrow, nor for a user the OIDC issuer manages, whose offboarding must keep applying),
//! names it, lists and removes theirs; anyone signs in with one in a click (the browser offers
//! the site's passkeys, no name typed).
//!
//! Each ceremony's state (the challenge) travels sealed in a short-lived `HttpOnly` cookie, as
//! the OIDC flow's does, so whichever node answers the second half finishes it; the cookie is
//! cleared when it ends. The relying party is the console's public URL (its host is the
//! relying party id: WebAuthn refuses an IP address, so a console without `--public-url` on a
//! loopback address is `http://localhost:PORT`).

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use webauthn_rs::prelude::{
    CreationChallengeResponse, DiscoverableAuthentication, DiscoverableKey, Passkey,
    PasskeyRegistration, PublicKeyCredential, RegisterPublicKeyCredential, Url, Uuid, Webauthn,
    WebauthnBuilder,
};

use super::browser::{Browser, cookie};
use super::call::{Answer, Call};
use super::error::ApiError;
use super::render::PasskeyView;
use super::response::json_response;
use crate::model::{
    Session, SessionKind, SignInMethod, Timestamp, UserPasskey, UserSource, identity,
};
use crate::seal::{Place, Sealer};
use crate::storage::Storage;
use crate::validate::ValidationErrors;

/// The cookie that carries a ceremony's sealed state.
const CEREMONY_COOKIE: &str = "dbconsole_passkey";

/// How long a ceremony may take.
const CEREMONY_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// How many passkeys one person keeps at most.
const MAX_PASSKEYS: usize = 20;

fn place() -> Place {
    Place::from_parts(&["console", "passkey-ceremony"])
}

/// The relying party of a console reached at `origin` (`https://console.example.com`): `None`
/// when it can't be one (an IP address, a URL that is not http(s)).
pub(crate) fn relying_party(origin: &str) -> Option<Webauthn> {
    let url = Url::parse(origin).ok()?;
    let host = url.host_str()?.to_owned();
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return None;
    }
    WebauthnBuilder::new(&host, &url)
        .ok()?
        .rp_name("dbconsole")
        .build()
        .ok()
}

/// A ceremony's state as sealed into its cookie.
#[derive(Serialize, Deserialize)]
enum Ceremony {
    /// An enrollment by the session `session` of user `user`.
    Register {
        user: String,
        session: String,
        expires: i64,
        state: PasskeyRegistration,
    },
    /// A sign-in.
    SignIn {
        expires: i64,
        state: DiscoverableAuthentication,
    },
}

/// What the passkey routes read.
#[derive(Clone)]
pub(crate) struct Passkeys {
    /// The storage (users and their passkeys).
    pub(crate) storage: Arc<dyn Storage>,
    /// Seals ceremonies.
    pub(crate) sealer: Sealer,
    /// The browser sessions a passkey sign-in starts.
    pub(crate) browser: Browser,
    /// The relying party; `None`: passkeys are off (no usable public URL).
    pub(crate) webauthn: Option<Arc<Webauthn>>,
}

impl std::fmt::Debug for Passkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passkeys")
            .field("enabled", &self.webauthn.is_some())
            .finish_non_exhaustive()
    }
}

impl Passkeys {
    /// The relying party, or 409 when passkeys are off (the server's configuration, not a
    /// failure of it).
    fn webauthn(&self) -> Result<&Webauthn, ApiError> {
        self.webauthn.as_deref().ok_or_else(|| {
            ApiError::Conflict(
                "passkeys need the console's public URL with a host name (--public-url)".to_owned(),
            )
        })
    }

    /// The `Set-Cookie` carrying `ceremony` (or clearing it).
    fn ceremony_cookie(&self, ceremony: Option<&Ceremony>) -> Result<HeaderValue, ApiError> {
        let (value, max_age) = match ceremony {
            Some(ceremony) => {
                let text = serde_json::to_string(ceremony).map_err(|_| ApiError::Internal)?;
                let sealed = self
                    .sealer
                    .seal_token(&text, &place())
                    .map_err(|_| ApiError::Internal)?;
                (sealed, CEREMONY_LIFETIME.as_secs())
            }
            None => (String::new(), 0),
        };
        let secure = if self.browser.sessions.secure {
            "; Secure"
        } else {
            ""
        };
        HeaderValue::from_str(&format!(
            "{CEREMONY_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
        ))
        .map_err(|_| ApiError::Internal)
    }

    /// The ceremony the request's cookie carries, when it is live.
    fn ceremony(&self, headers: &http::HeaderMap) -> Option<Ceremony> {
        let value = cookie(headers, CEREMONY_COOKIE)?;
        let opened = self.sealer.open_token(value, &place())?;
        let ceremony: Ceremony = serde_json::from_str(opened.expose_str()?).ok()?;
        let expires = match &ceremony {
            Ceremony::Register { expires, .. } | Ceremony::SignIn { expires, .. } => *expires,
        };
        (Timestamp::now().as_micros() < expires).then_some(ceremony)
    }

    /// The caller's own browser session, when it may enroll a passkey: signed in with an
    /// invitation, a link, a passkey or the issuer (a key's session may not: its scope is the
    /// key's, a passkey's the user's).
    async fn enrolling_session(
        &self,
        caller: Option<&crate::auth::Caller>,
    ) -> Result<Session, ApiError> {
        let refused = || {
            ApiError::Denied(
                "a passkey is enrolled from the console, signed in with an invitation, a sign-in \
                 link or a passkey (not with a key, nor the organisation's sign-in)"
                    .to_owned(),
            )
        };
        let caller = caller.ok_or_else(refused)?;
        let id = caller.actor.id.as_deref().ok_or_else(refused)?;
        if caller.principal.as_ref().is_none_or(|p| p.agent) {
            return Err(refused());
        }
        let session = self
            .storage
            .list_sessions()
            .await?
            .into_iter()
            .find(|s| s.kind == SessionKind::Browser && s.id.as_str() == id)
            .ok_or_else(refused)?;
        // Not from a key's session (its scope is the key's, a passkey's the user's), nor from
        // the issuer's: a person the organisation's sign-in manages keeps signing in there, so
        // that its offboarding, MFA and policies keep applying.
        if !matches!(
            session.method,
            SignInMethod::Invitation | SignInMethod::Link | SignInMethod::Passkey
        ) {
            return Err(refused());
        }
        Ok(session)
    }

    /// `POST …/me/passkeys/registration`: the options the browser's `navigator.credentials.
    /// create` takes (a discoverable credential, user verification required), with the
    /// ceremony's cookie.
    pub(crate) async fn start_registration(&self, call: Call<'_>) -> Answer {
        let webauthn = self.webauthn()?;
        let session = self.enrolling_session(call.caller).await?;
        let name = identity::normalized(&session.principal.user);
        let user = self
            .storage
            .user(&name)
            .await?
            .ok_or_else(|| ApiError::Conflict("this user has no record yet".to_owned()))?;
        if user.passkeys.len() >= MAX_PASSKEYS {
            return Err(ApiError::Conflict(format!(
                "a person keeps at most {MAX_PASSKEYS} passkeys: remove one first"
            )));
        }
        let exclude = user
            .passkeys
            .iter()
            .filter_map(|p| serde_json::from_str::<Passkey>(&p.credential).ok())
            .map(|p| p.cred_id().clone())
            .collect::<Vec<_>>();
        let (options, state) = webauthn
            .start_passkey_registration(
                Uuid::from_bytes(user.handle),
                &user.name,
                &user.display_name,
                Some(exclude),
            )
            .map_err(|_| ApiError::Internal)?;
        let options = require_discoverable(&options)?;
        let ceremony = Ceremony::Register {
            user: user.name.clone(),
            session: session.id.as_str().to_owned(),
            expires: Timestamp::now().plus(CEREMONY_LIFETIME).as_micros(),
            state,
        };
        let mut response = json_response(StatusCode::OK, &options);
        response
            .headers_mut()
            .insert(header::SET_COOKIE, self.ceremony_cookie(Some(&ceremony))?);
        Ok(response)
    }

    /// `POST …/me/passkeys`: `{"name", "credential"}`, the browser's answer to the options;
    /// the passkey stored under its name (a `user.update` event), the ceremony's cookie
    /// cleared.
    pub(crate) async fn finish_registration(&self, mut call: Call<'_>) -> Answer {
        let webauthn = self.webauthn()?;
        let session = self.enrolling_session(call.caller).await?;
        let body = call.json().await?;
        let label = passkey_name(body.get("name"))?;
        let Some(Ceremony::Register {
            user,
            session: ceremony_session,
            state,
            ..
        }) = self.ceremony(&call.headers)
        else {
            return Err(ApiError::Conflict(
                "the enrollment took too long or was started elsewhere: start again".to_owned(),
            ));
        };
        if ceremony_session != session.id.as_str() {
            return Err(ApiError::Conflict(
                "the enrollment was started by another session: start again".to_owned(),
            ));
        }
        let credential: RegisterPublicKeyCredential = body
            .get("credential")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .ok_or_else(|| {
                ValidationErrors::single("credential", "must be the browser's new credential")
            })?;
        let passkey = webauthn
            .finish_passkey_registration(&credential, &state)
            .map_err(|error| {
                ApiError::Invalid(ValidationErrors::single(
                    "credential",
                    format!("was not accepted: {error}"),
                ))
            })?;
        let stored = UserPasskey {
            id: base64_url(passkey.cred_id().as_ref()),
            name: label.clone(),
            created_at: Timestamp::now(),
            last_used_at: None,
            credential: serde_json::to_string(&passkey).map_err(|_| ApiError::Internal)?,
        };
        let view_id = stored.id.clone();
        let user = super::users::update_user(&*self.storage, call.origin, &user, |user| {
            if user.passkeys.iter().any(|p| p.id == stored.id) {
                return Err(ApiError::Conflict(
                    "this passkey is already enrolled".to_owned(),
                ));
            }
            if user.passkeys.len() >= MAX_PASSKEYS {
                return Err(ApiError::Conflict(format!(
                    "a person keeps at most {MAX_PASSKEYS} passkeys: remove one first"
                )));
            }
            user.passkeys.push(stored.clone());
            Ok(vec![format!("passkey enrolled: {label}")])
        })
        .await?;
        let added = user
            .passkeys
            .iter()
            .find(|p| p.id == view_id)
            .ok_or(ApiError::Internal)?;
        let mut response = json_response(StatusCode::CREATED, &PasskeyView::of(added));
        response
            .headers_mut()
            .insert(header::SET_COOKIE, self.ceremony_cookie(None)?);
        Ok(response)
    }

    /// `GET …/me/passkeys`: the caller's passkeys.
    pub(crate) async fn list_my_passkeys(&self, call: Call<'_>) -> Answer {
        let principal = super::call::principal_of(call.caller)?;
        let name = identity::normalized(&principal.user);
        let user = self.storage.user(&name).await?;
        let data: Vec<PasskeyView<'_>> = user
            .as_ref()
            .map(|u| u.passkeys.iter().map(PasskeyView::of).collect())
            .unwrap_or_default();
        Ok(json_response(
            StatusCode::OK,
            &super::render::PageView { data, next: None },
        ))
    }

    /// `DELETE …/me/passkeys/{id}`: removes one of the caller's passkeys (404 for any other).
    pub(crate) async fn remove_my_passkey(&self, call: Call<'_>) -> Answer {
        // As an enrollment: from the person's own session, never with a key that leaked.
        self.enrolling_session(call.caller).await?;
        let principal = super::call::principal_of(call.caller)?;
        let id = call.param("id").to_owned();
        super::users::update_user(&*self.storage, call.origin, &principal.user, |user| {
            let Some(at) = user.passkeys.iter().position(|p| p.id == id) else {
                return Err(ApiError::NotFound);
            };
            let removed = user.passkeys.remove(at);
            Ok(vec![format!("passkey removed: {}", removed.name)])
        })
        .await?;
        Ok(super::browser::no_content())
    }

    /// `POST …/sign-in/passkey/options`: the options `navigator.credentials.get` takes (any
    /// of the site's passkeys; user verification required), with the ceremony's cookie.
    pub(crate) async fn start_sign_in(&self, call: Call<'_>) -> Answer {
        let webauthn = self.webauthn()?;
        self.browser
            .check_same_origin(&call.method, &call.headers)?;
        let (options, state) = webauthn
            .start_discoverable_authentication()
            .map_err(|_| ApiError::Internal)?;
        let ceremony = Ceremony::SignIn {
            expires: Timestamp::now().plus(CEREMONY_LIFETIME).as_micros(),
            state,
        };
        let mut response = json_response(StatusCode::OK, &options);
        response
            .headers_mut()
            .insert(header::SET_COOKIE, self.ceremony_cookie(Some(&ceremony))?);
        Ok(response)
    }

    /// `POST …/sign-in/passkey`: `{"credential"}`, the browser's assertion: its user signed in
    /// (refused for a deactivated one, or a passkey no user has), the ceremony's cookie
    /// cleared.
    pub(crate) async fn finish_sign_in(&self, mut call: Call<'_>) -> Answer {
        let webauthn = self.webauthn()?;
        self.browser
            .check_same_origin(&call.method, &call.headers)?;
        let body = call.json().await?;
        let refused = ApiError::Unauthorized {
            bearer: false,
            hint: "the passkey was not accepted",
        };
        let Some(credential) = body
            .get("credential")
            .cloned()
            .and_then(|c| serde_json::from_value::<PublicKeyCredential>(c).ok())
        else {
            return Err(
                ValidationErrors::single("credential", "must be the browser's assertion").into(),
            );
        };
        let Some(Ceremony::SignIn { state, .. }) = self.ceremony(&call.headers) else {
            return Err(ApiError::Conflict(
                "the sign-in took too long or was started elsewhere: start again".to_owned(),
            ));
        };
        let Ok((handle, credential_id)) =
            webauthn.identify_discoverable_authentication(&credential)
        else {
            return self
                .browser
                .refused(call.origin, call.peer, "passkey", None, refused)
                .await;
        };
        let credential_id = base64_url(credential_id);
        let users = self.storage.list_users().await?;
        let owner = users.into_iter().find(|u| {
            u.handle == *handle.as_bytes() && u.passkeys.iter().any(|p| p.id == credential_id)
        });
        let Some(owner) = owner else {
            return self
                .browser
                .refused(call.origin, call.peer, "passkey", None, refused)
                .await;
        };
        if owner.source == UserSource::Oidc {
            return Err(ApiError::Denied(
                "your organisation's sign-in manages this user: sign in with it".to_owned(),
            ));
        }
        let Some(mut passkey) = owner
            .passkeys
            .iter()
            .find(|p| p.id == credential_id)
            .and_then(|p| serde_json::from_str::<Passkey>(&p.credential).ok())
        else {
            return Err(ApiError::Internal);
        };
        let Ok(result) = webauthn.finish_discoverable_authentication(
            &credential,
            state,
            &[DiscoverableKey::from(&passkey)],
        ) else {
            return self
                .browser
                .refused(
                    call.origin,
                    call.peer,
                    "passkey",
                    Some(&owner.name),
                    refused,
                )
                .await;
        };
        let origin = {
            let mut origin = crate::model::Origin::clone(call.origin);
            origin.actor = crate::model::Actor::named(owner.name.clone());
            origin
        };
        let principal = super::users::signing_in(
            &*self.storage,
            &origin,
            &owner.principal(),
            // Not a key's or the issuer's: the session carries the record's groups and role.
            UserSource::Link,
        )
        .await?;
        // The passkey's counter and last use: bookkeeping (the sign-in's event says the rest).
        passkey.update_credential(&result);
        let updated = serde_json::to_string(&passkey).map_err(|_| ApiError::Internal)?;
        for _ in 0..4 {
            let Some(stored) = self.storage.user(&owner.name).await? else {
                break;
            };
            let mut user = stored.clone();
            if let Some(key) = user.passkeys.iter_mut().find(|p| p.id == credential_id) {
                key.credential.clone_from(&updated);
                key.last_used_at = Some(Timestamp::now());
            }
            user.updated_at =
                Timestamp::now().max(stored.updated_at.plus(Duration::from_micros(1)));
            match self
                .storage
                .put_user(user, Some(stored.updated_at), None)
                .await
            {
                Err(crate::storage::StorageError::Conflict) => {}
                Ok(()) | Err(_) => break,
            }
        }
        let scope = super::users::scope_of(principal.role);
        let (session, secret) = Session::mint(
            SessionKind::Browser,
            principal,
            scope,
            SignInMethod::Passkey,
            self.browser.sessions.max_age,
        );
        let started = self
            .browser
            .start_session(&call.headers, &origin, session, &secret, None)
            .await?;
        let mut response = Browser::signed_in(started)?;
        response
            .headers_mut()
            .append(header::SET_COOKIE, self.ceremony_cookie(None)?);
        Ok(response)
    }
}

/// The options as the browser takes them, asking for a discoverable credential
/// (webauthn-rs's passkey registration discourages them): what lets a person sign in without
/// typing a name.
fn require_discoverable(options: &CreationChallengeResponse) -> Result<Value, ApiError> {
    let mut value = serde_json::to_value(options).map_err(|_| ApiError::Internal)?;
    let selection = value
        .get_mut("publicKey")
        .and_then(Value::as_object_mut)
        .ok_or(ApiError::Internal)?
        .entry("authenticatorSelection")
        .or_insert_with(|| serde_json::json!({}));
    if let Some(selection) = selection.as_object_mut() {
        selection.insert("residentKey".to_owned(), Value::from("required"));
        selection.insert("requireResidentKey".to_owned(), Value::from(true));
        selection.insert("userVerification".to_owned(), Value::from("required"));
    }
    Ok(value)
}

/// A passkey's name: 1 to 100 characters, no control character.
fn passkey_name(value: Option<&Value>) -> Result<String, ValidationErrors> {
    let name = value.and_then(Value::as_str).map(str::trim).unwrap_or("");
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ValidationErrors::single(
            "name",
            "must be 1 to 100 characters, none of them a control character (\"Work laptop\")",
        ));
    }
    Ok(name.to_owned())
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
