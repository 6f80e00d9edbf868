//! The outbox: `deliveries` (id → record), `deliveries_by_status` ((status, id) → ()) for the
//! listing by status, and `deliveries_due` ((due µs, id) → ()) holding only the deliveries a
//! worker may claim (pending or delivering), so a claim reads the due ones first and never
//! walks those already delivered or dead. Every write rewrites a delivery's index entries with
//! it, in its transaction.

use dbconsole_core::model::{Delivery, DeliveryStatus, TargetKind, Timestamp};
use dbconsole_core::storage::{Page, StorageError, record, rules};
use redb::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};

use crate::RedbStorage;
use crate::tables::OrBackend;

pub(crate) const DELIVERIES: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("deliveries");
pub(crate) const BY_STATUS: TableDefinition<'static, (&str, &str), ()> =
    TableDefinition::new("deliveries_by_status");
pub(crate) const DUE: TableDefinition<'static, (i64, &str), ()> =
    TableDefinition::new("deliveries_due");

/// Writes `delivery` (new when `expected` is `None`, else a swap at version `expected`) with
/// its index entries.
pub(crate) fn put(
    txn: &WriteTransaction,
    delivery: &Delivery,
    expected: Option<Timestamp>,
) -> Result<(), StorageError> {
    let mut deliveries = txn.open_table(DELIVERIES).or_backend()?;
    let mut by_status = txn.open_table(BY_STATUS).or_backend()?;
    let mut due = txn.open_table(DUE).or_backend()?;
    let id = delivery.id.as_str();
    let stored = match deliveries.get(id).or_backend()? {
        Some(bytes) => Some(record::decode_delivery(id, bytes.value())?),
        None => None,
    };
    match (&stored, expected) {
        (Some(_), None) => return Err(StorageError::AlreadyExists),
        (None, Some(_)) => return Err(StorageError::NotFound),
        (Some(stored), Some(expected)) => rules::check_version(&stored.updated_at, &expected)?,
        (None, None) => {}
    }
    if let Some(stored) = &stored {
        by_status
            .remove((stored.status.as_str(), id))
            .or_backend()?;
        if let Some(at) = claimable_at(stored) {
            due.remove((at, id)).or_backend()?;
        }
    }
    let bytes = record::encode_delivery(delivery)?;
    deliveries.insert(id, bytes.as_slice()).or_backend()?;
    by_status
        .insert((delivery.status.as_str(), id), ())
        .or_backend()?;
    if let Some(at) = claimable_at(delivery) {
        due.insert((at, id), ()).or_backend()?;
    }
    Ok(())
}

/// [`Delivery::claimable_at`] in microseconds, as the index keeps it.
fn claimable_at(delivery: &Delivery) -> Option<i64> {
    delivery.claimable_at().map(Timestamp::as_micros)
}

/// Claims up to `limit` due deliveries of `kinds` in `txn` (the writer runs one write at a
/// time, so no other claim sees them before this one commits). Due deliveries of other kinds
/// are read and passed over: on one node they exist only when its settings changed since they
/// were made.
pub(crate) fn claim(
    txn: &WriteTransaction,
    now: Timestamp,
    lease_until: Timestamp,
    limit: usize,
    kinds: &[TargetKind],
) -> Result<Vec<Delivery>, StorageError> {
    let due: Vec<Delivery> = {
        let index = txn.open_table(DUE).or_backend()?;
        let deliveries = txn.open_table(DELIVERIES).or_backend()?;
        let mut due = Vec::new();
        for entry in index
            .range((i64::MIN, "")..=(now.as_micros(), "~"))
            .or_backend()?
        {
            if due.len() >= limit {
                break;
            }
            let (key, _) = entry.or_backend()?;
            let id = key.value().1;
            let bytes = deliveries
                .get(id)
                .or_backend()?
                .ok_or_else(|| StorageError::backend(Missing(id.to_owned())))?;
            let stored = record::decode_delivery(id, bytes.value())?;
            if stored.is_due(now) && kinds.contains(&stored.target.kind()) {
                due.push(stored);
            }
        }
        due
    };
    let mut claimed = Vec::with_capacity(due.len());
    for stored in due {
        let next = stored.claimed(now, lease_until);
        put(txn, &next, Some(stored.updated_at))?;
        claimed.push(next);
    }
    Ok(claimed)
}

/// Whether any delivery is due at `now`, of any kind.
pub(crate) fn any_due(txn: &ReadTransaction, now: Timestamp) -> Result<bool, StorageError> {
    let index = txn.open_table(DUE).or_backend()?;
    let first = index.first().or_backend()?;
    Ok(first.is_some_and(|(key, _)| key.value().0 <= now.as_micros()))
}

pub(crate) fn get(txn: &ReadTransaction, id: &str) -> Result<Option<Delivery>, StorageError> {
    let deliveries = txn.open_table(DELIVERIES).or_backend()?;
    match deliveries.get(id).or_backend()? {
        Some(bytes) => Ok(Some(record::decode_delivery(id, bytes.value())?)),
        None => Ok(None),
    }
}

/// A page of the outbox, newest first: all of it, or one status through its index.
pub(crate) fn list(
    txn: &ReadTransaction,
    page: Page<'_>,
    status: Option<DeliveryStatus>,
) -> Result<Vec<Delivery>, StorageError> {
    let deliveries = txn.open_table(DELIVERIES).or_backend()?;
    let mut found = Vec::new();
    let Some(status) = status else {
        let range = match page.after {
            Some(after) => deliveries.range::<&str>(..after).or_backend()?,
            None => deliveries.range::<&str>(..).or_backend()?,
        };
        for entry in range.rev() {
            if found.len() >= page.limit {
                break;
            }
            let (id, bytes) = entry.or_backend()?;
            found.push(record::decode_delivery(id.value(), bytes.value())?);
        }
        return Ok(found);
    };
    let index = txn.open_table(BY_STATUS).or_backend()?;
    let key = status.as_str();
    let start = (key, "");
    let range = match page.after {
        Some(after) => index.range(start..(key, after)).or_backend()?,
        None => index.range(start..=(key, "~")).or_backend()?,
    };
    for entry in range.rev() {
        if found.len() >= page.limit {
            break;
        }
        let (entry, _) = entry.or_backend()?;
        let (_, id) = entry.value();
        let bytes = deliveries
            .get(id)
            .or_backend()?
            .ok_or_else(|| StorageError::backend(Missing(id.to_owned())))?;
        found.push(record::decode_delivery(id, bytes.value())?);
    }
    Ok(found)
}

/// An index entry names a delivery that is not stored (a corrupt file).
#[derive(Debug, thiserror::Error)]
#[error("the outbox index names {0}, which is not stored")]
struct Missing(String);

/// [`Storage::claim_deliveries`](dbconsole_core::storage::Storage::claim_deliveries).
pub(crate) async fn claim_deliveries(
    store: &RedbStorage,
    now: Timestamp,
    lease_until: Timestamp,
    limit: usize,
    kinds: &[TargetKind],
) -> Result<Vec<Delivery>, StorageError> {
    // Looked at in a read first: an idle outbox costs its pollers no durable write.
    if !store.read_now(|inner| inner.read(|txn| any_due(txn, now)))? {
        return Ok(Vec::new());
    }
    let kinds = kinds.to_vec();
    store
        .write(move |_, txn| claim(txn, now, lease_until, limit, &kinds))
        .await
}

/// [`Storage::delivery`](dbconsole_core::storage::Storage::delivery).
pub(crate) async fn delivery(
    store: &RedbStorage,
    id: &str,
) -> Result<Option<Delivery>, StorageError> {
    store.read_now(|inner| inner.read(|txn| get(txn, id)))
}

/// [`Storage::list_deliveries`](dbconsole_core::storage::Storage::list_deliveries).
pub(crate) async fn list_deliveries(
    store: &RedbStorage,
    request: Page<'_>,
    status: Option<DeliveryStatus>,
) -> Result<Vec<Delivery>, StorageError> {
    let after = request.after.map(str::to_owned);
    let limit = request.limit;
    store
        .run(move |inner| {
            inner.read(|txn| {
                let request = Page {
                    after: after.as_deref(),
                    limit,
                };
                list(txn, request, status)
            })
        })
        .await
}

/// [`Storage::swap_delivery`](dbconsole_core::storage::Storage::swap_delivery): the
/// compare-and-swap alone (with a log, module `write_log` does it).
pub(crate) async fn swap_delivery(
    store: &RedbStorage,
    delivery: Delivery,
    expected: Timestamp,
) -> Result<(), StorageError> {
    store
        .write(move |_, txn| put(txn, &delivery, Some(expected)))
        .await
}
