//! The query history: `queries` (id → record) and `queries_by` ((`<field>:<value>`, id) → ()),
//! one index entry per database, author and status of each query, rewritten with it. A listing
//! with a filter walks the index of its most selective field (database, then author, then
//! status) newest first and checks the others on the records it reads.

use dbconsole_core::model::{Query, Timestamp};
use dbconsole_core::storage::{Page, QueryFilter, StorageError, WriteLog, record, rules};
use redb::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};

use crate::tables::OrBackend;
use crate::{RedbStorage, write_log};

pub(crate) const QUERIES: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("queries");
pub(crate) const QUERIES_BY: TableDefinition<'static, (&str, &str), ()> =
    TableDefinition::new("queries_by");

fn index_keys(query: &Query) -> [String; 3] {
    [
        format!("database:{}", query.database_id),
        format!("author:{}", query.author),
        format!("status:{}", query.status),
    ]
}

/// Writes `query` (new when `expected` is `None`, else a swap at version `expected`) with its
/// index entries.
pub(crate) fn put(
    txn: &WriteTransaction,
    query: &Query,
    expected: Option<dbconsole_core::model::Timestamp>,
) -> Result<(), StorageError> {
    let mut queries = txn.open_table(QUERIES).or_backend()?;
    let mut index = txn.open_table(QUERIES_BY).or_backend()?;
    let id = query.id.as_str();
    let stored = match queries.get(id).or_backend()? {
        Some(bytes) => Some(record::decode_query(id, bytes.value())?),
        None => None,
    };
    match (&stored, expected) {
        (Some(_), None) => return Err(StorageError::AlreadyExists),
        (None, Some(_)) => return Err(StorageError::NotFound),
        (Some(stored), Some(expected)) => rules::check_version(&stored.updated_at, &expected)?,
        (None, None) => {}
    }
    if let Some(stored) = &stored {
        for key in index_keys(stored) {
            index.remove((key.as_str(), id)).or_backend()?;
        }
    }
    let bytes = record::encode_query(query)?;
    queries.insert(id, bytes.as_slice()).or_backend()?;
    for key in index_keys(query) {
        index.insert((key.as_str(), id), ()).or_backend()?;
    }
    Ok(())
}

/// Format 3: every query's names in their normal form (decoding puts them so), its record
/// written again and the `author:` index rebuilt from the records.
pub(crate) fn normalize_identities(txn: &WriteTransaction) -> Result<(), StorageError> {
    let mut queries = txn.open_table(QUERIES).or_backend()?;
    let mut index = txn.open_table(QUERIES_BY).or_backend()?;
    let mut stale = Vec::new();
    for entry in index.iter().or_backend()? {
        let (key, _) = entry.or_backend()?;
        let (field, id) = key.value();
        if field.starts_with("author:") {
            stale.push((field.to_owned(), id.to_owned()));
        }
    }
    for (field, id) in &stale {
        index.remove((field.as_str(), id.as_str())).or_backend()?;
    }
    let mut rewritten = Vec::new();
    for entry in queries.iter().or_backend()? {
        let (id, bytes) = entry.or_backend()?;
        let query = record::decode_query(id.value(), bytes.value())?;
        rewritten.push((
            id.value().to_owned(),
            record::encode_query(&query)?,
            query.author,
        ));
    }
    for (id, bytes, author) in rewritten {
        queries.insert(id.as_str(), bytes.as_slice()).or_backend()?;
        index
            .insert((format!("author:{author}").as_str(), id.as_str()), ())
            .or_backend()?;
    }
    Ok(())
}

pub(crate) fn get(txn: &ReadTransaction, id: &str) -> Result<Option<Query>, StorageError> {
    let queries = txn.open_table(QUERIES).or_backend()?;
    match queries.get(id).or_backend()? {
        Some(bytes) => Ok(Some(record::decode_query(id, bytes.value())?)),
        None => Ok(None),
    }
}

pub(crate) fn list(
    txn: &ReadTransaction,
    page: Page<'_>,
    filter: QueryFilter<'_>,
) -> Result<Vec<Query>, StorageError> {
    let queries = txn.open_table(QUERIES).or_backend()?;
    let mut found = Vec::new();
    let key = filter
        .database_id
        .map(|id| format!("database:{id}"))
        .or_else(|| filter.author.map(|author| format!("author:{author}")))
        .or_else(|| filter.status.map(|status| format!("status:{status}")));
    let Some(key) = key else {
        let range = match page.after {
            Some(after) => queries.range::<&str>(..after).or_backend()?,
            None => queries.range::<&str>(..).or_backend()?,
        };
        for entry in range.rev() {
            if found.len() >= page.limit {
                break;
            }
            let (id, bytes) = entry.or_backend()?;
            found.push(record::decode_query(id.value(), bytes.value())?);
        }
        return Ok(found);
    };
    let index = txn.open_table(QUERIES_BY).or_backend()?;
    let start = (key.as_str(), "");
    let range = match page.after {
        Some(after) => index.range(start..(key.as_str(), after)).or_backend()?,
        None => {
            // Every id of the key: up to the next key (the key with a byte after it).
            let end = format!("{key}\u{0}");
            index.range(start..(end.as_str(), "")).or_backend()?
        }
    };
    for entry in range.rev() {
        if found.len() >= page.limit {
            break;
        }
        let (entry, _) = entry.or_backend()?;
        let (_, id) = entry.value();
        let bytes = queries
            .get(id)
            .or_backend()?
            .ok_or_else(|| StorageError::backend(Missing(id.to_owned())))?;
        let query = record::decode_query(id, bytes.value())?;
        if filter.matches(&query) {
            found.push(query);
        }
    }
    Ok(found)
}

/// An index entry names a query that is not stored (a corrupt file).
#[derive(Debug, thiserror::Error)]
#[error("the query index names {0}, which is not stored")]
struct Missing(String);

/// [`Storage::create_query`](dbconsole_core::storage::Storage::create_query).
pub(crate) async fn create_query(
    store: &RedbStorage,
    query: Query,
    log: WriteLog,
) -> Result<(), StorageError> {
    store
        .write(move |_, txn| {
            put(txn, &query, None)?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::query`](dbconsole_core::storage::Storage::query).
pub(crate) async fn query(store: &RedbStorage, id: &str) -> Result<Option<Query>, StorageError> {
    store.read_now(|inner| inner.read(|txn| get(txn, id)))
}

/// [`Storage::list_queries`](dbconsole_core::storage::Storage::list_queries).
pub(crate) async fn list_queries(
    store: &RedbStorage,
    request: Page<'_>,
    filter: QueryFilter<'_>,
) -> Result<Vec<Query>, StorageError> {
    let after = request.after.map(str::to_owned);
    let limit = request.limit;
    let database_id = filter.database_id.map(str::to_owned);
    let author = filter.author.map(str::to_owned);
    let status = filter.status;
    store
        .run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                let filter = QueryFilter {
                    database_id: database_id.as_deref(),
                    author: author.as_deref(),
                    status,
                };
                list(txn, request, filter)
            })
        })
        .await
}

/// [`Storage::replace_query`](dbconsole_core::storage::Storage::replace_query) with `log`, and
/// [`Storage::swap_query`](dbconsole_core::storage::Storage::swap_query) without: the same
/// compare-and-swap, appending the log in its transaction when there is one.
pub(crate) async fn replace_query(
    store: &RedbStorage,
    query: Query,
    expected: Timestamp,
    log: Option<WriteLog>,
) -> Result<(), StorageError> {
    store
        .write(move |_, txn| {
            put(txn, &query, Some(expected))?;
            match &log {
                Some(log) => write_log::append(txn, log),
                None => Ok(()),
            }
        })
        .await
}
