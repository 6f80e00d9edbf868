//! Core's half of every write: read the record, build the new one and its audit event outside
//! any transaction, then ask the store for a compare-and-swap on the version read; on
//! [`StorageError::Conflict`] (another write came in between) read again and retry, in one
//! bounded loop with jitter. See the [module documentation](super) for the contract.
//!
//! [`Edits`] is implemented for every [`Storage`]: `storage.update_database(id, edit, origin)`
//! reads, runs `edit` on the stored record here (it may run more than once, so it must be a
//! pure function of what it is given), builds the event and swaps. The edit never runs inside a
//! backend's transaction or lock, so what it does (parse, decode, seal) holds nothing up.

use std::future::Future;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

use super::{DatabaseKey, Storage, StorageError, WriteLog, audit, rules};
use crate::model::{AccessControl, CallerKey, Dashboard, Database, Origin, Query, Written};

/// The log of a write: its event, and its answer when the request has an `Idempotency-Key`.
fn log(origin: &Origin, event: crate::model::AuditEvent, written: Written<'_>) -> WriteLog {
    WriteLog {
        event,
        answer: origin.answer(written),
        outbox: Vec::new(),
    }
}

/// An edit of a database's access control: given the stored one, the new one, or why the edit
/// is refused ([`StorageError::Invalid`] for validation errors, which convert with `?`).
pub type AccessEdit = Box<dyn FnMut(&AccessControl) -> Result<AccessControl, StorageError> + Send>;

/// A condition on a delete, run on the record read (before the store's delete guard): `Ok`
/// lets the delete go on; an error (typically [`StorageError::PreconditionFailed`]) refuses it.
pub type DeleteCheck<T> = Box<dyn Fn(&T) -> Result<(), StorageError> + Send + Sync>;

/// How often a write that keeps meeting other writes is tried before it gives up with
/// [`StorageError::Conflict`] (answered 503: try again).
pub const MAX_ATTEMPTS: usize = 64;

/// The pauses between attempts: exponential from 1 ms to 50 ms, with jitter, so writers that
/// collided do not collide again in step; at most [`MAX_ATTEMPTS`] attempts in all. Every
/// retried write uses it: core's compare-and-swap loops, and a backend's own retries of a
/// transaction that lost a conflict (PostgreSQL's serialization failures).
#[derive(Debug)]
pub struct Retries(ExponentialBackoff);

impl Default for Retries {
    fn default() -> Self {
        Self::new()
    }
}

impl Retries {
    /// A new series of pauses, before the second attempt.
    pub fn new() -> Self {
        Self(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(1))
                .with_max_delay(Duration::from_millis(50))
                .with_max_times(MAX_ATTEMPTS - 1)
                .with_jitter()
                .build(),
        )
    }

    /// Waits before the next attempt; [`StorageError::Conflict`] when none is left.
    pub async fn pause(&mut self) -> Result<(), StorageError> {
        match self.0.next() {
            Some(pause) => {
                tokio::time::sleep(pause).await;
                Ok(())
            }
            None => Err(StorageError::Conflict),
        }
    }
}

/// The writes of the API, made on any [`Storage`] as read, build, compare-and-swap, retry.
pub trait Edits: Storage {
    /// Stores a new database with its `database_created` event.
    fn insert_database(
        &self,
        database: Database,
        origin: &Origin,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces database `id` with what `edit` makes of it; the stored result.
    /// [`StorageError::NotFound`] when there is none.
    fn update_database<E>(
        &self,
        id: &str,
        edit: E,
        origin: &Origin,
    ) -> impl Future<Output = Result<Database, StorageError>> + Send
    where
        E: FnMut(&Database) -> Result<Database, StorageError> + Send;

    /// Creates or replaces the database with this `api_id` with what `edit` makes of the stored
    /// one (or of `None`); never creates two databases with one `api_id`, however many race.
    fn upsert_database_by_api_id<E>(
        &self,
        api_id: &str,
        edit: E,
        origin: &Origin,
    ) -> impl Future<Output = Result<Database, StorageError>> + Send
    where
        E: FnMut(Option<&Database>) -> Result<Database, StorageError> + Send;

    /// Deletes the database `key` names, if `check` lets it; the record as it was.
    fn delete_database(
        &self,
        key: DatabaseKey<'_>,
        check: Option<DeleteCheck<Database>>,
        origin: &Origin,
    ) -> impl Future<Output = Result<Database, StorageError>> + Send;

    /// Stores a new dashboard with its event.
    fn insert_dashboard(
        &self,
        dashboard: Dashboard,
        origin: &Origin,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces dashboard `id` with what `edit` makes of it; see [`Edits::update_database`].
    fn update_dashboard<E>(
        &self,
        id: &str,
        edit: E,
        origin: &Origin,
    ) -> impl Future<Output = Result<Dashboard, StorageError>> + Send
    where
        E: FnMut(&Dashboard) -> Result<Dashboard, StorageError> + Send;

    /// Deletes dashboard `id`, if `check` lets it; the dashboard as it was.
    fn delete_dashboard(
        &self,
        id: &str,
        check: Option<DeleteCheck<Dashboard>>,
        origin: &Origin,
    ) -> impl Future<Output = Result<Dashboard, StorageError>> + Send;

    /// Replaces the access control of database `database_id` with what `edit` makes of it.
    fn update_access_control<E>(
        &self,
        database_id: &str,
        edit: E,
        origin: &Origin,
    ) -> impl Future<Output = Result<AccessControl, StorageError>> + Send
    where
        E: FnMut(&AccessControl) -> Result<AccessControl, StorageError> + Send;

    /// Stores a new caller key with its event.
    fn insert_caller_key(
        &self,
        key: CallerKey,
        origin: &Origin,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Revokes caller key `id`; the key as it was.
    fn delete_caller_key(
        &self,
        id: &str,
        origin: &Origin,
    ) -> impl Future<Output = Result<CallerKey, StorageError>> + Send;

    /// Replaces query `id` with what `change` makes of it, as one compare-and-swap retried on
    /// conflict: a review or a run's claim counts exactly once however many race. When
    /// `change` gives a log the write is [`Storage::replace_query`], which appends it; when it
    /// gives none (a run's claim, a review that raises the requirement again), it is
    /// [`Storage::swap_query`], a state step that writes no event. The outer error is the
    /// store's ([`StorageError::NotFound`] when there is no such query); the inner one is
    /// `change`'s refusal, which writes nothing.
    fn update_query<C, R>(
        &self,
        id: &str,
        change: C,
    ) -> impl Future<Output = Result<Result<Query, R>, StorageError>> + Send
    where
        C: FnMut(&Query) -> Result<(Query, Option<WriteLog>), R> + Send,
        R: Send;

    /// [`Edits::update_query`] from `read`, the query as the caller just read it: the first
    /// attempt swaps against its version without reading it again (a conflict reads it anew).
    fn change_query<C, R>(
        &self,
        read: Query,
        change: C,
    ) -> impl Future<Output = Result<Result<Query, R>, StorageError>> + Send
    where
        C: FnMut(&Query) -> Result<(Query, Option<WriteLog>), R> + Send,
        R: Send;
}

impl<S: Storage + ?Sized> Edits for S {
    async fn insert_database(
        &self,
        database: Database,
        origin: &Origin,
    ) -> Result<(), StorageError> {
        let event = audit::database_created(origin, &database);
        let log = log(origin, event, Written::Database(&database));
        self.create_database(database, log).await
    }

    async fn update_database<E>(
        &self,
        id: &str,
        mut edit: E,
        origin: &Origin,
    ) -> Result<Database, StorageError>
    where
        E: FnMut(&Database) -> Result<Database, StorageError> + Send,
    {
        let mut retries = Retries::new();
        loop {
            let stored = self.database(id).await?.ok_or(StorageError::NotFound)?;
            let updated = rules::edited_database(&stored, edit(&stored)?)?;
            let event = audit::database_updated(origin, &stored, &updated);
            let log = log(origin, event, Written::Database(&updated));
            match self
                .replace_database(updated.clone(), stored.updated_at, log)
                .await
            {
                Ok(()) => return Ok(updated),
                Err(StorageError::Conflict) => retries.pause().await?,
                Err(error) => return Err(error),
            }
        }
    }

    async fn upsert_database_by_api_id<E>(
        &self,
        api_id: &str,
        mut edit: E,
        origin: &Origin,
    ) -> Result<Database, StorageError>
    where
        E: FnMut(Option<&Database>) -> Result<Database, StorageError> + Send,
    {
        let mut retries = Retries::new();
        loop {
            let stored = self.database_by_api_id(api_id).await?;
            let updated =
                rules::upserted_database(api_id, stored.as_ref(), edit(stored.as_ref())?)?;
            let event = audit::database_set_up(origin, stored.as_ref(), &updated);
            let log = log(origin, event, Written::Database(&updated));
            let written = match &stored {
                Some(stored) => {
                    self.replace_database(updated.clone(), stored.updated_at, log)
                        .await
                }
                None => self.create_database(updated.clone(), log).await,
            };
            match written {
                Ok(()) => return Ok(updated),
                // Another writer changed, deleted or created this api_id in between.
                Err(StorageError::Conflict | StorageError::NotFound) => retries.pause().await?,
                Err(StorageError::AlreadyExists)
                    if stored.is_none() && self.database_by_api_id(api_id).await?.is_some() =>
                {
                    retries.pause().await?
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn delete_database(
        &self,
        key: DatabaseKey<'_>,
        check: Option<DeleteCheck<Database>>,
        origin: &Origin,
    ) -> Result<Database, StorageError> {
        let mut retries = Retries::new();
        loop {
            let stored = match key {
                DatabaseKey::Id(id) => self.database(id).await?,
                DatabaseKey::ApiId(api_id) => self.database_by_api_id(api_id).await?,
            };
            let stored = stored.ok_or(StorageError::NotFound)?;
            if let Some(check) = &check {
                check(&stored)?;
            }
            let event = audit::database_deleted(origin, key, &stored);
            let log = log(origin, event, Written::Database(&stored));
            match self
                .remove_database(stored.id.as_str(), stored.updated_at, log)
                .await
            {
                Ok(()) => return Ok(stored),
                Err(StorageError::Conflict) => retries.pause().await?,
                Err(error) => return Err(error),
            }
        }
    }

    async fn insert_dashboard(
        &self,
        dashboard: Dashboard,
        origin: &Origin,
    ) -> Result<(), StorageError> {
        let event = audit::dashboard_created(origin, &dashboard);
        let log = log(origin, event, Written::Dashboard(&dashboard));
        self.create_dashboard(dashboard, log).await
    }

    async fn update_dashboard<E>(
        &self,
        id: &str,
        mut edit: E,
        origin: &Origin,
    ) -> Result<Dashboard, StorageError>
    where
        E: FnMut(&Dashboard) -> Result<Dashboard, StorageError> + Send,
    {
        let mut retries = Retries::new();
        loop {
            let stored = self.dashboard(id).await?.ok_or(StorageError::NotFound)?;
            let updated = rules::edited_dashboard(&stored, edit(&stored)?)?;
            let event = audit::dashboard_updated(origin, &stored, &updated);
            let log = log(origin, event, Written::Dashboard(&updated));
            match self
                .replace_dashboard(updated.clone(), stored.updated_at, log)
                .await
            {
                Ok(()) => return Ok(updated),
                Err(StorageError::Conflict) => retries.pause().await?,
                Err(error) => return Err(error),
            }
        }
    }

    async fn delete_dashboard(
        &self,
        id: &str,
        check: Option<DeleteCheck<Dashboard>>,
        origin: &Origin,
    ) -> Result<Dashboard, StorageError> {
        let mut retries = Retries::new();
        loop {
            let stored = self.dashboard(id).await?.ok_or(StorageError::NotFound)?;
            if let Some(check) = &check {
                check(&stored)?;
            }
            let event = audit::dashboard_deleted(origin, &stored);
            let log = log(origin, event, Written::Dashboard(&stored));
            match self.remove_dashboard(id, stored.updated_at, log).await {
                Ok(()) => return Ok(stored),
                Err(StorageError::Conflict) => retries.pause().await?,
                Err(error) => return Err(error),
            }
        }
    }

    async fn update_access_control<E>(
        &self,
        database_id: &str,
        mut edit: E,
        origin: &Origin,
    ) -> Result<AccessControl, StorageError>
    where
        E: FnMut(&AccessControl) -> Result<AccessControl, StorageError> + Send,
    {
        let mut retries = Retries::new();
        loop {
            let stored = self
                .access_control(database_id)
                .await?
                .ok_or(StorageError::NotFound)?;
            let updated = edit(&stored)?;
            let event = audit::access_updated(origin, database_id, &stored, &updated);
            let log = log(origin, event, Written::Access(&updated));
            match self
                .replace_access_control(database_id, stored, updated.clone(), log)
                .await
            {
                Ok(()) => return Ok(updated),
                Err(StorageError::Conflict) => retries.pause().await?,
                Err(error) => return Err(error),
            }
        }
    }

    async fn insert_caller_key(&self, key: CallerKey, origin: &Origin) -> Result<(), StorageError> {
        let event = audit::caller_key_created(origin, &key);
        self.create_caller_key(key, event.into()).await
    }

    async fn delete_caller_key(
        &self,
        id: &str,
        origin: &Origin,
    ) -> Result<CallerKey, StorageError> {
        let stored = self.caller_key(id).await?.ok_or(StorageError::NotFound)?;
        let event = audit::caller_key_revoked(origin, &stored);
        self.remove_caller_key(id, event.into()).await?;
        Ok(stored)
    }

    async fn update_query<C, R>(
        &self,
        id: &str,
        change: C,
    ) -> Result<Result<Query, R>, StorageError>
    where
        C: FnMut(&Query) -> Result<(Query, Option<WriteLog>), R> + Send,
        R: Send,
    {
        let read = self.query(id).await?.ok_or(StorageError::NotFound)?;
        self.change_query(read, change).await
    }

    async fn change_query<C, R>(
        &self,
        read: Query,
        mut change: C,
    ) -> Result<Result<Query, R>, StorageError>
    where
        C: FnMut(&Query) -> Result<(Query, Option<WriteLog>), R> + Send,
        R: Send,
    {
        let mut retries = Retries::new();
        let id = read.id.as_str().to_owned();
        let mut read = Some(read);
        loop {
            let stored = match read.take() {
                Some(stored) => stored,
                None => self.query(&id).await?.ok_or(StorageError::NotFound)?,
            };
            let (updated, log) = match change(&stored) {
                Ok(changed) => changed,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let written = match log {
                Some(log) => {
                    self.replace_query(updated.clone(), stored.updated_at, log)
                        .await
                }
                None => self.swap_query(updated.clone(), stored.updated_at).await,
            };
            match written {
                Ok(()) => return Ok(Ok(updated)),
                Err(StorageError::Conflict) => retries.pause().await?,
                Err(error) => return Err(error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_are_bounded_and_jittered() {
        let pauses: Vec<_> = Retries::new().0.collect();
        assert_eq!(pauses.len(), MAX_ATTEMPTS - 1);
        // Jitter adds up to one more delay: never beyond twice the cap.
        assert!(
            pauses
                .iter()
                .all(|pause| *pause <= Duration::from_millis(100))
        );
        let again: Vec<_> = Retries::new().0.collect();
        assert_ne!(pauses, again, "two writers wait differently");
    }

    #[tokio::test]
    async fn a_write_gives_up_with_a_conflict_when_no_attempt_is_left() {
        let mut retries = Retries(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_micros(1))
                .with_max_times(2)
                .build(),
        );
        assert!(retries.pause().await.is_ok());
        assert!(retries.pause().await.is_ok());
        assert!(matches!(retries.pause().await, Err(StorageError::Conflict)));
    }
}
