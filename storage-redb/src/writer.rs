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
//! - **A refused or failing job** (`NotFound`, `Invalid`, `AlreadyExists`, `Inherited`,
//!   `IdentityChanged`, `Conflict`, a backend error such as a record that does not decode, or a
//!   panic in a job) never fails the others: whatever it may have written is discarded by
//!   aborting the transaction and running the jobs accepted before it again in a fresh one (a
//!   job's work may run more than once). Operations
//!   check before they write, so this costs an abort and a few replays in memory, never an
//!   extra `fsync`. Its answer goes out at once when no change of the batch preceded it; else
//!   it waits for the commit, since it may rest on a change that is not durable yet (a
//!   `NotFound` after a delete in the same batch), and becomes the batch's failure if the
//!   commit fails.
//! - **A failed commit**, or a transaction that cannot begin, answers every job of the batch
//!   with the failure; none was acknowledged. A panic inside redb ends only its batch (its
//!   callers get an error), never the writer.
//! - **An I/O failure** (a full disk) makes redb refuse every later operation on its handle.
//!   When a batch met one, the writer closes the file and opens it again (`Inner::reopen`), so
//!   reads go on and the next write tries the disk afresh; the store stays not ready
//!   (`check_ready`) until a commit succeeds.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;

use dbconsole_core::storage::StorageError;
use redb::{Durability, WriteTransaction};

use crate::error::Class;
use crate::file::Inner;
use crate::recent::Changes;

/// The most jobs one transaction holds.
pub(crate) const MAX_BATCH: usize = 256;

/// What a caller gets back: the result, or the panic of its job to resume.
pub(crate) type Reply<T> = Result<Result<T, StorageError>, Box<dyn Any + Send>>;

type Value = Box<dyn Any + Send>;
type Work = Box<dyn FnMut(&Inner, &WriteTransaction) -> Result<Value, StorageError> + Send>;

/// Where a job's answer goes.
type Answer = Box<dyn FnOnce(Reply<Value>) + Send>;

/// One write: its work (which may run more than once), where its answer goes, and whether it
/// may change a recently read record.
struct Job {
    work: Work,
    answer: Answer,
    changes: Changes,
}

/// The handle to a store's writer thread. Dropping it lets the thread finish the jobs it has
/// and waits for it, so the data file is closed when the store is.
pub(crate) struct Writer {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// Jobs submitted so far (what a test waits on to know a job is queued).
    submitted: std::sync::atomic::AtomicU64,
}

impl Writer {
    /// Starts the writer thread of `inner`'s database.
    pub(crate) fn start(inner: Arc<Inner>) -> std::io::Result<Self> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("dbconsole-redb-writer".into())
            .spawn(move || {
                while let Ok(first) = queue.recv() {
                    if inner.closed() {
                        inner.reopen();
                    }
                    // A panic in redb itself must not end the writer: the batch's callers see
                    // their answer channels close (`NotWritten`), and later writes go on.
                    let outcome = catch_unwind(AssertUnwindSafe(|| {
                        let slot = inner.db.read().unwrap_or_else(PoisonError::into_inner);
                        match slot.as_ref() {
                            Some(db) => batch(&inner, db, first, &queue),
                            None => {
                                let mut outbox = Outbox::default();
                                outbox.send(first, closed().reply());
                                (true, outbox)
                            }
                        }
                    }));
                    match outcome {
                        Ok((io_failed, outbox)) => {
                            // Reopened before anyone is told of the failure: a caller that got
                            // its 503 and reads next finds a working handle, not the latched one.
                            if io_failed {
                                inner.unready.store(true, Ordering::Release);
                                inner.reopen();
                            }
                            outbox.deliver();
                        }
                        Err(_) => {
                            tracing::error!(
                                "a write batch panicked; its writes were not committed"
                            );
                        }
                    }
                }
            })?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
            submitted: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// How many jobs were submitted so far.
    #[cfg(test)]
    pub(crate) fn submitted(&self) -> u64 {
        self.submitted.load(Ordering::Acquire)
    }

    /// Runs `work` in a write transaction of the writer; the answer comes after the commit
    /// that holds its change. `changes` says whether it may change a record the store keeps
    /// among the recently read ones (module `recent`).
    pub(crate) async fn submit<T, F>(&self, changes: Changes, mut work: F) -> Reply<T>
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
            changes,
        };
        let not_written = || Ok(Err(StorageError::backend(NotWritten)));
        self.submitted.fetch_add(1, Ordering::AcqRel);
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

/// Why a batch failed, for each of its jobs.
struct Failure {
    class: Class,
    message: String,
}

impl Failure {
    fn of(error: &redb::Error) -> Self {
        Self {
            class: Class::of(error),
            message: error.to_string(),
        }
    }

    fn reply(&self) -> Reply<Value> {
        Ok(Err(self.class.error(BatchFailed(self.message.clone()))))
    }
}

fn begin(db: &redb::Database) -> Result<WriteTransaction, redb::Error> {
    let mut txn = db.begin_write()?;
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
    /// Refused by the contract, failed, or panicked: what it wrote must be discarded.
    Refused(Reply<Value>),
}

fn run(inner: &Inner, txn: &WriteTransaction, job: &mut Job) -> Ran {
    match catch_unwind(AssertUnwindSafe(|| (job.work)(inner, txn))) {
        Ok(Ok(value)) => Ran::Accepted(value),
        Ok(Err(error)) => Ran::Refused(Ok(Err(error))),
        Err(panic) => Ran::Refused(Err(panic)),
    }
}

/// The failure of a batch that found no open file (its reopen failed).
fn closed() -> Failure {
    Failure {
        class: Class::Io,
        message: "the data file could not be reopened after an I/O failure".to_owned(),
    }
}

/// Answers ready to go out, delivered once the writer has done what must come first (reopening
/// the file after an I/O failure).
#[derive(Default)]
struct Outbox(Vec<(Answer, Reply<Value>)>);

impl Outbox {
    fn send(&mut self, job: Job, reply: Reply<Value>) {
        self.0.push((job.answer, reply));
    }

    fn deliver(self) {
        for (answer, reply) in self.0 {
            answer(reply);
        }
    }
}

/// The answers of a batch, sent once its fate is known.
#[derive(Default)]
struct Answers {
    /// Answers decided.
    outbox: Outbox,
    /// Jobs whose change is in the transaction, with what their work returned.
    accepted: Vec<(Job, Value)>,
    /// Jobs refused while jobs before them in the batch were accepted: their answer may depend
    /// on changes not committed yet, so it waits for the commit.
    deferred: Vec<(Job, Reply<Value>)>,
}

impl Answers {
    /// Refuses `job` with `reply`: at once when nothing uncommitted can have led to it.
    fn refuse(&mut self, job: Job, reply: Reply<Value>) {
        if self.accepted.is_empty() {
            self.outbox.send(job, reply);
        } else {
            self.deferred.push((job, reply));
        }
    }

    /// The transaction committed: every answer goes out.
    fn committed(mut self) -> Outbox {
        for (job, value) in self.accepted {
            self.outbox.send(job, Ok(Ok(value)));
        }
        for (job, reply) in self.deferred {
            self.outbox.send(job, reply);
        }
        self.outbox
    }

    /// The transaction failed: no change of the batch exists, and no refusal that may have
    /// rested on one stands.
    fn failed(mut self, failure: &Failure) -> Outbox {
        for (job, _) in self.accepted {
            self.outbox.send(job, failure.reply());
        }
        for (job, _) in self.deferred {
            self.outbox.send(job, failure.reply());
        }
        self.outbox
    }
}

/// Runs `first` and the jobs waiting behind it in one transaction of `db`, and commits it.
/// Answers whether it met an I/O failure (the handle must be reopened), and the answers to
/// deliver.
fn batch(inner: &Inner, db: &redb::Database, first: Job, queue: &Receiver<Job>) -> (bool, Outbox) {
    let mut io_failed = false;
    let mut answers = Answers::default();
    let mut txn = match begin(db) {
        Ok(txn) => txn,
        Err(error) => {
            tracing::error!(%error, "a write transaction could not begin");
            let failure = Failure::of(&error);
            answers.outbox.send(first, failure.reply());
            return (failure.class.is_io(), answers.outbox);
        }
    };
    let mut next = Some(first);
    let mut taken = 0;
    while let Some(mut job) = next.take() {
        taken += 1;
        match run(inner, &txn, &mut job) {
            Ran::Accepted(value) => answers.accepted.push((job, value)),
            Ran::Refused(reply) => {
                io_failed |= met_io_failure(&reply);
                answers.refuse(job, reply);
                // Discard what the refused job may have written: a fresh transaction with the
                // accepted jobs replayed, until a pass accepts them all.
                abort(txn);
                let mut replay: Vec<Job> = answers.accepted.drain(..).map(|(job, _)| job).collect();
                loop {
                    txn = match begin(db) {
                        Ok(txn) => txn,
                        Err(error) => {
                            tracing::error!(%error, "a write transaction could not begin");
                            let failure = Failure::of(&error);
                            for job in replay {
                                answers.outbox.send(job, failure.reply());
                            }
                            return (io_failed || failure.class.is_io(), answers.failed(&failure));
                        }
                    };
                    let mut refused = false;
                    for mut job in replay.drain(..) {
                        if refused {
                            // Replayed in the next pass.
                            answers.accepted.push((job, Box::new(())));
                            continue;
                        }
                        match run(inner, &txn, &mut job) {
                            Ran::Accepted(value) => answers.accepted.push((job, value)),
                            Ran::Refused(reply) => {
                                io_failed |= met_io_failure(&reply);
                                answers.refuse(job, reply);
                                refused = true;
                            }
                        }
                    }
                    if !refused {
                        break;
                    }
                    abort(txn);
                    replay = answers.accepted.drain(..).map(|(job, _)| job).collect();
                }
            }
        }
        if taken < MAX_BATCH {
            next = queue.try_recv().ok();
        }
    }
    if answers.accepted.is_empty() {
        abort(txn);
        // Only refusals that rested on a change a replay then refused can be left: that change
        // was not made, so they stand for nothing.
        let outbox = answers.failed(&Failure {
            class: Class::Backend,
            message: "a change of the same batch that it depended on was not made".to_owned(),
        });
        return (io_failed, outbox);
    }
    // While the commit makes the batch's changes visible, no read answers from (or fills) the
    // recently read records; they start afresh once it returned, before any answer goes out.
    let _committing = answers
        .accepted
        .iter()
        .any(|(job, _)| job.changes == Changes::Records)
        .then(|| inner.recent.committing());
    match txn.commit() {
        Ok(()) => {
            inner.unready.store(false, Ordering::Release);
            (io_failed, answers.committed())
        }
        Err(error) => {
            let error = redb::Error::from(error);
            tracing::error!(%error, "a write transaction could not commit");
            let failure = Failure::of(&error);
            (io_failed || failure.class.is_io(), answers.failed(&failure))
        }
    }
}

/// Whether a job was refused because the file failed it (its handle must be reopened).
fn met_io_failure(reply: &Reply<Value>) -> bool {
    matches!(reply, Ok(Err(error)) if Class::of_storage(error).is_some())
}
