//! The storage backends the server can run on, one variant and one `match` arm each.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::ValueEnum;
use dbconsole_core::Storage;
use dbconsole_core::model::Secret;
use dbconsole_core::seal::{KeyError, Keyring, Sealer};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_storage_postgres::{PostgresOptions, PostgresStorage};
use dbconsole_storage_redb::RedbStorage;

/// The variable that holds the seal keys secrets are encrypted with at rest: `<id>:<base64 of
/// 32 bytes>` per key, separated by white space (a bare base64 key is key 0). When unset, the
/// keys are read from [`KEY_FILE`] in the data directory, created there once.
pub const SECRET_KEY_VAR: &str = "DBCONSOLE_SECRET_KEY";
/// The key file's name inside the data directory.
pub const KEY_FILE: &str = "secret.key";
/// The redb data file's name inside the data directory.
pub const DATA_FILE: &str = "dbconsole.redb";
/// The admin socket's name inside the data directory: a server on redb listens there for
/// `dbconsole keys`.
pub const ADMIN_SOCKET_FILE: &str = "admin.sock";

/// Why [`StorageKind::open`] failed; shown to the operator.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `DBCONSOLE_SECRET_KEY` is set but is not a key.
    #[error("{SECRET_KEY_VAR}: {0}")]
    KeyVariable(#[source] KeyError),
    /// The data file exists but the key file does not.
    #[error(
        "{} exists but {} does not: set {SECRET_KEY_VAR} to the key the data was written with",
        data_file.display(),
        key_file.display()
    )]
    KeyFileMissing {
        /// The data file.
        data_file: PathBuf,
        /// The key file that should be beside it.
        key_file: PathBuf,
    },
    /// The key file could not be read or created, or a key could not be made.
    #[error(transparent)]
    Key(KeyError),
    /// The redb file could not be opened.
    #[error(transparent)]
    Redb(#[from] dbconsole_storage_redb::OpenError),
    /// `--storage postgres` without `--database-url`.
    #[error("--storage postgres needs --database-url or DBCONSOLE_DATABASE_URL")]
    NoDatabaseUrl,
    /// The CA file of `--database-ca-file` could not be read.
    #[error("cannot read the database CA file {}: {source}", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// PostgreSQL was written with another sealing key.
    #[error(
        "the secret key does not match the one the PostgreSQL store was written with: every \
         node must run with the same seal keys ({SECRET_KEY_VAR} or key file)"
    )]
    PostgresWrongKey,
    /// The PostgreSQL store could not be reached or prepared.
    #[error(transparent)]
    Postgres(dbconsole_storage_postgres::ConnectError),
}

impl OpenError {
    /// Whether another process has the data file open.
    pub fn is_already_open(&self) -> bool {
        matches!(
            self,
            OpenError::Redb(dbconsole_storage_redb::OpenError::AlreadyOpen { .. })
        )
    }
}

/// An open storage and the sealer that seals its secrets: the one its key check was made with,
/// for the service to use.
#[derive(Debug)]
pub struct Opened {
    /// The storage.
    pub storage: Arc<dyn Storage>,
    /// The node's seal keys.
    pub keys: NodeKeys,
    /// Which backend it is, with the typed store where one is needed for what only that
    /// backend does.
    pub backend: OpenedBackend,
}

/// The backend an [`Opened`] storage is.
#[derive(Debug)]
pub enum OpenedBackend {
    /// redb, typed: the admin socket serves `dbconsole keys` and backups with it.
    Redb(Arc<RedbStorage>),
    /// The memory store.
    Memory,
    /// PostgreSQL.
    Postgres,
}

/// A node's seal keys: the sealer that holds them, and the key file they were read from (`None`
/// when they come from [`SECRET_KEY_VAR`], or for a memory store's random key). A rotation
/// writes its new key to the file before using it, and drops the retired keys from it.
#[derive(Clone, Debug)]
pub struct NodeKeys {
    /// The sealer, shared with the service and the store.
    pub sealer: Sealer,
    /// The key file, when the keys come from one.
    pub file: Option<PathBuf>,
}

/// Opens the redb store of the data directory with the keys of [`StorageKind::open`].
pub fn open_redb(
    location: &StorageLocation,
    secret_key: Option<&str>,
) -> Result<(Arc<RedbStorage>, NodeKeys), OpenError> {
    let data_dir = location.data_dir.as_path();
    let keys = load_keys(data_dir, secret_key, true)?;
    let cache = location
        .redb_cache_bytes
        .unwrap_or(dbconsole_storage_redb::DEFAULT_CACHE_BYTES);
    let storage = Arc::new(RedbStorage::open_with_cache(
        &data_dir.join(DATA_FILE),
        &keys.sealer,
        cache,
    )?);
    Ok((storage, keys))
}

/// A storage backend, chosen with `--storage` / `DBCONSOLE_STORAGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageKind {
    /// A redb file in the data directory: durable, secrets encrypted at rest. The default.
    Redb,
    /// Everything in memory: fast, and nothing survives the process.
    Memory,
    /// A PostgreSQL database shared by every node (`--database-url`).
    Postgres,
}

/// Where the storage is: what `serve` and `keys` share.
#[derive(Clone, Debug, Default)]
pub struct StorageLocation {
    /// The data directory (redb's file; the key file unless `DBCONSOLE_SECRET_KEY` is set).
    pub data_dir: PathBuf,
    /// The PostgreSQL URL (`--storage postgres`). Never logged.
    pub database_url: Option<Secret>,
    /// The PostgreSQL schema.
    pub database_schema: String,
    /// A CA bundle (PEM) the PostgreSQL server certificate must chain to.
    pub database_ca_file: Option<PathBuf>,
    /// The bound on each PostgreSQL operation.
    pub database_timeout: std::time::Duration,
    /// redb's page cache in bytes (`None`: the store's default).
    pub redb_cache_bytes: Option<usize>,
}

impl StorageKind {
    /// The name the flag takes (`memory`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            StorageKind::Redb => "redb",
            StorageKind::Memory => "memory",
            StorageKind::Postgres => "postgres",
        }
    }

    /// Opens the backend with its sealer. Backends that keep files put them in the data
    /// directory (created when missing); `memory` seals under a random key, since nothing it
    /// holds outlives the process. `secret_key` is the value of [`SECRET_KEY_VAR`], if set;
    /// else the key file of the data directory holds the key (created once).
    pub async fn open(
        self,
        location: &StorageLocation,
        secret_key: Option<&str>,
    ) -> Result<Opened, OpenError> {
        let data_dir = location.data_dir.as_path();
        match self {
            StorageKind::Redb => {
                let (storage, keys) = open_redb(location, secret_key)?;
                Ok(Opened {
                    storage: Arc::clone(&storage) as Arc<dyn Storage>,
                    keys,
                    backend: OpenedBackend::Redb(storage),
                })
            }
            StorageKind::Memory => Ok(Opened {
                storage: Arc::new(MemoryStorage::new()),
                keys: NodeKeys {
                    sealer: Sealer::ephemeral().map_err(OpenError::Key)?,
                    file: None,
                },
                backend: OpenedBackend::Memory,
            }),
            StorageKind::Postgres => {
                let url = location
                    .database_url
                    .as_ref()
                    .and_then(Secret::expose_str)
                    .filter(|url| !url.trim().is_empty())
                    .ok_or(OpenError::NoDatabaseUrl)?;
                let mut options = PostgresOptions::new(url.to_owned());
                options.schema = location.database_schema.clone();
                options.timeout = location.database_timeout;
                if let Some(path) = &location.database_ca_file {
                    let pem = std::fs::read(path).map_err(|source| OpenError::CaFile {
                        path: path.clone(),
                        source,
                    })?;
                    options.ca_cert = Some(pem);
                }
                let keys = load_keys(data_dir, secret_key, false)?;
                let storage = PostgresStorage::connect(options, &keys.sealer)
                    .await
                    .map_err(|error| match error {
                        dbconsole_storage_postgres::ConnectError::WrongKey => {
                            OpenError::PostgresWrongKey
                        }
                        other => OpenError::Postgres(other),
                    })?;
                Ok(Opened {
                    storage: Arc::new(storage),
                    keys,
                    backend: OpenedBackend::Postgres,
                })
            }
        }
    }
}

/// The seal keys: from [`SECRET_KEY_VAR`] when set, else from the key file of the data
/// directory (created once). With `guard_data_file`, a redb data file without its key file is
/// refused: it was written under a key from the environment (or the key file was lost), and a
/// new key file could not open it.
pub fn load_keys(
    data_dir: &Path,
    secret_key: Option<&str>,
    guard_data_file: bool,
) -> Result<NodeKeys, OpenError> {
    let (keyring, file) = load_keyring(data_dir, secret_key, guard_data_file)?;
    Ok(NodeKeys {
        sealer: Sealer::with_keyring(&keyring),
        file,
    })
}

/// The keyring of [`load_keys`], with its file.
pub fn load_keyring(
    data_dir: &Path,
    secret_key: Option<&str>,
    guard_data_file: bool,
) -> Result<(Keyring, Option<PathBuf>), OpenError> {
    if let Some(text) = secret_key.map(str::trim).filter(|k| !k.is_empty()) {
        let keyring = Keyring::from_text(text).map_err(OpenError::KeyVariable)?;
        return Ok((keyring, None));
    }
    let key_file = data_dir.join(KEY_FILE);
    let data_file = data_dir.join(DATA_FILE);
    if guard_data_file && !key_file.exists() && data_file.exists() {
        return Err(OpenError::KeyFileMissing {
            data_file,
            key_file,
        });
    }
    let keyring = Keyring::load_or_create(&key_file).map_err(OpenError::Key)?;
    Ok((keyring, Some(key_file)))
}

/// The value of [`SECRET_KEY_VAR`], when set and valid Unicode.
pub fn secret_key_from_env() -> Option<String> {
    std::env::var(SECRET_KEY_VAR).ok()
}

impl fmt::Display for StorageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn assert_empty(opened: &Opened) {
        let page = dbconsole_core::storage::Page {
            after: None,
            limit: 10,
        };
        let listed = opened
            .storage
            .list_databases(page, Default::default())
            .await
            .unwrap();
        assert!(listed.is_empty(), "{listed:?}");
    }

    fn at(data_dir: &Path) -> StorageLocation {
        StorageLocation {
            data_dir: data_dir.to_owned(),
            ..StorageLocation::default()
        }
    }

    #[test]
    fn every_kind_is_named_as_its_flag_value() {
        for kind in StorageKind::value_variants() {
            let flag = kind.to_possible_value().expect("no variant is skipped");
            assert_eq!(flag.get_name(), kind.as_str());
            assert_eq!(StorageKind::from_str(kind.as_str(), false), Ok(*kind));
        }
    }

    #[tokio::test]
    async fn memory_opens_an_empty_store() {
        let storage = StorageKind::Memory
            .open(&at(Path::new("/nonexistent/never/created")), None)
            .await
            .expect("memory always opens");
        assert_empty(&storage).await;
    }

    #[tokio::test]
    async fn redb_creates_its_directory_key_file_and_data_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("nested").join("data");
        let storage = StorageKind::Redb
            .open(&at(&data_dir), None)
            .await
            .expect("redb opens");
        assert_empty(&storage).await;
        assert!(data_dir.join(DATA_FILE).is_file());
        let mode = std::fs::metadata(data_dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test]
    async fn redb_with_another_key_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        drop(
            StorageKind::Redb
                .open(&at(dir.path()), None)
                .await
                .expect("first open"),
        );
        let other = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        let error = StorageKind::Redb
            .open(&at(dir.path()), Some(other))
            .await
            .expect_err("another key is refused");
        assert!(error.to_string().contains("does not match"), "{error}");
        let error = StorageKind::Redb
            .open(&at(dir.path()), Some("not base64!"))
            .await
            .expect_err("a malformed key is refused");
        assert!(error.to_string().contains(SECRET_KEY_VAR), "{error}");
        StorageKind::Redb
            .open(&at(dir.path()), None)
            .await
            .expect("the key file still opens it");
    }

    #[tokio::test]
    async fn a_second_open_is_recognised_as_already_open() {
        let dir = tempfile::tempdir().unwrap();
        let first = StorageKind::Redb
            .open(&at(dir.path()), None)
            .await
            .expect("first open");
        let error = StorageKind::Redb
            .open(&at(dir.path()), None)
            .await
            .expect_err("the file is open");
        assert!(error.is_already_open(), "{error}");
        drop(first);
        StorageKind::Redb
            .open(&at(dir.path()), None)
            .await
            .expect("closed, it opens again");
        let other = StorageKind::Redb
            .open(&at(dir.path()), Some("not base64!"))
            .await
            .expect_err("a malformed key is refused");
        assert!(!other.is_already_open(), "{other}");
    }

    #[tokio::test]
    async fn data_without_its_key_file_asks_for_the_key_and_creates_none() {
        let dir = tempfile::tempdir().unwrap();
        let key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        drop(
            StorageKind::Redb
                .open(&at(dir.path()), Some(key))
                .await
                .expect("opens with the variable"),
        );
        let error = StorageKind::Redb
            .open(&at(dir.path()), None)
            .await
            .expect_err("no key file, no variable");
        assert!(error.to_string().contains(SECRET_KEY_VAR), "{error}");
        assert!(!dir.path().join(KEY_FILE).exists());
        StorageKind::Redb
            .open(&at(dir.path()), Some(key))
            .await
            .expect("the variable still opens it");
    }
}
