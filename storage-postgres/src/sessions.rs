//! Browser sessions and sign-in links (table `sessions`, migration 10): the SHA-256 `digest`
//! (unique) a presented cookie or link token is looked up by, the times pruning reads, and the
//! record.

use dbconsole_core::model::{Session, SessionKind, Timestamp};
use dbconsole_core::storage::{StorageError, WriteLog, record};
use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use crate::PostgresStorage;
use crate::fault::{Failure, classify};
use crate::retry::{InFlight, begin, commit, serializable};
use crate::sql::{bytes, key, text};
use crate::write_log::append;

fn session_of(row: &Row) -> Result<Session, StorageError> {
    Ok(record::decode_session(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::create_session`](dbconsole_core::storage::Storage::create_session).
pub(crate) async fn create(
    store: &PostgresStorage,
    session: Session,
    replacing: Option<&str>,
    log: WriteLog,
) -> Result<(), StorageError> {
    let replacing = match replacing {
        None => None,
        Some(old) => Some(key(old).ok_or(StorageError::NotFound)?),
    };
    let bytes = record::encode_session(&session)?;
    serializable!(store, |client, in_flight| try_create(
        client, &session, &bytes, replacing, &log, &in_flight
    )
    .await)
}

async fn try_create(
    client: &mut Object,
    session: &Session,
    bytes: &[u8],
    replacing: Option<&str>,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    if let Some(old) = replacing {
        let delete = txn
            .prepare_cached("DELETE FROM sessions WHERE id = $1")
            .await?;
        if txn.execute(&delete, &[&old]).await? == 0 {
            return Err(StorageError::NotFound.into());
        }
    }
    let insert = txn
        .prepare_cached(
            "INSERT INTO sessions (id, digest, browser, last_seen_at, expires_at, record)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .await?;
    let browser = session.kind == SessionKind::Browser;
    let inserted = txn
        .execute(
            &insert,
            &[
                &session.id.as_str(),
                &session.digest.as_slice(),
                &browser,
                &session.last_seen_at.as_micros(),
                &session.expires_at.as_micros(),
                &bytes,
            ],
        )
        .await;
    match inserted {
        Ok(_) => {}
        Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            return Err(StorageError::AlreadyExists.into());
        }
        Err(error) => return Err(error.into()),
    }
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}

/// [`Storage::session_by_digest`](dbconsole_core::storage::Storage::session_by_digest).
pub(crate) async fn by_digest(
    store: &PostgresStorage,
    digest: &[u8; 32],
) -> Result<Option<Session>, StorageError> {
    let sql = "SELECT id, record FROM sessions WHERE digest = $1";
    store.one(sql, &[&digest.as_slice()], session_of).await
}

/// [`Storage::list_sessions`](dbconsole_core::storage::Storage::list_sessions).
pub(crate) async fn list(store: &PostgresStorage) -> Result<Vec<Session>, StorageError> {
    let sql = "SELECT id, record FROM sessions ORDER BY id";
    store.all(sql, &[], session_of).await
}

/// [`Storage::touch_session`](dbconsole_core::storage::Storage::touch_session).
pub(crate) async fn touch(
    store: &PostgresStorage,
    id: &str,
    at: Timestamp,
) -> Result<(), StorageError> {
    let Some(id) = key(id) else {
        return Err(StorageError::NotFound);
    };
    serializable!(store, |client, _in_flight| try_touch(client, id, at).await)
}

async fn try_touch(client: &mut Object, id: &str, at: Timestamp) -> Result<(), Failure> {
    let txn = begin(client).await?;
    let select = txn
        .prepare_cached("SELECT id, record FROM sessions WHERE id = $1 FOR UPDATE")
        .await?;
    let row = txn
        .query_opt(&select, &[&id])
        .await?
        .ok_or(StorageError::NotFound)?;
    let mut session = session_of(&row)?;
    if session.last_seen_at >= at {
        return Ok(());
    }
    session.last_seen_at = at;
    let bytes = record::encode_session(&session)?;
    let update = txn
        .prepare_cached("UPDATE sessions SET record = $2, last_seen_at = $3 WHERE id = $1")
        .await?;
    txn.execute(&update, &[&id, &bytes, &at.as_micros()])
        .await?;
    // Bookkeeping, with no event to confirm it: a lost answer is a lost touch.
    txn.commit().await?;
    Ok(())
}

/// [`Storage::remove_session`](dbconsole_core::storage::Storage::remove_session).
pub(crate) async fn remove(
    store: &PostgresStorage,
    id: &str,
    log: WriteLog,
) -> Result<(), StorageError> {
    let Some(id) = key(id) else {
        return Err(StorageError::NotFound);
    };
    serializable!(store, |client, in_flight| try_remove(
        client, id, &log, &in_flight
    )
    .await)
}

async fn try_remove(
    client: &mut Object,
    id: &str,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    let delete = txn
        .prepare_cached("DELETE FROM sessions WHERE id = $1")
        .await?;
    if txn.execute(&delete, &[&id]).await? == 0 {
        return Err(StorageError::NotFound.into());
    }
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}

/// [`Storage::prune_sessions`](dbconsole_core::storage::Storage::prune_sessions).
pub(crate) async fn prune(
    store: &PostgresStorage,
    now: Timestamp,
    idle_before: Timestamp,
) -> Result<u64, StorageError> {
    let sql = "DELETE FROM sessions
               WHERE expires_at <= $1 OR (browser AND last_seen_at < $2)";
    store
        .bounded(async {
            let client = store.client().await?;
            let statement = client.prepare_cached(sql).await.map_err(classify)?;
            client
                .execute(&statement, &[&now.as_micros(), &idle_before.as_micros()])
                .await
                .map_err(classify)
        })
        .await
}
