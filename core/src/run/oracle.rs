//! Oracle: [`OracleRunner`], with the oracle crate (ODPI-C; needs the Oracle Client library
//! at run time, as the checker does), over the checker's login (connect descriptor, wallet).
//!
//! The crate is blocking: a run fetches on the blocking pool and hands each row to the async
//! side through a bounded channel, so a slow client slows the fetch and no async worker waits
//! on Oracle.
//!
//! - **Inputs**: a panel's `${key}` inputs are `:1`, `:2`… bind variables, bound as strings
//!   (Oracle converts them).
//! - **Timeout**: the connection's call timeout (`dpiConn_setCallTimeout`) bounds each round
//!   trip in the client, and the service's bound the run; past it, `break_execution` (OCIBreak)
//!   ends the statement on the server.
//! - **Read-only**: a panel runs after `SET TRANSACTION READ ONLY`, and is rolled back.
//! - **Cancel**: when the client goes away, `break_execution`, and the session is closed.
//! - **Untested**: no Oracle Client library or server is obtainable here; what CI proves is
//!   that a run answers 502 naming the missing library (docs/queries.md, "Running queries").

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{self, Object};
use oracle::sql_type::{OracleType, ToSql};
use tokio::sync::mpsc;

use super::encode::{Column, Encoder};
use super::pool::{PoolLimits, Pools, checkout, connected};
use super::statement::Dialect;
use super::{Connector, QueryRunner, RowSink, RunError, RunJob, raced};
use crate::check::TunnelEndpoint;
use crate::check::oracle::OracleLogin;

/// Runs Oracle queries.
#[derive(Debug)]
pub struct OracleRunner {
    pools: Pools<Manager>,
}

impl OracleRunner {
    /// A runner whose pools hold at most `limits.size` sessions each.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            pools: Pools::new(limits),
        }
    }
}

/// A pooled session, with its login (whose wallet must outlive it).
pub struct Session {
    connection: Arc<oracle::Connection>,
    login: OracleLogin,
    _tunnel: Option<TunnelEndpoint>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

/// Opens a credential's sessions.
pub struct Manager {
    connector: Connector,
    connect_timeout: Duration,
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
        target.timeout = self.connect_timeout;
        let secrets: Vec<crate::model::Secret> = target.secrets().cloned().collect();
        let connect = tokio::task::spawn_blocking(move || {
            let login = crate::check::oracle::login(&target)?;
            let password = String::from_utf8_lossy(login.password.expose()).into_owned();
            let connection = oracle::Connector::new(
                login.username.as_str(),
                password,
                login.connect_descriptor.as_str(),
            )
            .connect()
            .map_err(|error| crate::check::oracle::describe(&error))?;
            Ok::<_, String>((connection, login))
        });
        let connect = async {
            connect
                .await
                .map_err(|error| format!("the Oracle connection attempt failed: {error}"))?
        };
        let (connection, login) = connected(connect, self.connect_timeout, &secrets).await?;
        Ok(Session {
            connection: Arc::new(connection),
            login,
            _tunnel: opened.tunnel,
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

/// What the blocking fetch hands over.
enum Fetched {
    Columns(Vec<Column>),
    Row(Vec<Cell>),
}

/// One value, owned (it crosses threads).
enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Number(String),
    Text(String),
    Bytes(Vec<u8>),
}

/// The statement that lists the database's columns (the schema of the console's editor and
/// of an agent's `describe_tables`): schema, table, column, type, nullable.
const CATALOG: &str = "SELECT USER, table_name, column_name, data_type, nullable FROM user_tab_columns \
     ORDER BY table_name, column_id";

#[async_trait]
impl QueryRunner for OracleRunner {
    fn catalog(&self) -> &'static str {
        CATALOG
    }

    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        let read_only = job.pool.read_only;
        let pool = self.pools.get(&job.pool, job.version, || Manager {
            connector: job.connector.clone(),
            connect_timeout: job.connect_timeout,
        });
        let gone = sink.gone();
        tokio::pin!(gone);
        let session = checkout(&pool, &mut gone).await?;
        let bound = job.bound(Dialect::Oracle, placeholder)?;
        let values: Vec<Option<String>> =
            bound.params.into_iter().map(|(_, value)| value).collect();
        let statement = bound.text;
        let connection = Arc::clone(&session.connection);
        let wanted = sink.wanted();
        let timeout = job.run_timeout();
        let (rows, mut fetched) = mpsc::channel::<Fetched>(64);
        let fetch = tokio::task::spawn_blocking(move || {
            fetch(
                &connection,
                &statement,
                &values,
                wanted,
                read_only,
                timeout,
                &rows,
            )
        });
        let write = async {
            while let Some(item) = fetched.recv().await {
                match item {
                    Fetched::Columns(columns) => sink.columns(&columns),
                    Fetched::Row(cells) => {
                        let Some(encoder) = sink.row() else {
                            return Ok(());
                        };
                        for cell in &cells {
                            write(encoder, cell);
                        }
                        sink.end_row().await?;
                    }
                }
            }
            Ok(())
        };
        let password = std::slice::from_ref(&session.login.password);
        let (bound, reported) = job.deadline();
        let outcome = raced(write, &mut gone, bound, reported, &[], password).await;
        drop(fetched);
        let outcome = match outcome {
            Ok(()) => match fetch.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(error),
                Err(error) => Err(RunError::Database(format!("the fetch failed: {error}"))),
            },
            Err(error) => {
                // The statement may still run: break it on the server, close the session.
                let _ = session.connection.break_execution();
                Err(error)
            }
        };
        let outcome =
            outcome.map_err(|error| error.scrubbed(std::slice::from_ref(&session.login.password)));
        if outcome.is_ok() && !sink.truncated() {
            if !sink.is_started() {
                sink.columns(&[]);
            }
            sink.flush().await.map_err(|_| RunError::Cancelled)?;
        } else {
            drop(Object::take(session));
        }
        outcome
    }

    fn evict(&self, database_id: &str) {
        self.pools.evict_database(database_id);
    }
}

/// The `n`th (from 0) bind placeholder of a statement.
fn placeholder(n: usize, _key: &str) -> String {
    format!(":{}", n + 1)
}

fn database_error(error: &oracle::Error) -> RunError {
    let text = crate::check::oracle::describe(error);
    if text.contains("DPI-1067") || text.contains("ORA-03156") {
        RunError::TimedOut(Duration::ZERO)
    } else {
        RunError::Database(text)
    }
}

/// The blocking fetch: at most `wanted` rows, handed over one by one.
fn fetch(
    connection: &oracle::Connection,
    statement: &str,
    values: &[Option<String>],
    wanted: u64,
    read_only: bool,
    timeout: Duration,
    rows: &mpsc::Sender<Fetched>,
) -> Result<(), RunError> {
    connection
        .set_call_timeout(Some(timeout))
        .map_err(|e| database_error(&e))?;
    if read_only {
        connection
            .execute("SET TRANSACTION READ ONLY", &[])
            .map_err(|e| database_error(&e))?;
    }
    let params: Vec<&dyn ToSql> = values.iter().map(|v| v as &dyn ToSql).collect();
    let result = connection
        .query(statement, &params)
        .map_err(|e| database_error(&e))?;
    let columns: Vec<Column> = result
        .column_info()
        .iter()
        .map(|info| Column {
            name: info.name().to_owned(),
            type_name: info.oracle_type().to_string(),
            base64: is_binary(info.oracle_type()),
        })
        .collect();
    let types: Vec<OracleType> = result
        .column_info()
        .iter()
        .map(|info| info.oracle_type().clone())
        .collect();
    if rows.blocking_send(Fetched::Columns(columns)).is_err() {
        return Ok(());
    }
    for (read, row) in result.enumerate() {
        if read as u64 >= wanted {
            break;
        }
        let row = row.map_err(|e| database_error(&e))?;
        let cells = row
            .sql_values()
            .iter()
            .zip(&types)
            .map(|(value, ty)| cell(value, ty))
            .collect();
        if rows.blocking_send(Fetched::Row(cells)).is_err() {
            break;
        }
    }
    if read_only {
        connection.rollback().map_err(|e| database_error(&e))?;
    }
    Ok(())
}

fn is_binary(ty: &OracleType) -> bool {
    matches!(
        ty,
        OracleType::Raw(_) | OracleType::LongRaw | OracleType::BLOB
    )
}

fn cell(value: &oracle::SqlValue<'_>, ty: &OracleType) -> Cell {
    if value.is_null().unwrap_or(false) {
        return Cell::Null;
    }
    if is_binary(ty) {
        return value.get::<Vec<u8>>().map_or(Cell::Null, Cell::Bytes);
    }
    let text = value.to_string();
    match ty {
        OracleType::BinaryFloat | OracleType::BinaryDouble => {
            text.parse().map_or(Cell::Text(text), Cell::Float)
        }
        OracleType::Number(..) | OracleType::Int64 | OracleType::UInt64 => {
            text.parse().map_or(Cell::Number(text), Cell::Int)
        }
        OracleType::Date
        | OracleType::Timestamp(_)
        | OracleType::TimestampTZ(_)
        | OracleType::TimestampLTZ(_) => Cell::Text(text.replacen(' ', "T", 1)),
        _ => Cell::Text(text),
    }
}

fn write(out: &mut Encoder, cell: &Cell) {
    match cell {
        Cell::Null => out.null(),
        Cell::Int(n) => out.int(*n),
        Cell::Float(f) => out.float(*f),
        Cell::Number(text) => out.number_text(text),
        Cell::Text(text) => out.text(text),
        Cell::Bytes(bytes) => out.bytes(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_numbered_bind_variables() {
        let job = RunJob {
            pool: crate::run::PoolKey {
                database_id: "db".to_owned(),
                credential_id: "crd".to_owned(),
                read_only: true,
                protected: false,
                timeout_secs: None,
            },
            version: crate::model::Timestamp::now(),
            connector: Arc::new(|| Box::pin(async { Err("unused".to_owned()) })),
            statement: "SELECT ':x' FROM dual WHERE id = ${id} AND name = '${name}'".to_owned(),
            inputs: Some(crate::run::Inputs {
                declared: vec!["id".to_owned(), "name".to_owned()],
                values: [("id", "7"), ("name", "' OR 1=1 --")]
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), Some(v.to_owned())))
                    .collect(),
            }),
            max_rows: 10,
            timeout: Duration::from_secs(1),
            shorter: None,
            connect_timeout: Duration::from_secs(1),
            protection: None,
            memory: crate::run::memory::RunMemory::new(Default::default()),
        };
        let bound = job.bound(Dialect::Oracle, placeholder).unwrap();
        let statement = bound.text;
        let values: Vec<Option<String>> =
            bound.params.into_iter().map(|(_, value)| value).collect();
        assert_eq!(
            statement,
            "SELECT ':x' FROM dual WHERE id = :1 AND name = :2"
        );
        assert_eq!(
            values,
            [Some("7".to_owned()), Some("' OR 1=1 --".to_owned())]
        );
    }

    #[test]
    fn cells_keep_their_types() {
        let mut encoder = Encoder::new(crate::run::Format::Json);
        encoder.begin_row();
        for cell in [
            Cell::Int(9_007_199_254_740_993),
            Cell::Number("12.50".to_owned()),
            Cell::Float(1.5),
            Cell::Bytes(vec![0, 255]),
            Cell::Null,
        ] {
            write(&mut encoder, &cell);
        }
        encoder.end_row();
        assert_eq!(
            String::from_utf8(encoder.take().to_vec()).unwrap(),
            r#"["9007199254740993","12.50",1.5,"AP8=",null]"#
        );
    }
}
