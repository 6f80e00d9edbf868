//! The audit trail (table `audit_events`, migration 2): an event's row ([`EventRow`],
//! [`INSERT_EVENT`]), which `write_log` writes in the transaction of the change it records, or
//! in the one statement that inserts a record; and the listing and the pruning of the trail.

use dbconsole_core::model::{AuditEvent, Retention, Timestamp};
use dbconsole_core::storage::{AuditQuery, StorageError, audit, record};
use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::fault::Failure;
use crate::retry::{begin, serializable};
use crate::sql::{bytes, key, text};

/// An audit event as its row's parameters: id, resource id, time, record.
pub(crate) struct EventRow {
    id: String,
    resource_id: String,
    at: i64,
    record: Vec<u8>,
}

impl EventRow {
    /// `event`'s row, its record encoded.
    pub(crate) fn of(event: &AuditEvent) -> Result<Self, StorageError> {
        Ok(Self {
            id: event.id.as_str().to_owned(),
            resource_id: event.resource_id.clone(),
            at: event.at.as_micros(),
            record: record::encode_audit_event(event)?,
        })
    }

    /// The row's parameters, in the order of [`INSERT_EVENT`].
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 4] {
        [&self.id, &self.resource_id, &self.at, &self.record]
    }
}

/// Inserts an event's row: [`EventRow::params`].
pub(crate) const INSERT_EVENT: &str =
    "INSERT INTO audit_events (id, resource_id, at, record) VALUES ($1, $2, $3, $4)";

fn event_of(row: &Row) -> Result<AuditEvent, StorageError> {
    Ok(record::decode_audit_event(
        &text(row, "id")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::list_audit`](dbconsole_core::storage::Storage::list_audit).
pub(crate) async fn list(
    store: &PostgresStorage,
    query: AuditQuery<'_>,
) -> Result<Vec<AuditEvent>, StorageError> {
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let after = query
        .after
        .map(|after| after.split('\0').next().unwrap_or_default());
    if !query.filter.is_empty() {
        return list_filtered(store, query, after).await;
    }
    match query.resource {
        Some(resource) => {
            let Some(resource) = key(resource) else {
                return Ok(Vec::new());
            };
            // Through the (resource_id, id) index.
            let sql = "SELECT id, record FROM audit_events
                            WHERE resource_id = $1 AND ($2::text IS NULL OR id < $2)
                            ORDER BY resource_id DESC, id DESC LIMIT $3";
            let params: [&(dyn ToSql + Sync); 3] = [&resource, &after, &limit];
            store.all(sql, &params, event_of).await
        }
        None => {
            let sql = "SELECT id, record FROM audit_events
                            WHERE $1::text IS NULL OR id < $1 ORDER BY id DESC LIMIT $2";
            let params: [&(dyn ToSql + Sync); 2] = [&after, &limit];
            store.all(sql, &params, event_of).await
        }
    }
}

/// Events read per round of a filtered listing.
const FILTERED_BATCH: i64 = 500;

/// A filtered page: the resources and the time bounds in SQL (through the indexes), the
/// action and the actor on the decoded events, newest first, a batch at a time until the page
/// is full or the trail ends.
async fn list_filtered(
    store: &PostgresStorage,
    query: AuditQuery<'_>,
    after: Option<&str>,
) -> Result<Vec<AuditEvent>, StorageError> {
    let mut resources: Option<Vec<String>> =
        query.filter.any_of.map(|ids| ids.iter().cloned().collect());
    if let Some(resource) = query.resource {
        resources = Some(match resources {
            Some(ids) => ids.into_iter().filter(|id| id == resource).collect(),
            None => vec![resource.to_owned()],
        });
    }
    let resources: Option<Vec<String>> =
        resources.map(|ids| ids.into_iter().filter(|id| key(id).is_some()).collect());
    let since = query.filter.since.map(Timestamp::as_micros);
    let until = query.filter.until.map(Timestamp::as_micros);
    let mut cursor = after.map(str::to_owned);
    let mut found = Vec::new();
    loop {
        let sql = "SELECT id, record FROM audit_events
                        WHERE ($1::text[] IS NULL OR resource_id = ANY($1))
                          AND ($2::bigint IS NULL OR at >= $2)
                          AND ($3::bigint IS NULL OR at < $3)
                          AND ($4::text IS NULL OR id < $4)
                        ORDER BY id DESC LIMIT $5";
        let params: [&(dyn ToSql + Sync); 5] =
            [&resources, &since, &until, &cursor, &FILTERED_BATCH];
        let batch = store.all(sql, &params, event_of).await?;
        let read = batch.len();
        cursor = batch.last().map(|event| event.id.to_string());
        for event in batch {
            if query.filter.matches(&event) {
                found.push(event);
                if found.len() == query.limit {
                    return Ok(found);
                }
            }
        }
        if i64::try_from(read).unwrap_or(i64::MAX) < FILTERED_BATCH {
            return Ok(found);
        }
    }
}

/// [`Storage::prune_audit`](dbconsole_core::storage::Storage::prune_audit).
pub(crate) async fn prune(
    store: &PostgresStorage,
    retention: Retention,
    now: Timestamp,
) -> Result<u64, StorageError> {
    let cutoff = audit::cutoff(retention, now).map(Timestamp::as_micros);
    let keep = retention
        .max_events
        .map(|max| i64::try_from(max).unwrap_or(i64::MAX));
    serializable!(store, |client, _in_flight| try_prune(client, cutoff, keep)
        .await)
}

async fn try_prune(
    client: &mut Object,
    cutoff: Option<i64>,
    keep: Option<i64>,
) -> Result<u64, Failure> {
    let txn = begin(client).await?;
    let mut pruned = 0;
    if let Some(cutoff) = cutoff {
        let old = txn
            .prepare_cached("DELETE FROM audit_events WHERE at < $1")
            .await?;
        pruned += txn.execute(&old, &[&cutoff]).await?;
    }
    if let Some(keep) = keep {
        let excess = txn
            .prepare_cached(
                "DELETE FROM audit_events WHERE id IN
                       (SELECT id FROM audit_events ORDER BY id DESC OFFSET $1)",
            )
            .await?;
        pruned += txn.execute(&excess, &[&keep]).await?;
    }
    txn.commit().await?;
    Ok(pruned)
}
