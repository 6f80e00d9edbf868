//! The query history (table `queries`, migration 6): the record, the history's filters
//! (`database_id`, `author`, `status`; newest first, by id) and `version`, the record's
//! `updated_at` in microseconds, which a replace compares in its `UPDATE … WHERE`.

use dbconsole_core::model::{Query, Timestamp};
use dbconsole_core::storage::{Page, QueryFilter, StorageError, WriteLog, record};
use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::fault::{Failure, classify};
use crate::retry::{InFlight, begin, commit, serializable};
use crate::sql::{after_bound, bytes, key, text};
use crate::write_log::append;

fn query_of(row: &Row) -> Result<Query, StorageError> {
    Ok(record::decode_query(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::create_query`](dbconsole_core::storage::Storage::create_query).
pub(crate) async fn create(
    store: &PostgresStorage,
    query: Query,
    log: WriteLog,
) -> Result<(), StorageError> {
    let bytes = record::encode_query(&query)?;
    let params: [&(dyn ToSql + Sync); 6] = [
        &query.id.as_str(),
        &query.database_id.as_str(),
        &query.author.as_str(),
        &query.status.as_str(),
        &query.updated_at.as_micros(),
        &bytes,
    ];
    store
        .insert(
            "INSERT INTO queries (id, database_id, author, status, version, record) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &params,
            &log,
        )
        .await
}

/// [`Storage::query`](dbconsole_core::storage::Storage::query).
pub(crate) async fn get(store: &PostgresStorage, id: &str) -> Result<Option<Query>, StorageError> {
    let Some(id) = key(id) else {
        return Ok(None);
    };
    let sql = "SELECT id, record FROM queries WHERE id = $1";
    store.one(sql, &[&id], query_of).await
}

/// [`Storage::list_queries`](dbconsole_core::storage::Storage::list_queries).
pub(crate) async fn list(
    store: &PostgresStorage,
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
    store.all(&sql, &params, query_of).await
}

/// [`Storage::replace_query`](dbconsole_core::storage::Storage::replace_query): in a
/// serializable transaction that writes the log, whose event settles a commit cut off midway.
pub(crate) async fn replace(
    store: &PostgresStorage,
    query: Query,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    if key(query.id.as_str()).is_none() {
        return Err(StorageError::NotFound);
    }
    let bytes = record::encode_query(&query)?;
    serializable!(store, |client, in_flight| try_replace(
        client, &query, &bytes, expected, &log, &in_flight
    )
    .await)
}

/// [`Storage::swap_query`](dbconsole_core::storage::Storage::swap_query): one statement that
/// commits by itself (a claim writes no event).
pub(crate) async fn swap(
    store: &PostgresStorage,
    query: Query,
    expected: Timestamp,
) -> Result<(), StorageError> {
    if key(query.id.as_str()).is_none() {
        return Err(StorageError::NotFound);
    }
    let bytes = record::encode_query(&query)?;
    let id = query.id.as_str();
    let rows = store
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

async fn try_replace(
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
