//! Access control: `access_control` (database id → a database's permissions, data protection
//! policies and `inherits_from`; absent: the default, empty one) and `inherited_by`, its reverse
//! (target id → the databases that inherit from it), moved in the transaction of every change
//! of `inherits_from` and read by the delete guard of `databases`. A database's access control
//! is deleted with the database, in its transaction (`databases`).

use dbconsole_core::model::AccessControl;
use dbconsole_core::storage::{StorageError, WriteLog, record, rules};
use redb::ReadableTable;

use crate::tables::{ACCESS_CONTROL, DATABASES, INHERITED_BY, OrBackend};
use crate::{RedbStorage, write_log};

/// The access control stored for database `id` (`None`: none was written, i.e. the default).
pub(crate) fn get_access(
    access: &impl ReadableTable<&'static str, &'static [u8]>,
    id: &str,
) -> Result<Option<AccessControl>, StorageError> {
    match access.get(id).or_backend()? {
        None => Ok(None),
        Some(bytes) => Ok(Some(record::decode_access_control(id, bytes.value())?)),
    }
}

/// [`Storage::access_control`](dbconsole_core::storage::Storage::access_control).
pub(crate) async fn access_control(
    store: &RedbStorage,
    database_id: &str,
) -> Result<Option<AccessControl>, StorageError> {
    store.read_recent(
        |recent| &mut recent.access,
        database_id,
        |txn| {
            let databases = txn.open_table(DATABASES).or_backend()?;
            if databases.get(database_id).or_backend()?.is_none() {
                return Ok(None);
            }
            let access = txn.open_table(ACCESS_CONTROL).or_backend()?;
            Ok(Some(get_access(&access, database_id)?.unwrap_or_default()))
        },
    )
}

/// [`Storage::replace_access_control`](dbconsole_core::storage::Storage::replace_access_control).
pub(crate) async fn replace_access_control(
    store: &RedbStorage,
    database_id: &str,
    expected: AccessControl,
    updated: AccessControl,
    log: WriteLog,
) -> Result<(), StorageError> {
    let id = database_id.to_owned();
    store
        .write(move |_, txn| {
            let databases = txn.open_table(DATABASES).or_backend()?;
            let mut access = txn.open_table(ACCESS_CONTROL).or_backend()?;
            let mut inherited_by = txn.open_multimap_table(INHERITED_BY).or_backend()?;
            if databases.get(id.as_str()).or_backend()?.is_none() {
                return Err(StorageError::NotFound);
            }
            let stored = get_access(&access, &id)?.unwrap_or_default();
            rules::check_version(&stored, &expected)?;
            rules::check_access_control(&id, &updated, |other| {
                if databases.get(other).or_backend()?.is_none() {
                    return Ok(None);
                }
                let inherits =
                    get_access(&access, other)?.and_then(|a| a.data_protection.inherits_from);
                Ok(Some(inherits))
            })?;
            let before = stored.data_protection.inherits_from.as_deref();
            let after = updated.data_protection.inherits_from.as_deref();
            if before != after {
                if let Some(old) = before {
                    inherited_by.remove(old, id.as_str()).or_backend()?;
                }
                if let Some(new) = after {
                    inherited_by.insert(new, id.as_str()).or_backend()?;
                }
            }
            let bytes = record::encode_access_control(&id, &updated)?;
            access.insert(id.as_str(), bytes.as_slice()).or_backend()?;
            write_log::append(txn, &log)
        })
        .await
}

#[cfg(test)]
mod tests {
    use dbconsole_core::model::{AccessControl, Database};
    use dbconsole_core::storage::testing::origin;
    use dbconsole_core::storage::{DatabaseKey, DatabaseRef, Edits as _, StorageError};
    use redb::{ReadableDatabase, ReadableMultimapTable};

    use crate::RedbStorage;
    use crate::tables::{ACCESS_CONTROL, INHERITED_BY, OrBackend};
    use crate::testing::{sample_database, store};

    /// The `inherited_by` entries, as (target, heir) pairs in index order.
    fn index_entries(storage: &RedbStorage) -> Vec<(String, String)> {
        let slot = storage.inner.db.read().unwrap();
        let txn = slot.as_ref().unwrap().begin_read().unwrap();
        let inherited_by = txn.open_multimap_table(INHERITED_BY).unwrap();
        let mut entries = Vec::new();
        for entry in inherited_by.iter().unwrap() {
            let (target, heirs) = entry.unwrap();
            for heir in heirs {
                entries.push((target.value().to_owned(), heir.unwrap().value().to_owned()));
            }
        }
        entries
    }

    async fn inherit(storage: &RedbStorage, heir: &Database, target: Option<&Database>) {
        let target = target.map(|t| t.id.as_str().to_owned());
        storage
            .update_access_control(
                heir.id.as_str(),
                move |stored: &AccessControl| {
                    let mut next = stored.clone();
                    next.data_protection.inherits_from = target.clone();
                    Ok(next)
                },
                origin(),
            )
            .await
            .unwrap();
    }

    fn pair(target: &Database, heir: &Database) -> (String, String) {
        (target.id.as_str().to_owned(), heir.id.as_str().to_owned())
    }

    #[tokio::test]
    async fn inherited_by_follows_every_change_of_inherits_from() {
        let storage = store();
        let [a, b, c] = ["A", "B", "C"].map(|name| sample_database(name, None));
        for database in [&a, &b, &c] {
            storage
                .insert_database(database.clone(), origin())
                .await
                .unwrap();
        }

        inherit(&storage, &c, Some(&a)).await;
        inherit(&storage, &b, Some(&a)).await;
        assert_eq!(index_entries(&storage), vec![pair(&a, &b), pair(&a, &c)]);
        // Re-pointing moves the entry; setting the same target again changes nothing.
        inherit(&storage, &c, Some(&b)).await;
        inherit(&storage, &c, Some(&b)).await;
        assert_eq!(index_entries(&storage), vec![pair(&a, &b), pair(&b, &c)]);
        // A refused change leaves the index alone.
        let refused = storage
            .update_access_control(
                a.id.as_str(),
                {
                    let c = c.id.as_str().to_owned();
                    move |stored: &AccessControl| {
                        let mut next = stored.clone();
                        next.data_protection.inherits_from = Some(c.clone());
                        Ok(next)
                    }
                },
                origin(),
            )
            .await;
        assert!(
            matches!(refused, Err(StorageError::Invalid(_))),
            "{refused:?}"
        );
        assert_eq!(index_entries(&storage), vec![pair(&a, &b), pair(&b, &c)]);
        // Clearing removes the entry.
        inherit(&storage, &b, None).await;
        assert_eq!(index_entries(&storage), vec![pair(&b, &c)]);
        // Deleting an heir removes its own entry and its access-control record.
        storage
            .delete_database(DatabaseKey::Id(c.id.as_str()), None, origin())
            .await
            .unwrap();
        assert_eq!(index_entries(&storage), Vec::new());
        let slot = storage.inner.db.read().unwrap();
        let txn = slot.as_ref().unwrap().begin_read().unwrap();
        let access = txn.open_table(ACCESS_CONTROL).unwrap();
        assert!(access.get(c.id.as_str()).unwrap().is_none());
        assert!(access.get(b.id.as_str()).unwrap().is_some());
    }

    #[tokio::test]
    async fn a_stale_index_entry_does_not_block_a_delete_and_goes_with_it() {
        let storage = store();
        let parent = sample_database("Parent", Some("ext-parent"));
        let heir = sample_database("Heir", None);
        let gone = sample_database("Gone", None);
        storage
            .insert_database(parent.clone(), origin())
            .await
            .unwrap();
        storage
            .insert_database(heir.clone(), origin())
            .await
            .unwrap();
        inherit(&storage, &heir, Some(&parent)).await;
        // What a build that predates access control leaves behind: entries whose heir no
        // longer exists, or no longer inherits.
        let (parent_id, gone_id) = (parent.id.clone(), gone.id.clone());
        storage
            .write(move |_, txn| {
                let mut inherited_by = txn.open_multimap_table(INHERITED_BY).or_backend()?;
                for stale in [gone_id.as_str(), "db_0"] {
                    inherited_by
                        .insert(parent_id.as_str(), stale)
                        .or_backend()?;
                }
                Ok(())
            })
            .await
            .unwrap();

        // Only the real heir is named.
        match storage
            .delete_database(DatabaseKey::ApiId("ext-parent"), None, origin())
            .await
        {
            Err(StorageError::Inherited(heirs)) => assert_eq!(
                heirs,
                vec![DatabaseRef {
                    id: heir.id.as_str().to_owned(),
                    name: "Heir".to_owned(),
                }]
            ),
            other => panic!("expected Inherited, got {other:?}"),
        }
        assert_eq!(
            index_entries(&storage).len(),
            3,
            "a refused delete changes nothing"
        );

        inherit(&storage, &heir, None).await;
        let removed = storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()), None, origin())
            .await
            .unwrap();
        assert_eq!(removed, parent);
        assert_eq!(index_entries(&storage), Vec::new());
    }
}
