//! Queries as the console keeps them: a statement someone asked to run on a database as one of
//! its credentials, with the outcome of its one run (README, "Running queries").

use super::{QueryId, Timestamp};

/// Where a query is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryStatus {
    /// Stored; may run.
    Ready,
    /// Stored; the credential needs reviews before it may run.
    AwaitingReview,
    /// Running now (or its node stopped while it ran: the outcome was never recorded).
    Running,
    /// Ran, and every row it sent was sent.
    Succeeded,
    /// Ran, and failed (`run.error` says why).
    Failed,
}

wire_enum!(QueryStatus, [
    Ready => "ready",
    AwaitingReview => "awaiting_review",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
]);

/// A query: one statement for one database and credential, run at most once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// Assigned at creation (`qry_…`), ordered by creation time.
    pub id: QueryId,
    /// The database it runs on.
    pub database_id: String,
    /// The credential it runs as (an id of the database's credentials).
    pub credential_id: String,
    /// The statement, as given.
    pub query: String,
    /// The most rows it returns.
    pub limit: u32,
    /// Who created it (the principal's user).
    pub author: String,
    /// Where it is in its life.
    pub status: QueryStatus,
    /// Its run, once started.
    pub run: Option<QueryRun>,
    /// Creation time.
    pub inserted_at: Timestamp,
    /// Time of the last change; strictly increases.
    pub updated_at: Timestamp,
}

/// The one run of a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryRun {
    /// Who ran it (the principal's user).
    pub run_by: String,
    /// When it started.
    pub started_at: Timestamp,
    /// When it ended; `None` while it runs.
    pub finished_at: Option<Timestamp>,
    /// How many rows were sent.
    pub row_count: u64,
    /// Whether more rows existed than were sent (the row cap).
    pub truncated: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// Why it failed (scrubbed of secrets), when it did.
    pub error: Option<String>,
}
