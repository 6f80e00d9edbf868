//! Running an operation: within the time bound, on a connection from the pool, in a
//! serializable transaction run again while it loses serialization conflicts
//! ([`serializable!`]); and a write whose `COMMIT` went out and whose answer never came
//! (an indeterminate commit), settled by asking PostgreSQL what became of it.
//!
//! [`serializable!`] is shared by path: `pub(crate) use serializable;` right after its
//! definition, and `use crate::retry::serializable;` in the files that run it, so the order of
//! the `mod` declarations does not matter. Its body names what it uses by full path
//! (`$crate::retry::InFlight`, `$crate::fault::Failure`…), so a caller needs no other import
//! for it; it calls `bounded`, `client` and `settle` on the store it is given, which are
//! `pub(crate)` for that.

use std::future::Future;
use std::time::Duration;

use dbconsole_core::storage::StorageError;
use deadpool_postgres::{Object, PoolError};
use tokio_postgres::IsolationLevel;

use crate::PostgresStorage;
use crate::fault::{Failure, classify, unreachable};

/// The operation took longer than the configured bound.
#[derive(Debug, thiserror::Error)]
#[error("PostgreSQL did not answer within {0:?}")]
struct TimedOut(Duration);

/// Runs one attempt of a serializable transaction again while it loses serialization
/// conflicts. `$attempt` is an expression using `$client` (a `&mut Object`) that evaluates to
/// `Result<T, Failure>`.
macro_rules! serializable {
    ($self:ident, |$client:ident, $in_flight:ident| $attempt:expr) => {{
        let $in_flight = $crate::retry::InFlight::default();
        let outcome = $self
            .bounded(async {
                let mut object = $self.client().await?;
                // The backoff with jitter of every retried write (core's).
                let mut retries = ::dbconsole_core::storage::Retries::new();
                loop {
                    let $client = &mut object;
                    match $attempt {
                        Ok(value) => break Ok(value),
                        Err($crate::fault::Failure::Fail(error)) => break Err(error),
                        Err($crate::fault::Failure::Retry(error)) => {
                            if retries.pause().await.is_err() {
                                break Err(::dbconsole_core::storage::StorageError::backend(error));
                            }
                        }
                    }
                }
            })
            .await;
        $self.settle(outcome, &$in_flight).await
    }};
}

pub(crate) use serializable;

impl PostgresStorage {
    /// Runs `work` within the time bound; a bound reached is [`StorageError::Unavailable`].
    pub(crate) async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, StorageError>>,
    ) -> Result<T, StorageError> {
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(StorageError::unavailable(TimedOut(self.timeout))),
        }
    }

    pub(crate) async fn client(&self) -> Result<Object, StorageError> {
        self.pool.get().await.map_err(|error| match error {
            PoolError::Backend(error) => classify(error),
            other => StorageError::unavailable(other),
        })
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
    pub(crate) async fn settle<T: Default>(
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
pub(crate) struct InFlight(std::sync::Mutex<Option<Pending>>);

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
pub(crate) async fn commit(
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
pub(crate) async fn commit_known(
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

/// Starts a transaction at `SERIALIZABLE` isolation on `client`.
pub(crate) async fn begin(
    client: &mut Object,
) -> Result<deadpool_postgres::Transaction<'_>, Failure> {
    Ok(client
        .build_transaction()
        .isolation_level(IsolationLevel::Serializable)
        .start()
        .await?)
}
