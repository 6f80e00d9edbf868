//! Databases (table `databases`, migrations 1, 3 and 5): the record, `api_id` (unique), the
//! listing filters' columns ([`FilterColumns`]) and the ids of the seal keys its secrets are
//! sealed under. A replace or a remove locks the row (`SELECT … FOR UPDATE`) and compares its
//! version; a remove is refused while another database inherits from it.

use dbconsole_core::model::{Database, Timestamp};
use dbconsole_core::storage::{
    DatabaseFilter, DatabaseRef, Page, StorageError, WriteLog, record, rules,
};
use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::fault::Failure;
use crate::retry::{InFlight, begin, commit, serializable};
use crate::seal_keys::seal_key_ids;
use crate::sql::{Filtered, bytes, key, text};
use crate::write_log::append;

const INSERT_DATABASE: &str =
    "INSERT INTO databases (id, api_id, record, adapter, grp, tunnel_id, name, seal_keys)
                               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const UPDATE_DATABASE: &str = "UPDATE databases
                                  SET record = $2, adapter = $3, grp = $4, tunnel_id = $5, name = $6,
                                      seal_keys = $7
                                WHERE id = $1";

/// The columns a listing filters on, beside the record (schema version 3): adapter, and the
/// bytes of group, tunnel and name.
pub(crate) struct FilterColumns<'a> {
    pub(crate) adapter: &'static str,
    pub(crate) group: Option<&'a [u8]>,
    pub(crate) tunnel: Option<&'a [u8]>,
    pub(crate) name: &'a [u8],
}

impl<'a> FilterColumns<'a> {
    pub(crate) fn of(db: &'a Database) -> Self {
        Self {
            adapter: db.adapter.as_str(),
            group: db.group.as_deref().map(str::as_bytes),
            tunnel: db.tunnel_id.as_deref().map(str::as_bytes),
            name: db.name.as_bytes(),
        }
    }
}

fn api_id_bytes(api_id: &Option<String>) -> Option<&[u8]> {
    api_id.as_deref().map(str::as_bytes)
}

fn database_of(row: &Row) -> Result<Database, StorageError> {
    Ok(record::decode_database(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::create_database`](dbconsole_core::storage::Storage::create_database).
pub(crate) async fn create(
    store: &PostgresStorage,
    database: Database,
    log: WriteLog,
) -> Result<(), StorageError> {
    let bytes = record::encode_database(&database)?;
    let api_id = api_id_bytes(&database.api_id);
    let FilterColumns {
        adapter,
        group,
        tunnel,
        name,
    } = FilterColumns::of(&database);
    let keys = seal_key_ids(&database);
    let params: [&(dyn ToSql + Sync); 8] = [
        &database.id.as_str(),
        &api_id,
        &bytes,
        &adapter,
        &group,
        &tunnel,
        &name,
        &keys,
    ];
    store.insert(INSERT_DATABASE, &params, &log).await
}

/// [`Storage::database`](dbconsole_core::storage::Storage::database).
pub(crate) async fn get(
    store: &PostgresStorage,
    id: &str,
) -> Result<Option<Database>, StorageError> {
    let Some(id) = key(id) else {
        return Ok(None);
    };
    let sql = "SELECT id, record FROM databases WHERE id = $1";
    store.one(sql, &[&id], database_of).await
}

/// [`Storage::database_by_api_id`](dbconsole_core::storage::Storage::database_by_api_id).
pub(crate) async fn by_api_id(
    store: &PostgresStorage,
    api_id: &str,
) -> Result<Option<Database>, StorageError> {
    let sql = "SELECT id, record FROM databases WHERE api_id = $1";
    store.one(sql, &[&api_id.as_bytes()], database_of).await
}

/// [`Storage::list_databases`](dbconsole_core::storage::Storage::list_databases).
pub(crate) async fn list(
    store: &PostgresStorage,
    page: Page<'_>,
    filter: DatabaseFilter<'_>,
) -> Result<Vec<Database>, StorageError> {
    let mut query = Filtered::new("databases", &page);
    if let Some(adapter) = filter.adapter {
        query.equals("adapter", adapter.as_str());
    }
    if let Some(group) = filter.group {
        query.equals_bytes("grp", group.as_bytes());
    }
    if let Some(tunnel) = filter.tunnel_id {
        query.equals_bytes("tunnel_id", tunnel.as_bytes());
    }
    if let Some(api_id) = filter.api_id {
        query.equals_bytes("api_id", api_id.as_bytes());
    }
    if let Some(prefix) = filter.name_prefix {
        query.prefix("name", prefix);
    }
    if query.matches_nothing {
        return Ok(Vec::new());
    }
    let (sql, params) = query.finish();
    let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
    store.all(&sql, &params, database_of).await
}

/// [`Storage::replace_database`](dbconsole_core::storage::Storage::replace_database).
pub(crate) async fn replace(
    store: &PostgresStorage,
    database: Database,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    if key(database.id.as_str()).is_none() {
        return Err(StorageError::NotFound);
    }
    let bytes = record::encode_database(&database)?;
    serializable!(store, |client, in_flight| try_replace(
        client, &database, &bytes, expected, &log, &in_flight
    )
    .await)
}

/// [`Storage::remove_database`](dbconsole_core::storage::Storage::remove_database).
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
    database: &Database,
    bytes: &[u8],
    expected: Timestamp,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    let select = txn
        .prepare_cached("SELECT id, record FROM databases WHERE id = $1 FOR UPDATE")
        .await?;
    let id = database.id.as_str();
    let row = txn
        .query_opt(&select, &[&id])
        .await?
        .ok_or(StorageError::NotFound)?;
    let stored = database_of(&row)?;
    rules::check_version(&stored.updated_at, &expected)?;
    rules::check_identity(&stored, database)?;
    let update = txn.prepare_cached(UPDATE_DATABASE).await?;
    let FilterColumns {
        adapter,
        group,
        tunnel,
        name,
    } = FilterColumns::of(database);
    let keys = seal_key_ids(database);
    txn.execute(
        &update,
        &[&id, &bytes, &adapter, &group, &tunnel, &name, &keys],
    )
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
        .prepare_cached("SELECT id, record FROM databases WHERE id = $1 FOR UPDATE")
        .await?;
    let row = txn
        .query_opt(&select, &[&id])
        .await?
        .ok_or(StorageError::NotFound)?;
    let removed = database_of(&row)?;
    rules::check_version(&removed.updated_at, &expected)?;
    let heirs_sql = "SELECT d.id, d.record FROM access_control a
                           JOIN databases d ON d.id = a.database_id
                          WHERE a.inherits_from = $1";
    let heirs = txn.prepare_cached(heirs_sql).await?;
    let heirs = txn
        .query(&heirs, &[&removed.id.as_str()])
        .await?
        .iter()
        .map(|row| {
            let id = text(row, "id")?;
            let name = record::decode_database_name(&id, &bytes(row, "record")?)?;
            Ok(DatabaseRef { id, name })
        })
        .collect::<Result<Vec<_>, StorageError>>()?;
    rules::guard_delete(heirs)?;
    // Its access control goes with it (ON DELETE CASCADE), in this transaction.
    let delete = txn
        .prepare_cached("DELETE FROM databases WHERE id = $1")
        .await?;
    txn.execute(&delete, &[&id]).await?;
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}
