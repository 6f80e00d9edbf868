//! Running queries against a real PostgreSQL (`.ci/db-servers-up.sh`: 127.0.0.1:5432, role
//! `checker`/`checkpw`, database `checkdb`): results and their types in every format, the row
//! cap, the timeout and the cancel enforced on the server (seen in `pg_stat_activity`), a run
//! happening once, access rules and AI caps, panel inputs as bind parameters, and the audit
//! event of a run. Principals come from the embedding program (`trust_principal`), as in an
//! application that mounts the service behind its own login.

mod run_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use dbconsole_core::model::Principal;
use dbconsole_tests::eventually;
use http::{Method, StatusCode};
use run_support::*;
use serde_json::{Value, json};

const PORT: u16 = 5432;

/// The `checker` account, with a timeout of [`OUTLIVES`] (not the default 30 s, as long as
/// [`DEADLINE`]): a statement a test waits to see end on the server is ended by what the test
/// checks (a cancel, a shorter timeout, the row cap), never by the credential's timeout.
fn checker() -> Value {
    json!([{"username": "checker", "password": PASSWORD, "timeout": OUTLIVES}])
}

/// Whether a statement holding `marker` is still active on the server.
async fn active(client: &tokio_postgres::Client, marker: &str) -> bool {
    let row = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 \
             AND pid <> pg_backend_pid()",
            &[&format!("%{marker}%")],
        )
        .await
        .expect("pg_stat_activity");
    row.get::<_, i64>(0) > 0
}

/// Waits (at most [`DEADLINE`]) for no statement holding `marker` to be active; how long it
/// took (printed, not asserted: the benches measure it).
async fn gone(client: &tokio_postgres::Client, marker: &str) -> Duration {
    let started = Instant::now();
    eventually(
        DEADLINE,
        &format!("the statement {marker} ends on the server"),
        || async { (!active(client, marker).await).then_some(()) },
    )
    .await;
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_keep_their_types_in_every_format() {
    postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let statement = "SELECT 9007199254740993::int8 AS big, 42::int4 AS small, 12.50::numeric(6,2) AS price, \
         'a,\"b\"'::text AS t, '\\x00ff'::bytea AS b, '{\"k\": [1, null]}'::jsonb AS j, \
         TIMESTAMPTZ '2024-02-03 04:05:06.789+00' AS at, DATE '2024-02-29' AS d, NULL::text AS n, \
         true AS yes, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, 1.5::float8 AS f, \
         INTERVAL '1 day 2 hours' AS i, ARRAY[1, 2, NULL]::int4[] AS arr, \
         ARRAY[['a', 'b'], ['c', 'd']] AS grid";
    let (id, answer) = console
        .query(&alice(), &db, &credentials[0], statement, None, None)
        .await;
    let answer = answer.expect(200);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let result = answer.json();
    let types: Vec<&str> = result["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "int8",
            "int4",
            "numeric",
            "text",
            "bytea",
            "jsonb",
            "timestamptz",
            "date",
            "text",
            "bool",
            "uuid",
            "float8",
            "interval",
            "_int4",
            "_text"
        ]
    );
    assert_eq!(result["columns"][4]["encoding"], "base64");
    assert_eq!(
        result["rows"],
        json!([[
            "9007199254740993",
            42,
            "12.50",
            "a,\"b\"",
            "AP8=",
            {"k": [1, null]},
            "2024-02-03T04:05:06.789Z",
            "2024-02-29",
            null,
            true,
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            1.5,
            "P1DT2H",
            [1, 2, null],
            [["a", "b"], ["c", "d"]]
        ]])
    );
    assert_eq!(result["row_count"], 1);
    assert_eq!(result["truncated"], false);
    let history = console.history(&alice(), &id).await;
    assert_eq!(history["status"], "succeeded");
    assert_eq!(history["run"]["row_count"], 1);
    assert_eq!(history["run"]["run_by"], "alice@example.com");

    let (_, csv) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 1 AS a, 'x,y' AS b, NULL AS c UNION ALL SELECT 2, 'z', 'w'",
            None,
            Some("text/csv"),
        )
        .await;
    let csv = csv.expect(200);
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(csv.text(), "a,b,c\r\n1,\"x,y\",\r\n2,z,w\r\n");

    let (_, ndjson) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT g FROM generate_series(1, 3) g",
            None,
            Some("application/x-ndjson"),
        )
        .await;
    let lines: Vec<Value> = ndjson
        .expect(200)
        .text()
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON document per line"))
        .collect();
    assert_eq!(lines[0]["columns"][0]["name"], "g");
    assert_eq!(&lines[1..4], [json!([1]), json!([2]), json!([3])]);
    assert_eq!(lines[4]["row_count"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_row_cap_truncates_and_a_query_runs_once() {
    postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let (id, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT g FROM generate_series(1, 1000000) g",
            Some(10),
            None,
        )
        .await;
    let result = answer.expect(200).json();
    assert_eq!(result["rows"].as_array().unwrap().len(), 10);
    assert_eq!(result["row_count"], 10);
    assert_eq!(result["truncated"], true);
    let history = console.history(&alice(), &id).await;
    assert_eq!(history["run"]["truncated"], true);
    assert_eq!(history["run"]["row_count"], 10);

    let again = console.run(&alice(), &id, None).await.expect(409).json();
    assert!(
        again["errors"]["detail"]
            .as_str()
            .unwrap()
            .contains("already ran"),
        "{again}"
    );

    // Exactly as many rows as the cap: not truncated.
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT g FROM generate_series(1, 10) g",
            Some(10),
            None,
        )
        .await;
    assert_eq!(answer.expect(200).json()["truncated"], false);

    // Over the server's maximum: refused.
    let over = console
        .create_query(&alice(), &db, &credentials[0], "SELECT 1", Some(1_001))
        .await
        .expect(422)
        .json();
    assert!(over["errors"]["limit"].is_array(), "{over}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_statements_are_client_errors_and_the_history_says_so() {
    postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let several = console
        .create_query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 1; DROP TABLE t",
            None,
        )
        .await
        .expect(422)
        .json();
    assert!(
        several["errors"]["query"][0]
            .as_str()
            .unwrap()
            .contains("more than one statement"),
        "{several}"
    );
    // A semicolon inside a literal is part of one statement.
    console
        .create_query(&alice(), &db, &credentials[0], "SELECT ';' AS s;", None)
        .await
        .expect(200);

    // A database that echoes a secret in its message: scrubbed.
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 'checkpw'::int",
            None,
            None,
        )
        .await;
    let echoed = answer.expect(422).text();
    assert!(
        echoed.contains("[REDACTED]") && !echoed.contains("checkpw"),
        "{echoed}"
    );

    let (id, answer) = console
        .query(&alice(), &db, &credentials[0], "SELEC 1", None, None)
        .await;
    let error = answer.expect(422).json();
    assert!(
        error["errors"]["query"][0]
            .as_str()
            .unwrap()
            .contains("syntax error"),
        "{error}"
    );
    let history = console.history(&alice(), &id).await;
    assert_eq!(history["status"], "failed");
    assert!(
        history["run"]["error"]
            .as_str()
            .unwrap()
            .contains("syntax error")
    );

    // An error after the first rows: the JSON ends with an error member, the CSV is cut off.
    let failing = "SELECT 10 / (5 - g) AS x FROM generate_series(1, 10) g";
    let (id, answer) = console
        .query(&alice(), &db, &credentials[0], failing, None, None)
        .await;
    let result = answer.expect(200).json();
    assert_eq!(result["rows"], json!([[2], [3], [5], [10]]));
    assert!(
        result["error"]["detail"]
            .as_str()
            .unwrap()
            .contains("division by zero"),
        "{result}"
    );
    assert_eq!(console.history(&alice(), &id).await["status"], "failed");
    let (_, csv) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            failing,
            None,
            Some("text/csv"),
        )
        .await;
    assert_eq!(csv.status, StatusCode::OK);
    let cut = csv.cut.expect("a failed CSV is cut off");
    assert!(cut.contains("division by zero"), "{cut}");

    // The wrong password: the database could not be reached (502), and no secret is said.
    let (db, credentials) = console
        .database(
            "postgres",
            PORT,
            json!({}),
            json!([{"username": "checker", "password": "Wr0ng-Pa55word-7731"}]),
        )
        .await;
    let (_, answer) = console
        .query(&alice(), &db, &credentials[0], "SELECT 1", None, None)
        .await;
    let text = answer.expect(502).text();
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("Wr0ng-Pa55word-7731"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_over_its_timeout_ends_on_the_server() {
    let server = postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database(
            "postgres",
            PORT,
            json!({}),
            json!([{"username": "checker", "password": PASSWORD, "timeout": 1}]),
        )
        .await;
    let marker = format!("timeout_{}", ulid());
    let statement = format!("SELECT pg_sleep({OUTLIVES}) AS {marker}");
    let run = {
        let (console, db, credential) = (console.clone(), db.clone(), credentials[0].clone());
        tokio::spawn(async move {
            console
                .query(&alice(), &db, &credential, &statement, None, None)
                .await
        })
    };
    // The statement runs on the server, then the timeout ends it there.
    let (id, answer) = seen_running_then(run, &marker, || active(&server, &marker)).await;
    let error = answer.expect(504).json();
    assert!(
        error["errors"]["detail"]
            .as_str()
            .unwrap()
            .contains("timeout of 1 s"),
        "{error}"
    );
    let took = gone(&server, &marker).await;
    println!("gone from the server {took:?} after the timeout's answer");
    let history = console.history(&alice(), &id).await;
    assert_eq!(history["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_its_statement_on_the_server() {
    let server = postgres_admin().await;
    let console = Arc::new(run_console());
    // In plain text and over TLS (the runner opens its sessions on its own socket, and its
    // cancel request goes to the same address the same way).
    let ca = std::fs::read(
        std::env::var_os("DBCONSOLE_CI_CERTS")
            .map_or_else(
                || "/tmp/dbconsole-ci-certs".into(),
                std::path::PathBuf::from,
            )
            .join("ca-bundle.pem"),
    )
    .expect("the CI certificates (.ci/db-servers-up.sh)");
    let tls = json!({
        "ssl": true,
        "ssl_ca_cert": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca),
    });
    for extra in [json!({}), tls] {
        let (db, credentials) = console
            .database("postgres", PORT, extra.clone(), checker())
            .await;
        let (_, answer) = console
            .query(
                &alice(),
                &db,
                &credentials[0],
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                None,
                None,
            )
            .await;
        assert_eq!(
            answer.expect(200).json()["rows"],
            json!([[extra.get("ssl").is_some()]])
        );
        let marker = format!("cancel_{}", ulid());
        let statement = format!("SELECT pg_sleep({OUTLIVES}) AS {marker}");
        let created = console
            .create_query(&alice(), &db, &credentials[0], &statement, None)
            .await
            .expect(200)
            .json();
        let id = created["id"].as_str().unwrap().to_owned();
        let run = {
            let console = Arc::clone(&console);
            let id = id.clone();
            tokio::spawn(async move { console.run(&alice(), &id, None).await })
        };
        eventually(DEADLINE, "the statement starts", || async {
            active(&server, &marker).await.then_some(())
        })
        .await;
        // The client goes away: its request (and the body it would have read) is dropped.
        run.abort();
        let took = gone(&server, &marker).await;
        println!("cancelled on the server {took:?} after the client went away ({extra})");
        // The history records the cancel.
        let history = eventually(DEADLINE, "the history says the run failed", || async {
            let history = console.history(&alice(), &id).await;
            (history["status"] == "failed").then_some(history)
        })
        .await;
        assert!(
            history["run"]["error"]
                .as_str()
                .unwrap()
                .contains("went away")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restricted_databases_refuse_the_unauthorized() {
    postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database(
            "postgres",
            PORT,
            json!({"restrict_access": true}),
            checker(),
        )
        .await;
    let refused = console
        .create_query(&alice(), &db, &credentials[0], "SELECT 1", None)
        .await
        .expect(403)
        .json();
    assert!(
        refused["errors"]["detail"]
            .as_str()
            .unwrap()
            .contains("no access"),
        "{refused}"
    );
    // A super admin may.
    let (_, answer) = console
        .query(&root(), &db, &credentials[0], "SELECT 1 AS one", None, None)
        .await;
    answer.expect(200);
    // A group grant lets alice in.
    console
        .send(
            Method::PUT,
            &format!("/api/v1/console/databases/{db}/permissions"),
            None,
            None,
            Some(&json!({"permissions": [
                {"subject_kind": "group", "subject": "analysts", "access": "query"}
            ]})),
        )
        .await
        .expect(200);
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 1 AS one",
            None,
            None,
        )
        .await;
    answer.expect(200);
    let bob = Principal::member("bob@example.com");
    console
        .create_query(&bob, &db, &credentials[0], "SELECT 1", None)
        .await
        .expect(403);
    // Without a principal (the management API key): refused, saying why.
    let anonymous = console
        .send(
            Method::POST,
            QUERIES,
            None,
            None,
            Some(&json!({"database_id": db, "credential_id": credentials[0], "query": "SELECT 1"})),
        )
        .await
        .expect(403)
        .json();
    assert!(
        anonymous["errors"]["detail"]
            .as_str()
            .unwrap()
            .contains("needs a user")
    );
    // Bob sees nothing of alice's history on a database he may not query.
    let listed = console
        .send(
            Method::GET,
            &format!("{QUERIES}?database_id={db}"),
            Some(bob),
            None,
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["data"], json!([]));
    // A panel on it runs only for those who may query it, on an unrestricted dashboard too;
    // saving such a dashboard says so in a header.
    let saved = console
        .send(
            Method::POST,
            "/v1/dashboards",
            Some(root()),
            None,
            Some(
                &json!({"name": "open", "restricted_access": false, "panels": [
                    {"title": "p", "details": {"__type__": "query", "query": "SELECT 1 AS one",
                     "credential_id": credentials[0]}}
                ]}),
            ),
        )
        .await
        .expect(200);
    let notice = saved
        .header("dbconsole-notice")
        .unwrap_or_default()
        .to_owned();
    assert!(notice.contains(&db), "{notice}");
    let dashboard = saved.json();
    let path = format!(
        "/v1/dashboards/{}/panels/{}/run",
        dashboard["id"].as_str().unwrap(),
        dashboard["panels"][0]["id"].as_str().unwrap()
    );
    let bob = Principal::member("bob@example.com");
    let refused = console
        .send(Method::POST, &path, Some(bob), None, Some(&json!({})))
        .await
        .expect(403);
    assert!(refused.text().contains("no access"), "{}", refused.text());
    console
        .send(Method::POST, &path, Some(alice()), None, Some(&json!({})))
        .await
        .expect(200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_agents_keep_to_the_ai_limits() {
    postgres_admin().await;
    let console = run_console();
    let agent = alice().agent(true);
    let credentials = json!([
        {"username": "checker", "password": PASSWORD, "ai_allowed": true},
        {"username": "certuser"},
    ]);
    let (off, off_credentials) = console
        .database("postgres", PORT, json!({}), credentials.clone())
        .await;
    console
        .create_query(&agent, &off, &off_credentials[0], "SELECT 1", None)
        .await
        .expect(403);
    let (db, ids) = console
        .database(
            "postgres",
            PORT,
            json!({"ai_enabled": true, "ai_max_rows": 5}),
            credentials,
        )
        .await;
    let refused = console
        .create_query(&agent, &db, &ids[1], "SELECT 1", None)
        .await
        .expect(403)
        .json();
    assert!(
        refused["errors"]["detail"]
            .as_str()
            .unwrap()
            .contains("ai_allowed")
    );
    let (_, answer) = console
        .query(
            &agent,
            &db,
            &ids[0],
            "SELECT g FROM generate_series(1, 100) g",
            Some(50),
            None,
        )
        .await;
    let result = answer.expect(200).json();
    assert_eq!(result["row_count"], 5);
    assert_eq!(result["truncated"], true);
    // A person gets the rows asked for.
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &ids[0],
            "SELECT g FROM generate_series(1, 100) g",
            Some(50),
            None,
        )
        .await;
    assert_eq!(answer.expect(200).json()["row_count"], 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panel_inputs_are_values_never_text() {
    let server = postgres_admin().await;
    let table = format!("run_panel_{}", ulid());
    server
        .batch_execute(&format!(
            "CREATE TABLE {table} (id int PRIMARY KEY, name text);
             INSERT INTO {table} VALUES (1, 'one'), (2, 'two');"
        ))
        .await
        .expect("a table");
    let console = run_console();
    let (_, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let (_, reviewed) = console
        .database(
            "postgres",
            PORT,
            json!({}),
            json!([{"username": "checker", "password": PASSWORD, "reviews_required": 1}]),
        )
        .await;
    let panel = |query: &str, credential: &str| {
        json!({
            "title": "p",
            "inputs": [{"key": "id", "description": ""}, {"key": "name", "description": ""}],
            "details": {"__type__": "query", "query": query, "credential_id": credential},
        })
    };
    let dashboard = console
        .send(
            Method::POST,
            "/v1/dashboards",
            Some(root()),
            None,
            Some(&json!({"name": "panels", "restricted_access": false, "panels": [
                panel(&format!("SELECT id, name, ${{name}} AS given FROM {table} WHERE id = ${{id}} OR name = '${{name}}'"), &credentials[0]),
                panel("SELECT ${id}::text || ${name}", "crd_nowhere"),
                panel("SELECT ${id}::text || ${name}", &reviewed[0]),
                panel(&format!("DELETE FROM {table} WHERE id = ${{id}} OR name = ${{name}}"), &credentials[0]),
                panel("SELECT set_config('default_transaction_read_only', 'off', false), ${id}::text || ${name}", &credentials[0]),
                panel("SELECT generate_series(1, 100000000) AS g, ${id}::text || ${name} AS s", &credentials[0]),
                panel("SELECT ${id}::date AS d, ${name}::text AS n", &credentials[0]),
            ]})),
        )
        .await
        .expect(200)
        .json();
    let dashboard_id = dashboard["id"].as_str().unwrap();
    let panel_ids: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    let run = |panel: usize, inputs: Value| {
        let path = format!(
            "/v1/dashboards/{dashboard_id}/panels/{}/run",
            panel_ids[panel]
        );
        let console = &console;
        async move {
            console
                .send(
                    Method::POST,
                    &path,
                    Some(alice()),
                    None,
                    Some(&json!({ "inputs": inputs })),
                )
                .await
        }
    };
    let hostile = format!("'; DROP TABLE {table}; --");
    let result = run(0, json!({"id": "2", "name": hostile}))
        .await
        .expect(200)
        .json();
    assert_eq!(result["rows"], json!([[2, "two", hostile]]));
    let count: i64 = server
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .expect("the table is still there")
        .get(0);
    assert_eq!(count, 2);
    // Every run is one audit event with its facts and never its text or values. The event is
    // written as its run ends, which may come after its answer: wait for it before the next
    // run, so the oldest event is this run's.
    let panel_runs = || async {
        let audit = console
            .send(
                Method::GET,
                &format!("/api/v1/console/audit?resource={dashboard_id}"),
                None,
                None,
                None,
            )
            .await
            .expect(200)
            .json();
        let runs: Vec<Value> = audit["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|event| event["action"] == "panel.run")
            .cloned()
            .collect();
        (audit, runs)
    };
    let first = eventually(DEADLINE, "the panel run's audit event", || async {
        panel_runs().await.1.last().cloned()
    })
    .await;
    assert_eq!(first["run"]["outcome"], "succeeded", "{first}");
    assert_eq!(first["run"]["rows"], 1);
    assert_eq!(first["run"]["statement_sha256"].as_str().unwrap().len(), 64);

    let bad = run(0, json!({"id": "abc", "name": "x"}))
        .await
        .expect(422)
        .json();
    assert!(bad["errors"]["inputs.id"].is_array(), "{bad}");
    // A type the server inferred: the value that does not convert is named by its input.
    let date = run(6, json!({"id": "not-a-date", "name": "x"}))
        .await
        .expect(422)
        .json();
    assert!(
        date["errors"]["inputs.id"][0]
            .as_str()
            .unwrap()
            .contains("type date"),
        "{date}"
    );
    let fine = run(6, json!({"id": "2024-02-29", "name": "x"}))
        .await
        .expect(200)
        .json();
    assert_eq!(fine["rows"], json!([["2024-02-29", "x"]]));
    let missing = run(0, json!({"id": "1"})).await.expect(422).json();
    assert!(missing["errors"]["inputs.name"].is_array(), "{missing}");
    // A NUL character, which PostgreSQL text can't hold, is the input's fault, not the query's.
    let nul = run(0, json!({"id": "1", "name": "a\u{0}b"}))
        .await
        .expect(422)
        .json();
    assert!(
        nul["errors"]["inputs.name"][0]
            .as_str()
            .unwrap()
            .contains("NUL"),
        "{nul}"
    );
    let unknown = run(0, json!({"id": "1", "name": "x", "other": "y"}))
        .await
        .expect(422)
        .json();
    assert!(unknown["errors"]["inputs.other"].is_array(), "{unknown}");
    let nowhere = run(1, json!({"id": "1", "name": "x"}))
        .await
        .expect(422)
        .json();
    assert!(
        nowhere["errors"]["credential_id"][0]
            .as_str()
            .unwrap()
            .contains("names no stored credential"),
        "{nowhere}"
    );
    run(2, json!({"id": "1", "name": "x"})).await.expect(422);
    // Panels are read-only: a write is refused by the server, and changes nothing.
    let write = run(3, json!({"id": "1", "name": "one"}))
        .await
        .expect(422)
        .json();
    assert!(
        write["errors"]["query"][0]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{write}"
    );
    let count: i64 = server
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .expect("the table")
        .get(0);
    assert_eq!(count, 2);
    // A panel that turns read-only off for its session does so only inside its own rolled
    // back transaction: the next panels (on the pool's sessions) stay read-only.
    for _ in 0..3 {
        run(4, json!({"id": "1", "name": "x"})).await.expect(200);
        run(3, json!({"id": "1", "name": "one"})).await.expect(422);
    }
    // The same panel again (its statement kept prepared) answers the same.
    for _ in 0..3 {
        let again = run(0, json!({"id": "1", "name": "x"}))
            .await
            .expect(200)
            .json();
        assert_eq!(again["rows"], json!([[1, "one", "x"]]));
    }
    // A capped panel stops its statement on the server.
    let capped = console
        .send(
            Method::POST,
            &format!("/v1/dashboards/{dashboard_id}/panels/{}/run", panel_ids[5]),
            Some(alice()),
            None,
            Some(&json!({"inputs": {"id": "7", "name": "capped"}, "limit": 5})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(capped["row_count"], 5);
    assert_eq!(capped["truncated"], true);
    gone(&server, "generate_series(1, 100000000)").await;

    let (audit, runs) = panel_runs().await;
    assert!(runs.len() > 1, "{audit}");
    assert!(
        runs.iter()
            .all(|event| event["run"]["statement_sha256"].as_str().unwrap().len() == 64),
        "{audit}"
    );
    assert!(!audit.to_string().contains("DROP TABLE"), "{audit}");
    server
        .batch_execute(&format!("DROP TABLE {table}"))
        .await
        .expect("cleanup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_or_deleted_database_drops_its_sessions() {
    let server = postgres_admin().await;
    let console = run_console();
    let marker = format!("pool_{}", ulid());
    let (db, credentials) = console
        .database(
            "postgres",
            PORT,
            json!({"connection_parameters": [{"name": "application_name", "value": marker}]}),
            checker(),
        )
        .await;
    let sessions = || {
        let server = &server;
        let marker = marker.clone();
        async move {
            let row = server
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                    &[&marker],
                )
                .await
                .expect("pg_stat_activity");
            row.get::<_, i64>(0)
        }
    };
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 1 AS one",
            None,
            None,
        )
        .await;
    answer.expect(200);
    assert_eq!(sessions().await, 1, "the pool keeps its session");
    // A change: the pool goes, and the next run opens a session with the new settings.
    console
        .send(
            Method::PATCH,
            &format!("/api/v1/console/databases/{db}"),
            None,
            None,
            Some(&json!({"name": "renamed"})),
        )
        .await
        .expect(200);
    eventually(DEADLINE, "the session goes with its pool", || async {
        (sessions().await == 0).then_some(())
    })
    .await;
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 1 AS one",
            None,
            None,
        )
        .await;
    answer.expect(200);
    assert_eq!(sessions().await, 1);
    console
        .send(
            Method::DELETE,
            &format!("/api/v1/console/databases/{db}"),
            None,
            None,
            None,
        )
        .await
        .expect(200);
    eventually(DEADLINE, "the session goes with its database", || async {
        (sessions().await == 0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_pool_answers_busy_after_a_bounded_wait() {
    let server = postgres_admin().await;
    // The harness's pools hold 2 sessions and wait 500 ms for one.
    let console = Arc::new(run_console());
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let marker = format!("busy_{}", ulid());
    let mut holders = Vec::new();
    for _ in 0..2 {
        let created = console
            .create_query(
                &alice(),
                &db,
                &credentials[0],
                &format!("SELECT pg_sleep({OUTLIVES}) AS {marker}"),
                None,
            )
            .await
            .expect(200)
            .json();
        let id = created["id"].as_str().unwrap().to_owned();
        let console = Arc::clone(&console);
        holders.push(tokio::spawn(async move {
            console.run(&alice(), &id, None).await
        }));
    }
    eventually(DEADLINE, "both holders run", || async {
        let row = server
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1",
                &[&format!("%{marker}%")],
            )
            .await
            .unwrap();
        (row.get::<_, i64>(0) == 2).then_some(())
    })
    .await;
    // The holders sleep far longer than the deadline: a wait that was not bounded would not be
    // answered within it.
    let (_, answer) = tokio::time::timeout(
        DEADLINE,
        console.query(&alice(), &db, &credentials[0], "SELECT 1", None, None),
    )
    .await
    .expect("a bounded wait: answered while both sessions are held");
    let busy = answer.expect(503).json();
    assert!(
        busy["errors"]["detail"].as_str().unwrap().contains("busy"),
        "{busy}"
    );
    for holder in holders {
        holder.abort();
    }
    gone(&server, &marker).await;
}

/// A value or a row over the server's bounds refuses the result, in the first row (422) or
/// after others (the result's error), and nothing of it reaches the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_and_rows_over_the_bounds_are_refused() {
    postgres_admin().await;
    let console = bounded_console(1024 * 1024, 1536 * 1024);
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let fits = "SELECT length(repeat('x', 1048576)) AS n, repeat('x', 1048576) AS v";
    let (_, answer) = console
        .query(&alice(), &db, &credentials[0], fits, None, None)
        .await;
    let fine = answer.expect(200).json();
    assert_eq!(fine["rows"][0][0], 1_048_576);
    for accept in [None, Some("application/x-ndjson"), Some("text/csv")] {
        let (_, answer) = console
            .query(
                &alice(),
                &db,
                &credentials[0],
                "SELECT repeat('x', 1048577) AS v",
                None,
                accept,
            )
            .await;
        let text = answer.expect(422).text();
        assert!(text.contains("over this server's bound"), "{text}");
        assert!(!text.contains("xxxx"), "nothing of the value is sent");
    }
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT repeat('x', 800000) AS a, repeat('y', 800000) AS b",
            None,
            None,
        )
        .await;
    assert!(answer.expect(422).text().contains("bytes a row"));
    // After other rows: they are sent, then the result's error.
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT g, CASE WHEN g = 3 THEN repeat('x', 2000000) ELSE 'small' END AS v \
             FROM generate_series(1, 3) g ORDER BY g",
            None,
            None,
        )
        .await;
    let late = answer.expect(200).json();
    assert_eq!(late["rows"], json!([[1, "small"], [2, "small"]]), "{late}");
    assert!(
        late["error"]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("over this server's bound"),
        "{late}"
    );
}

/// "Run to CSV": the author asks for a download URL; its GET needs no other credential, streams
/// the query's one run as a CSV attachment, and works once (the query runs once); a changed
/// ticket is 410 and runs nothing; someone else may not ask for the author's download.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_url_streams_the_csv_once() {
    postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let created = console
        .create_query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT g AS n, '=1+1' AS formula FROM generate_series(1, 3) g",
            None,
        )
        .await
        .expect(200)
        .json();
    let id = created["id"].as_str().unwrap();
    let path = format!("{QUERIES}/{id}/download");
    let bob = dbconsole_core::model::Principal::member("bob@example.com");
    console
        .send(http::Method::POST, &path, Some(bob), None, None)
        .await
        .expect(403);
    let url = console
        .send(http::Method::POST, &path, Some(alice()), None, None)
        .await
        .expect(200)
        .json()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        url.starts_with("/api/v1/console/downloads/csv?ticket="),
        "{url}"
    );
    let get = |url: String| {
        let console = console.clone();
        async move {
            let request = http::Request::get(url)
                .body(http_body_util::Full::new(bytes::Bytes::new()))
                .unwrap();
            console.api.answer(request).await
        }
    };
    // A ticket changed by one character opens nothing, and runs nothing.
    let mut forged = url.clone().into_bytes();
    let last = forged.len() - 2;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    get(String::from_utf8(forged).unwrap()).await.expect(410);
    assert_eq!(console.history(&alice(), id).await["status"], "ready");
    let csv = get(url.clone()).await.expect(200);
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(
        csv.header("content-disposition"),
        Some(format!("attachment; filename=\"{id}.csv\"").as_str())
    );
    assert_eq!(
        csv.text(),
        "n,formula\r\n1,=1+1\r\n2,=1+1\r\n3,=1+1\r\n",
        "values as they are: a leading = is not rewritten"
    );
    get(url).await.expect(409);
    assert_eq!(console.history(&alice(), id).await["status"], "succeeded");
}

/// A run may ask for a shorter timeout than its credential's (the console's timeout field): the
/// service ends it then (504 naming it) and the statement leaves the server; a timeout that is
/// not 1 to 86,400 seconds is 422 and runs nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_may_ask_for_a_shorter_timeout() {
    let server = postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let marker = format!("shorter_{}", ulid());
    let created = console
        .create_query(
            &alice(),
            &db,
            &credentials[0],
            &format!("SELECT pg_sleep({OUTLIVES}) AS {marker}"),
            None,
        )
        .await
        .expect(200)
        .json();
    let id = created["id"].as_str().unwrap();
    let path = format!("{QUERIES}/{id}/run");
    for bad in [json!(0), json!(86_401), json!("5"), json!(1.5)] {
        console
            .send(
                http::Method::POST,
                &path,
                Some(alice()),
                None,
                Some(&json!({ "timeout_secs": bad })),
            )
            .await
            .expect(422);
    }
    assert_eq!(console.history(&alice(), id).await["status"], "ready");
    let run = {
        let (console, path) = (console.clone(), path.clone());
        tokio::spawn(async move {
            console
                .send(
                    http::Method::POST,
                    &path,
                    Some(alice()),
                    None,
                    Some(&json!({ "timeout_secs": 1 })),
                )
                .await
        })
    };
    // The statement runs on the server, then the shorter timeout ends it there.
    let answer = seen_running_then(run, &marker, || active(&server, &marker))
        .await
        .expect(504)
        .json();
    assert!(
        answer["errors"]["detail"]
            .as_str()
            .unwrap()
            .contains("timeout of 1 s"),
        "{answer}"
    );
    gone(&server, &marker).await;
    assert_eq!(console.history(&alice(), id).await["status"], "failed");
}

/// A write that returns no rows says how many it changed: in its answer, in the history and in
/// its audit event; a read says nothing of the kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_says_how_many_rows_it_changed() {
    postgres_admin().await;
    let console = run_console();
    let (db, credentials) = console
        .database("postgres", PORT, json!({}), checker())
        .await;
    let table = format!("affected_{}", std::process::id());
    for statement in [
        format!("DROP TABLE IF EXISTS {table}"),
        format!("CREATE TABLE {table} AS SELECT g AS id FROM generate_series(1, 7) g"),
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
            &format!("UPDATE {table} SET id = id + 100 WHERE id <= 3"),
            None,
            None,
        )
        .await;
    let result = answer.expect(200).json();
    assert_eq!(result["affected_rows"], 3, "{result}");
    assert_eq!(result["row_count"], 0);
    let history = console.history(&alice(), &id).await;
    assert_eq!(history["run"]["affected_rows"], 3, "{history}");
    let events = console
        .api
        .db(
            http::Method::GET,
            &format!("/api/v1/console/audit?resource={id}&action=query.run"),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(events["data"][0]["run"]["affected_rows"], 3, "{events}");
    let (read, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            &format!("SELECT id FROM {table}"),
            None,
            None,
        )
        .await;
    let result = answer.expect(200).json();
    assert_eq!(result["row_count"], 7);
    assert!(result.get("affected_rows").is_none(), "{result}");
    assert_eq!(
        console.history(&alice(), &read).await["run"]["affected_rows"],
        serde_json::Value::Null
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
