//! The outbox end to end, on loopback (docs/workflows.md, "Workflows and notifications"): how many row
//! action triggers the release `dbconsole` server on redb accepts per second while its worker
//! delivers them to a local workflow endpoint, against the durable `POST` of a database on the
//! same store, measured in the same run.
//!
//! Run: `bash benches/outbox.sh` (it builds the release server, then this bench). Each figure
//! is the median of 3 rounds of 5 s (`LOAD_SECONDS`, `LOAD_ROUNDS` change that), 8 keep-alive
//! connections. A trigger is one durable commit holding its audit event and its delivery; the
//! worker then claims it (a commit), sends it, and writes its outcome (a commit), all on the
//! same store while the load goes on. After the last round the bench waits until the endpoint
//! has every accepted trigger, and prints the delivery backlog it drained.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dbconsole_benches::fixtures::create_database_body;
use dbconsole_benches::loopback::{
    Phase, load, read_response, release_server, request_bytes, start_server, user_key,
};
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const API_KEY: &str = "outbox-bench-api-key";
const TOKEN: &str = "outbox-bench-access-token";
const DATABASES: &str = "/api/v1/console/databases";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut phases: Vec<Phase>) -> Phase {
    phases.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
    phases[phases.len() / 2].clone()
}

/// A workflow endpoint that takes every request at once, counting them.
async fn endpoint(received: Arc<AtomicUsize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let received = Arc::clone(&received);
            tokio::spawn(async move {
                let service = service_fn(move |_request| {
                    received.fetch_add(1, Ordering::Relaxed);
                    async { Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::new()))) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// One request on a fresh connection: status and JSON body.
async fn call(addr: SocketAddr, request: &[u8]) -> (u16, serde_json::Value) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let mut reader = BufReader::new(stream);
    reader.get_mut().write_all(request).await.unwrap();
    let (status, body) = read_response(&mut reader).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(run());
}

async fn run() {
    let period = Duration::from_secs(env_or("LOAD_SECONDS", 5));
    let rounds = env_or("LOAD_ROUNDS", 3) as usize;
    let binary = release_server("benches/outbox.sh");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("data");
    let received = Arc::new(AtomicUsize::new(0));
    let endpoint = endpoint(Arc::clone(&received)).await;

    // A person's key, made before the server starts.
    let user = user_key(&binary, &data);

    let workflow_url = format!("http://{endpoint}/run/{{workflow_id}}");
    let env = [
        ("DBCONSOLE_API_KEY", API_KEY),
        ("DBCONSOLE_ACCESS_TOKEN", TOKEN),
        ("DBCONSOLE_WORKFLOW_URL", workflow_url.as_str()),
        ("DBCONSOLE_WORKFLOW_SECRET", "outbox-bench-workflow-secret"),
        // The load sends the same claimed row each time (the durable write is what is measured).
        ("DBCONSOLE_ALLOW_UNVERIFIED_ROWS", "true"),
        ("RUST_LOG", "warn"),
    ];
    let (_server, addr) = start_server(&binary, &data, &env).await;

    let database_body = create_database_body();
    let (status, db) = call(
        addr,
        &request_bytes("POST", DATABASES, API_KEY, Some(&database_body)),
    )
    .await;
    assert_eq!(status, 200, "{db}");
    let dashboard = serde_json::json!({
        "name": "Bench",
        "restricted_access": false,
        "panels": [{
            "title": "Orders",
            "details": {"__type__": "query", "query": "SELECT 1 AS id", "credential_id": db["credentials"][0]["id"]},
            "actions": [{"label": "Refund", "workflow_id": "refund", "input_mappings": [
                {"workflow_input_key": "order", "column": "id"},
                {"workflow_input_key": "reason", "prompt_user": true, "prompt": "Why?"},
            ]}],
        }],
    })
    .to_string();
    let (status, dashboard) = call(
        addr,
        format!(
            "POST /api/v1/dashboards HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{dashboard}",
            dashboard.len()
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{dashboard}");
    let panel = &dashboard["panels"][0];
    let path = format!(
        "/api/v1/dashboards/{}/panels/{}/actions/{}/trigger",
        dashboard["id"].as_str().unwrap(),
        panel["id"].as_str().unwrap(),
        panel["actions"][0]["id"].as_str().unwrap()
    );
    let trigger = br#"{"row":{"id":42,"email":"x@example.com"},"prompted":{"reason":"late"}}"#;
    let triggers = Arc::new(vec![request_bytes("POST", &path, &user, Some(trigger))]);
    let creates = Arc::new(vec![request_bytes(
        "POST",
        DATABASES,
        API_KEY,
        Some(&database_body),
    )]);

    let mut trigger_phases = Vec::new();
    let mut create_phases = Vec::new();
    let mut accepted = 0usize;
    let mut backlog = 0usize;
    for _ in 0..rounds {
        let phase = load(addr, 8, Arc::clone(&triggers), 202, period).await;
        accepted += (phase.per_second * period.as_secs_f64()).round() as usize;
        // What the worker had not delivered yet when the round's load stopped.
        backlog = backlog.max(accepted.saturating_sub(received.load(Ordering::Relaxed)));
        trigger_phases.push(phase);
        create_phases.push(load(addr, 8, Arc::clone(&creates), 200, period).await);
    }
    let drained = Instant::now();
    while received.load(Ordering::Relaxed) < accepted {
        assert!(
            drained.elapsed() < Duration::from_secs(300),
            "the endpoint got {} of {accepted} triggers",
            received.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (triggers, creates) = (median(trigger_phases), median(create_phases));

    println!(
        "\noutbox end to end on loopback, median of {rounds} rounds of {period:?}, 8 connections:"
    );
    println!(
        "{:<52} {:>10} {:>10} {:>10} {:>8}",
        "", "req/s", "p50", "p99", "ratio"
    );
    println!(
        "{:<52} {:>10.0} {:>10.2?} {:>10.2?} {:>8.2}",
        "POST trigger, durable, delivery running",
        triggers.per_second,
        triggers.p50,
        triggers.p99,
        triggers.per_second / creates.per_second
    );
    println!(
        "{:<52} {:>10.0} {:>10.2?} {:>10.2?}",
        "POST database, durable (baseline)", creates.per_second, creates.p50, creates.p99
    );
    println!(
        "{accepted} triggers accepted; at most {backlog} were undelivered when a round's load \
         stopped; the endpoint got {} requests",
        received.load(Ordering::Relaxed)
    );
}
