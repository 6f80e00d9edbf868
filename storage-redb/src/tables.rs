//! The tables several files share (opening checks and creates them, a backup copies them, and
//! more than one aggregate reads them), and what reading any table shares: [`OrBackend`] (redb's
//! errors as storage errors), [`page`] (a page of records by id) and [`counts`]. The tables of
//! one aggregate alone are defined in its file (`audit`, `answers`, `queries`, `deliveries`,
//! `index`).
//!
//! | table | key → value | read and written by |
//! |---|---|---|
//! | `meta` | `&str` → `&[u8]` | `file` (format version, key check), `seal_keys`, `index` |
//! | `databases`, `database_api_ids` | id → record, `api_id` → id | `databases`; `access`, `seal_keys` and `index` read them |
//! | `dashboards` | id → record | `dashboards`; `index` reads it |
//! | `inherited_by`, `access_control` | id → ids, database id → record | `access`; a database's delete removes its own |
//! | `caller_keys`, `caller_key_digests` | key id → record, digest → key id | `keys` |

use std::ops::Bound;

use dbconsole_core::storage::record::RecordError;
use dbconsole_core::storage::{Page, RecordCounts, StorageError};
use redb::{
    MultimapTableDefinition, ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition,
};

use crate::{RedbStorage, error};

pub(crate) const META: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("meta");
pub(crate) const DATABASES: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("databases");
pub(crate) const DATABASE_API_IDS: TableDefinition<'static, &str, &str> =
    TableDefinition::new("database_api_ids");
pub(crate) const DASHBOARDS: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("dashboards");
pub(crate) const INHERITED_BY: MultimapTableDefinition<'static, &str, &str> =
    MultimapTableDefinition::new("inherited_by");
pub(crate) const ACCESS_CONTROL: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("access_control");
pub(crate) const CALLER_KEYS: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("caller_keys");
pub(crate) const CALLER_KEY_DIGESTS: TableDefinition<'static, &[u8; 32], &str> =
    TableDefinition::new("caller_key_digests");

/// Maps redb's errors into storage errors: [`StorageError::Full`] for a full disk,
/// [`StorageError::Unavailable`] for other I/O failures, else [`StorageError::Backend`].
pub(crate) trait OrBackend<T> {
    fn or_backend(self) -> Result<T, StorageError>;
}

impl<T, E: Into<redb::Error>> OrBackend<T> for Result<T, E> {
    fn or_backend(self) -> Result<T, StorageError> {
        self.map_err(|error| error::storage_error(error.into()))
    }
}

/// The records of a table from `page.after` (exclusive), at most `page.limit` of them.
pub(crate) fn page<T>(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    page: Page<'_>,
    mut decode: impl FnMut(&str, &[u8]) -> Result<T, RecordError>,
) -> Result<Vec<T>, StorageError> {
    let start = match page.after {
        Some(after) => Bound::Excluded(after),
        None => Bound::Unbounded,
    };
    let mut records = Vec::new();
    if page.limit == 0 {
        return Ok(records);
    }
    for entry in table
        .range::<&str>((start, Bound::Unbounded))
        .or_backend()?
    {
        let (key, value) = entry.or_backend()?;
        records.push(decode(key.value(), value.value())?);
        if records.len() == page.limit {
            break;
        }
    }
    Ok(records)
}

/// How many databases, dashboards and caller keys `txn` sees (the tables' lengths, no scan).
pub(crate) fn counts(txn: &ReadTransaction) -> Result<RecordCounts, StorageError> {
    let count = |table: &dyn ReadableTableMetadata| table.len().or_backend();
    Ok(RecordCounts {
        databases: count(&txn.open_table(DATABASES).or_backend()?)?,
        dashboards: count(&txn.open_table(DASHBOARDS).or_backend()?)?,
        caller_keys: count(&txn.open_table(CALLER_KEYS).or_backend()?)?,
    })
}

/// [`Storage::record_counts`](dbconsole_core::storage::Storage::record_counts).
pub(crate) async fn record_counts(store: &RedbStorage) -> Result<RecordCounts, StorageError> {
    store.read_now(|inner| inner.read(counts))
}
