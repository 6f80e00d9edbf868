//! # dbconsole-storage-redb
//!
//! The durable [`Storage`] backend of dbconsole: one [redb] file, secrets encrypted at rest.
//!
//! ## Why redb
//!
//! The control plane keeps a few thousand small records that change rarely and must never be
//! half-written. redb is an embedded, pure-Rust, copy-on-write B-tree store with ACID write
//! transactions: no server to run, one file to back up. It is blocking: writes run on a writer
//! thread of their own and listings on Tokio's blocking pool; a point read (one record by id,
//! `api_id` or key digest) runs on the caller's thread, since one short read transaction served
//! from redb's cache and the page cache costs less than the hop to another thread and back.
//!
//! ## Atomicity and group commit
//!
//! Every [`Storage`] method is **one atomic change**: a database with all its credentials and
//! its `api_id` index entry, a dashboard with all its panels, a delete with its cascade and its
//! guard. Writes go to one writer thread that owns every write transaction: it runs the jobs
//! waiting for it one after the other in one transaction and commits them together (group
//! commit), so under load one commit serves many callers; jobs that arrive during a commit join
//! the next one. Jobs run one at a time, so a compare-and-swap (`replace_*`, `remove_*`) checks
//! the version against the record as the jobs before it left it, exactly as with a transaction
//! each. A job the contract refuses (`Conflict`, `NotFound`, a changed identity, a panic) is
//! answered at once, and whatever it wrote is discarded by aborting and replaying the jobs
//! accepted before it in a fresh transaction, so a job's work may run more than once. A backend failure (redb, a record that does not encode) aborts the whole
//! batch and none of its jobs is acknowledged. A caller that stops waiting (a dropped future)
//! does not cancel its write: it is committed or aborted with its batch.
//!
//! ## Durability
//!
//! Every write transaction commits with [`redb::Durability::Immediate`] (redb's default, set
//! explicitly): "commits with this durability level are guaranteed to be persistent as soon as
//! `commit` returns", i.e. redb has `fsync`ed the file before the operation answers. We also turn
//! on redb's two-phase commit (new state, `fsync`, then the switch to it, `fsync`), in exchange
//! for never having to trust a checksum to pick the live commit after a crash; group commit
//! shares those `fsync`s among every write of a batch. A write is answered only after the
//! commit that holds it returned, so **an operation that answered survives a crash** (process
//! kill or power loss) right after; one that had not answered is either entirely there or
//! entirely absent after a restart (as far as the disk honours `fsync`). After an unclean
//! shutdown redb repairs its allocator state on the next open, which takes longer on a large
//! file. A [`RedbStorage`] holds redb's file lock: a second process (or a second
//! [`RedbStorage::open`] of the same file) is refused with [`OpenError::AlreadyOpen`].
//!
//! ## A full disk, and other I/O failures
//!
//! A write that meets a full disk (`ENOSPC`, `EDQUOT`) answers [`StorageError::Full`]; another
//! I/O failure answers [`StorageError::Unavailable`] (the service answers 503 to both). Its
//! batch is not committed, so it changes nothing, and every write acknowledged before stands.
//! redb then refuses every later operation on that handle, so the writer thread closes the
//! file and opens it again at once, before it answers any job of the failed batch (so a caller
//! told of the failure never meets the latched handle): the open repairs it from its last
//! completed commit (a few milliseconds for a small file, longer for a large one; reads wait
//! meanwhile). Should that open fail too, the next read or write tries again. Reads go on;
//! each later write tries the disk afresh, so writes work again as soon as space is freed, with
//! no restart. Until a commit succeeds, [`Storage::check_ready`] is not ready: it tries a probe
//! write (2 MiB committed, then removed), so readiness comes back by itself once a write of any
//! size would commit.
//!
//! ## Backup and restore
//!
//! [`RedbStorage::backup`] copies the store as of one read transaction into a new data file
//! while writes go on; [`restore`] checks such a file (format, key) and puts it in place as a
//! new data file. Secrets stay sealed in both; see the `backup` module's source for the steps.
//!
//! ## Memory
//!
//! redb keeps the pages it reads in a cache of its own, bounded by
//! [`RedbStorage::open_with_cache`] ([`DEFAULT_CACHE_BYTES`], 16 MiB, by default; redb's own
//! default of 1 GiB let a server's memory grow with what it had read). Pages beyond it come from
//! the operating system's page cache.
//!
//! ## Secrets at rest
//!
//! Credential passwords and TLS material reach the store already sealed by core
//! ([`SealedSecret`](dbconsole_core::model::SealedSecret): XChaCha20-Poly1305 under the
//! deployment's [`SecretKey`](dbconsole_core::SecretKey), each value bound to its place; see [`dbconsole_core::seal`]). The
//! store writes those bytes as they are and reads them back as they are: it never holds the key,
//! and reading a record decrypts nothing. Everything else (names, host names, usernames,
//! dashboards) is stored in clear. The meta table holds the seal keys (`seal_keys`: the current
//! key's id and a key check value of each key the secrets may need, a fixed label sealed under
//! it, [`Sealer::key_check`]), so opening a file with another key fails at once with
//! [`OpenError::WrongKey`] instead of answering garbage later, and a keyring that lacks a key
//! fails with [`OpenError::SealKey`], naming it. A database write whose secrets are not all
//! sealed under the current key is refused ([`StorageError::SealKeyChanged`]).
//!
//! Callers' API keys and access tokens are never stored, encrypted or not: a
//! [`CallerKey`] holds the SHA-256 digest of its secret, and a presented secret is found
//! through the `caller_key_digests` index by its digest.
//!
//! ## Stored format
//!
//! | table | key → value | what |
//! |---|---|---|
//! | `meta` | `&str` → `&[u8]` | `format_version` (u32, little endian), `seal_keys` (format 2; format 1 kept one `key_check`, read as key 0's) |
//! | `databases` | id → record | a database with its credentials |
//! | `database_api_ids` | `api_id` → id | index for lookups and deletes by `api_id` |
//! | `dashboards` | id → record | a dashboard with its panels, actions and input mappings |
//! | `inherited_by` (multimap) | id → ids | databases that inherit this one's data protection policies (the reverse of `inherits_from`); while one does, its delete fails with [`StorageError::Inherited`] |
//! | `access_control` | database id → record | a database's permissions, policies and `inherits_from` (absent: the default, empty one) |
//! | `caller_keys` | key id → record | a caller credential: name, kind, scope, SHA-256 digest, times |
//! | `caller_key_digests` | `[u8; 32]` digest → key id | index for authenticating a presented key |
//! | `audit_events` | event id → event | the audit trail, one event per change, written in the change's transaction |
//! | `audit_by_resource` | (record id, event id) → () | index for one record's events |
//! | `idempotency_answers` | scoped key → answer | the answers of writes made with an `Idempotency-Key`, written in the write's transaction (module `answers`) |
//! | `idempotency_answers_by_time` | (µs, scoped key) → () | index for pruning answers by age |
//! | `queries`, `queries_by` | id → record, (`<field>:<value>`, id) → () | the query history and its filters' index (module `queries`) |
//! | `deliveries`, `deliveries_by_status`, `deliveries_due` | id → record, (status, id) → (), (due µs, id) → () | the outbox, its listing index and the claimable deliveries by due time (module `deliveries`) |
//! | `databases_by_adapter`, `_by_group`, `_by_tunnel`, `_by_name`, `dashboards_by_name` | (value, id) → () | the listing filters' indexes (module `index`) |
//!
//! `inherited_by` is the reverse of `access_control`'s `inherits_from`: every
//! [`Storage::replace_access_control`] that changes `inherits_from` moves the entry in the same
//! transaction (after checking the new target there with
//! [`dbconsole_core::storage::rules::check_access_control`]), and a delete removes the database's access
//! control with its own entry. So the delete guard is an index lookup, not a scan; each heir it
//! finds is confirmed by the heir's own record (the source of truth) before it refuses. A
//! database's access control is deleted with the database, in its transaction.
//!
//! The tables after `inherited_by` came after format 1 was first written; they are additive
//! (no existing record changed), so the format stays 1: a file written before them gets them at
//! its next open (the listing indexes filled from the records, once; the audit trail empty). A
//! file written now and then opened by a build that predates them keeps working for everything
//! that build knows, but what it writes is neither indexed nor audited: a database it deletes
//! leaves its access-control record behind (unreachable: every read first checks that the
//! database exists), possibly a stale `inherited_by` entry (which the guard above ignores) and
//! stale listing entries (a filtered listing checks every record it reads against the filter,
//! so these are skipped), and a record it creates is missing from the filtered listings; and
//! audit events written in the compact form (record version 2) are unreadable to it, so its
//! audit listing fails. Do not go back to an older build on a file a newer one wrote.
//!
//! Lookups by id and by `api_id` are point reads, listings are range scans from `after`, never
//! full scans. A record is one version byte followed by a private struct (separate from
//! [`dbconsole_core::model`], which has no `Serialize` on purpose) encoded with [postcard]:
//! compact, with a specified wire format. Postcard is not self-describing, so a record struct
//! never changes shape: a new shape is a new version byte, and older versions stay readable.
//! The file as a whole carries [`FORMAT_VERSION`] in `meta`; this build opens files up to that
//! version and refuses a newer one with [`OpenError::NewerFormat`] (never misreading it). The
//! `meta` table's own shape never changes.
//!
//! ```no_run
//! use std::path::Path;
//! use std::sync::Arc;
//! use dbconsole_core::{ConsoleService, Keyring, Sealer, StaticCredentials};
//! use dbconsole_storage_redb::RedbStorage;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let keys = match std::env::var("DBCONSOLE_SECRET_KEY") {
//!     Ok(text) => Keyring::from_text(&text)?,
//!     // Outside the data directory: a copy of the data alone reveals no secret.
//!     Err(_) => Keyring::load_or_create(Path::new("/etc/dbconsole/secret.key"))?,
//! };
//! let sealer = Sealer::with_keyring(&keys);
//! let storage = RedbStorage::open(Path::new("data/dbconsole.redb"), &sealer)?;
//! let auth = Arc::new(StaticCredentials::default());
//! let service = ConsoleService::builder(Arc::new(storage), auth, sealer).build();
//! # let _ = service;
//! # Ok(())
//! # }
//! ```
//!
//! [redb]: https://www.redb.org
//! [postcard]: https://docs.rs/postcard

mod answers;
mod audit_trail;
mod backup;
mod deliveries;
mod error;
mod index;
mod queries;
mod writer;

use std::fmt;
use std::fs;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use dbconsole_core::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Delivery, DeliveryStatus, Query,
    Retention, StoredAnswer, TargetKind, Timestamp,
};
use dbconsole_core::seal::{SealKeyError, SealKeys, Sealer};
use dbconsole_core::storage::{
    AuditQuery, DashboardFilter, DatabaseFilter, DatabaseRef, Page, QueryFilter, RecordCounts,
    Storage, StorageError, WriteLog, audit, rules,
};
use redb::backends::InMemoryBackend;
use redb::{
    Durability, MultimapTableDefinition, ReadTransaction, ReadableDatabase, ReadableMultimapTable,
    ReadableTable, ReadableTableMetadata, Table, TableDefinition, TableHandle, WriteTransaction,
};

pub use crate::backup::{Copied, CopyError, restore};
pub use crate::error::OpenError;
use dbconsole_core::storage::record::{self, RecordError};

/// redb's page cache when none is given: 16 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// The format version of files this build writes, and the newest it opens. Version 2 keeps
/// the seal keys (`seal_keys`) instead of one key check value (`key_check`, read as key 0's);
/// a version 1 file is upgraded when it is opened.
pub const FORMAT_VERSION: u32 = 2;

const META: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("meta");
const DATABASES: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("databases");
const DATABASE_API_IDS: TableDefinition<'static, &str, &str> =
    TableDefinition::new("database_api_ids");
const DASHBOARDS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("dashboards");
const INHERITED_BY: MultimapTableDefinition<'static, &str, &str> =
    MultimapTableDefinition::new("inherited_by");
const ACCESS_CONTROL: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("access_control");
const CALLER_KEYS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("caller_keys");
const CALLER_KEY_DIGESTS: TableDefinition<'static, &[u8; 32], &str> =
    TableDefinition::new("caller_key_digests");

const META_FORMAT_VERSION: &str = "format_version";
const META_KEY_CHECK: &str = "key_check";
const META_SEAL_KEYS: &str = "seal_keys";
/// Written and then removed by the readiness probe (see `check_ready`).
const META_PROBE: &str = "probe";

/// The size of the readiness probe's value: 2 MiB, above the largest request body (1 MiB) and
/// the record it makes.
const PROBE_BYTES: usize = 2 * 1024 * 1024;

/// The redb backend. Open it once per process and share it with `Arc`; see the
/// [crate documentation](crate) for what it guarantees.
pub struct RedbStorage {
    inner: Arc<Inner>,
    writer: writer::Writer,
}

struct Inner {
    /// The open file. `None` only while a reopen after an I/O failure has not succeeded yet:
    /// reads and writes then answer [`StorageError::Unavailable`] and the next write tries again.
    /// Reads hold the read lock for their transaction; the writer thread takes the write lock
    /// only to reopen.
    db: RwLock<Option<redb::Database>>,
    path: Option<PathBuf>,
    cache_bytes: usize,
    /// A write met an I/O failure and no commit has succeeded since: not ready.
    unready: AtomicBool,
}

impl fmt::Debug for RedbStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedbStorage")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl RedbStorage {
    /// Opens the data file at `path`, creating it (mode 0600 on Unix) and its parent directory
    /// when missing. A new file is initialised with the current format and a key check value
    /// of `sealer`'s key; an existing one must have been written with the same key, in a format
    /// this build reads. Give the service the same sealer. Blocking: call it before serving, or
    /// from a blocking thread. redb's page cache is [`DEFAULT_CACHE_BYTES`]; see
    /// [`RedbStorage::open_with_cache`].
    pub fn open(path: &Path, sealer: &Sealer) -> Result<Self, OpenError> {
        Self::open_with_cache(path, sealer, DEFAULT_CACHE_BYTES)
    }

    /// [`RedbStorage::open`] with a page cache of `cache_bytes`. The cache bounds what redb
    /// keeps in memory whatever the size of the file (redb's own default is 1 GiB, which a
    /// process fills as it reads); pages it does not hold are read from the operating system's
    /// page cache, so a smaller cache costs little while the file fits in RAM.
    pub fn open_with_cache(
        path: &Path,
        sealer: &Sealer,
        cache_bytes: usize,
    ) -> Result<Self, OpenError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(|source| OpenError::Io {
                path: parent.to_owned(),
                source,
            })?;
        }
        create_private_file(path)?;
        let db = redb::Database::builder()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(|error| match error {
                redb::DatabaseError::DatabaseAlreadyOpen => OpenError::AlreadyOpen {
                    path: path.to_owned(),
                },
                other => OpenError::Redb(other.into()),
            })?;
        Self::initialise(db, sealer, Some(path.to_owned()), cache_bytes)
    }

    /// A store in memory (redb's [`InMemoryBackend`]): the same code paths as a file, nothing
    /// survives the process. For tests.
    pub fn in_memory(sealer: &Sealer) -> Result<Self, OpenError> {
        let db = redb::Database::builder()
            .create_with_backend(InMemoryBackend::new())
            .map_err(redb::Error::from)?;
        Self::initialise(db, sealer, None, 0)
    }

    /// The data file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    fn initialise(
        db: redb::Database,
        sealer: &Sealer,
        path: Option<PathBuf>,
        cache_bytes: usize,
    ) -> Result<Self, OpenError> {
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
        let inner = Arc::new(Inner {
            db: RwLock::new(Some(db)),
            path,
            cache_bytes,
            unready: AtomicBool::new(false),
        });
        let writer = writer::Writer::start(Arc::clone(&inner)).map_err(OpenError::Thread)?;
        Ok(Self { inner, writer })
    }

    /// Runs a point read here, on the caller's thread: one short read transaction, served from
    /// redb's cache and the page cache, is cheaper than the hop to the blocking pool and back
    /// (which cost most of a GET). Listings and every write still run on the blocking pool.
    ///
    /// Only while the file is open and free, though: while the writer reopens it after an I/O
    /// failure (the read would wait for the reopen), or when it must be opened first, the read
    /// runs in [`tokio::task::block_in_place`] on a multi-thread runtime, so the async worker's
    /// other tasks move on instead of waiting behind it.
    fn read_now<T>(
        &self,
        work: impl FnOnce(&Inner) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        if self.inner.open_and_free() {
            return work(&self.inner);
        }
        match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| work(&self.inner))
            }
            _ => work(&self.inner),
        }
    }

    /// Runs `work` in a write transaction of the writer thread (group commit, see `writer.rs`);
    /// answers once the commit that holds its change is durable. `work` may run more than once
    /// (when a job before it in the batch is refused). A panic in it is resumed here.
    async fn write<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnMut(&Inner, &WriteTransaction) -> Result<T, StorageError> + Send + 'static,
    {
        match self.writer.submit(work).await {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Runs `work` on the blocking pool. A panic in it is resumed here.
    async fn run<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, StorageError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        match tokio::task::spawn_blocking(move || work(&inner)).await {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => Err(StorageError::backend(error)),
        }
    }
}

/// Creates an empty file with mode 0600 unless one exists (redb then initialises it), so the
/// data file is never readable by other users, even for a moment.
fn create_private_file(path: &Path) -> Result<(), OpenError> {
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
    txn.open_table(DATABASES).map_err(redb)?;
    txn.open_table(DATABASE_API_IDS).map_err(redb)?;
    txn.open_table(DASHBOARDS).map_err(redb)?;
    txn.open_multimap_table(INHERITED_BY).map_err(redb)?;
    txn.open_table(ACCESS_CONTROL).map_err(redb)?;
    txn.open_table(CALLER_KEYS).map_err(redb)?;
    txn.open_table(CALLER_KEY_DIGESTS).map_err(redb)?;
    txn.open_table(audit_trail::EVENTS).map_err(redb)?;
    txn.open_table(audit_trail::BY_RESOURCE).map_err(redb)?;
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

/// The seal keys, as stored in the meta table of this transaction.
fn seal_keys_of(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<SealKeys, StorageError> {
    let bytes = meta
        .get(META_SEAL_KEYS)
        .or_backend()?
        .ok_or_else(|| StorageError::backend(RecordError::Empty))?;
    Ok(record::decode_seal_keys(bytes.value())?)
}

fn redb_storage(error: redb::StorageError) -> OpenError {
    OpenError::Redb(error.into())
}

/// Maps redb's errors into storage errors: [`StorageError::Full`] for a full disk,
/// [`StorageError::Unavailable`] for other I/O failures, else [`StorageError::Backend`].
trait OrBackend<T> {
    fn or_backend(self) -> Result<T, StorageError>;
}

impl<T, E: Into<redb::Error>> OrBackend<T> for Result<T, E> {
    fn or_backend(self) -> Result<T, StorageError> {
        self.map_err(|error| error::storage_error(error.into()))
    }
}

/// How many databases, dashboards and caller keys `txn` sees (the tables' lengths, no scan).
fn counts(txn: &ReadTransaction) -> Result<RecordCounts, StorageError> {
    let count = |table: &dyn ReadableTableMetadata| table.len().or_backend();
    Ok(RecordCounts {
        databases: count(&txn.open_table(DATABASES).or_backend()?)?,
        dashboards: count(&txn.open_table(DASHBOARDS).or_backend()?)?,
        caller_keys: count(&txn.open_table(CALLER_KEYS).or_backend()?)?,
    })
}

/// The store is being reopened after an I/O failure.
#[derive(Debug, thiserror::Error)]
#[error("the data file is being reopened after an I/O failure")]
struct Reopening;

type BytesTable<'txn> = Table<'txn, &'static str, &'static [u8]>;

impl Inner {
    fn read<T>(
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
    fn with_db<T>(
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
    fn open_and_free(&self) -> bool {
        match self.db.try_read() {
            Ok(slot) => slot.is_some(),
            Err(std::sync::TryLockError::Poisoned(slot)) => slot.into_inner().is_some(),
            Err(std::sync::TryLockError::WouldBlock) => false,
        }
    }

    /// Whether no file is open (an earlier reopen failed).
    fn closed(&self) -> bool {
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
    fn reopen(&self) {
        if self.path.is_none() {
            return;
        }
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        // Closing releases the file's lock, so that it can be opened again.
        drop(slot.take());
        self.open_into(&mut slot);
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

    fn get_database(
        &self,
        databases: &impl ReadableTable<&'static str, &'static [u8]>,
        id: &str,
    ) -> Result<Option<Database>, StorageError> {
        match databases.get(id).or_backend()? {
            None => Ok(None),
            Some(bytes) => Ok(Some(record::decode_database(id, bytes.value())?)),
        }
    }

    fn id_by_api_id(
        api_ids: &impl ReadableTable<&'static str, &'static str>,
        api_id: &str,
    ) -> Result<Option<String>, StorageError> {
        Ok(api_ids
            .get(api_id)
            .or_backend()?
            .map(|id| id.value().to_owned()))
    }

    /// Stores a database and its `api_id` index entry.
    fn put_database(
        &self,
        databases: &mut BytesTable<'_>,
        api_ids: &mut Table<'_, &'static str, &'static str>,
        database: &Database,
    ) -> Result<(), StorageError> {
        let bytes = record::encode_database(database)?;
        let id = database.id.as_str();
        databases.insert(id, bytes.as_slice()).or_backend()?;
        if let Some(api_id) = &database.api_id {
            api_ids.insert(api_id.as_str(), id).or_backend()?;
        }
        Ok(())
    }
}

/// The access control stored for database `id` (`None`: none was written, i.e. the default).
fn get_access(
    access: &impl ReadableTable<&'static str, &'static [u8]>,
    id: &str,
) -> Result<Option<AccessControl>, StorageError> {
    match access.get(id).or_backend()? {
        None => Ok(None),
        Some(bytes) => Ok(Some(record::decode_access_control(id, bytes.value())?)),
    }
}

/// The records of a table from `page.after` (exclusive), at most `page.limit` of them.
fn page<T>(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    page: Page<'_>,
    mut decode: impl FnMut(&str, &[u8]) -> Result<T, RecordError>,
) -> Result<Vec<T>, StorageError> {
    let start = match page.after {
        Some(after) => Bound::Excluded(after),
        None => Bound::Unbounded,
    };
    let mut records = Vec::new();
    if page.limit == 0 {
        return Ok(records);
    }
    for entry in table
        .range::<&str>((start, Bound::Unbounded))
        .or_backend()?
    {
        let (key, value) = entry.or_backend()?;
        records.push(decode(key.value(), value.value())?);
        if records.len() == page.limit {
            break;
        }
    }
    Ok(records)
}

#[async_trait]
impl Storage for RedbStorage {
    async fn create_database(&self, database: Database, log: WriteLog) -> Result<(), StorageError> {
        self.write(move |inner, txn| {
            let mut databases = txn.open_table(DATABASES).or_backend()?;
            let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
            let id_taken = databases.get(database.id.as_str()).or_backend()?.is_some();
            let api_id_taken = match &database.api_id {
                Some(api_id) => api_ids.get(api_id.as_str()).or_backend()?.is_some(),
                None => false,
            };
            if id_taken || api_id_taken {
                return Err(StorageError::AlreadyExists);
            }
            let meta = txn.open_table(META).or_backend()?;
            rules::check_sealed(&database, &seal_keys_of(&meta)?)?;
            inner.put_database(&mut databases, &mut api_ids, &database)?;
            index::reindex_database(txn, None, Some(&database))?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn database(&self, id: &str) -> Result<Option<Database>, StorageError> {
        self.read_now(|inner| {
            inner.read(|txn| {
                let databases = txn.open_table(DATABASES).or_backend()?;
                inner.get_database(&databases, id)
            })
        })
    }

    async fn database_by_api_id(&self, api_id: &str) -> Result<Option<Database>, StorageError> {
        self.read_now(|inner| {
            inner.read(|txn| {
                let api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
                let Some(id) = Inner::id_by_api_id(&api_ids, api_id)? else {
                    return Ok(None);
                };
                let databases = txn.open_table(DATABASES).or_backend()?;
                inner.get_database(&databases, &id)
            })
        })
    }

    async fn list_databases(
        &self,
        request: Page<'_>,
        filter: DatabaseFilter<'_>,
    ) -> Result<Vec<Database>, StorageError> {
        let after = request.after.map(str::to_owned);
        let limit = request.limit;
        let adapter = filter.adapter;
        let [group, name_prefix, api_id, tunnel_id] = [
            filter.group,
            filter.name_prefix,
            filter.api_id,
            filter.tunnel_id,
        ]
        .map(|value| value.map(str::to_owned));
        self.run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                let filter = DatabaseFilter {
                    adapter,
                    group: group.as_deref(),
                    name_prefix: name_prefix.as_deref(),
                    api_id: api_id.as_deref(),
                    tunnel_id: tunnel_id.as_deref(),
                };
                if let Some(found) = index::list_databases(txn, request, filter)? {
                    return Ok(found);
                }
                let databases = txn.open_table(DATABASES).or_backend()?;
                page(&databases, request, record::decode_database)
            })
        })
        .await
    }

    async fn replace_database(
        &self,
        database: Database,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        self.write(move |inner, txn| {
            let mut databases = txn.open_table(DATABASES).or_backend()?;
            let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
            let stored = inner
                .get_database(&databases, database.id.as_str())?
                .ok_or(StorageError::NotFound)?;
            rules::check_version(&stored.updated_at, &expected)?;
            rules::check_identity(&stored, &database)?;
            let meta = txn.open_table(META).or_backend()?;
            rules::check_sealed(&database, &seal_keys_of(&meta)?)?;
            inner.put_database(&mut databases, &mut api_ids, &database)?;
            index::reindex_database(txn, Some(&stored), Some(&database))?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn remove_database(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let id = id.to_owned();
        self.write(move |inner, txn| {
            let mut databases = txn.open_table(DATABASES).or_backend()?;
            let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
            let mut access = txn.open_table(ACCESS_CONTROL).or_backend()?;
            let mut inherited_by = txn.open_multimap_table(INHERITED_BY).or_backend()?;
            let removed = inner
                .get_database(&databases, &id)?
                .ok_or(StorageError::NotFound)?;
            rules::check_version(&removed.updated_at, &expected)?;

            // The guard: databases that inherit this one's data protection policies, from
            // the index. Each entry
            // is confirmed by the heir's own record, the source of truth: an entry that an
            // older build left behind (it deleted an heir without knowing the index) does
            // not block the delete, and goes with it.
            let mut heirs = Vec::new();
            for heir in inherited_by.get(id.as_str()).or_backend()? {
                let heir = heir.or_backend()?.value().to_owned();
                let Some(bytes) = databases.get(heir.as_str()).or_backend()? else {
                    continue;
                };
                let inherits =
                    get_access(&access, &heir)?.and_then(|a| a.data_protection.inherits_from);
                if inherits.as_deref() == Some(id.as_str()) {
                    let name = record::decode_database_name(&heir, bytes.value())?;
                    heirs.push(DatabaseRef { id: heir, name });
                }
            }
            rules::guard_delete(heirs)?;

            databases.remove(id.as_str()).or_backend()?;
            if let Some(api_id) = &removed.api_id {
                api_ids.remove(api_id.as_str()).or_backend()?;
            }
            // Its access control goes with it, and with that its own inheritance edge.
            let own = match access.remove(id.as_str()).or_backend()? {
                None => None,
                Some(bytes) => {
                    record::decode_access_control(&id, bytes.value())?
                        .data_protection
                        .inherits_from
                }
            };
            if let Some(target) = own {
                inherited_by
                    .remove(target.as_str(), id.as_str())
                    .or_backend()?;
            }
            inherited_by.remove_all(id.as_str()).or_backend()?;
            index::reindex_database(txn, Some(&removed), None)?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn create_dashboard(
        &self,
        dashboard: Dashboard,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        self.write(move |_, txn| {
            let mut dashboards = txn.open_table(DASHBOARDS).or_backend()?;
            let id = dashboard.id.as_str();
            if dashboards.get(id).or_backend()?.is_some() {
                return Err(StorageError::AlreadyExists);
            }
            let bytes = record::encode_dashboard(&dashboard)?;
            dashboards.insert(id, bytes.as_slice()).or_backend()?;
            index::reindex_dashboard(txn, None, Some(&dashboard))?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError> {
        self.read_now(|inner| {
            inner.read(|txn| {
                let dashboards = txn.open_table(DASHBOARDS).or_backend()?;
                match dashboards.get(id).or_backend()? {
                    None => Ok(None),
                    Some(bytes) => Ok(Some(record::decode_dashboard(id, bytes.value())?)),
                }
            })
        })
    }

    async fn list_dashboards(
        &self,
        request: Page<'_>,
        filter: DashboardFilter<'_>,
    ) -> Result<Vec<Dashboard>, StorageError> {
        let after = request.after.map(str::to_owned);
        let limit = request.limit;
        let name_prefix = filter.name_prefix.map(str::to_owned);
        self.run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                let filter = DashboardFilter {
                    name_prefix: name_prefix.as_deref(),
                };
                if let Some(found) = index::list_dashboards(txn, request, filter)? {
                    return Ok(found);
                }
                let dashboards = txn.open_table(DASHBOARDS).or_backend()?;
                page(&dashboards, request, record::decode_dashboard)
            })
        })
        .await
    }

    async fn replace_dashboard(
        &self,
        dashboard: Dashboard,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        self.write(move |_, txn| {
            let mut dashboards = txn.open_table(DASHBOARDS).or_backend()?;
            let id = dashboard.id.as_str();
            let stored = match dashboards.get(id).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_dashboard(id, bytes.value())?,
            };
            rules::check_version(&stored.updated_at, &expected)?;
            let bytes = record::encode_dashboard(&dashboard)?;
            dashboards.insert(id, bytes.as_slice()).or_backend()?;
            index::reindex_dashboard(txn, Some(&stored), Some(&dashboard))?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn remove_dashboard(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let id = id.to_owned();
        self.write(move |_, txn| {
            let mut dashboards = txn.open_table(DASHBOARDS).or_backend()?;
            let stored = match dashboards.get(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_dashboard(&id, bytes.value())?,
            };
            rules::check_version(&stored.updated_at, &expected)?;
            dashboards.remove(id.as_str()).or_backend()?;
            index::reindex_dashboard(txn, Some(&stored), None)?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError> {
        let id = database_id.to_owned();
        self.read_now(|inner| {
            inner.read(|txn| {
                let databases = txn.open_table(DATABASES).or_backend()?;
                if databases.get(id.as_str()).or_backend()?.is_none() {
                    return Ok(None);
                }
                let access = txn.open_table(ACCESS_CONTROL).or_backend()?;
                Ok(Some(get_access(&access, &id)?.unwrap_or_default()))
            })
        })
    }

    async fn replace_access_control(
        &self,
        database_id: &str,
        expected: AccessControl,
        updated: AccessControl,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let id = database_id.to_owned();
        self.write(move |_, txn| {
            let databases = txn.open_table(DATABASES).or_backend()?;
            let mut access = txn.open_table(ACCESS_CONTROL).or_backend()?;
            let mut inherited_by = txn.open_multimap_table(INHERITED_BY).or_backend()?;
            if databases.get(id.as_str()).or_backend()?.is_none() {
                return Err(StorageError::NotFound);
            }
            let stored = get_access(&access, &id)?.unwrap_or_default();
            rules::check_version(&stored, &expected)?;
            rules::check_access_control(&id, &updated, |other| {
                if databases.get(other).or_backend()?.is_none() {
                    return Ok(None);
                }
                let inherits =
                    get_access(&access, other)?.and_then(|a| a.data_protection.inherits_from);
                Ok(Some(inherits))
            })?;
            let before = stored.data_protection.inherits_from.as_deref();
            let after = updated.data_protection.inherits_from.as_deref();
            if before != after {
                if let Some(old) = before {
                    inherited_by.remove(old, id.as_str()).or_backend()?;
                }
                if let Some(new) = after {
                    inherited_by.insert(new, id.as_str()).or_backend()?;
                }
            }
            let bytes = record::encode_access_control(&id, &updated)?;
            access.insert(id.as_str(), bytes.as_slice()).or_backend()?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn create_caller_key(&self, key: CallerKey, log: WriteLog) -> Result<(), StorageError> {
        self.write(move |_, txn| {
            let mut keys = txn.open_table(CALLER_KEYS).or_backend()?;
            let mut digests = txn.open_table(CALLER_KEY_DIGESTS).or_backend()?;
            let id = key.id.as_str();
            let id_taken = keys.get(id).or_backend()?.is_some();
            if id_taken || digests.get(&key.digest).or_backend()?.is_some() {
                return Err(StorageError::AlreadyExists);
            }
            let bytes = record::encode_caller_key(&key)?;
            keys.insert(id, bytes.as_slice()).or_backend()?;
            digests.insert(&key.digest, id).or_backend()?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn caller_key(&self, id: &str) -> Result<Option<CallerKey>, StorageError> {
        self.read_now(|inner| {
            inner.read(|txn| {
                let keys = txn.open_table(CALLER_KEYS).or_backend()?;
                match keys.get(id).or_backend()? {
                    None => Ok(None),
                    Some(bytes) => Ok(Some(record::decode_caller_key(id, bytes.value())?)),
                }
            })
        })
    }

    async fn caller_key_by_digest(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<CallerKey>, StorageError> {
        let digest = *digest;
        self.read_now(|inner| {
            inner.read(|txn| {
                let digests = txn.open_table(CALLER_KEY_DIGESTS).or_backend()?;
                let Some(id) = digests.get(&digest).or_backend()? else {
                    return Ok(None);
                };
                let keys = txn.open_table(CALLER_KEYS).or_backend()?;
                match keys.get(id.value()).or_backend()? {
                    None => Ok(None),
                    Some(bytes) => Ok(Some(record::decode_caller_key(id.value(), bytes.value())?)),
                }
            })
        })
    }

    async fn list_caller_keys(&self) -> Result<Vec<CallerKey>, StorageError> {
        self.run(move |inner| {
            inner.read(|txn| {
                let keys = txn.open_table(CALLER_KEYS).or_backend()?;
                let every = Page {
                    after: None,
                    limit: usize::MAX,
                };
                page(&keys, every, record::decode_caller_key)
            })
        })
        .await
    }

    /// Not ready while the last write met an I/O failure (a full disk) and nothing has been
    /// committed since. Then a probe tells whether writes work again: it commits a value as
    /// large as the largest request (2 MiB) and removes it in a second commit, so
    /// that it needs as much free space as any write does.
    async fn check_ready(&self) -> Result<(), StorageError> {
        if !self.inner.unready.load(Ordering::Acquire) {
            return Ok(());
        }
        self.write(|_, txn| {
            let mut meta = txn.open_table(META).or_backend()?;
            meta.insert(META_PROBE, vec![0u8; PROBE_BYTES].as_slice())
                .or_backend()?;
            Ok(())
        })
        .await?;
        self.write(|_, txn| {
            let mut meta = txn.open_table(META).or_backend()?;
            meta.remove(META_PROBE).or_backend()?;
            Ok(())
        })
        .await
    }

    async fn record_counts(&self) -> Result<RecordCounts, StorageError> {
        self.read_now(|inner| inner.read(counts))
    }

    async fn seal_keys(&self) -> Result<SealKeys, StorageError> {
        self.read_now(|inner| {
            inner.read(|txn| {
                let meta = txn.open_table(META).or_backend()?;
                seal_keys_of(&meta)
            })
        })
    }

    /// Checks every stored database in the writer when `keys` drops a key: a scan, made once
    /// per rotation.
    async fn replace_seal_keys(
        &self,
        expected: &SealKeys,
        keys: SealKeys,
    ) -> Result<(), StorageError> {
        let expected = expected.clone();
        self.write(move |_, txn| {
            let mut meta = txn.open_table(META).or_backend()?;
            let stored = seal_keys_of(&meta)?;
            let databases = txn.open_table(DATABASES).or_backend()?;
            let all = databases.iter().or_backend()?.map(|entry| {
                let (key, value) = entry.or_backend()?;
                Ok(record::decode_database(key.value(), value.value())?)
            });
            rules::check_seal_keys(&stored, &expected, &keys, all)?;
            let bytes = record::encode_seal_keys(&keys)?;
            meta.insert(META_SEAL_KEYS, bytes.as_slice()).or_backend()?;
            Ok(())
        })
        .await
    }

    async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        let id = id.to_owned();
        self.write(move |_, txn| {
            let mut keys = txn.open_table(CALLER_KEYS).or_backend()?;
            let mut key = match keys.get(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_caller_key(&id, bytes.value())?,
            };
            if key.last_used_at < Some(at) {
                key.last_used_at = Some(at);
                let bytes = record::encode_caller_key(&key)?;
                keys.insert(id.as_str(), bytes.as_slice()).or_backend()?;
            }
            Ok(())
        })
        .await
    }

    async fn remove_caller_key(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        let id = id.to_owned();
        self.write(move |_, txn| {
            let mut keys = txn.open_table(CALLER_KEYS).or_backend()?;
            let mut digests = txn.open_table(CALLER_KEY_DIGESTS).or_backend()?;
            let removed = match keys.remove(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_caller_key(&id, bytes.value())?,
            };
            digests.remove(&removed.digest).or_backend()?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn create_query(&self, query: Query, log: WriteLog) -> Result<(), StorageError> {
        self.write(move |_, txn| {
            queries::put(txn, &query, None)?;
            audit_trail::append(txn, &log)
        })
        .await
    }

    async fn query(&self, id: &str) -> Result<Option<Query>, StorageError> {
        self.read_now(|inner| inner.read(|txn| queries::get(txn, id)))
    }

    async fn list_queries(
        &self,
        request: Page<'_>,
        filter: QueryFilter<'_>,
    ) -> Result<Vec<Query>, StorageError> {
        let after = request.after.map(str::to_owned);
        let limit = request.limit;
        let database_id = filter.database_id.map(str::to_owned);
        let author = filter.author.map(str::to_owned);
        let status = filter.status;
        self.run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                let filter = QueryFilter {
                    database_id: database_id.as_deref(),
                    author: author.as_deref(),
                    status,
                };
                queries::list(txn, request, filter)
            })
        })
        .await
    }

    async fn replace_query(
        &self,
        query: Query,
        expected: Timestamp,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        self.write(move |_, txn| {
            queries::put(txn, &query, Some(expected))?;
            match &log {
                Some(log) => audit_trail::append(txn, log),
                None => Ok(()),
            }
        })
        .await
    }

    async fn append_log(&self, log: WriteLog) -> Result<(), StorageError> {
        self.write(move |_, txn| audit_trail::append(txn, &log))
            .await
    }

    async fn claim_deliveries(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
        kinds: &[TargetKind],
    ) -> Result<Vec<Delivery>, StorageError> {
        // Looked at in a read first: an idle outbox costs its pollers no durable write.
        if !self.read_now(|inner| inner.read(|txn| deliveries::any_due(txn, now)))? {
            return Ok(Vec::new());
        }
        let kinds = kinds.to_vec();
        self.write(move |_, txn| deliveries::claim(txn, now, lease_until, limit, &kinds))
            .await
    }

    async fn delivery(&self, id: &str) -> Result<Option<Delivery>, StorageError> {
        self.read_now(|inner| inner.read(|txn| deliveries::get(txn, id)))
    }

    async fn list_deliveries(
        &self,
        request: Page<'_>,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<Delivery>, StorageError> {
        let after = request.after.map(str::to_owned);
        let limit = request.limit;
        self.run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                deliveries::list(txn, request, status)
            })
        })
        .await
    }

    async fn replace_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        self.write(move |_, txn| {
            deliveries::put(txn, &delivery, Some(expected))?;
            match &log {
                Some(log) => audit_trail::append(txn, log),
                None => Ok(()),
            }
        })
        .await
    }

    async fn stored_answer(&self, key: &str) -> Result<Option<StoredAnswer>, StorageError> {
        self.read_now(|inner| inner.read(|txn| answers::get(txn, key)))
    }

    async fn prune_answers(&self, before: Timestamp) -> Result<u64, StorageError> {
        self.write(move |_, txn| answers::prune(txn, before)).await
    }

    async fn list_audit(&self, query: AuditQuery<'_>) -> Result<Vec<AuditEvent>, StorageError> {
        let resource = query.resource.map(str::to_owned);
        let after = query.after.map(str::to_owned);
        let limit = query.limit;
        self.run(move |inner| {
            inner.read(|txn| {
                let query = AuditQuery {
                    resource: resource.as_deref(),
                    after: after.as_deref(),
                    limit,
                };
                audit_trail::list(txn, query)
            })
        })
        .await
    }

    async fn prune_audit(&self, retention: Retention, now: Timestamp) -> Result<u64, StorageError> {
        let cutoff = audit::cutoff(retention, now);
        self.write(move |_, txn| audit_trail::prune(txn, cutoff, retention.max_events))
            .await
    }
}

#[cfg(test)]
mod tests {
    use dbconsole_core::model::{
        Adapter, Credential, CredentialId, DatabaseId, SealedSecret, Timestamp, TlsMaterial,
    };
    use dbconsole_core::storage::testing::origin;
    use dbconsole_core::storage::{DatabaseKey, Edits as _};
    use redb::ReadableTableMetadata;

    use super::*;

    pub(crate) fn sample_database(name: &str, api_id: Option<&str>) -> Database {
        let now = Timestamp::now();
        Database {
            id: DatabaseId::generate(),
            api_id: api_id.map(str::to_owned),
            name: name.to_owned(),
            adapter: Adapter::Postgres,
            hostname: "db.internal".to_owned(),
            port: None,
            database: "orders".to_owned(),
            ssl: true,
            verify_server_hostname: false,
            restrict_access: false,
            review_bypass_allowed: false,
            group: None,
            slack_channel: None,
            tunnel_id: None,
            ai_enabled: false,
            ai_max_rows: 100,
            connection_parameters: Vec::new(),
            credentials: vec![Credential {
                id: CredentialId::generate(),
                username: "reader".to_owned(),
                password: Some(SealedSecret::from_stored(b"sealed-pw".to_vec())),
                hostname: None,
                ai_allowed: false,
                timeout: None,
                reviews_required: 0,
                default_credential: true,
            }],
            tls: TlsMaterial {
                ca_cert: Some(SealedSecret::from_stored(b"sealed-ca".to_vec())),
                ..TlsMaterial::default()
            },
            inserted_at: now,
            updated_at: now,
        }
    }

    fn store() -> RedbStorage {
        RedbStorage::in_memory(&Sealer::ephemeral().unwrap()).unwrap()
    }

    /// A point read that would wait for a reopen does not hold its async worker: with one
    /// worker, another task still runs while the read waits for the file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_read_waiting_for_a_reopen_leaves_the_worker_to_other_tasks() {
        let storage = Arc::new(store());
        let database = sample_database("Waits", None);
        storage
            .insert_database(database.clone(), origin())
            .await
            .unwrap();
        // A reopen in progress: the file's slot write-locked until `release` (or 10 s).
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (locked, is_locked) = std::sync::mpsc::channel::<()>();
        let held = Arc::new(AtomicBool::new(true));
        let holder = {
            let (storage, held) = (Arc::clone(&storage), Arc::clone(&held));
            std::thread::spawn(move || {
                let slot = storage.inner.db.write().unwrap();
                locked.send(()).unwrap();
                let _ = released.recv_timeout(std::time::Duration::from_secs(10));
                held.store(false, Ordering::SeqCst);
                drop(slot);
            })
        };
        is_locked.recv().unwrap();
        let read = {
            let (storage, id) = (Arc::clone(&storage), database.id.clone());
            tokio::spawn(async move { storage.database(id.as_str()).await })
        };
        // Let the read reach the lock (ordering only; what is checked is an event).
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let other = {
            let held = Arc::clone(&held);
            tokio::spawn(async move { held.load(Ordering::SeqCst) })
        };
        let ran_while_held = other.await.unwrap();
        release.send(()).ok();
        holder.join().unwrap();
        assert!(
            ran_while_held,
            "another task ran only once the read was done: the read held the worker"
        );
        assert_eq!(read.await.unwrap().unwrap(), Some(database));
    }

    /// Group commit: many writes at once share transactions. A job that writes and then
    /// refuses (or panics) leaves nothing, and every other write of its batch is stored and
    /// answered as if alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_refused_write_leaves_nothing_and_fails_no_other_write_of_its_batch() {
        let storage = Arc::new(store());
        let mut tasks = Vec::new();
        for n in 0..90 {
            let storage = Arc::clone(&storage);
            tasks.push(tokio::spawn(async move {
                let database = sample_database(&format!("db {n}"), Some(&format!("ext-{n}")));
                let id = database.id.clone();
                let write = storage.write(move |inner, txn| {
                    let mut databases = txn.open_table(DATABASES).or_backend()?;
                    let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
                    inner.put_database(&mut databases, &mut api_ids, &database)?;
                    match n % 3 {
                        0 => Err(StorageError::IdentityChanged),
                        1 if n % 5 == 1 => panic!("an edit closure panicked after writing"),
                        _ => Ok(()),
                    }
                });
                (n, id, write.await)
            }));
        }
        let mut stored = 0;
        for task in tasks {
            let (n, id, result) = match task.await {
                Ok(done) => done,
                Err(error) if error.is_panic() => continue,
                Err(error) => panic!("{error}"),
            };
            let found = storage.database(id.as_str()).await.unwrap();
            if n % 3 == 0 {
                assert!(matches!(result, Err(StorageError::IdentityChanged)), "{n}");
                assert_eq!(found, None, "the refused write {n} left its record");
            } else {
                assert!(result.is_ok(), "{n}: {result:?}");
                assert!(found.is_some(), "the accepted write {n} is missing");
                stored += 1;
            }
        }
        let panicked = (0..90).filter(|n| n % 3 == 1 && n % 5 == 1).count();
        assert_eq!(stored, 60 - panicked);
        let slot = storage.inner.db.read().unwrap();
        let txn = slot.as_ref().unwrap().begin_read().unwrap();
        let rows = txn.open_table(DATABASES).unwrap().len().unwrap();
        assert_eq!(
            rows, stored as u64,
            "no refused or panicked write left a row"
        );
        let api_ids = txn.open_table(DATABASE_API_IDS).unwrap().len().unwrap();
        assert_eq!(api_ids, stored as u64);
    }

    /// A refusal that rests on a change of the same batch is answered only once that change is
    /// durable: a `NotFound` after a delete never comes while the record can still be read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_refusal_resting_on_its_batch_waits_for_the_commit() {
        let storage = Arc::new(store());
        let doomed = sample_database("Doomed", None);
        storage
            .insert_database(doomed.clone(), origin())
            .await
            .unwrap();
        // Keep the writer busy (a job held at a gate) so that the delete and the update queue
        // up behind it into one batch; each step waits for an event, not for time.
        let (started, is_started) = std::sync::mpsc::channel::<()>();
        let (open_gate, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(Some((started, gate))));
        let before = storage.writer.submitted();
        let busy = {
            let storage = Arc::clone(&storage);
            tokio::spawn(async move {
                storage
                    .write(move |_, _| {
                        // Only the first run waits (a job may run again on a replay).
                        if let Some((started, gate)) = gate.lock().unwrap().take() {
                            started.send(()).unwrap();
                            gate.recv().unwrap();
                        }
                        Ok(())
                    })
                    .await
            })
        };
        is_started.recv().unwrap();
        let delete = {
            let (storage, id) = (Arc::clone(&storage), doomed.id.clone());
            tokio::spawn(async move {
                storage
                    .delete_database(DatabaseKey::Id(id.as_str()), None, origin())
                    .await
            })
        };
        while storage.writer.submitted() < before + 2 {
            tokio::task::yield_now().await;
        }
        let update = {
            let (storage, id) = (Arc::clone(&storage), doomed.id.clone());
            tokio::spawn(async move {
                storage
                    .update_database(id.as_str(), |db: &Database| Ok(db.clone()), origin())
                    .await
            })
        };
        while storage.writer.submitted() < before + 3 {
            tokio::task::yield_now().await;
        }
        open_gate.send(()).unwrap();
        let update = async { update.await.unwrap() };
        let refused = update.await;
        assert!(
            matches!(refused, Err(StorageError::NotFound)),
            "{refused:?}"
        );
        // Answered NotFound: the delete it rests on is durable and visible.
        assert_eq!(storage.database(doomed.id.as_str()).await.unwrap(), None);
        assert!(delete.await.unwrap().is_ok());
        busy.await.unwrap().unwrap();
    }

    /// The `inherited_by` entries, as (target, heir) pairs in index order.
    fn index_entries(storage: &RedbStorage) -> Vec<(String, String)> {
        let slot = storage.inner.db.read().unwrap();
        let txn = slot.as_ref().unwrap().begin_read().unwrap();
        let inherited_by = txn.open_multimap_table(INHERITED_BY).unwrap();
        let mut entries = Vec::new();
        for entry in inherited_by.iter().unwrap() {
            let (target, heirs) = entry.unwrap();
            for heir in heirs {
                entries.push((target.value().to_owned(), heir.unwrap().value().to_owned()));
            }
        }
        entries
    }

    async fn inherit(storage: &RedbStorage, heir: &Database, target: Option<&Database>) {
        let target = target.map(|t| t.id.as_str().to_owned());
        storage
            .update_access_control(
                heir.id.as_str(),
                move |stored: &AccessControl| {
                    let mut next = stored.clone();
                    next.data_protection.inherits_from = target.clone();
                    Ok(next)
                },
                origin(),
            )
            .await
            .unwrap();
    }

    fn pair(target: &Database, heir: &Database) -> (String, String) {
        (target.id.as_str().to_owned(), heir.id.as_str().to_owned())
    }

    #[tokio::test]
    async fn inherited_by_follows_every_change_of_inherits_from() {
        let storage = store();
        let [a, b, c] = ["A", "B", "C"].map(|name| sample_database(name, None));
        for database in [&a, &b, &c] {
            storage
                .insert_database(database.clone(), origin())
                .await
                .unwrap();
        }

        inherit(&storage, &c, Some(&a)).await;
        inherit(&storage, &b, Some(&a)).await;
        assert_eq!(index_entries(&storage), vec![pair(&a, &b), pair(&a, &c)]);
        // Re-pointing moves the entry; setting the same target again changes nothing.
        inherit(&storage, &c, Some(&b)).await;
        inherit(&storage, &c, Some(&b)).await;
        assert_eq!(index_entries(&storage), vec![pair(&a, &b), pair(&b, &c)]);
        // A refused change leaves the index alone.
        let refused = storage
            .update_access_control(
                a.id.as_str(),
                {
                    let c = c.id.as_str().to_owned();
                    move |stored: &AccessControl| {
                        let mut next = stored.clone();
                        next.data_protection.inherits_from = Some(c.clone());
                        Ok(next)
                    }
                },
                origin(),
            )
            .await;
        assert!(
            matches!(refused, Err(StorageError::Invalid(_))),
            "{refused:?}"
        );
        assert_eq!(index_entries(&storage), vec![pair(&a, &b), pair(&b, &c)]);
        // Clearing removes the entry.
        inherit(&storage, &b, None).await;
        assert_eq!(index_entries(&storage), vec![pair(&b, &c)]);
        // Deleting an heir removes its own entry and its access-control record.
        storage
            .delete_database(DatabaseKey::Id(c.id.as_str()), None, origin())
            .await
            .unwrap();
        assert_eq!(index_entries(&storage), Vec::new());
        let slot = storage.inner.db.read().unwrap();
        let txn = slot.as_ref().unwrap().begin_read().unwrap();
        let access = txn.open_table(ACCESS_CONTROL).unwrap();
        assert!(access.get(c.id.as_str()).unwrap().is_none());
        assert!(access.get(b.id.as_str()).unwrap().is_some());
    }

    #[tokio::test]
    async fn a_stale_index_entry_does_not_block_a_delete_and_goes_with_it() {
        let storage = store();
        let parent = sample_database("Parent", Some("ext-parent"));
        let heir = sample_database("Heir", None);
        let gone = sample_database("Gone", None);
        storage
            .insert_database(parent.clone(), origin())
            .await
            .unwrap();
        storage
            .insert_database(heir.clone(), origin())
            .await
            .unwrap();
        inherit(&storage, &heir, Some(&parent)).await;
        // What a build that predates access control leaves behind: entries whose heir no
        // longer exists, or no longer inherits.
        let (parent_id, gone_id) = (parent.id.clone(), gone.id.clone());
        storage
            .write(move |_, txn| {
                let mut inherited_by = txn.open_multimap_table(INHERITED_BY).or_backend()?;
                for stale in [gone_id.as_str(), "db_0"] {
                    inherited_by
                        .insert(parent_id.as_str(), stale)
                        .or_backend()?;
                }
                Ok(())
            })
            .await
            .unwrap();

        // Only the real heir is named.
        match storage
            .delete_database(DatabaseKey::ApiId("ext-parent"), None, origin())
            .await
        {
            Err(StorageError::Inherited(heirs)) => assert_eq!(
                heirs,
                vec![DatabaseRef {
                    id: heir.id.as_str().to_owned(),
                    name: "Heir".to_owned(),
                }]
            ),
            other => panic!("expected Inherited, got {other:?}"),
        }
        assert_eq!(
            index_entries(&storage).len(),
            3,
            "a refused delete changes nothing"
        );

        inherit(&storage, &heir, None).await;
        let removed = storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()), None, origin())
            .await
            .unwrap();
        assert_eq!(removed, parent);
        assert_eq!(index_entries(&storage), Vec::new());
    }
}
