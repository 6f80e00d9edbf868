//! The memory of all runs' rows together (docs/queries.md, "Limits and cancel").
//!
//! A value or a row over [`ValueLimits`] is refused. That alone still lets many runs hold big
//! rows at once, so the rows of every run share one budget, [`ValueLimits::max_in_flight`]:
//!
//! - A driver that can be told sees each row's size before it reads the row
//!   (`postgres/guard.rs`: the length of each protocol message). A row of
//!   [`LARGE_ROW`] bytes or more waits there, before a byte of it is read, until the budget has
//!   room for it: **three times its size**. Measured on a 1 GiB value, the server's peak
//!   grew by three times the value: the driver's buffer grows by doubling (the old and the new
//!   block live together while it copies) and the answer holds its own copy.
//! - That charge is a [`Charge`] in the session's [`Ledger`]. It passes to the [`RowSink`] that
//!   writes the row, rides with the answer's chunk that holds the row, and goes back to the
//!   budget when that chunk is written to the client (or dropped).
//! - Smaller rows are not counted: a run holds at most a buffer of them (32 KiB) and a few
//!   chunks at a time.
//!
//! [`RowSink`]: super::RowSink

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::encode::ValueLimits;

/// Rows of this many bytes or more are charged to the budget.
pub const LARGE_ROW: usize = 64 * 1024;

/// What a protocol message may hold beyond its row's values (their lengths, its header).
pub const FRAMING: usize = 64 * 1024;

/// How many times its size a large row is charged: the driver's buffer while it grows (up to
/// twice the row) and the answer's copy.
pub const CHARGE: usize = 3;

/// A session that read a message this big or bigger is closed after its run (its driver's
/// read buffer is at least as big, and would stay with the pooled session).
pub const KEEP_SESSION_UNDER: usize = 8 * 1024 * 1024;

/// The budget's unit: permits are KiB, so that a semaphore's `u32` counts up to 4 TiB.
const UNIT: usize = 1024;

/// The bounds of a result's bytes and the budget all runs' large rows share.
#[derive(Debug)]
pub struct RunMemory {
    limits: ValueLimits,
    budget: Arc<Semaphore>,
}

impl RunMemory {
    /// The bounds `limits`, with a budget of `limits.max_in_flight` bytes.
    pub fn new(limits: ValueLimits) -> Arc<Self> {
        let units = limits.max_in_flight.div_ceil(UNIT);
        Arc::new(Self {
            limits,
            budget: Arc::new(Semaphore::new(
                units.min(Semaphore::MAX_PERMITS).min(u32::MAX as usize),
            )),
        })
    }

    /// The bounds.
    pub fn limits(&self) -> ValueLimits {
        self.limits
    }

    /// The most bytes one protocol message of a driver may hold: a row's bound and what its
    /// framing adds. A bigger message is refused before it is read.
    pub fn max_message(&self) -> usize {
        self.limits.max_row.saturating_add(FRAMING)
    }

    /// What a row of `bytes` is charged: [`CHARGE`] times its size, in the budget's units,
    /// never more than the whole budget.
    pub fn units_for(&self, bytes: usize) -> u32 {
        let units = bytes.saturating_mul(CHARGE).div_ceil(UNIT);
        let whole = self.limits.max_in_flight.div_ceil(UNIT);
        u32::try_from(units.min(whole)).unwrap_or(u32::MAX)
    }

    /// The budget, for the drivers' guards.
    pub fn budget(&self) -> Arc<Semaphore> {
        Arc::clone(&self.budget)
    }

    /// Bytes of the budget free now (for tests and metrics).
    pub fn available(&self) -> usize {
        self.budget.available_permits().saturating_mul(UNIT)
    }
}

/// A large row's share of the budget, given back when dropped.
#[derive(Debug)]
pub struct Charge {
    _permit: OwnedSemaphorePermit,
}

/// A chunk of an answer with the charges of the rows it holds.
pub(crate) struct Charged {
    pub(crate) bytes: bytes::Bytes,
    pub(crate) _charges: Vec<Charge>,
}

impl AsRef<[u8]> for Charged {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// One session's large rows between its driver and its run, in order.
///
/// The driver's guard counts each row as it arrives ([`Ledger::arrived`]); the run counts each
/// row it takes ([`Ledger::taken`]) and gets the charges of the rows it is done with. Outside a
/// run (a session's own queries, rows read after a run stopped), nothing is counted or charged.
/// Every row passes through both ends, so they take no lock unless a charge waits.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Whether a run reads this session's rows (changed under the lock of `charges`).
    active: AtomicBool,
    /// Rows that arrived since the run began.
    arrived: AtomicU64,
    /// The charges of large rows not yet handed over, by the row's number.
    charges: Mutex<VecDeque<(u64, Charge)>>,
    /// How many `charges` holds.
    queued: AtomicUsize,
    /// Why the driver's guard stopped the session, when it did.
    tripped: OnceLock<String>,
    /// The most bytes of one message the session has read.
    largest: AtomicUsize,
}

impl Ledger {
    fn charges(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, Charge)>> {
        self.charges.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A run begins reading rows: from now on they are counted.
    pub fn begin(&self) {
        let mut charges = self.charges();
        charges.clear();
        self.queued.store(0, Ordering::Release);
        self.arrived.store(0, Ordering::Release);
        self.active.store(true, Ordering::Release);
    }

    /// The run is over: what it did not take goes back to the budget.
    pub fn end(&self) {
        let mut charges = self.charges();
        self.active.store(false, Ordering::Release);
        charges.clear();
        self.queued.store(0, Ordering::Release);
    }

    /// A message of `bytes` arrived (the largest is kept: [`Ledger::largest`]).
    pub fn saw(&self, bytes: usize) {
        self.largest.fetch_max(bytes, Ordering::AcqRel);
    }

    /// The most bytes of one message the session has read. A driver keeps the buffer it grew
    /// for it as long as the session lives, so a session that read a message of
    /// [`KEEP_SESSION_UNDER`] bytes or more is closed after its run, not pooled.
    pub fn largest(&self) -> usize {
        self.largest.load(Ordering::Acquire)
    }

    /// A row arrived: its number in the run, or `None` outside a run.
    pub fn arrived(&self) -> Option<u64> {
        self.active
            .load(Ordering::Acquire)
            .then(|| self.arrived.fetch_add(1, Ordering::AcqRel))
    }

    /// Row `number`'s charge, kept until the run is done with the row (dropped at once
    /// outside a run).
    pub fn charge(&self, number: u64, permit: OwnedSemaphorePermit) {
        let mut charges = self.charges();
        if self.active.load(Ordering::Acquire) {
            charges.push_back((number, Charge { _permit: permit }));
            self.queued.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The run is done with its first `taken` rows: their charges.
    pub fn taken(&self, taken: u64, into: &mut Vec<Charge>) {
        if self.queued.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut charges = self.charges();
        while charges.front().is_some_and(|(n, _)| *n < taken) {
            if let Some((_, charge)) = charges.pop_front() {
                into.push(charge);
                self.queued.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// The guard stopped the session: why (the run's answer; the first reason stays).
    pub fn trip(&self, why: String) {
        let _ = self.tripped.set(why);
    }

    /// Why the guard stopped the session, when it did.
    pub fn tripped(&self) -> Option<String> {
        self.tripped.get().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_in_flight: usize) -> ValueLimits {
        ValueLimits {
            max_value: 1024 * 1024,
            max_row: 1024 * 1024,
            max_in_flight,
        }
    }

    #[tokio::test]
    async fn charges_go_back_in_order_when_taken() {
        const MIB: usize = 1024 * 1024;
        let memory = RunMemory::new(limits(16 * MIB));
        let ledger = Ledger::default();
        assert_eq!(ledger.arrived(), None, "outside a run nothing is counted");
        ledger.begin();
        for n in 0..3 {
            assert_eq!(ledger.arrived(), Some(n));
            let permit = memory
                .budget()
                .acquire_many_owned(memory.units_for(1024 * 1024))
                .await
                .unwrap();
            ledger.charge(n, permit);
        }
        assert_eq!(memory.available(), 16 * MIB - 3 * CHARGE * MIB);
        let mut held = Vec::new();
        ledger.taken(2, &mut held);
        assert_eq!(held.len(), 2);
        assert_eq!(
            memory.available(),
            16 * MIB - 3 * CHARGE * MIB,
            "held until dropped"
        );
        drop(held);
        assert_eq!(memory.available(), 16 * MIB - CHARGE * MIB);
        ledger.end();
        assert_eq!(memory.available(), 16 * MIB, "the end gives back the rest");
    }

    #[test]
    fn a_charge_never_exceeds_the_budget() {
        let memory = RunMemory::new(limits(4 * 1024 * 1024));
        assert_eq!(memory.units_for(100 * 1024 * 1024), 4 * 1024);
        assert_eq!(memory.units_for(1), 1);
    }
}
