//! OIDC bearer tokens: [`OidcAuthenticator`] accepts a JWT from the configured issuer as an
//! access token, and makes its subject a principal (docs/api.md, "Who may do what").
//!
//! A token is checked with `jsonwebtoken` against the issuer's JWKS: its signature (asymmetric
//! algorithms only, with the key its `kid` names), `iss`, `aud`, `exp` and `nbf` (30 s of
//! leeway). The key set is fetched from the issuer's discovery document (or the configured URL)
//! at the first token, kept, and fetched again when a token names a `kid` it lacks (the issuer
//! rotated its keys), at most once a minute. The user is a string claim (`email` by default),
//! the groups an array of strings (`groups`); a member of the super admin group is a super
//! admin; a token whose agent claim is `true` is an AI agent. Anything else (an API key, a
//! token that is not a JWT) goes to the stored credentials as before.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use dbconsole_core::StorageError;
use dbconsole_core::auth::{Authenticator, Caller};
use dbconsole_core::model::{CredentialKind, Principal, Role};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::Mutex;

/// How the server reads OIDC tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcOptions {
    /// The issuer (`iss`), whose discovery document names the key set.
    pub issuer: String,
    /// The audience a token must name (`aud`).
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

/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// Accepts the issuer's JWTs as access tokens; everything else goes to `inner`.
pub struct OidcAuthenticator {
    inner: Arc<dyn Authenticator>,
    options: OidcOptions,
    http: HttpsClient,
    keys: Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
    by_kid: HashMap<String, (DecodingKey, Option<Algorithm>)>,
}

impl fmt::Debug for OidcAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcAuthenticator")
            .field("inner", &self.inner)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Why a token's keys could not be had.
#[derive(Debug, thiserror::Error)]
#[error("the OIDC key set could not be fetched: {0}")]
pub(crate) struct FetchError(pub(crate) String);

impl OidcAuthenticator {
    /// The issuer's settings.
    pub fn options(&self) -> &OidcOptions {
        &self.options
    }

    /// Reads the issuer's tokens with `options`, and hands anything else to `inner`.
    pub fn new(inner: Arc<dyn Authenticator>, options: OidcOptions) -> std::io::Result<Self> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()?
            .https_or_http()
            .enable_http1()
            .build();
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Self {
            inner,
            options,
            http,
            keys: Mutex::new(Keys::default()),
        })
    }

    pub(crate) async fn get_json(&self, url: &str) -> Result<Value, FetchError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|error| FetchError(format!("{url}: {error}")))?;
        let fetch = async {
            let response = self
                .http
                .get(uri)
                .await
                .map_err(|error| FetchError(format!("{url}: {error}")))?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|error| FetchError(format!("{url}: {error}")))?
                .to_bytes();
            if !status.is_success() {
                return Err(FetchError(format!("{url} answered {status}")));
            }
            serde_json::from_slice(&body).map_err(|error| FetchError(format!("{url}: {error}")))
        };
        tokio::time::timeout(FETCH_TIMEOUT, fetch)
            .await
            .map_err(|_| FetchError(format!("{url} did not answer within {FETCH_TIMEOUT:?}")))?
    }

    async fn fetch_keys(&self) -> Result<JwkSet, FetchError> {
        let url = match &self.options.jwks_url {
            Some(url) => url.clone(),
            None => {
                let discovery = format!(
                    "{}/.well-known/openid-configuration",
                    self.options.issuer.trim_end_matches('/')
                );
                let document = self.get_json(&discovery).await?;
                document["jwks_uri"]
                    .as_str()
                    .ok_or_else(|| FetchError(format!("{discovery} names no jwks_uri")))?
                    .to_owned()
            }
        };
        let set = self.get_json(&url).await?;
        serde_json::from_value(set).map_err(|error| FetchError(format!("{url}: {error}")))
    }

    /// The key of `kid` (`None`: the set's only key), fetching the set when it lacks it.
    async fn key(
        &self,
        kid: Option<&str>,
    ) -> Result<Option<(DecodingKey, Option<Algorithm>)>, FetchError> {
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

    /// The principal of a valid token; `None` for one that is not valid.
    async fn verify(&self, token: &str) -> Result<Option<Principal>, FetchError> {
        let audience = self.options.audience.clone();
        Ok(self
            .verify_for(token, &audience)
            .await?
            .map(|(principal, _)| principal))
    }

    /// The principal and claims of a token of the issuer, signed by one of its keys, for
    /// `audience` (an ID token's is the client id); `None` for one that is not valid.
    pub(crate) async fn verify_for(
        &self,
        token: &str,
        audience: &str,
    ) -> Result<Option<(Principal, serde_json::Map<String, Value>)>, FetchError> {
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
        let Ok(data) =
            jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key, &validation)
        else {
            return Ok(None);
        };
        let claims = data.claims;
        let Some(user) = claims
            .get(&self.options.user_claim)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|user| !user.is_empty())
        else {
            return Ok(None);
        };
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
        match self.verify(presented).await {
            Ok(Some(principal)) => Ok(Some(Caller::vouched(principal))),
            Ok(None) => Ok(None),
            Err(error) => {
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
