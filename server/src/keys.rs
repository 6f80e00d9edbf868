//! Stored caller keys: what `dbconsole keys create|list|revoke` does, on whichever store holds
//! the keys.
//!
//! [`execute`] runs one [`KeyRequest`] on a [`Storage`] and answers a [`KeyReply`]; both are
//! also the JSON lines of the [admin socket](crate::admin). [`run`] decides where a command
//! runs: through the admin socket of a server that has the data directory open, else on the
//! data file opened directly (redb lets one process at a time open it).

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use dbconsole_core::auth::mint_caller_key;
use dbconsole_core::model::CallerKey;
use dbconsole_core::{CredentialKind, Scope, Secret, Storage, StorageError};
use serde::{Deserialize, Serialize};

use crate::backend::{self, ADMIN_SOCKET_FILE, DATA_FILE, StorageKind};
use crate::cli::{KeysArgs, KeysCommand};

/// The longest key name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// How long a command keeps trying when the data file is open in another process whose admin
/// socket does not answer (yet): a server that is starting (it opens the file, then binds the
/// socket) or stopping (it removes the socket, then closes the file).
const BUSY_PATIENCE: Duration = Duration::from_secs(5);

/// The pause between two tries while the data directory is busy.
const BUSY_RETRY: Duration = Duration::from_millis(100);

/// The kind of a key, as `--kind` and the admin socket name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyKind {
    /// An API key: database routes, sent as `x-api-key`.
    ApiKey,
    /// An access token: dashboard routes, sent as `Authorization: Bearer`.
    AccessToken,
}

impl From<KeyKind> for CredentialKind {
    fn from(kind: KeyKind) -> Self {
        match kind {
            KeyKind::ApiKey => CredentialKind::ApiKey,
            KeyKind::AccessToken => CredentialKind::AccessToken,
        }
    }
}

impl From<CredentialKind> for KeyKind {
    fn from(kind: CredentialKind) -> Self {
        match kind {
            CredentialKind::ApiKey => KeyKind::ApiKey,
            CredentialKind::AccessToken => KeyKind::AccessToken,
        }
    }
}

impl KeyKind {
    /// `api-key` or `access-token`, as [`CredentialKind::as_str`].
    pub fn as_str(self) -> &'static str {
        CredentialKind::from(self).as_str()
    }
}

/// The scope of a key, as `--scope` and the admin socket name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyScope {
    /// Every operation.
    Full,
    /// Only `PUT …/databases/setup` and `DELETE …/databases/remove/{api_id}`.
    Setup,
}

impl From<KeyScope> for Scope {
    fn from(scope: KeyScope) -> Self {
        match scope {
            KeyScope::Full => Scope::Full,
            KeyScope::Setup => Scope::Setup,
        }
    }
}

impl From<Scope> for KeyScope {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::Full => KeyScope::Full,
            Scope::Setup => KeyScope::Setup,
        }
    }
}

impl KeyScope {
    /// `full` or `setup`, as [`Scope::as_str`].
    pub fn as_str(self) -> &'static str {
        Scope::from(self).as_str()
    }
}

/// One operation on the stored keys; on the admin socket, one JSON line tagged by `op`:
/// `{"op":"create","kind":"api-key","scope":"setup","name":"ci"}`, `{"op":"list"}`,
/// `{"op":"revoke","id":"key_…"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum KeyRequest {
    /// Mint a key, store its digest, answer its secret (once).
    Create {
        /// API key or access token.
        kind: KeyKind,
        /// What it allows.
        scope: KeyScope,
        /// What it is for.
        name: String,
    },
    /// Every stored key, without secrets (there are none to show) or digests.
    List,
    /// Delete a key.
    Revoke {
        /// The key's id.
        id: String,
    },
}

impl From<KeysCommand> for KeyRequest {
    fn from(command: KeysCommand) -> Self {
        match command {
            KeysCommand::Create(args) => KeyRequest::Create {
                kind: args.kind,
                scope: args.scope,
                name: args.name,
            },
            KeysCommand::List => KeyRequest::List,
            KeysCommand::Revoke { id } => KeyRequest::Revoke { id },
        }
    }
}

impl KeyRequest {
    /// `create`, `list` or `revoke`: for log lines.
    pub fn op(&self) -> &'static str {
        match self {
            KeyRequest::Create { .. } => "create",
            KeyRequest::List => "list",
            KeyRequest::Revoke { .. } => "revoke",
        }
    }
}

/// A stored key as the commands show it: everything but the digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyInfo {
    /// `key_…`.
    pub id: String,
    /// API key or access token.
    pub kind: KeyKind,
    /// What it allows.
    pub scope: KeyScope,
    /// What it is for.
    pub name: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// RFC 3339, UTC; `None` when never used.
    pub last_used_at: Option<String>,
}

impl From<&CallerKey> for KeyInfo {
    fn from(key: &CallerKey) -> Self {
        Self {
            id: key.id.to_string(),
            kind: key.kind.into(),
            scope: key.scope.into(),
            name: key.name.clone(),
            created_at: key.created_at.to_string(),
            last_used_at: key.last_used_at.map(|at| at.to_string()),
        }
    }
}

/// Why an operation failed, for a program reading the admin socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// No key has that id.
    NotFound,
    /// The request is well-formed but its values are not acceptable (an empty name…).
    Invalid,
    /// The line is not a request.
    BadRequest,
    /// The store failed.
    Storage,
}

/// The answer to a [`KeyRequest`]; on the admin socket, one JSON line tagged by `result`.
/// `Debug` shows no secret.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "lowercase")]
pub enum KeyReply {
    /// The key was stored; `secret` is the only copy there will ever be.
    Created {
        /// The stored key.
        key: KeyInfo,
        /// Its secret.
        #[serde(with = "secret_text")]
        secret: Secret,
    },
    /// The stored keys, ordered by id.
    Listed {
        /// The keys.
        keys: Vec<KeyInfo>,
    },
    /// The key was deleted.
    Revoked {
        /// The key as it was.
        key: KeyInfo,
    },
    /// Nothing was changed.
    Failed {
        /// Why, for programs.
        error: Failure,
        /// Why, for people.
        message: String,
    },
}

impl KeyReply {
    fn failed(error: Failure, message: impl Into<String>) -> Self {
        KeyReply::Failed {
            error,
            message: message.into(),
        }
    }

    fn storage(error: &StorageError) -> Self {
        Self::failed(Failure::Storage, format!("the store failed: {error}"))
    }

    /// `created`, `listed`, `revoked` or `failed`: for log lines.
    pub fn result(&self) -> &'static str {
        match self {
            KeyReply::Created { .. } => "created",
            KeyReply::Listed { .. } => "listed",
            KeyReply::Revoked { .. } => "revoked",
            KeyReply::Failed { .. } => "failed",
        }
    }
}

/// The secret of a created key as a JSON string (it is base64url text).
mod secret_text {
    use dbconsole_core::Secret;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _, ser::Error as _};

    pub fn serialize<S: Serializer>(secret: &Secret, serializer: S) -> Result<S::Ok, S::Error> {
        let text = secret
            .expose_str()
            .ok_or_else(|| S::Error::custom("the secret is not text"))?;
        serializer.serialize_str(text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Secret, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.is_empty() {
            return Err(D::Error::custom("empty secret"));
        }
        Ok(Secret::from(text))
    }
}

/// A key's name, trimmed: not empty, at most [`MAX_NAME_CHARS`] characters, no control
/// characters (it is printed in a table).
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("the key name must not be empty".to_owned());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "the key name must be at most {MAX_NAME_CHARS} characters"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("the key name must not contain control characters".to_owned());
    }
    Ok(name.to_owned())
}

/// Runs one request on `storage`. A created key's secret is in the reply and nowhere else: only
/// its digest is stored.
pub async fn execute(storage: &dyn Storage, request: KeyRequest) -> KeyReply {
    match request {
        KeyRequest::Create { kind, scope, name } => {
            let name = match check_name(&name) {
                Ok(name) => name,
                Err(message) => return KeyReply::failed(Failure::Invalid, message),
            };
            let (key, secret) = mint_caller_key(kind.into(), scope.into(), &name);
            let info = KeyInfo::from(&key);
            match storage.insert_caller_key(key).await {
                Ok(()) => KeyReply::Created { key: info, secret },
                Err(error) => KeyReply::storage(&error),
            }
        }
        KeyRequest::List => match storage.list_caller_keys().await {
            Ok(keys) => KeyReply::Listed {
                keys: keys.iter().map(KeyInfo::from).collect(),
            },
            Err(error) => KeyReply::storage(&error),
        },
        KeyRequest::Revoke { id } => match storage.delete_caller_key(&id).await {
            Ok(key) => KeyReply::Revoked {
                key: KeyInfo::from(&key),
            },
            Err(StorageError::NotFound) => KeyReply::failed(
                Failure::NotFound,
                format!("no key has the id {id:?} (`dbconsole keys list` shows the ids)"),
            ),
            Err(error) => KeyReply::storage(&error),
        },
    }
}

/// Runs `dbconsole keys …` on the data directory of `args`: through the admin socket when a
/// server has the directory open, else on the data file itself. `secret_key` is the value of
/// [`backend::SECRET_KEY_VAR`], used only when the file is opened here.
///
/// `list` and `revoke` need an existing data file; `create` creates one (and the key file)
/// when missing, so keys can be made before the first `serve`.
pub async fn run(args: KeysArgs, secret_key: Option<&str>) -> Result<KeyReply, String> {
    let data_dir = args.data_dir;
    let request = KeyRequest::from(args.command);
    let patience = Instant::now() + BUSY_PATIENCE;
    loop {
        #[cfg(unix)]
        {
            let socket = data_dir.join(ADMIN_SOCKET_FILE);
            match crate::admin::request(&socket, &request).await {
                Ok(reply) => return Ok(reply),
                Err(crate::admin::ClientError::NoServer) => {}
                Err(error) => return Err(error.to_string()),
            }
        }
        match open_directly(&data_dir, secret_key, &request) {
            Ok(storage) => return Ok(execute(&*storage, request).await),
            Err(Busy::Yes) if Instant::now() < patience => tokio::time::sleep(BUSY_RETRY).await,
            Err(Busy::Yes) => {
                return Err(format!(
                    "the data file {} is open in another process, and no dbconsole server \
                     answers on {}; if a server is running there, its admin socket is missing: \
                     restart it, or stop it and run the command again",
                    data_dir.join(DATA_FILE).display(),
                    data_dir.join(ADMIN_SOCKET_FILE).display(),
                ));
            }
            Err(Busy::No(message)) => return Err(message),
        }
    }
}

/// Why the data file could not be opened here.
enum Busy {
    /// Another process has it open.
    Yes,
    /// Anything else: the message for the operator.
    No(String),
}

fn open_directly(
    data_dir: &Path,
    secret_key: Option<&str>,
    request: &KeyRequest,
) -> Result<Arc<dyn Storage>, Busy> {
    let data_file = data_dir.join(DATA_FILE);
    if !matches!(request, KeyRequest::Create { .. }) && !data_file.exists() {
        return Err(Busy::No(format!(
            "no dbconsole data in {}: {} does not exist (check --data-dir or DBCONSOLE_DATA_DIR)",
            data_dir.display(),
            data_file.display(),
        )));
    }
    StorageKind::Redb
        .open(data_dir, secret_key)
        .map_err(|error| {
            if backend::is_already_open(&*error) {
                Busy::Yes
            } else {
                Busy::No(format!("cannot open the redb storage: {error}"))
            }
        })
}

/// Prints a reply for people on `out`; a [`KeyReply::Failed`] is the error message instead.
pub fn print_reply(reply: &KeyReply, out: &mut impl Write) -> Result<(), String> {
    let written = match reply {
        KeyReply::Created { key, secret } => print_created(key, secret, out),
        KeyReply::Listed { keys } => print_table(keys, out),
        KeyReply::Revoked { key } => writeln!(
            out,
            "revoked {} {} (scope {}, name {})",
            key.kind.as_str(),
            key.id,
            key.scope.as_str(),
            printable(&key.name),
        ),
        KeyReply::Failed { message, .. } => return Err(message.clone()),
    };
    written
        .and_then(|()| out.flush())
        .map_err(|error| format!("cannot write to standard output: {error}"))
}

fn print_created(key: &KeyInfo, secret: &Secret, out: &mut impl Write) -> io::Result<()> {
    let secret = secret.expose_str().unwrap_or("");
    let (header, routes) = match key.kind {
        KeyKind::ApiKey => ("x-api-key: <secret>", "the database routes"),
        KeyKind::AccessToken => ("Authorization: Bearer <secret>", "the dashboard routes"),
    };
    writeln!(out, "id:     {}", key.id)?;
    writeln!(out, "kind:   {}", key.kind.as_str())?;
    writeln!(out, "scope:  {}", key.scope.as_str())?;
    writeln!(out, "name:   {}", printable(&key.name))?;
    writeln!(out, "secret: {secret}")?;
    writeln!(
        out,
        "Store the secret now: it is shown only this once (only its SHA-256 digest is kept). \
         Send it as `{header}` on {routes}."
    )
}

fn print_table(keys: &[KeyInfo], out: &mut impl Write) -> io::Result<()> {
    if keys.is_empty() {
        return writeln!(out, "no stored keys");
    }
    let rows: Vec<[String; 6]> = keys
        .iter()
        .map(|key| {
            [
                key.id.clone(),
                key.kind.as_str().to_owned(),
                key.scope.as_str().to_owned(),
                printable(&key.name),
                to_seconds(&key.created_at),
                key.last_used_at
                    .as_deref()
                    .map_or_else(|| "never".to_owned(), to_seconds),
            ]
        })
        .collect();
    let header = ["ID", "KIND", "SCOPE", "NAME", "CREATED", "LAST USED"].map(str::to_owned);
    let mut widths = header.clone().map(|cell| cell.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (column, (cell, width)) in row.iter().zip(widths).enumerate() {
            if column + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `2026-11-22T10:04:05.123456Z` → `2026-11-22T10:04:05Z`; anything else as it is.
fn to_seconds(at: &str) -> String {
    match at.split_once('.') {
        Some((seconds, _)) if at.ends_with('Z') => format!("{seconds}Z"),
        _ => at.to_owned(),
    }
}

/// A name as it can be printed on a terminal: control characters escaped (names are checked
/// at creation, but a store may hold older or foreign ones).
fn printable(name: &str) -> String {
    name.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use dbconsole_core::Authenticator;
    use dbconsole_core::StaticCredentials;
    use dbconsole_core::auth::StoredCredentials;
    use dbconsole_storage_memory::MemoryStorage;

    use super::*;

    fn create(kind: KeyKind, scope: KeyScope, name: &str) -> KeyRequest {
        KeyRequest::Create {
            kind,
            scope,
            name: name.to_owned(),
        }
    }

    fn printed(reply: &KeyReply) -> String {
        let mut out = Vec::new();
        print_reply(reply, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn kinds_and_scopes_are_named_as_in_core() {
        for kind in KeyKind::value_variants() {
            let name = kind.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(name, kind.as_str());
            assert_eq!(name.parse::<CredentialKind>(), Ok((*kind).into()));
            assert_eq!(serde_json::to_value(kind).unwrap(), name.as_str());
        }
        for scope in KeyScope::value_variants() {
            let name = scope.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(name, scope.as_str());
            assert_eq!(name.parse::<Scope>(), Ok((*scope).into()));
            assert_eq!(serde_json::to_value(scope).unwrap(), name.as_str());
        }
    }

    #[test]
    fn requests_have_the_documented_wire_form() {
        let request: KeyRequest =
            serde_json::from_str(r#"{"op":"create","kind":"api-key","scope":"setup","name":"ci"}"#)
                .unwrap();
        assert_eq!(request, create(KeyKind::ApiKey, KeyScope::Setup, "ci"));
        let request: KeyRequest = serde_json::from_str(r#"{"op":"list"}"#).unwrap();
        assert_eq!(request, KeyRequest::List);
        let request: KeyRequest = serde_json::from_str(r#"{"op":"revoke","id":"key_1"}"#).unwrap();
        assert_eq!(
            request,
            KeyRequest::Revoke {
                id: "key_1".to_owned()
            }
        );
        for bad in [
            r#"{"op":"drop"}"#,
            r#"{"op":"create","kind":"password","scope":"full","name":"x"}"#,
            r#"{"op":"revoke"}"#,
            "list",
        ] {
            assert!(serde_json::from_str::<KeyRequest>(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn create_list_revoke_on_a_store() {
        let storage = Arc::new(MemoryStorage::new());
        let reply = execute(&*storage, create(KeyKind::ApiKey, KeyScope::Setup, " ci ")).await;
        let KeyReply::Created { key, secret } = &reply else {
            panic!("{reply:?}");
        };
        assert!(key.id.starts_with("key_"), "{key:?}");
        assert_eq!((key.kind, key.scope), (KeyKind::ApiKey, KeyScope::Setup));
        assert_eq!(key.name, "ci");
        assert_eq!(key.last_used_at, None);
        let secret_text = secret.expose_str().unwrap().to_owned();
        assert!(secret_text.starts_with("dbc_ak_"), "{secret_text}");

        // The secret is in the reply's JSON (that is how it reaches the command), never in
        // its Debug, its listing or what the store keeps.
        let json = serde_json::to_string(&reply).unwrap();
        assert!(json.contains(&secret_text));
        assert!(!format!("{reply:?}").contains(&secret_text));
        let back: KeyReply = serde_json::from_str(&json).unwrap();
        assert!(matches!(back, KeyReply::Created { secret: s, .. } if s == *secret));
        let stored = storage.list_caller_keys().await.unwrap();
        assert_eq!(stored.len(), 1);
        assert_ne!(&stored[0].digest[..], secret.expose());

        // The stored key authenticates, with its scope and only as its kind.
        let auth = StoredCredentials::new(storage.clone(), StaticCredentials::default());
        assert_eq!(
            auth.authenticate(CredentialKind::ApiKey, &secret_text)
                .await
                .unwrap(),
            Some(Scope::Setup)
        );
        assert_eq!(
            auth.authenticate(CredentialKind::AccessToken, &secret_text)
                .await
                .unwrap(),
            None
        );

        let KeyReply::Listed { keys } = execute(&*storage, KeyRequest::List).await else {
            panic!("not listed");
        };
        // The same key, now with the use just recorded.
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].id, key.id);
        assert!(keys[0].last_used_at.is_some(), "{keys:?}");
        let listing = printed(&KeyReply::Listed { keys });
        assert!(
            listing.contains(&key.id) && listing.contains("setup"),
            "{listing}"
        );
        assert!(!listing.contains(&secret_text), "{listing}");

        let revoke = KeyRequest::Revoke { id: key.id.clone() };
        let reply = execute(&*storage, revoke.clone()).await;
        assert!(
            matches!(&reply, KeyReply::Revoked { key: gone } if gone.id == key.id),
            "{reply:?}"
        );
        assert_eq!(
            auth.authenticate(CredentialKind::ApiKey, &secret_text)
                .await
                .unwrap(),
            None
        );
        let again = execute(&*storage, revoke).await;
        assert!(
            matches!(&again, KeyReply::Failed { error: Failure::NotFound, message }
                if message.contains(&key.id)),
            "{again:?}"
        );
        assert!(print_reply(&again, &mut Vec::new()).is_err());
    }

    #[tokio::test]
    async fn bad_names_are_refused_and_nothing_is_stored() {
        let storage = MemoryStorage::new();
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        for name in ["", "   ", "a\nb", "tab\there", long.as_str()] {
            let reply = execute(&storage, create(KeyKind::AccessToken, KeyScope::Full, name)).await;
            assert!(
                matches!(
                    reply,
                    KeyReply::Failed {
                        error: Failure::Invalid,
                        ..
                    }
                ),
                "{name:?}: {reply:?}"
            );
        }
        assert!(storage.list_caller_keys().await.unwrap().is_empty());
        assert!(check_name(&"é".repeat(MAX_NAME_CHARS)).is_ok());
    }

    #[test]
    fn created_output_labels_the_secret_and_the_id() {
        let reply = KeyReply::Created {
            key: KeyInfo {
                id: "key_01".to_owned(),
                kind: KeyKind::AccessToken,
                scope: KeyScope::Full,
                name: "grafana".to_owned(),
                created_at: "2026-01-02T03:04:05.678901Z".to_owned(),
                last_used_at: None,
            },
            secret: Secret::from("dbc_at_s3cr3t"),
        };
        let out = printed(&reply);
        assert!(out.contains("id:     key_01\n"), "{out}");
        assert!(out.contains("secret: dbc_at_s3cr3t\n"), "{out}");
        assert_eq!(out.matches("dbc_at_s3cr3t").count(), 1, "{out}");
        assert!(out.contains("Authorization: Bearer"), "{out}");
    }

    #[test]
    fn the_table_aligns_columns_and_shortens_times() {
        let key = |id: &str, name: &str, used: Option<&str>| KeyInfo {
            id: id.to_owned(),
            kind: KeyKind::ApiKey,
            scope: KeyScope::Full,
            name: name.to_owned(),
            created_at: "2026-01-02T03:04:05.678901Z".to_owned(),
            last_used_at: used.map(str::to_owned),
        };
        let out = printed(&KeyReply::Listed {
            keys: vec![
                key("key_a", "a long name here", None),
                key("key_b", "bell\u{7}", Some("2026-02-03T04:05:06.000001Z")),
            ],
        });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("ID     KIND     SCOPE  NAME"), "{out}");
        let created = lines[0].find("CREATED").unwrap();
        assert_eq!(
            lines[1].find("2026-01-02T03:04:05Z"),
            Some(created),
            "{out}"
        );
        assert!(lines[1].ends_with("never"), "{out}");
        assert!(lines[2].ends_with("2026-02-03T04:05:06Z"), "{out}");
        assert!(lines[2].contains("bell\\u{7}"), "{out}");
        assert_eq!(
            printed(&KeyReply::Listed { keys: Vec::new() }),
            "no stored keys\n"
        );
    }
}
