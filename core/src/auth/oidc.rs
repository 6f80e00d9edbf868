//! The OIDC issuer: [`OidcAuthenticator`] accepts its JWTs as access tokens and makes their
//! subject a principal (docs/api.md, "Who may do what"); [`OidcLogin`] is the client a browser
//! signs in as through the authorization code flow (the `oidc` route family). One verifier
//! checks both the bearer JWTs and the ID tokens, so each claim rule is written once.
//!
//! A token is checked with `jsonwebtoken` against the issuer's JWKS: its signature (asymmetric
//! algorithms only, with the key its `kid` names), `iss`, `aud`, `exp` and `nbf` (30 s of
//! leeway). The key set is fetched from the issuer's discovery document (or the configured URL)
//! at the first token, kept, and fetched again when a token names a `kid` it lacks (the issuer
//! rotated its keys), at most once a minute. The user is a string claim (`email` by default),
//! the groups an array of strings (`groups`); a member of the super admin group is a super
//! admin; a token whose agent claim is `true` is an AI agent. Anything else (an API key, a
//! token that is not a JWT) goes to the inner authenticator.
//!
//! Everything said to the issuer goes through an [`IssuerClient`] (the server's speaks HTTPS and
//! follows no redirect): the core holds no HTTP client, and tests put a stand-in issuer behind
//! it. Nothing is asked of the issuer before the first token or sign-in, so a service starts
//! and answers every other route while the issuer is unreachable; the OIDC routes and bearer
//! JWTs then answer 503.

use std::collections::HashMap;
use std::fmt::{self, Debug};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use tokio::sync::{Mutex, OnceCell};

use super::{Authenticator, Caller};
use crate::model::{CredentialKind, Principal, Role, Secret};
use crate::storage::StorageError;

/// How long one call to the issuer may take.
pub const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);

/// An issuer's answer to one request: its status and body.
#[derive(Clone, Debug)]
pub struct IssuerAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Bytes,
}

/// Why the issuer could not be asked (not reached, cut off): what the log says, never a secret.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct IssuerError(pub String);

/// How the service talks to the issuer: a `GET` (the discovery document, the key set) and a
/// form `POST` (the token endpoint). An implementation follows no redirect and logs no body.
#[async_trait]
pub trait IssuerClient: Send + Sync + Debug + 'static {
    /// `GET url`, asking for JSON.
    async fn get(&self, url: &str) -> Result<IssuerAnswer, IssuerError>;

    /// `POST url` with `form` as `application/x-www-form-urlencoded`, asking for JSON.
    async fn post_form(&self, url: &str, form: String) -> Result<IssuerAnswer, IssuerError>;
}

/// How the service reads the issuer's tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcOptions {
    /// The issuer (`iss`), whose discovery document names the key set.
    pub issuer: String,
    /// The audience a bearer token must name (`aud`).
    pub audience: String,
    /// The key set's URL, instead of the discovery document's `jwks_uri`.
    pub jwks_url: Option<String>,
    /// The claim that names the user.
    pub user_claim: String,
    /// The claim that lists the user's groups.
    pub groups_claim: String,
    /// Members of this group are super admins.
    pub super_admin_group: Option<String>,
    /// A token whose claim of this name is `true` is an AI agent's.
    pub agent_claim: Option<String>,
    /// How often the key set is fetched again at most (for tokens naming a `kid` it lacks):
    /// [`OidcOptions::REFRESH_AT_MOST_EVERY`] unless a test needs less.
    pub min_refresh: Duration,
}

impl OidcOptions {
    /// How often the key set is fetched again at most, by default.
    pub const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(60);
}

/// Accepts the issuer's JWTs as access tokens; everything else goes to `inner`.
pub struct OidcAuthenticator {
    inner: Arc<dyn Authenticator>,
    options: OidcOptions,
    client: Arc<dyn IssuerClient>,
    keys: Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
    by_kid: HashMap<String, (DecodingKey, Option<Algorithm>)>,
}

impl Debug for OidcAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcAuthenticator")
            .field("inner", &self.inner)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl OidcAuthenticator {
    /// Reads the issuer's tokens with `options`, asking it through `client`, and hands
    /// anything else to `inner`. Asks the issuer nothing yet.
    pub fn new(
        inner: Arc<dyn Authenticator>,
        options: OidcOptions,
        client: Arc<dyn IssuerClient>,
    ) -> Self {
        Self {
            inner,
            options,
            client,
            keys: Mutex::new(Keys::default()),
        }
    }

    /// The issuer's settings.
    pub fn options(&self) -> &OidcOptions {
        &self.options
    }

    /// The JSON document at `url`, within [`ISSUER_TIMEOUT`].
    async fn get_json(&self, url: &str) -> Result<Value, IssuerError> {
        let answer = tokio::time::timeout(ISSUER_TIMEOUT, self.client.get(url))
            .await
            .map_err(|_| IssuerError(format!("{url} did not answer within {ISSUER_TIMEOUT:?}")))?
            .map_err(|error| IssuerError(format!("{url}: {error}")))?;
        if !(200..300).contains(&answer.status) {
            return Err(IssuerError(format!("{url} answered {}", answer.status)));
        }
        serde_json::from_slice(&answer.body).map_err(|error| IssuerError(format!("{url}: {error}")))
    }

    /// The issuer's discovery document.
    async fn discovery(&self) -> Result<(String, Value), IssuerError> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.options.issuer.trim_end_matches('/')
        );
        let document = self.get_json(&url).await?;
        Ok((url, document))
    }

    async fn fetch_keys(&self) -> Result<JwkSet, IssuerError> {
        let url = match &self.options.jwks_url {
            Some(url) => url.clone(),
            None => {
                let (discovery, document) = self.discovery().await?;
                document["jwks_uri"]
                    .as_str()
                    .ok_or_else(|| IssuerError(format!("{discovery} names no jwks_uri")))?
                    .to_owned()
            }
        };
        let set = self.get_json(&url).await?;
        serde_json::from_value(set).map_err(|error| IssuerError(format!("{url}: {error}")))
    }

    /// The key of `kid` (`None`: the set's only key), fetching the set when it lacks it.
    async fn key(
        &self,
        kid: Option<&str>,
    ) -> Result<Option<(DecodingKey, Option<Algorithm>)>, IssuerError> {
        let mut keys = self.keys.lock().await;
        let wanted = kid.unwrap_or("");
        if let Some(found) = keys.by_kid.get(wanted) {
            return Ok(Some(found.clone()));
        }
        let due = keys
            .fetched
            .is_none_or(|at| at.elapsed() >= self.options.min_refresh);
        if due {
            match self.fetch_keys().await {
                Ok(set) => {
                    keys.by_kid.clear();
                    for jwk in &set.keys {
                        let Ok(key) = DecodingKey::from_jwk(jwk) else {
                            continue;
                        };
                        let algorithm = jwk
                            .common
                            .key_algorithm
                            .and_then(|a| a.to_string().parse::<Algorithm>().ok());
                        let id = jwk.common.key_id.clone().unwrap_or_default();
                        keys.by_kid.insert(id, (key, algorithm));
                    }
                    if set.keys.len() == 1
                        && let Some(only) = keys.by_kid.values().next().cloned()
                    {
                        keys.by_kid.entry(String::new()).or_insert(only);
                    }
                    keys.set = Some(set);
                    keys.fetched = Some(Instant::now());
                }
                // No key set at all yet: the token can't be checked now.
                Err(error) if keys.set.is_none() => return Err(error),
                Err(error) => {
                    tracing::warn!(%error, "kept the previous OIDC key set");
                    keys.fetched = Some(Instant::now());
                }
            }
        }
        Ok(keys.by_kid.get(wanted).cloned())
    }

    /// The principal and claims of a token of the issuer, signed by one of its keys, for
    /// `audience` (a bearer token's is the configured audience, an ID token's the client id);
    /// `None` for one that is not valid.
    pub async fn verify_for(
        &self,
        token: &str,
        audience: &str,
        id_token: bool,
    ) -> Result<Option<(Principal, Map<String, Value>)>, IssuerError> {
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return Ok(None);
        };
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Ok(None);
        }
        let Some((key, algorithm)) = self.key(header.kid.as_deref()).await? else {
            return Ok(None);
        };
        if algorithm.is_some_and(|a| a != header.alg) {
            return Ok(None);
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.options.issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = 30;
        let Ok(data) = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation) else {
            return Ok(None);
        };
        let claims = data.claims;
        // An ID token for several clients is ours only when it says so; an access token's `azp`
        // names the client that asked for it, not the API.
        if id_token && !authorized_party_holds(&claims, audience) {
            return Ok(None);
        }
        let Some(user) = claims
            .get(&self.options.user_claim)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|user| !user.is_empty())
        else {
            return Ok(None);
        };
        // An address the issuer has not verified names nobody: anyone may type one.
        if self.options.user_claim == "email"
            && claims.get("email_verified") != Some(&Value::Bool(true))
        {
            return Ok(None);
        }
        let groups: Vec<String> = claims
            .get(&self.options.groups_claim)
            .and_then(Value::as_array)
            .map(|groups| {
                groups
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let role = match &self.options.super_admin_group {
            Some(group) if groups.contains(group) => Role::SuperAdmin,
            _ => Role::Member,
        };
        let agent = self
            .options
            .agent_claim
            .as_ref()
            .is_some_and(|claim| claims.get(claim) == Some(&Value::Bool(true)));
        let principal = Principal::member(user)
            .groups(groups)
            .role(role)
            .agent(agent);
        Ok(Some((principal, claims)))
    }
}

/// Whether a token for several audiences names `audience` as its authorized party (`azp`, which
/// OpenID Connect requires then): one for several clients is ours only when it says so.
fn authorized_party_holds(claims: &Map<String, Value>, audience: &str) -> bool {
    match claims.get("aud") {
        Some(Value::Array(audiences)) if audiences.len() > 1 => {
            claims.get("azp").and_then(Value::as_str) == Some(audience)
        }
        _ => true,
    }
}

/// Whether a presented token has a JWT's shape (three base64url parts).
fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.starts_with("ey")
}

#[async_trait]
impl Authenticator for OidcAuthenticator {
    async fn authenticate(
        &self,
        kind: CredentialKind,
        presented: &str,
    ) -> Result<Option<Caller>, Box<dyn std::error::Error + Send + Sync>> {
        if kind != CredentialKind::AccessToken || !looks_like_jwt(presented) {
            return self.inner.authenticate(kind, presented).await;
        }
        let audience = self.options.audience.clone();
        match self.verify_for(presented, &audience, false).await {
            Ok(Some((principal, _))) => Ok(Some(Caller::vouched(principal))),
            Ok(None) => Ok(None),
            Err(error) => {
                let error = IssuerError(format!("the OIDC key set could not be fetched: {error}"));
                tracing::warn!(%error, "an OIDC token could not be checked");
                Err(Box::new(StorageError::unavailable(error)))
            }
        }
    }

    fn authenticate_now(&self, kind: CredentialKind, presented: &str) -> Option<Option<Caller>> {
        // A token is checked against the issuer's keys; anything else is the inner one's.
        if kind == CredentialKind::AccessToken && looks_like_jwt(presented) {
            return None;
        }
        self.inner.authenticate_now(kind, presented)
    }
}

/// The client a browser signs in as (docs/console.md, "Signing in").
#[derive(Clone)]
pub struct OidcClient {
    /// The client id registered at the issuer (the ID token's audience).
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The scopes asked for, besides `openid`.
    pub scopes: String,
}

impl Debug for OidcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

/// The issuer's endpoints of the code flow, from its discovery document.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// Where the browser is sent to sign in.
    pub authorization: String,
    /// Where the code is exchanged for tokens.
    pub token: String,
}

/// The browser sign-in through the issuer: the client, the verifier of its ID tokens (the
/// bearer tokens' own), and where the issuer sends the browser back.
#[derive(Debug)]
pub struct OidcLogin {
    verifier: Arc<OidcAuthenticator>,
    client: OidcClient,
    public_url: Option<String>,
    endpoints: OnceCell<Endpoints>,
}

impl OidcLogin {
    /// The flow for `client`, checking ID tokens with `verifier`; redirects come back to
    /// `public_url` (else the request's `Host`).
    pub fn new(
        verifier: Arc<OidcAuthenticator>,
        client: OidcClient,
        public_url: Option<String>,
    ) -> Self {
        Self {
            verifier,
            client,
            public_url,
            endpoints: OnceCell::new(),
        }
    }

    /// The client.
    pub fn client(&self) -> &OidcClient {
        &self.client
    }

    /// The public URL redirects come back to, when set.
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// The issuer's endpoints, read from its discovery document once.
    pub async fn endpoints(&self) -> Result<Endpoints, IssuerError> {
        self.endpoints
            .get_or_try_init(|| async {
                let (url, document) = self.verifier.discovery().await?;
                let field = |name: &str| {
                    document[name]
                        .as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| IssuerError(format!("{url} names no {name}")))
                };
                Ok(Endpoints {
                    authorization: field("authorization_endpoint")?,
                    token: field("token_endpoint")?,
                })
            })
            .await
            .cloned()
    }

    /// The ID token the token endpoint answers for `code`, sent with the PKCE `verifier` and
    /// the `redirect_uri` the flow started with.
    pub async fn exchange(
        &self,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, IssuerError> {
        let endpoints = self.endpoints().await?;
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("client_id", &self.client.client_id)
                .append_pair("code_verifier", verifier);
            if let Some(secret) = &self.client.client_secret {
                form.append_pair("client_secret", secret.expose_str().unwrap_or_default());
            }
            form.finish()
        };
        let answer = tokio::time::timeout(
            ISSUER_TIMEOUT,
            self.verifier.client.post_form(&endpoints.token, form),
        )
        .await
        .map_err(|_| IssuerError("the token endpoint did not answer in time".to_owned()))?
        .map_err(|error| IssuerError(format!("the token endpoint: {error}")))?;
        if !(200..300).contains(&answer.status) {
            return Err(IssuerError(format!(
                "the token endpoint answered {}",
                answer.status
            )));
        }
        let answer: Value = serde_json::from_slice(&answer.body)
            .map_err(|_| IssuerError("the token endpoint answered no JSON".to_owned()))?;
        answer["id_token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| IssuerError("the token endpoint answered no id_token".to_owned()))
    }

    /// The principal and claims of a valid ID token of this client; `None` for one that is not.
    pub async fn verify_id_token(
        &self,
        token: &str,
    ) -> Result<Option<(Principal, Map<String, Value>)>, IssuerError> {
        self.verifier
            .verify_for(token, &self.client.client_id, true)
            .await
    }
}
