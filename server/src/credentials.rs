//! The callers' credentials: static full-access ones from the environment, and the stored keys
//! (see [`crate::admin::operations`]); when neither exists, [`bootstrap`] creates one API key and one access
//! token at start, stores them (digests only) and hands their secrets over to be printed once.

use dbconsole_core::storage::Edits as _;
use std::io::{self, Write};

use dbconsole_core::auth::mint_caller_key;
use dbconsole_core::model::{Actor, CallerKey, Origin};
use dbconsole_core::{CredentialKind, Scope, Secret, StaticCredentials, Storage, StorageError};

/// The environment variable holding the API key of the database routes (`x-api-key`).
pub const API_KEY_VAR: &str = "DBCONSOLE_API_KEY";

/// The environment variable holding the access token of the dashboard routes
/// (`Authorization: Bearer`).
pub const ACCESS_TOKEN_VAR: &str = "DBCONSOLE_ACCESS_TOKEN";

/// The name [`bootstrap`] gives the keys it creates.
pub const BOOTSTRAP_NAME: &str = "created at first start";

/// The static credentials configured in the environment. `Debug` shows no secret.
#[derive(Debug, Default)]
pub struct EnvCredentials {
    api_key: Option<Secret>,
    access_token: Option<Secret>,
}

impl EnvCredentials {
    /// Reads [`API_KEY_VAR`] and [`ACCESS_TOKEN_VAR`]; see [`EnvCredentials::new`].
    pub fn from_env() -> Self {
        Self::new(read_var(API_KEY_VAR), read_var(ACCESS_TOKEN_VAR))
    }

    /// These credentials, each when given and not blank (surrounding whitespace is dropped, as
    /// a trailing newline from a secret file would be).
    pub fn new(api_key: Option<Secret>, access_token: Option<Secret>) -> Self {
        let keep = |secret: Option<Secret>| secret.map(trimmed).filter(|s| !s.is_empty());
        Self {
            api_key: keep(api_key),
            access_token: keep(access_token),
        }
    }

    /// Whether neither is configured.
    pub fn is_empty(&self) -> bool {
        self.api_key.is_none() && self.access_token.is_none()
    }

    /// Whether a static API key is configured.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// Whether a static access token is configured.
    pub fn has_access_token(&self) -> bool {
        self.access_token.is_some()
    }

    /// The static credentials, for [`dbconsole_core::auth::StoredCredentials::new`].
    pub fn static_credentials(&self) -> StaticCredentials {
        StaticCredentials::new(self.api_key.as_ref(), self.access_token.as_ref())
    }
}

/// The keys [`bootstrap`] created, with their secrets: print them once and drop them. `Debug`
/// shows no secret.
#[derive(Debug)]
pub struct Bootstrapped {
    keys: Vec<(CallerKey, Secret)>,
}

impl Bootstrapped {
    /// The created keys (digests only).
    pub fn keys(&self) -> impl Iterator<Item = &CallerKey> {
        self.keys.iter().map(|(key, _)| key)
    }

    /// Writes the secrets, labelled, to `out` (the server's standard output, once at start).
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "No {API_KEY_VAR} or {ACCESS_TOKEN_VAR} is set and no key is stored: created an API \
             key and an access token (scope full). Only their SHA-256 digests are stored; the \
             secrets are shown this once:"
        )?;
        for (key, secret) in &self.keys {
            writeln!(
                out,
                "  {:<13} {}  {}",
                key.kind.as_str(),
                key.id,
                secret.expose_str().unwrap_or("")
            )?;
        }
        writeln!(
            out,
            "Send the API key as `x-api-key`, the access token as `Authorization: Bearer`. \
             Manage keys with `dbconsole keys create|list|revoke`."
        )?;
        out.flush()
    }
}

/// The actor name of the keys the first start creates, in the audit trail.
pub const BOOTSTRAP_ACTOR: &str = "dbconsole serve (first start)";

/// When no static credential is configured and `storage` holds no key at all, creates one
/// full-scope API key and one full-scope access token, stores them, and returns them with their
/// secrets; otherwise `None`. Call it once at start, before requests are served.
pub async fn bootstrap(
    storage: &dyn Storage,
    env: &EnvCredentials,
) -> Result<Option<Bootstrapped>, StorageError> {
    if !env.is_empty() || !storage.list_caller_keys().await?.is_empty() {
        return Ok(None);
    }
    let mut keys = Vec::new();
    for kind in [CredentialKind::ApiKey, CredentialKind::AccessToken] {
        let (key, secret) = mint_caller_key(kind, Scope::Full, BOOTSTRAP_NAME);
        let origin = Origin::of(Actor::named(BOOTSTRAP_ACTOR));
        storage.insert_caller_key(key.clone(), &origin).await?;
        keys.push((key, secret));
    }
    Ok(Some(Bootstrapped { keys }))
}

fn read_var(name: &str) -> Option<Secret> {
    std::env::var_os(name).map(|value| Secret::new(value.into_encoded_bytes()))
}

fn trimmed(secret: Secret) -> Secret {
    let bytes = secret.expose().trim_ascii();
    if bytes.len() == secret.expose().len() {
        secret
    } else {
        Secret::new(bytes)
    }
}

/// The user the first start's sign-in link signs in: a super admin.
pub const INITIAL_ADMIN: &str = "admin";

/// Whether `storage` is a new store: it holds no database, dashboard, key, session or link,
/// and its audit trail no event (every write leaves one, and a sign-in link's creation is
/// one). Asked at start, before anything is created: only a new store's first start prints a
/// sign-in link ([`initial_sign_in_link`]).
pub async fn is_new_store(storage: &dyn Storage) -> Result<bool, StorageError> {
    let counts = storage.record_counts().await?;
    if counts.databases + counts.dashboards + counts.caller_keys > 0 {
        return Ok(false);
    }
    if !storage.list_sessions().await?.is_empty() {
        return Ok(false);
    }
    let events = storage
        .list_audit(dbconsole_core::storage::AuditQuery {
            resource: None,
            after: None,
            limit: 1,
            ..Default::default()
        })
        .await?;
    Ok(events.is_empty())
}

/// At the first start of a new store ([`is_new_store`], asked before the start created
/// anything), stores a one-time sign-in link for [`INITIAL_ADMIN`], a super admin, and returns
/// its token to print once; otherwise `None`. Never at a later start, whatever has ended since:
/// then `dbconsole sessions link` on the host makes one.
pub async fn initial_sign_in_link(
    storage: &dyn Storage,
    new_store: bool,
) -> Result<Option<Secret>, StorageError> {
    use dbconsole_core::model::{
        AuditAction, AuditEvent, Principal, Role, Session, SessionKind, SignInMethod,
    };
    if !new_store {
        return Ok(None);
    }
    let principal = Principal::member(INITIAL_ADMIN).role(Role::SuperAdmin);
    let (link, token) = Session::mint(
        SessionKind::SignInLink,
        principal,
        Scope::Full,
        SignInMethod::Link,
        dbconsole_core::service::browser::LINK_LIFETIME,
    );
    let origin = Origin::of(Actor::named(BOOTSTRAP_ACTOR));
    let event = AuditEvent::new(
        &origin,
        AuditAction::SessionCreate,
        link.id.as_str(),
        vec!["sign-in-link".to_owned()],
    );
    storage.create_session(link, None, event.into()).await?;
    Ok(Some(token))
}

/// The setting under which a server records its public URL at start: `dbconsole sessions
/// link` and `invite` print links to it.
pub const PUBLIC_URL_SETTING: &str = dbconsole_core::service::users::PUBLIC_URL_SETTING;

/// The console's URL when no `--public-url` is given and the server listens on a loopback
/// address: `localhost` and the port (a browser accepts a passkey for `localhost`, never for an
/// IP address); `None` for any other address (no one knows the name people reach it by).
pub fn loopback_url(address: std::net::SocketAddr, tls: bool) -> Option<String> {
    let scheme = if tls { "https" } else { "http" };
    address
        .ip()
        .is_loopback()
        .then(|| format!("{scheme}://localhost:{}", address.port()))
}

/// The sign-in link to print: the console's URL with the token in the fragment (which no
/// browser sends to a server, logs or `Referer`).
pub fn sign_in_url(base: &str, token: &Secret) -> String {
    format!(
        "{}/console/#sign-in={}",
        base.trim_end_matches('/'),
        token.expose_str().unwrap_or_default()
    )
}

/// The invitation link to print: the console's URL with the token in the fragment.
pub fn invitation_url(base: &str, token: &Secret) -> String {
    format!(
        "{}/console/#invite={}",
        base.trim_end_matches('/'),
        token.expose_str().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dbconsole_core::Authenticator;
    use dbconsole_core::auth::StoredCredentials;
    use dbconsole_storage_memory::MemoryStorage;

    use super::*;

    fn printed(created: &Bootstrapped) -> String {
        let mut out = Vec::new();
        created.write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The secret printed for `kind`: the last word of its line.
    fn secret_of(out: &str, kind: CredentialKind) -> String {
        out.lines()
            .find(|line| {
                line.trim_start()
                    .starts_with(&format!("{} ", kind.as_str()))
            })
            .and_then(|line| line.split_whitespace().last())
            .unwrap_or_else(|| panic!("no {kind:?} in {out}"))
            .to_owned()
    }

    #[tokio::test]
    async fn configured_credentials_are_used_and_never_shown() {
        let env = EnvCredentials::new(
            Some(Secret::from("configured-key\n")),
            Some(Secret::from("configured-token")),
        );
        let auth = env.static_credentials();
        for (kind, presented) in [
            (CredentialKind::ApiKey, "configured-key"),
            (CredentialKind::AccessToken, "configured-token"),
        ] {
            assert_eq!(
                auth.authenticate(kind, presented)
                    .await
                    .unwrap()
                    .map(|caller| caller.scope),
                Some(Scope::Full)
            );
        }
        let debug = format!("{env:?}");
        assert!(!debug.contains("configured-"), "{debug}");
        let storage = MemoryStorage::new();
        assert!(bootstrap(&storage, &env).await.unwrap().is_none());
        assert!(storage.list_caller_keys().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn one_configured_credential_creates_nothing() {
        let env = EnvCredentials::new(None, Some(Secret::from("only-token")));
        assert!(!env.has_api_key() && env.has_access_token());
        let storage = MemoryStorage::new();
        assert!(bootstrap(&storage, &env).await.unwrap().is_none());
        assert!(storage.list_caller_keys().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn blank_credentials_count_as_unset() {
        let env = EnvCredentials::new(Some(Secret::from("  ")), Some(Secret::from("")));
        assert!(env.is_empty());
        assert!(env.static_credentials().is_empty());
    }

    #[tokio::test]
    async fn with_nothing_configured_or_stored_two_keys_are_created_once() {
        let storage = Arc::new(MemoryStorage::new());
        let env = EnvCredentials::default();
        let created = bootstrap(&*storage, &env)
            .await
            .unwrap()
            .expect("keys are created");
        let stored = storage.list_caller_keys().await.unwrap();
        let mut kinds: Vec<_> = stored.iter().map(|key| (key.kind, key.scope)).collect();
        kinds.sort_by_key(|(kind, _)| kind.as_str());
        assert_eq!(
            kinds,
            [
                (CredentialKind::AccessToken, Scope::Full),
                (CredentialKind::ApiKey, Scope::Full)
            ]
        );
        assert_eq!(created.keys().count(), 2);

        let out = printed(&created);
        let key = secret_of(&out, CredentialKind::ApiKey);
        let token = secret_of(&out, CredentialKind::AccessToken);
        assert!(
            key.starts_with("dbc_ak_") && token.starts_with("dbc_at_"),
            "{out}"
        );
        for stored in &stored {
            assert!(out.contains(stored.id.as_str()), "{out}");
        }
        let debug = format!("{created:?}");
        assert!(!debug.contains(&key) && !debug.contains(&token), "{debug}");

        let auth = StoredCredentials::new(storage.clone(), env.static_credentials());
        assert_eq!(
            auth.authenticate(CredentialKind::ApiKey, &key)
                .await
                .unwrap()
                .map(|caller| caller.scope),
            Some(Scope::Full)
        );
        assert_eq!(
            auth.authenticate(CredentialKind::AccessToken, &token)
                .await
                .unwrap()
                .map(|caller| caller.scope),
            Some(Scope::Full)
        );
        assert_eq!(
            auth.authenticate(CredentialKind::AccessToken, &key)
                .await
                .unwrap(),
            None
        );

        // A store that holds a key gets no more.
        assert!(bootstrap(&*storage, &env).await.unwrap().is_none());
        assert_eq!(storage.list_caller_keys().await.unwrap().len(), 2);
    }
}
