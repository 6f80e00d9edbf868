//! The [`Storage`] trait: where databases and dashboards live.
//!
//! # Contract
//!
//! Every method is **one atomic change of a whole aggregate**: a database with all its
//! credentials, or a dashboard with all its panels and actions. A call either applies entirely
//! or not at all, and concurrent calls never lose each other's changes:
//!
//! - the `update_*` and [`Storage::upsert_database_by_api_id`] methods are atomic
//!   read-modify-write: the backend reads the stored record, calls the edit closure, and stores
//!   what the closure returns, with no other write to that record in between (a lock, a
//!   serialized write transaction, or a version check that retries — the closure may then be
//!   called more than once, so it must be a pure function of its argument);
//! - [`Storage::upsert_database_by_api_id`] creates at most one database per `api_id`, however
//!   many callers race;
//! - an edit closure (or a delete's [`DeleteCheck`]) that returns `Err` changes nothing, and
//!   its error comes back as it is (validation errors as [`StorageError::Invalid`]);
//! - the deletes return the record as it was just before it was removed;
//! - **every write that changes something appends one audit event in the same atomic change**,
//!   built by [`audit`] from the records as they are in that change and the write's [`Origin`]
//!   (`touch_caller_key`, bookkeeping, appends none): a write that fails or is refused leaves
//!   no event, and no crash leaves an event without its change or a change without its event.
//!   Only [`Storage::prune_audit`] deletes events.
//!
//! Listings are ordered by id (ids sort by creation time) and use keyset pagination: `after` is
//! exclusive and may be any string, stored or not.
//!
//! The rules every backend applies inside its transaction (an edit keeps the record's identity,
//! `inherits_from` makes no cycle, the delete guard) live in [`rules`], once; a backend supplies
//! only the lookups they need.
//!
//! Secrets reach a backend sealed ([`crate::model::SealedSecret`]): it stores those bytes as they
//! are and never needs the key.
//!
//! Backends map their private failures into [`StorageError::Backend`]; the service logs them
//! and answers a generic 500. The conformance suite in `storage::testing` (feature `testing`)
//! checks all of this, and every backend runs it. `Arc<S>` and `Box<S>` of a storage are
//! storages too.

use std::fmt::Debug;

use async_trait::async_trait;

use crate::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Origin, Retention, Timestamp,
};
use crate::validate::ValidationErrors;

pub use filter::{DashboardFilter, DatabaseFilter};

pub mod audit;
mod filter;
mod forward;
pub mod record;
pub mod rules;
#[cfg(feature = "testing")]
pub mod testing;

/// An edit of a stored database: given the stored record, returns the new one, or why the edit
/// is refused ([`StorageError::Invalid`] for validation errors, which convert with `?`;
/// [`StorageError::PreconditionFailed`] when the record is not at the version the caller
/// expected). Must be pure (it may run more than once). What it refuses with is answered as it
/// is, and nothing is written.
pub type DatabaseEdit =
    Box<dyn FnMut(&Database) -> Result<Database, StorageError> + Send + 'static>;

/// An upsert of a database by `api_id`: given the stored record with that `api_id` (or `None`),
/// returns the record to store; refuses as a [`DatabaseEdit`] does. Must be pure (it may run
/// more than once).
pub type DatabaseUpsert =
    Box<dyn FnMut(Option<&Database>) -> Result<Database, StorageError> + Send + 'static>;

/// An edit of a stored dashboard; see [`DatabaseEdit`].
pub type DashboardEdit =
    Box<dyn FnMut(&Dashboard) -> Result<Dashboard, StorageError> + Send + 'static>;

/// An edit of a database's access control (permissions and data protection); see
/// [`DatabaseEdit`].
pub type AccessEdit =
    Box<dyn FnMut(&AccessControl) -> Result<AccessControl, StorageError> + Send + 'static>;

/// A condition on a delete: given the stored record, `Ok` lets the delete go on; an error
/// (typically [`StorageError::PreconditionFailed`]) refuses it and is answered as it is, with
/// nothing deleted. It runs in the deleting transaction, before the delete guard. Must be pure.
pub type DeleteCheck<T> = Box<dyn FnMut(&T) -> Result<(), StorageError> + Send + 'static>;

/// A page of the audit trail: see [`Storage::list_audit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditQuery<'a> {
    /// Only the events of this record (`db_…`, `dash_…`, `key_…`).
    pub resource: Option<&'a str>,
    /// Only events older than this one (its id; exclusive, any string).
    pub after: Option<&'a str>,
    /// At most this many.
    pub limit: usize,
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
    /// The edit closure rejected the change; nothing was written.
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// The database's data protection policies are inherited by these databases; nothing was
    /// deleted.
    #[error("data protection policies are inherited by {} database(s)", .0.len())]
    Inherited(Vec<DatabaseRef>),
    /// An edit closure changed the id or `api_id` of the record it edited (a bug in the
    /// caller); nothing was written.
    #[error("an edit changed the identity (id or api_id) of a record")]
    IdentityChanged,
    /// The record is not at the version the caller expected (an `If-Match` that does not
    /// match, refused by an edit closure or a [`DeleteCheck`]); nothing was written.
    #[error("the record is not at the expected version")]
    PreconditionFailed,
    /// The backend failed (I/O, corruption, a lost connection…).
    #[error("storage backend failure: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The backend cannot be reached now (a database server restarting, a network down, no
    /// connection free within the time limit). Answered 503: try again. A write cut off while
    /// its commit was in flight may still have been applied, so a retried create can meet its
    /// own first attempt (setup by `api_id` is safe to retry as it is).
    #[error("storage unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The backend has no room for the write (a full disk, a quota). Nothing was written and
    /// every earlier acknowledged write stands; reads go on. Answered 503: try again once space
    /// is freed.
    #[error("storage full: {0}")]
    Full(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
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

    /// Wraps the error that says the backend has no room for a write.
    pub fn full(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Full(Box::new(error))
    }
}

/// Where databases and dashboards are kept. See the [module documentation](self) for the
/// contract every implementation keeps.
#[async_trait]
pub trait Storage: Send + Sync + Debug + 'static {
    /// Stores a new database. [`StorageError::AlreadyExists`] when its id, or its `api_id`, is
    /// taken.
    async fn insert_database(
        &self,
        database: Database,
        origin: &Origin,
    ) -> Result<(), StorageError>;

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

    /// Atomically replaces the database with what `edit` returns for it; returns the stored
    /// result. [`StorageError::NotFound`] when there is none. The edit must keep `id` and
    /// `api_id`.
    async fn update_database(
        &self,
        id: &str,
        edit: DatabaseEdit,
        origin: &Origin,
    ) -> Result<Database, StorageError>;

    /// Atomically creates or replaces the database with this `api_id` with what `edit` returns;
    /// never creates two databases with the same `api_id`.
    async fn upsert_database_by_api_id(
        &self,
        api_id: &str,
        edit: DatabaseUpsert,
        origin: &Origin,
    ) -> Result<Database, StorageError>;

    /// Atomically deletes a database with everything that belongs to it and returns it as it
    /// was. [`StorageError::NotFound`] when there is none; the error of `check` when it refuses
    /// the stored record; [`StorageError::Inherited`] when another database inherits its data
    /// protection policies (in each case nothing changes).
    async fn delete_database(
        &self,
        key: DatabaseKey<'_>,
        check: Option<DeleteCheck<Database>>,
        origin: &Origin,
    ) -> Result<Database, StorageError>;

    /// Stores a new dashboard. [`StorageError::AlreadyExists`] when its id is taken.
    async fn insert_dashboard(
        &self,
        dashboard: Dashboard,
        origin: &Origin,
    ) -> Result<(), StorageError>;

    /// The dashboard with this id.
    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError>;

    /// Dashboards ordered by id, those `filter` keeps (from an index on a durable backend).
    async fn list_dashboards(
        &self,
        page: Page<'_>,
        filter: DashboardFilter<'_>,
    ) -> Result<Vec<Dashboard>, StorageError>;

    /// Atomically replaces the dashboard with what `edit` returns for it; see
    /// [`Storage::update_database`].
    async fn update_dashboard(
        &self,
        id: &str,
        edit: DashboardEdit,
        origin: &Origin,
    ) -> Result<Dashboard, StorageError>;

    /// Atomically deletes a dashboard with its panels and actions and returns it as it was;
    /// [`StorageError::NotFound`] when there is none, the error of `check` when it refuses.
    async fn delete_dashboard(
        &self,
        id: &str,
        check: Option<DeleteCheck<Dashboard>>,
        origin: &Origin,
    ) -> Result<Dashboard, StorageError>;

    /// The access control of a database (the default, empty one when none was written);
    /// `None` when the database does not exist.
    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError>;

    /// Atomically replaces a database's access control with what `edit` returns for it.
    /// [`StorageError::NotFound`] when the database does not exist. When the result's
    /// `data_protection.inherits_from` is set, the backend checks it with
    /// [`rules::check_inheritance`] in the same transaction and answers its error. The delete guard
    /// ([`StorageError::Inherited`]) reads what this stores.
    async fn update_access_control(
        &self,
        database_id: &str,
        edit: AccessEdit,
        origin: &Origin,
    ) -> Result<AccessControl, StorageError>;

    /// Stores a new caller credential. [`StorageError::AlreadyExists`] when its id or its digest
    /// is taken.
    async fn insert_caller_key(&self, key: CallerKey, origin: &Origin) -> Result<(), StorageError>;

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

    /// Deletes (revokes) a caller credential and returns it.
    async fn delete_caller_key(&self, id: &str, origin: &Origin)
    -> Result<CallerKey, StorageError>;

    /// Audit events, newest first: of the record `query.resource` when given, from just
    /// before the event `query.after` (exclusive) when given, at most `query.limit`.
    async fn list_audit(&self, query: AuditQuery<'_>) -> Result<Vec<AuditEvent>, StorageError>;

    /// Deletes the audit events `retention` no longer keeps as of `now` (the oldest first) and
    /// answers how many. Every other write keeps every event.
    async fn prune_audit(&self, retention: Retention, now: Timestamp) -> Result<u64, StorageError>;

    /// How many databases, dashboards and caller keys the store holds now (for the operator's
    /// metrics; a backend answers without reading every record where it can).
    async fn record_counts(&self) -> Result<RecordCounts, StorageError>;

    /// Whether the backend can serve requests now (a readiness check): `Ok` by default, for
    /// backends that live in the process; a networked backend answers
    /// [`StorageError::Unavailable`] while it cannot reach its server, and a durable one an
    /// error while its writes fail (a full disk) until one succeeds again.
    async fn check_ready(&self) -> Result<(), StorageError> {
        Ok(())
    }
}
