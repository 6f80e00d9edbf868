//! Authentication of callers: an API key (`x-api-key`) on database routes, an access token
//! (`Authorization: Bearer`) on dashboard routes, checked before anything else.

use std::fmt::Debug;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::model::Secret;

/// Which kind of caller credential was presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CredentialKind {
    /// An API key, from `x-api-key`; database routes and the `/api/v1/dashboards` routes.
    ApiKey,
    /// An access token, from `Authorization: Bearer`; dashboard routes.
    AccessToken,
}

/// What an authenticated caller may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every operation.
    Full,
    /// Only setup (`PUT …/databases/setup`) and remove by api_id
    /// (`DELETE …/databases/remove/{api_id}`).
    Setup,
}

/// Decides whether a presented credential is valid, and with which scope.
#[async_trait]
pub trait Authenticator: Send + Sync + Debug + 'static {
    /// `Ok(Some(scope))` for a valid credential, `Ok(None)` for an unknown one, `Err` when the
    /// check itself failed (the caller gets a 500). Implementations compare in constant time.
    async fn authenticate(
        &self,
        kind: CredentialKind,
        presented: &str,
    ) -> Result<Option<Scope>, Box<dyn std::error::Error + Send + Sync>>;
}

/// Static full-access credentials, for example from the environment. Only SHA-256 digests are
/// kept; a presented credential is hashed and compared in constant time.
#[derive(Clone, Default)]
pub struct StaticCredentials {
    api_key: Option<[u8; 32]>,
    access_token: Option<[u8; 32]>,
}

impl Debug for StaticCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticCredentials")
            .field("api_key", &self.api_key.map(|_| "[REDACTED]"))
            .field("access_token", &self.access_token.map(|_| "[REDACTED]"))
            .finish()
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl StaticCredentials {
    /// Accepts this API key (database routes) and this access token (dashboard routes), each
    /// when given and not empty.
    pub fn new(api_key: Option<&Secret>, access_token: Option<&Secret>) -> Self {
        let keep = |secret: Option<&Secret>| {
            secret
                .filter(|secret| !secret.is_empty())
                .map(|secret| digest(secret.expose()))
        };
        Self {
            api_key: keep(api_key),
            access_token: keep(access_token),
        }
    }

    /// Whether any credential is configured at all.
    pub fn is_empty(&self) -> bool {
        self.api_key.is_none() && self.access_token.is_none()
    }
}

#[async_trait]
impl Authenticator for StaticCredentials {
    async fn authenticate(
        &self,
        kind: CredentialKind,
        presented: &str,
    ) -> Result<Option<Scope>, Box<dyn std::error::Error + Send + Sync>> {
        let expected = match kind {
            CredentialKind::ApiKey => self.api_key,
            CredentialKind::AccessToken => self.access_token,
        };
        let Some(expected) = expected else {
            return Ok(None);
        };
        let matches: bool = digest(presented.as_bytes()).ct_eq(&expected).into();
        Ok(matches.then_some(Scope::Full))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn static_credentials_check_kind_and_value() {
        let auth = StaticCredentials::new(Some(&Secret::from("key")), Some(&Secret::from("tok")));
        let check = |kind, value: &'static str| {
            let auth = auth.clone();
            async move { auth.authenticate(kind, value).await.unwrap() }
        };
        assert_eq!(
            check(CredentialKind::ApiKey, "key").await,
            Some(Scope::Full)
        );
        assert_eq!(check(CredentialKind::ApiKey, "tok").await, None);
        assert_eq!(
            check(CredentialKind::AccessToken, "tok").await,
            Some(Scope::Full)
        );
        assert_eq!(check(CredentialKind::AccessToken, "").await, None);
        assert!(!format!("{auth:?}").contains("key\""));
    }

    #[tokio::test]
    async fn empty_configuration_accepts_nothing() {
        let auth = StaticCredentials::new(Some(&Secret::from("")), None);
        assert!(auth.is_empty());
        assert_eq!(
            auth.authenticate(CredentialKind::ApiKey, "").await.unwrap(),
            None
        );
    }
}
