//! Dashboards (table `dashboards`, migrations 1 and 3): the record, and `name` for the prefix
//! filter. A replace or a remove locks the row (`SELECT … FOR UPDATE`) and compares its version.

use dbconsole_core::model::{Dashboard, Timestamp};
use dbconsole_core::storage::{DashboardFilter, Page, StorageError, WriteLog, record, rules};
use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::fault::Failure;
use crate::retry::{InFlight, begin, commit, serializable};
use crate::sql::{Filtered, bytes, key, text};
use crate::write_log::append;

const INSERT_DASHBOARD: &str = "INSERT INTO dashboards (id, record, name) VALUES ($1, $2, $3)";
const UPDATE_DASHBOARD: &str = "UPDATE dashboards SET record = $2, name = $3 WHERE id = $1";

fn dashboard_of(row: &Row) -> Result<Dashboard, StorageError> {
    Ok(record::decode_dashboard(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::create_dashboard`](dbconsole_core::storage::Storage::create_dashboard).
pub(crate) async fn create(
    store: &PostgresStorage,
    dashboard: Dashboard,
    log: WriteLog,
) -> Result<(), StorageError> {
    let bytes = record::encode_dashboard(&dashboard)?;
    let params: [&(dyn ToSql + Sync); 3] =
        [&dashboard.id.as_str(), &bytes, &dashboard.name.as_bytes()];
    store.insert(INSERT_DASHBOARD, &params, &log).await
}

/// [`Storage::dashboard`](dbconsole_core::storage::Storage::dashboard).
pub(crate) async fn get(
    store: &PostgresStorage,
    id: &str,
) -> Result<Option<Dashboard>, StorageError> {
    let Some(id) = key(id) else {
        return Ok(None);
    };
    let sql = "SELECT id, record FROM dashboards WHERE id = $1";
    store.one(sql, &[&id], dashboard_of).await
}

/// [`Storage::list_dashboards`](dbconsole_core::storage::Storage::list_dashboards).
pub(crate) async fn list(
    store: &PostgresStorage,
    page: Page<'_>,
    filter: DashboardFilter<'_>,
) -> Result<Vec<Dashboard>, StorageError> {
    let mut query = Filtered::new("dashboards", &page);
    if let Some(prefix) = filter.name_prefix {
        query.prefix("name", prefix);
    }
    if query.matches_nothing {
        return Ok(Vec::new());
    }
    let (sql, params) = query.finish();
    let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
    store.all(&sql, &params, dashboard_of).await
}

/// [`Storage::replace_dashboard`](dbconsole_core::storage::Storage::replace_dashboard).
pub(crate) async fn replace(
    store: &PostgresStorage,
    dashboard: Dashboard,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    if key(dashboard.id.as_str()).is_none() {
        return Err(StorageError::NotFound);
    }
    let bytes = record::encode_dashboard(&dashboard)?;
    serializable!(store, |client, in_flight| try_replace(
        client, &dashboard, &bytes, expected, &log, &in_flight
    )
    .await)
}

/// [`Storage::remove_dashboard`](dbconsole_core::storage::Storage::remove_dashboard).
pub(crate) async fn remove(
    store: &PostgresStorage,
    id: &str,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    let Some(id) = key(id) else {
        return Err(StorageError::NotFound);
    };
    serializable!(store, |client, in_flight| try_remove(
        client, id, expected, &log, &in_flight
    )
    .await)
}

async fn try_replace(
    client: &mut Object,
    dashboard: &Dashboard,
    bytes: &[u8],
    expected: Timestamp,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    let select = txn
        .prepare_cached("SELECT id, record FROM dashboards WHERE id = $1 FOR UPDATE")
        .await?;
    let id = dashboard.id.as_str();
    let row = txn
        .query_opt(&select, &[&id])
        .await?
        .ok_or(StorageError::NotFound)?;
    rules::check_version(&dashboard_of(&row)?.updated_at, &expected)?;
    let update = txn.prepare_cached(UPDATE_DASHBOARD).await?;
    txn.execute(&update, &[&id, &bytes, &dashboard.name.as_bytes()])
        .await?;
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}

async fn try_remove(
    client: &mut Object,
    id: &str,
    expected: Timestamp,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    let select = txn
        .prepare_cached("SELECT id, record FROM dashboards WHERE id = $1 FOR UPDATE")
        .await?;
    let row = txn
        .query_opt(&select, &[&id])
        .await?
        .ok_or(StorageError::NotFound)?;
    rules::check_version(&dashboard_of(&row)?.updated_at, &expected)?;
    let delete = txn
        .prepare_cached("DELETE FROM dashboards WHERE id = $1")
        .await?;
    txn.execute(&delete, &[&id]).await?;
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}
