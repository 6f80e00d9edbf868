//! The answers of idempotent writes (docs/api.md, "Retrying a write safely"): stored by
//! [`crate::write_log::append`] in the transaction of the write they answer, read by key, and
//! pruned by age through an index by time.
//!
//! | table | key → value |
//! |---|---|
//! | `idempotency_answers` | key → answer |
//! | `idempotency_answers_by_time` | (time in µs, key) → () |

use dbconsole_core::model::{StoredAnswer, Timestamp};
use dbconsole_core::storage::{StorageError, record};
use redb::{ReadTransaction, ReadableTable, TableDefinition, TableError, WriteTransaction};

use crate::RedbStorage;
use crate::tables::OrBackend;

pub(crate) const ANSWERS: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("idempotency_answers");
pub(crate) const BY_TIME: TableDefinition<'static, (i64, &str), ()> =
    TableDefinition::new("idempotency_answers_by_time");

/// Stores `answer` in `txn`; [`StorageError::AnswerExists`] when its key has one already.
pub(crate) fn put(txn: &WriteTransaction, answer: &StoredAnswer) -> Result<(), StorageError> {
    let mut answers = txn.open_table(ANSWERS).or_backend()?;
    let key = answer.key.as_str();
    if answers.get(key).or_backend()?.is_some() {
        return Err(StorageError::AnswerExists);
    }
    let bytes = record::encode_answer(answer)?;
    answers.insert(key, bytes.as_slice()).or_backend()?;
    let mut by_time = txn.open_table(BY_TIME).or_backend()?;
    by_time
        .insert((answer.at.as_micros(), key), ())
        .or_backend()?;
    Ok(())
}

/// The answer stored under `key`.
pub(crate) fn get(txn: &ReadTransaction, key: &str) -> Result<Option<StoredAnswer>, StorageError> {
    let answers = match txn.open_table(ANSWERS) {
        Ok(answers) => answers,
        // A file no build with answers has written to yet.
        Err(TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(error) => return Err(StorageError::backend(error)),
    };
    match answers.get(key).or_backend()? {
        None => Ok(None),
        Some(bytes) => Ok(Some(record::decode_answer(key, bytes.value())?)),
    }
}

/// Removes the answers stored before `before`, oldest first; how many.
pub(crate) fn prune(txn: &WriteTransaction, before: Timestamp) -> Result<u64, StorageError> {
    let mut answers = txn.open_table(ANSWERS).or_backend()?;
    let mut by_time = txn.open_table(BY_TIME).or_backend()?;
    let mut doomed = Vec::new();
    for entry in by_time
        .range((i64::MIN, "")..(before.as_micros(), ""))
        .or_backend()?
    {
        let (key, _) = entry.or_backend()?;
        let (at, key) = key.value();
        doomed.push((at, key.to_owned()));
    }
    for (at, key) in &doomed {
        answers.remove(key.as_str()).or_backend()?;
        by_time.remove((*at, key.as_str())).or_backend()?;
    }
    Ok(doomed.len() as u64)
}

/// [`Storage::stored_answer`](dbconsole_core::storage::Storage::stored_answer).
pub(crate) async fn stored_answer(
    store: &RedbStorage,
    key: &str,
) -> Result<Option<StoredAnswer>, StorageError> {
    store.read_now(|inner| inner.read(|txn| get(txn, key)))
}

/// [`Storage::prune_answers`](dbconsole_core::storage::Storage::prune_answers).
pub(crate) async fn prune_answers(
    store: &RedbStorage,
    before: Timestamp,
) -> Result<u64, StorageError> {
    store.write(move |_, txn| prune(txn, before)).await
}
