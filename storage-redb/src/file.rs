//! The data file: creating it private, checking it at open (format version, seal keys) and
//! creating its tables; the handle a store and its writer share ([`Inner`]), reopened after an
//! I/O failure (see the crate documentation, "A full disk, and other I/O failures"); and the
//! readiness probe that tells when writes work again.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

use dbconsole_core::seal::{SealKeyError, SealKeys, Sealer};
use dbconsole_core::storage::{StorageError, record};
use redb::{
    Durability, ReadTransaction, ReadableDatabase, ReadableTable, Table, TableHandle,
    WriteTransaction,
};

use crate::seal_keys::META_SEAL_KEYS;
use crate::tables::{
    ACCESS_CONTROL, CALLER_KEY_DIGESTS, CALLER_KEYS, DASHBOARDS, DATABASE_API_IDS, DATABASES,
    INHERITED_BY, META, OrBackend,
};
use crate::{FORMAT_VERSION, OpenError, RedbStorage, answers, audit, deliveries, index, queries};

const META_FORMAT_VERSION: &str = "format_version";
const META_KEY_CHECK: &str = "key_check";
/// Written and then removed by the readiness probe (see `check_ready`).
const META_PROBE: &str = "probe";

/// The size of the readiness probe's value: 2 MiB, above the largest request body (1 MiB) and
/// the record it makes.
const PROBE_BYTES: usize = 2 * 1024 * 1024;

/// What a store and its writer thread share: the open file and its state.
pub(crate) struct Inner {
    /// The open file. `None` only while a reopen after an I/O failure has not succeeded yet:
    /// reads and writes then answer [`StorageError::Unavailable`] and the next write tries again.
    /// Reads hold the read lock for their transaction; the writer thread takes the write lock
    /// only to reopen.
    pub(crate) db: RwLock<Option<redb::Database>>,
    pub(crate) path: Option<PathBuf>,
    cache_bytes: usize,
    /// A write met an I/O failure and no commit has succeeded since: not ready.
    pub(crate) unready: AtomicBool,
    /// Records recently read, decoded (module `recent`).
    pub(crate) recent: crate::recent::Recent,
}

/// Checks the format version and the seal keys of the open `db`, or initialises a new file,
/// and creates any missing table, in one durable write transaction (see [`OpenError`] for
/// what is refused).
pub(crate) fn check_at_open(db: &redb::Database, sealer: &Sealer) -> Result<(), OpenError> {
    let mut txn = db.begin_write().map_err(redb::Error::from)?;
    txn.set_durability(Durability::Immediate)
        .map_err(redb::Error::from)?;
    txn.set_two_phase_commit(true);
    match check_or_write_meta(&txn, sealer) {
        Ok(()) => txn.commit().map_err(redb::Error::from)?,
        Err(error) => {
            if let Err(abort) = txn.abort() {
                tracing::warn!(error = %abort, "aborting the open transaction failed");
            }
            return Err(error);
        }
    }
    Ok(())
}

/// Creates an empty file with mode 0600 unless one exists (redb then initialises it), so the
/// data file is never readable by other users, even for a moment.
pub(crate) fn create_private_file(path: &Path) -> Result<(), OpenError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(OpenError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Checks the format version and the key of an existing file, or initialises a new one; then
/// creates any missing table.
fn check_or_write_meta(txn: &WriteTransaction, sealer: &Sealer) -> Result<(), OpenError> {
    let redb = |error: redb::TableError| OpenError::Redb(error.into());
    let tables: Vec<String> = txn
        .list_tables()
        .map_err(redb_storage)?
        .map(|table| table.name().to_owned())
        .collect();
    let has_meta = tables.iter().any(|name| name == META.name());
    if !has_meta {
        let other_tables = !tables.is_empty()
            || txn
                .list_multimap_tables()
                .map_err(redb_storage)?
                .next()
                .is_some();
        if other_tables {
            return Err(OpenError::NotDbconsole);
        }
    }
    let mut meta = txn.open_table(META).map_err(redb)?;
    let mut normalize_identities = false;
    if has_meta {
        let version = match meta.get(META_FORMAT_VERSION).map_err(redb_storage)? {
            None => return Err(OpenError::Corrupt("it has no format version")),
            Some(bytes) => <[u8; 4]>::try_from(bytes.value())
                .map(u32::from_le_bytes)
                .map_err(|_| OpenError::Corrupt("its format version is not 4 bytes"))?,
        };
        if version > FORMAT_VERSION {
            return Err(OpenError::NewerFormat {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if version == 0 {
            return Err(OpenError::Corrupt("its format version is 0"));
        }
        let keys = match meta.get(META_SEAL_KEYS).map_err(redb_storage)? {
            Some(keys) => Some(
                record::decode_seal_keys(keys.value())
                    .map_err(|_| OpenError::Corrupt("its seal keys do not decode"))?,
            ),
            None => None,
        };
        let keys = match keys {
            Some(keys) => keys,
            // Format 1: one key check value, of the key that is key 0 now.
            None => match meta.get(META_KEY_CHECK).map_err(redb_storage)? {
                None => return Err(OpenError::Corrupt("it has no key check value")),
                Some(check) => SealKeys::single(0, check.value().to_vec()),
            },
        };
        sealer.adopt(&keys).map_err(|error| match error {
            SealKeyError::Wrong(_) => OpenError::WrongKey,
            other => OpenError::SealKey(other),
        })?;
        // Format 3: user identities in one normal form.
        normalize_identities = version < 3;
        if version < FORMAT_VERSION {
            put_seal_keys(&mut meta, &keys)?;
            meta.remove(META_KEY_CHECK).map_err(redb_storage)?;
            meta.insert(META_FORMAT_VERSION, FORMAT_VERSION.to_le_bytes().as_slice())
                .map_err(redb_storage)?;
        }
    } else {
        let keys = sealer.initial_keys().map_err(|_| OpenError::Random)?;
        meta.insert(META_FORMAT_VERSION, FORMAT_VERSION.to_le_bytes().as_slice())
            .map_err(redb_storage)?;
        put_seal_keys(&mut meta, &keys)?;
    }
    drop(meta);
    if normalize_identities {
        crate::queries::normalize_identities(txn).map_err(OpenError::Index)?;
    }
    txn.open_table(DATABASES).map_err(redb)?;
    txn.open_table(DATABASE_API_IDS).map_err(redb)?;
    txn.open_table(DASHBOARDS).map_err(redb)?;
    txn.open_multimap_table(INHERITED_BY).map_err(redb)?;
    txn.open_table(ACCESS_CONTROL).map_err(redb)?;
    txn.open_table(CALLER_KEYS).map_err(redb)?;
    txn.open_table(CALLER_KEY_DIGESTS).map_err(redb)?;
    txn.open_table(crate::sessions::SESSIONS).map_err(redb)?;
    txn.open_table(crate::users::USERS).map_err(redb)?;
    txn.open_table(crate::users::SETTINGS).map_err(redb)?;
    txn.open_table(crate::saved_queries::SAVED_QUERIES)
        .map_err(redb)?;
    txn.open_table(crate::sessions::SESSION_DIGESTS)
        .map_err(redb)?;
    txn.open_table(audit::EVENTS).map_err(redb)?;
    txn.open_table(audit::BY_RESOURCE).map_err(redb)?;
    txn.open_table(answers::ANSWERS).map_err(redb)?;
    txn.open_table(answers::BY_TIME).map_err(redb)?;
    txn.open_table(queries::QUERIES).map_err(redb)?;
    txn.open_table(queries::QUERIES_BY).map_err(redb)?;
    txn.open_table(deliveries::DELIVERIES).map_err(redb)?;
    txn.open_table(deliveries::BY_STATUS).map_err(redb)?;
    txn.open_table(deliveries::DUE).map_err(redb)?;
    index::build_if_missing(txn).map_err(OpenError::Index)
}

fn put_seal_keys(meta: &mut Table<'_, &str, &[u8]>, keys: &SealKeys) -> Result<(), OpenError> {
    let bytes = record::encode_seal_keys(keys)
        .map_err(|_| OpenError::Corrupt("its seal keys do not encode"))?;
    meta.insert(META_SEAL_KEYS, bytes.as_slice())
        .map_err(redb_storage)?;
    Ok(())
}

fn redb_storage(error: redb::StorageError) -> OpenError {
    OpenError::Redb(error.into())
}

/// The store is being reopened after an I/O failure.
#[derive(Debug, thiserror::Error)]
#[error("the data file is being reopened after an I/O failure")]
struct Reopening;

impl Inner {
    /// The handle of `db`, just opened and checked (`path` is `None` in memory).
    pub(crate) fn new(db: redb::Database, path: Option<PathBuf>, cache_bytes: usize) -> Self {
        Self {
            db: RwLock::new(Some(db)),
            path,
            cache_bytes,
            unready: AtomicBool::new(false),
            recent: crate::recent::Recent::default(),
        }
    }

    pub(crate) fn read<T>(
        &self,
        work: impl FnOnce(&ReadTransaction) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        self.with_db(|db| {
            let txn = db.begin_read().or_backend()?;
            work(&txn)
        })
    }

    /// Runs `work` on the open file, holding it open (a reopen waits for `work` to end). When
    /// no file is open (the last reopen failed), tries to open it first.
    pub(crate) fn with_db<T>(
        &self,
        work: impl FnOnce(&redb::Database) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        if self.closed() {
            self.reopen_if_closed();
        }
        let slot = self.db.read().unwrap_or_else(PoisonError::into_inner);
        match slot.as_ref() {
            Some(db) => work(db),
            None => Err(StorageError::unavailable(Reopening)),
        }
    }

    /// Whether the file is open and no reopen holds it now (a read would not wait).
    pub(crate) fn open_and_free(&self) -> bool {
        match self.db.try_read() {
            Ok(slot) => slot.is_some(),
            Err(std::sync::TryLockError::Poisoned(slot)) => slot.into_inner().is_some(),
            Err(std::sync::TryLockError::WouldBlock) => false,
        }
    }

    /// Whether no file is open (an earlier reopen failed).
    pub(crate) fn closed(&self) -> bool {
        self.db
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Closes the file and opens it again, after an I/O failure made redb refuse every later
    /// operation on its handle. redb repairs the file on open: it finds the last commit that
    /// completed, so everything acknowledged is there and nothing of a failed commit is. Waits
    /// for the reads in flight; reads that come meanwhile wait for the reopen. A store in
    /// memory cannot be reopened (its data is the handle) and is left as it is.
    pub(crate) fn reopen(&self) {
        if self.path.is_none() {
            return;
        }
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        // Closing releases the file's lock, so that it can be opened again.
        drop(slot.take());
        self.open_into(&mut slot);
        // What was read before is read again from the file as it was repaired.
        self.recent.forget();
    }

    /// Opens the file when no handle is open (an earlier reopen failed); a reader that comes
    /// first does it, the others wait for it.
    fn reopen_if_closed(&self) {
        if self.path.is_none() {
            return;
        }
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            self.open_into(&mut slot);
        }
    }

    /// Opens the data file into the empty `slot`, logging how it went.
    fn open_into(&self, slot: &mut Option<redb::Database>) {
        let Some(path) = &self.path else { return };
        let started = std::time::Instant::now();
        match redb::Database::builder()
            .set_cache_size(self.cache_bytes)
            .create(path)
        {
            Ok(db) => {
                tracing::warn!(
                    took_ms = started.elapsed().as_millis() as u64,
                    "reopened the data file after an I/O failure"
                );
                *slot = Some(db);
            }
            Err(error) => {
                tracing::error!(%error, "reopening the data file failed; the next read or write tries again");
            }
        }
    }
}

/// [`Storage::check_ready`](dbconsole_core::storage::Storage::check_ready): the probe, while
/// the last write met an I/O failure and nothing has been committed since.
pub(crate) async fn check_ready(store: &RedbStorage) -> Result<(), StorageError> {
    if !store.inner.unready.load(Ordering::Acquire) {
        return Ok(());
    }
    store
        .write(|_, txn| {
            let mut meta = txn.open_table(META).or_backend()?;
            meta.insert(META_PROBE, vec![0u8; PROBE_BYTES].as_slice())
                .or_backend()?;
            Ok(())
        })
        .await?;
    store
        .write(|_, txn| {
            let mut meta = txn.open_table(META).or_backend()?;
            meta.remove(META_PROBE).or_backend()?;
            Ok(())
        })
        .await
}
