//! The listing indexes: `(value, id) → ()` tables kept in the transaction of every write of a
//! database or dashboard, so that a filtered listing reads only the entries of the value it
//! asks for (docs/api.md, "Finding records").
//!
//! | table | key | for |
//! |---|---|---|
//! | `databases_by_adapter` | (adapter wire name, id) | `?adapter=` |
//! | `databases_by_group` | (group, id) | `?group=` |
//! | `databases_by_tunnel` | (tunnel_id, id) | `?tunnel_id=` |
//! | `databases_by_name` | (name, id) | `?name_prefix=` |
//! | `dashboards_by_name` | (name, id) | `?name_prefix=` |
//!
//! `?api_id=` uses `database_api_ids`. An exact index gives its ids in id order, so a page is a
//! range read from `after`; a name prefix gives them in name order, so the ids of every name
//! with the prefix are read and sorted (the cost grows with the matches, not with the store).
//! With several filters one index chooses the candidates (the most selective kind first) and
//! the others are checked on each record. A file written before these tables gets them built
//! at its next open, once (`meta` then holds `listing_indexes`).

use std::ops::Bound;

use dbconsole_core::model::{Dashboard, Database};
use dbconsole_core::storage::record;
use dbconsole_core::storage::{DashboardFilter, DatabaseFilter, Page, StorageError};
use redb::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};

use crate::tables::{DASHBOARDS, DATABASE_API_IDS, DATABASES, META, OrBackend};

type IndexTable = TableDefinition<'static, (&'static str, &'static str), ()>;

pub(crate) const DATABASES_BY_ADAPTER: IndexTable = TableDefinition::new("databases_by_adapter");
pub(crate) const DATABASES_BY_GROUP: IndexTable = TableDefinition::new("databases_by_group");
pub(crate) const DATABASES_BY_TUNNEL: IndexTable = TableDefinition::new("databases_by_tunnel");
pub(crate) const DATABASES_BY_NAME: IndexTable = TableDefinition::new("databases_by_name");
pub(crate) const DASHBOARDS_BY_NAME: IndexTable = TableDefinition::new("dashboards_by_name");

/// Every index table.
pub(crate) const ALL: [IndexTable; 5] = [
    DATABASES_BY_ADAPTER,
    DATABASES_BY_GROUP,
    DATABASES_BY_TUNNEL,
    DATABASES_BY_NAME,
    DASHBOARDS_BY_NAME,
];

/// Above every id (`db_…`, `dash_…`: lowercase letters, digits and `_`): the end of one
/// value's range.
const ID_MAX: &str = "~";

/// The `meta` key present once the indexes hold every record.
const META_BUILT: &str = "listing_indexes";

/// A database's entry in each of its indexes (`None`: it has no value there).
fn database_entries(db: &Database) -> [(IndexTable, Option<&str>); 4] {
    [
        (DATABASES_BY_ADAPTER, Some(db.adapter.as_str())),
        (DATABASES_BY_GROUP, db.group.as_deref()),
        (DATABASES_BY_TUNNEL, db.tunnel_id.as_deref()),
        (DATABASES_BY_NAME, Some(db.name.as_str())),
    ]
}

/// Moves a database's index entries from what `old` had to what `new` has (either `None`: a
/// create, a delete), in `txn`.
pub(crate) fn reindex_database(
    txn: &WriteTransaction,
    old: Option<&Database>,
    new: Option<&Database>,
) -> Result<(), StorageError> {
    let old_entries = old.map(database_entries);
    let new_entries = new.map(database_entries);
    for index in 0..4 {
        let before = old_entries
            .as_ref()
            .map(|e| (e[index].1, old.map(|d| d.id.as_str())));
        let after = new_entries
            .as_ref()
            .map(|e| (e[index].1, new.map(|d| d.id.as_str())));
        if before == after {
            continue;
        }
        let definition = old_entries
            .as_ref()
            .or(new_entries.as_ref())
            .map(|e| e[index].0)
            .expect("an old or a new record");
        move_entry(txn, definition, before, after)?;
    }
    Ok(())
}

/// Moves a dashboard's name entry, as [`reindex_database`].
pub(crate) fn reindex_dashboard(
    txn: &WriteTransaction,
    old: Option<&Dashboard>,
    new: Option<&Dashboard>,
) -> Result<(), StorageError> {
    let before = old.map(|d| (Some(d.name.as_str()), Some(d.id.as_str())));
    let after = new.map(|d| (Some(d.name.as_str()), Some(d.id.as_str())));
    if before == after {
        return Ok(());
    }
    move_entry(txn, DASHBOARDS_BY_NAME, before, after)
}

type Entry<'a> = Option<(Option<&'a str>, Option<&'a str>)>;

fn move_entry(
    txn: &WriteTransaction,
    definition: IndexTable,
    before: Entry<'_>,
    after: Entry<'_>,
) -> Result<(), StorageError> {
    let mut table = txn.open_table(definition).or_backend()?;
    if let Some((Some(value), Some(id))) = before {
        table.remove((value, id)).or_backend()?;
    }
    if let Some((Some(value), Some(id))) = after {
        table.insert((value, id), ()).or_backend()?;
    }
    Ok(())
}

/// Creates the index tables and, unless `meta` says they are built, fills them from every
/// stored record and records that they are; in the open transaction.
pub(crate) fn build_if_missing(txn: &WriteTransaction) -> Result<(), StorageError> {
    for definition in ALL {
        txn.open_table(definition).or_backend()?;
    }
    let mut meta = txn.open_table(META).or_backend()?;
    if meta.get(META_BUILT).or_backend()?.is_some() {
        return Ok(());
    }
    let databases = txn.open_table(DATABASES).or_backend()?;
    for entry in databases.iter().or_backend()? {
        let (key, value) = entry.or_backend()?;
        let database = record::decode_database(key.value(), value.value())?;
        reindex_database(txn, None, Some(&database))?;
    }
    let dashboards = txn.open_table(DASHBOARDS).or_backend()?;
    for entry in dashboards.iter().or_backend()? {
        let (key, value) = entry.or_backend()?;
        let dashboard = record::decode_dashboard(key.value(), value.value())?;
        reindex_dashboard(txn, None, Some(&dashboard))?;
    }
    meta.insert(META_BUILT, [1u8].as_slice()).or_backend()?;
    Ok(())
}

/// The ids an exact index holds for `value`, from `after` (exclusive), in id order, lazily.
fn exact_ids(
    txn: &ReadTransaction,
    definition: IndexTable,
    value: &str,
    after: Option<&str>,
    mut each: impl FnMut(&str) -> Result<bool, StorageError>,
) -> Result<(), StorageError> {
    let table = txn.open_table(definition).or_backend()?;
    let start = match after {
        Some(after) => Bound::Excluded((value, after)),
        None => Bound::Included((value, "")),
    };
    for entry in table
        .range::<(&str, &str)>((start, Bound::Included((value, ID_MAX))))
        .or_backend()?
    {
        let (key, _) = entry.or_backend()?;
        if !each(key.value().1)? {
            break;
        }
    }
    Ok(())
}

/// The ids of every name with `prefix` in a name index, after `after`, sorted.
fn prefixed_ids(
    txn: &ReadTransaction,
    definition: IndexTable,
    prefix: &str,
    after: Option<&str>,
) -> Result<Vec<String>, StorageError> {
    let table = txn.open_table(definition).or_backend()?;
    let mut ids = Vec::new();
    for entry in table
        .range::<(&str, &str)>((Bound::Included((prefix, "")), Bound::Unbounded))
        .or_backend()?
    {
        let (key, _) = entry.or_backend()?;
        let (name, id) = key.value();
        if !name.starts_with(prefix) {
            break;
        }
        if after.is_none_or(|after| id > after) {
            ids.push(id.to_owned());
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// A page of the databases `filter` keeps, through the most selective index it names; `None`
/// when the filter is empty (the caller reads the table itself).
pub(crate) fn list_databases(
    txn: &ReadTransaction,
    page: Page<'_>,
    filter: DatabaseFilter<'_>,
) -> Result<Option<Vec<Database>>, StorageError> {
    if filter.is_empty() {
        return Ok(None);
    }
    let databases = txn.open_table(DATABASES).or_backend()?;
    let mut found = Vec::new();
    if page.limit == 0 {
        return Ok(Some(found));
    }
    let mut keep = |id: &str| -> Result<bool, StorageError> {
        if let Some(bytes) = databases.get(id).or_backend()? {
            let database = record::decode_database(id, bytes.value())?;
            if filter.matches(&database) {
                found.push(database);
            }
        }
        Ok(found.len() < page.limit)
    };
    if let Some(api_id) = filter.api_id {
        let api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
        if let Some(id) = api_ids.get(api_id).or_backend()? {
            let id = id.value();
            if page.after.is_none_or(|after| id > after) {
                keep(id)?;
            }
        }
    } else if let Some(tunnel) = filter.tunnel_id {
        exact_ids(txn, DATABASES_BY_TUNNEL, tunnel, page.after, keep)?;
    } else if let Some(group) = filter.group {
        exact_ids(txn, DATABASES_BY_GROUP, group, page.after, keep)?;
    } else if let Some(prefix) = filter.name_prefix {
        for id in prefixed_ids(txn, DATABASES_BY_NAME, prefix, page.after)? {
            if !keep(&id)? {
                break;
            }
        }
    } else if let Some(adapter) = filter.adapter {
        exact_ids(
            txn,
            DATABASES_BY_ADAPTER,
            adapter.as_str(),
            page.after,
            keep,
        )?;
    }
    Ok(Some(found))
}

/// A page of the dashboards `filter` keeps; `None` when the filter is empty.
pub(crate) fn list_dashboards(
    txn: &ReadTransaction,
    page: Page<'_>,
    filter: DashboardFilter<'_>,
) -> Result<Option<Vec<Dashboard>>, StorageError> {
    let Some(prefix) = filter.name_prefix else {
        return Ok(None);
    };
    let dashboards = txn.open_table(DASHBOARDS).or_backend()?;
    let mut found = Vec::new();
    for id in prefixed_ids(txn, DASHBOARDS_BY_NAME, prefix, page.after)? {
        if found.len() == page.limit {
            break;
        }
        if let Some(bytes) = dashboards.get(id.as_str()).or_backend()? {
            found.push(record::decode_dashboard(&id, bytes.value())?);
        }
    }
    Ok(Some(found))
}
