//! Cases of the HTTP suite: dashboards as their viewers use them. Who sees which dashboard
//! (docs/api.md, "Dashboards"); how a workflow run one started is doing; and row tokens
//! (docs/workflows.md, "Row tokens"). A panel run asked for
//! row tokens returns one per row (beside the rows in JSON, after each row in NDJSON, never in
//! CSV); a trigger takes the clicked row's values from its token, exactly as the run encoded
//! them, and refuses, storing nothing, a token that was made up, changed, made for another
//! caller or panel, made before the panel changed, or expired, and a row without a token
//! unless the server accepts unverified rows.
//!
//! The panel runs through [`RowsRunner`], a stand-in for a database that answers two rows of
//! values that are easy to get wrong (`-0`, an integer beyond 2^53, bytes, JSON, Unicode): the
//! rules are the service's, whatever runs the statement.

use std::sync::Arc;
use std::time::Duration;

use dbconsole_core::Storage;
use dbconsole_core::model::{Adapter, Principal};
use dbconsole_core::run::{Column, QueryRunner, RowSink, RunError, RunJob, Runners};
use dbconsole_core::service::{OutboxTargets, RowTokenOptions};
use http::Method;
use serde_json::{Value, json};

use crate::TestConsole;

const DELIVERIES: &str = "/api/v1/console/deliveries";

/// A runner that answers two rows: `id`, `amount` (a float, `-0` in the second), `big` (beyond
/// 2^53), `blob` (bytes), `doc` (JSON) and `name` (Unicode with quotes and a newline).
#[derive(Debug, Default)]
pub struct RowsRunner;

fn column(name: &str, type_name: &str, base64: bool) -> Column {
    Column {
        name: name.to_owned(),
        type_name: type_name.to_owned(),
        base64,
    }
}

#[async_trait::async_trait]
impl QueryRunner for RowsRunner {
    fn catalog(&self) -> &'static str {
        "SELECT 1"
    }

    async fn run(&self, _job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        sink.columns(&[
            column("id", "int8", false),
            column("amount", "float8", false),
            column("big", "int8", false),
            column("blob", "bytea", true),
            column("doc", "jsonb", false),
            column("name", "text", false),
        ]);
        for (id, amount) in [(41_i64, 12.5_f64), (42, -0.0)] {
            let Some(row) = sink.row() else { break };
            row.int(id);
            row.float(amount);
            row.int(i64::MAX - id);
            row.bytes(&[0, 0xff, id as u8]);
            row.json(r#"{"a": [1, 2.5, "x"], "b": null}"#);
            row.text("Zoë \"ß\" 🦀\n<b>bold</b>");
            sink.end_row().await.map_err(|_| RunError::Cancelled)?;
        }
        sink.flush().await.map_err(|_| RunError::Cancelled)
    }

    fn evict(&self, _database_id: &str) {}
}

/// The console over `storage` with a [`RowsRunner`], starting workflows, with `options`.
fn token_console(storage: Arc<dyn Storage>, options: RowTokenOptions) -> TestConsole {
    TestConsole::builder(storage)
        .runners(Runners::none().with(Adapter::Postgres, Arc::new(RowsRunner)))
        .trust_principal(true)
        .outbox(OutboxTargets {
            workflows: true,
            ..OutboxTargets::default()
        })
        .row_tokens(options)
        .build()
}

fn ann() -> Principal {
    Principal::member("ann@example.com")
}

/// A dashboard of two panels over a new database, each with action `pay` passing on every
/// column of the row and a prompted `note`, and a label-only action.
async fn new_dashboard(console: &TestConsole) -> Value {
    let db = console
        .api
        .create_database(&json!({
            "name": format!("Tokens {}", dbconsole_core::model::DeliveryId::generate()),
            "adapter": "postgres",
            "hostname": "db.internal",
            "database": "orders",
            "credentials": [{"username": "reader", "password": "pw-tokens"}],
        }))
        .await;
    let panel = |title: &str| {
        json!({
            "title": title,
            "details": {"__type__": "query", "query": "SELECT 1", "credential_id": db["credentials"][0]["id"]},
            "actions": [
                {"label": "Pay", "workflow_id": "pay", "input_mappings": [
                    {"workflow_input_key": "order", "column": "id"},
                    {"workflow_input_key": "amount", "column": "amount"},
                    {"workflow_input_key": "big", "column": "big"},
                    {"workflow_input_key": "blob", "column": "blob"},
                    {"workflow_input_key": "doc", "column": "doc"},
                    {"workflow_input_key": "name", "column": "name"},
                    {"workflow_input_key": "note", "prompt_user": true, "prompt": "Note"},
                ]},
                {"label": "Label only", "input_mappings": []},
            ],
        })
    };
    console
        .api
        .dash(
            Method::POST,
            crate::DASHBOARDS,
            Some(&json!({"name": "Tokens", "restricted_access": false, "panels": [panel("A"), panel("B")]})),
        )
        .await
        .expect(200)
        .json()
}

fn run_path(dashboard: &Value, panel: usize) -> String {
    format!(
        "/v1/dashboards/{}/panels/{}/run",
        dashboard["id"].as_str().unwrap(),
        dashboard["panels"][panel]["id"].as_str().unwrap()
    )
}

fn trigger_path(dashboard: &Value, panel: usize) -> String {
    format!(
        "/v1/dashboards/{}/panels/{}/actions/{}/trigger",
        dashboard["id"].as_str().unwrap(),
        dashboard["panels"][panel]["id"].as_str().unwrap(),
        dashboard["panels"][panel]["actions"][0]["id"]
            .as_str()
            .unwrap()
    )
}

/// A JSON run of panel `panel` as `who` with row tokens: the result document.
async fn run(console: &TestConsole, who: &Principal, dashboard: &Value, panel: usize) -> Value {
    console
        .as_(
            who,
            Method::POST,
            &run_path(dashboard, panel),
            Some(json!({"row_tokens": true})),
            None,
        )
        .await
        .expect(200)
        .json()
}

async fn delivery_count(console: &TestConsole) -> usize {
    console
        .api
        .db(Method::GET, DELIVERIES, None)
        .await
        .expect(200)
        .json()["data"]
        .as_array()
        .expect("a page")
        .len()
}

/// A run's row tokens come one per row; a trigger with one starts the workflow with that row's
/// values exactly as the run encoded them (`-0`, a big integer as a string, base64, JSON,
/// Unicode) and the typed value; NDJSON carries a token after each row, CSV none.
pub async fn a_row_token_carries_the_row_the_panel_returned(storage: Arc<dyn Storage>) {
    let console = token_console(storage, RowTokenOptions::default());
    let dashboard = new_dashboard(&console).await;
    let result = run(&console, &ann(), &dashboard, 0).await;
    let rows = result["rows"].as_array().unwrap();
    let tokens = result["row_tokens"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(tokens.len(), 2);
    assert_ne!(tokens[0], tokens[1]);
    let answer = console
        .as_(
            &ann(),
            Method::POST,
            &trigger_path(&dashboard, 0),
            Some(json!({"row_token": tokens[1], "prompted": {"note": "late"}})),
            None,
        )
        .await
        .expect(202);
    let inputs = &answer.json()["payload"]["inputs"];
    let second = &rows[1];
    assert_eq!(
        *inputs,
        json!({
            "order": second[0], "amount": second[1], "big": second[2], "blob": second[3],
            "doc": second[4], "name": second[5], "note": "late",
        })
    );
    assert_eq!(inputs["order"], 42);
    assert_eq!(inputs["big"], json!((i64::MAX - 42).to_string()));
    assert_eq!(inputs["blob"], "AP8q");
    assert_eq!(inputs["doc"], json!({"a": [1, 2.5, "x"], "b": null}));
    assert_eq!(inputs["name"], "Zoë \"ß\" 🦀\n<b>bold</b>");
    assert!(
        inputs["amount"].as_f64().unwrap() == 0.0
            && inputs["amount"].as_f64().unwrap().is_sign_negative(),
        "-0 stays -0: {inputs}"
    );
    // NDJSON: a token line after each row line.
    let ask = json!({"row_tokens": true});
    let ndjson = console
        .send(
            Method::POST,
            &run_path(&dashboard, 0),
            Some(ann()),
            Some("application/x-ndjson"),
            Some(&ask),
        )
        .await
        .expect(200)
        .text();
    let lines: Vec<Value> = ndjson
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 6, "{ndjson}");
    assert!(lines[1].is_array() && lines[3].is_array());
    assert!(lines[2]["row_token"].is_string() && lines[4]["row_token"].is_string());
    // CSV carries none: asking for them is a clear 422.
    console
        .send(
            Method::POST,
            &run_path(&dashboard, 0),
            Some(ann()),
            Some("text/csv"),
            Some(&ask),
        )
        .await
        .expect(422);
    // `row_tokens` is a boolean.
    let errors = console
        .as_(
            &ann(),
            Method::POST,
            &run_path(&dashboard, 0),
            Some(json!({"row_tokens": "yes"})),
            None,
        )
        .await
        .expect(422)
        .json();
    assert!(errors["errors"]["row_tokens"].is_array(), "{errors}");
    assert_eq!(delivery_count(&console).await, 1);
}

/// A trigger `who` sends with `body` is refused with 422: the (non-empty) reason on `field`.
async fn refusal(
    console: &TestConsole,
    who: &Principal,
    path: &str,
    body: Value,
    field: &str,
) -> String {
    let answer = console
        .as_(who, Method::POST, path, Some(body), None)
        .await
        .expect(422)
        .json();
    let why = answer["errors"][field][0]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!why.is_empty(), "{answer}");
    why
}

/// Every token that does not hold is refused with 422 on `row_token` and stores nothing: made
/// up, changed, another caller's, another panel's, made before the panel changed, expired;
/// so is a row without a token, and a row beside a token.
pub async fn row_tokens_that_do_not_hold_are_refused(storage: Arc<dyn Storage>) {
    let console = token_console(Arc::clone(&storage), RowTokenOptions::default());
    let dashboard = new_dashboard(&console).await;
    let token = run(&console, &ann(), &dashboard, 0).await["row_tokens"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = |panel: usize, body: Value, field: &'static str| {
        let (console, path) = (&console, trigger_path(&dashboard, panel));
        async move { refusal(console, &ann(), &path, body, field).await }
    };
    let note = json!({"note": "x"});
    // Made up, and changed (each byte of the token matters).
    refused(
        0,
        json!({"row_token": "not-a-token", "prompted": note}),
        "row_token",
    )
    .await;
    let mut changed = token.clone().into_bytes();
    let middle = changed.len() / 2;
    changed[middle] = if changed[middle] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    refused(
        0,
        json!({"row_token": changed, "prompted": note}),
        "row_token",
    )
    .await;
    refused(0, json!({"row_token": 7, "prompted": note}), "row_token").await;
    // Another panel's action, even one that looks the same.
    let why = refused(
        1,
        json!({"row_token": token, "prompted": note}),
        "row_token",
    )
    .await;
    assert!(why.contains("another panel"), "{why}");
    // A row without its token, and a row beside a token.
    let why = refused(
        0,
        json!({"row": {"id": 1, "amount": 1, "big": 1, "blob": "", "doc": 1, "name": "x"}, "prompted": note}),
        "row_token",
    )
    .await;
    assert!(why.contains("row_tokens"), "{why}");
    refused(
        0,
        json!({"row_token": token, "row": {"id": 999}, "prompted": note}),
        "row",
    )
    .await;
    // Another caller's.
    let bob = Principal::member("bob@example.com");
    let body = json!({"row_token": token, "prompted": note});
    let why = refusal(
        &console,
        &bob,
        &trigger_path(&dashboard, 0),
        body,
        "row_token",
    )
    .await;
    assert!(why.contains("another caller"), "{why}");
    // The same user under another case is the same user.
    console
        .as_(
            &Principal::member("ANN@example.com"),
            Method::POST,
            &trigger_path(&dashboard, 0),
            Some(json!({"row_token": token, "prompted": note})),
            None,
        )
        .await
        .expect(202);
    // Renaming the dashboard leaves its panels' tokens working; changing the panel does not.
    console
        .api
        .dash(
            Method::PUT,
            &format!(
                "{}/{}",
                crate::DASHBOARDS,
                dashboard["id"].as_str().unwrap()
            ),
            Some(&json!({"name": "Tokens, renamed"})),
        )
        .await
        .expect(200);
    console
        .as_(
            &ann(),
            Method::POST,
            &trigger_path(&dashboard, 0),
            Some(json!({"row_token": token, "prompted": note})),
            None,
        )
        .await
        .expect(202);
    let mut panels = dashboard["panels"].clone();
    panels[0]["details"]["query"] = json!("SELECT 2");
    console
        .api
        .dash(
            Method::PUT,
            &format!(
                "{}/{}",
                crate::DASHBOARDS,
                dashboard["id"].as_str().unwrap()
            ),
            Some(&json!({"panels": panels})),
        )
        .await
        .expect(200);
    let why = refused(
        0,
        json!({"row_token": token, "prompted": note}),
        "row_token",
    )
    .await;
    assert!(why.contains("panel changed"), "{why}");
    assert_eq!(delivery_count(&console).await, 2, "only the two that held");

    // Expired: a console whose tokens live no time at all.
    let brief = token_console(
        storage,
        RowTokenOptions {
            life: Duration::ZERO,
            ..RowTokenOptions::default()
        },
    );
    let token = run(&brief, &ann(), &dashboard, 1).await["row_tokens"][0].clone();
    // A token's expiry is a whole second (the one it was made in, with no life): it has expired
    // once the clock, read as the service reads it, is past the second read after it was made.
    let seconds = || dbconsole_core::model::Timestamp::now().as_micros() / 1_000_000;
    let made = seconds();
    crate::eventually(
        Duration::from_secs(30),
        "the clock passes the token's expiry",
        || async { (seconds() > made).then_some(()) },
    )
    .await;
    let body = json!({"row_token": token, "prompted": note});
    let why = refusal(
        &brief,
        &ann(),
        &trigger_path(&dashboard, 1),
        body,
        "row_token",
    )
    .await;
    assert!(why.contains("expired"), "{why}");
    assert_eq!(delivery_count(&console).await, 2);
}

/// Members see unrestricted dashboards and the restricted ones whose every panel's database
/// they may query, in the list and by id (403 otherwise); super admins and full-scope keys see
/// all; editing stays with full scope.
pub async fn members_see_the_dashboards_they_may_query(storage: Arc<dyn Storage>) {
    let console = token_console(storage, RowTokenOptions::default());
    let open = new_dashboard(&console).await;
    let closed_db = console
        .api
        .create_database(&json!({
            "name": format!("Closed {}", dbconsole_core::model::DeliveryId::generate()),
            "adapter": "postgres",
            "hostname": "db.internal",
            "database": "orders",
            "restrict_access": true,
            "credentials": [{"username": "reader", "password": "pw-closed"}],
        }))
        .await;
    let panel = json!({
        "title": "Closed",
        "details": {"__type__": "query", "query": "SELECT 1", "credential_id": closed_db["credentials"][0]["id"]},
    });
    let restricted = console
        .api
        .dash(
            Method::POST,
            crate::DASHBOARDS,
            Some(&json!({"name": "Restricted", "restricted_access": true, "panels": [panel]})),
        )
        .await
        .expect(200)
        .json();
    let ids = |page: Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = |who: Principal| {
        let console = &console;
        async move {
            console
                .as_(&who, Method::GET, crate::DASHBOARDS, None, None)
                .await
                .expect(200)
                .json()
        }
    };
    let by_id = |who: Principal, dashboard: &Value| {
        let console = &console;
        let path = format!(
            "{}/{}",
            crate::DASHBOARDS,
            dashboard["id"].as_str().unwrap()
        );
        async move { console.as_(&who, Method::GET, &path, None, None).await }
    };
    let open_id = open["id"].as_str().unwrap().to_owned();
    let restricted_id = restricted["id"].as_str().unwrap().to_owned();
    assert_eq!(ids(list(ann()).await), std::slice::from_ref(&open_id));
    assert_eq!(by_id(ann(), &open).await.expect(200).json(), open);
    let refused = by_id(ann(), &restricted).await.expect(403);
    assert!(
        refused.text().contains("restricts access"),
        "{}",
        refused.text()
    );
    // A grant on the panel's database opens the dashboard.
    console
        .api
        .db(
            Method::PUT,
            &format!("{}/{}/permissions", crate::DATABASES, closed_db["id"].as_str().unwrap()),
            Some(&json!({"permissions": [{"subject_kind": "user", "subject": "ann@example.com", "access": "query"}]})),
        )
        .await
        .expect(200);
    let mut both = vec![open_id.clone(), restricted_id.clone()];
    both.sort();
    assert_eq!(ids(list(ann()).await), both);
    by_id(ann(), &restricted).await.expect(200);
    let admin = Principal::member("root@example.com").role(dbconsole_core::model::Role::SuperAdmin);
    assert_eq!(ids(list(admin).await), both);
    let bob = Principal::member("bob@example.com");
    assert_eq!(ids(list(bob.clone()).await), [open_id]);
    by_id(bob.clone(), &restricted).await.expect(403);
    // A member edits nothing.
    let path = format!("{}/{}", crate::DASHBOARDS, open["id"].as_str().unwrap());
    console
        .as_(
            &bob,
            Method::PUT,
            &path,
            Some(json!({"name": "Mine"})),
            None,
        )
        .await
        .expect(403);
    console
        .as_(&bob, Method::DELETE, &path, None, None)
        .await
        .expect(403);
}

/// Whoever started a workflow run follows it (status, attempts, next try, last error), never
/// its payload; anyone else's is 404.
pub async fn the_caller_follows_the_workflow_it_started(storage: Arc<dyn Storage>) {
    let console = token_console(storage, RowTokenOptions::default());
    let dashboard = new_dashboard(&console).await;
    let token = run(&console, &ann(), &dashboard, 0).await["row_tokens"][0].clone();
    let started = console
        .as_(
            &ann(),
            Method::POST,
            &trigger_path(&dashboard, 0),
            Some(json!({"row_token": token, "prompted": {"note": "x"}})),
            None,
        )
        .await
        .expect(202)
        .json();
    let path = format!(
        "/api/v1/console/me/deliveries/{}",
        started["id"].as_str().unwrap()
    );
    let progress = console
        .as_(&ann(), Method::GET, &path, None, None)
        .await
        .expect(200)
        .json();
    let mut keys: Vec<&str> = progress
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "attempts",
            "delivered_at",
            "due_at",
            "id",
            "last_error",
            "status",
            "updated_at",
            "workflow_id"
        ]
    );
    assert_eq!(progress["status"], "pending");
    assert_eq!(progress["workflow_id"], "pay");
    assert!(
        !progress.to_string().contains("Zo"),
        "no row value: {progress}"
    );
    console
        .as_(
            &Principal::member("bob@example.com"),
            Method::GET,
            &path,
            None,
            None,
        )
        .await
        .expect(404);
    console
        .as_(
            &ann(),
            Method::GET,
            "/api/v1/console/me/deliveries/dlv_missing",
            None,
            None,
        )
        .await
        .expect(404);
}

/// An editor runs a panel that is not saved under every rule of a saved one's run, audited on
/// its database; a member may not, a bad panel is 422 under `panel`, a credential that needs
/// reviews is 422, and a test run gives no row tokens.
pub async fn an_editor_test_runs_an_unsaved_panel(storage: Arc<dyn Storage>) {
    let console = token_console(storage, RowTokenOptions::default());
    let db = console
        .api
        .create_database(&json!({
            "name": format!("Test runs {}", dbconsole_core::model::DeliveryId::generate()),
            "adapter": "postgres",
            "hostname": "db.internal",
            "database": "orders",
            "credentials": [
                {"username": "reader", "password": "pw-test-run"},
                {"username": "writer", "password": "pw-test-run", "reviews_required": 1},
            ],
        }))
        .await;
    let path = "/v1/dashboards/test-run";
    let editor =
        Principal::member("root@example.com").role(dbconsole_core::model::Role::SuperAdmin);
    let panel = |credential: &Value| {
        json!({
            "title": "Draft",
            "inputs": [{"key": "since", "description": ""}],
            "details": {"__type__": "query", "query": "SELECT * FROM orders WHERE day > ${since}", "credential_id": credential},
        })
    };
    let reader = &db["credentials"][0]["id"];
    let ran = console
        .as_(
            &editor,
            Method::POST,
            path,
            Some(json!({"panel": panel(reader), "inputs": {"since": "2026-01-01"}, "row_tokens": true})),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(ran["rows"].as_array().unwrap().len(), 2);
    assert!(
        ran.get("row_tokens").is_none(),
        "no tokens from a test run: {ran}"
    );
    // Every rule of a run: the inputs, a credential without reviews, a valid panel.
    let refused = console
        .as_(
            &editor,
            Method::POST,
            path,
            Some(json!({"panel": panel(reader)})),
            None,
        )
        .await
        .expect(422)
        .json();
    assert!(refused["errors"]["inputs.since"].is_array(), "{refused}");
    console
        .as_(
            &editor,
            Method::POST,
            path,
            Some(json!({"panel": panel(&db["credentials"][1]["id"]), "inputs": {"since": "x"}})),
            None,
        )
        .await
        .expect(422);
    let mut blank = panel(reader);
    blank["title"] = json!(" ");
    let invalid = console
        .as_(
            &editor,
            Method::POST,
            path,
            Some(json!({"panel": blank})),
            None,
        )
        .await
        .expect(422)
        .json();
    assert!(invalid["errors"]["panel"]["title"].is_array(), "{invalid}");
    console
        .as_(
            &editor,
            Method::POST,
            path,
            Some(json!({"panel": "x"})),
            None,
        )
        .await
        .expect(422);
    // Anyone who may query the database makes dashboards, so test-runs (docs/dashboards.md,
    // "Who edits and views"); an AI agent does not.
    console
        .as_(
            &ann(),
            Method::POST,
            path,
            Some(json!({"panel": panel(reader), "inputs": {"since": "x"}})),
            None,
        )
        .await
        .expect(200);
    let mut agent = ann();
    agent.agent = true;
    console
        .as_(
            &agent,
            Method::POST,
            path,
            Some(json!({"panel": panel(reader), "inputs": {"since": "x"}})),
            None,
        )
        .await
        .expect(403);
    // Audited on the database (when the run has ended, after its answer).
    let audit = format!(
        "/api/v1/console/audit?resource={}&action=panel.test_run",
        db["id"].as_str().unwrap()
    );
    crate::eventually(Duration::from_secs(10), "the test run's event", || {
        let console = &console;
        let audit = audit.clone();
        async move {
            let events = console
                .api
                .db(Method::GET, &audit, None)
                .await
                .expect(200)
                .json();
            (!events["data"].as_array()?.is_empty()).then_some(())
        }
    })
    .await;
}

/// A panel's CSV downloads through a ticket (a URL that needs no other credential, for a
/// minute), with the inputs asked for and no row token; asking is refused as a run would be.
pub async fn a_panel_downloads_as_csv_through_a_ticket(storage: Arc<dyn Storage>) {
    let console = token_console(storage, RowTokenOptions::default());
    let dashboard = new_dashboard(&console).await;
    let path = format!(
        "/v1/dashboards/{}/panels/{}/download",
        dashboard["id"].as_str().unwrap(),
        dashboard["panels"][0]["id"].as_str().unwrap()
    );
    let asked = console
        .as_(
            &ann(),
            Method::POST,
            &path,
            Some(json!({"row_tokens": true})),
            None,
        )
        .await
        .expect(200)
        .json();
    let url = asked["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with("/api/v1/console/downloads/csv?ticket="),
        "{url}"
    );
    let request = http::Request::builder()
        .uri(url.as_str())
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let csv = console.api.send(request).await.expect(200);
    assert_eq!(
        csv.header("content-disposition"),
        Some(
            format!(
                "attachment; filename=\"{}.csv\"",
                dashboard["panels"][0]["id"].as_str().unwrap()
            )
            .as_str()
        )
    );
    let text = csv.text();
    assert!(
        text.starts_with("id,amount,big,blob,doc,name\r\n41,12.5,"),
        "{text}"
    );
    assert!(!text.contains("row_token"), "{text}");
    // The same link again works within its minute (a panel runs again and again).
    let request = http::Request::builder()
        .uri(url.as_str())
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    console.api.send(request).await.expect(200);
    // Inputs the panel does not declare, and an unknown panel, are refused before any ticket.
    console
        .as_(
            &ann(),
            Method::POST,
            &path,
            Some(json!({"inputs": {"nope": 1}})),
            None,
        )
        .await
        .expect(422);
    let missing = format!(
        "/v1/dashboards/{}/panels/pl_missing/download",
        dashboard["id"].as_str().unwrap()
    );
    console
        .as_(&ann(), Method::POST, &missing, Some(json!({})), None)
        .await
        .expect(404);
    let mut agent = ann();
    agent.agent = true;
    console
        .as_(&agent, Method::POST, &path, Some(json!({})), None)
        .await
        .expect(403);
}

/// A panel on a database behind a tunnel this server can't dial is 409, saying so: the server's
/// configuration, not a failure of the database (no 5xx).
pub async fn a_tunnel_this_server_cannot_dial_is_409(storage: Arc<dyn Storage>) {
    let console = token_console(storage, RowTokenOptions::default());
    let db = console
        .api
        .create_database(&json!({
            "name": "Behind a tunnel", "adapter": "postgres", "hostname": "db.internal", "database": "orders",
            "tunnel_id": "tun-private",
            "credentials": [{"username": "reader", "password": "pw-tunnel"}],
        }))
        .await;
    let editor =
        Principal::member("root@example.com").role(dbconsole_core::model::Role::SuperAdmin);
    let answer = console
        .as_(
            &editor,
            Method::POST,
            "/v1/dashboards/test-run",
            Some(json!({"panel": {"title": "T", "details": {"__type__": "query", "query": "SELECT 1", "credential_id": db["credentials"][0]["id"]}}})),
            None,
        )
        .await
        .expect(409);
    assert!(
        answer.text().contains("no tunnel dialer"),
        "{}",
        answer.text()
    );
}

/// Expands to one test per case of viewing dashboards and acting on their rows, over fresh
/// stores made by `$storage`.
#[macro_export]
macro_rules! row_action_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            row_actions,
            $storage,
            [
                members_see_the_dashboards_they_may_query,
                the_caller_follows_the_workflow_it_started,
                an_editor_test_runs_an_unsaved_panel,
                a_panel_downloads_as_csv_through_a_ticket,
                a_tunnel_this_server_cannot_dial_is_409,
                a_row_token_carries_the_row_the_panel_returned,
                row_tokens_that_do_not_hold_are_refused,
            ]
        );
    };
}
