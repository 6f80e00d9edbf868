//! The writing of a [`WriteLog`]: its answer, its new deliveries and its event, in the
//! transaction of the change it records ([`append`], which every aggregate's writes call), or
//! alone ([`append_log`]); and the one write of another aggregate that carries a log and puts
//! what the log puts, an outbox delivery's compare-and-swap ([`replace_delivery`]). It sits
//! above `answers`, `deliveries` and `audit`, which need nothing of one another.

use dbconsole_core::model::{Delivery, Timestamp};
use dbconsole_core::storage::{StorageError, WriteLog};
use redb::WriteTransaction;

use crate::recent::Changes;
use crate::{RedbStorage, answers, audit, deliveries};

/// Appends a write's log in `txn`, the transaction of the change it records: its answer, if
/// any ([`StorageError::AnswerExists`] refuses the write when its key has one), its new
/// deliveries, and its event.
pub(crate) fn append(txn: &WriteTransaction, log: &WriteLog) -> Result<(), StorageError> {
    if let Some(answer) = &log.answer {
        answers::put(txn, answer)?;
    }
    for delivery in &log.outbox {
        deliveries::put(txn, delivery, None)?;
    }
    audit::put(txn, &log.event)
}

/// [`Storage::append_log`](dbconsole_core::storage::Storage::append_log).
pub(crate) async fn append_log(store: &RedbStorage, log: WriteLog) -> Result<(), StorageError> {
    // An event only: the records recently read stay as they are.
    store
        .write_changing(Changes::AuditOnly, move |_, txn| append(txn, &log))
        .await
}

/// [`Storage::replace_delivery`](dbconsole_core::storage::Storage::replace_delivery): the
/// compare-and-swap of `deliveries::swap_delivery`, appending `log` in its transaction.
pub(crate) async fn replace_delivery(
    store: &RedbStorage,
    delivery: Delivery,
    expected: Timestamp,
    log: WriteLog,
) -> Result<(), StorageError> {
    store
        .write(move |_, txn| {
            deliveries::put(txn, &delivery, Some(expected))?;
            append(txn, &log)
        })
        .await
}
