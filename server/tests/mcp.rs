//! The MCP endpoint through the real `dbconsole` binary (redb) and a real PostgreSQL
//! (`.ci/db-servers-up.sh`), driven by a real MCP client: the official Python SDK (`mcp` from
//! PyPI, in the virtualenv `.ci/tools-up.sh` makes; `DBCONSOLE_TEST_PYTHON` names another
//! interpreter). An agent lists the databases it may use, describes a table and queries it,
//! and is refused past every AI cap: a database without `ai_enabled`, a credential without
//! `ai_allowed`, more than `ai_max_rows` rows, a write; a query that needs reviews waits and
//! answers its id. A person's key through this door is an agent too, and a key without a user
//! gets no further than the API would let it. Every call is in the audit trail.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use dbconsole_tests::eventually;
use serde_json::{Value, json};
use support::process::{HANG_GUARD, Server};
use support::{create_key, postgres_admin, request};
use tokio::io::AsyncWriteExt as _;

const ADMIN_KEY: &str = "mcp-test-admin-key-0123456789";

/// The Python with the `mcp` package: `DBCONSOLE_TEST_PYTHON`, or the virtualenv of
/// `.ci/tools-up.sh`. A missing one fails the test, saying how to make it.
fn python() -> PathBuf {
    let python = std::env::var_os("DBCONSOLE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/contract-venv/bin/python")
        });
    assert!(
        python.exists(),
        "no Python with the MCP client library at {}: run `bash .ci/tools-up.sh` (or set \
         DBCONSOLE_TEST_PYTHON)",
        python.display()
    );
    python
}

/// Runs the Python MCP client against `server` with `key` and these calls; what it printed.
async fn mcp_client(server: &Server, key: &str, calls: &Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let url = format!("http://{}/mcp", server.addr);
    let mut child = tokio::process::Command::new(python())
        .arg(script)
        .arg(&url)
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the Python MCP client");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(calls.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(HANG_GUARD, child.wait_with_output())
        .await
        .expect("the MCP client finished")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the MCP client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

/// A management call with the admin key: the JSON answer (200 asserted).
async fn manage(server: &Server, method: &str, path: &str, body: Option<Value>) -> Value {
    let body = body.map(|b| b.to_string());
    let response = request(
        server.addr,
        method,
        path,
        &[("x-api-key", ADMIN_KEY)],
        body.as_deref(),
    )
    .await;
    assert_eq!(response.status, 200, "{method} {path}: {}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

fn result(answer: &Value, index: usize) -> (bool, String) {
    let result = &answer["results"][index];
    (
        result["is_error"].as_bool().unwrap(),
        result["text"].as_str().unwrap().to_owned(),
    )
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("{error}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_lists_describes_and_queries_within_the_ai_caps() {
    let postgres = postgres_admin().await;
    let table = format!("mcp_orders_{}", std::process::id());
    postgres
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (id int PRIMARY KEY, customer text NOT NULL, total numeric); \
             INSERT INTO {table} SELECT g, 'c' || g, g * 1.5 FROM generate_series(1, 100) g; \
             GRANT SELECT (id, total) ON {table} TO dp_reader;"
        ))
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let agent_key = create_key(
        data.path(),
        &[
            "--kind",
            "api-key",
            "--scope",
            "ai-agent",
            "--user",
            "bot@example.com",
            "--name",
            "bot",
        ],
    )
    .await;
    let person_key = create_key(
        data.path(),
        &[
            "--kind",
            "api-key",
            "--scope",
            "query",
            "--user",
            "ann@example.com",
            "--name",
            "ann",
        ],
    )
    .await;
    let reviewer_key = create_key(
        data.path(),
        &[
            "--kind",
            "api-key",
            "--scope",
            "query",
            "--user",
            "rev@example.com",
            "--name",
            "rev",
        ],
    )
    .await;
    let server = Server::start_with(
        &[
            ("DBCONSOLE_STORAGE", "redb"),
            ("DBCONSOLE_API_KEY", ADMIN_KEY),
        ],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.path().to_str().unwrap(),
        ],
    )
    .await;
    let checker = |extra: Value| {
        let mut credential = json!({"username": "checker", "password": "checkpw"});
        for (key, value) in extra.as_object().unwrap() {
            credential[key] = value.clone();
        }
        credential
    };
    let orders = manage(
        &server,
        "POST",
        "/api/v1/console/databases",
        Some(json!({
            "name": "Orders for AI", "adapter": "postgres", "hostname": "127.0.0.1",
            "port": 5432, "database": "checkdb", "ai_enabled": true, "ai_max_rows": 5,
            "credentials": [
                checker(json!({"ai_allowed": true})),
                {"username": "dbconsole", "password": "dbconsolepw", "ai_allowed": false},
            ],
        })),
    )
    .await;
    let reviewed = manage(
        &server,
        "POST",
        "/api/v1/console/databases",
        Some(json!({
            "name": "Orders, reviewed", "adapter": "postgres", "hostname": "127.0.0.1",
            "port": 5432, "database": "checkdb", "ai_enabled": true,
            "credentials": [checker(json!({"ai_allowed": true, "reviews_required": 1}))],
        })),
    )
    .await;
    let private = manage(
        &server,
        "POST",
        "/api/v1/console/databases",
        Some(json!({
            "name": "Not for AI", "adapter": "postgres", "hostname": "127.0.0.1",
            "port": 5432, "database": "checkdb", "ai_enabled": false,
            "credentials": [checker(json!({"ai_allowed": true}))],
        })),
    )
    .await;
    // A database whose policy hides `customer`, as the verified role `dp_reader`
    // (docs/data-protection.md): an agent's queries are protected as anyone's.
    let protected = manage(
        &server,
        "POST",
        "/api/v1/console/databases",
        Some(json!({
            "name": "Protected for AI", "adapter": "postgres", "hostname": "127.0.0.1",
            "port": 5432, "database": "checkdb", "ai_enabled": true,
            "credentials": [{"username": "dp_reader", "password": "checkpw", "ai_allowed": true}],
        })),
    )
    .await;
    manage(
        &server,
        "PUT",
        &format!(
            "/api/v1/console/databases/{}/data-protection",
            protected["id"].as_str().unwrap()
        ),
        Some(json!({"policies": [{"name": "pii", "columns": [
            {"column": format!("{table}.customer"), "action": "hide"}
        ]}]})),
    )
    .await;
    let db = orders["id"].as_str().unwrap();
    let credential = |index: usize| orders["credentials"][index]["id"].as_str().unwrap();
    let calls = json!([
        {"tool": "list_databases"},
        {"tool": "describe_tables", "args": {"database_id": db}},
        {"tool": "run_query", "args": {"database_id": db, "sql": format!("SELECT id, customer FROM {table} ORDER BY id"), "limit": 50}},
        {"tool": "run_query", "args": {"database_id": db, "credential_id": credential(1), "sql": "SELECT 1"}},
        {"tool": "run_query", "args": {"database_id": private["id"], "sql": "SELECT 1"}},
        {"tool": "run_query", "args": {"database_id": reviewed["id"], "sql": format!("SELECT count(*) FROM {table}")}},
        {"tool": "run_query", "args": {"database_id": db, "sql": format!("DELETE FROM {table}")}},
        {"tool": "run_query", "args": {"database_id": db, "sql": "SELECT 1; SELECT 2"}},
        {"tool": "run_query", "args": {"database_id": protected["id"], "sql": format!("SELECT id, customer FROM {table} ORDER BY id")}},
        {"tool": "run_query", "args": {"database_id": protected["id"], "sql": format!("SELECT (SELECT string_agg(customer, ',') FROM {table}) AS c")}},
        {"tool": "run_query", "args": {"database_id": protected["id"], "sql": format!("SELECT id FROM {table} ORDER BY id LIMIT 2")}},
    ]);
    let answer = mcp_client(&server, &agent_key, &calls).await;
    assert_eq!(answer["server"], "dbconsole");
    assert_eq!(
        answer["tools"],
        json!([
            "describe_tables",
            "list_databases",
            "run_query",
            "run_reviewed_query"
        ])
    );

    // Only the AI-enabled databases, with only their AI-allowed credentials.
    let (error, text) = result(&answer, 0);
    assert!(!error, "{text}");
    let listed = json_of(&text);
    let databases = listed["databases"].as_array().unwrap();
    let ids: Vec<&Value> = databases.iter().map(|d| &d["id"]).collect();
    assert_eq!(
        ids,
        [&orders["id"], &reviewed["id"], &protected["id"]],
        "{text}"
    );
    assert_eq!(databases[0]["ai_max_rows"], 5);
    let usable: Vec<&str> = databases[0]["credentials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(usable, [credential(0)]);
    assert_eq!(databases[1]["credentials"][0]["reviews_required"], 1);
    assert!(!text.contains("checkpw"), "no secret in an answer");

    let (error, text) = result(&answer, 1);
    assert!(!error, "{text}");
    let described = json_of(&text);
    let orders_table = described["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table.as_str())
        .unwrap_or_else(|| panic!("{table} is not described: {text}"));
    assert_eq!(
        orders_table["columns"],
        json!([
            {"name": "id", "type": "integer", "nullable": false, "masked": false},
            {"name": "customer", "type": "text", "nullable": false, "masked": false},
            {"name": "total", "type": "numeric", "nullable": true, "masked": false},
        ])
    );

    // At most ai_max_rows rows, whatever the limit asked.
    let (error, text) = result(&answer, 2);
    assert!(!error, "{text}");
    let rows = json_of(&text);
    assert_eq!(
        rows["rows"],
        json!([[1, "c1"], [2, "c2"], [3, "c3"], [4, "c4"], [5, "c5"]])
    );
    assert_eq!(rows["truncated"], true);
    assert!(rows["query_id"].as_str().unwrap().starts_with("qry_"));

    let (error, text) = result(&answer, 3);
    assert!(error && text.contains("ai_allowed is false"), "{text}");
    let (error, text) = result(&answer, 4);
    assert!(error && text.contains("ai_enabled is false"), "{text}");
    let (error, text) = result(&answer, 5);
    assert!(!error, "{text}");
    let waiting = json_of(&text);
    assert_eq!(waiting["status"], "awaiting_review", "{text}");
    assert_eq!(waiting["reviews_required"], 1);
    let waiting_id = waiting["query_id"].as_str().unwrap();
    let (error, text) = result(&answer, 6);
    assert!(error && text.contains("read-only"), "{text}");
    let (error, text) = result(&answer, 7);
    assert!(error && text.starts_with("422"), "{text}");
    // On the protected database: the hidden column is refused in any form, and never shown.
    for index in [8, 9] {
        let (error, text) = result(&answer, index);
        assert!(error && text.contains("data protection"), "{text}");
        assert!(!text.contains("c17,"), "{text}");
    }
    let (error, text) = result(&answer, 10);
    assert!(!error, "{text}");
    assert_eq!(json_of(&text)["rows"], json!([[1], [2]]), "{text}");
    let count: i64 = postgres
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 100, "the agent's DELETE changed nothing");

    // The waiting query runs for the agent once a person approved it, and only then.
    let run_waiting = json!([{"tool": "run_reviewed_query", "args": {"query_id": waiting_id}}]);
    let early = mcp_client(&server, &agent_key, &run_waiting).await;
    let (error, text) = result(&early, 0);
    assert!(error && text.contains("0 of the 1"), "{text}");
    let approved = request(
        server.addr,
        "POST",
        &format!("/api/v1/console/queries/{waiting_id}/reviews"),
        &[("x-api-key", &reviewer_key)],
        Some(r#"{"decision": "approve"}"#),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let late = mcp_client(&server, &agent_key, &run_waiting).await;
    let (error, text) = result(&late, 0);
    assert!(!error, "{text}");
    assert_eq!(json_of(&text)["rows"], json!([[100]]));

    // A person's key through the MCP endpoint is an agent: the same caps.
    let person = mcp_client(
        &server,
        &person_key,
        &json!([{"tool": "run_query", "args": {"database_id": db, "credential_id": credential(1), "sql": "SELECT 1"}}]),
    )
    .await;
    let (error, text) = result(&person, 0);
    assert!(error && text.contains("ai_allowed is false"), "{text}");

    // The door is the API's: no key is 401, a key without a user 403, before any protocol.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let refused = request(server.addr, "POST", "/mcp", &headers, Some(&body)).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    let mut keyed = headers.to_vec();
    keyed.push(("x-api-key", ADMIN_KEY));
    let refused = request(server.addr, "POST", "/mcp", &keyed, Some(&body)).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("needs a user"), "{}", refused.body);

    // Every call is audited, as the agent's key.
    let events = manage(&server, "GET", "/api/v1/console/audit?limit=100", None).await;
    let events = events["data"].as_array().unwrap();
    let agent_call = |tool: &str| {
        events.iter().any(|e| {
            e["action"] == "agent.call"
                && e["changes"] == json!([tool])
                && e["actor"]["name"] == "bot"
        })
    };
    assert!(agent_call("list_databases"), "{events:?}");
    let describe_recorded = || async {
        let events = manage(&server, "GET", "/api/v1/console/audit?limit=100", None).await;
        events["data"].as_array().unwrap().iter().any(|e| {
            e["action"] == "agent.call"
                && e["changes"] == json!(["describe_tables"])
                && e["resource"]["id"] == db
        })
    };
    eventually(
        std::time::Duration::from_secs(30),
        &format!("describe_tables is an agent.call event on the database: {events:?}"),
        || async { describe_recorded().await.then_some(()) },
    )
    .await;
    let creates = events
        .iter()
        .filter(|e| e["action"] == "query.create")
        .count();
    // Stored: the capped SELECT, the one awaiting review, the three on the protected database
    // (its role is verified when they run); refused before storing: the DELETE (not a query:
    // agents run read-only), the wrong credential, the wrong database, two statements.
    assert_eq!(
        creates, 5,
        "the agent's queries that were admitted are stored"
    );
    assert!(
        events
            .iter()
            .any(|e| e["action"] == "query.create" && e["resource"]["id"] == waiting_id)
    );
    // Refused calls too, each an agent.call naming its tool and status, on what it named.
    let refused = |tool: &str, status: u16, resource: &str| {
        events.iter().any(|e| {
            e["action"] == "agent.call"
                && e["changes"] == json!([tool, format!("refused {status}")])
                && e["resource"]["id"] == resource
        })
    };
    let private_id = private["id"].as_str().unwrap();
    assert!(
        refused("run_query", 403, db),
        "wrong credential: {events:?}"
    );
    assert!(refused("run_query", 403, private_id), "not ai_enabled");
    assert!(refused("run_query", 422, db), "two statements");
    assert!(
        refused("run_reviewed_query", 409, waiting_id),
        "run before its approvals"
    );
    postgres
        .batch_execute(&format!("DROP TABLE {table}"))
        .await
        .unwrap();
}
