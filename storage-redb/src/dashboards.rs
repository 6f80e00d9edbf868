//! Dashboards: `dashboards` (id → a dashboard with its panels, actions and input mappings),
//! written in one transaction with its listing index entry (`index`, by name) and its audit
//! event.

use dbconsole_core::model::{Dashboard, Timestamp};
use dbconsole_core::storage::{DashboardFilter, Page, StorageError, WriteLog, record, rules};
use redb::ReadableTable;

use crate::tables::{DASHBOARDS, OrBackend, page};
use crate::{RedbStorage, index, write_log};

/// [`Storage::create_dashboard`](dbconsole_core::storage::Storage::create_dashboard).
pub(crate) async fn create_dashboard(
    store: &RedbStorage,
    dashboard: Dashboard,
    log: WriteLog,
) -> Result<(), StorageError> {
    store
        .write(move |_, txn| {
            let mut dashboards = txn.open_table(DASHBOARDS).or_backend()?;
            let id = dashboard.id.as_str();
            if dashboards.get(id).or_backend()?.is_some() {
                return Err(StorageError::AlreadyExists);
            }
            let bytes = record::encode_dashboard(&dashboard)?;
            dashboards.insert(id, bytes.as_slice()).or_backend()?;
            index::reindex_dashboard(txn, None, Some(&dashboard))?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::dashboard`](dbconsole_core::storage::Storage::dashboard).
pub(crate) async fn dashboard(
    store: &RedbStorage,
    id: &str,
) -> Result<Option<Dashboard>, StorageError> {
    store.read_recent(
        |recent| &mut recent.dashboards,
        id,
        |txn| {
            let dashboards = txn.open_table(DASHBOARDS).or_backend()?;
            match dashboards.get(id).or_backend()? {
                None => Ok(None),
                Some(bytes) => Ok(Some(record::decode_dashboard(id, bytes.value())?)),
            }
        },
    )
}

/// [`Storage::list_dashboards`](dbconsole_core::storage::Storage::list_dashboards).
pub(crate) async fn list_dashboards(
    store: &RedbStorage,
    request: Page<'_>,
    filter: DashboardFilter<'_>,
) -> Result<Vec<Dashboard>, StorageError> {
    let after = request.after.map(str::to_owned);
    let limit = request.limit;
    let name_prefix = filter.name_prefix.map(str::to_owned);
    store
        .run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                let filter = DashboardFilter {
                    name_prefix: name_prefix.as_deref(),
                };
                if let Some(found) = index::list_dashboards(txn, request, filter)? {
                    return Ok(found);
                }
                let dashboards = txn.open_table(DASHBOARDS).or_backend()?;
                page(&dashboards, request, record::decode_dashboard)
            })
        })
        .await
}

/// [`Storage::replace_dashboard`](dbconsole_core::storage::Storage::replace_dashboard).
pub(crate) async fn replace_dashboard(
    store: &RedbStorage,
    dashboard: Dashboard,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    store
        .write(move |_, txn| {
            let mut dashboards = txn.open_table(DASHBOARDS).or_backend()?;
            let id = dashboard.id.as_str();
            let stored = match dashboards.get(id).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_dashboard(id, bytes.value())?,
            };
            rules::check_version(&stored.updated_at, &expected)?;
            let bytes = record::encode_dashboard(&dashboard)?;
            dashboards.insert(id, bytes.as_slice()).or_backend()?;
            index::reindex_dashboard(txn, Some(&stored), Some(&dashboard))?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::remove_dashboard`](dbconsole_core::storage::Storage::remove_dashboard).
pub(crate) async fn remove_dashboard(
    store: &RedbStorage,
    id: &str,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    let id = id.to_owned();
    store
        .write(move |_, txn| {
            let mut dashboards = txn.open_table(DASHBOARDS).or_backend()?;
            let stored = match dashboards.get(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_dashboard(&id, bytes.value())?,
            };
            rules::check_version(&stored.updated_at, &expected)?;
            dashboards.remove(id.as_str()).or_backend()?;
            index::reindex_dashboard(txn, Some(&stored), None)?;
            write_log::append(txn, &log)
        })
        .await
}
