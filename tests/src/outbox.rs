//! Cases of the HTTP suite: row action triggers and the outbox (docs/workflows.md, "Workflows and
//! notifications"). A trigger takes each workflow input from the clicked row or the prompt,
//! is refused (and stores nothing) when one is missing, when the action starts no workflow,
//! when the server has no workflow endpoint or when the caller may not run the panel, and is
//! otherwise stored as a pending delivery with its event; a query that waits for reviews owes
//! its database's Slack channel a message; the outbox lists by status, and only a dead letter
//! is retried by hand. Delivery itself is the reference server's (`server/tests/outbox.rs`).

use std::sync::Arc;
use std::time::Duration;

use dbconsole_core::Storage;
use dbconsole_core::model::{
    AuditAction, AuditEvent, Delivery, DeliveryStatus, Principal, RetryPolicy, Role, Target,
    TargetKind, Timestamp,
};
use dbconsole_core::outbox::{SendFailure, Transport, Wake, Worker, WorkerOptions};
use dbconsole_core::service::{OutboxTargets, RowTokenOptions};
use dbconsole_core::storage::WriteLog;
use http::Method;
use serde_json::{Value, json};

use crate::{TestConsole, eventually};

const DELIVERIES: &str = "/api/v1/console/deliveries";

/// The console over `storage`, trusting each request's principal, putting workflows in the
/// outbox when `workflows` and review requests when `slack`. It accepts unverified rows (a
/// trigger's `row` without a token: the opt-in of clients made before row tokens), so these
/// cases test how inputs are mapped; row tokens have their own (`row_tokens.rs`).
fn outbox_console(storage: Arc<dyn Storage>, workflows: bool, slack: bool) -> TestConsole {
    TestConsole::builder(storage)
        .trust_principal(true)
        .row_tokens(RowTokenOptions {
            unverified_rows: true,
            ..RowTokenOptions::default()
        })
        .outbox(OutboxTargets {
            workflows,
            slack,
            wake: None,
            console_url: None,
        })
        .build()
}

/// A database: one credential needing `reviews` reviews; restricted when `restricted`.
async fn new_database(
    console: &TestConsole,
    reviews: u32,
    slack_channel: Option<&str>,
    restricted: bool,
) -> Value {
    console
        .api
        .create_database(&json!({
            "name": format!("Outbox {}", ulid_like()),
            "adapter": "postgres",
            "hostname": "db.internal",
            "database": "orders",
            "restrict_access": restricted,
            "slack_channel": slack_channel,
            "credentials": [{"username": "reader", "password": "pw-outbox", "reviews_required": reviews}],
        }))
        .await
}

/// A dashboard over `db`'s credential with actions `start` (row column `id` and prompted
/// `reason`), `label only` (no workflow) and `climb` (workflow `..`).
async fn new_dashboard(console: &TestConsole, db: &Value, restricted: bool) -> Value {
    console
        .api
        .dash(
            Method::POST,
            crate::DASHBOARDS,
            Some(&json!({
                "name": "Orders",
                "restricted_access": restricted,
                "panels": [{
                    "title": "Recent",
                    "details": {"__type__": "query", "query": "SELECT 1 AS id", "credential_id": db["credentials"][0]["id"]},
                    "actions": [
                        {"label": "Refund", "workflow_id": "refund", "input_mappings": [
                            {"workflow_input_key": "order", "column": "id"},
                            {"workflow_input_key": "reason", "prompt_user": true, "prompt": "Why?"},
                        ]},
                        {"label": "Label only", "input_mappings": []},
                        {"label": "Climb", "workflow_id": "..", "input_mappings": []},
                    ],
                }],
            })),
        )
        .await
        .expect(200)
        .json()
}

async fn deliveries(console: &TestConsole, query: &str) -> Vec<Value> {
    console
        .api
        .db(Method::GET, &format!("{DELIVERIES}{query}"), None)
        .await
        .expect(200)
        .json()["data"]
        .as_array()
        .expect("a page")
        .clone()
}

fn ulid_like() -> String {
    dbconsole_core::model::DeliveryId::generate()
        .as_str()
        .to_owned()
}

fn trigger_path(dashboard: &Value, action: usize) -> String {
    let panel = &dashboard["panels"][0];
    format!(
        "/v1/dashboards/{}/panels/{}/actions/{}/trigger",
        dashboard["id"].as_str().unwrap(),
        panel["id"].as_str().unwrap(),
        panel["actions"][action]["id"].as_str().unwrap()
    )
}

fn ann() -> Principal {
    Principal::member("ann@example.com").groups(["analysts"])
}

fn good_body() -> Value {
    json!({"row": {"id": 42, "email": "x@example.com"}, "prompted": {"reason": "late"}})
}

/// A trigger is stored as a pending delivery with its event, answered 202; a retry with the
/// same `Idempotency-Key` gets the same answer and stores nothing more.
pub async fn triggers_store_a_pending_delivery_with_its_event(storage: Arc<dyn Storage>) {
    let console = outbox_console(storage, true, false);
    let db = new_database(&console, 0, None, false).await;
    let dashboard = new_dashboard(&console, &db, false).await;
    let path = trigger_path(&dashboard, 0);
    let answer = console
        .as_(
            &ann(),
            Method::POST,
            &path,
            Some(good_body()),
            Some("click-1"),
        )
        .await
        .expect(202);
    let delivery = answer.json();
    assert_eq!(delivery["status"], "pending");
    assert_eq!(delivery["kind"], "workflow");
    assert_eq!(delivery["workflow_id"], "refund");
    assert_eq!(delivery["channel"], Value::Null);
    assert_eq!(delivery["attempts"], 0);
    assert_eq!(delivery["resource_id"], dashboard["id"]);
    let payload = &delivery["payload"];
    assert_eq!(payload["inputs"], json!({"order": 42, "reason": "late"}));
    assert_eq!(payload["workflow_id"], "refund");
    assert_eq!(payload["triggered_by"], "ann@example.com");
    assert_eq!(payload["delivery_id"], delivery["id"]);
    assert_eq!(payload["panel_id"], dashboard["panels"][0]["id"]);
    assert_eq!(
        payload["action_id"],
        dashboard["panels"][0]["actions"][0]["id"]
    );
    // The same click sent again: the same answer, one delivery.
    let again = console
        .as_(
            &ann(),
            Method::POST,
            &path,
            Some(good_body()),
            Some("click-1"),
        )
        .await
        .expect(202);
    assert_eq!(again.json(), delivery);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let listed = deliveries(&console, "").await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0], delivery);
    let read = console
        .api
        .db(
            Method::GET,
            &format!("{DELIVERIES}/{}", delivery["id"].as_str().unwrap()),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(read, delivery);
    // Its event, on the dashboard, naming the action and the delivery and no value.
    let events = console
        .api
        .db(
            Method::GET,
            &format!(
                "/api/v1/console/audit?resource={}",
                dashboard["id"].as_str().unwrap()
            ),
            None,
        )
        .await
        .expect(200)
        .json();
    let trigger = &events["data"][0];
    assert_eq!(trigger["action"], "action.trigger");
    assert_eq!(trigger["actor"]["name"], "ann@example.com");
    let changes = trigger["changes"].to_string();
    assert!(
        changes.contains(delivery["id"].as_str().unwrap()),
        "{changes}"
    );
    assert!(!changes.contains("late"), "no value: {changes}");
}

/// Every refusal of a trigger stores nothing: a missing input names its workflow input key
/// (422), unknown ids are 404, an action without a workflow and a server without a workflow
/// endpoint are 409, a caller who may not run the panel is 403.
pub async fn triggers_refused_store_nothing(storage: Arc<dyn Storage>) {
    let console = outbox_console(Arc::clone(&storage), true, false);
    let db = new_database(&console, 0, None, false).await;
    let dashboard = new_dashboard(&console, &db, false).await;
    let path = trigger_path(&dashboard, 0);
    let refused = |body: Value| {
        let console = &console;
        let path = path.clone();
        async move {
            console
                .as_(&ann(), Method::POST, &path, Some(body), None)
                .await
                .expect(422)
                .json()["errors"]
                .clone()
        }
    };
    let errors = refused(json!({"row": {"email": "x"}})).await;
    assert!(errors["inputs.order"].is_array(), "{errors}");
    assert!(errors["inputs.reason"].is_array(), "{errors}");
    let errors = refused(json!({"row": {"id": 1}, "prompted": {"reason": ["a"]}})).await;
    assert!(errors["inputs.reason"].is_array(), "{errors}");
    let errors = refused(json!({"row": {"id": 1}, "prompted": {"reason": "x", "order": 9}})).await;
    assert!(errors["prompted.order"].is_array(), "{errors}");
    let errors = refused(json!({"row": "id=1", "prompted": {"reason": "x"}})).await;
    assert!(errors["row"].is_array(), "{errors}");
    console
        .as_(&ann(), Method::POST, &path, Some(json!([1])), None)
        .await
        .expect(400);

    let panel = dashboard["panels"][0]["id"].as_str().unwrap();
    let id = dashboard["id"].as_str().unwrap();
    for missing in [
        format!("/v1/dashboards/dash_missing/panels/{panel}/actions/act_x/trigger"),
        format!("/v1/dashboards/{id}/panels/pl_missing/actions/act_x/trigger"),
        format!("/v1/dashboards/{id}/panels/{panel}/actions/act_missing/trigger"),
    ] {
        console
            .as_(&ann(), Method::POST, &missing, Some(good_body()), None)
            .await
            .expect(404);
    }
    // A label-only action starts nothing.
    console
        .as_(
            &ann(),
            Method::POST,
            &trigger_path(&dashboard, 1),
            Some(good_body()),
            None,
        )
        .await
        .expect(409);
    // Nor does a dot segment, which would climb the endpoint's path.
    let climb = console
        .as_(
            &ann(),
            Method::POST,
            &trigger_path(&dashboard, 2),
            Some(good_body()),
            None,
        )
        .await
        .expect(409);
    assert!(climb.text().contains("dot segment"), "{}", climb.text());
    // A server without a workflow endpoint starts nothing.
    let without = outbox_console(Arc::clone(&storage), false, false);
    let answer = without
        .as_(&ann(), Method::POST, &path, Some(good_body()), None)
        .await
        .expect(409);
    assert!(
        answer.text().contains("--workflow-url"),
        "{}",
        answer.text()
    );
    // No principal (the static token) is 403; so is one who may not run a restricted panel.
    console
        .api
        .dash(Method::POST, &path, Some(&good_body()))
        .await
        .expect(403);
    let closed_db = new_database(&console, 0, None, true).await;
    let closed = new_dashboard(&console, &closed_db, true).await;
    console
        .as_(
            &ann(),
            Method::POST,
            &trigger_path(&closed, 0),
            Some(good_body()),
            None,
        )
        .await
        .expect(403);
    // …while a super admin may.
    console
        .as_(
            &Principal::member("root@example.com").role(Role::SuperAdmin),
            Method::POST,
            &trigger_path(&closed, 0),
            Some(good_body()),
            None,
        )
        .await
        .expect(202);
    // An agent never triggers, even on a database open to agents.
    let mut agent = ann();
    agent.agent = true;
    let open_db = console
        .api
        .create_database(&json!({
            "name": format!("Outbox AI {}", ulid_like()),
            "adapter": "postgres",
            "hostname": "db.internal",
            "database": "orders",
            "ai_enabled": true,
            "credentials": [{"username": "reader", "password": "pw-outbox", "ai_allowed": true}],
        }))
        .await;
    let open = new_dashboard(&console, &open_db, false).await;
    let refused = console
        .as_(
            &agent,
            Method::POST,
            &trigger_path(&open, 0),
            Some(good_body()),
            None,
        )
        .await
        .expect(403);
    assert!(
        refused.text().contains("AI agent may not trigger"),
        "{}",
        refused.text()
    );
    let listed = deliveries(&console, "").await;
    assert_eq!(
        listed.len(),
        1,
        "only the super admin's trigger: {listed:?}"
    );
}

/// A query that waits for reviews owes its database's Slack channel one message naming the
/// author, the database and the reviews needed, never the query's text; none when the query
/// needs no review, the database names no channel or the server sends no Slack messages.
pub async fn review_requests_go_to_the_databases_slack_channel(storage: Arc<dyn Storage>) {
    let console = outbox_console(Arc::clone(&storage), false, true);
    let query = |db: &Value| {
        json!({
            "database_id": db["id"],
            "credential_id": db["credentials"][0]["id"],
            "query": "SELECT 'secret-marker' AS x",
            "title": "The marker",
            "description": "To see it.",
        })
    };
    let reviewed = new_database(&console, 2, Some("#db-reviews"), false).await;
    let created = console
        .as_(
            &ann(),
            Method::POST,
            "/api/v1/console/queries",
            Some(query(&reviewed)),
            None,
        )
        .await
        .expect(200)
        .json();
    let silent = new_database(&console, 0, Some("#db-reviews"), false).await;
    let no_channel = new_database(&console, 2, None, false).await;
    for db in [&silent, &no_channel] {
        console
            .as_(
                &ann(),
                Method::POST,
                "/api/v1/console/queries",
                Some(query(db)),
                None,
            )
            .await
            .expect(200);
    }
    let without = outbox_console(Arc::clone(&storage), false, false);
    without
        .as_(
            &ann(),
            Method::POST,
            "/api/v1/console/queries",
            Some(query(&reviewed)),
            None,
        )
        .await
        .expect(200);
    let listed = deliveries(&console, "").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let message = &listed[0];
    assert_eq!(message["kind"], "slack");
    assert_eq!(message["channel"], "#db-reviews");
    assert_eq!(message["resource_id"], created["id"]);
    let text = message["payload"]["text"].as_str().unwrap();
    for part in [
        "ann@example.com",
        reviewed["name"].as_str().unwrap(),
        "2 reviews",
        created["id"].as_str().unwrap(),
    ] {
        assert!(text.contains(part), "{text} names {part}");
    }
    assert!(!text.contains("secret-marker"), "{text}");
    assert_eq!(message["payload"]["channel"], "#db-reviews");
}

/// The outbox lists by status (another status is 422), reads one delivery (404 for another
/// id), manages nothing for a person's key, and retries only a dead letter (409 otherwise),
/// with its event.
pub async fn deliveries_list_by_status_and_only_a_dead_letter_is_retried(
    storage: Arc<dyn Storage>,
) {
    let console = outbox_console(Arc::clone(&storage), true, false);
    let db = new_database(&console, 0, None, false).await;
    let dashboard = new_dashboard(&console, &db, false).await;
    let path = trigger_path(&dashboard, 0);
    let mut ids = Vec::new();
    for _ in 0..3 {
        let delivery = console
            .as_(&ann(), Method::POST, &path, Some(good_body()), None)
            .await
            .expect(202)
            .json();
        ids.push(delivery["id"].as_str().unwrap().to_owned());
    }
    // The oldest dies: every attempt failed (as the worker would have written it).
    let now = Timestamp::now();
    let claimed = storage
        .claim_deliveries(now, now.plus(Duration::from_secs(60)), 1, &TargetKind::ALL)
        .await
        .expect("claim");
    assert_eq!(claimed[0].id.as_str(), ids[0], "the oldest due first");
    let policy = dbconsole_core::model::RetryPolicy {
        max_attempts: 1,
        ..Default::default()
    };
    let dead = claimed[0].failed(
        now,
        "the workflow endpoint answered 500".to_owned(),
        &policy,
        None,
    );
    storage
        .swap_delivery(dead, claimed[0].updated_at)
        .await
        .expect("swap_delivery");

    let status_of = |listed: &[Value]| -> Vec<String> {
        listed
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        status_of(&deliveries(&console, "?status=dead").await),
        [ids[0].clone()]
    );
    assert_eq!(
        status_of(&deliveries(&console, "?status=pending").await),
        [ids[2].clone(), ids[1].clone()]
    );
    assert_eq!(
        status_of(&deliveries(&console, "?limit=1").await),
        [ids[2].clone()]
    );
    for status in ["lost", ""] {
        let errors = console
            .api
            .db(Method::GET, &format!("{DELIVERIES}?status={status}"), None)
            .await
            .expect(422)
            .json();
        assert!(errors["errors"]["status"].is_array(), "{errors}");
    }
    console
        .api
        .db(Method::GET, &format!("{DELIVERIES}/dlv_missing"), None)
        .await
        .expect(404);
    console
        .as_(&ann(), Method::GET, DELIVERIES, None, None)
        .await
        .expect(403);
    console
        .api
        .db(
            Method::POST,
            &format!("{DELIVERIES}/{}/retry", ids[1]),
            None,
        )
        .await
        .expect(409);
    console
        .api
        .db(
            Method::POST,
            &format!("{DELIVERIES}/dlv_missing/retry"),
            None,
        )
        .await
        .expect(404);
    let retried = console
        .api
        .db(
            Method::POST,
            &format!("{DELIVERIES}/{}/retry", ids[0]),
            None,
        )
        .await
        .expect(202)
        .json();
    assert_eq!(retried["status"], "pending");
    assert_eq!(retried["attempts"], 0);
    assert_eq!(retried["last_error"], "the workflow endpoint answered 500");
    let events = console
        .api
        .db(
            Method::GET,
            &format!("/api/v1/console/audit?resource={}", ids[0]),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(events["data"][0]["action"], "delivery.retry");
    assert_eq!(events["data"][0]["resource"]["kind"], "delivery");
    // Retried once: a second retry finds it pending.
    console
        .api
        .db(
            Method::POST,
            &format!("{DELIVERIES}/{}/retry", ids[0]),
            None,
        )
        .await
        .expect(409);
}

/// Records what it was asked to send, and takes it; or panics, as a transport's bug would.
#[derive(Debug, Default)]
struct Recorder {
    sent: std::sync::Mutex<Vec<String>>,
    panics: bool,
}

#[async_trait::async_trait]
impl Transport for Recorder {
    fn kinds(&self) -> Vec<TargetKind> {
        vec![TargetKind::Workflow]
    }

    async fn send(&self, delivery: &Delivery) -> Result<(), SendFailure> {
        self.sent
            .lock()
            .unwrap()
            .push(delivery.id.as_str().to_owned());
        assert!(!self.panics, "a transport's bug");
        Ok(())
    }
}

/// A worker claims only the kinds its transport sends, leaving the others untouched; a delivery
/// whose last attempt never ended (its worker died mid-send) is made dead without a send; a
/// transport that panics does not end the worker.
pub async fn the_worker_sends_its_kinds_and_buries_a_delivery_that_killed_its_worker(
    storage: Arc<dyn Storage>,
) {
    let policy = RetryPolicy {
        max_attempts: 3,
        ..RetryPolicy::default()
    };
    let now = Timestamp::now();
    let workflow = || Target::Workflow {
        workflow_id: "refund".to_owned(),
    };
    let due = Delivery::new(workflow(), "{}".to_owned(), "dash_w", now);
    let slack = Delivery::new(
        Target::Slack {
            channel: "#reviews".to_owned(),
        },
        "{}".to_owned(),
        "qry_w",
        now,
    );
    // Its third and last claim's worker died while sending: the lease ran out a second ago.
    let mut killer = Delivery::new(workflow(), "{}".to_owned(), "dash_w", now);
    killer.status = DeliveryStatus::Delivering;
    killer.attempts = 3;
    killer.due_at = Some(Timestamp::from_micros(now.as_micros() - 1_000_000));
    let origin = dbconsole_core::storage::testing::origin();
    storage
        .append_log(WriteLog {
            event: AuditEvent::new(origin, AuditAction::ActionTrigger, "dash_w", Vec::new()),
            answer: None,
            outbox: vec![due.clone(), slack.clone(), killer.clone()],
        })
        .await
        .expect("append_log");
    let recorder = Arc::new(Recorder::default());
    let options = WorkerOptions {
        policy,
        ..WorkerOptions::default()
    };
    let worker = Worker::new(
        Arc::clone(&storage),
        Arc::clone(&recorder) as Arc<dyn Transport>,
        options,
        Wake::new(),
    );
    let pass = worker.pass().await.expect("pass");
    assert_eq!(pass.claimed, 2, "{pass:?}");
    assert_eq!(
        *recorder.sent.lock().unwrap(),
        [due.id.as_str()],
        "only the due workflow run is sent"
    );
    let stored = |id: String| {
        let storage = Arc::clone(&storage);
        async move { storage.delivery(&id).await.unwrap().unwrap() }
    };
    assert_eq!(
        stored(due.id.to_string()).await.status,
        DeliveryStatus::Delivered
    );
    let dead = stored(killer.id.to_string()).await;
    assert_eq!(dead.status, DeliveryStatus::Dead);
    assert_eq!(dead.attempts, 3, "no attempt beyond the last");
    assert!(
        dead.last_error.as_deref().unwrap().contains("never ended"),
        "{dead:?}"
    );
    assert_eq!(
        stored(slack.id.to_string()).await,
        slack,
        "not this worker's kind: untouched"
    );

    // A transport that panics: the pass is lost, the worker goes on until it is stopped.
    let again = Delivery::new(workflow(), "{}".to_owned(), "dash_w", Timestamp::now());
    storage
        .append_log(WriteLog {
            event: AuditEvent::new(origin, AuditAction::ActionTrigger, "dash_w", Vec::new()),
            answer: None,
            outbox: vec![again.clone()],
        })
        .await
        .expect("append_log");
    let panicking = Arc::new(Recorder {
        panics: true,
        ..Recorder::default()
    });
    let worker = Worker::new(
        Arc::clone(&storage),
        Arc::clone(&panicking) as Arc<dyn Transport>,
        WorkerOptions {
            poll: Duration::from_millis(20),
            ..options
        },
        Wake::new(),
    );
    // Stopped once it has tried the delivery (and its transport has panicked): what ends it
    // is the stop, never the panic.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run(async move {
        let _ = stopped.await;
    }));
    eventually(
        Duration::from_secs(10),
        "the worker tries the due delivery",
        || async { (!panicking.sent.lock().unwrap().is_empty()).then_some(()) },
    )
    .await;
    let _ = stop.send(());
    running
        .await
        .expect("the worker ends when stopped, not by the panic");
    assert_eq!(*panicking.sent.lock().unwrap(), [again.id.as_str()]);
    assert_eq!(
        stored(again.id.to_string()).await.status,
        DeliveryStatus::Delivering,
        "left to its lease, to be claimed again"
    );
}

/// Expands to one test per outbox case over fresh stores made by `$storage`.
#[macro_export]
macro_rules! outbox_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            outbox,
            $storage,
            [
                triggers_store_a_pending_delivery_with_its_event,
                triggers_refused_store_nothing,
                review_requests_go_to_the_databases_slack_channel,
                deliveries_list_by_status_and_only_a_dead_letter_is_retried,
                the_worker_sends_its_kinds_and_buries_a_delivery_that_killed_its_worker,
            ]
        );
    };
}
