//! PostgreSQL: [`PostgresRunner`], with tokio-postgres over the checker's session
//! ([`crate::check::postgres::connect`]: the same TLS rules and startup parameters).
//!
//! - **Timeout**: each pool's sessions start with `statement_timeout` set to the credential's
//!   timeout (after the database's own `connection_parameters`, so it wins).
//! - **Read-only**: panel pools' sessions start with `default_transaction_read_only=on`, and
//!   every run is a transaction: `BEGIN READ ONLY` for panels, `BEGIN` for console queries.
//! - **Panels take one round trip**: `BEGIN READ ONLY`, the statement's bind and execute and
//!   `ROLLBACK` go to the server back to back, and the statement is prepared once per session
//!   (kept by text). At the cap the runner stops reading, cancels the statement and closes the
//!   session.
//! - **Row cap of console queries**: the statement runs through a portal that is read `wanted`
//!   rows at a time, so a capped result stops on the server instead of being sent whole and
//!   thrown away (and a write it makes is committed whole).
//! - **Inputs**: each `${key}` is a `$n` parameter sent in text form: the server converts it to
//!   the type it inferred at prepare time, and the common types are checked first so that a
//!   value that does not convert is answered naming its input.
//! - **Session state**: a panel's transaction is rolled back (undoing any `SET`); on a protected
//!   database its session's advisory locks are released too (a prepared
//!   `pg_advisory_unlock_all()` sent behind the `ROLLBACK`; its prepared statements stay); a
//!   console query's is committed
//!   (on a protected database: read-only and rolled back), then the session is reset with
//!   `DISCARD ALL`. A session that fails
//!   either, or whose statement was cancelled, is closed instead of going back to the pool.
//! - **Cancel**: a cancel request (`pg_cancel_backend`'s protocol message) on a new connection.
//! - **Data protection**: on a database with policies, the session's role is verified to be
//!   unable to read any protected column before anything of the statement is sent
//!   (`postgres/verify.rs`); PostgreSQL's privileges refuse the rest, masked columns read
//!   through the role's masking views, and each result column's origin types them `masked`
//!   (`postgres/protect.rs`).

mod decode;
mod guard;
mod protect;
#[macro_use]
mod verify;
pub(crate) mod provision;
mod viewdef;

use std::collections::HashMap;
use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::BytesMut;
use deadpool::managed::{self, Object, RecycleError};
use futures_util::StreamExt as _;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Statement, error::SqlState};

use self::decode::{Raw, Render};
use super::encode::Column;
use super::memory::{KEEP_SESSION_UNDER, Ledger, RunMemory};
use super::pool::{PoolLimits, Pools, checkout, connected};
use super::protect::{Protection, Refused, Treatment};
use super::statement::Dialect;
use super::{Connector, QueryRunner, RowSink, RunError, RunJob, raced};
use crate::check::{TunnelEndpoint, error_chain};

/// What follows a protected panel's `ROLLBACK` in the same write: the release of any
/// session-level advisory lock its statement took (`LISTEN` and temporary state end with the
/// rollback), prepared once per session. An unprotected panel ends with its rollback alone
/// (the unlock costs a tenth of a one-row panel's rate; its locks are its credential's
/// business).
const UNLOCK: &str = "SELECT pg_advisory_unlock_all()";

/// How many rows one portal read asks for at most.
const BATCH: u64 = 100_000;

/// Runs PostgreSQL queries.
#[derive(Debug)]
pub struct PostgresRunner {
    pools: Pools<Manager>,
}

impl PostgresRunner {
    /// A runner whose pools hold at most `limits.size` sessions each.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            pools: Pools::new(limits),
        }
    }
}

/// A pooled session.
pub struct Session {
    client: Client,
    /// Where a cancel request goes.
    canceller: guard::Canceller,
    /// The session's large rows between its driver and its run ([`crate::run::memory`]).
    ledger: Arc<Ledger>,
    _tunnel: Option<TunnelEndpoint>,
    /// Prepared statements by text: a panel that runs again skips its prepare.
    statements: HashMap<String, Statement>,
    /// What the database's messages are scrubbed of.
    secrets: Vec<crate::model::Secret>,
    /// What a protected run verified of this session's role ([`verify::ensure`]).
    verified: Option<verify::Verified>,
    /// What data protection does to each column of a kept statement, by text, under
    /// `verified` (forgotten with it: a catalog that changed is read again).
    treatments: HashMap<String, Arc<[Treatment]>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

/// Statements a session keeps prepared at most (then it forgets them all and starts again).
const STATEMENTS_KEPT: usize = 64;

impl Session {
    async fn prepare(&mut self, text: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(text) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(text).await?;
        if self.statements.len() >= STATEMENTS_KEPT {
            self.statements.clear();
            self.treatments.clear();
        }
        self.statements.insert(text.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// Opens a credential's sessions.
pub struct Manager {
    connector: Connector,
    timeout: Duration,
    connect_timeout: Duration,
    memory: Arc<RunMemory>,
    read_only: bool,
    /// Whether the sessions serve runs under data protection: their `search_path` starts with
    /// the role's masking schemas.
    protected: bool,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager").finish_non_exhaustive()
    }
}

impl managed::Manager for Manager {
    type Type = Session;
    type Error = RunError;

    async fn create(&self) -> Result<Session, RunError> {
        let opened = (self.connector)().await.map_err(RunError::Connect)?;
        let mut target = opened.target;
        target
            .connection_parameters
            .push(crate::model::ConnectionParameter {
                name: "statement_timeout".to_owned(),
                value: self.timeout.as_millis().to_string(),
            });
        if self.read_only {
            target
                .connection_parameters
                .push(crate::model::ConnectionParameter {
                    name: "default_transaction_read_only".to_owned(),
                    value: "on".to_owned(),
                });
        }
        if self.protected {
            protected_search_path(&mut target);
        }
        let connect = guard::connect(&target, Arc::clone(&self.memory));
        let (client, canceller, ledger) =
            connected(connect, self.connect_timeout, target.secrets()).await?;
        Ok(Session {
            client,
            canceller,
            ledger,
            _tunnel: opened.tunnel,
            statements: HashMap::new(),
            secrets: target.secrets().cloned().collect(),
            verified: None,
            treatments: HashMap::new(),
        })
    }

    async fn recycle(
        &self,
        session: &mut Session,
        _: &managed::Metrics,
    ) -> managed::RecycleResult<RunError> {
        if session.client.is_closed() {
            Err(RecycleError::message("the session is closed"))
        } else {
            Ok(())
        }
    }
}

/// The statement that lists the database's columns (the schema of the console's editor and
/// of an agent's `describe_tables`): schema, table, column, type, nullable.
const CATALOG: &str = "SELECT table_schema, table_name, column_name, data_type, is_nullable \
     FROM information_schema.columns \
     WHERE table_schema NOT IN ('pg_catalog', 'information_schema') \
     ORDER BY table_schema, table_name, ordinal_position";

#[async_trait]
impl QueryRunner for PostgresRunner {
    fn catalog(&self) -> &'static str {
        CATALOG
    }

    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        let read_only = job.pool.read_only;
        let pool = self.pools.get(&job.pool, job.version, || Manager {
            connector: job.connector.clone(),
            timeout: job.timeout,
            connect_timeout: job.connect_timeout,
            memory: Arc::clone(&job.memory),
            read_only,
            protected: job.pool.protected,
        });
        let gone = sink.gone();
        tokio::pin!(gone);
        let mut session = checkout(&pool, &mut gone).await?;
        let bound = job.bound(Dialect::Postgres, |n, _| format!("${}", n + 1))?;
        // The service's own bound, past the database's: a server that ignores its timeout (or
        // never answers) still ends the run.
        let (limit, reported) = job.deadline();
        let secrets = session.secrets.clone();
        let mut truncated = false;
        let work = async {
            let run = Run {
                text: &bound.text,
                params: &bound.params,
                protection: job.protection.as_deref(),
            };
            if read_only {
                execute_panel(&mut session, run, sink, &mut truncated).await
            } else {
                execute(&mut session, run, sink).await
            }
        };
        let outcome = raced(
            work,
            &mut gone,
            limit,
            reported,
            &["statement timeout"],
            &secrets,
        )
        .await;
        session.ledger.end();
        // A message over the bounds stopped the session under the driver: the run's answer is
        // why, not the broken connection.
        let outcome = match (outcome, session.ledger.tripped()) {
            (Err(_), Some(why)) => Err(RunError::TooLarge(why)),
            (outcome, _) => outcome,
        };
        // A session whose driver grew its read buffer for a large message would keep it as
        // long as it is pooled: it is closed instead.
        let grown = session.ledger.largest() >= KEEP_SESSION_UNDER;
        match &outcome {
            Ok(()) if grown && !truncated => drop(Object::take(session)),
            Ok(()) if !read_only => {
                // DISCARD ALL also deallocates the session's prepared statements.
                session.statements.clear();
                session.treatments.clear();
                if session.client.batch_execute("DISCARD ALL").await.is_err() {
                    drop(Object::take(session));
                }
            }
            Ok(()) if !truncated => {}
            Ok(()) | Err(RunError::Cancelled | RunError::TimedOut(_)) => {
                let canceller = session.canceller.clone();
                // The session is closed, not pooled: it may still be busy with the statement.
                drop(Object::take(session));
                let _ = tokio::time::timeout(Duration::from_secs(1), canceller.cancel()).await;
            }
            Err(_) => {
                // A failed transaction was rolled back when it was dropped; a session in any
                // doubt is closed rather than handed to the next run.
                drop(Object::take(session));
            }
        }
        outcome
    }

    fn protects(&self) -> bool {
        true
    }

    fn evict(&self, database_id: &str) {
        self.pools.evict_database(database_id);
    }
}

/// Sets a protected session's `search_path` at its start (so that a session reset restores it):
/// each schema of the credential's own `search_path` parameter (`public` without one), each
/// preceded by the role's masking schema for it, so that `users` names the masking view of
/// `users` where there is one. `"$user"` is left out: the role owns no schema.
pub(crate) fn protected_search_path(target: &mut crate::check::CheckTarget) {
    let own = target
        .connection_parameters
        .iter()
        .rev()
        .find(|p| p.name.eq_ignore_ascii_case("search_path"))
        .map_or_else(|| "public".to_owned(), |p| p.value.clone());
    let mut path = Vec::new();
    for schema in own.split(',') {
        let schema = schema.trim();
        let schema = match schema.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => schema.to_lowercase(),
        };
        if schema.is_empty() || schema == "$user" {
            continue;
        }
        path.push(verify::quote(&verify::mask_schema(
            &target.username,
            &schema,
        )));
        path.push(verify::quote(&schema));
    }
    target
        .connection_parameters
        .retain(|p| !p.name.eq_ignore_ascii_case("search_path"));
    target
        .connection_parameters
        .push(crate::model::ConnectionParameter {
            name: "search_path".to_owned(),
            value: path.join(", "),
        });
}

/// A data exception (SQLSTATE class 22) at bind names the input whose value it quotes: the
/// value did not convert to its parameter's type. Anything else: [`database_error`].
fn input_error(
    error: &tokio_postgres::Error,
    params: &[(String, Option<String>)],
    protection: Option<&Protection>,
) -> RunError {
    if let Some(db) = error.as_db_error()
        && db.code().code().starts_with("22")
        && let Some((key, _)) = params.iter().find(|(_, value)| {
            value
                .as_ref()
                .is_some_and(|value| db.message().contains(&format!("\"{value}\"")))
        })
    {
        return RunError::Input {
            field: format!("inputs.{key}"),
            message: format!("does not convert: {}", db.message()),
        };
    }
    refused_by_privileges(error, protection)
}

/// On a database with data protection, PostgreSQL's refusal to read a column (SQLSTATE 42501)
/// is the protection at work: answered as a refusal naming the policies, never a silent
/// omission. Anything else: [`database_error`].
fn refused_by_privileges(
    error: &tokio_postgres::Error,
    protection: Option<&Protection>,
) -> RunError {
    match (error.as_db_error(), protection) {
        (Some(db), Some(protection)) if db.code() == &SqlState::INSUFFICIENT_PRIVILEGE => {
            RunError::Protected(Refused::undecided(
                protection,
                format!(
                    "PostgreSQL refused it ({}): queries on this database run as a role that \
                     can't read what its policies protect. Select the columns you may read; a \
                     masked column reads as the mask through its table's name, which the search \
                     path resolves to the masking view",
                    db.message()
                ),
            ))
        }
        (Some(db), Some(protection)) if db.code() == &SqlState::UNDEFINED_COLUMN => {
            // `column "ssn" does not exist`, `column p.ssn does not exist`: a hidden column is
            // not in its masking view.
            let named = db
                .message()
                .strip_prefix("column ")
                .and_then(|rest| rest.split_whitespace().next())
                .map(|name| name.rsplit('.').next().unwrap_or(name).trim_matches('"'));
            let hidden = named.and_then(|name| {
                protection.columns.iter().find(|c| {
                    c.action == crate::model::ColumnAction::Hide
                        && c.column.eq_ignore_ascii_case(name)
                })
            });
            match hidden {
                Some(column) => RunError::Protected(Refused::of(
                    column,
                    format!(
                        "the column is hidden from this database's queries (PostgreSQL: {})",
                        db.message()
                    ),
                )),
                None => database_error(error),
            }
        }
        _ => database_error(error),
    }
}

fn database_error(error: &tokio_postgres::Error) -> RunError {
    if let Some(db) = error.as_db_error() {
        let mut message = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            message.push_str(" (");
            message.push_str(detail);
            message.push(')');
        }
        // Where in the statement, as PostgreSQL counts (characters, from 1): the console marks
        // it in the editor.
        if let Some(tokio_postgres::error::ErrorPosition::Original(at)) = db.position() {
            message.push_str(&format!(" (at character {at})"));
        }
        if db.code() == &SqlState::QUERY_CANCELED && db.message().contains("statement timeout") {
            message = "statement timeout".to_owned();
        }
        return RunError::Database(message);
    }
    if error.is_closed() || error.source().is_some_and(|s| s.is::<std::io::Error>()) {
        return RunError::Connect(error_chain(error));
    }
    RunError::Database(error_chain(error))
}

/// The typed parameters of `params` for `statement`, checked where the type is common.
fn parameters<'a>(
    statement: &Statement,
    params: &'a [(String, Option<String>)],
) -> Result<Vec<TextParam<'a>>, RunError> {
    let mut typed = Vec::with_capacity(params.len());
    for ((key, value), ty) in params.iter().zip(statement.params()) {
        if let Some(value) = value {
            check_input(key, value, ty)?;
        }
        typed.push(TextParam(value.as_deref()));
    }
    Ok(typed)
}

/// The columns of `statement` and how each is written, with the data protection `treatments`
/// of its columns when the database has policies.
fn described(
    statement: &Statement,
    treatments: Option<&[Treatment]>,
) -> (Vec<Column>, Vec<Render>) {
    let treatment = |i: usize| {
        treatments
            .and_then(|t| t.get(i).copied())
            .unwrap_or(Treatment::Show)
    };
    let renders: Vec<Render> = statement
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| match treatment(i) {
            Treatment::Show => Render::of(c.type_()),
            Treatment::Hide => Render::Hidden,
            Treatment::Mask => Render::Masked,
            Treatment::Masked => Render::MaskedText,
        })
        .collect();
    let columns = statement
        .columns()
        .iter()
        .zip(&renders)
        .filter(|(_, render)| **render != Render::Hidden)
        .map(|(c, render)| Column {
            name: c.name().to_owned(),
            type_name: if matches!(render, Render::Masked | Render::MaskedText) {
                crate::run::protect::MASKED_TYPE.to_owned()
            } else {
                c.type_().name().to_owned()
            },
            base64: matches!(render, Render::Bytes),
        })
        .collect();
    (columns, renders)
}

/// Writes one row; `false` when the cap is reached (the row is not written).
async fn write_row(
    row: &tokio_postgres::Row,
    columns: &[Column],
    renders: &[Render],
    sink: &mut RowSink,
) -> Result<bool, RunError> {
    if !sink.is_started() {
        sink.columns(columns);
    }
    let Some(encoder) = sink.row() else {
        return Ok(false);
    };
    for (i, render) in renders.iter().enumerate() {
        if *render == Render::Hidden {
            continue;
        }
        let Raw(raw) = row
            .try_get::<_, Raw<'_>>(i)
            .map_err(|e| database_error(&e))?;
        match raw {
            None => encoder.null(),
            Some(raw) => render.write(encoder, raw),
        }
    }
    sink.end_row().await?;
    Ok(true)
}

/// A panel: one round trip. `BEGIN READ ONLY`, the statement's bind and execute, and
/// `ROLLBACK` are sent back to back (the server runs them in order: the rollback undoes any
/// `SET` of the statement once its rows are sent); the rows are read as they come. At the cap
/// the run stops reading and sets `truncated` (the caller cancels the statement and closes the
/// session). On a protected database whose role this session already verified, the check that
/// nothing changed since goes in the same transaction, ahead of the statement
/// ([`verify::kept`]): when it fails, nothing of the statement ran, and the run verifies the
/// role again (its own round trips) and starts over.
async fn execute_panel(
    session: &mut Session,
    run: Run<'_>,
    sink: &mut RowSink,
    truncated: &mut bool,
) -> Result<(), RunError> {
    let check = match run.protection {
        // Only a statement this session prepared and described under its verification: its
        // parse, too, waits for a role verified.
        Some(protection)
            if session.treatments.contains_key(run.text)
                && session.statements.contains_key(run.text) =>
        {
            verify::kept(session, protection).await?
        }
        _ => None,
    };
    let Prepared {
        statement,
        params,
        columns,
        renders,
    } = prepare(session, run, check.is_none()).await?;
    // On a protected database, prepared once per session: its execute follows the ROLLBACK,
    // nothing parsed per run.
    let unlock = match run.protection {
        Some(_) => Some(
            session
                .prepare(UNLOCK)
                .await
                .map_err(|e| database_error(&e))?,
        ),
        None => None,
    };
    // From here on, the session's rows are the statement's.
    sink.count_rows(Arc::clone(&session.ledger));
    let client = &session.client;
    let begin = client.batch_execute("BEGIN READ ONLY");
    let checked = async {
        match &check {
            Some((unchanged, [snapshot, fingerprint])) => {
                Some(client.query_one(unchanged, &[snapshot, fingerprint]).await)
            }
            None => None,
        }
    };
    let query = client.query_raw(&statement, params.iter().map(|p| p as &(dyn ToSql + Sync)));
    // The whole transaction goes in one write: the ROLLBACK is sent (polled once) behind the
    // statement, and answered after its last row (PostgreSQL answers in order). Waiting for
    // it here would wait for rows no one reads yet.
    // Session-level advisory locks outlive the transaction: on a protected database released
    // right after it (a function, a view or a policy may take one whatever the statement's
    // text), so that a pooled session holds none (its prepared statements stay).
    let ended = async move {
        let rollback = client.batch_execute("ROLLBACK");
        match &unlock {
            Some(unlock) => futures_util::future::try_join(rollback, client.execute(unlock, &[]))
                .await
                .map(|_| ()),
            None => rollback.await,
        }
    };
    let mut rollback = Box::pin(futures_util::future::maybe_done(ended));
    let send_rollback = std::future::poll_fn(|cx| {
        let _ = rollback.as_mut().poll(cx);
        std::task::Poll::Ready(())
    });
    let (begun, checked, rows, ()) = tokio::join!(begin, checked, query, send_rollback);
    let rollback = async move {
        rollback.as_mut().await;
        rollback.as_mut().take_output().unwrap_or_else(|| Ok(()))
    };
    begun.map_err(|e| refused_by_privileges(&e, run.protection))?;
    let verdict = checked.map(|checked| verify::verdict(checked.as_ref()));
    if let Some(again @ (verify::Verdict::Changed | verify::Verdict::Moved)) = &verdict {
        // Nothing of the statement ran (its transaction failed first). Changed: the session
        // verifies its role again, or is refused, before the statement is sent again. Moved:
        // it runs again behind the fingerprint's check.
        drop(rows);
        rollback
            .await
            .map_err(|e| refused_by_privileges(&e, run.protection))?;
        match again {
            verify::Verdict::Changed => verify::forget(session),
            _ => verify::moved(session),
        }
        return Box::pin(execute_panel(session, run, sink, truncated)).await;
    }
    let snapshot = match verdict {
        Some(verify::Verdict::Unchanged(snapshot)) => Some(snapshot),
        Some(verify::Verdict::Failed(error)) => return Err(error),
        _ => None,
    };
    let read = async {
        let rows = rows.map_err(|e| input_error(&e, run.params, run.protection))?;
        tokio::pin!(rows);
        while let Some(row) = rows.next().await {
            let row = row.map_err(|e| refused_by_privileges(&e, run.protection))?;
            if !write_row(&row, &columns, &renders, sink).await? {
                *truncated = true;
                return Ok(());
            }
        }
        if !sink.is_started() {
            sink.columns(&columns);
        }
        sink.flush().await.map_err(|_| RunError::Cancelled)?;
        rollback
            .await
            .map_err(|e| refused_by_privileges(&e, run.protection))
    };
    let outcome = read.await;
    if let Some(snapshot) = snapshot {
        verify::seen(session, snapshot);
    }
    outcome
}

/// A console query: in a transaction, through a portal read `wanted` rows at a time (a capped
/// result stops on the server), committed at the end.
async fn execute(session: &mut Session, run: Run<'_>, sink: &mut RowSink) -> Result<(), RunError> {
    let Prepared {
        statement,
        params,
        columns,
        renders,
    } = prepare(session, run, true).await?;
    // From here on, the session's rows are the statement's.
    sink.count_rows(Arc::clone(&session.ledger));
    // On a protected database the run is read-only and rolled back: functions a read-only
    // transaction still allows (`lo_from_bytea`, `pg_notify`) leave nothing behind.
    let transaction = session
        .client
        .build_transaction()
        .read_only(run.protection.is_some())
        .start()
        .await
        .map_err(|e| refused_by_privileges(&e, run.protection))?;
    let portal = transaction
        .bind_raw(&statement, params.iter().map(|p| p as &(dyn ToSql + Sync)))
        .await
        .map_err(|e| refused_by_privileges(&e, run.protection))?;
    let mut done = false;
    while !done {
        let wanted = sink.wanted().min(BATCH);
        let rows = transaction
            .query_portal_raw(&portal, i32::try_from(wanted).unwrap_or(i32::MAX))
            .await
            .map_err(|e| refused_by_privileges(&e, run.protection))?;
        tokio::pin!(rows);
        let mut read = 0u64;
        while let Some(row) = rows.next().await {
            let row = row.map_err(|e| refused_by_privileges(&e, run.protection))?;
            read += 1;
            if !write_row(&row, &columns, &renders, sink).await? {
                done = true;
                break;
            }
        }
        if read < wanted {
            done = true;
            // A write that returned no rows says how many it changed (its command tag).
            if columns.is_empty()
                && let Some(affected) = rows.rows_affected()
            {
                sink.set_affected(affected);
            }
        }
    }
    if !sink.is_started() {
        sink.columns(&columns);
    }
    sink.flush().await.map_err(|_| RunError::Cancelled)?;
    drop(portal);
    let end = if run.protection.is_some() {
        transaction.rollback().await
    } else {
        transaction.commit().await
    };
    end.map_err(|e| refused_by_privileges(&e, run.protection))
}

/// A run ready to send: its prepared statement, its parameters, and its columns as they are
/// written (hidden or masked where data protection says so).
struct Prepared<'a> {
    statement: Statement,
    params: Vec<TextParam<'a>>,
    columns: Vec<Column>,
    renders: Vec<Render>,
}

/// Prepares `run` (kept per session), checks its inputs, and, on a database with data
/// protection, checks it before it runs (`verify`: its role is verified first; otherwise the
/// caller checks, in the run's own transaction, that the session's verification still holds).
async fn prepare<'a>(
    session: &mut Session,
    run: Run<'a>,
    verify: bool,
) -> Result<Prepared<'a>, RunError> {
    // On a protected database, nothing of the statement reaches the server before its role is
    // verified, not even its parse.
    let kept = match run.protection {
        Some(protection) if verify => Some(verify::ensure(session, protection).await?),
        _ => None,
    };
    // A refusal names the columns protected as the catalog has them (a generated column
    // computed from a protected one is hidden as its source).
    let named = kept.as_ref().map(|kept| &kept.effective).or(run.protection);
    let statement = session
        .prepare(run.text)
        .await
        .map_err(|e| refused_by_privileges(&e, named))?;
    let params = parameters(&statement, run.params)?;
    let treatments = match run.protection {
        Some(_) => match (session.treatments.get(run.text), &kept) {
            (Some(treatments), _) => Some(Arc::clone(treatments)),
            (None, Some(kept)) => {
                let treatments: Arc<[Treatment]> =
                    protect::treatments(session, &statement, kept).await?.into();
                session
                    .treatments
                    .insert(run.text.to_owned(), Arc::clone(&treatments));
                Some(treatments)
            }
            (None, None) => {
                return Err(RunError::Database(
                    "a protected statement's columns were not kept".to_owned(),
                ));
            }
        },
        None => None,
    };
    let (columns, renders) = described(&statement, treatments.as_deref());
    Ok(Prepared {
        statement,
        params,
        columns,
        renders,
    })
}

/// What one run sends: its statement, its inputs, and the protection it is checked against.
#[derive(Clone, Copy)]
struct Run<'a> {
    text: &'a str,
    /// Each parameter's input key and value ([`super::BoundStatement`]).
    params: &'a [(String, Option<String>)],
    protection: Option<&'a Protection>,
}

/// An input sent in text form: the server converts it to the parameter's type (`None`: NULL).
#[derive(Debug)]
struct TextParam<'a>(Option<&'a str>);

impl ToSql for TextParam<'_> {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Some(value) => {
                out.extend_from_slice(value.as_bytes());
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> tokio_postgres::types::Format {
        tokio_postgres::types::Format::Text
    }

    to_sql_checked!();
}

/// Checks the inputs of the common types before the server does, so that the answer names the
/// input (the server's message does not).
fn check_input(key: &str, value: &str, ty: &Type) -> Result<(), RunError> {
    // PostgreSQL's text can't hold a NUL byte: its own error would not name the input.
    if value.contains('\0') {
        return Err(RunError::Input {
            field: format!("inputs.{key}"),
            message: "contains a NUL character, which PostgreSQL can't store in a value".to_owned(),
        });
    }
    let trimmed = value.trim();
    let ok = match *ty {
        Type::INT2 => trimmed.parse::<i16>().is_ok(),
        Type::INT4 => trimmed.parse::<i32>().is_ok(),
        Type::INT8 => trimmed.parse::<i64>().is_ok(),
        Type::FLOAT4 | Type::FLOAT8 => trimmed.parse::<f64>().is_ok(),
        Type::NUMERIC => {
            trimmed.parse::<f64>().is_ok()
                && trimmed
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        }
        Type::BOOL => matches!(
            trimmed.to_ascii_lowercase().as_str(),
            "true" | "false" | "t" | "f" | "yes" | "no" | "on" | "off" | "1" | "0"
        ),
        Type::UUID => {
            trimmed.len() >= 32 && trimmed.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(RunError::Input {
            field: format!("inputs.{key}"),
            message: format!("is not a valid {}", ty.name()),
        })
    }
}
