//! The storage backends the server can run on, one variant and one `match` arm each.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::ValueEnum;
use dbconsole_core::Storage;
use dbconsole_core::seal::{KeyError, Sealer, SecretKey};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_storage_redb::RedbStorage;

/// The variable that holds the key secrets are encrypted with at rest (base64 of 32 bytes).
/// When unset, the key is read from [`KEY_FILE`] in the data directory, created there once.
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
    /// The sealer of its secrets.
    pub sealer: Sealer,
}

/// A storage backend, chosen with `--storage` / `DBCONSOLE_STORAGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageKind {
    /// A redb file in the data directory: durable, secrets encrypted at rest. The default.
    Redb,
    /// Everything in memory: fast, and nothing survives the process.
    Memory,
}

impl StorageKind {
    /// The name the flag takes (`memory`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            StorageKind::Redb => "redb",
            StorageKind::Memory => "memory",
        }
    }

    /// Opens the backend with its sealer. `data_dir` is where backends that keep files put them
    /// (created when missing); `memory` ignores it and seals under a random key, since nothing
    /// it holds outlives the process. `secret_key` is the value of [`SECRET_KEY_VAR`], if set.
    pub fn open(self, data_dir: &Path, secret_key: Option<&str>) -> Result<Opened, OpenError> {
        match self {
            StorageKind::Redb => {
                let key = match secret_key.map(str::trim).filter(|k| !k.is_empty()) {
                    Some(text) => SecretKey::from_base64(text).map_err(OpenError::KeyVariable)?,
                    None => {
                        let key_file = data_dir.join(KEY_FILE);
                        let data_file = data_dir.join(DATA_FILE);
                        // Data without its key file was written under a key from the
                        // environment (or the key file was lost): a new key file could not
                        // open it, and would be left behind to confuse the next start.
                        if !key_file.exists() && data_file.exists() {
                            return Err(OpenError::KeyFileMissing {
                                data_file,
                                key_file,
                            });
                        }
                        SecretKey::load_or_create(&key_file).map_err(OpenError::Key)?
                    }
                };
                let sealer = Sealer::new(&key);
                let storage = RedbStorage::open(&data_dir.join(DATA_FILE), &sealer)?;
                Ok(Opened {
                    storage: Arc::new(storage),
                    sealer,
                })
            }
            StorageKind::Memory => Ok(Opened {
                storage: Arc::new(MemoryStorage::new()),
                sealer: Sealer::ephemeral().map_err(OpenError::Key)?,
            }),
        }
    }
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
            .open(Path::new("/nonexistent/never/created"), None)
            .expect("memory always opens");
        let page = dbconsole_core::storage::Page {
            after: None,
            limit: 10,
        };
        assert!(
            storage
                .storage
                .list_databases(page)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn redb_creates_its_directory_key_file_and_data_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("nested").join("data");
        let storage = StorageKind::Redb.open(&data_dir, None).expect("redb opens");
        let page = dbconsole_core::storage::Page {
            after: None,
            limit: 10,
        };
        assert!(
            storage
                .storage
                .list_databases(page)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(data_dir.join(DATA_FILE).is_file());
        let mode = std::fs::metadata(data_dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn redb_with_another_key_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        drop(
            StorageKind::Redb
                .open(dir.path(), None)
                .expect("first open"),
        );
        let other = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        let error = StorageKind::Redb
            .open(dir.path(), Some(other))
            .expect_err("another key is refused");
        assert!(error.to_string().contains("does not match"), "{error}");
        let error = StorageKind::Redb
            .open(dir.path(), Some("not base64!"))
            .expect_err("a malformed key is refused");
        assert!(error.to_string().contains(SECRET_KEY_VAR), "{error}");
        StorageKind::Redb
            .open(dir.path(), None)
            .expect("the key file still opens it");
    }

    #[test]
    fn a_second_open_is_recognised_as_already_open() {
        let dir = tempfile::tempdir().unwrap();
        let first = StorageKind::Redb
            .open(dir.path(), None)
            .expect("first open");
        let error = StorageKind::Redb
            .open(dir.path(), None)
            .expect_err("the file is open");
        assert!(error.is_already_open(), "{error}");
        drop(first);
        StorageKind::Redb
            .open(dir.path(), None)
            .expect("closed, it opens again");
        let other = StorageKind::Redb
            .open(dir.path(), Some("not base64!"))
            .expect_err("a malformed key is refused");
        assert!(!other.is_already_open(), "{other}");
    }

    #[test]
    fn data_without_its_key_file_asks_for_the_key_and_creates_none() {
        let dir = tempfile::tempdir().unwrap();
        let key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        drop(
            StorageKind::Redb
                .open(dir.path(), Some(key))
                .expect("opens with the variable"),
        );
        let error = StorageKind::Redb
            .open(dir.path(), None)
            .expect_err("no key file, no variable");
        assert!(error.to_string().contains(SECRET_KEY_VAR), "{error}");
        assert!(!dir.path().join(KEY_FILE).exists());
        StorageKind::Redb
            .open(dir.path(), Some(key))
            .expect("the variable still opens it");
    }
}
