//! Dashboard panels under load (issue "Fast where people wait"): how many one-row panel runs per
//! second the release `dbconsole` server on redb answers to 4 keep-alive clients, against pgbench
//! running a panel's transaction at the same concurrency on the same PostgreSQL, measured in the
//! same run, two ways (issue "Fair baselines"): `pgbench -M prepared` with a script of three
//! statements (`BEGIN READ ONLY; SELECT 1 AS one; ROLLBACK;`, three round trips), and `pgbench -M
//! simple` with the same transaction as one compound statement (`BEGIN READ ONLY\; SELECT 1 AS
//! one\; ROLLBACK`: one query, one round trip, as a panel run sends its transaction in one write).
//!
//! The same run also measures a one-row panel over a stored table on a database without
//! policies, and the same panel on a database whose policy masks one of its columns (run as the
//! protected role `dp_reader`, through its masking view): the protected ÷ unprotected ratio.
//! With `BENCH_BEFORE=<another dbconsole binary>`, every figure is measured for that binary
//! too, round by round in turn with the current one: before and after in one run.
//!
//! Run: `bash benches/panels.sh` (it builds the release server, then this bench). It needs the
//! PostgreSQL of `.ci/db-servers-up.sh` (as `checker`, who owns `checkdb`, and its protected
//! role `dp_reader`) and `pgbench`. Each figure is the median of `LOAD_ROUNDS` (3) rounds of
//! `LOAD_SECONDS` (5 s). A panel run is: the caller's key, the dashboard, the credential's
//! database and its access control, a pooled session, the read-only transaction, the row
//! encoded, and the run's audit event written durably.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dbconsole_benches::loopback::{
    Phase, load, read_response, release_server, request_bytes, start_server, user_key,
};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const API_KEY: &str = "panels-bench-api-key";
const TOKEN: &str = "panels-bench-access-token";
const CLIENTS: usize = 4;

/// The stored table both the unprotected and the protected panel read one row of.
const TABLE: &str = "panels_bench_people";
/// The protected role (`.ci/db-servers-up.sh`) and its masking schema for `public`.
const READER: &str = "dp_reader";
const MASKS: &str = "dp_reader_mask_public";

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// Runs `sql` as `checker` with `psql` (stops at the first error).
fn psql(sql: &str) {
    let output = std::process::Command::new("psql")
        .args([
            "-qAt",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-U",
            "checker",
        ])
        .args(["-c", sql, "checkdb"])
        .env("PGPASSWORD", "checkpw")
        .output()
        .expect("psql (apt install postgresql-client)");
    assert!(
        output.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The stored table, its masking view for `dp_reader` (its `email` masked), and the grants.
fn create_table() {
    psql(&format!(
        "DROP VIEW IF EXISTS {MASKS}.{TABLE}; DROP TABLE IF EXISTS {TABLE};
         CREATE TABLE {TABLE} (id int PRIMARY KEY, name text, email text);
         INSERT INTO {TABLE} VALUES (1, 'Ada', 'ada@example.com');
         GRANT SELECT ON {TABLE} TO dp_owner;
         GRANT SELECT (id, name) ON {TABLE} TO {READER};
         SET ROLE dp_owner;
         CREATE VIEW {MASKS}.{TABLE} AS SELECT id, name,
           CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email FROM public.{TABLE};
         RESET ROLE;
         GRANT SELECT ON {MASKS}.{TABLE} TO {READER};"
    ));
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

/// A pgbench baseline: how it sends a panel's transaction.
#[derive(Clone, Copy)]
struct Pgbench {
    /// pgbench's `-M`.
    mode: &'static str,
    /// The script.
    script: &'static str,
    /// What the report calls it.
    label: &'static str,
}

/// Three statements, each its own round trip, prepared: the baseline of the earlier figures.
const THREE_ROUND_TRIPS: Pgbench = Pgbench {
    mode: "prepared",
    script: "BEGIN READ ONLY;\nSELECT 1 AS one;\nROLLBACK;\n",
    label: "BEGIN READ ONLY; SELECT 1; ROLLBACK",
};

/// The same transaction as one compound statement: pgbench sends a line of statements joined by
/// `\;` as one query (the simple protocol; a compound statement cannot be prepared), so the
/// transaction is one round trip.
const ONE_ROUND_TRIP: Pgbench = Pgbench {
    mode: "simple",
    script: "BEGIN READ ONLY\\; SELECT 1 AS one\\; ROLLBACK;\n",
    label: "BEGIN READ ONLY\\; SELECT 1\\; ROLLBACK (one compound statement, one round trip)",
};

/// `pgbench -M <mode> -c 4` running `baseline`'s script for `seconds`: transactions per second.
fn pgbench(baseline: Pgbench, seconds: u64) -> f64 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = dir.path().join("panel.sql");
    std::fs::write(&script, baseline.script).expect("the script");
    let output = std::process::Command::new("pgbench")
        .args([
            "-n",
            "-M",
            baseline.mode,
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

/// One server under test: its process and the three panels' run requests.
struct Subject {
    name: &'static str,
    _dir: tempfile::TempDir,
    _server: tokio::process::Child,
    addr: std::net::SocketAddr,
    /// Where its `/metrics` are.
    metrics: std::net::SocketAddr,
    /// `SELECT 1 AS one`, the plain panel, and the protected one.
    runs: [Arc<Vec<Vec<u8>>>; 3],
}

/// Creates a database as `username` (with the data protection `policies`, when given) and a
/// one-panel dashboard running `query` as its credential: the panel's run request, checked once.
async fn panel(
    addr: std::net::SocketAddr,
    user: &str,
    username: &str,
    policies: Option<serde_json::Value>,
    query: &str,
    expect: &serde_json::Value,
) -> Arc<Vec<Vec<u8>>> {
    let database = serde_json::json!({
        "name": format!("Panels bench as {username} {}", policies.is_some()),
        "adapter": "postgres",
        "hostname": "127.0.0.1",
        "port": 5432,
        "database": "checkdb",
        "credentials": [{"username": username, "password": "checkpw"}],
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
    if let Some(policies) = policies {
        let path = format!(
            "/api/v1/console/databases/{}/data-protection",
            db["id"].as_str().unwrap()
        );
        let body = serde_json::json!({"policies": policies}).to_string();
        let (status, answer) = call(
            addr,
            &request_bytes("PUT", &path, API_KEY, Some(body.as_bytes())),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
    }
    let dashboard = serde_json::json!({
        "name": "Panels bench",
        "restricted_access": false,
        "panels": [{
            "title": "One",
            "details": {"__type__": "query", "query": query, "credential_id": db["credentials"][0]["id"]},
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
    let run = request_bytes("POST", &path, user, Some(b"{}"));
    let (status, first) = call(addr, &run).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(&first["rows"], expect, "{first}");
    Arc::new(vec![run])
}

async fn subject(name: &'static str, binary: &Path) -> Subject {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("data");
    let user = user_key(binary, &data);
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let listen = metrics.to_string();
    let env = [
        ("DBCONSOLE_API_KEY", API_KEY),
        ("DBCONSOLE_ACCESS_TOKEN", TOKEN),
        ("DBCONSOLE_METRICS_LISTEN", listen.as_str()),
        ("RUST_LOG", "warn"),
    ];
    let (server, addr) = start_server(binary, &data, &env).await;
    let people = format!("SELECT id, name, email FROM {TABLE} WHERE id = 1");
    let one = panel(
        addr,
        &user,
        "checker",
        None,
        "SELECT 1 AS one",
        &serde_json::json!([[1]]),
    )
    .await;
    let plain = panel(
        addr,
        &user,
        "checker",
        None,
        &people,
        &serde_json::json!([[1, "Ada", "ada@example.com"]]),
    )
    .await;
    let policies = serde_json::json!([{"name": "pii", "columns": [{"column": format!("{TABLE}.email"), "action": "mask"}]}]);
    let protected = panel(
        addr,
        &user,
        READER,
        Some(policies),
        &people,
        &serde_json::json!([[1, "Ada", "****"]]),
    )
    .await;
    Subject {
        name,
        _dir: dir,
        _server: server,
        addr,
        metrics,
        runs: [one, plain, protected],
    }
}

/// The value of each unlabelled line of `addr`'s `/metrics`.
async fn metrics(addr: std::net::SocketAddr) -> std::collections::HashMap<String, f64> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let mut reader = BufReader::new(stream);
    let request = b"GET /metrics HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n";
    reader.get_mut().write_all(request).await.expect("send");
    let (_, body) = read_response(&mut reader).await.expect("the metrics");
    String::from_utf8_lossy(&body)
        .lines()
        .filter(|line| !line.starts_with('#') && !line.contains('{'))
        .filter_map(|line| {
            let (name, value) = line.split_once(' ')?;
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// Run events written durably per second while `phase` ran, from the counter before and after.
struct Events {
    per_second: f64,
    peak: f64,
}

async fn load_with_events(
    subject: &Subject,
    runs: &Arc<Vec<Vec<u8>>>,
    period: Duration,
) -> (Phase, Option<Events>) {
    const WRITTEN: &str = "dbconsole_run_events_written_total";
    let before = metrics(subject.metrics).await.get(WRITTEN).copied();
    let started = std::time::Instant::now();
    let phase = load(subject.addr, CLIENTS, Arc::clone(runs), 200, period).await;
    // Until the backlog is written: the events of the phase's runs, durable.
    let mut after = metrics(subject.metrics).await;
    for _ in 0..100 {
        if after
            .get("dbconsole_run_events_backlog")
            .copied()
            .unwrap_or(0.0)
            == 0.0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        after = metrics(subject.metrics).await;
    }
    let took = started.elapsed().as_secs_f64();
    let peak = after
        .get("dbconsole_run_events_backlog_peak")
        .copied()
        .unwrap_or(0.0);
    let events = before
        .zip(after.get(WRITTEN).copied())
        .map(|(before, written)| Events {
            per_second: (written - before) / took,
            peak,
        });
    (phase, events)
}

fn median_of(phases: &[Phase], f: impl Fn(&Phase) -> f64) -> f64 {
    median(phases.iter().map(f).collect())
}

async fn run() {
    let seconds: u64 = env_or("LOAD_SECONDS", "5").parse().unwrap_or(5);
    let rounds: usize = env_or("LOAD_ROUNDS", "3").parse().unwrap_or(3);
    let binary = release_server("benches/panels.sh");
    create_table();
    let mut subjects = Vec::new();
    if let Some(before) = std::env::var_os("BENCH_BEFORE") {
        subjects.push(subject("before", &PathBuf::from(before)).await);
    }
    subjects.push(subject("after", &binary).await);

    let period = Duration::from_secs(seconds);
    // By subject, by panel: each round's phase.
    let mut measured: Vec<[Vec<Phase>; 3]> = subjects.iter().map(|_| Default::default()).collect();
    let mut written: Vec<Vec<(f64, Events)>> = subjects.iter().map(|_| Vec::new()).collect();
    let baselines = [THREE_ROUND_TRIPS, ONE_ROUND_TRIP];
    // By baseline: each round's tps.
    let mut baseline: [Vec<f64>; 2] = Default::default();
    for _ in 0..rounds {
        for (pgbench_tps, &script) in baseline.iter_mut().zip(&baselines) {
            pgbench_tps.push(
                tokio::task::spawn_blocking(move || pgbench(script, seconds))
                    .await
                    .expect("pgbench"),
            );
        }
        for ((subject, phases), events) in subjects.iter().zip(&mut measured).zip(&mut written) {
            for (runs, phases) in subject.runs.iter().zip(phases.iter_mut()) {
                let (phase, written) = load_with_events(subject, runs, period).await;
                if let Some(written) = written {
                    events.push((phase.per_second, written));
                }
                phases.push(phase);
            }
        }
    }
    let [tps, compound_tps] = baseline.map(median);
    for (script, tps) in baselines.iter().zip([tps, compound_tps]) {
        println!(
            "pgbench -M {} -c {CLIENTS}, {}: {tps:.0} tps",
            script.mode, script.label
        );
    }
    for ((subject, [one, plain, protected]), events) in subjects.iter().zip(&measured).zip(&written)
    {
        let rate = |phases: &[Phase]| median_of(phases, |p| p.per_second);
        let ms = |phases: &[Phase], f: fn(&Phase) -> Duration| {
            median_of(phases, |p| f(p).as_secs_f64() * 1000.0)
        };
        let name = subject.name;
        for (what, phases) in [("SELECT 1", one), (TABLE, plain), ("protected", protected)] {
            println!(
                "{name}: {what} panel runs, {CLIENTS} clients: {:.0}/s (p50 {:.2} ms, p99 {:.2} ms)",
                rate(phases),
                ms(phases, |p| p.p50),
                ms(phases, |p| p.p99),
            );
        }
        println!(
            "{name}: SELECT 1 panel / pgbench: {:.2}x (goal 0.5x); protected / unprotected: {:.2}x (goal 0.8x)",
            rate(one) / tps,
            rate(protected) / rate(plain)
        );
        println!(
            "{name}: SELECT 1 panel / pgbench, one compound statement: {:.2}x",
            rate(one) / compound_tps
        );
        if !events.is_empty() {
            let keeping_up = events
                .iter()
                .map(|(runs, events)| events.per_second / runs)
                .fold(f64::INFINITY, f64::min);
            let peak = events.iter().map(|(_, e)| e.peak).fold(0.0, f64::max);
            println!(
                "{name}: durable run events per second / runs per second, lowest of the phases: \
                 {keeping_up:.2} (the phase's time includes the wait for its backlog); backlog \
                 peak {peak:.0} events (bound 1024)"
            );
        }
    }
    drop(subjects);
    psql(&format!(
        "DROP VIEW IF EXISTS {MASKS}.{TABLE}; DROP TABLE IF EXISTS {TABLE};"
    ));
}
