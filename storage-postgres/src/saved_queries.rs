//! Saved queries (table `saved_queries`, migration 12: the id, the version a change compares,
//! the record).

use dbconsole_core::model::{SavedQuery, Timestamp};
use dbconsole_core::storage::{StorageError, WriteLog, record};
use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use crate::PostgresStorage;
use crate::fault::Failure;
use crate::retry::{InFlight, begin, commit, serializable};
use crate::sql::{bytes, key, text};
use crate::write_log::append;

fn saved_of(row: &Row) -> Result<SavedQuery, StorageError> {
    Ok(record::decode_saved_query(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::saved_query`](dbconsole_core::storage::Storage::saved_query).
pub(crate) async fn saved_query(
    store: &PostgresStorage,
    id: &str,
) -> Result<Option<SavedQuery>, StorageError> {
    let Some(id) = key(id) else {
        return Ok(None);
    };
    let sql = "SELECT id, record FROM saved_queries WHERE id = $1";
    store.one(sql, &[&id], saved_of).await
}

/// [`Storage::list_saved_queries`](dbconsole_core::storage::Storage::list_saved_queries).
pub(crate) async fn list(store: &PostgresStorage) -> Result<Vec<SavedQuery>, StorageError> {
    let sql = "SELECT id, record FROM saved_queries ORDER BY id";
    store.all(sql, &[], saved_of).await
}

/// [`Storage::put_saved_query`](dbconsole_core::storage::Storage::put_saved_query).
pub(crate) async fn put(
    store: &PostgresStorage,
    id: &str,
    saved: Option<SavedQuery>,
    expected: Option<Timestamp>,
    log: WriteLog,
) -> Result<(), StorageError> {
    let Some(id) = key(id) else {
        return Err(StorageError::NotFound);
    };
    let written = match &saved {
        Some(saved) => Some((
            saved.updated_at.as_micros(),
            record::encode_saved_query(saved)?,
        )),
        None => None,
    };
    serializable!(store, |client, in_flight| try_put(
        client,
        id,
        written.as_ref(),
        expected,
        &log,
        &in_flight
    )
    .await)
}

async fn try_put(
    client: &mut Object,
    id: &str,
    written: Option<&(i64, Vec<u8>)>,
    expected: Option<Timestamp>,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    match (expected, written) {
        (None, None) => return Err(StorageError::NotFound.into()),
        (None, Some((updated_at, bytes))) => {
            let insert = txn
                .prepare_cached(
                    "INSERT INTO saved_queries (id, updated_at, record) VALUES ($1, $2, $3)",
                )
                .await?;
            match txn.execute(&insert, &[&id, updated_at, bytes]).await {
                Ok(_) => {}
                Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    return Err(StorageError::AlreadyExists.into());
                }
                Err(error) => return Err(error.into()),
            }
        }
        (Some(expected), written) => {
            let select = txn
                .prepare_cached("SELECT updated_at FROM saved_queries WHERE id = $1 FOR UPDATE")
                .await?;
            let row = txn
                .query_opt(&select, &[&id])
                .await?
                .ok_or(StorageError::NotFound)?;
            let stored: i64 = row.try_get("updated_at")?;
            if stored != expected.as_micros() {
                return Err(StorageError::Conflict.into());
            }
            match written {
                Some((updated_at, bytes)) => {
                    let update = txn
                        .prepare_cached(
                            "UPDATE saved_queries SET updated_at = $2, record = $3 WHERE id = $1",
                        )
                        .await?;
                    txn.execute(&update, &[&id, updated_at, bytes]).await?;
                }
                None => {
                    let delete = txn
                        .prepare_cached("DELETE FROM saved_queries WHERE id = $1")
                        .await?;
                    txn.execute(&delete, &[&id]).await?;
                }
            }
        }
    }
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}
