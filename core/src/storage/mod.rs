//! The [`Storage`] trait: where databases and dashboards live.
//!
//! # Contract
//!
//! Every write is **one atomic change of a whole aggregate**, made as a **compare-and-swap on
//! its version**: a database with all its credentials, a dashboard with all its panels and
//! actions, a database's access control, a caller key. Core reads the record, validates the
//! request, seals its secrets and builds the new record and its audit event *outside any
//! transaction*; then it asks the store to write that record only if the stored one is still at
//! the version it read ([`Storage::replace_database`]), or absent ([`Storage::create_database`]),
//! or to delete it if it is at that version ([`Storage::remove_database`]). On
//! [`StorageError::Conflict`] core reads again and retries, in one bounded loop with jitter
//! ([`Edits`], in [`edits`]). No storage method takes a caller's closure or a plaintext secret.
//!
//! - A record's version is its `updated_at` (its ETag), which every write moves strictly
//!   forward; an access control, which has none, is compared whole.
//! - The store checks the version and applies only the rules that need lookups inside its
//!   transaction ([`rules`]): the identity of a replaced record (its `id` and `api_id`), the
//!   uniqueness of ids and `api_id`s, the inheritance chain of `inherits_from`, the delete
//!   guard. A refused write changes nothing.
//! - **Every write appends the audit event it is given in the same atomic change** (with the
//!   answer of an idempotent request, [`WriteLog`]; a second answer under one key is
//!   [`StorageError::AnswerExists`] and nothing is written)
//!   (`touch_caller_key` and `touch_session`, bookkeeping, and the state steps [`Storage::swap_query`] and
//!   [`Storage::swap_delivery`], which take no log, append none): a write that fails or is
//!   refused leaves no event, and no crash leaves an event without its change or a change
//!   without its event. Only [`Storage::prune_audit`] deletes events.
//! - **The outbox** ([`Delivery`]) is written the same way: a write's new deliveries come in its
//!   [`WriteLog`], so a trigger or a query waiting for reviews is never stored without the
//!   message it owes, nor the message without it. Workers take due deliveries with
//!   [`Storage::claim_deliveries`], which leases each one to one claimer at a time (on a shared
//!   store, across nodes), and write the outcome with [`Storage::swap_delivery`], a
//!   compare-and-swap like every other.
//!
//! Listings are ordered by id (ids sort by creation time) and use keyset pagination: `after` is
//! exclusive and may be any string, stored or not.
//!
//! Secrets reach a backend sealed ([`crate::model::SealedSecret`]): it stores those bytes as they
//! are and never needs a key. It keeps the [`SealKeys`] (which key seals now, and the check
//! value of every key its secrets need) and refuses a database whose secrets are not all
//! sealed under the current key ([`StorageError::SealKeyChanged`]), which is what lets a key
//! rotation end ([`rotate`]).
//!
//! Backends map their private failures into [`StorageError::Backend`]; the service logs them
//! and answers a generic 500. The conformance suite in `storage::testing` (feature `testing`)
//! checks all of this, and every backend runs it. `Arc<S>` and `Box<S>` of a storage are
//! storages too.
//!
//! ---
//!
//! *The manual's page on this part, as the repository shows it:*
#![doc = include_str!("../../../docs/storage.md")]

use std::fmt::Debug;

use async_trait::async_trait;

use crate::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Delivery, DeliveryStatus, Query,
    Retention, SavedQuery, Session, StoredAnswer, TargetKind, Timestamp, User,
};
use crate::seal::SealKeys;
use crate::validate::ValidationErrors;

pub use edits::{AccessEdit, DeleteCheck, Edits, MAX_ATTEMPTS, Retries};
pub use filter::{AuditFilter, DashboardFilter, DatabaseFilter, QueryFilter};
#[cfg(any(test, feature = "testing"))]
pub use forward::Counted;
pub use rotate::{RotateError, Rotation, rotate};

pub mod audit;
pub mod edits;
mod filter;
mod forward;
pub mod record;
mod rotate;
pub mod rules;
#[cfg(feature = "testing")]
pub mod testing;

/// What a write appends in its own atomic change: its audit event, when the request has an
/// `Idempotency-Key` its answer (docs/api.md, "Retrying a write safely"), and the deliveries it puts
/// in the outbox (docs/workflows.md, "Workflows and notifications").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteLog {
    /// The write's audit event.
    pub event: AuditEvent,
    /// The answer to give a retry of the same request.
    pub answer: Option<StoredAnswer>,
    /// New deliveries for the outbox ([`Storage::claim_deliveries`]).
    pub outbox: Vec<Delivery>,
}

impl From<AuditEvent> for WriteLog {
    fn from(event: AuditEvent) -> Self {
        Self {
            event,
            answer: None,
            outbox: Vec::new(),
        }
    }
}

/// A page of the audit trail: see [`Storage::list_audit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuditQuery<'a> {
    /// Only the events of this record (`db_…`, `dash_…`, `key_…`).
    pub resource: Option<&'a str>,
    /// Only events older than this one (its id; exclusive, any string).
    pub after: Option<&'a str>,
    /// At most this many.
    pub limit: usize,
    /// Which events it keeps beyond `resource` ([`AuditFilter::matches`]); a page holds
    /// `limit` kept events when so many exist, however many it had to pass over.
    pub filter: AuditFilter<'a>,
}

/// How a database is addressed by the delete operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatabaseKey<'a> {
    /// By its id.
    Id(&'a str),
    /// By its external `api_id`.
    ApiId(&'a str),
}

/// How many records of each kind a store holds ([`Storage::record_counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCounts {
    /// Databases.
    pub databases: u64,
    /// Dashboards.
    pub dashboards: u64,
    /// Caller keys (API keys and access tokens).
    pub caller_keys: u64,
}

/// One page request of a listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page<'a> {
    /// Return only records whose id sorts after this one.
    pub after: Option<&'a str>,
    /// At most this many records.
    pub limit: usize,
}

/// A database named in an error: its id and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseRef {
    /// The database's id.
    pub id: String,
    /// The database's name.
    pub name: String,
}

/// Everything a [`Storage`] call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// No record with that key.
    #[error("not found")]
    NotFound,
    /// A record with that id (or `api_id`) already exists.
    #[error("already exists")]
    AlreadyExists,
    /// The change is not valid (an edit refused it, or a rule the store checks such as an
    /// inheritance cycle); nothing was written.
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// The database's data protection policies are inherited by these databases; nothing was
    /// deleted.
    #[error("data protection policies are inherited by {} database(s)", .0.len())]
    Inherited(Vec<DatabaseRef>),
    /// A replace changed the id or `api_id` of the record it replaces (a bug in the caller);
    /// nothing was written.
    #[error("an edit changed the identity (id or api_id) of a record")]
    IdentityChanged,
    /// The record is not at the version the caller expected (an `If-Match` that does not
    /// match); nothing was written. Answered 412.
    #[error("the record is not at the expected version")]
    PreconditionFailed,
    /// A compare-and-swap write found the record at another version than the one it was
    /// built from (another write came in between); nothing was written. Core's write loop
    /// ([`Edits`]) reads again and retries; it reaches a caller only when the retries run out.
    #[error("the record changed while the write was being prepared")]
    Conflict,
    /// The backend failed (I/O, corruption, a lost connection…).
    #[error("storage backend failure: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The backend cannot be reached now (a database server restarting, a network down, no
    /// connection free within the time limit). Answered 503: try again. A write cut off while
    /// its commit was in flight may still have been applied, so a retried create can meet its
    /// own first attempt (setup by `api_id` is safe to retry as it is).
    #[error("storage unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The write's answer could not be stored: an answer is already stored under its
    /// `Idempotency-Key` (another request with that key got there first); nothing was written.
    #[error("an answer is already stored under that idempotency key")]
    AnswerExists,
    /// The connection to the backend was lost while the write was being committed, and whether
    /// it committed could not be found out: **it may have been saved**. Answered 503 with a
    /// detail that says so; a client should read the record back (or retry with the same
    /// `Idempotency-Key`) before writing it again.
    #[error("the write's outcome is unknown (it may have been saved): {0}")]
    Indeterminate(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The backend has no room for the write (a full disk, a quota). Nothing was written and
    /// every earlier acknowledged write stands; reads go on. Answered 503: try again once space
    /// is freed.
    #[error("storage full: {0}")]
    Full(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The database's secrets are not all sealed under the store's current seal key, which is
    /// this one (another node rotated the key); nothing was written. The writer adopts the key
    /// ([`crate::seal::Sealer::use_key`]), seals again and retries.
    #[error("the store seals under seal key {0} now")]
    SealKeyChanged(u32),
    /// The new seal keys drop this key, which a stored secret is still sealed under; nothing
    /// was written.
    #[error("a stored secret is still sealed under seal key {0}")]
    SealKeyInUse(u32),
}

impl From<ValidationErrors> for StorageError {
    fn from(errors: ValidationErrors) -> Self {
        StorageError::Invalid(errors)
    }
}

impl StorageError {
    /// Wraps a backend's own error.
    pub fn backend(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Backend(Box::new(error))
    }

    /// Wraps the error that makes the backend unreachable now.
    pub fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Unavailable(Box::new(error))
    }

    /// Wraps the error that cut a write off while it was being committed, when whether it
    /// committed can't be found out.
    pub fn indeterminate(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Indeterminate(Box::new(error))
    }

    /// Wraps the error that says the backend has no room for a write.
    pub fn full(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Full(Box::new(error))
    }
}

/// Where databases and dashboards are kept. See the [module documentation](self) for the
/// contract every implementation keeps.
#[async_trait]
pub trait Storage: Send + Sync + Debug + 'static {
    /// Stores a new database and `log`. [`StorageError::AlreadyExists`] when its id, or its
    /// `api_id`, is taken; [`StorageError::SealKeyChanged`] when a secret of it is sealed under
    /// another key than the current one of [`Storage::seal_keys`] (as for every database write).
    async fn create_database(&self, database: Database, log: WriteLog) -> Result<(), StorageError>;

    /// The database with this id.
    async fn database(&self, id: &str) -> Result<Option<Database>, StorageError>;

    /// The database with this `api_id`.
    async fn database_by_api_id(&self, api_id: &str) -> Result<Option<Database>, StorageError>;

    /// Databases ordered by id, those `filter` keeps. A durable backend serves a filter from
    /// indexes: the cost of a page does not grow with the number of databases stored.
    async fn list_databases(
        &self,
        page: Page<'_>,
        filter: DatabaseFilter<'_>,
    ) -> Result<Vec<Database>, StorageError>;

    /// Replaces the stored database with the same id by `database`, and appends `log`, if
    /// the stored one is at version `expected` (its `updated_at`).
    /// [`StorageError::NotFound`] when there is none, [`StorageError::Conflict`] when it is at
    /// another version, [`StorageError::IdentityChanged`] when `database` has another `api_id`.
    async fn replace_database(
        &self,
        database: Database,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// Deletes database `id` with everything that belongs to it (its access control), and
    /// appends `log`, if it is at version `expected`. [`StorageError::NotFound`] when there
    /// is none, [`StorageError::Conflict`] when it is at another version,
    /// [`StorageError::Inherited`] when another database inherits its data protection
    /// policies ([`rules::guard_delete`]).
    async fn remove_database(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// Stores a new dashboard and `log`. [`StorageError::AlreadyExists`] when its id is taken.
    async fn create_dashboard(
        &self,
        dashboard: Dashboard,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// The dashboard with this id.
    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError>;

    /// Dashboards ordered by id, those `filter` keeps (from an index on a durable backend).
    async fn list_dashboards(
        &self,
        page: Page<'_>,
        filter: DashboardFilter<'_>,
    ) -> Result<Vec<Dashboard>, StorageError>;

    /// Replaces the dashboard with the same id, and appends `log`, if it is at version
    /// `expected`; see [`Storage::replace_database`].
    async fn replace_dashboard(
        &self,
        dashboard: Dashboard,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// Deletes dashboard `id` with its panels and actions, and appends `log`, if it is at
    /// version `expected`; [`StorageError::NotFound`] or [`StorageError::Conflict`] otherwise.
    async fn remove_dashboard(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// The access control of a database (the default, empty one when none was written);
    /// `None` when the database does not exist.
    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError>;

    /// Replaces the access control of database `database_id` by `access`, and appends `log`,
    /// if the stored one equals `expected` (an access control has no version of its own: it is
    /// compared whole). [`StorageError::NotFound`] when the database does not exist,
    /// [`StorageError::Conflict`] when its access control is another. When
    /// `access.data_protection.inherits_from` is set, the backend checks it with
    /// [`rules::check_inheritance`] in the same transaction and answers its error. The delete
    /// guard ([`StorageError::Inherited`]) reads what this stores.
    async fn replace_access_control(
        &self,
        database_id: &str,
        expected: AccessControl,
        access: AccessControl,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// Stores a new caller credential and `log`. [`StorageError::AlreadyExists`] when its id
    /// or its digest is taken.
    async fn create_caller_key(&self, key: CallerKey, log: WriteLog) -> Result<(), StorageError>;

    /// The caller credential with this id.
    async fn caller_key(&self, id: &str) -> Result<Option<CallerKey>, StorageError>;

    /// The caller credential with this SHA-256 digest (an index lookup).
    async fn caller_key_by_digest(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<CallerKey>, StorageError>;

    /// Every caller credential, ordered by id.
    async fn list_caller_keys(&self) -> Result<Vec<CallerKey>, StorageError>;

    /// Records that a caller credential was used at `at` (keeps the later of the stored time and
    /// `at`). [`StorageError::NotFound`] when it does not exist (any more).
    async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError>;

    /// Deletes (revokes) caller credential `id` and appends `log`; [`StorageError::NotFound`]
    /// when it does not exist (any more). A caller key never changes once made (but for its
    /// last use), so it needs no version.
    async fn remove_caller_key(&self, id: &str, log: WriteLog) -> Result<(), StorageError>;

    /// Stores a new browser session or sign-in link and `log`; with `replacing`, removes that
    /// session or link in the same atomic change, and [`StorageError::NotFound`] (nothing
    /// written) when it is gone: what makes a sign-in link single use on every node, and a
    /// sign-in replace the session it came with. [`StorageError::AlreadyExists`] when the new
    /// one's id or digest is taken.
    async fn create_session(
        &self,
        session: Session,
        replacing: Option<&str>,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// The session or link with this SHA-256 digest (an index lookup), expired or not.
    async fn session_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Session>, StorageError>;

    /// Every session and link, ordered by id.
    async fn list_sessions(&self) -> Result<Vec<Session>, StorageError>;

    /// Records that a session was used at `at` (keeps the later of the stored time and `at`).
    /// [`StorageError::NotFound`] when it does not exist (any more).
    async fn touch_session(&self, id: &str, at: Timestamp) -> Result<(), StorageError>;

    /// Deletes (ends) session or link `id` and appends `log`; [`StorageError::NotFound`] when
    /// it does not exist (any more).
    async fn remove_session(&self, id: &str, log: WriteLog) -> Result<(), StorageError>;

    /// Deletes the sessions and links that expired by `now`, and the browser sessions last
    /// seen before `idle_before`; answers how many. Bookkeeping: it appends no event.
    async fn prune_sessions(
        &self,
        now: Timestamp,
        idle_before: Timestamp,
    ) -> Result<u64, StorageError>;

    /// The user named `name` (in its normal form), if any.
    async fn user(&self, name: &str) -> Result<Option<User>, StorageError>;

    /// Every user, ordered by name.
    async fn list_users(&self) -> Result<Vec<User>, StorageError>;

    /// Stores `user` with `log` (none for bookkeeping such as the time of a sign-in): a new
    /// one when `expected` is `None` ([`StorageError::AlreadyExists`] when the name is taken),
    /// else a replace of the stored record only if its `updated_at` is `expected`
    /// ([`StorageError::Conflict`] when it is not, [`StorageError::NotFound`] when there is
    /// none). Nothing is written on a refusal.
    async fn put_user(
        &self,
        user: User,
        expected: Option<Timestamp>,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError>;

    /// The saved query `id`, if any.
    async fn saved_query(&self, id: &str) -> Result<Option<SavedQuery>, StorageError>;

    /// Every saved query, ordered by id (the oldest first).
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>, StorageError>;

    /// Writes the saved query `id` with `log`: `saved` is what it becomes, `None` to remove it.
    /// With `expected` `None` it is a create ([`StorageError::AlreadyExists`] when the id is
    /// taken; [`StorageError::NotFound`] for a removal); else it happens only if the stored
    /// record's `updated_at` is `expected` ([`StorageError::Conflict`] when it is not,
    /// [`StorageError::NotFound`] when there is none). Nothing is written on a refusal.
    async fn put_saved_query(
        &self,
        id: &str,
        saved: Option<SavedQuery>,
        expected: Option<Timestamp>,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// The server setting `name` (such as the public URL a node recorded at its start).
    async fn setting(&self, name: &str) -> Result<Option<String>, StorageError>;

    /// Sets the server setting `name` to `value` (bookkeeping: no event).
    async fn put_setting(&self, name: &str, value: &str) -> Result<(), StorageError>;

    /// Removes the server setting `name`, if set (bookkeeping: no event).
    async fn remove_setting(&self, name: &str) -> Result<(), StorageError>;

    /// The answer stored under an `Idempotency-Key` (as [`crate::model::Idempotency::key`]
    /// scopes it), if any.
    async fn stored_answer(&self, key: &str) -> Result<Option<StoredAnswer>, StorageError>;

    /// Deletes the answers stored before `before`; answers how many.
    async fn prune_answers(&self, before: Timestamp) -> Result<u64, StorageError>;

    /// Audit events, newest first: of the record `query.resource` when given, from just
    /// before the event `query.after` (exclusive) when given, at most `query.limit`.
    async fn list_audit(&self, query: AuditQuery<'_>) -> Result<Vec<AuditEvent>, StorageError>;

    /// Deletes the audit events `retention` no longer keeps as of `now` (the oldest first) and
    /// answers how many. Every other write keeps every event.
    async fn prune_audit(&self, retention: Retention, now: Timestamp) -> Result<u64, StorageError>;

    /// How many databases, dashboards and caller keys the store holds now (for the operator's
    /// metrics; a backend answers without reading every record where it can).
    async fn record_counts(&self) -> Result<RecordCounts, StorageError>;

    /// The seal keys this store's secrets need: the current one, which every database write
    /// must seal under, and every key a stored secret may still be sealed under, each with its
    /// key check value ([`crate::seal::SealKeys`]). Nodes adopt them when they open the store.
    async fn seal_keys(&self) -> Result<SealKeys, StorageError>;

    /// Replaces the seal keys by `keys` if they are `expected` (compared whole):
    /// [`StorageError::Conflict`] otherwise; [`StorageError::SealKeyInUse`] when `keys` drops a
    /// key that a stored secret is still sealed under, checked in the same atomic change.
    async fn replace_seal_keys(
        &self,
        expected: &SealKeys,
        keys: SealKeys,
    ) -> Result<(), StorageError>;

    /// Stores a new query and `log`. [`StorageError::AlreadyExists`] when its id is taken.
    /// Queries are kept apart from their database: deleting a database keeps its history.
    async fn create_query(&self, query: Query, log: WriteLog) -> Result<(), StorageError>;

    /// The query with this id.
    async fn query(&self, id: &str) -> Result<Option<Query>, StorageError>;

    /// The query history **newest first** (by id, descending), those `filter` keeps: the
    /// queries whose id sorts *before* `page.after` when given (the next page of a listing), at
    /// most `page.limit`. A durable backend serves each filter from an index.
    async fn list_queries(
        &self,
        page: Page<'_>,
        filter: QueryFilter<'_>,
    ) -> Result<Vec<Query>, StorageError>;

    /// Replaces the query with the same id by `query` and appends `log`, in one atomic change,
    /// if the stored one is at version `expected` (its `updated_at`): [`StorageError::NotFound`]
    /// or [`StorageError::Conflict`] otherwise (a review, a run's outcome).
    async fn replace_query(
        &self,
        query: Query,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// Replaces the query with the same id by `query` if the stored one is at version
    /// `expected` (its `updated_at`): [`StorageError::NotFound`] or [`StorageError::Conflict`]
    /// otherwise, as [`Storage::replace_query`] does, but a state step that writes no event (a
    /// run's claim, a review that raises the requirement again). This compare-and-swap is what
    /// makes a query run once: of two runs that read it ready, one writes it running and the
    /// other conflicts.
    async fn swap_query(&self, query: Query, expected: Timestamp) -> Result<(), StorageError>;

    /// Appends a log that goes with no record's change (a panel run's event; a row action's
    /// event with its delivery), all of it or nothing.
    async fn append_log(&self, log: WriteLog) -> Result<(), StorageError>;

    /// Claims up to `limit` deliveries due at `now` ([`Delivery::is_due`]) whose target is of
    /// one of `kinds` (those the claimer can send), oldest due first, each replaced by
    /// [`Delivery::claimed`]`(now, lease_until)` in one atomic change, and answers them as
    /// claimed. A delivery is claimed by one caller at a time: concurrent claims (other tasks,
    /// other nodes on a shared store) never answer the same delivery while its lease lasts; a
    /// claim on a shared store skips those another claim holds rather than waiting for them.
    async fn claim_deliveries(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
        kinds: &[TargetKind],
    ) -> Result<Vec<Delivery>, StorageError>;

    /// The delivery with this id.
    async fn delivery(&self, id: &str) -> Result<Option<Delivery>, StorageError>;

    /// The outbox **newest first** (by id, descending), only those in `status` when given:
    /// the deliveries whose id sorts before `page.after` when given, at most `page.limit`.
    async fn list_deliveries(
        &self,
        page: Page<'_>,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<Delivery>, StorageError>;

    /// Replaces the delivery with the same id by `delivery` and appends `log`, in one atomic
    /// change, if the stored one is at version `expected` (its `updated_at`):
    /// [`StorageError::NotFound`] or [`StorageError::Conflict`] otherwise (an operator's retry
    /// of a dead delivery).
    async fn replace_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError>;

    /// Replaces the delivery with the same id by `delivery` if the stored one is at version
    /// `expected` (its `updated_at`): [`StorageError::NotFound`] or [`StorageError::Conflict`]
    /// otherwise (another worker claimed it after its lease ended), as
    /// [`Storage::replace_delivery`] does, but a state step that writes no event (a claim's
    /// attempt outcome).
    async fn swap_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
    ) -> Result<(), StorageError>;

    /// Whether the backend can serve requests now (a readiness check): `Ok` by default, for
    /// backends that live in the process; a networked backend answers
    /// [`StorageError::Unavailable`] while it cannot reach its server, and a durable one an
    /// error while its writes fail (a full disk) until one succeeds again.
    async fn check_ready(&self) -> Result<(), StorageError> {
        Ok(())
    }
}
