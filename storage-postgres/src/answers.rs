//! The stored answers of writes made with an `Idempotency-Key` (table `idempotency_answers`,
//! migration 4): each written in the transaction of the write it answers ([`put_answer`]),
//! read back by key, and pruned by age.

use dbconsole_core::model::{StoredAnswer, Timestamp};
use dbconsole_core::storage::{StorageError, record};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::fault::{Failure, classify};
use crate::sql::bytes;

/// Stores the answer of an idempotent write in the write's transaction.
pub(crate) async fn put_answer(
    txn: &deadpool_postgres::Transaction<'_>,
    answer: &StoredAnswer,
) -> Result<(), Failure> {
    let bytes = record::encode_answer(answer)?;
    let insert = txn
        .prepare_cached("INSERT INTO idempotency_answers (key, at, record) VALUES ($1, $2, $3)")
        .await?;
    let params: [&(dyn ToSql + Sync); 3] = [&answer.key.as_bytes(), &answer.at.as_micros(), &bytes];
    match txn.execute(&insert, &params).await {
        Ok(_) => Ok(()),
        Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            Err(StorageError::AnswerExists.into())
        }
        Err(error) => Err(error.into()),
    }
}

/// [`Storage::stored_answer`](dbconsole_core::storage::Storage::stored_answer).
pub(crate) async fn get(
    store: &PostgresStorage,
    key: &str,
) -> Result<Option<StoredAnswer>, StorageError> {
    let rows = store
        .rows(
            "SELECT record FROM idempotency_answers WHERE key = $1",
            &[&key.as_bytes()],
        )
        .await?;
    match rows.first() {
        None => Ok(None),
        Some(row) => Ok(Some(record::decode_answer(key, &bytes(row, "record")?)?)),
    }
}

/// [`Storage::prune_answers`](dbconsole_core::storage::Storage::prune_answers).
pub(crate) async fn prune(store: &PostgresStorage, before: Timestamp) -> Result<u64, StorageError> {
    let sql = "DELETE FROM idempotency_answers WHERE at < $1";
    store
        .bounded(async {
            let client = store.client().await?;
            let statement = client.prepare_cached(sql).await.map_err(classify)?;
            client
                .execute(&statement, &[&before.as_micros()])
                .await
                .map_err(classify)
        })
        .await
}
