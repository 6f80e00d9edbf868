//! Callers of the API: the kinds of credential they present, what a credential allows, and
//! the stored ones ([`CallerKey`]), kept as digests only.

use std::fmt;

use base64::Engine as _;
use rand::RngCore as _;
use sha2::{Digest, Sha256};

use super::{KeyId, Principal, Secret, Timestamp};

/// Which kind of caller credential was presented (and which kind a stored one is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CredentialKind {
    /// An API key, from `x-api-key`; database routes and the `/api/v1/dashboards` routes.
    ApiKey,
    /// An access token, from `Authorization: Bearer`; dashboard routes.
    AccessToken,
}

wire_enum!(CredentialKind, [ApiKey => "api-key", AccessToken => "access-token"]);

/// What an authenticated caller may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every operation.
    Full,
    /// Only setup (`PUT …/databases/setup`) and remove by api_id
    /// (`DELETE …/databases/remove/{api_id}`).
    Setup,
    /// Only running queries (the query routes, and panel runs for an access token), as the
    /// user the key is bound to.
    Query,
    /// Only running queries, as an AI agent acting for the user the key is bound to (the AI
    /// limits of databases and credentials apply).
    Agent,
}

wire_enum!(Scope, [Full => "full", Setup => "setup", Query => "query", Agent => "ai-agent"]);

/// A stored caller credential: an API key or an access token, kept as a SHA-256 digest only.
#[derive(Clone, PartialEq, Eq)]
pub struct CallerKey {
    /// Assigned at creation (`key_…`); what `keys revoke` takes.
    pub id: KeyId,
    /// A name for people (what the key is for).
    pub name: String,
    /// API key (database routes) or access token (dashboard routes).
    pub kind: CredentialKind,
    /// What it allows.
    pub scope: Scope,
    /// SHA-256 of the secret. The secret itself is shown once at creation and never stored.
    pub digest: [u8; 32],
    /// Creation time.
    pub created_at: Timestamp,
    /// Last time it authenticated a request (recorded at most about once a minute).
    pub last_used_at: Option<Timestamp>,
    /// The user the key acts for (with its groups and role), when it is bound to one: only
    /// such a key runs queries. Its `agent` flag is the `ai-agent` scope's.
    pub principal: Option<Principal>,
}

impl fmt::Debug for CallerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallerKey")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("scope", &self.scope)
            .field("digest", &"[REDACTED]")
            .field("created_at", &self.created_at)
            .field("last_used_at", &self.last_used_at)
            .field("principal", &self.principal)
            .finish()
    }
}

/// SHA-256 of a presented or minted secret: what a [`CallerKey`] stores.
pub fn key_digest(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// Mints a new caller credential: the record to store (digest only) and the secret to show
/// once. The secret is `dbc_<ak|at>_` and 32 random bytes in base64url, so it can be recognised
/// in a leak scan.
pub fn mint_caller_key(kind: CredentialKind, scope: Scope, name: &str) -> (CallerKey, Secret) {
    let mut random = zeroize::Zeroizing::new([0u8; 32]);
    rand::rng().fill_bytes(random.as_mut());
    let prefix = match kind {
        CredentialKind::ApiKey => "dbc_ak_",
        CredentialKind::AccessToken => "dbc_at_",
    };
    let secret = Secret::from(format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random.as_ref())
    ));
    let key = CallerKey {
        id: KeyId::generate(),
        name: name.to_owned(),
        kind,
        scope,
        digest: key_digest(secret.expose()),
        created_at: Timestamp::now(),
        last_used_at: None,
        principal: None,
    };
    (key, secret)
}
