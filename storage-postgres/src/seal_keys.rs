//! The seal keys (table `seal_keys`, migration 5): one row per key a stored secret may be
//! sealed under, with its key check value; one is current. Each `databases` row lists the keys
//! its secrets are sealed under ([`seal_key_ids`]), which the trigger `databases_seal_keys`
//! checks and a rotation that drops a key reads.

use dbconsole_core::model::Database;
use dbconsole_core::seal::{SealKeys, sealed_keys};
use dbconsole_core::storage::{StorageError, rules};
use tokio_postgres::Row;

use crate::PostgresStorage;
use crate::fault::classify;

/// The seal keys, one row each (schema version 5).
pub(crate) const SELECT_SEAL_KEYS: &str = "SELECT id, key_check, current FROM seal_keys";

/// The seal keys table names no current key.
#[derive(Debug, thiserror::Error)]
#[error("the stored seal keys name no current key")]
struct NoCurrentKey;

/// The seal keys of the rows of [`SELECT_SEAL_KEYS`]; `None` when none is current.
pub(crate) fn seal_keys_of(rows: &[Row]) -> Result<Option<SealKeys>, tokio_postgres::Error> {
    let mut current = None;
    let mut keys = std::collections::BTreeMap::new();
    for row in rows {
        let id: i64 = row.try_get("id")?;
        let Ok(id) = u32::try_from(id) else {
            return Ok(None);
        };
        if row.try_get::<_, bool>("current")? {
            current = Some(id);
        }
        keys.insert(id, row.try_get::<_, Vec<u8>>("key_check")?);
    }
    Ok(current.map(|current| SealKeys { current, keys }))
}

/// Writes `keys` into the (empty) `seal_keys` table, one row each.
pub(crate) async fn insert_seal_keys(
    txn: &deadpool_postgres::Transaction<'_>,
    keys: &SealKeys,
) -> Result<(), tokio_postgres::Error> {
    let insert = txn
        .prepare_cached("INSERT INTO seal_keys (id, key_check, current) VALUES ($1, $2, $3)")
        .await?;
    for (id, check) in &keys.keys {
        txn.execute(&insert, &[&i64::from(*id), check, &(*id == keys.current)])
            .await?;
    }
    Ok(())
}

/// The ids of the keys `database`'s secrets are sealed under, once each, for its `seal_keys`
/// column.
pub(crate) fn seal_key_ids(database: &Database) -> Vec<i64> {
    let ids: std::collections::BTreeSet<i64> = sealed_keys(database).map(i64::from).collect();
    ids.into_iter().collect()
}

/// [`Storage::seal_keys`](dbconsole_core::storage::Storage::seal_keys).
pub(crate) async fn get(store: &PostgresStorage) -> Result<SealKeys, StorageError> {
    let rows = store.rows(SELECT_SEAL_KEYS, &[]).await?;
    seal_keys_of(&rows)
        .map_err(classify)?
        .ok_or_else(|| StorageError::backend(NoCurrentKey))
}

/// [`Storage::replace_seal_keys`](dbconsole_core::storage::Storage::replace_seal_keys): takes
/// the `databases` table in `EXCLUSIVE` mode when `keys` drops a key (why: the documentation
/// of the trait method in `lib.rs`).
pub(crate) async fn replace(
    store: &PostgresStorage,
    expected: &SealKeys,
    keys: SealKeys,
) -> Result<(), StorageError> {
    store
        .bounded(async {
            let mut client = store.client().await?;
            let txn = client.transaction().await.map_err(classify)?;
            let drops = expected.keys.keys().any(|id| !keys.keys.contains_key(id));
            if drops {
                txn.batch_execute("LOCK TABLE databases IN EXCLUSIVE MODE")
                    .await
                    .map_err(classify)?;
            }
            txn.batch_execute("LOCK TABLE seal_keys IN EXCLUSIVE MODE")
                .await
                .map_err(classify)?;
            let rows = txn.query(SELECT_SEAL_KEYS, &[]).await.map_err(classify)?;
            let stored = seal_keys_of(&rows)
                .map_err(classify)?
                .ok_or_else(|| StorageError::backend(NoCurrentKey))?;
            rules::check_seal_keys(&stored, expected, &keys, std::iter::empty())?;
            for id in stored.keys.keys().filter(|id| !keys.keys.contains_key(id)) {
                let in_use = txn
                    .query_opt(
                        "SELECT 1 FROM databases WHERE $1 = ANY(seal_keys) LIMIT 1",
                        &[&i64::from(*id)],
                    )
                    .await
                    .map_err(classify)?;
                if in_use.is_some() {
                    return Err(StorageError::SealKeyInUse(*id));
                }
            }
            txn.batch_execute("DELETE FROM seal_keys")
                .await
                .map_err(classify)?;
            insert_seal_keys(&txn, &keys).await.map_err(classify)?;
            txn.commit().await.map_err(classify)
        })
        .await
}
