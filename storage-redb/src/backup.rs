//! Hot backup and restore: a copy of a live store taken in one read transaction, and its
//! return into a data directory.
//!
//! **Backup** ([`RedbStorage::backup`]) opens one redb read transaction, so the copy is the
//! store exactly as it was at one commit: every write acknowledged before the backup began is
//! in it, and no write is in it by halves. Writes go on meanwhile (redb keeps the pages that
//! transaction reads until it ends). Every table is copied, record by record, into a new redb
//! file, which is therefore a complete data file of the same format, compact, with the same
//! key check value. Secrets stay as they are stored, sealed: the backup holds no key, and
//! restoring it needs the key the store was written with. The file is written beside its
//! destination as `FILE.partial` (mode 0600), committed durably, and only then linked to its
//! name, which must not exist: a backup that fails leaves no file that looks whole.
//!
//! **Restore** ([`restore`]) copies a backup to `DEST.partial`, opens the copy as a store with
//! the given key (so a file that is not a dbconsole data file, from a newer format, or sealed
//! under another key is refused with the [`OpenError`] opening gives), and only then links it
//! to `DEST`, which must not exist. The backup file itself is never written.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dbconsole_core::seal::Sealer;
use dbconsole_core::storage::{RecordCounts, StorageError};
use redb::{
    Durability, Key, MultimapTableDefinition, ReadTransaction, ReadableDatabase,
    ReadableMultimapTable, ReadableTable, TableDefinition, Value, WriteTransaction,
};

use crate::tables::{
    ACCESS_CONTROL, CALLER_KEY_DIGESTS, CALLER_KEYS, DASHBOARDS, DATABASE_API_IDS, DATABASES,
    INHERITED_BY, META, OrBackend, counts,
};
use crate::{OpenError, RedbStorage};

/// The page cache of the file a backup writes: it is written once, front to back.
const BACKUP_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// What a backup or a restore holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    /// Databases, dashboards and caller keys in it.
    pub records: RecordCounts,
    /// The size of the file written.
    pub bytes: u64,
}

/// Why a backup or a restore failed. Nothing was left at the destination.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyError {
    /// The destination exists: a backup or a restore never replaces a file.
    #[error("{} already exists", path.display())]
    Exists {
        /// The destination.
        path: PathBuf,
    },
    /// A file could not be read, written or linked.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// Reading the store or writing the copy failed.
    #[error("copying the data failed: {0}")]
    Storage(#[from] StorageError),
    /// The file to restore is not a data file this build can open with this key.
    #[error("the backup cannot be restored: {0}")]
    Open(#[from] OpenError),
}

impl RedbStorage {
    /// Writes a copy of the store as it is now to `dest`, a new file (see the crate
    /// documentation, "Backup and restore"). Writes go on while it runs; those acknowledged
    /// before it was called are all in the copy.
    pub async fn backup(&self, dest: &Path) -> Result<Copied, CopyError> {
        refuse_existing(dest)?;
        let inner = Arc::clone(&self.inner);
        let dest = dest.to_owned();
        tokio::task::spawn_blocking(move || {
            // The snapshot: taken before anything else, so that the copy is the store as of now.
            inner.with_db(|db| {
                let snapshot = db.begin_read().or_backend()?;
                Ok(write_new(&dest, |partial| copy_into(&snapshot, partial)))
            })
        })
        .await
        .map_err(|error| CopyError::Storage(StorageError::backend(error)))??
    }
}

/// Restores the backup `from` as the data file `dest` (which must not exist) and answers what
/// it holds. `sealer` must hold the key the backup's store was written with. Blocking.
pub fn restore(from: &Path, dest: &Path, sealer: &Sealer) -> Result<Copied, CopyError> {
    refuse_existing(dest)?;
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(io_at(parent))?;
    }
    write_new(dest, |partial| {
        let mut source = fs::File::open(from).map_err(io_at(from))?;
        let mut copy = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(partial)
            .map_err(io_at(partial))?;
        io::copy(&mut source, &mut copy).map_err(io_at(partial))?;
        copy.sync_all().map_err(io_at(partial))?;
        drop(copy);
        // Opening checks what the file is and the key; the store is closed again at once.
        let store = RedbStorage::open(partial, sealer)?;
        let records = store.inner.with_db(|db| {
            let txn = db.begin_read().or_backend()?;
            counts(&txn)
        })?;
        drop(store);
        Ok(records)
    })
}

fn refuse_existing(path: &Path) -> Result<(), CopyError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Err(CopyError::Exists {
            path: path.to_owned(),
        }),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(CopyError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> CopyError + '_ {
    move |source| CopyError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Runs `fill` on `DEST.partial` (created empty, mode 0600), then gives it the name `dest`
/// without replacing anything and makes the name durable. The partial file is removed when
/// anything fails.
fn write_new(
    dest: &Path,
    fill: impl FnOnce(&Path) -> Result<RecordCounts, CopyError>,
) -> Result<Copied, CopyError> {
    let mut name = dest.as_os_str().to_owned();
    name.push(".partial");
    let partial = PathBuf::from(name);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(&partial)
        .map_err(|source| match source.kind() {
            io::ErrorKind::AlreadyExists => CopyError::Exists {
                path: partial.clone(),
            },
            _ => CopyError::Io {
                path: partial.clone(),
                source,
            },
        })?;
    let finished = fill(&partial).and_then(|records| {
        // A hard link never replaces an existing name (a rename would).
        fs::hard_link(&partial, dest).map_err(|source| match source.kind() {
            io::ErrorKind::AlreadyExists => CopyError::Exists {
                path: dest.to_owned(),
            },
            _ => CopyError::Io {
                path: dest.to_owned(),
                source,
            },
        })?;
        let bytes = fs::metadata(dest).map_err(io_at(dest))?.len();
        Ok(Copied { records, bytes })
    });
    if let Err(error) = fs::remove_file(&partial) {
        tracing::warn!(%error, path = %partial.display(), "cannot remove a partial file");
    }
    if finished.is_ok() {
        sync_parent(dest)?;
    }
    finished
}

/// Makes a new name in `path`'s directory durable.
fn sync_parent(path: &Path) -> Result<(), CopyError> {
    #[cfg(unix)]
    if let Some(parent) = path.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        fs::File::open(parent)
            .and_then(|dir| dir.sync_all())
            .map_err(io_at(parent))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Copies every table of `snapshot` into a new redb file at `path` and commits it durably.
fn copy_into(snapshot: &ReadTransaction, path: &Path) -> Result<RecordCounts, CopyError> {
    let db = redb::Database::builder()
        .set_cache_size(BACKUP_CACHE_BYTES)
        .create(path)
        .or_backend()?;
    let mut txn = db.begin_write().or_backend()?;
    txn.set_durability(Durability::Immediate).or_backend()?;
    txn.set_two_phase_commit(true);
    copy_table(snapshot, &txn, META)?;
    copy_table(snapshot, &txn, DATABASES)?;
    copy_table(snapshot, &txn, DATABASE_API_IDS)?;
    copy_table(snapshot, &txn, DASHBOARDS)?;
    copy_multimap(snapshot, &txn, INHERITED_BY)?;
    copy_table(snapshot, &txn, ACCESS_CONTROL)?;
    copy_table(snapshot, &txn, CALLER_KEYS)?;
    copy_table(snapshot, &txn, CALLER_KEY_DIGESTS)?;
    copy_table(snapshot, &txn, crate::audit::EVENTS)?;
    copy_table(snapshot, &txn, crate::audit::BY_RESOURCE)?;
    copy_table(snapshot, &txn, crate::queries::QUERIES)?;
    copy_table(snapshot, &txn, crate::queries::QUERIES_BY)?;
    copy_table(snapshot, &txn, crate::deliveries::DELIVERIES)?;
    copy_table(snapshot, &txn, crate::deliveries::BY_STATUS)?;
    copy_table(snapshot, &txn, crate::deliveries::DUE)?;
    copy_table(snapshot, &txn, crate::users::USERS)?;
    copy_table(snapshot, &txn, crate::saved_queries::SAVED_QUERIES)?;
    for definition in crate::index::ALL {
        copy_table(snapshot, &txn, definition)?;
    }
    txn.commit().or_backend()?;
    drop(db);
    Ok(counts(snapshot)?)
}

fn copy_table<K: Key + 'static, V: Value + 'static>(
    from: &ReadTransaction,
    to: &WriteTransaction,
    table: TableDefinition<'static, K, V>,
) -> Result<(), StorageError> {
    let source = from.open_table(table).or_backend()?;
    let mut copy = to.open_table(table).or_backend()?;
    for entry in source.iter().or_backend()? {
        let (key, value) = entry.or_backend()?;
        copy.insert(key.value(), value.value()).or_backend()?;
    }
    Ok(())
}

fn copy_multimap<K: Key + 'static, V: Key + 'static>(
    from: &ReadTransaction,
    to: &WriteTransaction,
    table: MultimapTableDefinition<'static, K, V>,
) -> Result<(), StorageError> {
    let source = from.open_multimap_table(table).or_backend()?;
    let mut copy = to.open_multimap_table(table).or_backend()?;
    for entry in source.iter().or_backend()? {
        let (key, values) = entry.or_backend()?;
        for value in values {
            copy.insert(key.value(), value.or_backend()?.value())
                .or_backend()?;
        }
    }
    Ok(())
}
