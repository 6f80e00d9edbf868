//! Running queries: the [`QueryRunner`] trait, the per-adapter registry, and what a run is
//! given ([`RunJob`]) and writes to ([`RowSink`]).
//!
//! A runner takes a connection from its credential's pool ([`pool`]), runs one statement with
//! its inputs as bind parameters ([`statement`]), and writes each row into the sink as it
//! arrives: the sink encodes it ([`encode`]) and hands full buffers to the response body, so a
//! result is never held in memory and a slow client slows the database read (the channel is
//! bounded). Every runner keeps the same promises (docs/queries.md, "Running queries"):
//!
//! - **Row cap**: it reads at most `max_rows + 1` rows and stops the statement on the server
//!   when more exist (`truncated`).
//! - **Timeout**: the statement's timeout is set *in the database*, and the service bounds the
//!   whole run too.
//! - **Cancel**: when the client goes away ([`RowSink::gone`]) it cancels the statement on the
//!   server and drops the connection.
//! - **Secrets**: they are opened by the [`Connector`] only when a connection opens.
//!
//! Each adapter's runner sits behind the cargo feature of its checker.
//!
//! ---
//!
//! *The manual's page on this part, as the repository shows it:*
#![doc = include_str!("../../../docs/queries.md")]

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::check::{Adapter, CheckTarget, TunnelEndpoint};
pub use crate::model::Inputs;
use crate::model::Timestamp;

pub mod classify;
#[cfg(feature = "clickhouse")]
pub mod clickhouse;
mod connector;
pub mod encode;
pub mod memory;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "oracle")]
pub mod oracle;
pub mod pool;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod protect;
pub mod provision;
#[cfg(feature = "sqlserver")]
pub mod sqlserver;
pub mod statement;

pub use connector::connector;
pub use encode::{Column, Encoder, Format, RowStamp, Summary, Values};
pub use pool::{PoolKey, PoolLimits, Pools, checkout, connected};

/// A connection's target with its secrets opened, and the tunnel forwarding that reaches it
/// (kept open as long as the connection).
#[derive(Debug)]
pub struct Opened {
    /// Where and as whom to connect.
    pub target: CheckTarget,
    /// The tunnel's local end, when the database is reached through one.
    pub tunnel: Option<TunnelEndpoint>,
}

/// Opens a credential's target when a connection opens (the only time its secrets are opened).
pub type Connector =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Opened, String>> + Send>> + Send + Sync>;

/// A streamed body that ended in an error after some of it was sent: the server cuts the
/// response off (no final chunk), so no client takes it for a whole answer.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct BodyError(pub(crate) String);

/// One run, as the service hands it to a runner.
pub struct RunJob {
    /// The pool its connection comes from.
    pub pool: PoolKey,
    /// The version of the database (its `updated_at`): a pool made from another is replaced.
    pub version: Timestamp,
    /// Opens the target when a connection is made.
    pub connector: Connector,
    /// The statement (one, checked by [`statement::single`]).
    pub statement: String,
    /// A panel's inputs, bound as parameters; `None` for a console query (its text is sent as
    /// it is).
    pub inputs: Option<Inputs>,
    /// The most rows sent.
    pub max_rows: u64,
    /// The statement timeout, enforced in the database (and the credential's sessions are
    /// opened with it).
    pub timeout: Duration,
    /// A shorter timeout the caller asked for this run alone: the service ends the run at it
    /// (the sessions keep the credential's), cancelling the statement on the server.
    pub shorter: Option<Duration>,
    /// How long opening a connection may take.
    pub connect_timeout: Duration,
    /// The columns the database's data protection policies protect, when it has any (docs/data-protection.md,
    /// "Data protection"): the runner checks the statement against them before it runs.
    pub protection: Option<Arc<protect::Protection>>,
    /// The bounds of a result's bytes, and the budget all runs' large rows share.
    pub memory: Arc<memory::RunMemory>,
}

impl Debug for RunJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunJob")
            .field("pool", &self.pool)
            .field("statement_length", &self.statement.len())
            .field("max_rows", &self.max_rows)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// An input is missing, unknown, or does not convert to its parameter's type (422, keyed
    /// by `inputs.<key>` or `inputs`).
    #[error("{field}: {message}")]
    Input {
        /// `inputs` or `inputs.<key>`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The database refused or failed the statement (422 with its message).
    #[error("{0}")]
    Database(String),
    /// The database could not be reached or logged into (502).
    #[error("{0}")]
    Connect(String),
    /// The statement ran past its timeout and was ended on the server (504).
    #[error("the statement ran past its timeout of {} s and was cancelled", .0.as_secs_f64())]
    TimedOut(Duration),
    /// Every connection of the credential's pool stayed busy for the whole wait (503).
    #[error("every connection of this credential is busy; try again")]
    Busy,
    /// The client went away; the statement was cancelled on the server.
    #[error("the client went away; the statement was cancelled")]
    Cancelled,
    /// No runner for the adapter is built in (501).
    #[error("the {0} query runner is not built into this server")]
    NotBuilt(Adapter),
    /// Data protection refused the statement before it ran (422 on `query`).
    #[error("{0}")]
    Protected(protect::Refused),
    /// A value or a row of the result is over the server's bound (422 on `query` before the
    /// result started; the result's error after).
    #[error("{0}")]
    TooLarge(String),
}

impl RunError {
    /// The error with every secret's text in its message replaced by `[REDACTED]`, as
    /// check-connection answers (a database may echo what it was sent).
    pub fn scrubbed(self, secrets: &[crate::model::Secret]) -> Self {
        let scrub = |message: String| crate::check::scrub_message(&message, secrets.iter());
        match self {
            RunError::Input { field, message } => RunError::Input {
                field,
                message: scrub(message),
            },
            RunError::Database(message) => RunError::Database(scrub(message)),
            RunError::Connect(message) => RunError::Connect(scrub(message)),
            other => other,
        }
    }
}

/// A statement with a panel's inputs bound ([`RunJob::bound`]): the text sent, and each
/// parameter's input key and value, in the order of the placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundStatement {
    /// The statement with the adapter's placeholders in place of `${key}`.
    pub text: String,
    /// Each placeholder's input key and value (`None` binds NULL).
    pub params: Vec<(String, Option<String>)>,
}

impl RunJob {
    /// When the service ends the run, and the timeout it then reports: a second past the
    /// database's own timeout, or exactly at a shorter one the caller asked for (which only the
    /// service enforces).
    pub fn deadline(&self) -> (Duration, Duration) {
        match self.shorter {
            Some(shorter) if shorter < self.timeout => (shorter, shorter),
            _ => (self.timeout + Duration::from_secs(1), self.timeout),
        }
    }

    /// The timeout of this run: the shorter one asked for, else the credential's.
    pub fn run_timeout(&self) -> Duration {
        self.shorter.map_or(self.timeout, |s| s.min(self.timeout))
    }

    /// The statement as sent, with a panel's `${key}` inputs as the adapter's placeholders
    /// (`placeholder(n, key)` for the `n`th, from 0) and their values in order; a console
    /// query's text goes as it is, with none. Every runner binds its inputs through this.
    pub fn bound(
        &self,
        dialect: statement::Dialect,
        placeholder: impl FnMut(usize, &str) -> String,
    ) -> Result<BoundStatement, RunError> {
        let Some(inputs) = &self.inputs else {
            return Ok(BoundStatement {
                text: self.statement.clone(),
                params: Vec::new(),
            });
        };
        let declared: Vec<&str> = inputs.declared.iter().map(String::as_str).collect();
        let bound = statement::bind_inputs(&self.statement, dialect, &declared, placeholder)
            .map_err(|message| RunError::Input {
                field: "query".to_owned(),
                message,
            })?;
        let mut params = Vec::with_capacity(bound.keys.len());
        for key in bound.keys {
            let value = inputs.values.get(&key).ok_or_else(|| RunError::Input {
                field: format!("inputs.{key}"),
                message: "is missing".to_owned(),
            })?;
            params.push((key, value.clone()));
        }
        Ok(BoundStatement {
            text: bound.statement,
            params,
        })
    }
}

/// A run's statement raced against its client going away ([`RowSink::gone`], then
/// [`RunError::Cancelled`]) and the service's `bound` ([`RunError::TimedOut`] of `timeout`):
/// its outcome, with a database message that names the server's own statement timeout (one of
/// `server_timeout`) read as a timeout too, and every other message scrubbed of `secrets`. What
/// the runner does with its session afterwards (cancel the statement on the server, close or
/// pool the session) is its own, by driver.
pub async fn raced<W, G>(
    work: W,
    gone: &mut Pin<&mut G>,
    bound: Duration,
    timeout: Duration,
    server_timeout: &[&str],
    secrets: &[crate::model::Secret],
) -> Result<(), RunError>
where
    W: Future<Output = Result<(), RunError>>,
    G: Future<Output = ()>,
{
    let outcome = tokio::select! {
        outcome = work => outcome,
        () = gone => Err(RunError::Cancelled),
        () = tokio::time::sleep(bound) => Err(RunError::TimedOut(timeout)),
    };
    outcome.map_err(|error| match error {
        RunError::Database(message) if server_timeout.iter().any(|said| message.contains(said)) => {
            RunError::TimedOut(timeout)
        }
        other => other.scrubbed(secrets),
    })
}

/// Runs queries for one adapter.
#[async_trait]
pub trait QueryRunner: Send + Sync + Debug + 'static {
    /// Runs `job`, writing its columns (once the first rows are known to come, so that an
    /// error before them is answered with its own status) and its rows into `sink`. Returns
    /// when the statement is done, failed, or the client is gone ([`RowSink::gone`]; then it
    /// cancels the statement on the server first).
    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError>;

    /// Drops the pools of database `id` (it changed or was deleted).
    fn evict(&self, database_id: &str);

    /// The statement that lists the database's columns, one row each: schema, table, column,
    /// type, nullable (`YES`, `Y` or `1` when nullable). Run like any other statement (as the
    /// credential, read-only, under data protection) for the console's schema and an agent's
    /// `describe_tables`.
    fn catalog(&self) -> &'static str;

    /// Whether it checks a statement against the [`RunJob::protection`] it is given (docs/data-protection.md,
    /// "Data protection"); a database with policies runs nothing through a runner that does not.
    fn protects(&self) -> bool {
        false
    }
}

/// The runners compiled into a service, one per adapter at most.
#[derive(Clone, Debug, Default)]
pub struct Runners {
    by_adapter: [Option<Arc<dyn QueryRunner>>; Adapter::ALL.len()],
}

impl Runners {
    /// No runner: every run answers that its adapter's runner is not built in.
    pub fn none() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the runner of one adapter.
    pub fn with(mut self, adapter: Adapter, runner: Arc<dyn QueryRunner>) -> Self {
        self.by_adapter[adapter as usize] = Some(runner);
        self
    }

    /// The runner of one adapter.
    pub fn get(&self, adapter: Adapter) -> Option<&Arc<dyn QueryRunner>> {
        self.by_adapter[adapter as usize].as_ref()
    }

    /// Drops every runner's pools of database `id`.
    pub fn evict(&self, database_id: &str) {
        for runner in self.by_adapter.iter().flatten() {
            runner.evict(database_id);
        }
    }
}

/// A function that makes an adapter's runner when its cargo feature is compiled in (`None`
/// otherwise), so that what the features build is one list with no `cfg` inside a function.
macro_rules! runner_of {
    ($name:ident, $feature:literal, $runner:path) => {
        #[cfg(feature = $feature)]
        fn $name(limits: PoolLimits) -> Option<Arc<dyn QueryRunner>> {
            Some(Arc::new(<$runner>::new(limits)))
        }
        #[cfg(not(feature = $feature))]
        fn $name(_: PoolLimits) -> Option<Arc<dyn QueryRunner>> {
            None
        }
    };
}

runner_of!(postgres_runner, "postgres", postgres::PostgresRunner);
runner_of!(mysql_runner, "mysql", mysql::MysqlRunner);
runner_of!(
    clickhouse_runner,
    "clickhouse",
    clickhouse::ClickhouseRunner
);
runner_of!(sqlserver_runner, "sqlserver", sqlserver::SqlserverRunner);
runner_of!(oracle_runner, "oracle", oracle::OracleRunner);

/// A runner for every adapter whose cargo feature is compiled in, with these pool limits.
pub fn standard_runners(limits: PoolLimits) -> Runners {
    type Make = fn(PoolLimits) -> Option<Arc<dyn QueryRunner>>;
    let makers: [(Adapter, Make); 5] = [
        (Adapter::Postgres, postgres_runner),
        (Adapter::Mysql, mysql_runner),
        (Adapter::Clickhouse, clickhouse_runner),
        (Adapter::Sqlserver, sqlserver_runner),
        (Adapter::Oracle, oracle_runner),
    ];
    makers
        .into_iter()
        .filter_map(|(adapter, make)| make(limits).map(|runner| (adapter, runner)))
        .fold(Runners::none(), |runners, (adapter, runner)| {
            runners.with(adapter, runner)
        })
}

/// Bytes buffered before they are handed to the response body.
const FLUSH_AT: usize = 32 * 1024;

/// Chunks in flight between a run and its response body: with [`FLUSH_AT`], at most about
/// 256 KiB of a result is in memory whatever its size.
pub(crate) const CHANNEL_CHUNKS: usize = 8;

/// Where a run writes its result: encodes rows, counts them against the cap, and hands full
/// buffers to the response body (waiting while the client is slower than the database).
#[derive(Debug)]
pub struct RowSink {
    encoder: Encoder,
    chunks: mpsc::Sender<Result<Bytes, BodyError>>,
    started: Option<oneshot::Sender<Result<(), RunError>>>,
    /// Whether the columns were written.
    headed: bool,
    /// Whether the answer is a 200: a row was written (told to `started` with the first bytes
    /// handed over, so that a result that fits one chunk is answered whole).
    answered: bool,
    rows: u64,
    max_rows: u64,
    truncated: bool,
    /// The rows a write changed, when the database said.
    affected: Option<u64>,
    /// The session whose large rows this run takes ([`memory`]), and how many rows it took.
    ledger: Option<(Arc<memory::Ledger>, u64)>,
    /// The charges of rows written and not yet handed to the body: they go with the next chunk.
    charges: Vec<memory::Charge>,
    /// Where a collected run's result goes at its end ([`RowSink::collecting`]).
    collected: Option<oneshot::Sender<Collected>>,
}

/// A run's result as values, for the service's own statements (a catalog read, a role check):
/// what the JSON result holds, unencoded.
#[derive(Debug, Default)]
pub struct Collected {
    /// The columns and rows.
    pub values: encode::Values,
    /// Whether more rows existed than the cap let through.
    pub truncated: bool,
    /// Why it failed after its first rows, when it did.
    pub error: Option<String>,
}

/// The client is gone: the response body was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gone;

impl RowSink {
    /// A sink writing `format` into `chunks`, letting `max_rows` rows through, that tells
    /// `started` when its first chunk is handed over, or its result ends (or the error that
    /// came first: an error before any row, a value over the bounds in the first row, is the
    /// answer's status, not a 200 with an error; an error after a row is the result's).
    pub(crate) fn new(
        format: Format,
        chunks: mpsc::Sender<Result<Bytes, BodyError>>,
        started: oneshot::Sender<Result<(), RunError>>,
        max_rows: u64,
        limits: encode::ValueLimits,
    ) -> Self {
        Self {
            encoder: Encoder::with_limits(format, limits),
            chunks,
            started: Some(started),
            headed: false,
            answered: false,
            rows: 0,
            max_rows,
            truncated: false,
            affected: None,
            ledger: None,
            charges: Vec::new(),
            collected: None,
        }
    }

    /// A sink like [`RowSink::new`]'s that keeps the rows as values ([`Encoder::collecting`])
    /// and sends them to `collected` at the result's end; nothing goes to `chunks`, whose
    /// receiver the caller keeps while it waits (dropped, the run is cancelled as a client's).
    pub(crate) fn collecting(
        chunks: mpsc::Sender<Result<Bytes, BodyError>>,
        started: oneshot::Sender<Result<(), RunError>>,
        max_rows: u64,
        limits: encode::ValueLimits,
        collected: oneshot::Sender<Collected>,
    ) -> Self {
        let mut sink = Self::new(Format::Json, chunks, started, max_rows, limits);
        sink.encoder = Encoder::collecting(limits);
        sink.collected = Some(collected);
        sink
    }

    /// From now on, the rows this run takes are those `ledger` counts: each large row's charge
    /// on the memory of all runs goes with the chunk that holds it ([`memory`]).
    pub fn count_rows(&mut self, ledger: Arc<memory::Ledger>) {
        ledger.begin();
        self.ledger = Some((ledger, 0));
    }

    /// Stamps each row with a token from `stamp` ([`encode::RowStamp`]).
    pub(crate) fn stamp_rows(&mut self, stamp: Arc<dyn encode::RowStamp>) {
        self.encoder.stamp_rows(stamp);
    }

    /// Writes the columns: the response starts (200) with them.
    pub fn columns(&mut self, columns: &[Column]) {
        self.encoder.columns(columns);
        self.headed = true;
    }

    /// Whether the columns were written.
    pub fn is_started(&self) -> bool {
        self.headed
    }

    /// Tells whoever waits for the start that the answer is a 200 (once).
    fn signal_start(&mut self) {
        if let Some(started) = self.started.take() {
            let _ = started.send(Ok(()));
        }
    }

    /// How many more rows to read from the database: those the cap lets through, and one more
    /// to learn whether the result is truncated.
    pub fn wanted(&self) -> u64 {
        (self.max_rows - self.rows.min(self.max_rows)).saturating_add(1)
    }

    /// Starts a row: the encoder to write its cells into, or `None` when the cap is reached
    /// (the result is then truncated: stop reading).
    pub fn row(&mut self) -> Option<&mut Encoder> {
        if let Some((_, taken)) = &mut self.ledger {
            *taken += 1;
        }
        if self.rows >= self.max_rows {
            self.truncated = true;
            return None;
        }
        self.encoder.begin_row();
        Some(&mut self.encoder)
    }

    /// Ends the row begun by [`RowSink::row`]; hands the buffer over when it is full.
    /// [`RunError::TooLarge`] when a value or the row went over the [`encode::ValueLimits`]
    /// (the run ends there); [`RunError::Cancelled`] when the client is gone.
    pub async fn end_row(&mut self) -> Result<(), RunError> {
        if let Some(why) = self.encoder.oversized() {
            let why = why.to_owned();
            self.encoder.abandon_row();
            return Err(RunError::TooLarge(why));
        }
        self.encoder.end_row();
        self.rows += 1;
        if let Some((ledger, taken)) = &self.ledger {
            // This row and those before it are done with.
            ledger.taken(*taken, &mut self.charges);
        }
        self.answered = true;
        if self.encoder.buffered() >= FLUSH_AT {
            self.hand_over().await.map_err(|_| RunError::Cancelled)?;
        }
        Ok(())
    }

    /// Hands what is buffered to the response body, except a first chunk smaller than a
    /// chunk's size (32 KiB): that waits for the result's end, so that a small result is
    /// answered whole (the end is near: runners flush once their rows are read).
    /// [`Gone`] when the client is.
    pub async fn flush(&mut self) -> Result<(), Gone> {
        if self.started.is_some() && self.encoder.buffered() < FLUSH_AT {
            return if self.chunks.is_closed() {
                Err(Gone)
            } else {
                Ok(())
            };
        }
        self.hand_over().await
    }

    /// Hands what is buffered to the response body (the first chunk, then the answer's
    /// start: the body is never waited for before the response is).
    async fn hand_over(&mut self) -> Result<(), Gone> {
        if self.encoder.buffered() == 0 {
            return Ok(());
        }
        let chunk = self.take_chunk();
        let sent = self.chunks.send(Ok(chunk)).await.map_err(|_| Gone);
        self.signal_start();
        sent
    }

    /// What is buffered, as a chunk carrying its rows' memory charges.
    fn take_chunk(&mut self) -> Bytes {
        let chunk = self.encoder.take();
        if self.charges.is_empty() {
            return chunk;
        }
        // The rows' share of the memory of all runs is given back when the chunk is written.
        Bytes::from_owner(memory::Charged {
            bytes: chunk,
            _charges: std::mem::take(&mut self.charges),
        })
    }

    /// Resolves when the client is gone (the response body was dropped). Owns what it needs,
    /// so a runner can wait on it while it writes rows.
    pub fn gone(&self) -> impl Future<Output = ()> + Send + 'static {
        let chunks = self.chunks.clone();
        async move { chunks.closed().await }
    }

    /// Rows written.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether the cap cut the result.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Records the rows a write changed, as the database counted them (a statement that
    /// returned no rows): the result's summary and the run's record say it.
    pub fn set_affected(&mut self, rows: u64) {
        self.affected = Some(rows);
    }

    /// The rows a write changed, when the database said.
    pub fn affected(&self) -> Option<u64> {
        self.affected
    }

    /// Marks the result truncated (a runner that learned more rows exist another way).
    pub fn set_truncated(&mut self) {
        self.truncated = true;
    }

    /// Ends the result. Before its columns: hands `outcome`'s error to whoever waits for the
    /// start. After: writes the summary (with the error, for JSON and NDJSON) and, for a CSV
    /// that failed, cuts the body off with an error so that it can't pass for whole.
    pub(crate) async fn finish(mut self, outcome: &Result<(), RunError>, duration_ms: u64) {
        if self.started.is_some() && !self.answered {
            if let Err(error) = outcome {
                // Nothing was answered yet: the error is the answer (what was buffered goes).
                if let Some(started) = self.started.take() {
                    let _ = started.send(Err(error.clone()));
                }
                return;
            }
            if !self.headed {
                // Succeeded without columns (a runner that wrote none): an empty result.
                self.encoder.columns(&[]);
            }
        }
        let error = outcome.as_ref().err().map(ToString::to_string);
        if let Some(collected) = self.collected.take() {
            let values = self.encoder.take_values().unwrap_or_default();
            let _ = collected.send(Collected {
                values,
                truncated: self.truncated,
                error,
            });
            self.signal_start();
            return;
        }
        if self.encoder.format() == Format::Csv
            && let Some(error) = error
        {
            let _ = self.hand_over().await;
            self.signal_start();
            let _ = self.chunks.send(Err(BodyError(error))).await;
            return;
        }
        self.encoder.finish(&Summary {
            row_count: self.rows,
            truncated: self.truncated,
            duration_ms,
            error,
            affected_rows: self.affected,
        });
        // The last chunk, the body's end, then the answer's start when it was not told yet:
        // a result that fits one chunk is then answered whole, in one write.
        let last = (self.encoder.buffered() > 0).then(|| self.take_chunk());
        let Self {
            chunks, started, ..
        } = self;
        if let Some(chunk) = last {
            let _ = chunks.send(Ok(chunk)).await;
        }
        drop(chunks);
        if let Some(started) = started {
            let _ = started.send(Ok(()));
        }
    }
}
