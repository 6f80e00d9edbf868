//! Running queries against a real MariaDB (`.ci/db-servers-up.sh`: 127.0.0.1:3306, account
//! `checker`/`checkpw`, database `checkdb`): typed results, the row cap, the timeout and the
//! cancel enforced on the server (seen in `information_schema.PROCESSLIST`), and panel inputs
//! as bind parameters in a read-only transaction.

mod run_support;

use std::sync::Arc;

use dbconsole_tests::eventually;
use mysql_async::prelude::Queryable as _;
use run_support::*;
use serde_json::{Value, json};

const PORT: u16 = 3306;

/// The `checker` account, with a timeout of [`OUTLIVES`] (not the default 30 s, as long as
/// [`DEADLINE`]): a statement a test waits to see end on the server is ended by what the test
/// checks (a cancel, a shorter timeout, the row cap), never by the credential's timeout.
fn checker() -> Value {
    json!([{"username": "checker", "password": PASSWORD, "timeout": OUTLIVES}])
}

/// Whether a statement holding `marker` still runs on the server.
async fn running(conn: &mut mysql_async::Conn, marker: &str) -> bool {
    let count: Option<i64> = conn
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE INFO LIKE ? AND ID <> CONNECTION_ID()",
            (format!("%{marker}%"),),
        )
        .await
        .expect("the process list");
    count.unwrap_or(0) > 0
}

/// Waits (at most [`DEADLINE`]) for a statement holding `marker` to run on the server
/// (`runs`), or to be gone from it.
async fn until_running(conn: &mut mysql_async::Conn, marker: &str, runs: bool) {
    let what = if runs {
        format!("the statement {marker} runs on the server")
    } else {
        format!("the statement {marker} ends on the server")
    };
    // One check at a time borrows the connection.
    let conn = tokio::sync::Mutex::new(conn);
    eventually(DEADLINE, &what, || async {
        (running(&mut **conn.lock().await, marker).await == runs).then_some(())
    })
    .await;
}

async fn gone(conn: &mut mysql_async::Conn, marker: &str) {
    until_running(conn, marker, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_keep_their_types_and_the_cap_holds() {
    let mut server = mysql_admin().await;
    let console = run_console();
    let (db, credentials) = console.database("mysql", PORT, json!({}), checker()).await;
    let statement = "SELECT 9007199254740993 AS big, 42 AS small, CAST(12.50 AS DECIMAL(6,2)) AS price, \
         'a,b' AS t, X'00FF' AS b, DATE '2024-02-29' AS d, \
         TIMESTAMP '2024-02-03 04:05:06.5' AS at, NULL AS n, 1.5e0 AS f";
    let (id, answer) = console
        .query(&alice(), &db, &credentials[0], statement, None, None)
        .await;
    let result = answer.expect(200).json();
    assert_eq!(
        result["rows"],
        json!([[
            "9007199254740993",
            42,
            "12.50",
            "a,b",
            "AP8=",
            "2024-02-29",
            "2024-02-03T04:05:06.500000",
            null,
            1.5
        ]]),
        "{result}"
    );
    assert_eq!(result["columns"][4]["encoding"], "base64");
    assert_eq!(result["columns"][2]["type"], "newdecimal");
    assert_eq!(console.history(&alice(), &id).await["status"], "succeeded");

    let marker = format!("cap_{}", ulid());
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            &format!("SELECT seq AS {marker} FROM seq_1_to_50000000000"),
            Some(10),
            Some("text/csv"),
        )
        .await;
    let csv = answer.expect(200).text();
    assert_eq!(csv.lines().count(), 11, "{csv}");
    gone(&mut server, &marker).await;

    let several = console
        .create_query(&alice(), &db, &credentials[0], "SELECT 1; SELECT 2", None)
        .await
        .expect(422)
        .json();
    assert!(several["errors"]["query"].is_array());
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT * FROM no_such_table",
            None,
            None,
        )
        .await;
    let error = answer.expect(422).json();
    assert!(
        error["errors"]["query"][0]
            .as_str()
            .unwrap()
            .contains("doesn't exist"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_and_the_cancel_end_statements_on_the_server() {
    let mut server = mysql_admin().await;
    let console = Arc::new(run_console());
    let (db, credentials) = console
        .database(
            "mysql",
            PORT,
            json!({}),
            json!([{"username": "checker", "password": PASSWORD, "timeout": 1}]),
        )
        .await;
    let marker = format!("timeout_{}", ulid());
    let run = {
        let (console, db, credential) = (Arc::clone(&console), db.clone(), credentials[0].clone());
        let statement = format!("SELECT SLEEP({OUTLIVES}) AS {marker} FROM seq_1_to_2");
        tokio::spawn(async move {
            console
                .query(&alice(), &db, &credential, &statement, None, None)
                .await
        })
    };
    // The statement runs on the server, then the timeout ends it there.
    let (_, answer) = {
        // One check at a time borrows the connection.
        let conn = tokio::sync::Mutex::new(&mut server);
        seen_running_then(run, &marker, || async {
            running(&mut **conn.lock().await, &marker).await
        })
        .await
    };
    answer.expect(504);
    gone(&mut server, &marker).await;

    let (db, credentials) = console.database("mysql", PORT, json!({}), checker()).await;
    let marker = format!("cancel_{}", ulid());
    let created = console
        .create_query(
            &alice(),
            &db,
            &credentials[0],
            &format!("SELECT SLEEP({OUTLIVES}) AS {marker}"),
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
    until_running(&mut server, &marker, true).await;
    run.abort();
    gone(&mut server, &marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panel_inputs_are_values_in_a_read_only_transaction() {
    let mut server = mysql_admin().await;
    let table = format!("run_panel_{}", ulid());
    server
        .query_drop(format!(
            "CREATE TABLE {table} (id INT PRIMARY KEY, name TEXT); \
             INSERT INTO {table} VALUES (1, 'one'), (2, 'two')"
        ))
        .await
        .expect("a table");
    let console = run_console();
    let (_, credentials) = console.database("mysql", PORT, json!({}), checker()).await;
    let panel = |query: String| {
        json!({
            "title": "p",
            "inputs": [{"key": "id", "description": ""}, {"key": "name", "description": ""}],
            "details": {"__type__": "query", "query": query, "credential_id": credentials[0]},
        })
    };
    let dashboard = console
        .send(
            http::Method::POST,
            "/v1/dashboards",
            Some(root()),
            None,
            Some(&json!({"name": "panels", "restricted_access": false, "panels": [
                panel(format!("SELECT id, name, ${{name}} AS given FROM {table} WHERE id = ${{id}}")),
                panel(format!("DELETE FROM {table} WHERE id = ${{id}} OR name = ${{name}}")),
            ]})),
        )
        .await
        .expect(200)
        .json();
    let path = |i: usize| {
        format!(
            "/v1/dashboards/{}/panels/{}/run",
            dashboard["id"].as_str().unwrap(),
            dashboard["panels"][i]["id"].as_str().unwrap()
        )
    };
    let hostile = format!("'; DROP TABLE {table}; --");
    let result = console
        .send(
            http::Method::POST,
            &path(0),
            Some(alice()),
            None,
            Some(&json!({"inputs": {"id": "2", "name": hostile}})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(result["rows"], json!([[2, "two", hostile]]));
    let write = console
        .send(
            http::Method::POST,
            &path(1),
            Some(alice()),
            None,
            Some(&json!({"inputs": {"id": "1", "name": "one"}})),
        )
        .await
        .expect(422)
        .json();
    assert!(
        write["errors"]["query"][0]
            .as_str()
            .unwrap()
            .contains("run read-only"),
        "{write}"
    );
    let count: Option<i64> = server
        .query_first(format!("SELECT COUNT(*) FROM {table}"))
        .await
        .expect("the table is still there");
    assert_eq!(count, Some(2));
    server
        .query_drop(format!("DROP TABLE {table}"))
        .await
        .expect("cleanup");
}

/// `describe_tables` (the MCP endpoint's tool) lists a table's columns with their MySQL types,
/// read-only, for an agent on an `ai_enabled` database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_describes_the_tables() {
    let mut server = mysql_admin().await;
    let table = format!("described_{}", std::process::id());
    mysql_async::prelude::Queryable::query_drop(
        &mut server,
        format!("CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, note VARCHAR(20) NULL)"),
    )
    .await
    .unwrap();
    let console = run_console();
    let credential = json!([{"username": "checker", "password": PASSWORD, "ai_allowed": true}]);
    let (db, _) = console
        .database("mysql", PORT, json!({"ai_enabled": true}), credential)
        .await;
    let described = console.describe(&alice(), &db).await;
    let found = described["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table.as_str())
        .unwrap_or_else(|| panic!("{table} is not described: {described}"))
        .clone();
    mysql_async::prelude::Queryable::query_drop(&mut server, format!("DROP TABLE {table}"))
        .await
        .unwrap();
    assert_eq!(found["schema"], "checkdb");
    assert_eq!(
        found["columns"],
        json!([
            {"name": "id", "type": "int(11)", "nullable": false, "masked": false},
            {"name": "note", "type": "varchar(20)", "nullable": true, "masked": false},
        ])
    );
}

/// A row over the server's bounds is refused by the driver before it is read whole (its
/// client-side `max_allowed_packet`), in the first row (422) or after others (the result's
/// error); a value over the value's bound by the encoder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_and_rows_over_the_bounds_are_refused() {
    let _server = mysql_admin().await;
    let console = bounded_console(1024 * 1024, 1536 * 1024);
    let (db, credentials) = console.database("mysql", PORT, json!({}), checker()).await;
    let run = |statement: &'static str| {
        let (console, db, credential) = (&console, &db, &credentials[0]);
        async move {
            console
                .query(&alice(), db, credential, statement, None, None)
                .await
                .1
        }
    };
    let fine = run("SELECT REPEAT('x', 1048576) AS v")
        .await
        .expect(200)
        .json();
    assert_eq!(fine["rows"][0][0].as_str().map(str::len), Some(1_048_576));
    let value = run("SELECT REPEAT('x', 1048577) AS v")
        .await
        .expect(422)
        .text();
    assert!(value.contains("over this server's bound"), "{value}");
    // Over the row's bound and its framing: the driver refuses the packet.
    let row = run("SELECT REPEAT('x', 3000000) AS v")
        .await
        .expect(422)
        .text();
    assert!(row.contains("bytes a row"), "{row}");
    assert!(!row.contains("xxxx"), "nothing of the value is sent");
    let late = run(
        "SELECT g, CASE WHEN g = 3 THEN REPEAT('x', 3000000) ELSE 'small' END AS v \
         FROM (SELECT 1 AS g UNION ALL SELECT 2 UNION ALL SELECT 3) t ORDER BY g",
    )
    .await
    .expect(200)
    .json();
    assert_eq!(late["rows"], json!([[1, "small"], [2, "small"]]), "{late}");
    assert!(
        late["error"]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("over this server's bound"),
        "{late}"
    );
}

/// A write that returns no rows says how many it changed, in its answer and its history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_says_how_many_rows_it_changed() {
    let console = run_console();
    let (db, credentials) = console.database("mysql", PORT, json!({}), checker()).await;
    let table = format!("affected_{}", std::process::id());
    for statement in [
        format!("DROP TABLE IF EXISTS {table}"),
        format!("CREATE TABLE {table} (id INT)"),
        format!("INSERT INTO {table} VALUES (1), (2), (3), (4)"),
    ] {
        let (_, answer) = console
            .query(&alice(), &db, &credentials[0], &statement, None, None)
            .await;
        answer.expect(200);
    }
    let (id, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            &format!("DELETE FROM {table} WHERE id > 1"),
            None,
            None,
        )
        .await;
    assert_eq!(answer.expect(200).json()["affected_rows"], 3);
    assert_eq!(
        console.history(&alice(), &id).await["run"]["affected_rows"],
        3
    );
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            &format!("DROP TABLE {table}"),
            None,
            None,
        )
        .await;
    answer.expect(200);
}

/// A typed panel's values reach MariaDB as parameters: one with a quote, a backslash and a tab
/// comes back whole, an optional blank one is NULL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_inputs_bind_whole_values_and_null() {
    let console = run_console();
    let (_, credentials) = console.database("mysql", PORT, json!({}), checker()).await;
    let credential = &credentials[0];
    let (given, result) = typed_panel_run(
        &console,
        credential,
        "SELECT ${given} AS given, ${blank} IS NULL AS blank_is_null",
    )
    .await;
    assert_eq!(result["rows"], json!([[given, 1]]), "{result}");
}
