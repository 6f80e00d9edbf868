//! # dbconsole-storage-postgres
//!
//! The [`Storage`] backend for several server nodes on one shared, durable store: PostgreSQL.
//! Every node opens the same database (and schema); each trait call is one PostgreSQL
//! transaction, so a node or a connection that dies mid-call leaves nothing half-written, and
//! every rule of the contract holds across nodes, not only inside one process.
//!
//! ## How the contract holds across nodes
//!
//! - **Compare-and-swap** (`replace_*`, `remove_*`): the row is read with `SELECT … FOR UPDATE`
//!   and its version compared with the one core built the change from, in the transaction that
//!   writes it; a row at another version is [`StorageError::Conflict`], and core reads again and
//!   retries. Nothing is parsed or sealed while the lock is held: the record arrives built.
//!   Two nodes never lose each other's PATCH.
//! - **Setup by `api_id`** creates at most one database: `api_id` is a unique column; a node
//!   that loses the race to insert gets [`StorageError::AlreadyExists`], and core's loop reads
//!   the winner's row and retries as a replace.
//! - **Inheritance and the delete guard**: writes run at `SERIALIZABLE` isolation and are
//!   retried on serialization failures, so `A → B` on one node and `B → A` on another can't
//!   both commit, and a delete can't slip past a concurrent `inherits_from` (PostgreSQL's
//!   serializable snapshot isolation detects both). The rules themselves are core's
//!   ([`dbconsole_core::storage::rules`]); this crate supplies the lookups.
//! - **Times**: `updated_at` is computed from the stored one (`not before the next
//!   microsecond`), so it strictly increases per record even when the nodes' clocks differ.
//!
//! ## Secrets and the key
//!
//! Records reach the store with their secrets sealed by core
//! ([`SealedSecret`](dbconsole_core::model::SealedSecret)); no column ever holds a plaintext.
//! Nodes share the seal keys. The `seal_keys` table keeps the current key's id and a key check
//! value of each key the secrets may need: [`PostgresStorage::connect`] with another key fails
//! with [`ConnectError::WrongKey`], and without a needed key with [`ConnectError::SealKey`]
//! (naming it), before the node answers anything. Each `databases` row lists the keys its
//! secrets are sealed under, and a trigger refuses a row whose secrets are not all under the
//! current key ([`StorageError::SealKeyChanged`]); dropping a key takes the `databases` table
//! in `EXCLUSIVE` mode to check that no row needs it.
//!
//! ## Schema and migrations
//!
//! The tables live in one schema ([`PostgresOptions::schema`], default `dbconsole`), created
//! when missing. Versioned SQL migrations are embedded in the binary (`migrations/`) and applied
//! at connect, in one transaction under an advisory lock, so nodes starting together migrate
//! once. A node refuses a schema newer than it knows ([`ConnectError::NewerSchema`]).
//!
//! | table | what | migration |
//! |---|---|---|
//! | `databases` | `id`, `api_id` (unique), and `record`: the database with its credentials in dbconsole's stored form ([`dbconsole_core::storage::record`]); the listing filters' columns `adapter`, `grp`, `tunnel_id`, `name`, each indexed with `id`; `seal_keys`, the ids of the keys its secrets are sealed under | 1, 3, 5 |
//! | `dashboards` | `id`, `record`, and `name` for the prefix filter | 1, 3 |
//! | `access_control` | `database_id` (deleted with its database), `inherits_from` (indexed, for the delete guard), `record` | 1 |
//! | `caller_keys` | `id`, `digest` (unique, the SHA-256 a presented key is looked up by), `record` | 1 |
//! | `audit_events` | the audit trail: `id`, `resource_id` and `at` (indexed), `record`; written in the transaction (or the statement) of the change it records | 2 |
//! | `idempotency_answers` | the answers of writes made with an `Idempotency-Key`: `key`, `at` (indexed, for pruning), `record` | 4 |
//! | `seal_keys` | `id`, `key_check`, `current` (one row is); `databases.seal_keys` lists each row's key ids, checked by the trigger `databases_seal_keys` | 5 |
//! | `queries` | the query history: `id`, `database_id`, `author`, `status` (each indexed with `id`, for the history's filters), `version` (`updated_at` in microseconds, what a replace compares), `record`; version 9 puts every author (column and record), reviewer and runner in its normal form ([`dbconsole_core::model::identity`]) | 6, 9 |
//! | `deliveries` | the outbox: `id`, `status` (indexed with `id`), `due_at` (when a worker may claim it; null once delivered or dead), `kind` of receiver (the claim's index is on `kind`, `due_at`), `version`, `record` | 7, 8 |
//! | `meta` | the key check value before version 5 | 1 |
//! | `schema_migrations` | applied versions | |
//!
//! ## Faults
//!
//! Every operation is bounded by [`PostgresOptions::timeout`] (waiting for a connection
//! included). When PostgreSQL restarts or the network to it drops, an operation answers
//! [`StorageError::Unavailable`] (the service answers 503) instead of hanging;
//! [`Storage::check_ready`] says whether the store can be reached; dead connections are
//! dropped from the pool and new ones made, so a node recovers by itself when PostgreSQL is
//! back. A write is acknowledged only after its `COMMIT` returned.
//!
//! ```no_run
//! use std::sync::Arc;
//! use dbconsole_core::{ConsoleService, SecretKey, Sealer, StaticCredentials};
//! use dbconsole_storage_postgres::{PostgresOptions, PostgresStorage};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let key = SecretKey::from_base64(&std::env::var("DBCONSOLE_SECRET_KEY")?)?;
//! let sealer = Sealer::new(&key);
//! let options = PostgresOptions::new("postgres://dbconsole:secret@db.internal/dbconsole");
//! let storage = PostgresStorage::connect(options, &sealer).await?;
//! let auth = Arc::new(StaticCredentials::default());
//! let service = ConsoleService::builder(Arc::new(storage), auth, sealer).build();
//! # let _ = service;
//! # Ok(())
//! # }
//! ```
//!
//! ## Layout
//!
//! - `lib.rs`: [`PostgresStorage`], [`PostgresStorage::connect`], and the [`Storage`] impl,
//!   each method one call into the file of its aggregate (or into `write_log.rs`).
//! - `fault.rs`: what a PostgreSQL error is: a conflict to run again, a seal key that changed,
//!   [`StorageError::Unavailable`], or a backend failure.
//! - `retry.rs`: the time bound, connections from the pool, the `serializable!` loop that runs
//!   a transaction again on serialization conflicts, and commits whose answer was lost.
//! - `sql.rs`: what several aggregates share: one statement outside a transaction, a row's
//!   columns, keys, a listing's filtered SQL, the record counts.
//! - `databases.rs`, `dashboards.rs`, `access.rs` (access control), `keys.rs` (callers' keys),
//!   `queries.rs`, `deliveries.rs` (the outbox), `answers.rs` (idempotency answers),
//!   `seal_keys.rs`, `users.rs`, `saved_queries.rs`: one aggregate each, with its SQL and
//!   its transactions.
//! - `audit.rs`: the audit trail.
//! - `write_log.rs`: the writing of a [`WriteLog`] (its event, answer and new deliveries) with
//!   its change, alone (`append_log`), or with a delivery's swap (`replace_delivery_at`).
//! - `migrate.rs` (the migrations), `options.rs`, `testing.rs` (feature `testing`).

mod access;
mod answers;
mod audit;
mod dashboards;
mod databases;
mod deliveries;
mod fault;
mod keys;
mod migrate;
mod options;
mod queries;
mod retry;
mod saved_queries;
mod seal_keys;
mod sessions;
mod sql;
#[cfg(feature = "testing")]
pub mod testing;
mod users;
mod write_log;

use std::fmt;
use std::time::Duration;

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
use deadpool_postgres::Pool;

pub use crate::migrate::SCHEMA_VERSION;
pub use crate::options::{ConnectError, PostgresOptions};

/// The PostgreSQL backend: a pool of connections to one database and schema. Cheap to share with
/// `Arc`; see the [crate documentation](crate) for what it guarantees.
pub struct PostgresStorage {
    pool: Pool,
    timeout: Duration,
    schema: String,
}

impl fmt::Debug for PostgresStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStorage")
            .field("schema", &self.schema)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresStorage {
    /// Connects to PostgreSQL, creates the schema when missing, applies the migrations this
    /// build knows (once, whatever the number of nodes starting), and checks the sealing key
    /// against the key check value (storing it on first use). Refuses a schema newer than this
    /// build ([`ConnectError::NewerSchema`]) and another key ([`ConnectError::WrongKey`]).
    pub async fn connect(options: PostgresOptions, sealer: &Sealer) -> Result<Self, ConnectError> {
        let pool = options.pool()?;
        let storage = Self {
            pool,
            timeout: options.timeout,
            schema: options.schema.clone(),
        };
        let mut client = storage
            .pool
            .get()
            .await
            .map_err(|error| ConnectError::Connect(Box::new(error)))?;
        migrate::run(&mut client, &options.schema, sealer).await?;
        Ok(storage)
    }

    /// The schema the tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }
}

#[async_trait]
impl Storage for PostgresStorage {
    // Databases: databases.rs.
    async fn create_database(&self, database: Database, log: WriteLog) -> Result<(), StorageError> {
        databases::create(self, database, log).await
    }
    async fn database(&self, id: &str) -> Result<Option<Database>, StorageError> {
        databases::get(self, id).await
    }
    async fn database_by_api_id(&self, api_id: &str) -> Result<Option<Database>, StorageError> {
        databases::by_api_id(self, api_id).await
    }
    async fn list_databases(
        &self,
        page: Page<'_>,
        filter: DatabaseFilter<'_>,
    ) -> Result<Vec<Database>, StorageError> {
        databases::list(self, page, filter).await
    }
    async fn replace_database(
        &self,
        database: Database,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        databases::replace(self, database, expected, log).await
    }
    async fn remove_database(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        databases::remove(self, id, expected, log).await
    }

    // Dashboards: dashboards.rs.
    async fn create_dashboard(
        &self,
        dashboard: Dashboard,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        dashboards::create(self, dashboard, log).await
    }
    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError> {
        dashboards::get(self, id).await
    }
    async fn list_dashboards(
        &self,
        page: Page<'_>,
        filter: DashboardFilter<'_>,
    ) -> Result<Vec<Dashboard>, StorageError> {
        dashboards::list(self, page, filter).await
    }
    async fn replace_dashboard(
        &self,
        dashboard: Dashboard,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        dashboards::replace(self, dashboard, expected, log).await
    }
    async fn remove_dashboard(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        dashboards::remove(self, id, expected, log).await
    }

    // Access control: access.rs.
    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError> {
        access::get(self, database_id).await
    }
    async fn replace_access_control(
        &self,
        database_id: &str,
        expected: AccessControl,
        access: AccessControl,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        access::replace(self, database_id, expected, access, log).await
    }

    // Queries: queries.rs.
    async fn create_query(&self, query: Query, log: WriteLog) -> Result<(), StorageError> {
        queries::create(self, query, log).await
    }
    async fn query(&self, id: &str) -> Result<Option<Query>, StorageError> {
        queries::get(self, id).await
    }
    async fn list_queries(
        &self,
        page: Page<'_>,
        filter: QueryFilter<'_>,
    ) -> Result<Vec<Query>, StorageError> {
        queries::list(self, page, filter).await
    }
    async fn replace_query(
        &self,
        query: Query,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        queries::replace(self, query, expected, log).await
    }
    async fn swap_query(&self, query: Query, expected: Timestamp) -> Result<(), StorageError> {
        queries::swap(self, query, expected).await
    }

    // The audit trail: audit.rs, and write_log.rs for a log alone.
    async fn append_log(&self, log: WriteLog) -> Result<(), StorageError> {
        write_log::append_log(self, log).await
    }
    async fn list_audit(&self, query: AuditQuery<'_>) -> Result<Vec<AuditEvent>, StorageError> {
        audit::list(self, query).await
    }
    async fn prune_audit(&self, retention: Retention, now: Timestamp) -> Result<u64, StorageError> {
        audit::prune(self, retention, now).await
    }

    // The outbox: deliveries.rs, and write_log.rs for a swap with a log.
    async fn claim_deliveries(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
        kinds: &[TargetKind],
    ) -> Result<Vec<Delivery>, StorageError> {
        self.claim(now, lease_until, limit, kinds).await
    }
    async fn delivery(&self, id: &str) -> Result<Option<Delivery>, StorageError> {
        self.get_delivery(id).await
    }
    async fn list_deliveries(
        &self,
        page: Page<'_>,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<Delivery>, StorageError> {
        self.deliveries(page, status).await
    }
    async fn replace_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        self.replace_delivery_at(delivery, expected, log).await
    }
    async fn swap_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
    ) -> Result<(), StorageError> {
        self.swap_delivery_at(delivery, expected).await
    }

    // Callers' keys: keys.rs.
    async fn create_caller_key(&self, key: CallerKey, log: WriteLog) -> Result<(), StorageError> {
        keys::create(self, key, log).await
    }
    async fn caller_key(&self, id: &str) -> Result<Option<CallerKey>, StorageError> {
        keys::get(self, id).await
    }
    async fn caller_key_by_digest(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<CallerKey>, StorageError> {
        keys::by_digest(self, digest).await
    }
    async fn list_caller_keys(&self) -> Result<Vec<CallerKey>, StorageError> {
        keys::list(self).await
    }
    async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        keys::touch(self, id, at).await
    }
    async fn remove_caller_key(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        keys::remove(self, id, log).await
    }
    async fn create_session(
        &self,
        session: Session,
        replacing: Option<&str>,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        sessions::create(self, session, replacing, log).await
    }
    async fn session_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Session>, StorageError> {
        sessions::by_digest(self, digest).await
    }
    async fn list_sessions(&self) -> Result<Vec<Session>, StorageError> {
        sessions::list(self).await
    }
    async fn touch_session(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        sessions::touch(self, id, at).await
    }
    async fn remove_session(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        sessions::remove(self, id, log).await
    }
    async fn prune_sessions(
        &self,
        now: Timestamp,
        idle_before: Timestamp,
    ) -> Result<u64, StorageError> {
        sessions::prune(self, now, idle_before).await
    }

    // Saved queries: saved_queries.rs.
    async fn saved_query(&self, id: &str) -> Result<Option<SavedQuery>, StorageError> {
        saved_queries::saved_query(self, id).await
    }
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>, StorageError> {
        saved_queries::list(self).await
    }
    async fn put_saved_query(
        &self,
        id: &str,
        saved: Option<SavedQuery>,
        expected: Option<Timestamp>,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        saved_queries::put(self, id, saved, expected, log).await
    }

    // Users and settings: users.rs.

    async fn user(&self, name: &str) -> Result<Option<User>, StorageError> {
        users::user(self, name).await
    }
    async fn list_users(&self) -> Result<Vec<User>, StorageError> {
        users::list(self).await
    }
    async fn put_user(
        &self,
        user: User,
        expected: Option<Timestamp>,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        users::put(self, user, expected, log).await
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

    // Seal keys: seal_keys.rs.
    async fn seal_keys(&self) -> Result<SealKeys, StorageError> {
        seal_keys::get(self).await
    }
    /// Takes the `databases` table in `EXCLUSIVE` mode when `keys` drops a key: reads go on,
    /// but every write waits, and every transaction that had touched the table (and may hold a
    /// snapshot from before the current key changed) has ended, so the check that no stored
    /// secret needs a dropped key sees every record that will ever be written with it.
    async fn replace_seal_keys(
        &self,
        expected: &SealKeys,
        keys: SealKeys,
    ) -> Result<(), StorageError> {
        seal_keys::replace(self, expected, keys).await
    }

    // Idempotency answers: answers.rs.
    async fn stored_answer(&self, key: &str) -> Result<Option<StoredAnswer>, StorageError> {
        answers::get(self, key).await
    }
    async fn prune_answers(&self, before: Timestamp) -> Result<u64, StorageError> {
        answers::prune(self, before).await
    }

    // Across tables: sql.rs.
    async fn record_counts(&self) -> Result<RecordCounts, StorageError> {
        sql::record_counts(self).await
    }
    async fn check_ready(&self) -> Result<(), StorageError> {
        self.rows("SELECT 1", &[]).await.map(drop)
    }
}
