//! `dbconsole backup` and `dbconsole restore` (docs/operations.md, "Backup and restore").
//!
//! A backup runs where the data file is open: through the admin socket of a server running on
//! the data directory (the server copies its own store while it goes on writing), else on the
//! data file opened here, as `dbconsole keys` does ([`crate::admin::client`]). The copy
//! itself is [`RedbStorage::backup`](dbconsole_storage_redb::RedbStorage::backup). A restore
//! never involves a server: it puts a backup in place in a data directory that has no data.

use std::path::{Path, PathBuf};

use dbconsole_core::seal::{KeyError, Keyring, Sealer};
use dbconsole_storage_redb::{Copied, CopyError};
use thiserror::Error;

use crate::admin::client::{AdminError, run_on_redb};
use crate::admin::protocol::{AdminReply, AdminRequest};
use crate::backend::{DATA_FILE, KEY_FILE, SECRET_KEY_VAR, StorageLocation};
use crate::cli::{BackupArgs, RestoreArgs};

/// Runs `dbconsole backup`. `secret_key` is the value of [`SECRET_KEY_VAR`], used only when the
/// data file is opened here.
pub async fn backup(args: BackupArgs, secret_key: Option<&str>) -> Result<AdminReply, BackupError> {
    // The server resolves nothing against its own working directory.
    let to = std::path::absolute(&args.to).map_err(|source| BackupError::Path {
        path: args.to.clone(),
        source,
    })?;
    let location = StorageLocation {
        data_dir: args.data_dir,
        ..StorageLocation::default()
    };
    Ok(run_on_redb(&location, secret_key, AdminRequest::Backup { to }).await?)
}

/// Why `dbconsole backup` got no reply.
#[derive(Debug, Error)]
pub enum BackupError {
    /// The destination has no absolute form (the working directory is gone).
    #[error("cannot resolve {}: {source}", path.display())]
    Path {
        /// The path given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The request could not be run.
    #[error(transparent)]
    Admin(#[from] AdminError),
}

/// Runs `dbconsole restore`: the backup `args.from` becomes the data file of `args.data_dir`.
/// `secret_key` is the value of [`SECRET_KEY_VAR`]; when unset, the key file must already be in
/// the data directory. Blocking.
pub fn restore(args: &RestoreArgs, secret_key: Option<&str>) -> Result<Copied, RestoreError> {
    let data_file = args.data_dir.join(DATA_FILE);
    if data_file.exists() {
        return Err(RestoreError::HasData { data_file });
    }
    let keyring = match secret_key.map(str::trim).filter(|key| !key.is_empty()) {
        Some(text) => Keyring::from_text(text).map_err(RestoreError::KeyVariable)?,
        None => {
            let key_file = args.data_dir.join(KEY_FILE);
            if !key_file.exists() {
                return Err(RestoreError::NoKey { key_file });
            }
            Keyring::load(&key_file).map_err(RestoreError::KeyFile)?
        }
    };
    let sealer = Sealer::with_keyring(&keyring);
    dbconsole_storage_redb::restore(&args.from, &data_file, &sealer).map_err(|source| {
        RestoreError::Copy {
            from: args.from.clone(),
            source,
        }
    })
}

/// What `dbconsole restore` prints.
pub fn restored_message(copied: &Copied, data_dir: &Path) -> String {
    format!(
        "restored {} database(s), {} dashboard(s) and {} caller key(s) into {}; start the \
         server with --data-dir {}",
        copied.records.databases,
        copied.records.dashboards,
        copied.records.caller_keys,
        data_dir.join(DATA_FILE).display(),
        data_dir.display()
    )
}

/// Why `dbconsole restore` put nothing in place.
#[derive(Debug, Error)]
pub enum RestoreError {
    /// The data directory has data already.
    #[error(
        "{} exists: a backup is restored only into a data directory without data (stop the \
         server there and move its data away, or choose another --data-dir)",
        data_file.display()
    )]
    HasData {
        /// The existing data file.
        data_file: PathBuf,
    },
    /// No key to open the backup's secrets with.
    #[error(
        "the backup's secrets are encrypted under the key its data was written with: set \
         {SECRET_KEY_VAR} to that key, or copy the original data directory's {KEY_FILE} to {}",
        key_file.display()
    )]
    NoKey {
        /// Where the key file was looked for.
        key_file: PathBuf,
    },
    /// `DBCONSOLE_SECRET_KEY` is not a key.
    #[error("{SECRET_KEY_VAR}: {0}")]
    KeyVariable(#[source] KeyError),
    /// The key file could not be read.
    #[error(transparent)]
    KeyFile(KeyError),
    /// The backup could not be checked or copied.
    #[error("cannot restore {}: {source}", from.display())]
    Copy {
        /// The backup.
        from: PathBuf,
        /// Why.
        source: CopyError,
    },
}
