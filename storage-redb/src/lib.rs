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
//! ## Recently read records
//!
//! A panel run reads its dashboard, its database and that database's access control, and a
//! request with a stored key reads the key by its digest: each a read transaction, two or three
//! table opens and a decode. The store keeps the last 512 records of
//! each of these kinds it read, decoded, and answers them from memory until a write could have
//! changed them. It cannot go stale: this store is its file's only writer, a write becomes
//! visible only when it commits, and every commit that holds a write job but an audit event's
//! empties the cache as it begins, sends reads to the file while it runs and empties it again
//! once it returned, before any caller is answered; a read keeps what it read only if no
//! commit began or ended meanwhile (module `recent`). The
//! conformance case `reads_racing_writes_never_see_what_a_write_replaced` reads every kind while
//! each is written.
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
//! | `sessions`, `session_digests` | session id → record, digest → session id | browser sessions and sign-in links, as digests (module `sessions`; not in backups) |
//! | `users` | normalised name → record | the people who use the console, with their passkeys' public keys (module `users`) |
//! | `settings` | name → value | server settings such as the recorded public URL (module `users`) |
//! | `saved_queries` | id → record | saved queries (module `saved_queries`) |
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
//! use std::path::{Path, PathBuf};
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
//! ## Layout
//!
//! - `lib.rs`: [`RedbStorage`], opening its file (checked by `file.rs`) and starting its writer,
//!   and the [`Storage`] impl, each method one call to the function of the same name in its
//!   aggregate's file (or in `write_log.rs`).
//! - `databases.rs`, `dashboards.rs`, `access.rs` (with `inherited_by`), `keys.rs` (callers'
//!   keys), `queries.rs`, `deliveries.rs` (the outbox), `audit.rs`, `answers.rs` (idempotency
//!   answers), `seal_keys.rs`: one aggregate each.
//! - `write_log.rs`: the writing of a [`WriteLog`] (its answer, new deliveries and event) in the
//!   transaction of a write, alone (`append_log`), or with a delivery's swap (`replace_delivery`).
//! - `file.rs`: the file checked at open, its handle, reopened after an I/O failure, and the
//!   readiness probe; `calls.rs`: where a call runs; `writer.rs`: the writer (group commit);
//!   `recent.rs`: the recently read records.
//! - `tables.rs`: the shared tables, redb's errors as storage errors, pages, counts; `error.rs`:
//!   [`OpenError`]; `index.rs`: the listing indexes; `backup.rs`: [`RedbStorage::backup`] and
//!   [`restore`]; `testing.rs`: the unit tests' fixtures.
//!
//! [redb]: https://www.redb.org
//! [postcard]: https://docs.rs/postcard

mod access;
mod answers;
mod audit;
mod backup;
mod calls;
mod dashboards;
mod databases;
mod deliveries;
mod error;
mod file;
mod index;
mod keys;
mod queries;
mod recent;
mod saved_queries;
mod seal_keys;
mod sessions;
mod tables;
#[cfg(test)]
mod testing;
mod users;
mod write_log;
mod writer;

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use dbconsole_core::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Delivery, DeliveryStatus, Query,
    Retention, SavedQuery, Session, StoredAnswer, TargetKind, Timestamp, User,
};
use dbconsole_core::seal::{SealKeys, Sealer};
use dbconsole_core::storage::{
    AuditQuery, DashboardFilter, DatabaseFilter, Page, QueryFilter, RecordCounts, Storage,
    StorageError, WriteLog,
};
use redb::backends::InMemoryBackend;

pub use crate::backup::{Copied, CopyError, restore};
pub use crate::error::OpenError;
use crate::file::{Inner, create_private_file};

/// redb's page cache when none is given: 16 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// The format version of files this build writes, and the newest it opens. Version 2 keeps
/// the seal keys (`seal_keys`) instead of one key check value (`key_check`, read as key 0's);
/// version 3 keeps user identities in one normal form (the queries' authors, reviewers and
/// runners, and the author index). An older file is upgraded when it is opened.
pub const FORMAT_VERSION: u32 = 3;

/// The redb backend. Open it once per process and share it with `Arc`; see the
/// [crate documentation](crate) for what it guarantees.
pub struct RedbStorage {
    inner: Arc<Inner>,
    writer: writer::Writer,
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

    /// Checks or initialises the open `db` (`file::check_at_open`), then starts its writer.
    fn initialise(
        db: redb::Database,
        sealer: &Sealer,
        path: Option<PathBuf>,
        cache_bytes: usize,
    ) -> Result<Self, OpenError> {
        file::check_at_open(&db, sealer)?;
        let inner = Arc::new(Inner::new(db, path, cache_bytes));
        let writer = writer::Writer::start(Arc::clone(&inner)).map_err(OpenError::Thread)?;
        Ok(Self { inner, writer })
    }
}

#[async_trait]
impl Storage for RedbStorage {
    // Databases: databases.rs.
    async fn create_database(&self, database: Database, log: WriteLog) -> Result<(), StorageError> {
        databases::create_database(self, database, log).await
    }
    async fn database(&self, id: &str) -> Result<Option<Database>, StorageError> {
        databases::database(self, id).await
    }
    async fn database_by_api_id(&self, api_id: &str) -> Result<Option<Database>, StorageError> {
        databases::database_by_api_id(self, api_id).await
    }
    async fn list_databases(
        &self,
        request: Page<'_>,
        filter: DatabaseFilter<'_>,
    ) -> Result<Vec<Database>, StorageError> {
        databases::list_databases(self, request, filter).await
    }
    async fn replace_database(
        &self,
        database: Database,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        databases::replace_database(self, database, expected, log).await
    }
    async fn remove_database(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        databases::remove_database(self, id, expected, log).await
    }

    // Dashboards: dashboards.rs.
    async fn create_dashboard(
        &self,
        dashboard: Dashboard,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        dashboards::create_dashboard(self, dashboard, log).await
    }
    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError> {
        dashboards::dashboard(self, id).await
    }
    async fn list_dashboards(
        &self,
        request: Page<'_>,
        filter: DashboardFilter<'_>,
    ) -> Result<Vec<Dashboard>, StorageError> {
        dashboards::list_dashboards(self, request, filter).await
    }
    async fn replace_dashboard(
        &self,
        dashboard: Dashboard,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        dashboards::replace_dashboard(self, dashboard, expected, log).await
    }
    async fn remove_dashboard(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        dashboards::remove_dashboard(self, id, expected, log).await
    }

    // Access control: access.rs.
    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError> {
        access::access_control(self, database_id).await
    }
    async fn replace_access_control(
        &self,
        database_id: &str,
        expected: AccessControl,
        updated: AccessControl,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        access::replace_access_control(self, database_id, expected, updated, log).await
    }

    // Callers' keys: keys.rs.
    async fn create_caller_key(&self, key: CallerKey, log: WriteLog) -> Result<(), StorageError> {
        keys::create_caller_key(self, key, log).await
    }
    async fn caller_key(&self, id: &str) -> Result<Option<CallerKey>, StorageError> {
        keys::caller_key(self, id).await
    }
    async fn caller_key_by_digest(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<CallerKey>, StorageError> {
        keys::caller_key_by_digest(self, digest).await
    }
    async fn list_caller_keys(&self) -> Result<Vec<CallerKey>, StorageError> {
        keys::list_caller_keys(self).await
    }
    async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        keys::touch_caller_key(self, id, at).await
    }
    async fn remove_caller_key(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        keys::remove_caller_key(self, id, log).await
    }
    async fn create_session(
        &self,
        session: Session,
        replacing: Option<&str>,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        sessions::create_session(self, session, replacing, log).await
    }
    async fn session_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Session>, StorageError> {
        sessions::session_by_digest(self, digest).await
    }
    async fn list_sessions(&self) -> Result<Vec<Session>, StorageError> {
        sessions::list_sessions(self).await
    }
    async fn touch_session(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        sessions::touch_session(self, id, at).await
    }
    async fn remove_session(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        sessions::remove_session(self, id, log).await
    }
    async fn prune_sessions(
        &self,
        now: Timestamp,
        idle_before: Timestamp,
    ) -> Result<u64, StorageError> {
        sessions::prune_sessions(self, now, idle_before).await
    }

    // Saved queries: saved_queries.rs.
    async fn saved_query(&self, id: &str) -> Result<Option<SavedQuery>, StorageError> {
        saved_queries::saved_query(self, id).await
    }
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>, StorageError> {
        saved_queries::list_saved_queries(self).await
    }
    async fn put_saved_query(
        &self,
        id: &str,
        saved: Option<SavedQuery>,
        expected: Option<Timestamp>,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        saved_queries::put_saved_query(self, id, saved, expected, log).await
    }

    // Users and settings: users.rs.

    async fn user(&self, name: &str) -> Result<Option<User>, StorageError> {
        users::user(self, name).await
    }
    async fn list_users(&self) -> Result<Vec<User>, StorageError> {
        users::list_users(self).await
    }
    async fn put_user(
        &self,
        user: User,
        expected: Option<Timestamp>,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        users::put_user(self, user, expected, log).await
    }
    async fn setting(&self, name: &str) -> Result<Option<String>, StorageError> {
        users::setting(self, name).await
    }
    async fn put_setting(&self, name: &str, value: &str) -> Result<(), StorageError> {
        users::put_setting(self, name, value).await
    }
    async fn remove_setting(&self, name: &str) -> Result<(), StorageError> {
        users::remove_setting(self, name).await
    }

    // Queries: queries.rs.
    async fn create_query(&self, query: Query, log: WriteLog) -> Result<(), StorageError> {
        queries::create_query(self, query, log).await
    }
    async fn query(&self, id: &str) -> Result<Option<Query>, StorageError> {
        queries::query(self, id).await
    }
    async fn list_queries(
        &self,
        request: Page<'_>,
        filter: QueryFilter<'_>,
    ) -> Result<Vec<Query>, StorageError> {
        queries::list_queries(self, request, filter).await
    }
    async fn replace_query(
        &self,
        query: Query,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        queries::replace_query(self, query, expected, Some(log)).await
    }
    async fn swap_query(&self, query: Query, expected: Timestamp) -> Result<(), StorageError> {
        queries::replace_query(self, query, expected, None).await
    }

    // The audit trail: audit.rs, and write_log.rs for a log alone.
    async fn append_log(&self, log: WriteLog) -> Result<(), StorageError> {
        write_log::append_log(self, log).await
    }
    async fn list_audit(&self, query: AuditQuery<'_>) -> Result<Vec<AuditEvent>, StorageError> {
        audit::list_audit(self, query).await
    }
    async fn prune_audit(&self, retention: Retention, now: Timestamp) -> Result<u64, StorageError> {
        audit::prune_audit(self, retention, now).await
    }

    // The outbox: deliveries.rs, and write_log.rs for a swap with a log.
    async fn claim_deliveries(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
        kinds: &[TargetKind],
    ) -> Result<Vec<Delivery>, StorageError> {
        deliveries::claim_deliveries(self, now, lease_until, limit, kinds).await
    }
    async fn delivery(&self, id: &str) -> Result<Option<Delivery>, StorageError> {
        deliveries::delivery(self, id).await
    }
    async fn list_deliveries(
        &self,
        request: Page<'_>,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<Delivery>, StorageError> {
        deliveries::list_deliveries(self, request, status).await
    }
    async fn replace_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        write_log::replace_delivery(self, delivery, expected, log).await
    }
    async fn swap_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
    ) -> Result<(), StorageError> {
        deliveries::swap_delivery(self, delivery, expected).await
    }

    // Idempotency answers: answers.rs.
    async fn stored_answer(&self, key: &str) -> Result<Option<StoredAnswer>, StorageError> {
        answers::stored_answer(self, key).await
    }
    async fn prune_answers(&self, before: Timestamp) -> Result<u64, StorageError> {
        answers::prune_answers(self, before).await
    }

    // Seal keys: seal_keys.rs.
    async fn seal_keys(&self) -> Result<SealKeys, StorageError> {
        seal_keys::seal_keys(self).await
    }
    /// Checks every stored database in the writer when `keys` drops a key: a scan, made once
    /// per rotation.
    async fn replace_seal_keys(
        &self,
        expected: &SealKeys,
        keys: SealKeys,
    ) -> Result<(), StorageError> {
        seal_keys::replace_seal_keys(self, expected, keys).await
    }

    // The file and its tables: file.rs, tables.rs.
    /// Not ready while the last write met an I/O failure (a full disk) and nothing has been
    /// committed since. Then a probe tells whether writes work again: it commits a value as
    /// large as the largest request (2 MiB) and removes it in a second commit, so
    /// that it needs as much free space as any write does.
    async fn check_ready(&self) -> Result<(), StorageError> {
        file::check_ready(self).await
    }
    async fn record_counts(&self) -> Result<RecordCounts, StorageError> {
        tables::record_counts(self).await
    }
}
