//! Saved queries (`saved_queries`: id → record). They go into backups.

use dbconsole_core::model::{SavedQuery, Timestamp};
use dbconsole_core::storage::{Page, StorageError, WriteLog, record};
use redb::{ReadableTable, TableDefinition};

use crate::tables::{OrBackend, page};
use crate::{RedbStorage, write_log};

pub(crate) const SAVED_QUERIES: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("saved_queries");

/// [`Storage::saved_query`](dbconsole_core::storage::Storage::saved_query).
pub(crate) async fn saved_query(
    store: &RedbStorage,
    id: &str,
) -> Result<Option<SavedQuery>, StorageError> {
    let id = id.to_owned();
    store.read_now(|inner| {
        inner.read(|txn| {
            let saved = txn.open_table(SAVED_QUERIES).or_backend()?;
            match saved.get(id.as_str()).or_backend()? {
                None => Ok(None),
                Some(bytes) => Ok(Some(record::decode_saved_query(&id, bytes.value())?)),
            }
        })
    })
}

/// [`Storage::list_saved_queries`](dbconsole_core::storage::Storage::list_saved_queries).
pub(crate) async fn list_saved_queries(
    store: &RedbStorage,
) -> Result<Vec<SavedQuery>, StorageError> {
    store
        .run(move |inner| {
            inner.read(|txn| {
                let saved = txn.open_table(SAVED_QUERIES).or_backend()?;
                let every = Page {
                    after: None,
                    limit: usize::MAX,
                };
                page(&saved, every, record::decode_saved_query)
            })
        })
        .await
}

/// [`Storage::put_saved_query`](dbconsole_core::storage::Storage::put_saved_query).
pub(crate) async fn put_saved_query(
    store: &RedbStorage,
    id: &str,
    saved: Option<SavedQuery>,
    expected: Option<Timestamp>,
    log: WriteLog,
) -> Result<(), StorageError> {
    let bytes = saved.as_ref().map(record::encode_saved_query).transpose()?;
    let id = id.to_owned();
    store
        .write(move |_, txn| {
            let mut table = txn.open_table(SAVED_QUERIES).or_backend()?;
            let stored = match table.get(id.as_str()).or_backend()? {
                None => None,
                Some(bytes) => Some(record::decode_saved_query(&id, bytes.value())?),
            };
            match (stored, expected) {
                _ if bytes.is_none() && expected.is_none() => return Err(StorageError::NotFound),
                (Some(_), None) => return Err(StorageError::AlreadyExists),
                (None, Some(_)) => return Err(StorageError::NotFound),
                (Some(stored), Some(expected)) if stored.updated_at != expected => {
                    return Err(StorageError::Conflict);
                }
                _ => {}
            }
            match &bytes {
                Some(bytes) => {
                    table.insert(id.as_str(), bytes.as_slice()).or_backend()?;
                }
                None => {
                    table.remove(id.as_str()).or_backend()?;
                }
            }
            write_log::append(txn, &log)
        })
        .await
}
