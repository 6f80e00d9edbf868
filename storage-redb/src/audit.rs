//! The audit trail in the data file: events by id (ids sort by time) and an index of each
//! record's events. Every write puts its event with [`put`] in its own transaction, as part of
//! its log (`write_log`; what the event says is `dbconsole_core::storage::audit`'s to decide);
//! [`list`] reads newest first; only [`prune`] removes events.
//!
//! | table | key → value |
//! |---|---|
//! | `audit_events` | event id → event |
//! | `audit_by_resource` | (record id, event id) → () |

use std::ops::Bound;

use dbconsole_core::model::{AuditEvent, Retention, Timestamp};
use dbconsole_core::storage::{AuditQuery, StorageError, record};
use redb::{
    ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction,
};

use crate::RedbStorage;
use crate::tables::OrBackend;

pub(crate) const EVENTS: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("audit_events");
pub(crate) const BY_RESOURCE: TableDefinition<'static, (&str, &str), ()> =
    TableDefinition::new("audit_by_resource");

/// Above every event id (`evt_` and 26 lowercase ULID characters): the end of one record's
/// range in [`BY_RESOURCE`].
const EVENT_ID_MAX: &str = "evt_~";

/// Puts `event` and its index entry in `txn`, the transaction of the change it records.
pub(crate) fn put(txn: &WriteTransaction, event: &AuditEvent) -> Result<(), StorageError> {
    let mut events = txn.open_table(EVENTS).or_backend()?;
    let mut index = txn.open_table(BY_RESOURCE).or_backend()?;
    let id = event.id.as_str();
    let bytes = record::encode_audit_event(event)?;
    events.insert(id, bytes.as_slice()).or_backend()?;
    index
        .insert((event.resource_id.as_str(), id), ())
        .or_backend()?;
    Ok(())
}

/// A page of the trail, newest first: one record's events through the index, or all of them.
pub(crate) fn list(
    txn: &ReadTransaction,
    query: AuditQuery<'_>,
) -> Result<Vec<AuditEvent>, StorageError> {
    let events = txn.open_table(EVENTS).or_backend()?;
    let mut found = Vec::new();
    if query.limit == 0 {
        return Ok(found);
    }
    match query.resource {
        Some(resource) => {
            let index = txn.open_table(BY_RESOURCE).or_backend()?;
            let end = match query.after {
                Some(after) => Bound::Excluded((resource, after)),
                None => Bound::Included((resource, EVENT_ID_MAX)),
            };
            let range = index
                .range::<(&str, &str)>((Bound::Included((resource, "")), end))
                .or_backend()?;
            for entry in range.rev() {
                let (key, _) = entry.or_backend()?;
                let (_, id) = key.value();
                if let Some(bytes) = events.get(id).or_backend()? {
                    let event = record::decode_audit_event(id, bytes.value())?;
                    if query.filter.matches(&event) {
                        found.push(event);
                    }
                }
                if found.len() == query.limit {
                    break;
                }
            }
        }
        None => {
            let end = match query.after {
                Some(after) => Bound::Excluded(after),
                None => Bound::Unbounded,
            };
            let range = events.range::<&str>((Bound::Unbounded, end)).or_backend()?;
            for entry in range.rev() {
                let (key, value) = entry.or_backend()?;
                let event = record::decode_audit_event(key.value(), value.value())?;
                if query.filter.matches(&event) {
                    found.push(event);
                }
                if found.len() == query.limit {
                    break;
                }
            }
        }
    }
    Ok(found)
}

/// Deletes, oldest first, the events older than `cutoff` and those beyond `max_events`;
/// answers how many.
pub(crate) fn prune(
    txn: &WriteTransaction,
    cutoff: Option<Timestamp>,
    max_events: Option<u64>,
) -> Result<u64, StorageError> {
    let mut events = txn.open_table(EVENTS).or_backend()?;
    let mut index = txn.open_table(BY_RESOURCE).or_backend()?;
    let mut excess = match max_events {
        Some(max) => events.len().or_backend()?.saturating_sub(max),
        None => 0,
    };
    // Oldest first: stop at the first event that is neither expired nor in excess.
    let mut doomed = Vec::new();
    for entry in events.iter().or_backend()? {
        let (key, value) = entry.or_backend()?;
        let event = record::decode_audit_event(key.value(), value.value())?;
        let expired = cutoff.is_some_and(|cutoff| event.at < cutoff);
        if !expired && excess == 0 {
            break;
        }
        excess = excess.saturating_sub(1);
        doomed.push((event.id.as_str().to_owned(), event.resource_id));
    }
    for (id, resource) in &doomed {
        events.remove(id.as_str()).or_backend()?;
        index
            .remove((resource.as_str(), id.as_str()))
            .or_backend()?;
    }
    Ok(doomed.len() as u64)
}

/// [`Storage::list_audit`](dbconsole_core::storage::Storage::list_audit).
pub(crate) async fn list_audit(
    store: &RedbStorage,
    query: AuditQuery<'_>,
) -> Result<Vec<AuditEvent>, StorageError> {
    let resource = query.resource.map(str::to_owned);
    let after = query.after.map(str::to_owned);
    let limit = query.limit;
    let any_of = query.filter.any_of.cloned();
    let actor = query.filter.actor.map(str::to_owned);
    let (action, since, until) = (query.filter.action, query.filter.since, query.filter.until);
    store
        .run(move |inner| {
            inner.read(|txn| {
                let query = AuditQuery {
                    resource: resource.as_deref(),
                    after: after.as_deref(),
                    limit,
                    filter: dbconsole_core::storage::AuditFilter {
                        any_of: any_of.as_ref(),
                        action,
                        actor: actor.as_deref(),
                        since,
                        until,
                    },
                };
                list(txn, query)
            })
        })
        .await
}

/// [`Storage::prune_audit`](dbconsole_core::storage::Storage::prune_audit).
pub(crate) async fn prune_audit(
    store: &RedbStorage,
    retention: Retention,
    now: Timestamp,
) -> Result<u64, StorageError> {
    let cutoff = dbconsole_core::storage::audit::cutoff(retention, now);
    store
        .write(move |_, txn| prune(txn, cutoff, retention.max_events))
        .await
}
