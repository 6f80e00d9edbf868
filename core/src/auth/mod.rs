//! Authentication of callers: an API key (`x-api-key`) on database routes, an access token
//! (`Authorization: Bearer`) on dashboard routes, checked before anything else.

use std::collections::HashMap;
use std::fmt::{self, Debug};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use subtle::ConstantTimeEq;

use crate::model::{Actor, CredentialKind, KeyId, Principal, Scope, Secret, Timestamp};
pub use crate::model::{key_digest, mint_caller_key};
use crate::storage::Storage;

pub mod oidc;

/// A caller whose credential was accepted: what it may do, and who it is (for the audit trail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// What the credential allows.
    pub scope: Scope,
    /// Who presented it: a stored key's id and name, or a name for a static credential.
    pub actor: Actor,
    /// The person it acts for, when it is bound to one (only such a caller runs queries).
    pub principal: Option<Principal>,
}

impl Caller {
    /// A caller with full access, named `name` (not a stored key).
    pub fn full(name: impl Into<String>) -> Self {
        Self {
            scope: Scope::Full,
            actor: Actor::named(name),
            principal: None,
        }
    }

    /// The caller a principal is, when the embedding program vouches for it (docs/api.md, "Who may
    /// do what"): a super admin may call every route, a member only the query routes.
    pub fn vouched(principal: Principal) -> Self {
        let scope = match (principal.agent, principal.role) {
            (true, _) => Scope::Agent,
            (false, crate::model::Role::SuperAdmin) => Scope::Full,
            (false, crate::model::Role::Member) => Scope::Query,
        };
        Self {
            scope,
            actor: Actor::named(principal.user.clone()),
            principal: Some(principal),
        }
    }
}

/// Decides whether a presented credential is valid, with which scope, and whose it is.
#[async_trait]
pub trait Authenticator: Send + Sync + Debug + 'static {
    /// `Ok(Some(caller))` for a valid credential, `Ok(None)` for an unknown one, `Err` when the
    /// check itself failed (the caller gets a 500). Implementations compare in constant time.
    async fn authenticate(
        &self,
        kind: CredentialKind,
        presented: &str,
    ) -> Result<Option<Caller>, Box<dyn std::error::Error + Send + Sync>>;

    /// What [`Authenticator::authenticate`] would answer, when it can be told at once without
    /// waiting (a configured credential): `Some(answer)`, or `None` to ask `authenticate`. The
    /// service asks this first; the default never knows.
    fn authenticate_now(&self, _kind: CredentialKind, _presented: &str) -> Option<Option<Caller>> {
        None
    }
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

impl StaticCredentials {
    /// Accepts this API key (database routes) and this access token (dashboard routes), each
    /// when given and not empty.
    pub fn new(api_key: Option<&Secret>, access_token: Option<&Secret>) -> Self {
        let keep = |secret: Option<&Secret>| {
            secret
                .filter(|secret| !secret.is_empty())
                .map(|secret| key_digest(secret.expose()))
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

    /// The caller `presented` is as a credential of `kind`, if it is one of these (its digest
    /// is computed only when a credential of that kind is configured).
    fn check(&self, kind: CredentialKind, presented: &str) -> Option<Caller> {
        self.expected(kind)?;
        self.check_digest(kind, &key_digest(presented.as_bytes()))
    }

    /// [`StaticCredentials::check`] of a credential whose digest is `digest`.
    fn check_digest(&self, kind: CredentialKind, digest: &[u8; 32]) -> Option<Caller> {
        let (expected, name) = self.expected(kind)?;
        let matches: bool = digest.ct_eq(&expected).into();
        matches.then(|| Caller::full(name))
    }

    /// The configured digest of `kind`, and the name of its caller.
    fn expected(&self, kind: CredentialKind) -> Option<([u8; 32], &'static str)> {
        match kind {
            CredentialKind::ApiKey => self.api_key.map(|digest| (digest, STATIC_API_KEY)),
            CredentialKind::AccessToken => self
                .access_token
                .map(|digest| (digest, STATIC_ACCESS_TOKEN)),
        }
    }
}

#[async_trait]
impl Authenticator for StaticCredentials {
    async fn authenticate(
        &self,
        kind: CredentialKind,
        presented: &str,
    ) -> Result<Option<Caller>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.check(kind, presented))
    }

    fn authenticate_now(&self, kind: CredentialKind, presented: &str) -> Option<Option<Caller>> {
        Some(self.check(kind, presented))
    }
}

/// The actor name of the static API key in the audit trail.
pub const STATIC_API_KEY: &str = "static API key";
/// The actor name of the static access token in the audit trail.
pub const STATIC_ACCESS_TOKEN: &str = "static access token";

/// How often a stored key's `last_used_at` is written at most (a write per request would make
/// every request a durable write).
pub const LAST_USED_RESOLUTION: Duration = Duration::from_secs(60);

/// Callers' credentials kept in the [`Storage`] (as digests), plus optional static ones. A
/// stored key is looked up by the SHA-256 of what was presented, every request, so a revoked
/// key fails from the next request on, whichever process revoked it.
pub struct StoredCredentials {
    storage: Arc<dyn Storage>,
    fixed: StaticCredentials,
    touched: Mutex<HashMap<KeyId, Instant>>,
}

impl Debug for StoredCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredCredentials")
            .field("storage", &self.storage)
            .field("fixed", &self.fixed)
            .finish_non_exhaustive()
    }
}

impl StoredCredentials {
    /// Accepts the keys stored in `storage` and the static `fixed` ones.
    pub fn new(storage: Arc<dyn Storage>, fixed: StaticCredentials) -> Self {
        Self {
            storage,
            fixed,
            touched: Mutex::new(HashMap::new()),
        }
    }

    /// Writes `last_used_at` of a key in the background: the request that used the key never
    /// waits for that write. Outside a Tokio runtime the write is skipped.
    fn record_use(&self, id: KeyId) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let storage = Arc::clone(&self.storage);
        let at = Timestamp::now();
        runtime.spawn(async move {
            match storage.touch_caller_key(id.as_str(), at).await {
                Ok(()) | Err(crate::storage::StorageError::NotFound) => {}
                Err(error) => tracing::warn!(%error, "could not record the use of a key"),
            }
        });
    }

    /// Whether `last_used_at` of this key is due for a write.
    fn due(&self, id: &KeyId) -> bool {
        let now = Instant::now();
        let mut touched = self.touched.lock().unwrap_or_else(|p| p.into_inner());
        match touched.get(id) {
            Some(at) if now.duration_since(*at) < LAST_USED_RESOLUTION => false,
            _ => {
                touched.insert(id.clone(), now);
                true
            }
        }
    }
}

#[async_trait]
impl Authenticator for StoredCredentials {
    async fn authenticate(
        &self,
        kind: CredentialKind,
        presented: &str,
    ) -> Result<Option<Caller>, Box<dyn std::error::Error + Send + Sync>> {
        // One digest for both: the configured credentials' check and the stored keys' lookup.
        let digest = key_digest(presented.as_bytes());
        if let Some(caller) = self.fixed.check_digest(kind, &digest) {
            return Ok(Some(caller));
        }
        let Some(key) = self.storage.caller_key_by_digest(&digest).await? else {
            return Ok(None);
        };
        if key.kind != kind {
            return Ok(None);
        }
        let caller = Caller {
            scope: key.scope,
            actor: Actor {
                id: Some(key.id.as_str().to_owned()),
                name: key.name,
            },
            principal: key.principal,
        };
        if self.due(&key.id) {
            self.record_use(key.id);
        }
        Ok(Some(caller))
    }

    fn authenticate_now(&self, kind: CredentialKind, presented: &str) -> Option<Option<Caller>> {
        // A configured credential is known at once; any other needs the storage.
        self.fixed.check(kind, presented).map(Some)
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
            Some(Caller::full(STATIC_API_KEY))
        );
        assert_eq!(check(CredentialKind::ApiKey, "tok").await, None);
        assert_eq!(
            check(CredentialKind::AccessToken, "tok").await,
            Some(Caller::full(STATIC_ACCESS_TOKEN))
        );
        assert_eq!(check(CredentialKind::AccessToken, "").await, None);
        // Known at once, and the same answer.
        for (kind, value) in [
            (CredentialKind::ApiKey, "key"),
            (CredentialKind::ApiKey, "tok"),
            (CredentialKind::AccessToken, "tok"),
            (CredentialKind::AccessToken, ""),
        ] {
            assert_eq!(
                auth.authenticate_now(kind, value),
                Some(check(kind, value).await)
            );
        }
        assert_eq!(
            format!("{auth:?}"),
            r#"StaticCredentials { api_key: Some("[REDACTED]"), access_token: Some("[REDACTED]") }"#
        );
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
