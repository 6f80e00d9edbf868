//! An apply of the provisioning plan killed halfway leaves nothing applied (docs/data-
//! protection.md, "Provisioning"): the real `dbconsole` binary applies the plan on a real
//! PostgreSQL (`provdb`, `.ci/db-servers-up.sh`) while the test holds a lock on the protected
//! table, so that the apply's transaction stops between statements (its first grants made, its
//! masking view not yet); the server is killed with SIGKILL there. Once the lock is released,
//! PostgreSQL rolls the transaction back: the login has none of the plan's grants, and the
//! next server's plan is the same whole plan, which then applies.

mod support;

use std::time::Duration;

use dbconsole_tests::eventually;
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use support::process::Server;
use support::request;

const ADMIN_KEY: &str = "provision-kill-admin-key-0123456789";
const PORT: u16 = 5432;
const PASSWORD: &str = "checkpw";

async fn app_owner() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={PORT} user=dp_app password={PASSWORD} dbname=provdb"),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "PostgreSQL's provdb is not reachable as dp_app ({error}): start the test database \
             servers with `sudo bash .ci/db-servers-up.sh`"
        )
    });
    tokio::spawn(connection);
    client
}

async fn start(dir: &std::path::Path) -> Server {
    Server::start_with(
        &[
            ("DBCONSOLE_STORAGE", "redb"),
            ("DBCONSOLE_API_KEY", ADMIN_KEY),
        ],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            dir.to_str().unwrap(),
        ],
    )
    .await
}

async fn send(server: &Server, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string);
    let answer = request(
        server.addr,
        method,
        &format!("/api/v1/console{path}"),
        &[("x-api-key", ADMIN_KEY)],
        body.as_deref(),
    )
    .await;
    let json = serde_json::from_str(&answer.body).unwrap_or(json!(answer.body));
    (answer.status, json)
}

/// The statements of a plan, in order.
fn statements(plan: &Value) -> Vec<String> {
    plan["roles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["steps"].as_array().unwrap().iter())
        .map(|s| s["sql"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_killed_halfway_leaves_nothing_applied() {
    let owner = app_owner().await;
    let s = format!("kill_{}", std::process::id());
    let masks = format!("prov_reader_mask_{s}");
    owner
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {masks} CASCADE; DROP SCHEMA IF EXISTS {s} CASCADE;
             CREATE SCHEMA {s};
             CREATE TABLE {s}.users (id int PRIMARY KEY, name text, email text);
             INSERT INTO {s}.users VALUES (1, 'Alice', 's3cr3t.alice@leak.test');"
        ))
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path()).await;
    let (status, created) = send(
        &server,
        "POST",
        "/databases",
        Some(&json!({
            "name": "provisioned", "adapter": "postgres", "hostname": "127.0.0.1",
            "port": PORT, "database": "provdb",
            "connection_parameters": [{"name": "search_path", "value": s}],
            "credentials": [{"username": "prov_reader", "password": PASSWORD}],
        })),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let db = created["id"].as_str().unwrap().to_owned();
    let (status, saved) = send(
        &server,
        "PUT",
        &format!("/databases/{db}/data-protection"),
        Some(&json!({
            "policies": [{"name": "pii", "columns": [{"column": "users.email", "action": "mask"}]}],
            "provisioning": {"username": "dp_app", "password": PASSWORD, "schemas": [s]},
        })),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    let (status, plan) = send(
        &server,
        "GET",
        &format!("/databases/{db}/data-protection/plan"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{plan}");
    let whole = statements(&plan);
    assert!(
        whole.iter().any(|q| q.starts_with("CREATE VIEW")),
        "the plan makes a masking view: {whole:#?}"
    );
    // The test's lock on the table: the apply's CREATE VIEW over it waits, after its grants.
    let blocker = app_owner().await;
    blocker
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {s}.users IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .unwrap();
    let addr = server.addr;
    let path = format!("/api/v1/console/databases/{db}/data-protection/apply");
    let apply = tokio::spawn(async move {
        request(addr, "POST", &path, &[("x-api-key", ADMIN_KEY)], None).await
    });
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE usename = 'dp_app' \
                   AND wait_event_type = 'Lock' AND query LIKE 'CREATE VIEW%'";
    eventually(
        Duration::from_secs(30),
        "the apply waits at its CREATE VIEW",
        || async {
            (owner
                .query_one(waiting, &[])
                .await
                .unwrap()
                .get::<_, i64>(0)
                == 1)
                .then_some(())
        },
    )
    .await;
    // Halfway: its earlier statements ran in its transaction (not committed).
    server.signal(Signal::SIGKILL);
    let _ = apply.await;
    blocker.batch_execute("COMMIT").await.unwrap();
    let gone = "SELECT count(*) FROM pg_stat_activity WHERE usename = 'dp_app' \
                AND query LIKE 'CREATE VIEW%'";
    eventually(
        Duration::from_secs(30),
        "the apply's session ends",
        || async {
            (owner.query_one(gone, &[]).await.unwrap().get::<_, i64>(0) == 0).then_some(())
        },
    )
    .await;
    let granted: bool = owner
        .query_one(
            "SELECT has_schema_privilege('prov_reader', $1, 'USAGE') \
             OR has_any_column_privilege('prov_reader', $2::text::regclass, 'SELECT') \
             OR EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $3)",
            &[&s, &format!("{s}.users"), &masks],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!granted, "nothing of the killed apply is left");
    // The next server plans the same whole plan, and applies it.
    let server = start(data.path()).await;
    let (_, again) = send(
        &server,
        "GET",
        &format!("/databases/{db}/data-protection/plan"),
        None,
    )
    .await;
    assert_eq!(statements(&again), whole, "the same whole plan");
    let (status, applied) = send(
        &server,
        "POST",
        &format!("/databases/{db}/data-protection/apply"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{applied}");
    assert_eq!(applied["applied"], json!(whole.len()));
    owner
        .batch_execute(&format!(
            "DROP SCHEMA {masks} CASCADE; DROP SCHEMA {s} CASCADE"
        ))
        .await
        .unwrap();
}
