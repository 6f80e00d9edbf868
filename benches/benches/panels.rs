//! Dashboard panels under load (issue "Fast where people wait"): how many one-row panel runs per
//! second the release `dbconsole` server on redb answers to 4 keep-alive clients, against
//! `pgbench -M prepared` running a script of a panel's shape (`BEGIN READ ONLY; SELECT 1 AS one;
//! ROLLBACK;`) at the same concurrency on the same PostgreSQL, measured in the same run.
//!
//! Run: `bash benches/panels.sh` (it builds the release server, then this bench). It needs the
//! PostgreSQL of `.ci/db-servers-up.sh` (`BENCH_PG_HOST`, `BENCH_PG_PORT`, `BENCH_PG_DATABASE`,
//! `BENCH_PG_USER`, `BENCH_PG_PASSWORD` change it) and `pgbench`. Each figure is the median of
//! `LOAD_ROUNDS` (3) rounds of `LOAD_SECONDS` (5 s). A panel run is: the caller's key, the
//! dashboard, the credential's database and its access control, a pooled session, the
//! read-only transaction, the row encoded, and the run's audit event written durably.

use std::time::Duration;

use dbconsole_benches::loopback::{
    Phase, load, read_response, release_server, request_bytes, start_server, user_key,
};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const API_KEY: &str = "panels-bench-api-key";
const TOKEN: &str = "panels-bench-access-token";
const CLIENTS: usize = 4;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn call(addr: std::net::SocketAddr, request: &[u8]) -> (u16, serde_json::Value) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let mut reader = BufReader::new(stream);
    reader.get_mut().write_all(request).await.expect("send");
    let (status, body) = read_response(&mut reader).await.expect("answer");
    (
        status,
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    )
}

/// `pgbench -M prepared -c 4` on a panel's shape for `seconds`: transactions per second.
fn pgbench(seconds: u64) -> f64 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = dir.path().join("panel.sql");
    std::fs::write(&script, "BEGIN READ ONLY;\nSELECT 1 AS one;\nROLLBACK;\n").expect("the script");
    let output = std::process::Command::new("pgbench")
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &CLIENTS.to_string(),
            "-j",
            "2",
        ])
        .args(["-T", &seconds.to_string(), "-f"])
        .arg(&script)
        .args(["-h", &env_or("BENCH_PG_HOST", "127.0.0.1")])
        .args(["-p", &env_or("BENCH_PG_PORT", "5432")])
        .args(["-U", &env_or("BENCH_PG_USER", "checker")])
        .arg(env_or("BENCH_PG_DATABASE", "checkdb"))
        .env("PGPASSWORD", env_or("BENCH_PG_PASSWORD", "checkpw"))
        .output()
        .expect("pgbench (apt install postgresql-client)");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "pgbench failed: {text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text.lines()
        .find_map(|line| line.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|tps| tps.parse().ok())
        .unwrap_or_else(|| panic!("no tps in pgbench's output: {text}"))
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(run());
}

async fn run() {
    let seconds: u64 = env_or("LOAD_SECONDS", "5").parse().unwrap_or(5);
    let rounds: usize = env_or("LOAD_ROUNDS", "3").parse().unwrap_or(3);
    let binary = release_server("benches/panels.sh");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("data");
    let user = user_key(&binary, &data);
    let env = [
        ("DBCONSOLE_API_KEY", API_KEY),
        ("DBCONSOLE_ACCESS_TOKEN", TOKEN),
        ("RUST_LOG", "warn"),
    ];
    let (server, addr) = start_server(&binary, &data, &env).await;

    let database = serde_json::json!({
        "name": "Panels bench",
        "adapter": "postgres",
        "hostname": env_or("BENCH_PG_HOST", "127.0.0.1"),
        "port": env_or("BENCH_PG_PORT", "5432").parse::<u16>().unwrap_or(5432),
        "database": env_or("BENCH_PG_DATABASE", "checkdb"),
        "credentials": [{"username": env_or("BENCH_PG_USER", "checker"), "password": env_or("BENCH_PG_PASSWORD", "checkpw")}],
    })
    .to_string();
    let (status, db) = call(
        addr,
        &request_bytes(
            "POST",
            "/api/v1/console/databases",
            API_KEY,
            Some(database.as_bytes()),
        ),
    )
    .await;
    assert_eq!(status, 200, "{db}");
    let dashboard = serde_json::json!({
        "name": "Panels bench",
        "restricted_access": false,
        "panels": [{
            "title": "One",
            "details": {"__type__": "query", "query": "SELECT 1 AS one", "credential_id": db["credentials"][0]["id"]},
        }],
    })
    .to_string();
    let (status, dashboard) = call(
        addr,
        &request_bytes(
            "POST",
            "/api/v1/dashboards",
            API_KEY,
            Some(dashboard.as_bytes()),
        ),
    )
    .await;
    assert_eq!(status, 200, "{dashboard}");
    let path = format!(
        "/api/v1/dashboards/{}/panels/{}/run",
        dashboard["id"].as_str().unwrap(),
        dashboard["panels"][0]["id"].as_str().unwrap()
    );
    let run = request_bytes("POST", &path, &user, Some(b"{}"));
    let (status, first) = call(addr, &run).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["rows"], serde_json::json!([[1]]));
    let requests = std::sync::Arc::new(vec![run]);

    let period = Duration::from_secs(seconds);
    let mut panels: Vec<Phase> = Vec::new();
    let mut baseline = Vec::new();
    for _ in 0..rounds {
        panels.push(load(addr, CLIENTS, std::sync::Arc::clone(&requests), 200, period).await);
        baseline.push(
            tokio::task::spawn_blocking(move || pgbench(seconds))
                .await
                .expect("pgbench"),
        );
    }
    let runs = median(panels.iter().map(|p| p.per_second).collect());
    let tps = median(baseline);
    let p50 = median(
        panels
            .iter()
            .map(|p| p.p50.as_secs_f64() * 1000.0)
            .collect(),
    );
    let p99 = median(
        panels
            .iter()
            .map(|p| p.p99.as_secs_f64() * 1000.0)
            .collect(),
    );
    println!("panel runs, {CLIENTS} clients: {runs:.0}/s (p50 {p50:.2} ms, p99 {p99:.2} ms)");
    println!("pgbench -M prepared -c {CLIENTS}, BEGIN READ ONLY; SELECT 1; ROLLBACK: {tps:.0} tps");
    println!("ratio: {:.2}x (goal 0.5x)", runs / tps);
    drop(server);
}
