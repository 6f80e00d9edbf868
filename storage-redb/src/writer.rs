//! Group commit: one writer thread owns every write transaction of a store.
//!
//! A write is a job sent to the writer. The writer takes the first job waiting, opens a write
//! transaction, runs that job and every other job already waiting (up to [`MAX_BATCH`]) in it,
//! one after the other, and commits once, durably. Jobs that arrive while a commit is in flight
//! wait in the queue and join the next transaction. So under load one `fsync` serves many
//! callers, and with one caller nothing changes.
//!
//! - **Answers**: a job that changed something is answered only after the commit that holds its
//!   change returned: an acknowledged write is durable.
//! - **Isolation**: jobs run one at a time, each seeing what the jobs before it in the batch
//!   wrote, exactly as if each had its own transaction in that order.
//! - **A refused job** (`NotFound`, `Invalid`, `AlreadyExists`, `Inherited`, `IdentityChanged`,
//!   or a panic in an edit closure) is answered at once and never fails the others: whatever it
//!   may have written before it refused is discarded by aborting the transaction and running
//!   the jobs accepted before it again in a fresh one (a job's work may run more than once, as
//!   the `Storage` contract allows edits to). Operations check before they write, so this
//!   costs an abort and a few replays in memory, never an extra `fsync`.
//! - **A backend failure** (redb, a record that does not encode) aborts the batch: the failing
//!   job and every job accepted in the batch answer the error; none was acknowledged. A failed
//!   commit answers every job of the batch with the failure.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use dbconsole_core::storage::StorageError;
use redb::{Durability, WriteTransaction};

use crate::Inner;

/// The most jobs one transaction holds.
pub(crate) const MAX_BATCH: usize = 256;

/// What a caller gets back: the result, or the panic of its job to resume.
pub(crate) type Reply<T> = Result<Result<T, StorageError>, Box<dyn Any + Send>>;

type Value = Box<dyn Any + Send>;
type Work = Box<dyn FnMut(&Inner, &WriteTransaction) -> Result<Value, StorageError> + Send>;

/// One write: its work (which may run more than once) and where its answer goes.
struct Job {
    work: Work,
    answer: Box<dyn FnOnce(Reply<Value>) + Send>,
}

/// The handle to a store's writer thread. Dropping it lets the thread finish the jobs it has
/// and waits for it, so the data file is closed when the store is.
pub(crate) struct Writer {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer thread of `inner`'s database.
    pub(crate) fn start(inner: Arc<Inner>) -> std::io::Result<Self> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("dbconsole-redb-writer".into())
            .spawn(move || {
                while let Ok(first) = queue.recv() {
                    batch(&inner, first, &queue);
                }
            })?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `work` in a write transaction of the writer; the answer comes after the commit
    /// that holds its change.
    pub(crate) async fn submit<T, F>(&self, mut work: F) -> Reply<T>
    where
        T: Send + 'static,
        F: FnMut(&Inner, &WriteTransaction) -> Result<T, StorageError> + Send + 'static,
    {
        let (send, reply) = tokio::sync::oneshot::channel::<Reply<Value>>();
        let job = Job {
            work: Box::new(move |inner, txn| {
                work(inner, txn).map(|value| Box::new(value) as Value)
            }),
            answer: Box::new(move |reply| {
                let _ = send.send(reply);
            }),
        };
        let not_written = || Ok(Err(StorageError::backend(NotWritten)));
        let Some(jobs) = &self.jobs else {
            return not_written();
        };
        if jobs.send(job).is_err() {
            return not_written();
        }
        match reply.await {
            Ok(Ok(Ok(value))) => match value.downcast::<T>() {
                Ok(value) => Ok(Ok(*value)),
                Err(_) => not_written(),
            },
            Ok(Ok(Err(error))) => Ok(Err(error)),
            Ok(Err(panic)) => Err(panic),
            Err(_) => not_written(),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the redb writer thread panicked");
        }
    }
}

/// The writer could not run the job: its thread stopped, or no transaction could begin (the
/// log says why).
#[derive(Debug, thiserror::Error)]
#[error("the write could not be run (the redb writer stopped or could not begin a transaction)")]
struct NotWritten;

/// A commit (or the start of a transaction) failed; every job of the batch gets this.
#[derive(Debug, thiserror::Error)]
#[error("the write transaction failed: {0}")]
struct BatchFailed(String);

fn begin(inner: &Inner) -> Result<WriteTransaction, redb::Error> {
    let mut txn = inner.db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    txn.set_two_phase_commit(true);
    Ok(txn)
}

fn abort(txn: WriteTransaction) {
    if let Err(error) = txn.abort() {
        tracing::warn!(%error, "aborting a write transaction failed");
    }
}

/// How one run of a job's work went.
enum Ran {
    Accepted(Value),
    /// Refused, or panicked: answered; what it wrote must be discarded.
    Refused(Reply<Value>),
    /// A backend failure: the batch must be aborted.
    Broke(StorageError),
}

fn run(inner: &Inner, txn: &WriteTransaction, job: &mut Job) -> Ran {
    match catch_unwind(AssertUnwindSafe(|| (job.work)(inner, txn))) {
        Ok(Ok(value)) => Ran::Accepted(value),
        Ok(Err(error @ StorageError::Backend(_))) => Ran::Broke(error),
        Ok(Err(refused)) => Ran::Refused(Ok(Err(refused))),
        Err(panic) => Ran::Refused(Err(panic)),
    }
}

/// Fails every job with the batch's error.
fn fail_all(jobs: Vec<Job>, message: &str) {
    for job in jobs {
        (job.answer)(Ok(Err(StorageError::backend(BatchFailed(
            message.to_owned(),
        )))));
    }
}

/// Runs `first` and the jobs waiting behind it in one transaction, and commits it.
fn batch(inner: &Inner, first: Job, queue: &Receiver<Job>) {
    let mut txn = match begin(inner) {
        Ok(txn) => txn,
        Err(error) => {
            // Dropping the job closes its answer channel: its caller gets `NotWritten`.
            tracing::error!(%error, "a write transaction could not begin");
            return;
        }
    };
    // The jobs whose work is in `txn`, with what their work returned.
    let mut accepted: Vec<(Job, Value)> = Vec::new();
    let mut next = Some(first);
    let mut taken = 0;
    while let Some(mut job) = next.take() {
        taken += 1;
        match run(inner, &txn, &mut job) {
            Ran::Accepted(value) => accepted.push((job, value)),
            Ran::Broke(error) => {
                abort(txn);
                let message = error.to_string();
                (job.answer)(Ok(Err(error)));
                fail_all(accepted.into_iter().map(|(job, _)| job).collect(), &message);
                return;
            }
            Ran::Refused(reply) => {
                (job.answer)(reply);
                // Discard what the refused job may have written: a fresh transaction with the
                // accepted jobs replayed, until a pass accepts them all.
                abort(txn);
                let mut replay: Vec<Job> = accepted.drain(..).map(|(job, _)| job).collect();
                loop {
                    txn = match begin(inner) {
                        Ok(txn) => txn,
                        Err(error) => {
                            tracing::error!(%error, "a write transaction could not begin");
                            fail_all(replay, &error.to_string());
                            return;
                        }
                    };
                    let mut clean = true;
                    for mut job in replay.drain(..) {
                        if !clean {
                            accepted.push((job, Box::new(())));
                            continue;
                        }
                        match run(inner, &txn, &mut job) {
                            Ran::Accepted(value) => accepted.push((job, value)),
                            Ran::Broke(error) => {
                                abort(txn);
                                let message = error.to_string();
                                (job.answer)(Ok(Err(error)));
                                fail_all(
                                    accepted.into_iter().map(|(job, _)| job).collect(),
                                    &message,
                                );
                                return;
                            }
                            Ran::Refused(reply) => {
                                (job.answer)(reply);
                                clean = false;
                            }
                        }
                    }
                    if clean {
                        break;
                    }
                    abort(txn);
                    replay = accepted.drain(..).map(|(job, _)| job).collect();
                }
            }
        }
        if taken < MAX_BATCH {
            next = queue.try_recv().ok();
        }
    }
    if accepted.is_empty() {
        abort(txn);
        return;
    }
    match txn.commit() {
        Ok(()) => {
            for (job, value) in accepted {
                (job.answer)(Ok(Ok(value)));
            }
        }
        Err(error) => {
            let message = error.to_string();
            fail_all(accepted.into_iter().map(|(job, _)| job).collect(), &message);
        }
    }
}
