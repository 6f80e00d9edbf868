//! Databases: `databases` (id → the database with its credentials) and `database_api_ids`
//! (`api_id` → id, for lookups and deletes by `api_id`), written in one transaction with the
//! database's listing index entries (`index`) and its audit event. A write whose secrets are not
//! all sealed under the current key is refused (`seal_keys`); a delete is refused while another
//! database inherits from this one (`inherited_by`, see `access`) and takes its access control
//! with it.

use dbconsole_core::model::{Database, Timestamp};
use dbconsole_core::storage::{
    DatabaseFilter, DatabaseRef, Page, StorageError, WriteLog, record, rules,
};
use redb::{ReadableMultimapTable, ReadableTable, Table};

use crate::access::get_access;
use crate::file::Inner;
use crate::seal_keys::seal_keys_of;
use crate::tables::{
    ACCESS_CONTROL, DATABASE_API_IDS, DATABASES, INHERITED_BY, META, OrBackend, page,
};
use crate::{RedbStorage, index, write_log};

type BytesTable<'txn> = Table<'txn, &'static str, &'static [u8]>;

impl Inner {
    fn get_database(
        &self,
        databases: &impl ReadableTable<&'static str, &'static [u8]>,
        id: &str,
    ) -> Result<Option<Database>, StorageError> {
        match databases.get(id).or_backend()? {
            None => Ok(None),
            Some(bytes) => Ok(Some(record::decode_database(id, bytes.value())?)),
        }
    }

    fn id_by_api_id(
        api_ids: &impl ReadableTable<&'static str, &'static str>,
        api_id: &str,
    ) -> Result<Option<String>, StorageError> {
        Ok(api_ids
            .get(api_id)
            .or_backend()?
            .map(|id| id.value().to_owned()))
    }

    /// Stores a database and its `api_id` index entry.
    pub(crate) fn put_database(
        &self,
        databases: &mut BytesTable<'_>,
        api_ids: &mut Table<'_, &'static str, &'static str>,
        database: &Database,
    ) -> Result<(), StorageError> {
        let bytes = record::encode_database(database)?;
        let id = database.id.as_str();
        databases.insert(id, bytes.as_slice()).or_backend()?;
        if let Some(api_id) = &database.api_id {
            api_ids.insert(api_id.as_str(), id).or_backend()?;
        }
        Ok(())
    }
}

/// [`Storage::create_database`](dbconsole_core::storage::Storage::create_database).
pub(crate) async fn create_database(
    store: &RedbStorage,
    database: Database,
    log: WriteLog,
) -> Result<(), StorageError> {
    store
        .write(move |inner, txn| {
            let mut databases = txn.open_table(DATABASES).or_backend()?;
            let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
            let id_taken = databases.get(database.id.as_str()).or_backend()?.is_some();
            let api_id_taken = match &database.api_id {
                Some(api_id) => api_ids.get(api_id.as_str()).or_backend()?.is_some(),
                None => false,
            };
            if id_taken || api_id_taken {
                return Err(StorageError::AlreadyExists);
            }
            let meta = txn.open_table(META).or_backend()?;
            rules::check_sealed(&database, &seal_keys_of(&meta)?)?;
            inner.put_database(&mut databases, &mut api_ids, &database)?;
            index::reindex_database(txn, None, Some(&database))?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::database`](dbconsole_core::storage::Storage::database).
pub(crate) async fn database(
    store: &RedbStorage,
    id: &str,
) -> Result<Option<Database>, StorageError> {
    store.read_recent(
        |recent| &mut recent.databases,
        id,
        |txn| {
            let databases = txn.open_table(DATABASES).or_backend()?;
            store.inner.get_database(&databases, id)
        },
    )
}

/// [`Storage::database_by_api_id`](dbconsole_core::storage::Storage::database_by_api_id).
pub(crate) async fn database_by_api_id(
    store: &RedbStorage,
    api_id: &str,
) -> Result<Option<Database>, StorageError> {
    store.read_now(|inner| {
        inner.read(|txn| {
            let api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
            let Some(id) = Inner::id_by_api_id(&api_ids, api_id)? else {
                return Ok(None);
            };
            let databases = txn.open_table(DATABASES).or_backend()?;
            inner.get_database(&databases, &id)
        })
    })
}

/// [`Storage::list_databases`](dbconsole_core::storage::Storage::list_databases).
pub(crate) async fn list_databases(
    store: &RedbStorage,
    request: Page<'_>,
    filter: DatabaseFilter<'_>,
) -> Result<Vec<Database>, StorageError> {
    let after = request.after.map(str::to_owned);
    let limit = request.limit;
    let adapter = filter.adapter;
    let [group, name_prefix, api_id, tunnel_id] = [
        filter.group,
        filter.name_prefix,
        filter.api_id,
        filter.tunnel_id,
    ]
    .map(|value| value.map(str::to_owned));
    store
        .run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                let filter = DatabaseFilter {
                    adapter,
                    group: group.as_deref(),
                    name_prefix: name_prefix.as_deref(),
                    api_id: api_id.as_deref(),
                    tunnel_id: tunnel_id.as_deref(),
                };
                if let Some(found) = index::list_databases(txn, request, filter)? {
                    return Ok(found);
                }
                let databases = txn.open_table(DATABASES).or_backend()?;
                page(&databases, request, record::decode_database)
            })
        })
        .await
}

/// [`Storage::replace_database`](dbconsole_core::storage::Storage::replace_database).
pub(crate) async fn replace_database(
    store: &RedbStorage,
    database: Database,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    store
        .write(move |inner, txn| {
            let mut databases = txn.open_table(DATABASES).or_backend()?;
            let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
            let stored = inner
                .get_database(&databases, database.id.as_str())?
                .ok_or(StorageError::NotFound)?;
            rules::check_version(&stored.updated_at, &expected)?;
            rules::check_identity(&stored, &database)?;
            let meta = txn.open_table(META).or_backend()?;
            rules::check_sealed(&database, &seal_keys_of(&meta)?)?;
            inner.put_database(&mut databases, &mut api_ids, &database)?;
            index::reindex_database(txn, Some(&stored), Some(&database))?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::remove_database`](dbconsole_core::storage::Storage::remove_database).
pub(crate) async fn remove_database(
    store: &RedbStorage,
    id: &str,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    let id = id.to_owned();
    store
        .write(move |inner, txn| {
            let mut databases = txn.open_table(DATABASES).or_backend()?;
            let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
            let mut access = txn.open_table(ACCESS_CONTROL).or_backend()?;
            let mut inherited_by = txn.open_multimap_table(INHERITED_BY).or_backend()?;
            let removed = inner
                .get_database(&databases, &id)?
                .ok_or(StorageError::NotFound)?;
            rules::check_version(&removed.updated_at, &expected)?;

            // The guard: databases that inherit this one's data protection policies, from
            // the index. Each entry
            // is confirmed by the heir's own record, the source of truth: an entry that an
            // older build left behind (it deleted an heir without knowing the index) does
            // not block the delete, and goes with it.
            let mut heirs = Vec::new();
            for heir in inherited_by.get(id.as_str()).or_backend()? {
                let heir = heir.or_backend()?.value().to_owned();
                let Some(bytes) = databases.get(heir.as_str()).or_backend()? else {
                    continue;
                };
                let inherits =
                    get_access(&access, &heir)?.and_then(|a| a.data_protection.inherits_from);
                if inherits.as_deref() == Some(id.as_str()) {
                    let name = record::decode_database_name(&heir, bytes.value())?;
                    heirs.push(DatabaseRef { id: heir, name });
                }
            }
            rules::guard_delete(heirs)?;

            databases.remove(id.as_str()).or_backend()?;
            if let Some(api_id) = &removed.api_id {
                api_ids.remove(api_id.as_str()).or_backend()?;
            }
            // Its access control goes with it, and with that its own inheritance edge.
            let own = match access.remove(id.as_str()).or_backend()? {
                None => None,
                Some(bytes) => {
                    record::decode_access_control(&id, bytes.value())?
                        .data_protection
                        .inherits_from
                }
            };
            if let Some(target) = own {
                inherited_by
                    .remove(target.as_str(), id.as_str())
                    .or_backend()?;
            }
            inherited_by.remove_all(id.as_str()).or_backend()?;
            index::reindex_database(txn, Some(&removed), None)?;
            write_log::append(txn, &log)
        })
        .await
}
