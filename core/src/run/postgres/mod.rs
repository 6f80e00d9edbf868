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
//! - **Session state**: a panel's transaction is rolled back (undoing any `SET`); a console
//!   query's is committed, then the session is reset with `DISCARD ALL`. A session that fails
//!   either, or whose statement was cancelled, is closed instead of going back to the pool.
//! - **Cancel**: a cancel request (`pg_cancel_backend`'s protocol message) on a new connection.
//! - **Data protection**: on a database with policies, the statement's plan and result columns
//!   are checked before it runs (`postgres/protect.rs`, with [`crate::run::protect::plan`]),
//!   and protected columns are hidden or masked as they are written.

mod protect;

use std::collections::HashMap;
use std::error::Error as _;
use std::time::Duration;

use async_trait::async_trait;
use bytes::BytesMut;
use deadpool::managed::{self, Object, RecycleError};
use futures_util::StreamExt as _;
use tokio_postgres::types::{FromSql, IsNull, Kind, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Statement, error::SqlState};

use super::encode::{Column, Encoder};
use super::pool::{PoolLimits, Pools, checkout, connected};
use super::protect::{Protection, Treatment};
use super::statement::{Dialect, bind_inputs};
use super::{Connector, Inputs, QueryRunner, RowSink, RunError, RunJob};
use crate::check::{TunnelEndpoint, error_chain};

/// How many rows one portal read asks for at most.
const BATCH: u64 = 10_000;

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
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    _tunnel: Option<TunnelEndpoint>,
    /// Prepared statements by text: a panel that runs again skips its prepare.
    statements: HashMap<String, Statement>,
    /// What the database's messages are scrubbed of.
    secrets: Vec<crate::model::Secret>,
}

/// Statements a session keeps prepared at most (then it forgets them all and starts again).
const STATEMENTS_KEPT: usize = 64;

impl Session {
    async fn prepare(&mut self, text: &str) -> Result<Statement, RunError> {
        if let Some(statement) = self.statements.get(text) {
            return Ok(statement.clone());
        }
        let statement = self
            .client
            .prepare(text)
            .await
            .map_err(|e| database_error(&e))?;
        if self.statements.len() >= STATEMENTS_KEPT {
            self.statements.clear();
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
    read_only: bool,
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
        let connect = crate::check::postgres::connect_with_tls(&target);
        let (client, tls) = connected(connect, self.connect_timeout, target.secrets()).await?;
        Ok(Session {
            client,
            tls,
            _tunnel: opened.tunnel,
            statements: HashMap::new(),
            secrets: target.secrets().cloned().collect(),
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

#[async_trait]
impl QueryRunner for PostgresRunner {
    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        let read_only = job.pool.read_only;
        let pool = self.pools.get(&job.pool, job.version, || Manager {
            connector: job.connector.clone(),
            timeout: job.timeout,
            connect_timeout: job.connect_timeout,
            read_only,
        });
        let gone = sink.gone();
        tokio::pin!(gone);
        let mut session = checkout(&pool, &mut gone).await?;
        let (statement, keys) = match &job.inputs {
            Some(inputs) => {
                let declared: Vec<&str> = inputs.declared.iter().map(String::as_str).collect();
                let bound = bind_inputs(&job.statement, Dialect::Postgres, &declared, |n, _| {
                    format!("${}", n + 1)
                })
                .map_err(|message| RunError::Input {
                    field: "query".to_owned(),
                    message,
                })?;
                (bound.statement, bound.keys)
            }
            None => (job.statement.clone(), Vec::new()),
        };
        // The service's own bound, past the database's: a server that ignores its timeout (or
        // never answers) still ends the run.
        let bound = job.timeout + Duration::from_secs(1);
        let mut truncated = false;
        let work = async {
            let run = Run {
                text: &statement,
                keys: &keys,
                inputs: job.inputs.as_ref(),
                protection: job.protection.as_deref(),
            };
            if read_only {
                execute_panel(&mut session, run, sink, &mut truncated).await
            } else {
                execute(&mut session, run, sink).await
            }
        };
        let outcome = tokio::select! {
            outcome = work => outcome,
            () = &mut gone => Err(RunError::Cancelled),
            () = tokio::time::sleep(bound) => Err(RunError::TimedOut(job.timeout)),
        };
        let secrets = session.secrets.clone();
        let outcome = outcome.map_err(|error| match error {
            RunError::Database(message) if message.contains("statement timeout") => {
                RunError::TimedOut(job.timeout)
            }
            other => other.scrubbed(&secrets),
        });
        match &outcome {
            Ok(()) if !read_only => {
                // DISCARD ALL also deallocates the session's prepared statements.
                session.statements.clear();
                if session.client.batch_execute("DISCARD ALL").await.is_err() {
                    drop(Object::take(session));
                }
            }
            Ok(()) if !truncated => {}
            Ok(()) | Err(RunError::Cancelled | RunError::TimedOut(_)) => {
                let token = session.client.cancel_token();
                let tls = session.tls.clone();
                // The session is closed, not pooled: it may still be busy with the statement.
                drop(Object::take(session));
                let _ = tokio::time::timeout(Duration::from_secs(1), token.cancel_query(tls)).await;
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

/// A data exception (SQLSTATE class 22) at bind names the input whose value it quotes: the
/// value did not convert to its parameter's type. Anything else: [`database_error`].
fn input_error(
    error: &tokio_postgres::Error,
    keys: &[String],
    inputs: Option<&Inputs>,
) -> RunError {
    if let (Some(db), Some(inputs)) = (error.as_db_error(), inputs)
        && db.code().code().starts_with("22")
        && let Some(key) = keys.iter().find(|key| {
            inputs
                .values
                .get(*key)
                .is_some_and(|value| db.message().contains(&format!("\"{value}\"")))
        })
    {
        return RunError::Input {
            field: format!("inputs.{key}"),
            message: format!("does not convert: {}", db.message()),
        };
    }
    database_error(error)
}

fn database_error(error: &tokio_postgres::Error) -> RunError {
    if let Some(db) = error.as_db_error() {
        let mut message = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            message.push_str(" (");
            message.push_str(detail);
            message.push(')');
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

/// The typed parameters of `keys` for `statement`, checked where the type is common.
fn parameters<'a>(
    statement: &Statement,
    keys: &[String],
    inputs: Option<&'a Inputs>,
) -> Result<Vec<TextParam<'a>>, RunError> {
    let mut params = Vec::with_capacity(keys.len());
    for (key, ty) in keys.iter().zip(statement.params()) {
        let value = inputs
            .and_then(|inputs| inputs.values.get(key))
            .ok_or_else(|| RunError::Input {
                field: format!("inputs.{key}"),
                message: "is missing".to_owned(),
            })?;
        check_input(key, value, ty)?;
        params.push(TextParam(value.as_str()));
    }
    Ok(params)
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
        })
        .collect();
    let columns = statement
        .columns()
        .iter()
        .zip(&renders)
        .filter(|(_, render)| **render != Render::Hidden)
        .map(|(c, render)| Column {
            name: c.name().to_owned(),
            type_name: if *render == Render::Masked {
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
    sink.end_row().await.map_err(|_| RunError::Cancelled)?;
    Ok(true)
}

/// A panel: one round trip. `BEGIN READ ONLY`, the statement's bind and execute, and
/// `ROLLBACK` are sent back to back (the server runs them in order: the rollback undoes any
/// `SET` of the statement once its rows are sent); the rows are read as they come. At the cap
/// the run stops reading and sets `truncated` (the caller cancels the statement and closes the
/// session).
async fn execute_panel(
    session: &mut Session,
    run: Run<'_>,
    sink: &mut RowSink,
    truncated: &mut bool,
) -> Result<(), RunError> {
    let Prepared {
        statement,
        params,
        columns,
        renders,
    } = prepare(session, run).await?;
    let client = &session.client;
    let begin = client.batch_execute("BEGIN READ ONLY");
    let query = client.query_raw(&statement, params.iter().map(|p| p as &(dyn ToSql + Sync)));
    let (begun, rows) = tokio::join!(begin, query);
    // Sent now, answered after the statement's last row.
    let mut rollback = Box::pin(client.batch_execute("ROLLBACK"));
    tokio::select! {
        biased;
        _ = &mut rollback => {}
        () = std::future::ready(()) => {}
    }
    begun.map_err(|e| database_error(&e))?;
    let rows = rows.map_err(|e| input_error(&e, run.keys, run.inputs))?;
    tokio::pin!(rows);
    while let Some(row) = rows.next().await {
        let row = row.map_err(|e| database_error(&e))?;
        if !write_row(&row, &columns, &renders, sink).await? {
            *truncated = true;
            return Ok(());
        }
    }
    if !sink.is_started() {
        sink.columns(&columns);
    }
    sink.flush().await.map_err(|_| RunError::Cancelled)?;
    rollback.await.map_err(|e| database_error(&e))
}

/// A console query: in a transaction, through a portal read `wanted` rows at a time (a capped
/// result stops on the server), committed at the end.
async fn execute(session: &mut Session, run: Run<'_>, sink: &mut RowSink) -> Result<(), RunError> {
    let Prepared {
        statement,
        params,
        columns,
        renders,
    } = prepare(session, run).await?;
    let transaction = session
        .client
        .transaction()
        .await
        .map_err(|e| database_error(&e))?;
    let portal = transaction
        .bind_raw(&statement, params.iter().map(|p| p as &(dyn ToSql + Sync)))
        .await
        .map_err(|e| database_error(&e))?;
    let mut done = false;
    while !done {
        let wanted = sink.wanted().min(BATCH);
        let rows = transaction
            .query_portal_raw(&portal, i32::try_from(wanted).unwrap_or(i32::MAX))
            .await
            .map_err(|e| database_error(&e))?;
        tokio::pin!(rows);
        let mut read = 0u64;
        while let Some(row) = rows.next().await {
            let row = row.map_err(|e| database_error(&e))?;
            read += 1;
            if !write_row(&row, &columns, &renders, sink).await? {
                done = true;
                break;
            }
        }
        if read < wanted {
            done = true;
        }
    }
    if !sink.is_started() {
        sink.columns(&columns);
    }
    sink.flush().await.map_err(|_| RunError::Cancelled)?;
    drop(portal);
    transaction.commit().await.map_err(|e| database_error(&e))
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
/// protection, checks it before it runs.
async fn prepare<'a>(session: &mut Session, run: Run<'a>) -> Result<Prepared<'a>, RunError> {
    let statement = session.prepare(run.text).await?;
    let params = parameters(&statement, run.keys, run.inputs)?;
    let treatments = match run.protection {
        Some(protection) => {
            Some(protect::treatments(session, run.text, &statement, &params, protection).await?)
        }
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
    keys: &'a [String],
    inputs: Option<&'a Inputs>,
    protection: Option<&'a Protection>,
}

/// An input sent in text form: the server converts it to the parameter's type.
#[derive(Debug)]
struct TextParam<'a>(&'a str);

impl ToSql for TextParam<'_> {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
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

/// A value's bytes as the server sent them (binary format), whatever its type.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// How a column's values are written, chosen once per column.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Render {
    Bool,
    Int2,
    Int4,
    Int8,
    Oid,
    Float4,
    Float8,
    Numeric,
    Text,
    Json,
    Jsonb,
    Uuid,
    Date,
    Time,
    Timestamp,
    Timestamptz,
    Interval,
    /// An array of elements written this way: a JSON array (its JSON text in CSV).
    Array(Box<Render>),
    /// Bytes, and every type without a text form here: base64.
    Bytes,
    /// A protected column left out of the result.
    Hidden,
    /// A protected column whose values are masked.
    Masked,
}

impl Render {
    fn of(ty: &Type) -> Self {
        match *ty {
            Type::BOOL => Render::Bool,
            Type::INT2 => Render::Int2,
            Type::INT4 => Render::Int4,
            Type::INT8 => Render::Int8,
            Type::OID => Render::Oid,
            Type::FLOAT4 => Render::Float4,
            Type::FLOAT8 => Render::Float8,
            Type::NUMERIC => Render::Numeric,
            Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::UNKNOWN
            | Type::XML
            | Type::CHAR => Render::Text,
            Type::JSON => Render::Json,
            Type::JSONB => Render::Jsonb,
            Type::UUID => Render::Uuid,
            Type::DATE => Render::Date,
            Type::TIME => Render::Time,
            Type::TIMESTAMP => Render::Timestamp,
            Type::TIMESTAMPTZ => Render::Timestamptz,
            Type::INTERVAL => Render::Interval,
            _ => match ty.kind() {
                Kind::Enum(_) => Render::Text,
                Kind::Domain(inner) => Render::of(inner),
                Kind::Array(element) => match Render::of(element) {
                    // An array of what has no text form here is bytes as a whole.
                    Render::Bytes if *element != Type::BYTEA => Render::Bytes,
                    element => Render::Array(Box::new(element)),
                },
                _ if ty.name() == "citext" => Render::Text,
                _ => Render::Bytes,
            },
        }
    }

    fn write(&self, out: &mut Encoder, raw: &[u8]) {
        fn array<const N: usize>(raw: &[u8]) -> Option<[u8; N]> {
            raw.get(..N).and_then(|bytes| bytes.try_into().ok())
        }
        match self {
            Render::Hidden => {}
            Render::Masked => out.text(crate::run::protect::MASK),
            Render::Bool => out.bool(raw.first().is_some_and(|b| *b != 0)),
            Render::Int2 => out.int(array(raw).map_or(0, i16::from_be_bytes).into()),
            Render::Int4 => out.int(array(raw).map_or(0, i32::from_be_bytes).into()),
            Render::Int8 => out.int(array(raw).map_or(0, i64::from_be_bytes)),
            Render::Oid => out.uint(array(raw).map_or(0, u32::from_be_bytes).into()),
            Render::Float4 => out.float(array(raw).map_or(0.0, f32::from_be_bytes).into()),
            Render::Float8 => out.float(array(raw).map_or(0.0, f64::from_be_bytes)),
            Render::Numeric => out.number_text(&numeric(raw)),
            Render::Text => out.text(&String::from_utf8_lossy(raw)),
            Render::Json => out.json(&String::from_utf8_lossy(raw)),
            Render::Jsonb => out.json(&String::from_utf8_lossy(raw.get(1..).unwrap_or(b"null"))),
            Render::Uuid => match array::<16>(raw) {
                Some(bytes) => out.text(&uuid_text(bytes)),
                None => out.bytes(raw),
            },
            Render::Date => out.text(&date(array(raw).map_or(0, i32::from_be_bytes))),
            Render::Time => out.text(&time(array(raw).map_or(0, i64::from_be_bytes))),
            Render::Timestamp => out.text(&timestamp(array(raw).map_or(0, i64::from_be_bytes), "")),
            Render::Timestamptz => {
                out.text(&timestamp(array(raw).map_or(0, i64::from_be_bytes), "Z"));
            }
            Render::Interval => out.text(&interval(raw)),
            Render::Array(element) => match array_json(element, raw) {
                Some(json) => out.json(&json),
                None => out.bytes(raw),
            },
            Render::Bytes => out.bytes(raw),
        }
    }
}

/// An array in PostgreSQL's binary form (any number of dimensions) as JSON text, its
/// elements written by `element`; `None` when the bytes are not such an array.
fn array_json(element: &Render, raw: &[u8]) -> Option<String> {
    fn int(raw: &[u8], at: usize) -> Option<i32> {
        raw.get(at..at + 4)?.try_into().ok().map(i32::from_be_bytes)
    }
    let dimensions = usize::try_from(int(raw, 0)?).ok()?;
    if dimensions == 0 {
        return Some("[]".to_owned());
    }
    let mut lengths = Vec::with_capacity(dimensions);
    for d in 0..dimensions {
        lengths.push(usize::try_from(int(raw, 12 + 8 * d)?).ok()?);
    }
    let mut at = 12 + 8 * dimensions;
    let mut values = Vec::new();
    let total: usize = lengths.iter().product();
    for _ in 0..total {
        let length = int(raw, at)?;
        at += 4;
        let mut encoder = Encoder::new(crate::run::Format::Json);
        encoder.begin_row();
        if length < 0 {
            encoder.null();
        } else {
            let length = usize::try_from(length).ok()?;
            element.write(&mut encoder, raw.get(at..at + length)?);
            at += length;
        }
        encoder.end_row();
        // `[value]`: the value's JSON text between the brackets.
        let row = encoder.take();
        values.push(String::from_utf8_lossy(&row[1..row.len() - 1]).into_owned());
    }
    // Nest the flat values by the dimensions, innermost first.
    for &length in lengths.iter().rev() {
        values = values
            .chunks(length.max(1))
            .map(|chunk| format!("[{}]", chunk.join(",")))
            .collect();
    }
    values.into_iter().next()
}

/// PostgreSQL's epoch, 2000-01-01.
fn epoch() -> chrono::NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(2000, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .unwrap_or_default()
}

fn date(days: i32) -> String {
    match days {
        i32::MAX => "infinity".to_owned(),
        i32::MIN => "-infinity".to_owned(),
        days => (epoch().date() + chrono::Duration::days(days.into()))
            .format("%Y-%m-%d")
            .to_string(),
    }
}

fn time(micros: i64) -> String {
    let time = chrono::NaiveTime::MIN + chrono::Duration::microseconds(micros);
    time.format("%H:%M:%S%.f").to_string()
}

fn timestamp(micros: i64, zone: &str) -> String {
    match micros {
        i64::MAX => "infinity".to_owned(),
        i64::MIN => "-infinity".to_owned(),
        micros => {
            let at = epoch() + chrono::Duration::microseconds(micros);
            format!("{}{zone}", at.format("%Y-%m-%dT%H:%M:%S%.f"))
        }
    }
}

/// An interval as ISO 8601 (`P1Y2M3DT4H5M6.5S`).
fn interval(raw: &[u8]) -> String {
    let (Some(micros), Some(days), Some(months)) = (
        raw.get(..8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_be_bytes),
        raw.get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes),
        raw.get(12..16)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes),
    ) else {
        return String::new();
    };
    let mut text = String::from("P");
    let (years, months) = (months / 12, months % 12);
    for (value, unit) in [(years, 'Y'), (months, 'M'), (days, 'D')] {
        if value != 0 {
            text.push_str(&format!("{value}{unit}"));
        }
    }
    let hours = micros / 3_600_000_000;
    let minutes = (micros / 60_000_000) % 60;
    let seconds = micros % 60_000_000;
    if micros != 0 {
        text.push('T');
        if hours != 0 {
            text.push_str(&format!("{hours}H"));
        }
        if minutes != 0 {
            text.push_str(&format!("{minutes}M"));
        }
        if seconds != 0 {
            let whole = seconds / 1_000_000;
            let fraction = (seconds % 1_000_000).abs();
            if fraction == 0 {
                text.push_str(&format!("{whole}S"));
            } else {
                let sign = if seconds < 0 && whole == 0 { "-" } else { "" };
                let digits = format!("{fraction:06}");
                text.push_str(&format!("{sign}{whole}.{}S", digits.trim_end_matches('0')));
            }
        }
    }
    if text == "P" {
        text.push_str("T0S");
    }
    text
}

fn uuid_text(bytes: [u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A `numeric` in PostgreSQL's binary form (base-10000 digits) as its decimal text.
fn numeric(raw: &[u8]) -> String {
    let word = |i: usize| {
        raw.get(i..i + 2)
            .and_then(|b| b.try_into().ok())
            .map(u16::from_be_bytes)
    };
    let (Some(ndigits), Some(weight), Some(sign), Some(dscale)) =
        (word(0), word(2), word(4), word(6))
    else {
        return String::new();
    };
    match sign {
        0xC000 => return "NaN".to_owned(),
        0xD000 => return "Infinity".to_owned(),
        0xF000 => return "-Infinity".to_owned(),
        _ => {}
    }
    let weight = i32::from(weight as i16);
    let digits: Vec<u16> = (0..usize::from(ndigits))
        .map(|i| word(8 + 2 * i).unwrap_or(0))
        .collect();
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    // The integer part: the digits of weight >= 0.
    if weight < 0 {
        text.push('0');
    } else {
        for position in 0..=weight {
            let digit = digits.get(position as usize).copied().unwrap_or(0);
            if position == 0 {
                text.push_str(&digit.to_string());
            } else {
                text.push_str(&format!("{digit:04}"));
            }
        }
    }
    let scale = usize::from(dscale);
    if scale > 0 {
        let mut fraction = String::new();
        let mut position = weight + 1;
        while fraction.len() < scale {
            let digit = if position < 0 {
                0
            } else {
                digits.get(position as usize).copied().unwrap_or(0)
            };
            fraction.push_str(&format!("{digit:04}"));
            position += 1;
        }
        fraction.truncate(scale);
        text.push('.');
        text.push_str(&fraction);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_bytes(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut raw = Vec::new();
        for word in [ndigits, weight as u16, sign, dscale] {
            raw.extend_from_slice(&word.to_be_bytes());
        }
        for digit in digits {
            raw.extend_from_slice(&digit.to_be_bytes());
        }
        raw
    }

    #[test]
    fn numerics_read_as_their_decimal_text() {
        assert_eq!(numeric(&numeric_bytes(2, 0, 0, 2, &[12, 3400])), "12.34");
        assert_eq!(numeric(&numeric_bytes(1, -1, 0x4000, 5, &[5])), "-0.00050");
        assert_eq!(numeric(&numeric_bytes(2, 1, 0, 0, &[1, 0])), "10000");
        assert_eq!(numeric(&numeric_bytes(0, 0, 0, 0, &[])), "0");
        assert_eq!(numeric(&numeric_bytes(0, 0, 0xC000, 0, &[])), "NaN");
        assert_eq!(
            numeric(&numeric_bytes(3, 2, 0, 0, &[9223, 3720, 3685])),
            "922337203685"
        );
    }

    #[test]
    fn intervals_and_times_read_as_iso_8601() {
        let mut raw = Vec::new();
        raw.extend_from_slice(&(3_723_500_000_i64).to_be_bytes());
        raw.extend_from_slice(&3_i32.to_be_bytes());
        raw.extend_from_slice(&14_i32.to_be_bytes());
        assert_eq!(interval(&raw), "P1Y2M3DT1H2M3.5S");
        assert_eq!(interval(&[0; 16]), "PT0S");
        assert_eq!(timestamp(0, "Z"), "2000-01-01T00:00:00Z");
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(time(3_600_000_001), "01:00:00.000001");
    }
}
