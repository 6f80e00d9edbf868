//! SQL Server: [`SqlserverRunner`], with tiberius over the checker's connection
//! (`check::sqlserver`'s connection: the same TLS rules and routing).
//!
//! - **Statements**: a console query is sent as a SQL batch; a panel's `${key}` inputs are
//!   `@P1`, `@P2`… parameters of an RPC (`sp_executesql`), sent as `nvarchar`, which the server
//!   converts. Only the first result set is read.
//! - **Read-only**: SQL Server has no read-only transaction, so a panel runs inside
//!   `BEGIN TRANSACTION` … `ROLLBACK`: nothing it writes is kept.
//! - **Timeout and cancel**: tiberius sends no attention (cancel) signal and SQL Server has no
//!   per-session statement timeout, so both are the service's: when the timeout passes, the cap
//!   is reached or the client goes away, the connection is closed, and SQL Server ends the
//!   batch of a closed connection when it next writes to it. (Not tested against a real server:
//!   none is obtainable here; docs/queries.md says so.)
//! - **Session state**: the connection is reset by closing it after a run that changed it in
//!   doubt (any failure); a successful console query's session goes back to the pool as it is,
//!   since T-SQL `SET` options of a batch last for the session: it is closed too.

use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{self, Object};
use futures_util::StreamExt as _;
use tiberius::{Client, ColumnData, QueryItem, ToSql};
use tokio::net::TcpStream;
use tokio_util::compat::Compat;

use super::encode::{Column, Encoder};
use super::pool::{PoolLimits, Pools, checkout, connected};
use super::statement::Dialect;
use super::{Connector, QueryRunner, RowSink, RunError, RunJob, raced};
use crate::check::{TunnelEndpoint, error_chain};

/// Runs SQL Server queries.
#[derive(Debug)]
pub struct SqlserverRunner {
    pools: Pools<Manager>,
}

impl SqlserverRunner {
    /// A runner whose pools hold at most `limits.size` connections each.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            pools: Pools::new(limits),
        }
    }
}

/// A pooled connection, with what must live as long as it.
pub struct Session {
    client: Client<Compat<TcpStream>>,
    _files: crate::check::sqlserver::ClientFiles,
    _tunnel: Option<TunnelEndpoint>,
    /// What the database's messages are scrubbed of.
    secrets: Vec<crate::model::Secret>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

/// Opens a credential's connections.
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
        let target = opened.target;
        let connect = crate::check::sqlserver::connect(&target);
        let (client, files) = connected(connect, self.connect_timeout, target.secrets()).await?;
        Ok(Session {
            client,
            _files: files,
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
const CATALOG: &str = "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE \
     FROM INFORMATION_SCHEMA.COLUMNS ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION";

#[async_trait]
impl QueryRunner for SqlserverRunner {
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
        let mut session = checkout(&pool, &mut gone).await?;
        let bound = job.bound(Dialect::Sqlserver, placeholder)?;
        let values: Vec<Option<String>> =
            bound.params.into_iter().map(|(_, value)| value).collect();
        let secrets = session.secrets.clone();
        let work = execute(&mut session.client, &bound.text, values, sink, read_only);
        let timeout = job.run_timeout();
        let outcome = raced(work, &mut gone, timeout, timeout, &[], &secrets).await;
        // Only a panel that ran to its rollback leaves its connection as it found it.
        if !(read_only && outcome.is_ok() && !sink.truncated()) {
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
    format!("@P{}", n + 1)
}

fn database_error(error: &tiberius::error::Error) -> RunError {
    match error {
        tiberius::error::Error::Server(token) => RunError::Database(format!(
            "{} (code {}, state {}, class {})",
            token.message(),
            token.code(),
            token.state(),
            token.class()
        )),
        tiberius::error::Error::Io { .. } => RunError::Connect(error_chain(error)),
        other => RunError::Database(error_chain(other)),
    }
}

async fn execute(
    client: &mut Client<Compat<TcpStream>>,
    statement: &str,
    values: Vec<Option<String>>,
    sink: &mut RowSink,
    read_only: bool,
) -> Result<(), RunError> {
    if read_only {
        client
            .simple_query("BEGIN TRANSACTION")
            .await
            .map_err(|e| database_error(&e))?
            .into_results()
            .await
            .map_err(|e| database_error(&e))?;
    }
    {
        let params: Vec<&dyn ToSql> = values.iter().map(|v| v as &dyn ToSql).collect();
        let mut stream = if read_only {
            client.query(statement, &params).await
        } else {
            client.simple_query(statement).await
        }
        .map_err(|e| database_error(&e))?;
        let mut columns: Option<Vec<Column>> = None;
        while let Some(item) = stream.next().await {
            match item.map_err(|e| database_error(&e))? {
                QueryItem::Metadata(meta) if columns.is_none() => {
                    let described: Vec<Column> = meta
                        .columns()
                        .iter()
                        .map(|c| Column {
                            name: c.name().to_owned(),
                            type_name: format!("{:?}", c.column_type()).to_ascii_lowercase(),
                            base64: matches!(
                                c.column_type(),
                                tiberius::ColumnType::BigBinary
                                    | tiberius::ColumnType::BigVarBin
                                    | tiberius::ColumnType::Image
                            ),
                        })
                        .collect();
                    sink.columns(&described);
                    columns = Some(described);
                }
                // Only the first result set is read.
                QueryItem::Metadata(_) => break,
                QueryItem::Row(row) => {
                    let Some(encoder) = sink.row() else {
                        return Ok(());
                    };
                    for (_, value) in row.cells() {
                        write(encoder, value);
                    }
                    sink.end_row().await?;
                }
            }
        }
    }
    if !sink.is_started() {
        sink.columns(&[]);
    }
    sink.flush().await.map_err(|_| RunError::Cancelled)?;
    if read_only {
        client
            .simple_query("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION")
            .await
            .map_err(|e| database_error(&e))?
            .into_results()
            .await
            .map_err(|e| database_error(&e))?;
    }
    Ok(())
}

/// 1900-01-01 plus `days`, as ISO 8601.
fn date_from(epoch: chrono::NaiveDate, days: i64) -> chrono::NaiveDate {
    epoch + chrono::Duration::days(days)
}

fn epoch_1900() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(1900, 1, 1).unwrap_or_default()
}

fn epoch_0001() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(1, 1, 1).unwrap_or_default()
}

/// A time of `increments` of 10^-`scale` s since midnight.
fn time_of(increments: u64, scale: u8) -> chrono::NaiveTime {
    let nanos = u128::from(increments) * 10u128.pow(9u32.saturating_sub(u32::from(scale)));
    let nanos = i64::try_from(nanos).unwrap_or(0);
    chrono::NaiveTime::MIN + chrono::Duration::nanoseconds(nanos)
}

fn write(out: &mut Encoder, value: &ColumnData<'_>) {
    match value {
        ColumnData::U8(Some(n)) => out.int(i64::from(*n)),
        ColumnData::I16(Some(n)) => out.int(i64::from(*n)),
        ColumnData::I32(Some(n)) => out.int(i64::from(*n)),
        ColumnData::I64(Some(n)) => out.int(*n),
        ColumnData::F32(Some(f)) => out.float(f64::from(*f)),
        ColumnData::F64(Some(f)) => out.float(*f),
        ColumnData::Bit(Some(b)) => out.bool(*b),
        ColumnData::String(Some(text)) => out.text(text),
        ColumnData::Guid(Some(uuid)) => out.text(&uuid.to_string()),
        ColumnData::Binary(Some(bytes)) => out.bytes(bytes),
        ColumnData::Numeric(Some(numeric)) => out.number_text(&numeric.to_string()),
        ColumnData::Xml(Some(xml)) => out.text(xml.as_ref().as_ref()),
        ColumnData::DateTime(Some(at)) => {
            let date = date_from(epoch_1900(), i64::from(at.days()));
            let nanos = u64::from(at.seconds_fragments()) * 1_000_000_000 / 300;
            let time = time_of(nanos, 9);
            out.text(&format!("{}T{}", date, time.format("%H:%M:%S%.3f")));
        }
        ColumnData::SmallDateTime(Some(at)) => {
            let date = date_from(epoch_1900(), i64::from(at.days()));
            let time = time_of(u64::from(at.seconds_fragments()) * 60, 0);
            out.text(&format!("{}T{}", date, time.format("%H:%M:%S")));
        }
        ColumnData::Time(Some(time)) => {
            out.text(
                &time_of(time.increments(), time.scale())
                    .format("%H:%M:%S%.f")
                    .to_string(),
            );
        }
        ColumnData::Date(Some(date)) => {
            out.text(&date_from(epoch_0001(), i64::from(date.days())).to_string());
        }
        ColumnData::DateTime2(Some(at)) => {
            let date = date_from(epoch_0001(), i64::from(at.date().days()));
            let time = time_of(at.time().increments(), at.time().scale());
            out.text(&format!("{date}T{}", time.format("%H:%M:%S%.f")));
        }
        ColumnData::DateTimeOffset(Some(at)) => {
            let utc = at.datetime2();
            let date = date_from(epoch_0001(), i64::from(utc.date().days()));
            let time = time_of(utc.time().increments(), utc.time().scale());
            out.text(&format!("{date}T{}Z", time.format("%H:%M:%S%.f")));
        }
        _ => out.null(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::encode::Format;

    #[test]
    fn values_are_written_with_their_types() {
        let mut encoder = Encoder::new(Format::Json);
        encoder.begin_row();
        for value in [
            ColumnData::I64(Some(9_007_199_254_740_993)),
            ColumnData::Bit(Some(true)),
            ColumnData::String(Some("x".into())),
            ColumnData::Binary(Some(vec![0, 255].into())),
            ColumnData::DateTime(Some(tiberius::time::DateTime::new(44_998, 300 * 3_661))),
            ColumnData::Date(Some(tiberius::time::Date::new(738_944))),
            ColumnData::I32(None),
        ] {
            write(&mut encoder, &value);
        }
        encoder.end_row();
        assert_eq!(
            String::from_utf8(encoder.take().to_vec()).unwrap(),
            r#"["9007199254740993",true,"x","AP8=","2023-03-15T01:01:01.000","2024-02-29",null]"#
        );
    }

    #[test]
    fn inputs_are_numbered_parameters() {
        let job = RunJob {
            pool: crate::run::PoolKey {
                database_id: "db".to_owned(),
                credential_id: "crd".to_owned(),
                read_only: true,
                protected: false,
                timeout_secs: None,
            },
            version: crate::model::Timestamp::now(),
            connector: std::sync::Arc::new(|| Box::pin(async { Err("unused".to_owned()) })),
            statement: "SELECT [a;b] FROM t WHERE id = ${id} AND name = '${name}'".to_owned(),
            inputs: Some(crate::run::Inputs {
                declared: vec!["id".to_owned(), "name".to_owned()],
                values: [("id", "7"), ("name", "'; DROP TABLE t; --")]
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
        let bound = job.bound(Dialect::Sqlserver, placeholder).unwrap();
        let statement = bound.text;
        let values: Vec<Option<String>> =
            bound.params.into_iter().map(|(_, value)| value).collect();
        assert_eq!(
            statement,
            "SELECT [a;b] FROM t WHERE id = @P1 AND name = @P2"
        );
        assert_eq!(
            values,
            [Some("7".to_owned()), Some("'; DROP TABLE t; --".to_owned())]
        );
    }
}
