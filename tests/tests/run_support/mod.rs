//! Shared helpers of the run tests (`run_*.rs`): the test console with every runner and
//! trusted principals (as an application that mounts it behind its own login), a direct session
//! on the test PostgreSQL, and the people who ask.
#![allow(dead_code)] // each test file uses a part

pub(crate) mod protect;
pub(crate) mod provision;

use std::sync::Arc;
use std::time::Duration;

use dbconsole_core::model::{Principal, Role};
use dbconsole_core::run::{PoolLimits, Runners, standard_runners};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_tests::TestConsole;
use serde_json::json;

/// The password of the `checker` account on every test server.
pub(crate) const PASSWORD: &str = "checkpw";
pub(crate) const QUERIES: &str = "/api/v1/console/queries";

/// The most a run test waits for what a database server or the service does (a statement to
/// start or to end, an event to be written): generous, so that a busy machine never fails a
/// test that is right. How long these take is a figure for the benches
/// (`benches/benches/run.rs`), not something a test asserts.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// How long (seconds) a statement that a test waits to see end on the server would run
/// otherwise, and the timeout of the credential it runs as: far beyond [`DEADLINE`], so that
/// only what the test checks (a cancel, a timeout, the row cap) ends it within the deadline.
pub(crate) const OUTLIVES: u32 = 600;

/// Awaits the spawned run `answer` once `running` has seen its statement run on the database
/// server (polled every 10 ms): fails when the run answers first (its statement was never
/// seen there: a timeout or a cancel of a statement that did not run proves nothing), or when
/// it is not seen within [`DEADLINE`].
pub(crate) async fn seen_running_then<T, F, Fut>(
    answer: tokio::task::JoinHandle<T>,
    what: &str,
    mut running: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = tokio::time::Instant::now();
    loop {
        if running().await {
            break;
        }
        assert!(
            !answer.is_finished(),
            "{what}: the run answered before its statement was seen running on the server"
        );
        assert!(
            started.elapsed() < DEADLINE,
            "{what}: not seen running on the server within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    answer.await.expect("the run's task")
}

/// The console the run tests drive, over a fresh memory store: every runner compiled in (pools
/// of 2 sessions that wait 500 ms for one), trusted principals, at most 1,000 rows a run.
pub(crate) fn run_console() -> TestConsole {
    run_console_with(test_runners())
}

/// Every runner compiled in, with pools of 2 sessions that wait 500 ms for one.
fn test_runners() -> Runners {
    standard_runners(PoolLimits {
        size: 2,
        wait: Duration::from_millis(500),
    })
}

/// [`run_console`] with these bounds of a value's and a row's bytes (and the default budget).
pub(crate) fn bounded_console(max_value: usize, max_row: usize) -> TestConsole {
    TestConsole::builder(Arc::new(MemoryStorage::new()))
        .runners(test_runners())
        .trust_principal(true)
        .value_limits(dbconsole_core::run::encode::ValueLimits {
            max_value,
            max_row,
            ..Default::default()
        })
        .build()
}

/// [`run_console`] with these runners (`Runners::none()`: every run answers 501).
pub(crate) fn run_console_with(runners: Runners) -> TestConsole {
    run_console_on(Arc::new(MemoryStorage::new()), runners)
}

/// [`run_console`] over the server's default store, redb (in memory), which answers the records
/// it read recently from memory: what the data protection cases change between two runs must
/// reach the second run through it.
pub(crate) fn redb_run_console() -> TestConsole {
    let storage = dbconsole_storage_redb::RedbStorage::in_memory(&dbconsole_tests::test_sealer())
        .expect("an in-memory redb store");
    run_console_on(Arc::new(storage), test_runners())
}

fn run_console_on(storage: Arc<dyn dbconsole_core::Storage>, runners: Runners) -> TestConsole {
    TestConsole::builder(storage)
        .runners(runners)
        .trust_principal(true)
        .max_rows(1_000)
        .build()
}

/// A direct connection to the test MariaDB's `checkdb` as `checker` (`.ci/db-servers-up.sh`),
/// over TCP, to look at the server from outside dbconsole; a missing server fails the test,
/// saying how to start it.
pub(crate) async fn mysql_admin() -> mysql_async::Conn {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(3306)
        .user(Some("checker"))
        .pass(Some(PASSWORD))
        .db_name(Some("checkdb"))
        .prefer_socket(false);
    mysql_async::Conn::new(opts).await.unwrap_or_else(|error| {
        panic!(
            "MariaDB is not running on 127.0.0.1:3306 ({error}): start the test database \
             servers with `sudo bash .ci/db-servers-up.sh`"
        )
    })
}

/// Runs each of `statements` on the MariaDB session `conn`, failing the test with the one that
/// fails.
pub(crate) async fn seed(conn: &mut mysql_async::Conn, statements: &[String]) {
    use mysql_async::prelude::Queryable as _;
    for statement in statements {
        conn.query_drop(statement)
            .await
            .unwrap_or_else(|error| panic!("{statement}: {error}"));
    }
}

/// A direct session on the test PostgreSQL's `checkdb` (`.ci/db-servers-up.sh`), to look at
/// the server from outside dbconsole; a missing server fails the test, saying how to start it.
pub(crate) async fn postgres_admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port=5432 user=checker password={PASSWORD} dbname=checkdb"),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "PostgreSQL is not running on 127.0.0.1:5432 ({error}): start the test database \
             servers with `sudo bash .ci/db-servers-up.sh`"
        )
    });
    tokio::spawn(connection);
    client
}

pub(crate) fn alice() -> Principal {
    Principal::member("alice@example.com").groups(["analysts"])
}

pub(crate) fn root() -> Principal {
    Principal::member("root@example.com").role(Role::SuperAdmin)
}

pub(crate) fn ulid() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    )
}

/// A dashboard named `name`, made by a super admin, with one panel per query of `queries`, each
/// run as `credential` and taking `inputs`: its JSON.
pub(crate) async fn panels_dashboard(
    console: &TestConsole,
    name: &str,
    credential: &str,
    queries: &[String],
    inputs: serde_json::Value,
) -> serde_json::Value {
    let panels: Vec<serde_json::Value> = queries
        .iter()
        .map(|query| {
            serde_json::json!({"title": "p", "inputs": inputs,
                "details": {"__type__": "query", "query": query, "credential_id": credential}})
        })
        .collect();
    console
        .send(
            http::Method::POST,
            "/v1/dashboards",
            Some(root()),
            None,
            Some(&serde_json::json!({"name": name, "restricted_access": false, "panels": panels})),
        )
        .await
        .expect(200)
        .json()
}

/// Runs panel `index` of `dashboard` as alice with `body`.
pub(crate) async fn run_panel(
    console: &TestConsole,
    dashboard: &serde_json::Value,
    index: usize,
    body: &serde_json::Value,
) -> dbconsole_tests::TestResponse {
    let path = format!(
        "/v1/dashboards/{}/panels/{}/run",
        dashboard["id"].as_str().unwrap(),
        dashboard["panels"][index]["id"].as_str().unwrap()
    );
    console
        .send(http::Method::POST, &path, Some(alice()), None, Some(body))
        .await
}

/// Runs, as alice, a dashboard panel of `query` with inputs `given` (a text input) and
/// `blank` (an optional one, left blank: NULL), typed by the dashboard's presentation, on
/// `credential`; `given` is a value with a quote, a backslash and a tab. Answers the value sent
/// and the run's result (docs/dashboards.md, "Inputs": every value is a bind parameter).
pub(crate) async fn typed_panel_run(
    console: &TestConsole,
    credential: &str,
    query: &str,
) -> (String, serde_json::Value) {
    let inputs = json!([{"key": "given", "description": ""}, {"key": "blank", "description": ""}]);
    let dashboard =
        panels_dashboard(console, "typed", credential, &[query.to_owned()], inputs).await;
    let id = dashboard["id"].as_str().unwrap();
    console
        .send(
            http::Method::PUT,
            &format!("/v1/dashboards/{id}/presentation"),
            Some(root()),
            None,
            Some(&json!({"inputs": {"given": {"type": "text"}, "blank": {"type": "text", "required": false}}})),
        )
        .await
        .expect(200);
    let given = "it's a back\\slash and\ta tab".to_owned();
    let body = json!({"inputs": {"given": given, "blank": ""}});
    let result = run_panel(console, &dashboard, 0, &body)
        .await
        .expect(200)
        .json();
    (given, result)
}
