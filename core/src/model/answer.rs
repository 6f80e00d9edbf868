//! The answer of a write made with an `Idempotency-Key` (docs/api.md, "Retrying a write safely"):
//! kept in the same atomic change as the write, so that a retry of the same request gets the
//! first answer instead of writing again.

use std::fmt;
use std::sync::Arc;

use super::{AccessControl, Dashboard, Database, Timestamp};

/// A write's answer as kept for its `Idempotency-Key`.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    /// The caller's key, scoped to the caller: see [`Idempotency::key`].
    pub key: String,
    /// SHA-256 of what the request asked (method, path, `If-Match`, body): the same key with
    /// another request is refused.
    pub fingerprint: [u8; 32],
    /// The HTTP status answered.
    pub status: u16,
    /// The `ETag` answered, if any.
    pub etag: Option<String>,
    /// The body answered (JSON; an answer never carries a secret).
    pub body: Vec<u8>,
    /// When it was answered: kept for a bounded time from then.
    pub at: Timestamp,
}

impl fmt::Debug for StoredAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredAnswer")
            .field("key", &self.key)
            .field("status", &self.status)
            .field("etag", &self.etag)
            .field("body_bytes", &self.body.len())
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

/// What a write produced, for [`Idempotency`] to render its answer from.
#[derive(Clone, Copy, Debug)]
pub enum Written<'a> {
    /// A database as created, updated, set up or deleted.
    Database(&'a Database),
    /// A dashboard as created, updated or deleted.
    Dashboard(&'a Dashboard),
    /// A database's access control as replaced.
    Access(&'a AccessControl),
    /// A query as created.
    Query(&'a super::Query),
    /// A delivery put in the outbox (a row action's trigger; a dead letter retried).
    Delivery(&'a super::Delivery),
}

/// Renders the answer (status, `ETag`, body) of a write from what it wrote.
pub type RenderAnswer = Arc<dyn Fn(Written<'_>) -> (u16, Option<String>, Vec<u8>) + Send + Sync>;

/// A write made with an `Idempotency-Key`: its key, the fingerprint of the request, and how to
/// render its answer, which the write stores with its change.
#[derive(Clone)]
pub struct Idempotency {
    /// The caller's `Idempotency-Key`, scoped to the caller (`<actor id> <key>`): two callers'
    /// keys never meet.
    pub key: String,
    /// See [`StoredAnswer::fingerprint`].
    pub fingerprint: [u8; 32],
    /// Renders the answer.
    pub render: RenderAnswer,
}

impl Idempotency {
    /// The answer to keep for what the write produced, made now.
    pub fn answer(&self, written: Written<'_>) -> StoredAnswer {
        let (status, etag, body) = (self.render)(written);
        StoredAnswer {
            key: self.key.clone(),
            fingerprint: self.fingerprint,
            status,
            etag,
            body,
            at: Timestamp::now(),
        }
    }
}

impl fmt::Debug for Idempotency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Idempotency {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.fingerprint == other.fingerprint
    }
}

impl Eq for Idempotency {}
