//! MySQL and MariaDB: [`MysqlRunner`], with mysql_async over the checker's connection
//! ([`crate::check::mysql::connect`]: TCP, the same TLS rules).
//!
//! - **Statements** run as prepared statements (the binary protocol, so values arrive typed);
//!   a panel's `${key}` inputs are `?` parameters sent as text, which the server converts.
//! - **Timeout**: each session sets it at start: `max_statement_time` (seconds) on MariaDB,
//!   `max_execution_time` (milliseconds, `SELECT` only: MySQL's own limit) on MySQL.
//! - **Read-only**: a panel runs in `START TRANSACTION READ ONLY`, rolled back.
//! - **Row cap and cancel**: rows are read one by one from the socket; when the cap is reached
//!   or the client goes away, `KILL QUERY` on a second connection ends the statement on the
//!   server and the session is closed.
//! - **Session state**: after every run the session is reset (`COM_RESET_CONNECTION`, which
//!   drops what the statement may have `SET`) and its timeout set again; a session that fails
//!   that is closed.
//! - **Data protection**: on a database with policies, the session's user is verified to be
//!   unable to read any protected column before the statement is sent (`mysql/verify.rs`); the server's
//!   own privilege checks then refuse whatever reads one, in any form (docs/data-protection.md).
//!   When the login has a shadow database of masking views (`mysql/masking.rs`), a protected run
//!   uses it as its default database, and the masked columns of its views are typed `masked`.

use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{self, Object, RecycleError};
use mysql_async::consts::ColumnType;
use mysql_async::prelude::Queryable as _;
use mysql_async::{Conn, Params, Value};

mod masking;
pub(crate) mod provision;
mod verify;

use super::encode::{Column, Encoder};
use super::pool::{PoolLimits, Pools, checkout, connected};
use super::protect::{MASKED_TYPE, Protection, Refused};
use super::statement::Dialect;
use super::{Connector, QueryRunner, RowSink, RunError, RunJob, raced};
use crate::check::{TunnelEndpoint, error_chain};

/// The character set number that means binary data.
const BINARY: u16 = 63;

/// Runs MySQL and MariaDB queries.
#[derive(Debug)]
pub struct MysqlRunner {
    pools: Pools<Manager>,
}

impl MysqlRunner {
    /// A runner whose pools hold at most `limits.size` sessions each.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            pools: Pools::new(limits),
        }
    }
}

/// A pooled session, with the statement that sets its timeout.
pub struct Session {
    conn: Conn,
    set_timeout: String,
    /// The credential's database, and the login's shadow database of it
    /// ([`masking::shadow`]), when it has one.
    home: Option<(String, String)>,
    _tunnel: Option<TunnelEndpoint>,
    /// What the database's messages are scrubbed of.
    secrets: Vec<crate::model::Secret>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

/// Opens a credential's sessions.
pub struct Manager {
    connector: Connector,
    timeout: Duration,
    connect_timeout: Duration,
    memory: std::sync::Arc<crate::run::memory::RunMemory>,
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
        // A row over the bound is refused by the driver before it is read whole.
        target.max_packet = Some(self.memory.max_message());
        let connect = async {
            let mut conn = crate::check::mysql::connect(&target).await?;
            let version: Option<String> = conn
                .query_first("SELECT VERSION()")
                .await
                .map_err(|e| error_chain(&e))?;
            let set_timeout = if version.is_some_and(|v| v.contains("MariaDB")) {
                format!(
                    "SET SESSION max_statement_time = {}",
                    self.timeout.as_secs_f64()
                )
            } else {
                format!(
                    "SET SESSION max_execution_time = {}",
                    self.timeout.as_millis()
                )
            };
            conn.query_drop(set_timeout.as_str())
                .await
                .map_err(|e| error_chain(&e))?;
            Ok::<_, String>((conn, set_timeout))
        };
        let (conn, set_timeout) =
            connected(connect, self.connect_timeout, target.secrets()).await?;
        let home = (!target.database.is_empty())
            .then(|| {
                let shadow = masking::shadow(&target.username, &target.database);
                (shadow.len() <= masking::NAME_MAX).then(|| (target.database.clone(), shadow))
            })
            .flatten();
        Ok(Session {
            conn,
            set_timeout,
            home,
            _tunnel: opened.tunnel,
            secrets: target.secrets().cloned().collect(),
        })
    }

    async fn recycle(
        &self,
        session: &mut Session,
        _: &managed::Metrics,
    ) -> managed::RecycleResult<RunError> {
        session
            .conn
            .ping()
            .await
            .map_err(|_| RecycleError::message("the session is closed"))
    }
}

/// The statement that lists the database's columns (the schema of the console's editor and
/// of an agent's `describe_tables`): schema, table, column, type, nullable.
const CATALOG: &str = "SELECT table_schema, table_name, column_name, column_type, is_nullable \
     FROM information_schema.columns WHERE table_schema = DATABASE() \
     ORDER BY table_name, ordinal_position";

#[async_trait]
impl QueryRunner for MysqlRunner {
    fn catalog(&self) -> &'static str {
        CATALOG
    }

    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        let read_only = job.pool.read_only;
        let pool = self.pools.get(&job.pool, job.version, || Manager {
            connector: job.connector.clone(),
            timeout: job.timeout,
            connect_timeout: job.connect_timeout,
            memory: std::sync::Arc::clone(&job.memory),
        });
        let gone = sink.gone();
        tokio::pin!(gone);
        let mut session = checkout(&pool, &mut gone).await?;
        let bound = job.bound(Dialect::Mysql, |_, _| "?".to_owned())?;
        let values: Vec<Value> = bound
            .params
            .into_iter()
            .map(|(_, value)| value.map_or(Value::NULL, |value| Value::Bytes(value.into_bytes())))
            .collect();
        let statement = bound.text;
        let connection_id = session.conn.id();
        let secrets = session.secrets.clone();
        let opts = session.conn.opts().clone();
        let (bound, reported) = job.deadline();
        let mut truncated = false;
        let home = session.home.clone();
        let work = execute(
            &mut session.conn,
            home.as_ref(),
            &statement,
            values,
            job.protection.as_deref(),
            sink,
            read_only,
            &mut truncated,
        );
        let outcome = raced(
            work,
            &mut gone,
            bound,
            reported,
            &["max_statement_time", "maximum statement execution time"],
            &secrets,
        )
        .await;
        // The driver refused a packet over the row's bound (its `max_allowed_packet`): the
        // run's answer is the bound, not the broken connection.
        let outcome = match outcome {
            Err(RunError::Connect(why)) if why.contains("max_allowed_packet") => {
                Err(RunError::TooLarge(super::encode::row_over_bound(
                    None,
                    job.memory.limits().max_row,
                )))
            }
            outcome => outcome,
        };
        let killed =
            truncated || matches!(outcome, Err(RunError::Cancelled | RunError::TimedOut(_)));
        if killed {
            // The statement may still run (or still be sending rows): end it on the server,
            // and close this session rather than pool it.
            drop(Object::take(session));
            let kill = async {
                let mut conn = Conn::new(opts).await.ok()?;
                conn.query_drop(format!("KILL QUERY {connection_id}"))
                    .await
                    .ok()?;
                conn.disconnect().await.ok()
            };
            let _ = tokio::time::timeout(Duration::from_secs(1), kill).await;
        } else if matches!(outcome, Err(RunError::Protected(_))) {
            // A session whose user could read a protected column (or that was refused one) is
            // not pooled: a revoke reaches a session only when it connects again.
            drop(Object::take(session));
        } else {
            let set_timeout = session.set_timeout.clone();
            let reset = async {
                session.conn.reset().await?;
                session.conn.query_drop(set_timeout).await
            };
            if reset.await.is_err() {
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

/// On a database with data protection, the server's refusal to read a table or column (errors
/// 1142, 1143) is the protection at work: answered as a refusal naming the policies. Anything
/// else: [`database_error`].
fn refused_by_privileges(error: &mysql_async::Error, protection: Option<&Protection>) -> RunError {
    match (error, protection) {
        (mysql_async::Error::Server(server), Some(protection))
            if matches!(server.code, 1142 | 1143) =>
        {
            RunError::Protected(Refused::undecided(
                protection,
                format!(
                    "the server refused it (ERROR {}: {}): queries on this database run as a user \
                     that can't read what its policies protect, masked columns included (MySQL \
                     and MariaDB show masks only through the login's shadow database of masking \
                     views, by unqualified names). Select the columns you may read",
                    server.code, server.message
                ),
            ))
        }
        _ => database_error(error),
    }
}

fn database_error(error: &mysql_async::Error) -> RunError {
    match error {
        mysql_async::Error::Server(server) => RunError::Database(format!(
            "ERROR {} ({}): {}",
            server.code, server.state, server.message
        )),
        mysql_async::Error::Io(_) => RunError::Connect(error_chain(error)),
        other => RunError::Database(error_chain(other)),
    }
}

/// On a protected database, makes the login's shadow database the session's default when it
/// may use it (`home`: its database and the shadow's name), and verifies the session: the
/// masked columns of the shadow's views.
async fn protect(
    conn: &mut Conn,
    home: Option<&(String, String)>,
    protection: &Protection,
) -> Result<verify::Masked, RunError> {
    let Some((database, shadow)) = home else {
        let home = verify::Home {
            database: "",
            shadow: None,
        };
        return verify::ensure(conn, protection, home).await;
    };
    let in_shadow = conn
        .query_drop(format!("USE {}", masking::quote(shadow)))
        .await
        .is_ok();
    if !in_shadow {
        conn.query_drop(format!("USE {}", masking::quote(database)))
            .await
            .map_err(|e| database_error(&e))?;
    }
    let home = verify::Home {
        database,
        shadow: in_shadow.then_some(shadow.as_str()),
    };
    verify::ensure(conn, protection, home).await
}

#[allow(clippy::too_many_arguments)]
async fn execute(
    conn: &mut Conn,
    home: Option<&(String, String)>,
    statement: &str,
    values: Vec<Value>,
    protection: Option<&Protection>,
    sink: &mut RowSink,
    read_only: bool,
    truncated: &mut bool,
) -> Result<(), RunError> {
    // On a protected database, nothing of the statement reaches the server before its user is
    // verified.
    let masked = match protection {
        Some(protection) => protect(conn, home, protection).await?,
        None => verify::Masked::new(),
    };
    // Every run on a protected database is read-only, console queries too.
    let read_only = read_only || protection.is_some();
    if read_only {
        conn.query_drop("START TRANSACTION READ ONLY")
            .await
            .map_err(|e| database_error(&e))?;
    }
    let params = if values.is_empty() {
        Params::Empty
    } else {
        Params::Positional(values)
    };
    let mut result = conn
        .exec_iter(statement, params)
        .await
        .map_err(|e| refused_by_privileges(&e, protection))?;
    let stored = result.columns().unwrap_or_else(|| Vec::new().into());
    // A masked column of a shadow view holds its mask's text. MariaDB describes a view's
    // column computed by an expression with the view's column name and no database (a plain
    // column names its table's database), and the view by the query's alias: a column so
    // described, named as a masked column of a verified view, is one.
    let is_masked = |c: &mysql_async::Column| {
        c.schema_str().is_empty()
            && !c.org_name_str().is_empty()
            && masked
                .values()
                .any(|columns| columns.contains(&c.org_name_str().to_lowercase()))
    };
    let renders: Vec<Render> = stored
        .iter()
        .map(|c| {
            if is_masked(c) {
                Render::Value
            } else {
                Render::of(c)
            }
        })
        .collect();
    let columns: Vec<Column> = stored
        .iter()
        .zip(&renders)
        .map(|(c, render)| Column {
            name: c.name_str().into_owned(),
            type_name: if is_masked(c) {
                MASKED_TYPE.to_owned()
            } else {
                type_name(c.column_type())
            },
            base64: *render == Render::Bytes,
        })
        .collect();
    loop {
        let row = result
            .next()
            .await
            .map_err(|e| refused_by_privileges(&e, protection))?;
        let Some(row) = row else { break };
        if !sink.is_started() {
            sink.columns(&columns);
        }
        let Some(encoder) = sink.row() else {
            *truncated = true;
            return Ok(());
        };
        for (i, render) in renders.iter().enumerate() {
            match row.as_ref(i) {
                None | Some(Value::NULL) => encoder.null(),
                Some(value) => render.write(encoder, value),
            }
        }
        sink.end_row().await?;
    }
    // A write that returned no rows says how many it changed.
    if columns.is_empty() {
        sink.set_affected(result.affected_rows());
    }
    drop(result);
    if !sink.is_started() {
        sink.columns(&columns);
    }
    sink.flush().await.map_err(|_| RunError::Cancelled)?;
    if read_only {
        conn.query_drop("ROLLBACK")
            .await
            .map_err(|e| database_error(&e))?;
    }
    Ok(())
}

/// `MYSQL_TYPE_NEWDECIMAL` → `newdecimal`.
fn type_name(column_type: ColumnType) -> String {
    let name = format!("{column_type:?}");
    name.strip_prefix("MYSQL_TYPE_")
        .unwrap_or(&name)
        .to_ascii_lowercase()
}

/// How a column's values are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Render {
    /// Numbers, text, dates as the value says.
    Value,
    /// Exact decimals: text.
    Decimal,
    /// JSON documents.
    Json,
    /// Binary strings and bits: base64.
    Bytes,
    /// A date without a time.
    Date,
}

impl Render {
    fn of(column: &mysql_async::Column) -> Self {
        match column.column_type() {
            ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL => Render::Decimal,
            ColumnType::MYSQL_TYPE_JSON => Render::Json,
            ColumnType::MYSQL_TYPE_BIT | ColumnType::MYSQL_TYPE_GEOMETRY => Render::Bytes,
            ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE => Render::Date,
            ColumnType::MYSQL_TYPE_TINY_BLOB
            | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
            | ColumnType::MYSQL_TYPE_LONG_BLOB
            | ColumnType::MYSQL_TYPE_BLOB
            | ColumnType::MYSQL_TYPE_VAR_STRING
            | ColumnType::MYSQL_TYPE_STRING
            | ColumnType::MYSQL_TYPE_VARCHAR
                if column.character_set() == BINARY =>
            {
                Render::Bytes
            }
            _ => Render::Value,
        }
    }

    fn write(self, out: &mut Encoder, value: &Value) {
        match (self, value) {
            (_, Value::NULL) => out.null(),
            (Render::Bytes, Value::Bytes(bytes)) => out.bytes(bytes),
            (Render::Decimal, Value::Bytes(bytes)) => {
                out.number_text(&String::from_utf8_lossy(bytes));
            }
            (Render::Json, Value::Bytes(bytes)) => out.json(&String::from_utf8_lossy(bytes)),
            (_, Value::Bytes(bytes)) => out.text(&String::from_utf8_lossy(bytes)),
            (_, Value::Int(n)) => out.int(*n),
            (_, Value::UInt(n)) => out.uint(*n),
            (_, Value::Float(f)) => out.float(f64::from(*f)),
            (_, Value::Double(f)) => out.float(*f),
            (Render::Date, Value::Date(y, m, d, ..)) => out.text(&format!("{y:04}-{m:02}-{d:02}")),
            (_, Value::Date(y, m, d, h, mi, s, us)) => {
                let mut text = format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}");
                if *us > 0 {
                    text.push_str(&format!(".{us:06}"));
                }
                out.text(&text);
            }
            (_, Value::Time(negative, days, h, m, s, us)) => {
                let hours = u64::from(*days) * 24 + u64::from(*h);
                let sign = if *negative { "-" } else { "" };
                let mut text = format!("{sign}{hours:02}:{m:02}:{s:02}");
                if *us > 0 {
                    text.push_str(&format!(".{us:06}"));
                }
                out.text(&text);
            }
        }
    }
}
