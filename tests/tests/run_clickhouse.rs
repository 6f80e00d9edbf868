//! Running queries against a real ClickHouse (`.ci/db-servers-up.sh`: HTTP on 127.0.0.1:8123,
//! user `checker`/`checkpw`, database `checkdb`; version 18.16 on Debian 12): typed results,
//! the row cap, the timeout and the cancel enforced on the server (seen in
//! `system.processes`).

mod run_support;

use std::sync::Arc;

use dbconsole_tests::eventually;
use run_support::*;
use serde_json::{Value, json};

const PORT: u16 = 8123;

/// The `checker` account, with a timeout of [`OUTLIVES`] (not the default 30 s, as long as
/// [`DEADLINE`]): a statement a test waits to see end on the server is ended by what the test
/// checks (a cancel, a shorter timeout, the row cap), never by the credential's timeout.
fn checker() -> Value {
    json!([{"username": "checker", "password": PASSWORD, "timeout": OUTLIVES}])
}

fn admin() -> clickhouse::Client {
    clickhouse::Client::default()
        .with_url(format!("http://127.0.0.1:{PORT}"))
        .with_user("checker")
        .with_password(PASSWORD)
        .with_validation(false)
}

/// Whether a statement holding `marker` still runs on the server.
async fn running(client: &clickhouse::Client, marker: &str) -> bool {
    let count = client
        .query(
            "SELECT count() FROM system.processes WHERE query LIKE ? \
             AND query NOT LIKE '%system.processes%'",
        )
        .bind(format!("%{marker}%"))
        .fetch_one::<u64>()
        .await
        .unwrap_or_else(|error| {
            panic!(
                "ClickHouse is not running on 127.0.0.1:{PORT} ({error}): start the test \
                 database servers with `sudo bash .ci/db-servers-up.sh`"
            )
        });
    count > 0
}

/// Waits (at most [`DEADLINE`]) for no statement holding `marker` to run on the server.
async fn gone(client: &clickhouse::Client, marker: &str) {
    eventually(
        DEADLINE,
        &format!("the statement {marker} ends on the server"),
        || async { (!running(client, marker).await).then_some(()) },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_keep_their_types_and_the_cap_holds() {
    let server = admin();
    running(&server, "nothing").await;
    let console = run_console();
    let (db, credentials) = console
        .database(
            "clickhouse",
            PORT,
            json!({"database": "default"}),
            checker(),
        )
        .await;
    let statement = "SELECT toUInt64(9007199254740993) AS big, toInt32(-42) AS small, \
         toDecimal32(12.5, 2) AS price, 'a\\tb?' AS t, toDate('2024-02-29') AS d, \
         toDateTime('2024-02-03 04:05:06') AS at, CAST(NULL AS Nullable(String)) AS n, \
         1.5 AS f, [1, 2] AS arr";
    let (id, answer) = console
        .query(&alice(), &db, &credentials[0], statement, None, None)
        .await;
    let result = answer.expect(200).json();
    assert_eq!(
        result["rows"],
        json!([[
            "9007199254740993",
            -42,
            "12.50",
            "a\tb?",
            "2024-02-29",
            "2024-02-03T04:05:06",
            null,
            1.5,
            "[1,2]"
        ]]),
        "{result}"
    );
    assert_eq!(result["columns"][0]["type"], "UInt64");
    assert_eq!(console.history(&alice(), &id).await["status"], "succeeded");

    let marker = format!("cap_{}", ulid());
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            &format!("SELECT number AS {marker} FROM system.numbers"),
            Some(10),
            None,
        )
        .await;
    let result = answer.expect(200).json();
    assert_eq!(result["row_count"], 10);
    assert_eq!(result["truncated"], true);
    gone(&server, &marker).await;

    let (_, answer) = console
        .query(&alice(), &db, &credentials[0], "SELEC 1", None, None)
        .await;
    let error = answer.expect(422).json();
    assert!(
        error["errors"]["query"][0]
            .as_str()
            .unwrap()
            .contains("Syntax error"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_and_the_cancel_end_statements_on_the_server() {
    let server = admin();
    let console = Arc::new(run_console());
    let (db, credentials) = console
        .database(
            "clickhouse",
            PORT,
            json!({"database": "default"}),
            json!([{"username": "checker", "password": PASSWORD, "timeout": 1}]),
        )
        .await;
    let marker = format!("timeout_{}", ulid());
    let run = {
        let (console, db, credential) = (Arc::clone(&console), db.clone(), credentials[0].clone());
        let statement = format!("SELECT count() AS {marker} FROM system.numbers");
        tokio::spawn(async move {
            console
                .query(&alice(), &db, &credential, &statement, None, None)
                .await
        })
    };
    // The statement runs on the server, then the timeout ends it there.
    let (_, answer) = seen_running_then(run, &marker, || running(&server, &marker)).await;
    answer.expect(504);
    gone(&server, &marker).await;

    let (db, credentials) = console
        .database(
            "clickhouse",
            PORT,
            json!({"database": "default"}),
            checker(),
        )
        .await;
    let marker = format!("cancel_{}", ulid());
    let created = console
        .create_query(
            &alice(),
            &db,
            &credentials[0],
            &format!("SELECT count() AS {marker} FROM system.numbers"),
            None,
        )
        .await
        .expect(200)
        .json();
    let id = created["id"].as_str().unwrap().to_owned();
    let run = {
        let console = Arc::clone(&console);
        tokio::spawn(async move { console.run(&alice(), &id, None).await })
    };
    eventually(DEADLINE, "the statement starts", || async {
        running(&server, &marker).await.then_some(())
    })
    .await;
    run.abort();
    gone(&server, &marker).await;
}

/// `describe_tables` (the MCP endpoint's tool) lists a table's columns with their ClickHouse
/// types, for an agent on an `ai_enabled` database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_describes_the_tables() {
    let server = admin();
    let table = format!("described_{}", std::process::id());
    server
        .query("CREATE DATABASE IF NOT EXISTS checkdb")
        .execute()
        .await
        .unwrap();
    server
        .query(&format!(
            "CREATE TABLE IF NOT EXISTS checkdb.{table} (id UInt32, note Nullable(String)) \
             ENGINE = Memory"
        ))
        .execute()
        .await
        .unwrap();
    let console = run_console();
    let credential = json!([{"username": "checker", "password": PASSWORD, "ai_allowed": true}]);
    let (db, _) = console
        .database("clickhouse", PORT, json!({"ai_enabled": true}), credential)
        .await;
    let described = console.describe(&alice(), &db).await;
    server
        .query(&format!("DROP TABLE checkdb.{table}"))
        .execute()
        .await
        .unwrap();
    let found = described["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table.as_str())
        .unwrap_or_else(|| panic!("{table} is not described: {described}"));
    assert_eq!(found["schema"], "checkdb");
    assert_eq!(
        found["columns"],
        json!([
            {"name": "id", "type": "UInt32", "nullable": false, "masked": false},
            {"name": "note", "type": "Nullable(String)", "nullable": true, "masked": false},
        ])
    );
}

/// On ClickHouse, data protection can't check a statement yet: every query on a database
/// with policies is refused (422 naming them), nothing runs, and a database without
/// policies runs as before (docs/data-protection.md, "Data protection").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_with_policies_runs_nothing_yet() {
    let console = run_console();
    let (db, credentials) = console
        .database("clickhouse", PORT, json!({}), checker())
        .await;
    console
        .protect(
            &db,
            &json!({"policies": [{"name": "pii", "columns": [
                {"column": "users.email", "action": "mask"}
            ]}]}),
        )
        .await;
    let (id, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 1 AS one",
            None,
            None,
        )
        .await;
    let refused = answer.expect(422).json();
    let message = refused["errors"]["query"][0].as_str().unwrap();
    assert!(
        message.contains("\"pii\"") && message.contains("users.email"),
        "{message}"
    );
    assert_eq!(
        console.history(&alice(), &id).await["status"],
        "ready",
        "a refused run leaves its query ready"
    );
    let (plain, _) = console
        .database("clickhouse", PORT, json!({}), checker())
        .await;
    let plain_credentials = console
        .send(
            http::Method::GET,
            &format!("/api/v1/console/databases/{plain}"),
            None,
            None,
            None,
        )
        .await
        .expect(200)
        .json();
    let credential = plain_credentials["credentials"][0]["id"].as_str().unwrap();
    let (_, answer) = console
        .query(&alice(), &plain, credential, "SELECT 1 AS one", None, None)
        .await;
    assert_eq!(answer.expect(200).json()["rows"], json!([[1]]));
}
