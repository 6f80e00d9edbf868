//! The writing of a [`WriteLog`]: an event with the answer of an idempotent write and the new
//! deliveries, in the transaction of the change it records ([`append`]), in the one statement
//! that inserts a record ([`PostgresStorage::insert`]), or alone ([`append_log`]); and the one
//! write of another aggregate that carries a log and inserts what the log inserts, an outbox
//! delivery's compare-and-swap ([`PostgresStorage::replace_delivery_at`]). It sits above
//! `answers`, `deliveries` and `audit`, which need nothing of one another.

use dbconsole_core::model::{Delivery, StoredAnswer, Timestamp};
use dbconsole_core::storage::{StorageError, WriteLog, record};
use deadpool_postgres::Object;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::answers::put_answer;
use crate::audit::{EventRow, INSERT_EVENT};
use crate::deliveries;
use crate::fault::{Failure, classify};
use crate::retry::{InFlight, begin, commit, commit_known, serializable};
use crate::sql::key;

/// Appends a write's log in its transaction: its event, its answer if any
/// ([`StorageError::AnswerExists`] when its key has one already), and its new deliveries.
pub(crate) async fn append(
    txn: &deadpool_postgres::Transaction<'_>,
    log: &WriteLog,
) -> Result<(), Failure> {
    let row = EventRow::of(&log.event)?;
    let insert = txn.prepare_cached(INSERT_EVENT).await?;
    txn.execute(&insert, &row.params()).await?;
    if let Some(answer) = &log.answer {
        put_answer(txn, answer).await?;
    }
    deliveries::put_new(txn, &log.outbox).await
}

impl PostgresStorage {
    /// Inserts a record with `insert` (an `INSERT` of `params.len()` parameters) and its audit
    /// `event`, in one statement of one transaction: both or neither. A unique key taken is
    /// [`StorageError::AlreadyExists`].
    pub(crate) async fn insert(
        &self,
        insert: &str,
        params: &[&(dyn ToSql + Sync)],
        log: &WriteLog,
    ) -> Result<(), StorageError> {
        let n = params.len();
        // One statement writes the record and its event and answers the transaction's id (for
        // `commit_known`), saving a round trip.
        let sql = format!(
            "WITH written AS ({insert} RETURNING 1),
                  logged AS (INSERT INTO audit_events (id, resource_id, at, record)
                             SELECT ${}, ${}, ${}, ${} FROM written RETURNING 1)
             SELECT txid_current() FROM logged",
            n + 1,
            n + 2,
            n + 3,
            n + 4
        );
        let logged = EventRow::of(&log.event)?;
        let mut all: Vec<&(dyn ToSql + Sync)> = params.to_vec();
        all.extend(logged.params());
        serializable!(self, |client, in_flight| Self::try_insert(
            client,
            &sql,
            &all,
            log.answer.as_ref(),
            &log.outbox,
            log.event.id.as_str(),
            &in_flight
        )
        .await)
    }

    async fn try_insert(
        client: &mut Object,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        answer: Option<&StoredAnswer>,
        outbox: &[Delivery],
        event: &str,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        // Read committed is enough: what an insert must not break, unique ids, digests and
        // api_ids, the constraints guard.
        let txn = client.transaction().await?;
        let insert = txn.prepare_cached(sql).await?;
        let xid: i64 = match txn.query_one(&insert, params).await {
            Ok(row) => row.try_get(0).map_err(classify)?,
            Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                return Err(StorageError::AlreadyExists.into());
            }
            Err(error) => return Err(error.into()),
        };
        if let Some(answer) = answer {
            put_answer(&txn, answer).await?;
        }
        deliveries::put_new(&txn, outbox).await?;
        commit_known(txn, xid, event, in_flight).await
    }

    /// [`Storage::replace_delivery`](dbconsole_core::storage::Storage::replace_delivery): in a
    /// serializable transaction that writes the log, whose event settles a commit cut off
    /// midway.
    pub(crate) async fn replace_delivery_at(
        &self,
        delivery: Delivery,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        if key(delivery.id.as_str()).is_none() {
            return Err(StorageError::NotFound);
        }
        let bytes = record::encode_delivery(&delivery)?;
        serializable!(self, |client, in_flight| Self::try_replace_delivery(
            client, &delivery, &bytes, expected, &log, &in_flight
        )
        .await)
    }

    async fn try_replace_delivery(
        client: &mut Object,
        delivery: &Delivery,
        bytes: &[u8],
        expected: Timestamp,
        log: &WriteLog,
        in_flight: &InFlight,
    ) -> Result<(), Failure> {
        let txn = begin(client).await?;
        deliveries::swap_in(&txn, delivery, bytes, expected).await?;
        append(&txn, log).await?;
        commit(txn, log.event.id.as_str(), in_flight).await
    }
}

/// [`Storage::append_log`](dbconsole_core::storage::Storage::append_log).
pub(crate) async fn append_log(store: &PostgresStorage, log: WriteLog) -> Result<(), StorageError> {
    if log.answer.is_none() && log.outbox.is_empty() {
        // One statement that commits by itself.
        let row = EventRow::of(&log.event)?;
        let params = row.params();
        return store.rows(INSERT_EVENT, &params).await.map(|_| ());
    }
    serializable!(store, |client, in_flight| try_append(
        client, &log, &in_flight
    )
    .await)
}

async fn try_append(
    client: &mut Object,
    log: &WriteLog,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    append(&txn, log).await?;
    commit(txn, log.event.id.as_str(), in_flight).await
}
