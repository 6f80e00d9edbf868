//! Access control (table `access_control`, migration 1): one row per database that has one
//! (absent: the empty default), deleted with its database; `inherits_from` is indexed for the
//! delete guard. A replace locks the database row against a concurrent delete and checks the
//! inheritance chain ([`INHERITANCE_CHAIN`]) with core's rules, at `SERIALIZABLE` isolation.

use std::collections::HashMap;

use dbconsole_core::model::AccessControl;
use dbconsole_core::storage::{StorageError, WriteLog, record, rules};
use deadpool_postgres::Object;

use crate::PostgresStorage;
use crate::fault::{Failure, classify};
use crate::retry::{InFlight, begin, commit, serializable};
use crate::sql::{bytes, key, text};
use crate::write_log::append;

/// The chain of `inherits_from` from one database: each database on it with what it inherits
/// from (null: nothing, or no access control yet), bounded against a stored loop.
const INHERITANCE_CHAIN: &str = "
    WITH RECURSIVE chain (id, parent, depth) AS (
        SELECT d.id, a.inherits_from, 0
          FROM databases d LEFT JOIN access_control a ON a.database_id = d.id
         WHERE d.id = $1
        UNION ALL
        SELECT d.id, a.inherits_from, c.depth + 1
          FROM chain c
          JOIN databases d ON d.id = c.parent
          LEFT JOIN access_control a ON a.database_id = d.id
         WHERE c.depth < 100000
    )
    SELECT id, parent FROM chain";

/// [`Storage::access_control`](dbconsole_core::storage::Storage::access_control).
pub(crate) async fn get(
    store: &PostgresStorage,
    database_id: &str,
) -> Result<Option<AccessControl>, StorageError> {
    let Some(database_id) = key(database_id) else {
        return Ok(None);
    };
    let sql = "SELECT a.record FROM databases d
                     LEFT JOIN access_control a ON a.database_id = d.id
                    WHERE d.id = $1";
    let rows = store.rows(sql, &[&database_id]).await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let stored: Option<Vec<u8>> = row.try_get("record").map_err(classify)?;
    Ok(Some(match stored {
        Some(bytes) => record::decode_access_control(database_id, &bytes)?,
        None => AccessControl::default(),
    }))
}

/// [`Storage::replace_access_control`](dbconsole_core::storage::Storage::replace_access_control).
pub(crate) async fn replace(
    store: &PostgresStorage,
    database_id: &str,
    expected: AccessControl,
    access: AccessControl,
    log: WriteLog,
) -> Result<(), StorageError> {
    let Some(database_id) = key(database_id) else {
        return Err(StorageError::NotFound);
    };
    serializable!(store, |client, in_flight| {
        try_replace(client, database_id, &expected, &access, &log, &in_flight).await
    })
}

async fn try_replace(
    client: &mut Object,
    database_id: &str,
    expected: &AccessControl,
    updated: &AccessControl,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    // The database row is locked against a concurrent delete for the transaction.
    let exists = txn
        .prepare_cached("SELECT 1 FROM databases WHERE id = $1 FOR KEY SHARE")
        .await?;
    if txn.query_opt(&exists, &[&database_id]).await?.is_none() {
        return Err(StorageError::NotFound.into());
    }
    let select = txn
        .prepare_cached("SELECT record FROM access_control WHERE database_id = $1 FOR UPDATE")
        .await?;
    let stored = match txn.query_opt(&select, &[&database_id]).await? {
        Some(row) => record::decode_access_control(database_id, &bytes(&row, "record")?)?,
        None => AccessControl::default(),
    };
    rules::check_version(&stored, expected)?;
    if let Some(target) = &updated.data_protection.inherits_from {
        let chain = txn.prepare_cached(INHERITANCE_CHAIN).await?;
        let mut parents: HashMap<String, Option<String>> = HashMap::new();
        // A target with a NUL names no database: the rule answers that it does not exist.
        let rows = match key(target) {
            Some(target) => txn.query(&chain, &[&target]).await?,
            None => Vec::new(),
        };
        for row in rows {
            let parent: Option<String> = row.try_get("parent").map_err(classify)?;
            parents.insert(text(&row, "id")?, parent);
        }
        rules::check_access_control(database_id, updated, |id| Ok(parents.get(id).cloned()))?;
    }
    let bytes = record::encode_access_control(database_id, updated)?;
    let upsert = txn
        .prepare_cached(
            "INSERT INTO access_control (database_id, inherits_from, record)
                 VALUES ($1, $2, $3)
                 ON CONFLICT (database_id)
                 DO UPDATE SET inherits_from = EXCLUDED.inherits_from, record = EXCLUDED.record",
        )
        .await?;
    let inherits_from = &updated.data_protection.inherits_from;
    txn.execute(&upsert, &[&database_id, inherits_from, &bytes])
        .await?;
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}
