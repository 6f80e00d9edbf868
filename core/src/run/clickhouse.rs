//! ClickHouse: [`ClickhouseRunner`], with the clickhouse crate over HTTP(S) (the checker's
//! client: the same TLS rules, the same tunnel).
//!
//! - **Results** are read as `TabSeparatedWithNamesAndTypes`, which every server version
//!   speaks, and each value is written by its column's type (integers, floats, decimals as
//!   text, `DateTime` as ISO 8601, `Nullable` `\N` as NULL; arrays, tuples and maps as
//!   ClickHouse writes them).
//! - **Inputs**: a panel's `${key}` becomes the query parameter `{pN:String}` sent as
//!   `param_pN` (the server binds it; cast it in SQL where another type is needed). Query
//!   parameters need ClickHouse 19.15 or later; an older server refuses such a panel with its
//!   own message.
//! - **Timeout**: the `max_execution_time` setting, in seconds (ClickHouse's unit), rounded up.
//! - **Read-only**: panels run with `readonly=2` (no writes; settings may still be sent).
//! - **Row cap**: `max_result_rows` with `result_overflow_mode=break` stops the server near the
//!   cap; the runner reads at most one row past it.
//! - **Cancel**: every run has its own `query_id`; when the client goes away, the cap is
//!   reached or the timeout passes, `KILL QUERY WHERE query_id = …` ends it on the server.

use std::time::Duration;

use async_trait::async_trait;
use bytes::{Buf as _, BytesMut};
use deadpool::managed::{self};

use super::encode::{Column, Encoder};
use super::pool::{PoolLimits, Pools, checkout};
use super::statement::Dialect;
use super::{Connector, QueryRunner, RowSink, RunError, RunJob, raced};
use crate::check::{TunnelEndpoint, error_chain, scrub_message};

/// Runs ClickHouse queries.
#[derive(Debug)]
pub struct ClickhouseRunner {
    pools: Pools<Manager>,
}

impl ClickhouseRunner {
    /// A runner that runs at most `limits.size` queries at once per credential.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            pools: Pools::new(limits),
        }
    }
}

/// A client of one credential (HTTP is stateless: a "session" is a slot in the pool, which
/// bounds how many queries a credential runs at once).
pub struct Session {
    client: ::clickhouse::Client,
    _tunnel: Option<TunnelEndpoint>,
    secrets: Vec<crate::model::Secret>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

/// Makes a credential's clients.
pub struct Manager {
    connector: Connector,
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
        let target = opened.target;
        let client = crate::check::clickhouse::client(&target, true)
            .map_err(|message| RunError::Connect(scrub_message(&message, target.secrets())))?;
        Ok(Session {
            client,
            _tunnel: opened.tunnel,
            secrets: target.secrets().cloned().collect(),
        })
    }

    async fn recycle(
        &self,
        _: &mut Session,
        _: &managed::Metrics,
    ) -> managed::RecycleResult<RunError> {
        Ok(())
    }
}

/// The statement that lists the database's columns (the schema of the console's editor and
/// of an agent's `describe_tables`): schema, table, column, type, nullable.
/// Table by table, each in definition order (`position` is newer than ClickHouse 19).
const CATALOG: &str = "SELECT database, table, name, type, \
     if(startsWith(type, 'Nullable'), 'YES', 'NO') \
     FROM system.columns WHERE database = currentDatabase()";

#[async_trait]
impl QueryRunner for ClickhouseRunner {
    fn catalog(&self) -> &'static str {
        CATALOG
    }

    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        let pool = self.pools.get(&job.pool, job.version, || Manager {
            connector: job.connector.clone(),
        });
        let gone = sink.gone();
        tokio::pin!(gone);
        let session = checkout(&pool, &mut gone).await?;
        let bound = job.bound(Dialect::Clickhouse, |n, _| {
            format!("{{p{n}:Nullable(String)}}")
        })?;
        let statement = bound.text;
        // `\N` is NULL in a parameter's text form (and a backslash otherwise escapes).
        let params: Vec<String> = bound
            .params
            .into_iter()
            .map(|(_, value)| value.map_or_else(|| "\\N".to_owned(), |v| v.replace('\\', "\\\\")))
            .collect();
        let query_id = format!("dbconsole-{}", crate::model::QueryId::generate());
        let seconds = job.run_timeout().as_secs_f64().ceil().max(1.0) as u64;
        // The crate reads `?` as its own placeholder: `??` is a literal one.
        let mut query = session
            .client
            .query(&statement.replace('?', "??"))
            .with_setting("query_id", query_id.clone())
            .with_setting("max_execution_time", seconds.to_string())
            .with_setting("max_result_rows", sink.wanted().to_string())
            .with_setting("result_overflow_mode", "break");
        if job.pool.read_only {
            query = query.with_setting("readonly", "2");
        }
        for (n, value) in params.iter().enumerate() {
            query = query.with_setting(format!("param_p{n}"), value.clone());
        }
        let (bound, reported) = job.deadline();
        let mut truncated = false;
        let work = execute(query, sink, &mut truncated);
        let outcome = raced(
            work,
            &mut gone,
            bound,
            reported,
            &["Timeout exceeded"],
            &session.secrets,
        )
        .await
        .map_err(|error| match error {
            // A connection lost mid-run on a credential with secrets answers as the database's
            // error (its message scrubbed above), as it always has here.
            RunError::Connect(message) if !session.secrets.is_empty() => {
                RunError::Database(message)
            }
            other => other,
        });
        if truncated || matches!(outcome, Err(RunError::Cancelled | RunError::TimedOut(_))) {
            let kill = session
                .client
                .query("KILL QUERY WHERE query_id = ?")
                .bind(query_id.as_str())
                .execute();
            let _ = tokio::time::timeout(Duration::from_secs(1), kill).await;
        }
        outcome
    }

    fn evict(&self, database_id: &str) {
        self.pools.evict_database(database_id);
    }
}

fn clickhouse_error(error: &::clickhouse::error::Error) -> RunError {
    match error {
        ::clickhouse::error::Error::BadResponse(message) => {
            RunError::Database(message.split_whitespace().collect::<Vec<_>>().join(" "))
        }
        ::clickhouse::error::Error::Network(_) => RunError::Connect(error_chain(error)),
        other => RunError::Database(error_chain(other)),
    }
}

async fn execute(
    query: ::clickhouse::query::Query,
    sink: &mut RowSink,
    truncated: &mut bool,
) -> Result<(), RunError> {
    let mut cursor = query
        .fetch_bytes("TabSeparatedWithNamesAndTypes")
        .map_err(|e| clickhouse_error(&e))?;
    let mut pending = BytesMut::new();
    let mut names: Option<Vec<String>> = None;
    let mut renders: Vec<Render> = Vec::new();
    loop {
        let chunk = cursor.next().await.map_err(|e| clickhouse_error(&e))?;
        let Some(chunk) = chunk else { break };
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line = pending.split_to(end + 1);
            let line = &line[..end];
            let Some(columns) = &names else {
                names = Some(fields(line).map(|f| unescape(f).into_owned()).collect());
                continue;
            };
            if renders.is_empty() && !columns.is_empty() {
                let types: Vec<String> = fields(line).map(|f| unescape(f).into_owned()).collect();
                renders = types.iter().map(|t| Render::of(t)).collect();
                let described: Vec<Column> = columns
                    .iter()
                    .zip(&types)
                    .map(|(name, type_name)| Column {
                        name: name.clone(),
                        type_name: type_name.clone(),
                        base64: false,
                    })
                    .collect();
                if !sink.is_started() {
                    sink.columns(&described);
                }
                continue;
            }
            let values: Vec<&[u8]> = fields(line).collect();
            if values.len() != renders.len() {
                // The server writes an error that came after the first rows into the body.
                return Err(RunError::Database(
                    String::from_utf8_lossy(line).trim().to_owned(),
                ));
            }
            let Some(encoder) = sink.row() else {
                *truncated = true;
                return Ok(());
            };
            for (value, render) in values.iter().zip(&renders) {
                render.write(encoder, value);
            }
            sink.end_row().await?;
        }
    }
    if pending.has_remaining() {
        return Err(RunError::Database(
            String::from_utf8_lossy(&pending).trim().to_owned(),
        ));
    }
    if !sink.is_started() {
        sink.columns(&[]);
    }
    sink.flush().await.map_err(|_| RunError::Cancelled)
}

fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| *b == b'\t')
}

/// A TSV field's text: `\t`, `\n`, `\\`… unescaped.
fn unescape(field: &[u8]) -> std::borrow::Cow<'_, str> {
    if !field.contains(&b'\\') {
        return String::from_utf8_lossy(field);
    }
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b't') => out.push(b'\t'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b'0') => out.push(0),
            Some(b'b') => out.push(8),
            Some(b'f') => out.push(12),
            Some(&other) => out.push(other),
            None => out.push(b'\\'),
        }
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// How a column's values are written, from its ClickHouse type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Render {
    nullable: bool,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    UInt,
    Float,
    Exact,
    Bool,
    DateTime,
    Text,
}

impl Render {
    fn of(type_name: &str) -> Self {
        let mut inner = type_name;
        let mut nullable = false;
        loop {
            if let Some(rest) = inner
                .strip_prefix("Nullable(")
                .and_then(|r| r.strip_suffix(')'))
            {
                nullable = true;
                inner = rest;
            } else if let Some(rest) = inner
                .strip_prefix("LowCardinality(")
                .and_then(|r| r.strip_suffix(')'))
            {
                inner = rest;
            } else {
                break;
            }
        }
        let kind = match inner {
            "Int8" | "Int16" | "Int32" | "Int64" => Kind::Int,
            "UInt8" | "UInt16" | "UInt32" | "UInt64" => Kind::UInt,
            "Float32" | "Float64" => Kind::Float,
            "Int128" | "Int256" | "UInt128" | "UInt256" => Kind::Exact,
            "Bool" => Kind::Bool,
            _ if inner.starts_with("Decimal") => Kind::Exact,
            _ if inner.starts_with("DateTime") => Kind::DateTime,
            _ => Kind::Text,
        };
        Self { nullable, kind }
    }

    fn write(self, out: &mut Encoder, raw: &[u8]) {
        if self.nullable && raw == b"\\N" {
            out.null();
            return;
        }
        let text = unescape(raw);
        match self.kind {
            Kind::Int => match text.parse::<i64>() {
                Ok(n) => out.int(n),
                Err(_) => out.text(&text),
            },
            Kind::UInt => match text.parse::<u64>() {
                Ok(n) => out.uint(n),
                Err(_) => out.text(&text),
            },
            Kind::Float => match text.as_ref() {
                "nan" | "-nan" => out.float(f64::NAN),
                "inf" | "+inf" => out.float(f64::INFINITY),
                "-inf" => out.float(f64::NEG_INFINITY),
                number => match number.parse::<f64>() {
                    Ok(f) => out.float(f),
                    Err(_) => out.text(number),
                },
            },
            Kind::Exact => out.number_text(&text),
            Kind::Bool => out.bool(matches!(text.as_ref(), "true" | "1")),
            Kind::DateTime => out.text(&text.replacen(' ', "T", 1)),
            Kind::Text => out.text(&text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_choose_how_values_are_written() {
        assert_eq!(
            Render::of("Nullable(UInt64)"),
            Render {
                nullable: true,
                kind: Kind::UInt
            }
        );
        assert_eq!(Render::of("LowCardinality(String)").kind, Kind::Text);
        assert_eq!(Render::of("Decimal(9, 2)").kind, Kind::Exact);
        assert_eq!(Render::of("DateTime64(3, 'UTC')").kind, Kind::DateTime);
        assert_eq!(unescape(b"a\\tb\\\\c\\n"), "a\tb\\c\n");
    }
}
