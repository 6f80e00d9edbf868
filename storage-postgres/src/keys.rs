//! Callers' keys (table `caller_keys`, migration 1): API keys and access tokens, as the SHA-256
//! `digest` (unique) a presented key is looked up by, and the record.

use dbconsole_core::model::{CallerKey, Timestamp};
use dbconsole_core::storage::{StorageError, WriteLog, record};
use deadpool_postgres::Object;
use tokio_postgres::Row;

use crate::PostgresStorage;
use crate::fault::Failure;
use crate::retry::{InFlight, begin, commit, serializable};
use crate::sql::{bytes, key, text};
use crate::write_log::append;

fn caller_key_of(row: &Row) -> Result<CallerKey, StorageError> {
    Ok(record::decode_caller_key(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::create_caller_key`](dbconsole_core::storage::Storage::create_caller_key).
pub(crate) async fn create(
    store: &PostgresStorage,
    key: CallerKey,
    log: WriteLog,
) -> Result<(), StorageError> {
    let bytes = record::encode_caller_key(&key)?;
    let sql = "INSERT INTO caller_keys (id, digest, record) VALUES ($1, $2, $3)";
    let digest = key.digest.as_slice();
    store
        .insert(sql, &[&key.id.as_str(), &digest, &bytes], &log)
        .await
}

/// [`Storage::caller_key`](dbconsole_core::storage::Storage::caller_key).
pub(crate) async fn get(
    store: &PostgresStorage,
    id: &str,
) -> Result<Option<CallerKey>, StorageError> {
    let Some(id) = key(id) else {
        return Ok(None);
    };
    let sql = "SELECT id, record FROM caller_keys WHERE id = $1";
    store.one(sql, &[&id], caller_key_of).await
}

/// [`Storage::caller_key_by_digest`](dbconsole_core::storage::Storage::caller_key_by_digest).
pub(crate) async fn by_digest(
    store: &PostgresStorage,
    digest: &[u8; 32],
) -> Result<Option<CallerKey>, StorageError> {
    let sql = "SELECT id, record FROM caller_keys WHERE digest = $1";
    store.one(sql, &[&digest.as_slice()], caller_key_of).await
}

/// [`Storage::list_caller_keys`](dbconsole_core::storage::Storage::list_caller_keys).
pub(crate) async fn list(store: &PostgresStorage) -> Result<Vec<CallerKey>, StorageError> {
    let sql = "SELECT id, record FROM caller_keys ORDER BY id";
    store.all(sql, &[], caller_key_of).await
}

/// [`Storage::touch_caller_key`](dbconsole_core::storage::Storage::touch_caller_key).
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

/// [`Storage::remove_caller_key`](dbconsole_core::storage::Storage::remove_caller_key).
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
        .prepare_cached("DELETE FROM caller_keys WHERE id = $1")
        .await?;
    if txn.execute(&delete, &[&id]).await? == 0 {
        return Err(StorageError::NotFound.into());
    }
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}

async fn try_touch(client: &mut Object, id: &str, at: Timestamp) -> Result<(), Failure> {
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
