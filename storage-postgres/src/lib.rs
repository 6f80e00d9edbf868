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
//! | `databases` | `id`, `api_id` (unique), and `record`: the database with its credentials in dbconsole's stored form ([`dbconsole_core::storage::record`]); the listing filters' columns `adapter`, `grp`, `tunnel_id`, `name`, each indexed with `id` | 1, 3 |
//! | `dashboards` | `id`, `record`, and `name` for the prefix filter | 1, 3 |
//! | `access_control` | `database_id` (deleted with its database), `inherits_from` (indexed, for the delete guard), `record` | 1 |
//! | `caller_keys` | `id`, `digest` (unique, the SHA-256 a presented key is looked up by), `record` | 1 |
//! | `audit_events` | the audit trail: `id`, `resource_id` and `at` (indexed), `record`; written in the transaction (or the statement) of the change it records | 2 |
//! | `idempotency_answers` | the answers of writes made with an `Idempotency-Key`: `key`, `at` (indexed, for pruning), `record` | 4 |
//! | `seal_keys` | `id`, `key_check`, `current` (one row is); `databases.seal_keys` lists each row's key ids, checked by the trigger `databases_seal_keys` | 5 |
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

mod migrate;
mod options;
#[cfg(feature = "testing")]
pub mod testing;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use dbconsole_core::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Delivery, DeliveryStatus, Query,
    Retention, StoredAnswer, TargetKind, Timestamp,
};
use dbconsole_core::seal::{SealKeys, Sealer, sealed_keys};
use dbconsole_core::storage::record::{self, RecordError};
use dbconsole_core::storage::{
    AuditQuery, DashboardFilter, DatabaseFilter, DatabaseRef, Page, QueryFilter, RecordCounts,
    Storage, StorageError, WriteLog, audit, rules,
};
use deadpool_postgres::{Object, Pool, PoolError};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{IsolationLevel, Row};

pub use crate::migrate::SCHEMA_VERSION;
pub use crate::options::{ConnectError, PostgresOptions};

/// How many times a transaction that lost a serialization conflict is run again.
const MAX_ATTEMPTS: u32 = 100;

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

/// Why one attempt of an operation failed: a conflict to run again, or the answer.
enum Failure {
    /// A serialization failure or deadlock: the transaction rolled back; run it again.
    Retry(tokio_postgres::Error),
    /// The operation's answer.
    Fail(StorageError),
}

impl From<StorageError> for Failure {
    fn from(error: StorageError) -> Self {
        Failure::Fail(error)
    }
}

impl From<RecordError> for Failure {
    fn from(error: RecordError) -> Self {
        Failure::Fail(error.into())
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        if let Some(current) = stale_seal_key(&error) {
            return Failure::Fail(StorageError::SealKeyChanged(current));
        }
        match error.code() {
            Some(code)
                if *code == SqlState::T_R_SERIALIZATION_FAILURE
                    || *code == SqlState::T_R_DEADLOCK_DETECTED =>
            {
                Failure::Retry(error)
            }
            _ => Failure::Fail(classify(error)),
        }
    }
}

/// The current seal key named by the trigger that refused a database sealed under another.
fn stale_seal_key(error: &tokio_postgres::Error) -> Option<u32> {
    let error = error.as_db_error()?;
    if error.code().code() != STALE_SEAL_KEY {
        return None;
    }
    error.message().rsplit(' ').next()?.parse().ok()
}

/// A PostgreSQL error as the contract sees it: the server or the network being away is
/// [`StorageError::Unavailable`]; anything else (a decoding or type error, a constraint, a bug)
/// is a backend failure.
fn classify(error: tokio_postgres::Error) -> StorageError {
    if unreachable(&error) {
        StorageError::unavailable(error)
    } else {
        StorageError::backend(error)
    }
}

/// Whether the error says PostgreSQL can't be reached now (rather than refusing what was sent).
fn unreachable(error: &tokio_postgres::Error) -> bool {
    match error.code() {
        None => error.is_closed() || caused_by_io(error),
        Some(code) => {
            let code = code.code();
            // 08: connection exception; 57P01..57P03: shutdown, crash, cannot connect now;
            // 53: insufficient resources (too many connections…).
            code.starts_with("08") || code.starts_with("57P") || code.starts_with("53")
        }
    }
}

/// Whether an I/O error is in the error's chain (a refused or dropped connection, a timeout).
fn caused_by_io(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The seal keys table names no current key.
#[derive(Debug, thiserror::Error)]
#[error("the stored seal keys name no current key")]
struct NoCurrentKey;

/// The operation took longer than the configured bound.
#[derive(Debug, thiserror::Error)]
#[error("PostgreSQL did not answer within {0:?}")]
struct TimedOut(Duration);

/// Runs one attempt of a serializable transaction again while it loses serialization
/// conflicts. `$attempt` is an expression using `$client` (a `&mut Object`) that evaluates to
/// `Result<T, Failure>`.
macro_rules! serializable {
    ($self:ident, |$client:ident, $in_flight:ident| $attempt:expr) => {{
        let $in_flight = InFlight::default();
        let outcome = $self
            .bounded(async {
                let mut object = $self.client().await?;
                let mut attempts = 0;
                loop {
                    attempts += 1;
                    let $client = &mut object;
                    match $attempt {
                        Ok(value) => break Ok(value),
                        Err(Failure::Fail(error)) => break Err(error),
                        Err(Failure::Retry(error)) if attempts >= MAX_ATTEMPTS => {
                            break Err(StorageError::backend(error));
                        }
                        Err(Failure::Retry(_)) => {
                            let pause = Duration::from_millis(u64::from(attempts.min(10)) * 2);
                            tokio::time::sleep(pause).await;
                        }
                    }
                }
            })
            .await;
        $self.settle(outcome, &$in_flight).await
    }};
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

    /// Runs `work` within the time bound; a bound reached is [`StorageError::Unavailable`].
    async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, StorageError>>,
    ) -> Result<T, StorageError> {
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(StorageError::unavailable(TimedOut(self.timeout))),
        }
    }

    async fn client(&self) -> Result<Object, StorageError> {
        self.pool.get().await.map_err(|error| match error {
            PoolError::Backend(error) => classify(error),
            other => StorageError::unavailable(other),
        })
    }

    /// One statement outside a transaction (a read, or a single-row write that commits by
    /// itself), within the bound: the rows it returns.
    async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StorageError> {
        self.bounded(async {
            let client = self.client().await?;
            let statement = client.prepare_cached(sql).await.map_err(classify)?;
            client.query(&statement, params).await.map_err(classify)
        })
        .await
    }

    /// The record of the first row of one statement, if any.
    async fn one<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        decode: fn(&Row) -> Result<T, StorageError>,
    ) -> Result<Option<T>, StorageError> {
        self.rows(sql, params)
            .await?
            .first()
            .map(decode)
            .transpose()
    }

    /// The records of every row of one statement.
    async fn all<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        decode: fn(&Row) -> Result<T, StorageError>,
    ) -> Result<Vec<T>, StorageError> {
        self.rows(sql, params).await?.iter().map(decode).collect()
    }

    /// Inserts a record with `insert` (an `INSERT` of `params.len()` parameters) and its audit
    /// `event`, in one statement of one transaction: both or neither. A unique key taken is
    /// [`StorageError::AlreadyExists`].
    async fn insert(
        &self,
        insert: &str,
        params: &[&(dyn ToSql + Sync)],
        log: &WriteLog,
    ) -> Result<(), StorageError> {
        let n = params.len();
        // One statement writes the record and its event and answers the transaction's id (for
        // `commit_known`), saving a round trip.
        let sql = format!(
            "WITH written AS ({insert} RETURNING 1),
                  logged AS (INSERT INTO audit_events (id, resource_id, at, record)
                             SELECT ${}, ${}, ${}, ${} FROM written RETURNING 1)
             SELECT txid_current() FROM logged",
            n + 1,
            n + 2,
            n + 3,
            n + 4
        );
        let logged = EventRow::of(&log.event)?;
        let mut all: Vec<&(dyn ToSql + Sync)> = params.to_vec();
        all.extend(logged.params());
        serializable!(self, |client, in_flight| Self::try_insert(
            client,
            &sql,
            &all,
            log.answer.as_ref(),
            &log.outbox,
            log.event.id.as_str(),
            &in_flight
        )
        .await)
    }

    async fn try_insert(
        client: &mut Object,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        answer: Option<&StoredAnswer>,
        outbox: &[Delivery],
        event: &str,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        // Read committed is enough: what an insert must not break, unique ids, digests and
        // api_ids, the constraints guard.
        let txn = client.transaction().await?;
        let insert = txn.prepare_cached(sql).await?;
        let xid: i64 = match txn.query_one(&insert, params).await {
            Ok(row) => row.try_get(0).map_err(classify)?,
            Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                return Err(StorageError::AlreadyExists.into());
            }
            Err(error) => return Err(error.into()),
        };
        if let Some(answer) = answer {
            put_answer(&txn, answer).await?;
        }
        deliveries::put_new(&txn, outbox).await?;
        commit_known(txn, xid, event, in_flight).await
    }

    /// What became of a write whose `COMMIT` went out and whose answer never came (the
    /// connection dropped, or the time bound ran out while it was in flight), asked on another
    /// connection until the time bound. `Some(true)`: committed; `Some(false)`: it did not
    /// commit; `None`: it can't be known now.
    ///
    /// `txid_status` alone can't say: after a crash, PostgreSQL may give a transaction id whose
    /// work never reached the log to a new transaction, and then reports *that* one's status.
    /// So it says whether the transaction is still running or rolled back, and a "committed"
    /// is confirmed by the write's own audit event, which only its transaction writes: present,
    /// the write committed; absent, the id was another transaction's, and the write's never
    /// committed.
    async fn commit_status(&self, pending: &Pending) -> Option<bool> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        while tokio::time::Instant::now() < deadline {
            let asked = tokio::time::timeout_at(deadline, async {
                let client = self.client().await.ok()?;
                let row = client
                    .query_one("SELECT txid_status($1)", &[&pending.xid])
                    .await
                    .ok()?;
                let status = row.try_get::<_, Option<String>>(0).ok()?;
                if status.as_deref() == Some("in progress") {
                    return Some(Err(()));
                }
                if status.as_deref() == Some("aborted") {
                    return Some(Ok(false));
                }
                // Committed, or too old to be known: the event decides.
                let found = client
                    .query_opt(
                        "SELECT 1 FROM audit_events WHERE id = $1",
                        &[&pending.event.as_str()],
                    )
                    .await
                    .ok()?;
                match (status, found) {
                    (_, Some(_)) => Some(Ok(true)),
                    (Some(_), None) => Some(Ok(false)),
                    // Too old for `txid_status` and no event (pruned, or never written): asked
                    // again until the bound, then unknown.
                    (None, None) => None,
                }
            })
            .await;
            match asked {
                Ok(Some(Ok(committed))) => return Some(committed),
                // In progress (the server has not finished it yet), or PostgreSQL unreachable:
                // ask again.
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        None
    }

    /// The answer of a write that ran under [`serializable!`]: as it came, unless it failed
    /// while its `COMMIT` was in flight ([`InFlight`]); then the truth, from
    /// [`PostgresStorage::commit_status`]: done, the failure it was (nothing saved), or
    /// [`StorageError::Indeterminate`].
    async fn settle<T: Default>(
        &self,
        outcome: Result<T, StorageError>,
        in_flight: &InFlight,
    ) -> Result<T, StorageError> {
        let Err(error) = outcome else {
            return outcome;
        };
        let Some(pending) = in_flight.take() else {
            return Err(error);
        };
        match self.commit_status(&pending).await {
            Some(true) => {
                tracing::warn!(
                    xid = pending.xid,
                    "a commit's answer was lost; the write is in PostgreSQL"
                );
                Ok(T::default())
            }
            Some(false) => Err(error),
            None => Err(StorageError::indeterminate(error)),
        }
    }
}

/// A write whose `COMMIT` was sent and not answered yet (see [`commit`]): its transaction id
/// and the id of its audit event.
#[derive(Debug)]
struct Pending {
    xid: i64,
    event: String,
}

/// The [`Pending`] write of an operation, if any.
#[derive(Debug, Default)]
struct InFlight(std::sync::Mutex<Option<Pending>>);

impl InFlight {
    fn set(&self, pending: Option<Pending>) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = pending;
    }

    fn take(&self) -> Option<Pending> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// Commits `txn`. First it reads the transaction's id into `in_flight`, where it stays until
/// PostgreSQL answers the `COMMIT`: if the answer never comes (the connection drops, or the
/// operation's time bound runs out), [`PostgresStorage::settle`] finds out whether it
/// committed instead of guessing. An error PostgreSQL answers (a serialization failure at
/// commit) is definite: the transaction rolled back.
async fn commit(
    txn: deadpool_postgres::Transaction<'_>,
    event: &str,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let row = txn.query_one("SELECT txid_current()", &[]).await?;
    let xid: i64 = row.try_get(0).map_err(classify)?;
    commit_known(txn, xid, event, in_flight).await
}

/// [`commit`] of a transaction whose id `xid` is already known; `event` is the id of the audit
/// event it writes.
async fn commit_known(
    txn: deadpool_postgres::Transaction<'_>,
    xid: i64,
    event: &str,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    in_flight.set(Some(Pending {
        xid,
        event: event.to_owned(),
    }));
    match txn.commit().await {
        Ok(()) => {
            in_flight.set(None);
            Ok(())
        }
        Err(error) if error.code().is_some() && !unreachable(&error) => {
            in_flight.set(None);
            Err(error.into())
        }
        Err(error) => Err(error.into()),
    }
}

async fn begin(client: &mut Object) -> Result<deadpool_postgres::Transaction<'_>, Failure> {
    Ok(client
        .build_transaction()
        .isolation_level(IsolationLevel::Serializable)
        .start()
        .await?)
}

fn bytes(row: &Row, column: &str) -> Result<Vec<u8>, StorageError> {
    row.try_get::<_, Vec<u8>>(column).map_err(classify)
}

fn text(row: &Row, column: &str) -> Result<String, StorageError> {
    row.try_get::<_, String>(column).map_err(classify)
}

fn database_of(row: &Row) -> Result<Database, StorageError> {
    Ok(record::decode_database(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

fn dashboard_of(row: &Row) -> Result<Dashboard, StorageError> {
    Ok(record::decode_dashboard(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

fn query_of(row: &Row) -> Result<Query, StorageError> {
    Ok(record::decode_query(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

fn caller_key_of(row: &Row) -> Result<CallerKey, StorageError> {
    Ok(record::decode_caller_key(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// Limits fit PostgreSQL's `bigint`.
fn limit(page: Page<'_>) -> i64 {
    i64::try_from(page.limit).unwrap_or(i64::MAX)
}

const INSERT_DATABASE: &str =
    "INSERT INTO databases (id, api_id, record, adapter, grp, tunnel_id, name, seal_keys)
                               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const UPDATE_DATABASE: &str = "UPDATE databases
                                  SET record = $2, adapter = $3, grp = $4, tunnel_id = $5, name = $6,
                                      seal_keys = $7
                                WHERE id = $1";

/// The seal keys, one row each (schema version 5).
pub(crate) const SELECT_SEAL_KEYS: &str = "SELECT id, key_check, current FROM seal_keys";

/// The SQLSTATE of the trigger that refuses a database whose secrets are not all sealed under
/// the current key (migration 5); its message ends with the current key's id.
const STALE_SEAL_KEY: &str = "DBC01";

/// The seal keys of the rows of [`SELECT_SEAL_KEYS`]; `None` when none is current.
pub(crate) fn seal_keys_of(rows: &[Row]) -> Result<Option<SealKeys>, tokio_postgres::Error> {
    let mut current = None;
    let mut keys = std::collections::BTreeMap::new();
    for row in rows {
        let id: i64 = row.try_get("id")?;
        let Ok(id) = u32::try_from(id) else {
            return Ok(None);
        };
        if row.try_get::<_, bool>("current")? {
            current = Some(id);
        }
        keys.insert(id, row.try_get::<_, Vec<u8>>("key_check")?);
    }
    Ok(current.map(|current| SealKeys { current, keys }))
}

/// Writes `keys` into the (empty) `seal_keys` table, one row each.
pub(crate) async fn insert_seal_keys(
    txn: &deadpool_postgres::Transaction<'_>,
    keys: &SealKeys,
) -> Result<(), tokio_postgres::Error> {
    let insert = txn
        .prepare_cached("INSERT INTO seal_keys (id, key_check, current) VALUES ($1, $2, $3)")
        .await?;
    for (id, check) in &keys.keys {
        txn.execute(&insert, &[&i64::from(*id), check, &(*id == keys.current)])
            .await?;
    }
    Ok(())
}

/// The ids of the keys `database`'s secrets are sealed under, once each, for its `seal_keys`
/// column.
pub(crate) fn seal_key_ids(database: &Database) -> Vec<i64> {
    let ids: std::collections::BTreeSet<i64> = sealed_keys(database).map(i64::from).collect();
    ids.into_iter().collect()
}
const INSERT_DASHBOARD: &str = "INSERT INTO dashboards (id, record, name) VALUES ($1, $2, $3)";
const UPDATE_DASHBOARD: &str = "UPDATE dashboards SET record = $2, name = $3 WHERE id = $1";

/// The columns a listing filters on, beside the record (schema version 3): adapter, and the
/// bytes of group, tunnel and name.
pub(crate) struct FilterColumns<'a> {
    pub(crate) adapter: &'static str,
    pub(crate) group: Option<&'a [u8]>,
    pub(crate) tunnel: Option<&'a [u8]>,
    pub(crate) name: &'a [u8],
}

impl<'a> FilterColumns<'a> {
    pub(crate) fn of(db: &'a Database) -> Self {
        Self {
            adapter: db.adapter.as_str(),
            group: db.group.as_deref().map(str::as_bytes),
            tunnel: db.tunnel_id.as_deref().map(str::as_bytes),
            name: db.name.as_bytes(),
        }
    }
}

/// A key as PostgreSQL can compare it: `None` for a string with a NUL, which `text` can't hold
/// and no stored id contains (so nothing matches it).
fn key(value: &str) -> Option<&str> {
    (!value.contains('\0')).then_some(value)
}

/// The keyset bound of a listing. Stored ids hold no NUL, so "after `p\0r`" selects exactly
/// what "after `p`" does.
fn after_bound<'a>(page: &Page<'a>) -> Option<&'a str> {
    page.after
        .map(|after| after.split('\0').next().unwrap_or_default())
}

fn api_id_bytes(api_id: &Option<String>) -> Option<&[u8]> {
    api_id.as_deref().map(str::as_bytes)
}

/// The chain of `inherits_from` from one database: each database on it with what it inherits
/// from (null: nothing, or no access control yet), bounded against a stored loop.
const INHERITANCE_CHAIN: &str = "
    WITH RECURSIVE chain (id, parent, depth) AS (
        SELECT d.id, a.inherits_from, 0
          FROM databases d LEFT JOIN access_control a ON a.database_id = d.id
         WHERE d.id = $1
        UNION ALL
        SELECT d.id, a.inherits_from, c.depth + 1
          FROM chain c
          JOIN databases d ON d.id = c.parent
          LEFT JOIN access_control a ON a.database_id = d.id
         WHERE c.depth < 100000
    )
    SELECT id, parent FROM chain";

/// A parameter of a listing's SQL.
type Param = Box<dyn ToSql + Sync + Send>;

/// A listing's SQL with only the conditions it has, each on an indexed column (with the id), so
/// that the planner reads a filtered page from the index of the value asked for.
struct Filtered {
    table: &'static str,
    conditions: Vec<String>,
    params: Vec<Param>,
    limit: i64,
    /// A value with a NUL, which no stored text holds: the answer is empty.
    matches_nothing: bool,
}

impl Filtered {
    fn new(table: &'static str, page: &Page<'_>) -> Self {
        let mut query = Self {
            table,
            conditions: Vec::new(),
            params: Vec::new(),
            limit: limit(*page),
            matches_nothing: false,
        };
        if let Some(after) = after_bound(page) {
            query.condition("id >", Box::new(after.to_owned()));
        }
        query
    }

    fn condition(&mut self, column_and_operator: &str, value: Param) {
        self.params.push(value);
        self.conditions
            .push(format!("{column_and_operator} ${}", self.params.len()));
    }

    fn equals(&mut self, column: &str, value: &str) {
        match key(value) {
            Some(value) => self.condition(&format!("{column} ="), Box::new(value.to_owned())),
            None => self.matches_nothing = true,
        }
    }

    fn equals_bytes(&mut self, column: &str, value: &[u8]) {
        self.condition(&format!("{column} ="), Box::new(value.to_vec()));
    }

    /// The bytes of `column` start with those of `prefix`: a range on the index, from the
    /// prefix up to the prefix and a 0xFF byte (which no UTF-8 text holds, so every text with
    /// the prefix sorts before it).
    fn prefix(&mut self, column: &str, prefix: &str) {
        let low = prefix.as_bytes().to_vec();
        let mut high = low.clone();
        high.push(0xFF);
        self.params.push(Box::new(low));
        let low = self.params.len();
        self.params.push(Box::new(high));
        let high = self.params.len();
        self.conditions
            .push(format!("{column} >= ${low} AND {column} < ${high}"));
    }

    fn finish(mut self) -> (String, Vec<Param>) {
        let filter = if self.conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.conditions.join(" AND "))
        };
        self.params.push(Box::new(self.limit));
        let sql = format!(
            "SELECT id, record FROM {} {filter} ORDER BY id LIMIT ${}",
            self.table,
            self.params.len()
        );
        (sql, self.params)
    }
}

/// An audit event as its row's parameters: id, resource id, time, record.
struct EventRow {
    id: String,
    resource_id: String,
    at: i64,
    record: Vec<u8>,
}

impl EventRow {
    fn of(event: &AuditEvent) -> Result<Self, StorageError> {
        Ok(Self {
            id: event.id.as_str().to_owned(),
            resource_id: event.resource_id.clone(),
            at: event.at.as_micros(),
            record: record::encode_audit_event(event)?,
        })
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 4] {
        [&self.id, &self.resource_id, &self.at, &self.record]
    }
}

const INSERT_EVENT: &str =
    "INSERT INTO audit_events (id, resource_id, at, record) VALUES ($1, $2, $3, $4)";

/// Appends `event` in `txn`, the transaction of the change it records.
/// Appends a write's log in its transaction: its event, and its answer if any
/// ([`StorageError::AnswerExists`] when its key has one already).
async fn append(txn: &deadpool_postgres::Transaction<'_>, log: &WriteLog) -> Result<(), Failure> {
    let row = EventRow::of(&log.event)?;
    let insert = txn.prepare_cached(INSERT_EVENT).await?;
    txn.execute(&insert, &row.params()).await?;
    if let Some(answer) = &log.answer {
        put_answer(txn, answer).await?;
    }
    deliveries::put_new(txn, &log.outbox).await
}

/// Stores the answer of an idempotent write in the write's transaction.
async fn put_answer(
    txn: &deadpool_postgres::Transaction<'_>,
    answer: &StoredAnswer,
) -> Result<(), Failure> {
    let bytes = record::encode_answer(answer)?;
    let insert = txn
        .prepare_cached("INSERT INTO idempotency_answers (key, at, record) VALUES ($1, $2, $3)")
        .await?;
    let params: [&(dyn ToSql + Sync); 3] = [&answer.key.as_bytes(), &answer.at.as_micros(), &bytes];
    match txn.execute(&insert, &params).await {
        Ok(_) => Ok(()),
        Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            Err(StorageError::AnswerExists.into())
        }
        Err(error) => Err(error.into()),
    }
}

fn event_of(row: &Row) -> Result<AuditEvent, StorageError> {
    Ok(record::decode_audit_event(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

impl PostgresStorage {
    async fn try_replace_database(
        client: &mut Object,
        database: &Database,
        bytes: &[u8],
        expected: Timestamp,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        let select = txn
            .prepare_cached("SELECT id, record FROM databases WHERE id = $1 FOR UPDATE")
            .await?;
        let id = database.id.as_str();
        let row = txn
            .query_opt(&select, &[&id])
            .await?
            .ok_or(StorageError::NotFound)?;
        let stored = database_of(&row)?;
        rules::check_version(&stored.updated_at, &expected)?;
        rules::check_identity(&stored, database)?;
        let update = txn.prepare_cached(UPDATE_DATABASE).await?;
        let FilterColumns {
            adapter,
            group,
            tunnel,
            name,
        } = FilterColumns::of(database);
        let keys = seal_key_ids(database);
        txn.execute(
            &update,
            &[&id, &bytes, &adapter, &group, &tunnel, &name, &keys],
        )
        .await?;
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_remove_database(
        client: &mut Object,
        id: &str,
        expected: Timestamp,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        let select = txn
            .prepare_cached("SELECT id, record FROM databases WHERE id = $1 FOR UPDATE")
            .await?;
        let row = txn
            .query_opt(&select, &[&id])
            .await?
            .ok_or(StorageError::NotFound)?;
        let removed = database_of(&row)?;
        rules::check_version(&removed.updated_at, &expected)?;
        let heirs_sql = "SELECT d.id, d.record FROM access_control a
                           JOIN databases d ON d.id = a.database_id
                          WHERE a.inherits_from = $1";
        let heirs = txn.prepare_cached(heirs_sql).await?;
        let heirs = txn
            .query(&heirs, &[&removed.id.as_str()])
            .await?
            .iter()
            .map(|row| {
                let id = text(row, "id")?;
                let name = record::decode_database_name(&id, &bytes(row, "record")?)?;
                Ok(DatabaseRef { id, name })
            })
            .collect::<Result<Vec<_>, StorageError>>()?;
        rules::guard_delete(heirs)?;
        // Its access control goes with it (ON DELETE CASCADE), in this transaction.
        let delete = txn
            .prepare_cached("DELETE FROM databases WHERE id = $1")
            .await?;
        txn.execute(&delete, &[&id]).await?;
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_append(
        client: &mut Object,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_replace_query(
        client: &mut Object,
        query: &Query,
        bytes: &[u8],
        expected: Timestamp,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        let update = txn
            .prepare_cached(
                "UPDATE queries SET record = $2, status = $3, version = $4 \
                 WHERE id = $1 AND version = $5",
            )
            .await?;
        let id = query.id.as_str();
        let changed = txn
            .execute(
                &update,
                &[
                    &id,
                    &bytes,
                    &query.status.as_str(),
                    &query.updated_at.as_micros(),
                    &expected.as_micros(),
                ],
            )
            .await?;
        if changed == 0 {
            let exists = txn
                .query_opt("SELECT 1 FROM queries WHERE id = $1", &[&id])
                .await?
                .is_some();
            return Err(if exists {
                StorageError::Conflict
            } else {
                StorageError::NotFound
            }
            .into());
        }
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_replace_dashboard(
        client: &mut Object,
        dashboard: &Dashboard,
        bytes: &[u8],
        expected: Timestamp,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        let select = txn
            .prepare_cached("SELECT id, record FROM dashboards WHERE id = $1 FOR UPDATE")
            .await?;
        let id = dashboard.id.as_str();
        let row = txn
            .query_opt(&select, &[&id])
            .await?
            .ok_or(StorageError::NotFound)?;
        rules::check_version(&dashboard_of(&row)?.updated_at, &expected)?;
        let update = txn.prepare_cached(UPDATE_DASHBOARD).await?;
        txn.execute(&update, &[&id, &bytes, &dashboard.name.as_bytes()])
            .await?;
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_remove_dashboard(
        client: &mut Object,
        id: &str,
        expected: Timestamp,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        let select = txn
            .prepare_cached("SELECT id, record FROM dashboards WHERE id = $1 FOR UPDATE")
            .await?;
        let row = txn
            .query_opt(&select, &[&id])
            .await?
            .ok_or(StorageError::NotFound)?;
        rules::check_version(&dashboard_of(&row)?.updated_at, &expected)?;
        let delete = txn
            .prepare_cached("DELETE FROM dashboards WHERE id = $1")
            .await?;
        txn.execute(&delete, &[&id]).await?;
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_replace_access_control(
        client: &mut Object,
        database_id: &str,
        expected: &AccessControl,
        updated: &AccessControl,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        // The database row is locked against a concurrent delete for the transaction.
        let exists = txn
            .prepare_cached("SELECT 1 FROM databases WHERE id = $1 FOR KEY SHARE")
            .await?;
        if txn.query_opt(&exists, &[&database_id]).await?.is_none() {
            return Err(StorageError::NotFound.into());
        }
        let select = txn
            .prepare_cached("SELECT record FROM access_control WHERE database_id = $1 FOR UPDATE")
            .await?;
        let stored = match txn.query_opt(&select, &[&database_id]).await? {
            Some(row) => record::decode_access_control(database_id, &bytes(&row, "record")?)?,
            None => AccessControl::default(),
        };
        rules::check_version(&stored, expected)?;
        if let Some(target) = &updated.data_protection.inherits_from {
            let chain = txn.prepare_cached(INHERITANCE_CHAIN).await?;
            let mut parents: HashMap<String, Option<String>> = HashMap::new();
            // A target with a NUL names no database: the rule answers that it does not exist.
            let rows = match key(target) {
                Some(target) => txn.query(&chain, &[&target]).await?,
                None => Vec::new(),
            };
            for row in rows {
                let parent: Option<String> = row.try_get("parent").map_err(classify)?;
                parents.insert(text(&row, "id")?, parent);
            }
            rules::check_access_control(database_id, updated, |id| Ok(parents.get(id).cloned()))?;
        }
        let bytes = record::encode_access_control(database_id, updated)?;
        let upsert = txn
            .prepare_cached(
                "INSERT INTO access_control (database_id, inherits_from, record)
                 VALUES ($1, $2, $3)
                 ON CONFLICT (database_id)
                 DO UPDATE SET inherits_from = EXCLUDED.inherits_from, record = EXCLUDED.record",
            )
            .await?;
        let inherits_from = &updated.data_protection.inherits_from;
        txn.execute(&upsert, &[&database_id, inherits_from, &bytes])
            .await?;
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_remove_caller_key(
        client: &mut Object,
        id: &str,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        let delete = txn
            .prepare_cached("DELETE FROM caller_keys WHERE id = $1")
            .await?;
        if txn.execute(&delete, &[&id]).await? == 0 {
            return Err(StorageError::NotFound.into());
        }
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }

    async fn try_prune_audit(
        client: &mut Object,
        cutoff: Option<i64>,
        keep: Option<i64>,
    ) -> Result<u64, Failure> {
        let txn = begin(client).await?;
        let mut pruned = 0;
        if let Some(cutoff) = cutoff {
            let old = txn
                .prepare_cached("DELETE FROM audit_events WHERE at < $1")
                .await?;
            pruned += txn.execute(&old, &[&cutoff]).await?;
        }
        if let Some(keep) = keep {
            let excess = txn
                .prepare_cached(
                    "DELETE FROM audit_events WHERE id IN
                       (SELECT id FROM audit_events ORDER BY id DESC OFFSET $1)",
                )
                .await?;
            pruned += txn.execute(&excess, &[&keep]).await?;
        }
        txn.commit().await?;
        Ok(pruned)
    }

    async fn try_touch_caller_key(
        client: &mut Object,
        id: &str,
        at: Timestamp,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        let select = txn
            .prepare_cached("SELECT id, record FROM caller_keys WHERE id = $1 FOR UPDATE")
            .await?;
        let row = txn
            .query_opt(&select, &[&id])
            .await?
            .ok_or(StorageError::NotFound)?;
        let mut key = caller_key_of(&row)?;
        if key.last_used_at >= Some(at) {
            return Ok(());
        }
        key.last_used_at = Some(at);
        let bytes = record::encode_caller_key(&key)?;
        let update = txn
            .prepare_cached("UPDATE caller_keys SET record = $2 WHERE id = $1")
            .await?;
        txn.execute(&update, &[&id, &bytes]).await?;
        // Bookkeeping, with no event to confirm it: a lost answer is a lost touch.
        txn.commit().await?;
        Ok(())
    }
}

#[async_trait]
impl Storage for PostgresStorage {
    async fn create_database(&self, database: Database, log: WriteLog) -> Result<(), StorageError> {
        let bytes = record::encode_database(&database)?;
        let api_id = api_id_bytes(&database.api_id);
        let FilterColumns {
            adapter,
            group,
            tunnel,
            name,
        } = FilterColumns::of(&database);
        let keys = seal_key_ids(&database);
        let params: [&(dyn ToSql + Sync); 8] = [
            &database.id.as_str(),
            &api_id,
            &bytes,
            &adapter,
            &group,
            &tunnel,
            &name,
            &keys,
        ];
        self.insert(INSERT_DATABASE, &params, &log).await
    }

    async fn database(&self, id: &str) -> Result<Option<Database>, StorageError> {
        let Some(id) = key(id) else {
            return Ok(None);
        };
        let sql = "SELECT id, record FROM databases WHERE id = $1";
        self.one(sql, &[&id], database_of).await
    }

    async fn database_by_api_id(&self, api_id: &str) -> Result<Option<Database>, StorageError> {
        let sql = "SELECT id, record FROM databases WHERE api_id = $1";
        self.one(sql, &[&api_id.as_bytes()], database_of).await
    }

    async fn list_databases(
        &self,
        page: Page<'_>,
        filter: DatabaseFilter<'_>,
    ) -> Result<Vec<Database>, StorageError> {
        let mut query = Filtered::new("databases", &page);
        if let Some(adapter) = filter.adapter {
            query.equals("adapter", adapter.as_str());
        }
        if let Some(group) = filter.group {
            query.equals_bytes("grp", group.as_bytes());
        }
        if let Some(tunnel) = filter.tunnel_id {
            query.equals_bytes("tunnel_id", tunnel.as_bytes());
        }
        if let Some(api_id) = filter.api_id {
            query.equals_bytes("api_id", api_id.as_bytes());
        }
        if let Some(prefix) = filter.name_prefix {
            query.prefix("name", prefix);
        }
        if query.matches_nothing {
            return Ok(Vec::new());
        }
        let (sql, params) = query.finish();
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
        self.all(&sql, &params, database_of).await
    }

    async fn replace_database(
        &self,
        database: Database,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        if key(database.id.as_str()).is_none() {
            return Err(StorageError::NotFound);
        }
        let bytes = record::encode_database(&database)?;
        serializable!(self, |client, in_flight| Self::try_replace_database(
            client, &database, &bytes, expected, &log, &in_flight
        )
        .await)
    }

    async fn remove_database(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let Some(id) = key(id) else {
            return Err(StorageError::NotFound);
        };
        serializable!(self, |client, in_flight| Self::try_remove_database(
            client, id, expected, &log, &in_flight
        )
        .await)
    }

    async fn create_dashboard(
        &self,
        dashboard: Dashboard,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let bytes = record::encode_dashboard(&dashboard)?;
        let params: [&(dyn ToSql + Sync); 3] =
            [&dashboard.id.as_str(), &bytes, &dashboard.name.as_bytes()];
        self.insert(INSERT_DASHBOARD, &params, &log).await
    }

    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError> {
        let Some(id) = key(id) else {
            return Ok(None);
        };
        let sql = "SELECT id, record FROM dashboards WHERE id = $1";
        self.one(sql, &[&id], dashboard_of).await
    }

    async fn list_dashboards(
        &self,
        page: Page<'_>,
        filter: DashboardFilter<'_>,
    ) -> Result<Vec<Dashboard>, StorageError> {
        let mut query = Filtered::new("dashboards", &page);
        if let Some(prefix) = filter.name_prefix {
            query.prefix("name", prefix);
        }
        if query.matches_nothing {
            return Ok(Vec::new());
        }
        let (sql, params) = query.finish();
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
        self.all(&sql, &params, dashboard_of).await
    }

    async fn replace_dashboard(
        &self,
        dashboard: Dashboard,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        if key(dashboard.id.as_str()).is_none() {
            return Err(StorageError::NotFound);
        }
        let bytes = record::encode_dashboard(&dashboard)?;
        serializable!(self, |client, in_flight| Self::try_replace_dashboard(
            client, &dashboard, &bytes, expected, &log, &in_flight
        )
        .await)
    }

    async fn remove_dashboard(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let Some(id) = key(id) else {
            return Err(StorageError::NotFound);
        };
        serializable!(self, |client, in_flight| Self::try_remove_dashboard(
            client, id, expected, &log, &in_flight
        )
        .await)
    }

    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError> {
        let Some(database_id) = key(database_id) else {
            return Ok(None);
        };
        let sql = "SELECT a.record FROM databases d
                     LEFT JOIN access_control a ON a.database_id = d.id
                    WHERE d.id = $1";
        let rows = self.rows(sql, &[&database_id]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let stored: Option<Vec<u8>> = row.try_get("record").map_err(classify)?;
        Ok(Some(match stored {
            Some(bytes) => record::decode_access_control(database_id, &bytes)?,
            None => AccessControl::default(),
        }))
    }

    async fn replace_access_control(
        &self,
        database_id: &str,
        expected: AccessControl,
        access: AccessControl,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let Some(database_id) = key(database_id) else {
            return Err(StorageError::NotFound);
        };
        serializable!(self, |client, in_flight| {
            Self::try_replace_access_control(
                client,
                database_id,
                &expected,
                &access,
                &log,
                &in_flight,
            )
            .await
        })
    }

    async fn create_query(&self, query: Query, log: WriteLog) -> Result<(), StorageError> {
        let bytes = record::encode_query(&query)?;
        let params: [&(dyn ToSql + Sync); 6] = [
            &query.id.as_str(),
            &query.database_id.as_str(),
            &query.author.as_str(),
            &query.status.as_str(),
            &query.updated_at.as_micros(),
            &bytes,
        ];
        self.insert(
            "INSERT INTO queries (id, database_id, author, status, version, record) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &params,
            &log,
        )
        .await
    }

    async fn query(&self, id: &str) -> Result<Option<Query>, StorageError> {
        let Some(id) = key(id) else {
            return Ok(None);
        };
        let sql = "SELECT id, record FROM queries WHERE id = $1";
        self.one(sql, &[&id], query_of).await
    }

    async fn list_queries(
        &self,
        page: Page<'_>,
        filter: QueryFilter<'_>,
    ) -> Result<Vec<Query>, StorageError> {
        let after = after_bound(&page);
        let status = filter.status.map(|status| status.as_str());
        let mut conditions = Vec::new();
        let mut values: Vec<&str> = Vec::new();
        for (column, value) in [
            ("id <", after),
            ("database_id =", filter.database_id),
            ("author =", filter.author),
            ("status =", status),
        ] {
            if let Some(value) = value {
                if value.contains('\0') {
                    return Ok(Vec::new());
                }
                values.push(value);
                conditions.push(format!("{column} ${}", values.len()));
            }
        }
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        let mut params: Vec<&(dyn ToSql + Sync)> = values
            .iter()
            .map(|value| value as &(dyn ToSql + Sync))
            .collect();
        params.push(&limit);
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let sql = format!(
            "SELECT id, record FROM queries {filter} ORDER BY id DESC LIMIT ${}",
            params.len()
        );
        self.all(&sql, &params, query_of).await
    }

    async fn replace_query(
        &self,
        query: Query,
        expected: Timestamp,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        if key(query.id.as_str()).is_none() {
            return Err(StorageError::NotFound);
        }
        let bytes = record::encode_query(&query)?;
        match log {
            Some(log) => {
                serializable!(self, |client, in_flight| Self::try_replace_query(
                    client, &query, &bytes, expected, &log, &in_flight
                )
                .await)
            }
            None => {
                // One statement: the swap commits by itself (a claim writes no event).
                let id = query.id.as_str();
                let rows = self
                    .rows(
                        "WITH swapped AS (UPDATE queries SET record = $2, status = $3, \
                         version = $4 WHERE id = $1 AND version = $5 RETURNING 1) \
                         SELECT (SELECT count(*) FROM swapped), \
                                EXISTS (SELECT 1 FROM queries WHERE id = $1)",
                        &[
                            &id,
                            &bytes,
                            &query.status.as_str(),
                            &query.updated_at.as_micros(),
                            &expected.as_micros(),
                        ],
                    )
                    .await?;
                let row = rows.first().ok_or(StorageError::NotFound)?;
                let swapped: i64 = row.try_get(0).map_err(classify)?;
                let exists: bool = row.try_get(1).map_err(classify)?;
                match (swapped, exists) {
                    (1, _) => Ok(()),
                    (_, true) => Err(StorageError::Conflict),
                    _ => Err(StorageError::NotFound),
                }
            }
        }
    }

    async fn append_log(&self, log: WriteLog) -> Result<(), StorageError> {
        if log.answer.is_none() && log.outbox.is_empty() {
            // One statement that commits by itself.
            let row = EventRow::of(&log.event)?;
            let params = row.params();
            return self.rows(INSERT_EVENT, &params).await.map(|_| ());
        }
        serializable!(self, |client, in_flight| Self::try_append(
            client, &log, &in_flight
        )
        .await)
    }

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
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        self.swap_delivery(delivery, expected, log).await
    }

    async fn create_caller_key(&self, key: CallerKey, log: WriteLog) -> Result<(), StorageError> {
        let bytes = record::encode_caller_key(&key)?;
        let sql = "INSERT INTO caller_keys (id, digest, record) VALUES ($1, $2, $3)";
        let digest = key.digest.as_slice();
        self.insert(sql, &[&key.id.as_str(), &digest, &bytes], &log)
            .await
    }

    async fn caller_key(&self, id: &str) -> Result<Option<CallerKey>, StorageError> {
        let Some(id) = key(id) else {
            return Ok(None);
        };
        let sql = "SELECT id, record FROM caller_keys WHERE id = $1";
        self.one(sql, &[&id], caller_key_of).await
    }

    async fn caller_key_by_digest(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<CallerKey>, StorageError> {
        let sql = "SELECT id, record FROM caller_keys WHERE digest = $1";
        self.one(sql, &[&digest.as_slice()], caller_key_of).await
    }

    async fn list_caller_keys(&self) -> Result<Vec<CallerKey>, StorageError> {
        let sql = "SELECT id, record FROM caller_keys ORDER BY id";
        self.all(sql, &[], caller_key_of).await
    }

    async fn record_counts(&self) -> Result<RecordCounts, StorageError> {
        let sql = "SELECT (SELECT count(*) FROM databases), (SELECT count(*) FROM dashboards), \
                   (SELECT count(*) FROM caller_keys)";
        let counts = self
            .one(sql, &[], |row| {
                let count = |index: usize| -> Result<u64, StorageError> {
                    let count: i64 = row.try_get(index).map_err(classify)?;
                    Ok(u64::try_from(count).unwrap_or(0))
                };
                Ok(RecordCounts {
                    databases: count(0)?,
                    dashboards: count(1)?,
                    caller_keys: count(2)?,
                })
            })
            .await?;
        Ok(counts.unwrap_or_default())
    }

    async fn seal_keys(&self) -> Result<SealKeys, StorageError> {
        let rows = self.rows(SELECT_SEAL_KEYS, &[]).await?;
        seal_keys_of(&rows)
            .map_err(classify)?
            .ok_or_else(|| StorageError::backend(NoCurrentKey))
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
        self.bounded(async {
            let mut client = self.client().await?;
            let txn = client.transaction().await.map_err(classify)?;
            let drops = expected.keys.keys().any(|id| !keys.keys.contains_key(id));
            if drops {
                txn.batch_execute("LOCK TABLE databases IN EXCLUSIVE MODE")
                    .await
                    .map_err(classify)?;
            }
            txn.batch_execute("LOCK TABLE seal_keys IN EXCLUSIVE MODE")
                .await
                .map_err(classify)?;
            let rows = txn.query(SELECT_SEAL_KEYS, &[]).await.map_err(classify)?;
            let stored = seal_keys_of(&rows)
                .map_err(classify)?
                .ok_or_else(|| StorageError::backend(NoCurrentKey))?;
            rules::check_seal_keys(&stored, expected, &keys, std::iter::empty())?;
            for id in stored.keys.keys().filter(|id| !keys.keys.contains_key(id)) {
                let in_use = txn
                    .query_opt(
                        "SELECT 1 FROM databases WHERE $1 = ANY(seal_keys) LIMIT 1",
                        &[&i64::from(*id)],
                    )
                    .await
                    .map_err(classify)?;
                if in_use.is_some() {
                    return Err(StorageError::SealKeyInUse(*id));
                }
            }
            txn.batch_execute("DELETE FROM seal_keys")
                .await
                .map_err(classify)?;
            insert_seal_keys(&txn, &keys).await.map_err(classify)?;
            txn.commit().await.map_err(classify)
        })
        .await
    }

    async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        let Some(id) = key(id) else {
            return Err(StorageError::NotFound);
        };
        serializable!(self, |client, _in_flight| Self::try_touch_caller_key(
            client, id, at
        )
        .await)
    }

    async fn remove_caller_key(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        let Some(id) = key(id) else {
            return Err(StorageError::NotFound);
        };
        serializable!(self, |client, in_flight| Self::try_remove_caller_key(
            client, id, &log, &in_flight
        )
        .await)
    }

    async fn stored_answer(&self, key: &str) -> Result<Option<StoredAnswer>, StorageError> {
        let rows = self
            .rows(
                "SELECT record FROM idempotency_answers WHERE key = $1",
                &[&key.as_bytes()],
            )
            .await?;
        match rows.first() {
            None => Ok(None),
            Some(row) => Ok(Some(record::decode_answer(key, &bytes(row, "record")?)?)),
        }
    }

    async fn prune_answers(&self, before: Timestamp) -> Result<u64, StorageError> {
        let sql = "DELETE FROM idempotency_answers WHERE at < $1";
        self.bounded(async {
            let client = self.client().await?;
            let statement = client.prepare_cached(sql).await.map_err(classify)?;
            client
                .execute(&statement, &[&before.as_micros()])
                .await
                .map_err(classify)
        })
        .await
    }

    async fn list_audit(&self, query: AuditQuery<'_>) -> Result<Vec<AuditEvent>, StorageError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let after = query
            .after
            .map(|after| after.split('\0').next().unwrap_or_default());
        match query.resource {
            Some(resource) => {
                let Some(resource) = key(resource) else {
                    return Ok(Vec::new());
                };
                // Through the (resource_id, id) index.
                let sql = "SELECT id, record FROM audit_events
                            WHERE resource_id = $1 AND ($2::text IS NULL OR id < $2)
                            ORDER BY resource_id DESC, id DESC LIMIT $3";
                let params: [&(dyn ToSql + Sync); 3] = [&resource, &after, &limit];
                self.all(sql, &params, event_of).await
            }
            None => {
                let sql = "SELECT id, record FROM audit_events
                            WHERE $1::text IS NULL OR id < $1 ORDER BY id DESC LIMIT $2";
                let params: [&(dyn ToSql + Sync); 2] = [&after, &limit];
                self.all(sql, &params, event_of).await
            }
        }
    }

    async fn prune_audit(&self, retention: Retention, now: Timestamp) -> Result<u64, StorageError> {
        let cutoff = audit::cutoff(retention, now).map(Timestamp::as_micros);
        let keep = retention
            .max_events
            .map(|max| i64::try_from(max).unwrap_or(i64::MAX));
        serializable!(self, |client, _in_flight| Self::try_prune_audit(
            client, cutoff, keep
        )
        .await)
    }

    async fn check_ready(&self) -> Result<(), StorageError> {
        self.rows("SELECT 1", &[]).await.map(drop)
    }
}

mod deliveries;
