//! Signing a browser in through the OIDC issuer (docs/console.md, "Signing in"): the
//! authorization code flow with PKCE (S256), `state` and `nonce`; tokens never reach the
//! browser. The flow ends where every sign-in ends, [`Browser::start_session`]: one
//! `session.create` event, and the browser's previous session ended.
//!
//! - `GET …/oidc` answers whether it is on (`{"enabled": …}`), for the sign-in page.
//! - `GET …/oidc/start?return_to=/console/…` makes a verifier, a state and a nonce, seals them
//!   (with the return path and an expiry of ten minutes) with the service's key into a cookie
//!   scoped to `…/oidc`, and redirects to the issuer's authorization endpoint. A sealed cookie
//!   rather than a stored record: the callback may land on another node, which reads it with
//!   the same key.
//! - `GET …/oidc/callback?code&state` opens that cookie, checks the state, exchanges the code
//!   with the verifier (and the client secret, when there is one) at the token endpoint, checks
//!   the ID token with the bearer tokens' verifier (signature, `iss`, `aud` = the client id,
//!   `exp`) and its nonce, starts a session for the user its claims name (an agent's identity
//!   is refused) and redirects to the return path, which is always a path below `/console/`.
//!
//! Without OIDC, `…/oidc` answers `{"enabled": false}` and the other two 404. An issuer that
//! can't be reached makes them 503; every other route answers as ever.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use rand::RngCore as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::browser::{Browser, cookie};
use super::call::{Answer, Call};
use super::error::ApiError;
use super::response::{ResponseBody, json_response, text_response};
use crate::auth::oidc::OidcLogin;
use crate::model::{Role, Scope, Session, SessionKind, SignInMethod, Timestamp};
use crate::seal::{Place, Sealer};

/// Where the flow's routes are mounted, below the service's base path.
pub(crate) const OIDC_PATH: &str = "/api/v1/console/oidc";

/// The cookie that carries the flow's sealed state to the callback.
const FLOW_COOKIE: &str = "dbconsole_oidc";

/// How long a flow may take, from start to callback.
const FLOW_LIFETIME: Duration = Duration::from_secs(600);

/// What the flow reads: the client (none without OIDC), the sealer of its cookie, and the
/// browser family whose session start it ends on.
#[derive(Debug)]
pub(crate) struct Oidc {
    /// The client a browser signs in as; `None`: OIDC is off.
    pub(crate) login: Option<Arc<OidcLogin>>,
    /// Seals and opens the flow's cookie.
    pub(crate) sealer: Sealer,
    /// Starts the session.
    pub(crate) browser: Browser,
}

/// What the flow's cookie seals.
struct Flow {
    state: String,
    nonce: String,
    verifier: String,
    return_to: String,
    expires: Timestamp,
}

fn random_text() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn place() -> Place {
    Place::from_parts(&["console", "oidc-flow"])
}

/// A return path is a path below `/console/` of this origin, or it is `/console/`.
pub(crate) fn safe_return(path: Option<&str>) -> String {
    match path {
        Some(path)
            if path.starts_with("/console/")
                && !path.contains("//")
                && !path.contains('\\')
                && !path.contains("/..")
                && path.chars().all(|c| c.is_ascii_graphic()) =>
        {
            path.to_owned()
        }
        _ => "/console/".to_owned(),
    }
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query.and_then(|query| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    })
}

fn redirect(to: &str, cookies: Vec<HeaderValue>) -> Response<ResponseBody> {
    let mut response = text_response(StatusCode::FOUND, String::new());
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(to) {
        headers.insert(header::LOCATION, location);
    }
    for cookie in cookies {
        headers.append(header::SET_COOKIE, cookie);
    }
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// 503: the issuer can't be reached now (logged with why).
fn unreachable(error: &dyn std::fmt::Display) -> ApiError {
    tracing::warn!(%error, "the OIDC issuer could not be reached");
    ApiError::Unavailable
}

/// The callback's refusal: 400, a page saying why.
fn refused(why: &str) -> Answer {
    // A page a browser that navigated here shows.
    Ok(text_response(
        StatusCode::BAD_REQUEST,
        format!("The sign-in did not complete: {why}. Start again from the sign-in page.\n"),
    ))
}

impl Oidc {
    /// The client, or 404 when OIDC is off.
    fn login(&self) -> Result<&OidcLogin, ApiError> {
        self.login.as_deref().ok_or(ApiError::NotFound)
    }

    /// Where the issuer sends the browser back.
    fn callback_url(&self, login: &OidcLogin, headers: &HeaderMap) -> String {
        let base = match login.public_url() {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("localhost");
                let scheme = if self.browser.sessions.secure {
                    "https"
                } else {
                    "http"
                };
                format!("{scheme}://{host}")
            }
        };
        format!("{base}{OIDC_PATH}/callback")
    }

    /// `GET …/oidc`: whether a browser may sign in through the issuer.
    pub(crate) async fn get_oidc(&self, _call: Call<'_>) -> Answer {
        Ok(json_response(
            StatusCode::OK,
            &json!({
                "enabled": self.login.is_some(),
                "passkeys": self
                    .browser
                    .sessions
                    .passkey_origin
                    .as_deref()
                    .is_some_and(|origin| super::passkeys::relying_party(origin).is_some()),
            }),
        ))
    }

    /// `GET …/oidc/start`: to the issuer, with the flow sealed in a cookie.
    pub(crate) async fn start_oidc(&self, call: Call<'_>) -> Answer {
        let login = self.login()?;
        let endpoints = login.endpoints().await.map_err(|e| unreachable(&e))?;
        let flow = Flow {
            state: random_text(),
            nonce: random_text(),
            verifier: random_text(),
            return_to: safe_return(query_param(call.query.as_deref(), "return_to").as_deref()),
            expires: Timestamp::now().plus(FLOW_LIFETIME),
        };
        let sealed_text = format!(
            "v1\n{}\n{}\n{}\n{}\n{}",
            flow.state,
            flow.nonce,
            flow.verifier,
            flow.return_to,
            flow.expires.as_micros()
        );
        let value = self
            .sealer
            .seal_token(&sealed_text, &place())
            .map_err(|error| {
                tracing::error!(%error, "an OIDC flow could not be sealed");
                ApiError::Internal
            })?;
        let secure = self.browser.sessions.secure;
        let cookie = HeaderValue::from_str(&format!(
            "{FLOW_COOKIE}={value}; Path={OIDC_PATH}; HttpOnly; SameSite=Lax; Max-Age={}{}",
            FLOW_LIFETIME.as_secs(),
            if secure { "; Secure" } else { "" }
        ))
        .map_err(|_| ApiError::Internal)?;
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(flow.verifier.as_bytes()));
        let mut scope = "openid".to_owned();
        for extra in login.client().scopes.split_whitespace() {
            if extra != "openid" {
                scope.push(' ');
                scope.push_str(extra);
            }
        }
        let params = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &login.client().client_id)
            .append_pair("redirect_uri", &self.callback_url(login, &call.headers))
            .append_pair("scope", &scope)
            .append_pair("state", &flow.state)
            .append_pair("nonce", &flow.nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .finish();
        let separator = if endpoints.authorization.contains('?') {
            '&'
        } else {
            '?'
        };
        let to = format!("{}{separator}{params}", endpoints.authorization);
        Ok(redirect(&to, vec![cookie]))
    }

    fn open_flow(&self, value: &str) -> Option<Flow> {
        let opened = self.sealer.open_token(value, &place())?;
        let text = opened.expose_str()?;
        let mut lines = text.split('\n');
        if lines.next()? != "v1" {
            return None;
        }
        let flow = Flow {
            state: lines.next()?.to_owned(),
            nonce: lines.next()?.to_owned(),
            verifier: lines.next()?.to_owned(),
            return_to: lines.next()?.to_owned(),
            expires: Timestamp::from_micros(lines.next()?.parse().ok()?),
        };
        (Timestamp::now() < flow.expires).then_some(flow)
    }

    /// `GET …/oidc/callback`: the issuer's code, exchanged, checked, and a session started.
    pub(crate) async fn oidc_callback(&self, call: Call<'_>) -> Answer {
        let login = self.login()?;
        let query = call.query.as_deref();
        if let Some(error) = query_param(query, "error") {
            let shown: String = error
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(64)
                .collect();
            return refused(&format!("the issuer answered {shown}"));
        }
        let Some(flow) = cookie(&call.headers, FLOW_COOKIE).and_then(|value| self.open_flow(value))
        else {
            return refused("this browser did not start it here, or it took over ten minutes");
        };
        let state = query_param(query, "state").unwrap_or_default();
        let same_state: bool =
            subtle::ConstantTimeEq::ct_eq(state.as_bytes(), flow.state.as_bytes()).into();
        if !same_state {
            return refused("its state does not match the one this browser started with");
        }
        let Some(code) = query_param(query, "code").filter(|c| !c.is_empty()) else {
            return refused("the issuer sent no code");
        };
        let redirect_uri = self.callback_url(login, &call.headers);
        let id_token = match login.exchange(&code, &flow.verifier, &redirect_uri).await {
            Ok(token) => token,
            Err(error) => {
                tracing::warn!(%error, "the OIDC code exchange failed");
                return refused("the issuer did not accept the code");
            }
        };
        let (principal, claims) = match login.verify_id_token(&id_token).await {
            Ok(Some(verified)) => verified,
            Ok(None) => return refused("the issuer's ID token is not valid"),
            Err(error) => return Err(unreachable(&error)),
        };
        let nonce_ok = claims
            .get("nonce")
            .and_then(Value::as_str)
            .is_some_and(|nonce| {
                subtle::ConstantTimeEq::ct_eq(nonce.as_bytes(), flow.nonce.as_bytes()).into()
            });
        if !nonce_ok {
            return refused("the ID token's nonce is not this sign-in's");
        }
        if principal.agent {
            return refused("an AI agent's identity can't sign in to the console");
        }
        let principal = principal.normalized();
        let mut origin = crate::model::Origin::clone(call.origin);
        origin.actor = crate::model::Actor::named(principal.user.clone());
        let principal = match super::users::signing_in(
            &*self.browser.storage,
            &origin,
            &principal,
            crate::model::UserSource::Oidc,
        )
        .await
        {
            Ok(principal) => principal,
            Err(ApiError::Denied(_)) => {
                return refused("this user has been deactivated: ask a super admin");
            }
            Err(error) => return Err(error),
        };
        let scope = match principal.role {
            Role::SuperAdmin => Scope::Full,
            Role::Member => Scope::Query,
        };
        let (session, secret) = Session::mint(
            SessionKind::Browser,
            principal,
            scope,
            SignInMethod::Oidc,
            self.browser.sessions.max_age,
        );
        let (_, session_cookie) = self
            .browser
            .start_session(&call.headers, call.origin, session, &secret, None)
            .await?;
        let mut cookies: Vec<HeaderValue> = session_cookie.into_iter().collect();
        if let Ok(clear) = HeaderValue::from_str(&format!(
            "{FLOW_COOKIE}=; Path={OIDC_PATH}; HttpOnly; SameSite=Lax; Max-Age=0"
        )) {
            cookies.push(clear);
        }
        Ok(redirect(&flow.return_to, cookies))
    }
}

#[cfg(test)]
mod tests {
    use super::safe_return;

    #[test]
    fn return_paths_stay_below_the_console() {
        assert_eq!(
            safe_return(Some("/console/queries/qry_1")),
            "/console/queries/qry_1"
        );
        for hostile in [
            "https://evil.example/console/",
            "//evil.example/console/",
            "/console//evil.example",
            "/console/\\\\evil",
            "/console/../api",
            "/api/v1/console/me",
            "/console/a b",
        ] {
            assert_eq!(safe_return(Some(hostile)), "/console/", "{hostile}");
        }
        assert_eq!(safe_return(None), "/console/");
    }
}
