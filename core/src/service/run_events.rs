//! The audit events of runs that record nothing else (a panel's, an editor's test run, an AI
//! agent's tool, a catalog read, a role check): durable, but off the run's way
//! (docs/operations.md, "Run events").
//!
//! A run takes a slot before its answer ends (it waits there while every slot is taken), ends
//! its answer, then hands its event to one writer task, which gathers what comes within
//! [`LINGER`] (at most [`BATCH`] events) and appends them together, so that a backend that
//! commits concurrent writes as one (redb's writer, PostgreSQL's pool) makes one durable commit
//! of many events. A slot is given back once its event is durable (or its write failed, logged).
//! So at any moment at most the bound (the server's `--run-events-backlog`, default
//! [`DEFAULT_BOUND`]) of answered runs lack their durable event: what a crash can lose.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::storage::{Storage, WriteLog};

/// How long the writer waits for more events after the first of a batch: a commit costs the
/// embedded store about the same whatever it holds, so fewer and larger ones leave the machine
/// to the runs (at 5 ms, a busy door's events took a fifth of its time).
pub const LINGER: Duration = Duration::from_millis(25);

/// The most events the writer appends together.
pub const BATCH: usize = 512;

/// The most answered runs whose events are not yet durable, by default.
pub const DEFAULT_BOUND: usize = 1024;

/// What the run events' writer has done, for the metrics and the benches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunEventStats {
    /// Events written durably since the start.
    pub written: u64,
    /// Events whose write failed (each logged).
    pub failed: u64,
    /// Answered runs whose events are not durable yet.
    pub backlog: usize,
    /// The largest `backlog` seen since the start.
    pub peak: usize,
    /// The most there can be (the bound the service was built with).
    pub bound: usize,
}

/// A taken slot: one answered run whose event is not durable yet.
#[derive(Debug)]
pub(in crate::service) struct Slot {
    _permit: OwnedSemaphorePermit,
}

/// The queue of run events and its writer.
#[derive(Debug)]
pub(crate) struct RunEvents {
    slots: Arc<Semaphore>,
    bound: usize,
    sender: OnceLock<mpsc::UnboundedSender<(WriteLog, Slot)>>,
    counts: Arc<Counts>,
    metrics: bool,
    /// The runtime the queue was made on, where its writer runs (a door thread's runtime may
    /// write first).
    runtime: Option<tokio::runtime::Handle>,
}

#[derive(Debug, Default)]
struct Counts {
    written: AtomicU64,
    failed: AtomicU64,
    peak: AtomicUsize,
}

impl RunEvents {
    /// A queue of at most `bound` events (at least 1) not yet durable.
    pub(in crate::service) fn new(bound: usize, metrics: bool) -> Self {
        let bound = bound.max(1);
        Self {
            slots: Arc::new(Semaphore::new(bound)),
            bound,
            sender: OnceLock::new(),
            counts: Arc::new(Counts::default()),
            metrics,
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// A slot for one event: waits while `bound` answered runs' events are not durable.
    pub(in crate::service) async fn slot(&self) -> Slot {
        let permit = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .expect("the slots are never closed");
        let backlog = self.backlog();
        self.counts.peak.fetch_max(backlog, Ordering::Relaxed);
        if self.metrics {
            crate::metrics::record_run_events_backlog(
                backlog,
                self.counts.peak.load(Ordering::Relaxed),
            );
        }
        Slot { _permit: permit }
    }

    /// Hands `log` to the writer (started on first use, on the runtime the queue was made on,
    /// else the current one); its slot is given back once it is durable.
    pub(in crate::service) fn write(&self, storage: &Arc<dyn Storage>, slot: Slot, log: WriteLog) {
        let sender = self.sender.get_or_init(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            let writer = writer(
                Arc::clone(storage),
                receiver,
                Arc::clone(&self.counts),
                Arc::clone(&self.slots),
                self.bound,
                self.metrics,
            );
            match &self.runtime {
                Some(runtime) => drop(runtime.spawn(writer)),
                None => drop(tokio::spawn(writer)),
            }
            sender
        });
        if let Err(mpsc::error::SendError((log, _slot))) = sender.send((log, slot)) {
            // The writer is gone only with its runtime: the event can't be written.
            tracing::error!(action = ?log.event.action, "a run's audit event could not be queued");
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits until every event handed to the writer is durable (or failed): at a shutdown.
    pub(in crate::service) async fn settle(&self) {
        let all = u32::try_from(self.bound).unwrap_or(u32::MAX);
        if let Ok(permits) = self.slots.acquire_many(all).await {
            drop(permits);
        }
    }

    /// Answered runs whose events are not durable yet.
    fn backlog(&self) -> usize {
        self.bound - self.slots.available_permits()
    }

    pub(in crate::service) fn stats(&self) -> RunEventStats {
        RunEventStats {
            written: self.counts.written.load(Ordering::Relaxed),
            failed: self.counts.failed.load(Ordering::Relaxed),
            backlog: self.backlog(),
            peak: self.counts.peak.load(Ordering::Relaxed),
            bound: self.bound,
        }
    }
}

/// Moves what waits in `receiver` to `batch`, up to [`BATCH`].
fn take_waiting<T>(receiver: &mut mpsc::UnboundedReceiver<T>, batch: &mut Vec<T>) {
    while batch.len() < BATCH {
        match receiver.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
}

/// The writer: a batch is the first event and whatever follows within [`LINGER`], up to
/// [`BATCH`], appended concurrently (one commit where the backend groups them). It sleeps
/// through the linger and then takes what came (an event sent meanwhile wakes nothing); a
/// full batch waiting goes at once.
async fn writer(
    storage: Arc<dyn Storage>,
    mut receiver: mpsc::UnboundedReceiver<(WriteLog, Slot)>,
    counts: Arc<Counts>,
    slots: Arc<Semaphore>,
    bound: usize,
    metrics: bool,
) {
    while let Some(first) = receiver.recv().await {
        let mut batch = vec![first];
        // What already waits is taken at once; only a batch not full waits for more.
        take_waiting(&mut receiver, &mut batch);
        if batch.len() < BATCH {
            tokio::time::sleep(LINGER).await;
            take_waiting(&mut receiver, &mut batch);
        }
        let (logs, slots_held): (Vec<WriteLog>, Vec<Slot>) = batch.into_iter().unzip();
        let written = futures_util::future::join_all(
            logs.into_iter()
                .map(|log| async { (log.event.action, storage.append_log(log).await) }),
        )
        .await;
        let mut ok = 0u64;
        for (action, result) in written {
            match result {
                Ok(()) => ok += 1,
                Err(error) => {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(%error, ?action, "a run's audit event could not be written");
                }
            }
        }
        counts.written.fetch_add(ok, Ordering::Relaxed);
        drop(slots_held);
        if metrics {
            crate::metrics::record_run_events_written(ok);
            crate::metrics::record_run_events_backlog(
                bound - slots.available_permits(),
                counts.peak.load(Ordering::Relaxed),
            );
        }
    }
}
