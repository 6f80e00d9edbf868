//! Running queries on a real PostgreSQL (`.ci/db-servers-up.sh`), next to baselines measured in
//! the same run: a bench binary (no criterion); each figure is the best of 3 rounds.
//!
//! - **Throughput**: a 1-million-row, 5-column result streamed through dbconsole over HTTP/1
//!   (CSV, then JSON) and read to the end by a client, against `psql --csv -c` of the same query
//!   written to /dev/null. The ratio is psql's time over dbconsole's (rows/s relative to psql).
//!   Computed with `md5()` per row, that result costs PostgreSQL most of the time on both sides;
//!   so the same rows are also **stored** in a table (`run_bench_stored`, made once) and read
//!   with `SELECT *` as CSV, JSON and NDJSON: there, dbconsole's own cost shows.
//! - **Time to first row**: until the client holds the first row, against the time until psql
//!   prints its first row with `FETCH_COUNT` set ([`FETCH_COUNT`] rows per fetch, through a
//!   cursor), so that psql prints rows as they come (by default it prints only once it holds the
//!   whole result: that first row, printed too, is the earlier figures' baseline). psql's total
//!   time, the throughput baseline, is its default run's, as before.
//! - **Memory**: the growth of this process's resident set (service and client in it) while a
//!   10-million-row CSV result streams, sampled every 10 ms.
//! - **Panel latency**: a one-row panel run against a warm pool, through the service in
//!   process, against the same query through a raw tokio-postgres client in this process, its
//!   statement prepared once (one round trip per query; the earlier figures' baseline prepared it
//!   on every call, two round trips, and is printed too).
//!
//! The service runs in this process behind hyper, with a layer that vouches for the principal
//! (as an embedding application would), on the reference server's allocator (mimalloc). Run: `cargo bench -p dbconsole-benches --bench run`.

use std::io::Read as _;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dbconsole_core::auth::StaticCredentials;
use dbconsole_core::model::{Principal, Role, Secret};
use dbconsole_core::run::{PoolLimits, standard_runners};
use dbconsole_core::{ConsoleService, Sealer};
use dbconsole_storage_memory::MemoryStorage;
use http::{Method, Request};
use http_body_util::{BodyExt as _, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt as _;

/// The reference server's allocator, so that the service here allocates as it does there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROUNDS: usize = 3;
const QUERY_1M: &str = "SELECT g, g * 2 AS twice, md5(g::text) AS hash, \
     TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * INTERVAL '1 second' AS at, g % 7 = 0 AS seventh \
     FROM generate_series(1, 1000000) g";
const QUERY_10M: &str = "SELECT g, g * 2 AS twice, md5(g::text) AS hash, \
     TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * INTERVAL '1 second' AS at, g % 7 = 0 AS seventh \
     FROM generate_series(1, 10000000) g";
const API_KEY: &str = "run-bench-api-key-0123456789";
/// psql's `FETCH_COUNT` for its time to first row.
const FETCH_COUNT: u32 = 1000;

fn service() -> ConsoleService {
    ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(StaticCredentials::new(Some(&Secret::from(API_KEY)), None)),
        Sealer::ephemeral().expect("a random key"),
    )
    .runners(standard_runners(PoolLimits::default()))
    .trust_principal(true)
    .max_rows(20_000_000)
    .build()
}

fn principal() -> Principal {
    Principal::member("bench@example.com").role(Role::SuperAdmin)
}

/// Serves `service` on a local port; every request is the bench principal's.
async fn serve(service: ConsoleService) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let service = service_fn(move |mut request: Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(principal());
                    service.clone().oneshot(request)
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

async fn call(service: &ConsoleService, method: Method, path: &str, body: Option<Value>) -> Value {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(Full::new(
            body.map(|b| Bytes::from(b.to_string())).unwrap_or_default(),
        ))
        .unwrap();
    request.extensions_mut().insert(principal());
    let response = service.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        status.is_success(),
        "{status}: {}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// A database on the test server; its id and its credential's.
async fn database(service: &ConsoleService) -> (String, String) {
    database_as(service, "checker").await
}

/// A database whose credential logs in as `username` (password `checkpw`).
async fn database_as(service: &ConsoleService, username: &str) -> (String, String) {
    let created = call(
        service,
        Method::POST,
        "/api/v1/console/databases",
        Some(json!({
            "name": "bench", "adapter": "postgres", "hostname": "127.0.0.1", "port": 5432,
            "database": "checkdb",
            "credentials": [{"username": username, "password": "checkpw", "timeout": 600}],
        })),
    )
    .await;
    (
        created["id"].as_str().unwrap().to_owned(),
        created["credentials"][0]["id"].as_str().unwrap().to_owned(),
    )
}

async fn new_query(
    service: &ConsoleService,
    db: &(String, String),
    text: &str,
    limit: u64,
) -> String {
    let created = call(
        service,
        Method::POST,
        "/api/v1/console/queries",
        Some(json!({"database_id": db.0, "credential_id": db.1, "query": text, "limit": limit})),
    )
    .await;
    created["id"].as_str().unwrap().to_owned()
}

/// What a client saw of one streamed run: time to the first row, time to the end, bytes.
struct Streamed {
    first_row: Duration,
    total: Duration,
    bytes: u64,
}

/// Runs query `id` over HTTP/1 with `accept` and reads the response to its end.
async fn stream(addr: SocketAddr, id: &str, accept: &str) -> Streamed {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.set_nodelay(true).unwrap();
    let request = format!(
        "POST /api/v1/console/queries/{id}/run HTTP/1.1\r\nhost: bench\r\naccept: {accept}\r\n\
         connection: close\r\ncontent-length: 0\r\n\r\n"
    );
    let started = Instant::now();
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut seen = Vec::new();
    let mut first_row = None;
    let mut bytes = 0u64;
    loop {
        let read = socket.read(&mut buffer).await.unwrap();
        if read == 0 {
            break;
        }
        bytes += read as u64;
        if first_row.is_none() {
            seen.extend_from_slice(&buffer[..read]);
            // The head, the chunk size, the columns line, the first row's line.
            if let Some(head) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                let body = &seen[head + 4..];
                let rows_begin = match accept {
                    "text/csv" => body.windows(2).filter(|w| *w == b"\r\n").count() >= 3,
                    "application/x-ndjson" => body.windows(2).any(|w| w == b"\n["),
                    _ => body.windows(2).any(|w| w == b"[[" || w == b"],"),
                };
                if rows_begin {
                    first_row = Some(started.elapsed());
                }
            }
        }
    }
    Streamed {
        first_row: first_row.unwrap_or_else(|| started.elapsed()),
        total: started.elapsed(),
        bytes,
    }
}

/// psql's run of `text` as CSV: time to its first row and to its end (output discarded). With
/// `fetch_count`, psql reads the result through a cursor, that many rows per fetch, and prints
/// each batch as it comes; without, it prints once it holds the whole result.
fn psql(text: &str, fetch_count: Option<u32>) -> (Duration, Duration) {
    let started = Instant::now();
    let mut command = Command::new("psql");
    if let Some(rows) = fetch_count {
        command.args(["-v", &format!("FETCH_COUNT={rows}")]);
    }
    let mut child = command
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-U",
            "checker",
            "-d",
            "checkdb",
            "--csv",
            "-c",
            text,
        ])
        .env("PGPASSWORD", "checkpw")
        .stdout(Stdio::piped())
        .spawn()
        .expect("psql runs (postgresql-client)");
    let mut out = child.stdout.take().unwrap();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut first_row = None;
    let mut newlines = 0;
    loop {
        let read = out.read(&mut buffer).unwrap();
        if read == 0 {
            break;
        }
        if first_row.is_none() {
            newlines += buffer[..read].iter().filter(|b| **b == b'\n').count();
            if newlines >= 2 {
                first_row = Some(started.elapsed());
            }
        }
    }
    assert!(child.wait().unwrap().success(), "psql failed");
    (
        first_row.unwrap_or_else(|| started.elapsed()),
        started.elapsed(),
    )
}

/// psql's baselines for one query, best of [`ROUNDS`] each: its default run (to the end, and to
/// its first row, which it prints only once it holds the whole result) and a run with
/// `FETCH_COUNT` (to the first row it prints, of the first batch).
struct Psql {
    total: Duration,
    first: Duration,
    fetch_first: Duration,
    fetch_total: Duration,
}

impl Psql {
    fn measure(text: &str) -> Self {
        let runs: Vec<(Duration, Duration)> = (0..ROUNDS).map(|_| psql(text, None)).collect();
        let fetched: Vec<(Duration, Duration)> =
            (0..ROUNDS).map(|_| psql(text, Some(FETCH_COUNT))).collect();
        Psql {
            total: best(runs.iter().map(|r| r.1)),
            first: best(runs.iter().map(|r| r.0)),
            fetch_first: best(fetched.iter().map(|r| r.0)),
            fetch_total: best(fetched.iter().map(|r| r.1)),
        }
    }

    fn print(&self) {
        println!(
            "  psql --csv:           {:>8.3} s ({:.0} rows/s), first row after {:.3} s",
            self.total.as_secs_f64(),
            1e6 / self.total.as_secs_f64(),
            self.first.as_secs_f64()
        );
        println!(
            "  psql --csv -v FETCH_COUNT={FETCH_COUNT}: first row after {:.4} s ({:.3} s to the end)",
            self.fetch_first.as_secs_f64(),
            self.fetch_total.as_secs_f64()
        );
    }
}

/// A session on the test PostgreSQL as `checker`.
async fn checker_client() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        "host=127.0.0.1 port=5432 user=checker password=checkpw dbname=checkdb",
        tokio_postgres::NoTls,
    )
    .await
    .expect("PostgreSQL on 127.0.0.1:5432 (sudo bash .ci/db-servers-up.sh)");
    tokio::spawn(connection);
    client
}

/// The stored table of the 1-million-row result (`QUERY_1M`'s rows), made once (kept between
/// runs: it is the same every time).
async fn stored_table() -> &'static str {
    const TABLE: &str = "run_bench_stored";
    let client = checker_client().await;
    let rows: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relname = $1 AND reltuples >= 1000000",
            &[&TABLE],
        )
        .await
        .expect("pg_class")
        .get(0);
    if rows == 0 {
        for statement in [
            format!("DROP TABLE IF EXISTS {TABLE}"),
            format!("CREATE TABLE {TABLE} AS {QUERY_1M}"),
            format!("VACUUM ANALYZE {TABLE}"),
        ] {
            client
                .batch_execute(&statement)
                .await
                .expect("the stored table");
        }
    }
    TABLE
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn best(values: impl IntoIterator<Item = Duration>) -> Duration {
    values.into_iter().min().unwrap_or_default()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    let service = service();
    let addr = serve(service.clone()).await;
    let db = database(&service).await;
    // A first run warms the pool and the server's caches.
    let warm = new_query(&service, &db, QUERY_1M, 1_000_000).await;
    stream(addr, &warm, "text/csv").await;

    let mut results = Vec::new();
    for (accept, label) in [("text/csv", "CSV"), ("application/json", "JSON")] {
        let mut runs = Vec::new();
        for _ in 0..ROUNDS {
            let id = new_query(&service, &db, QUERY_1M, 1_000_000).await;
            runs.push(stream(addr, &id, accept).await);
        }
        let total = best(runs.iter().map(|r| r.total));
        let first = best(runs.iter().map(|r| r.first_row));
        let bytes = runs[0].bytes;
        results.push((label, total, first, bytes));
    }
    let psql_1m = Psql::measure(QUERY_1M);
    println!("1,000,000 rows x 5 columns, best of {ROUNDS}:");
    psql_1m.print();
    for (label, total, first, bytes) in &results {
        println!(
            "  dbconsole {label:<5}:      {:>8.3} s ({:.0} rows/s, {:.1} MB), first row after {:.3} s; \
             throughput {:.2}x psql's, time to first row {:.3}x psql's with FETCH_COUNT={FETCH_COUNT} \
             ({:.3}x psql's default)",
            total.as_secs_f64(),
            1e6 / total.as_secs_f64(),
            *bytes as f64 / 1e6,
            first.as_secs_f64(),
            psql_1m.total.as_secs_f64() / total.as_secs_f64(),
            first.as_secs_f64() / psql_1m.fetch_first.as_secs_f64(),
            first.as_secs_f64() / psql_1m.first.as_secs_f64(),
        );
    }

    // The same million rows, stored: dbconsole's own cost (PostgreSQL only reads them).
    let stored = stored_table().await;
    let select = format!("SELECT * FROM {stored}");
    let warm = new_query(&service, &db, &select, 1_000_000).await;
    stream(addr, &warm, "text/csv").await;
    let psql_stored = Psql::measure(&select);
    println!("the same rows stored in {stored}, SELECT *, best of {ROUNDS}:");
    psql_stored.print();
    for (accept, label, goal) in [
        ("text/csv", "CSV", 1.0),
        ("application/json", "JSON", 0.9),
        ("application/x-ndjson", "NDJSON", 0.9),
    ] {
        let mut runs = Vec::new();
        for _ in 0..ROUNDS {
            let id = new_query(&service, &db, &select, 1_000_000).await;
            runs.push(stream(addr, &id, accept).await);
        }
        let total = best(runs.iter().map(|r| r.total));
        let first = best(runs.iter().map(|r| r.first_row));
        println!(
            "  dbconsole {label:<6}:     {:>8.3} s ({:.1} MB), first row after {:.3} s; \
             throughput {:.2}x psql's (goal {goal}x), time to first row {:.3}x psql's with \
             FETCH_COUNT={FETCH_COUNT}",
            total.as_secs_f64(),
            runs[0].bytes as f64 / 1e6,
            first.as_secs_f64(),
            psql_stored.total.as_secs_f64() / total.as_secs_f64(),
            first.as_secs_f64() / psql_stored.fetch_first.as_secs_f64(),
        );
    }

    // Memory while 10 million rows stream.
    let id = new_query(&service, &db, QUERY_10M, 10_000_000).await;
    let before = rss_kib();
    let peak = Arc::new(AtomicU64::new(before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let streamed = stream(addr, &id, "text/csv").await;
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let growth = peak.load(Ordering::Relaxed).saturating_sub(before);
    println!(
        "10,000,000 rows as CSV ({:.0} MB) in {:.2} s: resident set {:.1} MiB before, peak growth {:.1} MiB",
        streamed.bytes as f64 / 1e6,
        streamed.total.as_secs_f64(),
        before as f64 / 1024.0,
        growth as f64 / 1024.0
    );

    // A one-row panel against a warm pool, in process, against a raw client.
    let dashboard = call(
        &service,
        Method::POST,
        "/v1/dashboards",
        Some(
            json!({"name": "bench", "restricted_access": false, "panels": [{
                "title": "one", "inputs": [],
                "details": {"__type__": "query", "query": "SELECT 1 AS one", "credential_id": db.1},
            }]}),
        ),
    )
    .await;
    let path = format!(
        "/v1/dashboards/{}/panels/{}/run",
        dashboard["id"].as_str().unwrap(),
        dashboard["panels"][0]["id"].as_str().unwrap()
    );
    const PANEL_RUNS: u32 = 2_000;
    let panel_round = || async {
        let started = Instant::now();
        for _ in 0..PANEL_RUNS {
            let result = call(&service, Method::POST, &path, Some(json!({"inputs": {}}))).await;
            assert_eq!(result["row_count"], 1);
        }
        started.elapsed()
    };
    panel_round().await;
    let client = checker_client().await;
    // The raw client prepares its statement once, as the panel's session does, and then each
    // query is one round trip (bind, execute).
    let prepared = client.prepare("SELECT 1 AS one").await.unwrap();
    let raw_round = || async {
        let started = Instant::now();
        for _ in 0..PANEL_RUNS {
            let rows = client.query(&prepared, &[]).await.unwrap();
            assert_eq!(rows.len(), 1);
        }
        started.elapsed()
    };
    // The earlier figures' baseline: the query's text on every call, so tokio-postgres prepares
    // it each time (two round trips: prepare, then bind and execute).
    let unprepared_round = || async {
        let started = Instant::now();
        for _ in 0..PANEL_RUNS {
            let rows = client.query("SELECT 1 AS one", &[]).await.unwrap();
            assert_eq!(rows.len(), 1);
        }
        started.elapsed()
    };
    raw_round().await;
    unprepared_round().await;
    let mut panel = Vec::new();
    let mut raw = Vec::new();
    let mut unprepared = Vec::new();
    for _ in 0..ROUNDS {
        panel.push(panel_round().await);
        raw.push(raw_round().await);
        unprepared.push(unprepared_round().await);
    }
    let (panel, raw, unprepared) = (best(panel), best(raw), best(unprepared));
    let micros = |time: Duration| time.as_secs_f64() * 1e6 / f64::from(PANEL_RUNS);
    println!(
        "one-row panel run, warm pool: {:.1} µs; raw tokio-postgres query, prepared once: {:.1} µs; \
         ratio {:.2}x (prepared on every call: {:.1} µs, ratio {:.2}x)",
        micros(panel),
        micros(raw),
        panel.as_secs_f64() / raw.as_secs_f64(),
        micros(unprepared),
        panel.as_secs_f64() / unprepared.as_secs_f64(),
    );

    // The cost of data protection: the same one-row panel reading a masked column, on a
    // database with a policy (as the verified role `dp_reader`, through its masking view) and on
    // one without.
    let table = format!("dp_bench_{}", std::process::id());
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table} CASCADE; \
             CREATE TABLE {table} (id int PRIMARY KEY, email text, name text); \
             INSERT INTO {table} SELECT g, 'user' || g || '@example.com', 'n' || g \
             FROM generate_series(1, 1000) g; \
             GRANT SELECT (id, name) ON {table} TO dp_reader; \
             GRANT SELECT ON {table} TO dp_owner; \
             SET ROLE dp_owner; \
             CREATE VIEW dp_reader_mask_public.{table} AS SELECT id, \
               CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email, name \
               FROM public.{table}; \
             RESET ROLE; \
             GRANT SELECT ON dp_reader_mask_public.{table} TO dp_reader;"
        ))
        .await
        .unwrap();
    let protected = database_as(&service, "dp_reader").await;
    call(
        &service,
        Method::PUT,
        &format!("/api/v1/console/databases/{}/data-protection", protected.0),
        Some(json!({"policies": [{"name": "pii", "columns": [
            {"column": format!("{table}.email"), "action": "mask"}
        ]}]})),
    )
    .await;
    let statement = format!("SELECT id, email, name FROM {table} WHERE id = 7");
    let panel_on = |credential: &str| {
        json!({"name": "bench", "restricted_access": false, "panels": [{
            "title": "one", "inputs": [],
            "details": {"__type__": "query", "query": statement, "credential_id": credential},
        }]})
    };
    let mut paths = Vec::new();
    for credential in [&db.1, &protected.1] {
        let dashboard = call(
            &service,
            Method::POST,
            "/v1/dashboards",
            Some(panel_on(credential)),
        )
        .await;
        paths.push(format!(
            "/v1/dashboards/{}/panels/{}/run",
            dashboard["id"].as_str().unwrap(),
            dashboard["panels"][0]["id"].as_str().unwrap()
        ));
    }
    const PROTECTED_RUNS: u32 = 1_000;
    let round = |path: String, masked: bool| {
        let service = service.clone();
        async move {
            let started = Instant::now();
            for _ in 0..PROTECTED_RUNS {
                let result = call(&service, Method::POST, &path, Some(json!({"inputs": {}}))).await;
                assert_eq!(result["rows"][0][1] == json!("****"), masked);
            }
            started.elapsed()
        }
    };
    round(paths[0].clone(), false).await;
    round(paths[1].clone(), true).await;
    let mut plain = Vec::new();
    let mut checked = Vec::new();
    for _ in 0..ROUNDS {
        plain.push(round(paths[0].clone(), false).await);
        checked.push(round(paths[1].clone(), true).await);
    }
    let (plain, checked) = (best(plain), best(checked));
    println!(
        "one-row panel reading a masked column: {:.1} µs with data protection (a verified role, \
         a masking view), {:.1} µs on a database without policies; ratio {:.2}x",
        checked.as_secs_f64() * 1e6 / f64::from(PROTECTED_RUNS),
        plain.as_secs_f64() * 1e6 / f64::from(PROTECTED_RUNS),
        checked.as_secs_f64() / plain.as_secs_f64()
    );
    client
        .batch_execute(&format!("DROP TABLE {table} CASCADE"))
        .await
        .unwrap();
}
