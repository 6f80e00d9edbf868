//! Signing a browser in through the OIDC issuer (docs/console.md, "Signing in"): the
//! authorization code flow with PKCE (S256), `state` and `nonce`, run by the server, which then
//! keeps a session of its own; tokens never reach the browser.
//!
//! - `GET /api/v1/console/oidc` answers whether it is on (`{"enabled": true}`), for the sign-in page.
//! - `GET /api/v1/console/oidc/start?return_to=/console/…` makes a verifier, a state and a nonce,
//!   seals them (with the return path and an expiry of ten minutes) with the server's key into a
//!   cookie scoped to `/api/v1/console/oidc`, and redirects to the issuer's authorization endpoint.
//!   A sealed cookie rather than a stored record: the callback may land on another node, which
//!   reads it with the same key.
//! - `GET /api/v1/console/oidc/callback?code&state` opens that cookie, checks the state, posts
//!   the code with the verifier (and the client secret, when there is one) to the token endpoint,
//!   checks the ID token (signature with the issuer's keys, `iss`, `aud` = the client id, `exp`,
//!   and the nonce), stores a session for the user its claims name (groups and super admin group
//!   as for bearer tokens; an agent's token is refused) and redirects to the return path, which is
//!   always a path below `/console/` (never another origin).
//!
//! The HTTP client follows no redirect (hyper's never does), so an issuer's answer can't send the
//! server elsewhere; the client secret is never logged, and no token or code is.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use dbconsole_core::model::{
    Actor, AuditAction, AuditEvent, Origin, Role, Scope, Secret, Session, SessionKind,
    SignInMethod, Timestamp,
};
use dbconsole_core::seal::Place;
use dbconsole_core::service::browser::cookie;
use dbconsole_core::{ConsoleService, ResponseBody};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rand::RngCore as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::sync::OnceCell;

use crate::oidc::OidcAuthenticator;

/// Where the flow's routes are.
pub const OIDC_PATH: &str = "/api/v1/console/oidc";

/// The cookie that carries the flow's sealed state to the callback.
const FLOW_COOKIE: &str = "dbconsole_oidc";

/// How long a flow may take, from start to callback.
const FLOW_LIFETIME: Duration = Duration::from_secs(600);

/// How long a call to the issuer may take.
const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);

/// The client the flow signs in as.
#[derive(Clone)]
pub struct OidcClient {
    /// The client id registered at the issuer (the ID token's audience).
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The scopes asked for, besides `openid`.
    pub scopes: String,
}

impl std::fmt::Debug for OidcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("scopes", &self.scopes)
            .finish()
    }
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The issuer's endpoints, from its discovery document.
#[derive(Debug, Clone)]
struct Endpoints {
    authorization: String,
    token: String,
}

/// The browser sign-in through the issuer.
pub struct OidcLogin {
    verifier: Arc<OidcAuthenticator>,
    client: OidcClient,
    public_url: Option<String>,
    http: HttpsClient,
    endpoints: OnceCell<Endpoints>,
}

impl std::fmt::Debug for OidcLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcLogin")
            .field("client", &self.client)
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
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
pub fn safe_return(path: Option<&str>) -> String {
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

fn plain(status: StatusCode, text: &str) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(Bytes::from(text.to_owned())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn redirect(to: &str, cookies: &[HeaderValue]) -> Response<ResponseBody> {
    let mut response = plain(StatusCode::FOUND, "");
    if let Ok(location) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    for cookie in cookies {
        response
            .headers_mut()
            .append(header::SET_COOKIE, cookie.clone());
    }
    response.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `GET /api/v1/console/oidc` without OIDC: `{"enabled": false}`, so the sign-in page can ask.
pub fn disabled(method: &Method, path: &str) -> Option<Response<ResponseBody>> {
    (path == OIDC_PATH && method == Method::GET).then(|| enabled(false))
}

fn enabled(on: bool) -> Response<ResponseBody> {
    let mut response = plain(StatusCode::OK, "");
    *response.body_mut() = ResponseBody::full(Bytes::from(json!({ "enabled": on }).to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

impl OidcLogin {
    /// The flow for `client`, checking ID tokens with `verifier`'s issuer and keys; redirects
    /// come back to `public_url` (else the request's `Host`).
    pub fn new(
        verifier: Arc<OidcAuthenticator>,
        client: OidcClient,
        public_url: Option<String>,
    ) -> std::io::Result<Self> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            verifier,
            client,
            public_url,
            http: Client::builder(TokioExecutor::new()).build(connector),
            endpoints: OnceCell::new(),
        })
    }

    async fn endpoints(&self) -> Result<Endpoints, String> {
        self.endpoints
            .get_or_try_init(|| async {
                let issuer = &self.verifier.options().issuer;
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    issuer.trim_end_matches('/')
                );
                let document = self.verifier.get_json(&url).await.map_err(|e| e.0)?;
                let field = |name: &str| {
                    document[name]
                        .as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{url} names no {name}"))
                };
                Ok(Endpoints {
                    authorization: field("authorization_endpoint")?,
                    token: field("token_endpoint")?,
                })
            })
            .await
            .cloned()
    }

    fn callback_url(&self, headers: &HeaderMap, secure: bool) -> String {
        let base = match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("localhost");
                format!("{}://{host}", if secure { "https" } else { "http" })
            }
        };
        format!("{base}{OIDC_PATH}/callback")
    }

    /// The answer to a request below [`OIDC_PATH`]; `None` for another path.
    pub async fn answer<B>(
        &self,
        service: &ConsoleService,
        request: &Request<B>,
    ) -> Option<Response<ResponseBody>> {
        let path = request.uri().path();
        let rest = path.strip_prefix(OIDC_PATH)?;
        if request.method() != Method::GET {
            return Some(plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "405 Method Not Allowed\n",
            ));
        }
        let query = request.uri().query();
        Some(match rest {
            "" => {
                let mut response = plain(StatusCode::OK, "");
                *response.body_mut() =
                    ResponseBody::full(Bytes::from(json!({"enabled": true}).to_string()));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
            "/start" => self.start(service, request.headers(), query).await,
            "/callback" => self.callback(service, request.headers(), query).await,
            _ => return None,
        })
    }

    async fn start(
        &self,
        service: &ConsoleService,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Response<ResponseBody> {
        let endpoints = match self.endpoints().await {
            Ok(endpoints) => endpoints,
            Err(error) => {
                tracing::warn!(%error, "the OIDC issuer's discovery document could not be read");
                return plain(
                    StatusCode::BAD_GATEWAY,
                    "the sign-in service could not be reached: try again",
                );
            }
        };
        let flow = Flow {
            state: random_text(),
            nonce: random_text(),
            verifier: random_text(),
            return_to: safe_return(query_param(query, "return_to").as_deref()),
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
        let Ok(value) = service.sealer().seal_token(&sealed_text, &place()) else {
            return plain(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
        };
        let secure = service.session_options().secure;
        let cookie = HeaderValue::from_str(&format!(
            "{FLOW_COOKIE}={value}; Path={OIDC_PATH}; HttpOnly; SameSite=Lax; Max-Age={}{}",
            FLOW_LIFETIME.as_secs(),
            if secure { "; Secure" } else { "" }
        ));
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(flow.verifier.as_bytes()));
        let mut scope = "openid".to_owned();
        for extra in self.client.scopes.split_whitespace() {
            if extra != "openid" {
                scope.push(' ');
                scope.push_str(extra);
            }
        }
        let params = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client.client_id)
            .append_pair("redirect_uri", &self.callback_url(headers, secure))
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
        match cookie {
            Ok(cookie) => redirect(&to, &[cookie]),
            Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
        }
    }

    fn open_flow(&self, service: &ConsoleService, value: &str) -> Option<Flow> {
        let opened = service.sealer().open_token(value, &place())?;
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

    async fn callback(
        &self,
        service: &ConsoleService,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Response<ResponseBody> {
        let refused = |why: &str| {
            plain(
                StatusCode::BAD_REQUEST,
                &format!(
                    "The sign-in did not complete: {why}. Start again from the sign-in page.\n"
                ),
            )
        };
        if let Some(error) = query_param(query, "error") {
            let shown: String = error
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(64)
                .collect();
            return refused(&format!("the issuer answered {shown}"));
        }
        let Some(flow) =
            cookie(headers, FLOW_COOKIE).and_then(|value| self.open_flow(service, value))
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
        let secure = service.session_options().secure;
        let id_token = match self.exchange(&code, &flow.verifier, headers, secure).await {
            Ok(token) => token,
            Err(error) => {
                tracing::warn!(%error, "the OIDC code exchange failed");
                return refused("the issuer did not accept the code");
            }
        };
        let verified = match self
            .verifier
            .verify_for(&id_token, &self.client.client_id)
            .await
        {
            Ok(Some(verified)) => verified,
            Ok(None) => return refused("the issuer's ID token is not valid"),
            Err(error) => {
                tracing::warn!(error = %error.0, "the OIDC keys could not be read");
                return plain(
                    StatusCode::BAD_GATEWAY,
                    "the sign-in service could not be reached: try again",
                );
            }
        };
        let (principal, claims) = verified;
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
        let scope = match principal.role {
            Role::SuperAdmin => Scope::Full,
            Role::Member => Scope::Query,
        };
        let options = service.session_options();
        let (session, secret) = Session::mint(
            SessionKind::Browser,
            principal,
            scope,
            SignInMethod::Oidc,
            options.max_age,
        );
        let origin = Origin::of(Actor::named(session.principal.user.clone()));
        let event = AuditEvent::new(
            &origin,
            AuditAction::SessionCreate,
            session.id.as_str(),
            vec!["oidc".to_owned()],
        );
        if let Err(error) = service
            .storage()
            .create_session(session, None, event.into())
            .await
        {
            tracing::warn!(%error, "a browser session could not be stored");
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the sign-in could not be saved: try again",
            );
        }
        let mut cookies = Vec::new();
        if let Some(session_cookie) =
            options.set_cookie(secret.expose_str().unwrap_or_default(), options.max_age)
        {
            cookies.push(session_cookie);
        }
        if let Ok(clear) = HeaderValue::from_str(&format!(
            "{FLOW_COOKIE}=; Path={OIDC_PATH}; HttpOnly; SameSite=Lax; Max-Age=0"
        )) {
            cookies.push(clear);
        }
        redirect(&flow.return_to, &cookies)
    }

    /// The ID token the token endpoint answers for `code`.
    async fn exchange(
        &self,
        code: &str,
        verifier: &str,
        headers: &HeaderMap,
        secure: bool,
    ) -> Result<String, String> {
        let endpoints = self.endpoints().await?;
        let body = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", &self.callback_url(headers, secure))
                .append_pair("client_id", &self.client.client_id)
                .append_pair("code_verifier", verifier);
            if let Some(secret) = &self.client.client_secret {
                form.append_pair("client_secret", secret.expose_str().unwrap_or_default());
            }
            form.finish()
        };
        let request = Request::post(&endpoints.token)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| format!("the token endpoint's URL: {error}"))?;
        let call = async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|error| format!("the token endpoint: {error}"))?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|error| format!("the token endpoint: {error}"))?
                .to_bytes();
            if !status.is_success() {
                return Err(format!("the token endpoint answered {status}"));
            }
            let answer: Value = serde_json::from_slice(&bytes)
                .map_err(|_| "the token endpoint answered no JSON".to_owned())?;
            answer["id_token"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| "the token endpoint answered no id_token".to_owned())
        };
        tokio::time::timeout(ISSUER_TIMEOUT, call)
            .await
            .map_err(|_| "the token endpoint did not answer in time".to_owned())?
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
