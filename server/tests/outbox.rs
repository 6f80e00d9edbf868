//! The outbox of the real `dbconsole` binary (docs/workflows.md, "Workflows and notifications"), against a
//! local receiver that speaks both the workflow endpoint's protocol and Slack's
//! `chat.postMessage`:
//!
//! - a row action's trigger reaches its workflow, signed, with its `Idempotency-Key`, and a
//!   query waiting for reviews asks for them in its database's Slack channel;
//! - a receiver that fails 3 times then succeeds gets the item; one that always fails leaves a
//!   dead letter, which a retry by hand delivers;
//! - a server killed (SIGKILL) between accepting triggers and delivering them delivers every
//!   accepted trigger after its restart, at least once, and invents none;
//! - two nodes on one PostgreSQL store deliver 1,000 triggers, none in flight twice at once.

mod support;

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use dbconsole_core::outbox::sign;
use dbconsole_tests::eventually;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use support::process::{HANG_GUARD, Server};
use support::{create_key, request};
use tokio::net::TcpListener;

const API_KEY: &str = "outbox-test-api-key";
const TOKEN: &str = "outbox-test-access-token";
const WORKFLOW_SECRET: &str = "whsec-outbox-test-0123456789";
const SLACK_TOKEN: &str = "xoxb-outbox-test-bot-token";
const DATABASES: &str = "/api/v1/console/databases";
const DELIVERIES: &str = "/api/v1/console/deliveries";

// ---------------------------------------------------------------------------------------------
// The receiver

/// How the receiver answers a workflow request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// 200.
    Accept,
    /// 500 for the first `n` requests of each idempotency key, then 200.
    FailFirst(usize),
    /// 500, always.
    Fail,
    /// Never answers (a hung endpoint).
    Stall,
}

/// One request the receiver took.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    key: Option<String>,
    signature: Option<String>,
    authorization: Option<String>,
    body: String,
}

#[derive(Default)]
struct ReceiverState {
    modes: HashMap<String, Mode>,
    default_mode: Option<Mode>,
    requests: Vec<Received>,
    /// Attempts per idempotency key.
    attempts: HashMap<String, usize>,
    /// Requests per key being answered now, and the keys ever seen twice at once.
    in_flight: HashMap<String, usize>,
    overlapping: HashSet<String>,
    /// Keys answered 200.
    accepted: HashSet<String>,
}

/// A local receiver: `/run/{workflow_id}` and `/api/chat.postMessage`.
#[derive(Clone)]
struct Receiver {
    addr: SocketAddr,
    state: Arc<Mutex<ReceiverState>>,
    /// How long each workflow request is held before its answer.
    hold: Duration,
}

impl Receiver {
    async fn start(hold: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Self {
            addr: listener.local_addr().unwrap(),
            state: Arc::default(),
            hold,
        };
        let serving = receiver.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let receiver = serving.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let receiver = receiver.clone();
                        async move { Ok::<_, Infallible>(receiver.answer(request).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        receiver
    }

    fn workflow_url(&self) -> String {
        format!("http://{}/run/{{workflow_id}}", self.addr)
    }

    fn slack_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    fn set_mode(&self, workflow_id: Option<&str>, mode: Mode) {
        let mut state = self.state.lock().unwrap();
        match workflow_id {
            Some(id) => {
                state.modes.insert(id.to_owned(), mode);
            }
            None => state.default_mode = Some(mode),
        }
    }

    fn requests(&self) -> Vec<Received> {
        self.state.lock().unwrap().requests.clone()
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let header = |name: &str| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let received = Received {
            path: path.clone(),
            key: header(sign::IDEMPOTENCY_HEADER),
            signature: header(sign::SIGNATURE_HEADER),
            authorization: header("authorization"),
            body: String::new(),
        };
        let body = request.into_body().collect().await.unwrap().to_bytes();
        let received = Received {
            body: String::from_utf8(body.to_vec()).unwrap(),
            ..received
        };
        if path == "/api/chat.postMessage" {
            let channel = serde_json::from_str::<Value>(&received.body).unwrap()["channel"].clone();
            self.state.lock().unwrap().requests.push(received);
            let answer = if channel == "#missing" {
                json!({"ok": false, "error": "channel_not_found"})
            } else {
                json!({"ok": true, "channel": channel, "ts": "1.0"})
            };
            return json_answer(StatusCode::OK, &answer);
        }
        let workflow = path.strip_prefix("/run/").unwrap_or_default().to_owned();
        let key = received.key.clone().unwrap_or_default();
        let mode = {
            let mut state = self.state.lock().unwrap();
            state.requests.push(received);
            *state.attempts.entry(key.clone()).or_default() += 1;
            let flying = state.in_flight.entry(key.clone()).or_default();
            *flying += 1;
            if *flying > 1 {
                state.overlapping.insert(key.clone());
            }
            state
                .modes
                .get(&workflow)
                .copied()
                .or(state.default_mode)
                .unwrap_or(Mode::Accept)
        };
        if mode == Mode::Stall {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(self.hold).await;
        let mut state = self.state.lock().unwrap();
        *state.in_flight.get_mut(&key).unwrap() -= 1;
        let attempts = state.attempts[&key];
        let ok = match mode {
            Mode::Accept => true,
            Mode::FailFirst(n) => attempts > n,
            Mode::Fail | Mode::Stall => false,
        };
        if ok {
            state.accepted.insert(key);
            json_answer(StatusCode::OK, &json!({"started": true}))
        } else {
            json_answer(StatusCode::INTERNAL_SERVER_ERROR, &json!({"error": "boom"}))
        }
    }
}

fn json_answer(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// The console

/// The server's environment, delivering to `receiver`.
fn env<'a>(receiver: &'a Receiver, urls: &'a (String, String)) -> Vec<(&'a str, &'a str)> {
    let _ = receiver;
    vec![
        ("DBCONSOLE_API_KEY", API_KEY),
        ("DBCONSOLE_ACCESS_TOKEN", TOKEN),
        ("DBCONSOLE_WORKFLOW_URL", urls.0.as_str()),
        ("DBCONSOLE_WORKFLOW_SECRET", WORKFLOW_SECRET),
        ("DBCONSOLE_SLACK_TOKEN", SLACK_TOKEN),
        ("DBCONSOLE_SLACK_API_URL", urls.1.as_str()),
        ("DBCONSOLE_DELIVERY_BACKOFF_MS", "20"),
        ("DBCONSOLE_DELIVERY_ATTEMPTS", "5"),
        ("DBCONSOLE_DELIVERY_TIMEOUT_SECS", "1"),
        // These cases prove delivery, with rows as their clients claim them; row tokens are
        // the HTTP suite's (`row_tokens.rs`) and the browser's.
        ("DBCONSOLE_ALLOW_UNVERIFIED_ROWS", "true"),
    ]
}

/// A server on the redb storage in `dir`, delivering to `receiver`.
async fn start(dir: &Path, receiver: &Receiver) -> Server {
    start_with(dir, receiver, &[]).await
}

/// [`start`] with these flags too.
async fn start_with(dir: &Path, receiver: &Receiver, flags: &[&str]) -> Server {
    let urls = (receiver.workflow_url(), receiver.slack_url());
    let mut env = env(receiver, &urls);
    env.push(("DBCONSOLE_STORAGE", "redb"));
    let dir = dir.to_str().unwrap();
    let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--data-dir", dir];
    args.extend_from_slice(flags);
    Server::start_with(&env, &args).await
}

async fn call(
    addr: SocketAddr,
    key: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map(|b| b.to_string());
    let response = request(addr, method, path, &[("x-api-key", key)], body.as_deref()).await;
    let json = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response.status, json)
}

/// A database (Slack channel `#db-reviews`; a credential that needs 1 review and one that
/// needs none) and a dashboard with one panel and two actions: `refund` (a column and a
/// prompt) and `other` (`workflow` as given). Answers (database, dashboard) as stored.
async fn fixtures(addr: SocketAddr, workflows: &[&str]) -> (Value, Value) {
    let (status, db) = call(
        addr,
        API_KEY,
        "POST",
        DATABASES,
        Some(json!({
            "name": "Orders",
            "adapter": "postgres",
            "hostname": "db.internal",
            "database": "orders",
            "slack_channel": "#db-reviews",
            "credentials": [
                {"username": "reader", "password": "reader-pw-do-not-leak", "reviews_required": 0},
                {"username": "writer", "password": "writer-pw-do-not-leak", "reviews_required": 1},
            ],
        })),
    )
    .await;
    assert_eq!(status, 200, "{db}");
    let actions: Vec<Value> = workflows
        .iter()
        .map(|workflow| {
            json!({
                "label": format!("Start {workflow}"),
                "workflow_id": workflow,
                "input_mappings": [
                    {"workflow_input_key": "order_id", "column": "id"},
                    {"workflow_input_key": "reason", "prompt_user": true, "prompt": "Why?"},
                ],
            })
        })
        .collect();
    let (status, dashboard) = call_bearer(
        addr,
        "POST",
        "/v1/dashboards",
        json!({
            "name": "Orders",
            "restricted_access": false,
            "panels": [{
                "title": "Recent orders",
                "details": {"__type__": "query", "query": "SELECT 1 AS id", "credential_id": db["credentials"][0]["id"]},
                "actions": actions,
            }],
        }),
    )
    .await;
    assert_eq!(status, 200, "{dashboard}");
    (db, dashboard)
}

async fn call_bearer(addr: SocketAddr, method: &str, path: &str, body: Value) -> (u16, Value) {
    let bearer = format!("Bearer {TOKEN}");
    let body = body.to_string();
    let response = request(
        addr,
        method,
        path,
        &[("authorization", &bearer)],
        Some(&body),
    )
    .await;
    let json = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response.status, json)
}

/// The trigger path of action `index` of the dashboard's panel (the compat path, which takes
/// a user's API key).
fn trigger_path(dashboard: &Value, index: usize) -> String {
    let panel = &dashboard["panels"][0];
    format!(
        "/api/v1/dashboards/{}/panels/{}/actions/{}/trigger",
        dashboard["id"].as_str().unwrap(),
        panel["id"].as_str().unwrap(),
        panel["actions"][index]["id"].as_str().unwrap()
    )
}

async fn user_key(dir: &Path) -> String {
    create_key(
        dir,
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
    .await
}

/// Waits until delivery `id` is in `status`; answers it.
async fn until_status(addr: SocketAddr, id: &str, status: &str) -> Value {
    let path = format!("{DELIVERIES}/{id}");
    eventually(HANG_GUARD, &format!("{id} becomes {status}"), || async {
        let (code, delivery) = call(addr, API_KEY, "GET", &path, None).await;
        assert_eq!(code, 200, "{delivery}");
        (delivery["status"] == status).then_some(delivery)
    })
    .await
}

/// A POST that may meet a dead server: `None` when the connection fails or is cut.
async fn try_post(addr: SocketAddr, path: &str, key: &str, body: &Value) -> Option<(u16, Value)> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(connection);
    let request = Request::post(path)
        .header("host", "test")
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .ok()?;
    let response = tokio::time::timeout(HANG_GUARD, sender.send_request(request))
        .await
        .ok()?
        .ok()?;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.ok()?.to_bytes();
    Some((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

// ---------------------------------------------------------------------------------------------
// The tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_reaches_its_workflow_signed_and_a_review_request_reaches_slack() {
    let receiver = Receiver::start(Duration::ZERO).await;
    let data = tempfile::tempdir().unwrap();
    let ann = user_key(data.path()).await;
    let server = start(data.path(), &receiver).await;
    let (db, dashboard) = fixtures(server.addr, &["refund/v2 ?x"]).await;
    let path = trigger_path(&dashboard, 0);

    // A missing prompt names its workflow input key; nothing is stored.
    let (status, refused) = call(
        server.addr,
        &ann,
        "POST",
        &path,
        Some(json!({"row": {"id": 7}})),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert!(refused["errors"]["inputs.reason"].is_array(), "{refused}");

    let (status, accepted) = call(
        server.addr,
        &ann,
        "POST",
        &path,
        Some(json!({"row": {"id": 7, "email": "x@example.com"}, "prompted": {"reason": "late"}})),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_owned();
    assert_eq!(accepted["status"], "pending");
    let delivered = until_status(server.addr, &id, "delivered").await;
    assert_eq!(delivered["attempts"], 1, "{delivered}");

    let requests = receiver.requests();
    let workflow: Vec<&Received> = requests
        .iter()
        .filter(|r| r.path.starts_with("/run/"))
        .collect();
    assert_eq!(workflow.len(), 1, "{requests:?}");
    let got = workflow[0];
    // The workflow id is one escaped path segment.
    assert_eq!(got.path, "/run/refund%2Fv2%20%3Fx");
    assert_eq!(got.key.as_deref(), Some(id.as_str()));
    let body: Value = serde_json::from_str(&got.body).unwrap();
    assert_eq!(body["workflow_id"], "refund/v2 ?x");
    assert_eq!(body["inputs"], json!({"order_id": 7, "reason": "late"}));
    assert_eq!(body["dashboard_id"], dashboard["id"]);
    assert_eq!(body["panel_id"], dashboard["panels"][0]["id"]);
    assert_eq!(
        body["action_id"],
        dashboard["panels"][0]["actions"][0]["id"]
    );
    assert_eq!(body["triggered_by"], "ann@example.com");
    assert_eq!(body["delivery_id"], id.as_str());
    let signature = got.signature.as_deref().expect("a signature header");
    assert_eq!(
        sign::verify(
            WORKFLOW_SECRET.as_bytes(),
            signature,
            got.body.as_bytes(),
            now_secs(),
            sign::DEFAULT_TOLERANCE_SECS,
        ),
        Ok(())
    );
    assert_eq!(
        sign::verify(
            b"another-secret-entirely",
            signature,
            got.body.as_bytes(),
            now_secs(),
            sign::DEFAULT_TOLERANCE_SECS,
        ),
        Err(sign::SignatureError::Mismatch)
    );

    // A query that waits for a review asks for it in the database's channel.
    let (status, query) = call(
        server.addr,
        &ann,
        "POST",
        "/api/v1/console/queries",
        Some(json!({
            "database_id": db["id"],
            "credential_id": db["credentials"][1]["id"],
            "query": "DELETE FROM orders WHERE note = 'secret-marker-in-query'",
            "title": "Clean the notes",
            "description": "They hold a marker.",
        })),
    )
    .await;
    assert_eq!(status, 200, "{query}");
    assert_eq!(query["status"], "awaiting_review");
    // One that needs none asks nothing.
    let (status, _) = call(
        server.addr,
        &ann,
        "POST",
        "/api/v1/console/queries",
        Some(json!({
            "database_id": db["id"],
            "credential_id": db["credentials"][0]["id"],
            "query": "SELECT 1",
        })),
    )
    .await;
    assert_eq!(status, 200);
    let (_, slack) = call(
        server.addr,
        API_KEY,
        "GET",
        &format!("{DELIVERIES}?status=delivered"),
        None,
    )
    .await;
    let slack_id = eventually(
        HANG_GUARD,
        &format!("a Slack delivery is listed (delivered at first: {slack})"),
        || async {
            let (_, listed) = call(server.addr, API_KEY, "GET", DELIVERIES, None).await;
            listed["data"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["kind"] == "slack")
                .map(|found| found["id"].as_str().unwrap().to_owned())
        },
    )
    .await;
    let delivered = until_status(server.addr, &slack_id, "delivered").await;
    assert_eq!(delivered["resource_id"], query["id"]);
    let requests = receiver.requests();
    let posted: Vec<&Received> = requests
        .iter()
        .filter(|r| r.path == "/api/chat.postMessage")
        .collect();
    assert_eq!(posted.len(), 1, "one message, for the query that waits");
    let message: Value = serde_json::from_str(&posted[0].body).unwrap();
    assert_eq!(message["channel"], "#db-reviews");
    let text = message["text"].as_str().unwrap();
    for part in [
        "ann@example.com",
        "Orders",
        "1 review",
        query["id"].as_str().unwrap(),
    ] {
        assert!(text.contains(part), "{text} names {part}");
    }
    assert!(!text.contains("secret-marker-in-query"), "{text}");
    assert_eq!(
        posted[0].authorization.as_deref(),
        Some(format!("Bearer {SLACK_TOKEN}").as_str())
    );

    // The trigger's event, and the listing by status.
    let (_, events) = call(
        server.addr,
        API_KEY,
        "GET",
        &format!(
            "/api/v1/console/audit?resource={}",
            dashboard["id"].as_str().unwrap()
        ),
        None,
    )
    .await;
    let actions: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "action.trigger").count(),
        1
    );
    let (_, pending) = call(
        server.addr,
        API_KEY,
        "GET",
        &format!("{DELIVERIES}?status=pending"),
        None,
    )
    .await;
    assert_eq!(pending["data"], json!([]));

    let (_, stdout, stderr) = server.stop().await;
    for secret in [
        WORKFLOW_SECRET,
        SLACK_TOKEN,
        "reader-pw-do-not-leak",
        "writer-pw-do-not-leak",
    ] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "a secret in the logs"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flaky_receiver_gets_the_item_and_a_broken_one_leaves_a_dead_letter_retried_by_hand() {
    let receiver = Receiver::start(Duration::ZERO).await;
    receiver.set_mode(Some("flaky"), Mode::FailFirst(3));
    receiver.set_mode(Some("broken"), Mode::Fail);
    let data = tempfile::tempdir().unwrap();
    let ann = user_key(data.path()).await;
    let server = start_with(data.path(), &receiver, &["--metrics-listen", "127.0.0.1:0"]).await;
    let metrics_line = server
        .stdout
        .line("the metrics line", |line| line.starts_with("metrics on "))
        .await;
    let metrics_addr: SocketAddr = metrics_line
        .trim_start_matches("metrics on http://")
        .trim_end_matches("/metrics")
        .parse()
        .unwrap();
    let (_, dashboard) = fixtures(server.addr, &["flaky", "broken"]).await;
    let body = json!({"row": {"id": 1}, "prompted": {"reason": "r"}});
    let (status, flaky) = call(
        server.addr,
        &ann,
        "POST",
        &trigger_path(&dashboard, 0),
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, 202, "{flaky}");
    let (status, broken) = call(
        server.addr,
        &ann,
        "POST",
        &trigger_path(&dashboard, 1),
        Some(body),
    )
    .await;
    assert_eq!(status, 202, "{broken}");

    let flaky_id = flaky["id"].as_str().unwrap();
    let delivered = until_status(server.addr, flaky_id, "delivered").await;
    assert_eq!(
        delivered["attempts"], 4,
        "three failures, then taken: {delivered}"
    );
    let broken_id = broken["id"].as_str().unwrap();
    let dead = until_status(server.addr, broken_id, "dead").await;
    assert_eq!(dead["attempts"], 5, "{dead}");
    assert_eq!(
        dead["last_error"],
        "the workflow endpoint answered 500 Internal Server Error"
    );
    assert_eq!(dead["due_at"], Value::Null);
    {
        let state = receiver.state.lock().unwrap();
        assert_eq!(state.attempts[flaky_id], 4);
        assert_eq!(state.attempts[broken_id], 5, "no attempt after the last");
    }
    // The attempts, counted: the flaky one's 3 retries and delivery, the broken one's 4
    // retries and death.
    let metrics = request(metrics_addr, "GET", "/metrics", &[], None)
        .await
        .body;
    for (outcome, count) in [("delivered", 1), ("retry", 7), ("dead", 1)] {
        let line = format!(
            "dbconsole_delivery_attempts_total{{kind=\"workflow\",outcome=\"{outcome}\"}} {count}"
        );
        assert!(metrics.contains(&line), "{line} in:\n{metrics}");
    }
    let (_, listed) = call(
        server.addr,
        API_KEY,
        "GET",
        &format!("{DELIVERIES}?status=dead"),
        None,
    )
    .await;
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [broken_id]);

    // A delivered one is not retried by hand; a dead one is, and goes out again.
    let (status, _) = call(
        server.addr,
        API_KEY,
        "POST",
        &format!("{DELIVERIES}/{flaky_id}/retry"),
        None,
    )
    .await;
    assert_eq!(status, 409);
    // A person's query key manages no deliveries.
    let (status, _) = call(server.addr, &ann, "GET", DELIVERIES, None).await;
    assert_eq!(status, 403);
    receiver.set_mode(Some("broken"), Mode::Accept);
    let (status, retried) = call(
        server.addr,
        API_KEY,
        "POST",
        &format!("{DELIVERIES}/{broken_id}/retry"),
        None,
    )
    .await;
    assert_eq!(status, 202, "{retried}");
    assert_eq!(retried["status"], "pending");
    assert_eq!(retried["attempts"], 0);
    let delivered = until_status(server.addr, broken_id, "delivered").await;
    assert_eq!(delivered["attempts"], 1);
    let (_, events) = call(
        server.addr,
        API_KEY,
        "GET",
        &format!("/api/v1/console/audit?resource={broken_id}"),
        None,
    )
    .await;
    assert_eq!(events["data"][0]["action"], "delivery.retry", "{events}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_killed_before_delivering_delivers_every_accepted_trigger_after_restart() {
    // The endpoint hangs: every trigger is accepted and none delivered when the kill comes.
    let receiver = Receiver::start(Duration::ZERO).await;
    receiver.set_mode(None, Mode::Stall);
    let data = tempfile::tempdir().unwrap();
    let ann = user_key(data.path()).await;
    let server = start(data.path(), &receiver).await;
    let (_, dashboard) = fixtures(server.addr, &["kill"]).await;
    let path = trigger_path(&dashboard, 0);

    // Four clients trigger as fast as they can; the kill lands among them.
    let accepted = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let sent = Arc::new(Mutex::new(HashSet::<String>::new()));
    let mut clients = Vec::new();
    for client in 0..4 {
        let (addr, ann, path) = (server.addr, ann.clone(), path.clone());
        let (accepted, sent) = (Arc::clone(&accepted), Arc::clone(&sent));
        clients.push(tokio::spawn(async move {
            for n in 0.. {
                let marker = format!("c{client}-n{n}");
                sent.lock().unwrap().insert(marker.clone());
                let body = json!({"row": {"id": marker}, "prompted": {"reason": "kill"}});
                let Some((status, answer)) = try_post(addr, &path, &ann, &body).await else {
                    return;
                };
                if status == 202 {
                    let id = answer["id"].as_str().unwrap().to_owned();
                    accepted.lock().unwrap().push((id, marker));
                }
            }
        }));
    }
    // Let some be accepted, then kill without warning.
    eventually(HANG_GUARD, "triggers are accepted", || async {
        let count = accepted.lock().unwrap().len();
        (count >= 40).then_some(())
    })
    .await;
    let mut server = server;
    server.signal(nix::sys::signal::Signal::SIGKILL);
    server.exit_status().await;
    for client in clients {
        client.await.unwrap();
    }
    let accepted = accepted.lock().unwrap().clone();
    assert!(
        receiver.state.lock().unwrap().accepted.is_empty(),
        "nothing was delivered before the kill"
    );

    // The endpoint works again; the restarted server delivers what the dead one leased.
    receiver.set_mode(None, Mode::Accept);
    let server = start(data.path(), &receiver).await;
    for (id, _) in &accepted {
        until_status(server.addr, id, "delivered").await;
    }
    let state = receiver.state.lock().unwrap();
    let sent = sent.lock().unwrap();
    for (id, _) in &accepted {
        assert!(
            state.accepted.contains(id),
            "{id} was accepted and never delivered"
        );
    }
    // None invented: every delivered request is a trigger a client sent.
    for received in state
        .requests
        .iter()
        .filter(|r| r.path.starts_with("/run/"))
    {
        let body: Value = serde_json::from_str(&received.body).unwrap();
        let marker = body["inputs"]["order_id"].as_str().unwrap();
        assert!(sent.contains(marker), "{marker} was never sent");
        if let Some((id, sent_marker)) = accepted
            .iter()
            .find(|(id, _)| Some(id.as_str()) == received.key.as_deref())
        {
            assert_eq!(marker, sent_marker, "{id} carries its own trigger's row");
        }
    }
    println!(
        "{} triggers accepted before the kill; {} requests reached the endpoint, {} keys taken",
        accepted.len(),
        state.requests.len(),
        state.accepted.len()
    );
}

/// The sealing key both PostgreSQL nodes share (base64 of 32 bytes).
const SHARED_KEY: &str = "b3V0Ym94LXRlc3RzLXNoYXJlLW9uZS1zZWFsLWtleTE=";

/// The environment of a node (or a `keys` command) on the PostgreSQL `schema`.
fn postgres_env(schema: &str) -> Vec<(&'static str, String)> {
    vec![
        ("DBCONSOLE_STORAGE", "postgres".to_owned()),
        (
            "DBCONSOLE_DATABASE_URL",
            dbconsole_storage_postgres::testing::test_url(),
        ),
        ("DBCONSOLE_DATABASE_SCHEMA", schema.to_owned()),
        ("DBCONSOLE_SECRET_KEY", SHARED_KEY.to_owned()),
        ("DBCONSOLE_ALLOW_UNVERIFIED_ROWS", "true".to_owned()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_postgres_nodes_deliver_a_thousand_triggers_none_in_flight_twice() {
    const TRIGGERS: usize = 1_000;
    // Each request is held a moment, so two deliveries of one item at once would overlap.
    let receiver = Receiver::start(Duration::from_millis(20)).await;
    let schema = dbconsole_storage_postgres::testing::fresh_schema();
    let urls = (receiver.workflow_url(), receiver.slack_url());
    let mut env: Vec<(&str, String)> = env(&receiver, &urls)
        .into_iter()
        .map(|(k, v)| (k, v.to_owned()))
        .collect();
    env.extend(postgres_env(&schema));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = Vec::new();
    for name in ["a", "b"] {
        let data = dir.path().join(name);
        let data = data.to_str().unwrap();
        nodes.push(
            Server::start_with(
                &env,
                &["serve", "--listen", "127.0.0.1:0", "--data-dir", data],
            )
            .await,
        );
    }
    let created = support::dbconsole(
        &env,
        &[
            "keys",
            "create",
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
    .output()
    .await
    .unwrap();
    assert!(created.status.success(), "{created:?}");
    let ann = String::from_utf8(created.stdout)
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("secret:").map(|s| s.trim().to_owned()))
        .expect("the key's secret");
    let (_, dashboard) = fixtures(nodes[0].addr, &["thousand"]).await;
    let path = trigger_path(&dashboard, 0);

    // 1,000 triggers, split over both nodes by 8 clients.
    let addrs: Vec<SocketAddr> = nodes.iter().map(|node| node.addr).collect();
    let mut clients = Vec::new();
    for client in 0..8 {
        let (addrs, ann, path) = (addrs.clone(), ann.clone(), path.clone());
        clients.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in (client..TRIGGERS).step_by(8) {
                let body = json!({"row": {"id": n}, "prompted": {"reason": "load"}});
                let (status, answer) = call(addrs[n % 2], &ann, "POST", &path, Some(body)).await;
                assert_eq!(status, 202, "{answer}");
                ids.push(answer["id"].as_str().unwrap().to_owned());
            }
            ids
        }));
    }
    let mut ids = HashSet::new();
    for client in clients {
        ids.extend(client.await.unwrap());
    }
    assert_eq!(ids.len(), TRIGGERS);

    // Every one delivered: nothing pending or in flight, and the receiver took each key.
    eventually(
        Duration::from_secs(120),
        "every trigger is delivered",
        || async {
            let accepted = receiver.state.lock().unwrap().accepted.len();
            if accepted < TRIGGERS {
                return None;
            }
            let mut open = 0;
            for status in ["pending", "delivering"] {
                let (_, listed) = call(
                    addrs[0],
                    API_KEY,
                    "GET",
                    &format!("{DELIVERIES}?status={status}"),
                    None,
                )
                .await;
                open += listed["data"].as_array().unwrap().len();
            }
            (open == 0).then_some(())
        },
    )
    .await;
    let state = receiver.state.lock().unwrap();
    assert!(
        state.overlapping.is_empty(),
        "delivered twice at once: {:?}",
        state.overlapping
    );
    let received: HashSet<&str> = state
        .requests
        .iter()
        .filter_map(|r| r.key.as_deref())
        .collect();
    let expected: HashSet<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(
        received, expected,
        "exactly the accepted triggers, none invented"
    );
    println!(
        "{TRIGGERS} triggers through two nodes: {} requests reached the endpoint ({} repeated), \
         none in flight twice",
        state.requests.len(),
        state.requests.len() - TRIGGERS
    );
}
