//! Queries through the real `dbconsole` binary on its default storage (redb) and a real
//! PostgreSQL (`.ci/db-servers-up.sh`): a key bound to a user made by `dbconsole keys create
//! --user … --scope query`, a result streamed to a client over HTTP/1 (chunked; one smaller than
//! a chunk answered whole, with a length), and a client
//! that closes its connection while its statement runs, which cancels the statement on the
//! database server (seen running there first, then gone; how long the cancel took is printed).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dbconsole_tests::eventually;
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use support::process::{HANG_GUARD, Server};
use support::{Conn, create_key, postgres_admin, request, request_text};
use tokio::io::AsyncReadExt as _;

const ADMIN_KEY: &str = "queries-test-admin-key-0123456789";
const PORT: u16 = 5432;
/// The most a test waits for what the server or PostgreSQL does (a statement to start or to
/// end, a history to be written): generous, so that a busy machine never fails a test that is
/// right. How long a cancel takes is a figure for the benches, printed here, not asserted.
const DEADLINE: Duration = Duration::from_secs(30);

async fn start(dir: &Path) -> Server {
    start_with(dir, &[]).await
}

/// [`start`] with more arguments.
async fn start_with(dir: &Path, more: &[&str]) -> Server {
    let mut args = vec![
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "127.0.0.1:0",
        "--max-rows",
        "10000000",
        "--statement-timeout-secs",
        "600",
        "--data-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    Server::start_with(
        &[
            ("DBCONSOLE_STORAGE", "redb"),
            ("DBCONSOLE_API_KEY", ADMIN_KEY),
        ],
        &args,
    )
    .await
}

/// A query key for `alice@example.com` in the store at `dir`: its secret.
async fn alice_key(dir: &Path) -> String {
    create_key(
        dir,
        &[
            "--kind",
            "api-key",
            "--scope",
            "query",
            "--user",
            "alice@example.com",
            "--name",
            "alice",
        ],
    )
    .await
}

/// The `/metrics` text of `server`.
async fn metrics(server: &Server) -> String {
    let line = server
        .stdout
        .line("the metrics line", |line| line.starts_with("metrics on "))
        .await;
    let addr: std::net::SocketAddr = line
        .trim_start_matches("metrics on http://")
        .trim_end_matches("/metrics")
        .parse()
        .unwrap();
    let response = request(addr, "GET", "/metrics", &[], None).await;
    assert_eq!(response.status, 200);
    response.body
}

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

/// Creates a database named `name` on the test PostgreSQL (as `checker`): its JSON.
async fn checker_database(server: &Server, name: &str) -> Value {
    let database = json!({
        "name": name,
        "adapter": "postgres",
        "hostname": "127.0.0.1",
        "port": PORT,
        "database": "checkdb",
        "credentials": [{"username": "checker", "password": "checkpw"}],
    })
    .to_string();
    let created = request(
        server.addr,
        "POST",
        "/api/v1/console/databases",
        &[("x-api-key", ADMIN_KEY)],
        Some(&database),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    created.json()
}

/// Creates a database on the test PostgreSQL and a query on it as `user_key`; the query's id.
async fn query(server: &Server, user_key: &str, statement: &str) -> String {
    let created = checker_database(server, &format!("queries {}", statement.len())).await;
    let body = json!({
        "database_id": created["id"],
        "credential_id": created["credentials"][0]["id"],
        "query": statement,
        "limit": 10_000_000,
    })
    .to_string();
    let query = request(
        server.addr,
        "POST",
        "/api/v1/console/queries",
        &[("x-api-key", user_key)],
        Some(&body),
    )
    .await;
    assert_eq!(query.status, 200, "{}", query.body);
    let query = query.json();
    assert_eq!(query["author"], "alice@example.com");
    query["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_streams_and_a_closed_connection_cancels_the_statement() {
    let postgres = postgres_admin().await;
    let data = tempfile::tempdir().unwrap();
    let user_key = create_key(
        data.path(),
        &[
            "--kind",
            "api-key",
            "--scope",
            "query",
            "--user",
            "alice@example.com",
            "--groups",
            "data-team,ops",
            "--name",
            "alice",
        ],
    )
    .await;
    let server = start(data.path()).await;

    // A key without a user runs no query; a query key manages nothing.
    let refused = request(
        server.addr,
        "GET",
        "/api/v1/console/databases",
        &[("x-api-key", &user_key)],
        None,
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);

    let id = query(
        &server,
        &user_key,
        "SELECT g, md5(g::text) FROM generate_series(1, 100000) g",
    )
    .await;
    let streamed = request(
        server.addr,
        "POST",
        &format!("/api/v1/console/queries/{id}/run"),
        &[("x-api-key", &user_key), ("accept", "text/csv")],
        None,
    )
    .await;
    assert_eq!(streamed.status, 200, "{}", streamed.body);
    assert_eq!(streamed.header("transfer-encoding"), Some("chunked"));
    let body = streamed.body;
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 100_001);
    assert_eq!(lines[0], "g,md5");
    assert!(lines[100_000].starts_with("100000,"));

    // A result smaller than a chunk is answered whole: its head goes with it, with a length.
    let id = query(&server, &user_key, "SELECT 1 AS one").await;
    let whole = request(
        server.addr,
        "POST",
        &format!("/api/v1/console/queries/{id}/run"),
        &[("x-api-key", &user_key)],
        None,
    )
    .await;
    assert_eq!(whole.status, 200, "{}", whole.body);
    assert_eq!(whole.header("transfer-encoding"), None);
    assert_eq!(
        whole.header("content-length"),
        Some(whole.body.len().to_string().as_str())
    );
    assert_eq!(whole.json()["rows"], json!([[1]]));

    let marker = format!("closed_{}", std::process::id());
    let id = query(
        &server,
        &user_key,
        &format!("SELECT pg_sleep(600) AS {marker}"),
    )
    .await;
    let mut conn = Conn::connect(server.addr).await;
    conn.send(&request_text(
        "POST",
        &format!("/api/v1/console/queries/{id}/run"),
        &[("x-api-key", &user_key)],
        None,
        false,
    ))
    .await;
    eventually(DEADLINE, "the statement starts", || async {
        active(&postgres, &marker).await.then_some(())
    })
    .await;
    drop(conn);
    let closed = Instant::now();
    eventually(
        DEADLINE,
        "the statement ends on the server once its client closed",
        || async { (!active(&postgres, &marker).await).then_some(()) },
    )
    .await;
    println!(
        "cancelled on the server {:?} after the client closed",
        closed.elapsed()
    );
    // The history says how it ended.
    let history = eventually(DEADLINE, "the history says the run failed", || async {
        let history = request(
            server.addr,
            "GET",
            &format!("/api/v1/console/queries/{id}"),
            &[("x-api-key", &user_key)],
            None,
        )
        .await
        .json();
        (history["status"] == "failed").then_some(history)
    })
    .await;
    let error: &Value = &history["run"]["error"];
    assert!(error.as_str().unwrap().contains("went away"), "{history}");
    // The three runs are counted, by how they ended, with their rows.
    let text = metrics(&server).await;
    let line = |needle: &str| {
        text.lines()
            .find(|line| line.starts_with(needle) && line.contains("adapter=\"postgres\""))
            .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
    };
    assert!(
        text.lines()
            .any(|l| l.starts_with("dbconsole_query_runs_total")
                && l.contains("outcome=\"succeeded\"")
                && l.ends_with(" 2")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("dbconsole_query_runs_total")
                && l.contains("outcome=\"cancelled\"")
                && l.ends_with(" 1")),
        "{text}"
    );
    assert_eq!(
        line("dbconsole_query_rows_total"),
        Some(100_001.0),
        "{text}"
    );
    server.stop().await;
}

/// The resident set of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// A size line of a process's `/proc/<pid>/status` (`VmRSS:`, `VmHWM:` for its peak), in KiB;
/// a status that can't be read, or has no such line, fails the test (a bound measured on
/// nothing holds for anything).
fn status_kib(pid: u32, field: &str) -> u64 {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} line in {path}: {status}"));
    value
        .trim()
        .strip_suffix("kB")
        .and_then(|kib| kib.trim().parse().ok())
        .unwrap_or_else(|| panic!("{path}: {field}{value} is not a size in kB"))
}

/// Resets the peak resident set (`VmHWM`) of a process to its resident set now (`5` to
/// `/proc/<pid>/clear_refs`), so that the peak read after is the peak of what came after; its
/// resident set now, in KiB.
fn reset_peak_kib(pid: u32) -> u64 {
    let path = format!("/proc/{pid}/clear_refs");
    std::fs::write(&path, "5").unwrap_or_else(|error| panic!("{path}: {error}"));
    let (rss, peak) = (rss_kib(pid), status_kib(pid, "VmHWM:"));
    assert!(
        peak <= rss + 1024,
        "the peak ({peak} KiB) is reset to the resident set ({rss} KiB)"
    );
    rss
}

/// Sends the run of query `id` as `key` (with `headers`) on a new connection, closed after the
/// answer: the connection, to read the answer from.
async fn start_run(
    addr: std::net::SocketAddr,
    key: &str,
    id: &str,
    headers: &[(&str, &str)],
) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut all = vec![("x-api-key", key)];
    all.extend_from_slice(headers);
    tokio::io::AsyncWriteExt::write_all(
        &mut stream,
        request_text(
            "POST",
            &format!("/api/v1/console/queries/{id}/run"),
            &all,
            None,
            true,
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    stream
}

/// Runs query `id` as `key` and reads its answer to the end, keeping none of it: the status
/// and the body's length.
async fn run_discarding(addr: std::net::SocketAddr, key: &str, id: &str) -> (u16, u64, String) {
    let mut stream = start_run(addr, key, id, &[]).await;
    let mut buffer = vec![0u8; 1024 * 1024];
    let (mut bytes, mut head) = (0u64, Vec::new());
    loop {
        let read = tokio::time::timeout(HANG_GUARD, stream.read(&mut buffer))
            .await
            .expect("the answer goes on")
            .unwrap();
        if read == 0 {
            break;
        }
        if head.len() < 4096 {
            head.extend_from_slice(&buffer[..read.min(4096)]);
        }
        bytes += read as u64;
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, bytes, head)
}

/// Eight 256 MiB values and one of 1 GiB at once: with the default bounds each is refused
/// before the server reads it; with bounds raised to let them through, the budget of all runs
/// together keeps the server's peak under its start plus 3.5 times the largest value (each row
/// it holds is charged three times its size). Measured here: 3.1 GiB of growth with the budget,
/// 3.9 GiB with a budget too large to matter.
/// Held by the two tests that load the database with gigabytes: their PostgreSQL backends at once
/// could bring the machine's out-of-memory killer to a backend, and PostgreSQL then ends every
/// session (the other test's stream with them). Each also measures its own server's memory.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_values_at_once_stay_within_the_memory_bounds() {
    let _heavy = HEAVY.lock().await;
    const MIB: u64 = 1024 * 1024;
    let largest: u64 = 1024 * MIB - 24;
    postgres_admin().await;
    let statements: Vec<String> = (0..8)
        .map(|n| format!("SELECT {n} AS n, repeat('x', {}) AS v", 256 * MIB))
        .chain([format!("SELECT 8 AS n, repeat('x', {largest}) AS v")])
        .collect();
    for (more, passes) in [
        (vec![], false),
        (
            vec![
                "--max-value-mib",
                "1100",
                "--max-row-mib",
                "1100",
                "--run-memory-mib",
                "3400",
            ],
            true,
        ),
    ] {
        let data = tempfile::tempdir().unwrap();
        let user_key = alice_key(data.path()).await;
        let server = start_with(data.path(), &more).await;
        let pid = server.child.id().expect("running");
        let mut ids = Vec::new();
        for statement in &statements {
            ids.push(query(&server, &user_key, statement).await);
        }
        let before = reset_peak_kib(pid);
        let runs: Vec<_> = ids
            .iter()
            .map(|id| {
                let (addr, key, id) = (server.addr, user_key.clone(), id.clone());
                tokio::spawn(async move { run_discarding(addr, &key, &id).await })
            })
            .collect();
        for (statement, run) in statements.iter().zip(runs) {
            let (status, bytes, head) = run.await.unwrap();
            if passes {
                assert_eq!(status, 200, "{head}");
                let size: u64 = statement
                    .split("repeat('x', ")
                    .nth(1)
                    .and_then(|rest| rest.split(')').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap();
                assert!(bytes > size, "the whole value is sent: {bytes} bytes");
            } else {
                assert_eq!(status, 422, "{head}");
                assert!(head.contains("over this server's bound"), "{head}");
            }
        }
        let peak = status_kib(pid, "VmHWM:");
        let growth = peak.saturating_sub(before) * 1024;
        println!(
            "bounds {more:?}: server resident set {} MiB before, peak {} MiB (growth {} MiB)",
            before / 1024,
            peak / 1024,
            growth / MIB
        );
        // Twice the growth against seven times the largest: 3.5 times it.
        let k2 = if passes { 7 } else { 0 };
        assert!(
            2 * growth < k2 * largest + 128 * MIB,
            "the server grew by {} MiB, over {k2}/2 x the largest value",
            growth / MIB
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_million_rows_stream_with_the_server_memory_flat() {
    let _heavy = HEAVY.lock().await;
    postgres_admin().await;
    let data = tempfile::tempdir().unwrap();
    let user_key = alice_key(data.path()).await;
    let server = start(data.path()).await;
    let pid = server.child.id().expect("running");
    let id = query(
        &server,
        &user_key,
        "SELECT g FROM generate_series(1, 10000000) g",
    )
    .await;
    let before = reset_peak_kib(pid);
    let mut stream = start_run(server.addr, &user_key, &id, &[("accept", "text/csv")]).await;
    let mut buffer = vec![0u8; 256 * 1024];
    let (mut bytes, mut newlines) = (0u64, 0u64);
    let mut head = Vec::new();
    loop {
        let read = tokio::time::timeout(HANG_GUARD, stream.read(&mut buffer))
            .await
            .expect("the stream goes on")
            .unwrap();
        if read == 0 {
            break;
        }
        bytes += read as u64;
        if head.len() < 2048 {
            head.extend_from_slice(&buffer[..read.min(2048 - head.len())]);
        }
        newlines += buffer[..read].iter().filter(|b| **b == b'\n').count() as u64;
    }
    // The peak of the whole stream, however short it lasted.
    let peak = status_kib(pid, "VmHWM:");
    // The head's lines, the chunk sizes' lines, the header line and 10 million rows.
    assert!(
        newlines > 10_000_000,
        "{newlines} lines for {bytes} bytes: {}",
        String::from_utf8_lossy(&head)
    );
    let growth = peak.saturating_sub(before);
    println!(
        "{bytes} bytes streamed; server resident set {before} KiB before, peak growth {growth} KiB"
    );
    assert!(
        growth < 64 * 1024,
        "the server grew by {growth} KiB while streaming 10 million rows"
    );
    server.stop().await;
}

/// A dashboard with one `SELECT 1` panel on the test PostgreSQL (as `checker`): the path of
/// its run.
async fn one_panel(server: &Server) -> (String, String) {
    let db = checker_database(server, "run events").await;
    let dashboard = json!({
        "name": "run events",
        "restricted_access": false,
        "panels": [{"title": "one", "details": {
            "__type__": "query",
            "query": "SELECT 1 AS one",
            "credential_id": db["credentials"][0]["id"],
        }}],
    })
    .to_string();
    let dashboard = request(
        server.addr,
        "POST",
        "/api/v1/dashboards",
        &[("x-api-key", ADMIN_KEY)],
        Some(&dashboard),
    )
    .await;
    assert_eq!(dashboard.status, 200, "{}", dashboard.body);
    let dashboard = dashboard.json();
    let id = dashboard["id"].as_str().unwrap().to_owned();
    let path = format!(
        "/api/v1/dashboards/{id}/panels/{}/run",
        dashboard["panels"][0]["id"].as_str().unwrap()
    );
    (id, path)
}

/// The request ids of the `panel.run` events of dashboard `id`, every page.
async fn panel_run_events(server: &Server, id: &str) -> Vec<String> {
    let (mut ids, mut after) = (Vec::new(), String::new());
    loop {
        let page = request(
            server.addr,
            "GET",
            &format!("/api/v1/console/audit?resource={id}&action=panel.run&limit=100{after}"),
            &[("x-api-key", ADMIN_KEY)],
            None,
        )
        .await;
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.json();
        for event in page["data"].as_array().unwrap() {
            let request_id = event["request_id"].as_str();
            ids.push(request_id.unwrap_or_else(|| panic!("{event}")).to_owned());
        }
        match page["next"].as_str() {
            Some(next) => after = format!("&after={next}"),
            None => return ids,
        }
    }
}

/// A panel run's audit event is written after its answer (docs/operations.md, "Run events"):
/// killed with SIGKILL under 16 clients running panels (after 300 answers), with the backlog
/// bound at 4, the server loses at most 4 events of runs it answered; stopped with SIGTERM,
/// none. Each run is told apart by its `x-request-id`, which its event keeps: the runs counted
/// lost are the answered ones whose own event is missing (an event of a run whose answer never
/// reached its client makes up for none of them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkill_loses_at_most_the_backlog_of_answered_runs_events() {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    const BOUND: usize = 4;
    const CLIENTS: usize = 16;
    postgres_admin().await;
    let data = tempfile::tempdir().unwrap();
    let user_key = alice_key(data.path()).await;
    for stop in [Signal::SIGKILL, Signal::SIGTERM] {
        let server = start_with(data.path(), &["--run-events-backlog", "4"]).await;
        let (id, path) = one_panel(&server).await;
        // The request ids sent, and those whose answer (the panel's row) the client read.
        let sent = Arc::new(Mutex::new(BTreeSet::new()));
        let answered = Arc::new(Mutex::new(BTreeSet::new()));
        let wrong = Arc::new(AtomicU64::new(0));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (addr, key, path) = (server.addr, user_key.clone(), path.clone());
                let (sent, answered) = (Arc::clone(&sent), Arc::clone(&answered));
                let wrong = Arc::clone(&wrong);
                tokio::spawn(async move {
                    // Until the server goes away: each run on one keep-alive connection.
                    let Ok(stream) = tokio::net::TcpStream::connect(addr).await else {
                        return;
                    };
                    let Ok((mut sender, connection)) =
                        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                            .await
                    else {
                        return;
                    };
                    tokio::spawn(connection);
                    for run in 0u64.. {
                        let request_id = format!("{stop:?}-{client}-{run}");
                        sent.lock().unwrap().insert(request_id.clone());
                        let request = http::Request::post(path.as_str())
                            .header("x-api-key", key.as_str())
                            .header("x-request-id", request_id.as_str())
                            .header("content-type", "application/json")
                            .body(http_body_util::Full::new(bytes::Bytes::from_static(b"{}")))
                            .unwrap();
                        let Ok(response) = sender.send_request(request).await else {
                            return;
                        };
                        let status = response.status();
                        let Ok(body) = http_body_util::BodyExt::collect(response.into_body()).await
                        else {
                            return;
                        };
                        let body = body.to_bytes();
                        if status == 200 && body.windows(12).any(|w| w == b"\"rows\":[[1]]") {
                            answered.lock().unwrap().insert(request_id);
                        } else {
                            wrong.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                    }
                })
            })
            .collect();
        // Until enough runs were answered (the machine may be busy with other tests).
        eventually(
            Duration::from_secs(120),
            "300 panel runs answered",
            || async { (answered.lock().unwrap().len() >= 300).then_some(()) },
        )
        .await;
        let mut server = server;
        server.signal(stop);
        server.exit_status().await;
        for client in clients {
            let ended = tokio::time::timeout(HANG_GUARD, client).await;
            assert!(ended.is_ok(), "a client still runs after the server ended");
        }
        assert_eq!(
            wrong.load(Ordering::SeqCst),
            0,
            "every answer was the panel's row"
        );
        let sent = std::mem::take(&mut *sent.lock().unwrap());
        let answered = std::mem::take(&mut *answered.lock().unwrap());
        let server = start(data.path()).await;
        let events = panel_run_events(&server, &id).await;
        let evented: BTreeSet<&str> = events.iter().map(String::as_str).collect();
        assert_eq!(evented.len(), events.len(), "one event a run: {events:?}");
        println!(
            "{stop:?}: {} runs answered, {} events after the restart",
            answered.len(),
            events.len()
        );
        let lost: Vec<&String> = answered
            .iter()
            .filter(|id| !evented.contains(id.as_str()))
            .collect();
        match stop {
            Signal::SIGKILL => assert!(
                lost.len() <= BOUND,
                "{} answered runs lack their event, over the backlog of {BOUND}: {lost:?}",
                lost.len()
            ),
            _ => assert!(
                lost.is_empty(),
                "a stop writes every answered run's event: {lost:?}"
            ),
        }
        // Every event is of a run sent; those of runs never answered are of the runs in
        // flight when the server stopped, one a client at most.
        let unsent: Vec<&&str> = evented.iter().filter(|id| !sent.contains(**id)).collect();
        assert!(unsent.is_empty(), "events of runs never sent: {unsent:?}");
        let unanswered = evented.iter().filter(|id| !answered.contains(**id)).count();
        assert!(
            unanswered <= CLIENTS,
            "{unanswered} events of runs never answered, over one a client"
        );
        server.stop().await;
    }
}
