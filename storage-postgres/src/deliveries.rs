//! The outbox in PostgreSQL (table `deliveries`, migration 7). A claim takes due rows with
//! `FOR UPDATE SKIP LOCKED` in a read-committed transaction and moves their lease in it, so
//! nodes claiming at once each get other deliveries and none waits for another's.

use dbconsole_core::model::{Delivery, DeliveryStatus, TargetKind, Timestamp};
use dbconsole_core::storage::{Page, StorageError, record};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::fault::{Failure, classify};
use crate::sql::{after_bound, key};

const INSERT: &str = "INSERT INTO deliveries (id, status, due_at, version, record, kind) \
                      VALUES ($1, $2, $3, $4, $5, $6)";

const SWAP: &str = "UPDATE deliveries SET status = $2, due_at = $3, version = $4, record = $5 \
                    WHERE id = $1 AND version = $6";

/// [`Delivery::claimable_at`] in microseconds, as the index keeps it.
fn claimable_at(delivery: &Delivery) -> Option<i64> {
    delivery.claimable_at().map(Timestamp::as_micros)
}

fn delivery_of(row: &Row) -> Result<Delivery, StorageError> {
    let id: String = row.try_get("id").map_err(classify)?;
    let bytes: Vec<u8> = row.try_get("record").map_err(classify)?;
    Ok(record::decode_delivery(&id, &bytes)?)
}

/// Inserts a write's new deliveries in its transaction.
pub(crate) async fn put_new(
    txn: &deadpool_postgres::Transaction<'_>,
    outbox: &[Delivery],
) -> Result<(), Failure> {
    if outbox.is_empty() {
        return Ok(());
    }
    let insert = txn.prepare_cached(INSERT).await?;
    for delivery in outbox {
        let bytes = record::encode_delivery(delivery)?;
        txn.execute(
            &insert,
            &[
                &delivery.id.as_str(),
                &delivery.status.as_str(),
                &claimable_at(delivery),
                &delivery.updated_at.as_micros(),
                &bytes,
                &delivery.target.kind().as_str(),
            ],
        )
        .await?;
    }
    Ok(())
}

impl PostgresStorage {
    pub(crate) async fn claim(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
        kinds: &[TargetKind],
    ) -> Result<Vec<Delivery>, StorageError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let kinds: Vec<&str> = kinds.iter().map(|kind| kind.as_str()).collect();
        self.bounded(async {
            let mut client = self.client().await?;
            // Read committed, whatever the server's default: a row another claim holds is
            // skipped, not waited for; one it committed is read again as it is now (its lease
            // in the future: not due). Under repeatable read or serializable, a claim would
            // fail on a row another claim changed instead.
            let txn = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::ReadCommitted)
                .start()
                .await
                .map_err(classify)?;
            let select = txn
                .prepare_cached(
                    "SELECT id, record FROM deliveries WHERE kind = ANY($3) AND due_at <= $1 \
                     ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED",
                )
                .await
                .map_err(classify)?;
            let rows = txn
                .query(&select, &[&now.as_micros(), &limit, &kinds])
                .await
                .map_err(classify)?;
            let swap = txn.prepare_cached(SWAP).await.map_err(classify)?;
            let mut claimed = Vec::with_capacity(rows.len());
            for row in &rows {
                let stored = delivery_of(row)?;
                if !stored.is_due(now) {
                    continue;
                }
                let next = stored.claimed(now, lease_until);
                let bytes = record::encode_delivery(&next)?;
                let changed = txn
                    .execute(
                        &swap,
                        &[
                            &next.id.as_str(),
                            &next.status.as_str(),
                            &claimable_at(&next),
                            &next.updated_at.as_micros(),
                            &bytes,
                            &stored.updated_at.as_micros(),
                        ],
                    )
                    .await
                    .map_err(classify)?;
                // The row is locked by this claim, so it is there at its version; a claim
                // answers only what it changed, whatever happens.
                if changed == 1 {
                    claimed.push(next);
                }
            }
            // A commit whose answer is lost leaves leases nobody holds: they end, and the
            // deliveries are claimed again (at least once, never lost).
            txn.commit().await.map_err(classify)?;
            Ok(claimed)
        })
        .await
    }

    pub(crate) async fn get_delivery(&self, id: &str) -> Result<Option<Delivery>, StorageError> {
        let Some(id) = key(id) else {
            return Ok(None);
        };
        self.one(
            "SELECT id, record FROM deliveries WHERE id = $1",
            &[&id],
            delivery_of,
        )
        .await
    }

    pub(crate) async fn deliveries(
        &self,
        page: Page<'_>,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<Delivery>, StorageError> {
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        let after = after_bound(&page);
        let status = status.map(DeliveryStatus::as_str);
        let mut conditions = Vec::new();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if let Some(after) = &after {
            params.push(after);
            conditions.push(format!("id < ${}", params.len()));
        }
        if let Some(status) = &status {
            params.push(status);
            conditions.push(format!("status = ${}", params.len()));
        }
        params.push(&limit);
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let sql = format!(
            "SELECT id, record FROM deliveries {filter} ORDER BY id DESC LIMIT ${}",
            params.len()
        );
        self.all(&sql, &params, delivery_of).await
    }

    /// [`Storage::swap_delivery`](dbconsole_core::storage::Storage::swap_delivery): one
    /// statement that commits by itself (a worker's outcome writes no event).
    pub(crate) async fn swap_delivery_at(
        &self,
        delivery: Delivery,
        expected: Timestamp,
    ) -> Result<(), StorageError> {
        if key(delivery.id.as_str()).is_none() {
            return Err(StorageError::NotFound);
        }
        let bytes = record::encode_delivery(&delivery)?;
        let rows = self
            .rows(
                &format!(
                    "WITH swapped AS ({SWAP} RETURNING 1) \
                     SELECT (SELECT count(*) FROM swapped), \
                            EXISTS (SELECT 1 FROM deliveries WHERE id = $1)"
                ),
                &[
                    &delivery.id.as_str(),
                    &delivery.status.as_str(),
                    &claimable_at(&delivery),
                    &delivery.updated_at.as_micros(),
                    &bytes,
                    &expected.as_micros(),
                ],
            )
            .await?;
        let row = rows.first().ok_or(StorageError::NotFound)?;
        let swapped: i64 = row.try_get(0).map_err(classify)?;
        let exists: bool = row.try_get(1).map_err(classify)?;
        match (swapped, exists) {
            (1, _) => Ok(()),
            (_, true) => Err(StorageError::Conflict),
            (_, false) => Err(StorageError::NotFound),
        }
    }
}

/// Swaps `delivery` (its record encoded as `bytes`) in for the one at version `expected`, in
/// `txn`: [`StorageError::Conflict`] when it is at another version, [`StorageError::NotFound`]
/// when there is none.
pub(crate) async fn swap_in(
    txn: &deadpool_postgres::Transaction<'_>,
    delivery: &Delivery,
    bytes: &[u8],
    expected: Timestamp,
) -> Result<(), Failure> {
    let swap = txn.prepare_cached(SWAP).await?;
    let id = delivery.id.as_str();
    let changed = txn
        .execute(
            &swap,
            &[
                &id,
                &delivery.status.as_str(),
                &claimable_at(delivery),
                &delivery.updated_at.as_micros(),
                &bytes,
                &expected.as_micros(),
            ],
        )
        .await?;
    if changed == 0 {
        let exists = txn
            .query_opt("SELECT 1 FROM deliveries WHERE id = $1", &[&id])
            .await?
            .is_some();
        return Err(if exists {
            StorageError::Conflict
        } else {
            StorageError::NotFound
        }
        .into());
    }
    Ok(())
}
