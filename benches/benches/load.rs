//! End to end, on loopback: the release `dbconsole` server on redb against its limits, measured
//! in the same run.
//!
//! Run: `bash benches/load.sh` (it builds the release server, then this bench). Each figure is
//! the median of 3 rounds of 5 s (`LOAD_SECONDS`, `LOAD_ROUNDS` change that):
//!
//! - `GET /databases/{id}` of each of 1,000 seeded databases in turn, 32 keep-alive connections,
//!   against a bare hyper server answering the same bytes (same status, headers and body
//!   size) in a process of the same kind: once on the server as it runs by default (its read
//!   cache holds them all), once on a second server with the read cache off
//!   (`DBCONSOLE_READ_CACHE_MIB=0`: every GET reads, decodes and renders the record);
//! - `POST /databases` (each answered after its fsync), 8 connections, against a raw redb loop
//!   that inserts the same record bytes with one durable commit each (the rate one writer gets
//!   from redb; a single caller, as the store had one transaction per call);
//! - p50/p99 latencies, and the server's resident memory (VmRSS) after each phase;
//! - for each GET phase, the server's CPU time per answer (user and system, from
//!   `/proc/<pid>/stat`) and the bare server's over it. The GET phases run one after the other,
//!   first to last in even rounds and last to first in odd ones, so that a drift of the
//!   machine's speed over a run falls on all of them alike.
//!
//! The server logs at `warn` (no line per request); `LOAD_SERVER_LOG=info` measures it with its
//! request log on.
//!
//! The load generator is this process: a minimal HTTP/1.1 client per connection (write the
//! request, read the head, read `content-length` bytes), so its cost is the same for the
//! server and the baseline. The GET of one id is measured a second time with `wrk` (one
//! thread, 32 connections; `benches/load.sh` needs it), the client an outsider would use, on
//! both servers in the same rounds: a client that costs less leaves more of the two cores to
//! the server, and the two clients tell how much the ratio owes to the client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use dbconsole_benches::fixtures::create_database_body;
use dbconsole_benches::loopback::{
    Phase, load, load_costed, read_response, read_response_with_head, release_server,
    request_bytes, rss_kib, start_server,
};
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use redb::{Durability, TableDefinition};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

const API_KEY: &str = "load-bench-api-key";
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

/// A GET phase to run: where its results go, the server's process and address, the requests.
type GetPhase<'a> = (
    &'a mut Vec<(Phase, Duration)>,
    u32,
    SocketAddr,
    &'a Arc<Vec<Vec<u8>>>,
);

/// `wrk -t1 -c32` for `period` on `url` with the API key, and `pid`'s CPU time per answer;
/// `None` when `wrk` is not installed.
async fn wrk_costed(pid: u32, url: &str, period: Duration) -> Option<(Phase, Duration)> {
    let before = dbconsole_benches::loopback::cpu_time(pid);
    let output = Command::new("wrk")
        .args(["-t1", "-c32", "--latency"])
        .arg(format!("-d{}s", period.as_secs().max(1)))
        .args(["-H", &format!("x-api-key: {API_KEY}"), url])
        .output()
        .await
        .ok()?;
    let spent = dbconsole_benches::loopback::cpu_time(pid).saturating_sub(before);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && !text.contains("Non-2xx"),
        "wrk on {url}: {text}"
    );
    let field = |label: &str| {
        text.lines()
            .find_map(|line| {
                line.trim()
                    .strip_prefix(label)
                    .map(str::trim)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| panic!("wrk printed no {label:?}: {text}"))
    };
    let latency = |text: String| {
        let (number, unit) = text.split_at(
            text.find(|c: char| c.is_ascii_alphabetic())
                .unwrap_or(text.len()),
        );
        let number: f64 = number
            .parse()
            .unwrap_or_else(|_| panic!("a latency: {text}"));
        Duration::from_secs_f64(match unit {
            "us" => number / 1e6,
            "ms" => number / 1e3,
            "s" => number,
            other => panic!("a latency unit: {other}"),
        })
    };
    let per_second: f64 = field("Requests/sec:").parse().expect("a rate");
    let answers = (per_second * period.as_secs_f64()).max(1.0);
    Some((
        Phase {
            per_second,
            p50: latency(field("50%")),
            p99: latency(field("99%")),
        },
        spent.div_f64(answers),
    ))
}

/// A GET row: the rate, latencies, the rate over `baseline`'s, the server's CPU time per answer
/// and the baseline's over it (the cost ratio: steadier than the rate on a machine whose speed
/// drifts).
fn costed_row(name: &str, (phase, cost): &(Phase, Duration), baseline: &(Phase, Duration)) {
    println!(
        "{name:<44} {:>10.0} {:>10.2?} {:>10.2?} {:>8.2} {:>12.2?} {:>8.2}",
        phase.per_second,
        phase.p50,
        phase.p99,
        phase.per_second / baseline.0.per_second,
        cost,
        baseline.1.as_secs_f64() / cost.as_secs_f64().max(1e-12),
    );
}

/// The median phase, and the median CPU time per answer (each on its own).
fn median_costed(phases: Vec<(Phase, Duration)>) -> (Phase, Duration) {
    let (phases, mut costs): (Vec<Phase>, Vec<Duration>) = phases.into_iter().unzip();
    costs.sort();
    (median(phases), costs[costs.len() / 2])
}

/// The bare baseline: this bench's binary again, as a process of its own (as the server is),
/// answering every request with `body` under the header lines `head` (those hyper writes
/// itself left out: `content-length`, `date`).
async fn start_bare(
    head: &[(String, String)],
    body: &[u8],
    dir: &std::path::Path,
) -> (Child, SocketAddr) {
    let body_file = dir.join("get-answer.json");
    std::fs::write(&body_file, body).expect("the answer's bytes written");
    let head: String = head
        .iter()
        .filter(|(name, _)| {
            !name.eq_ignore_ascii_case("content-length") && !name.eq_ignore_ascii_case("date")
        })
        .map(|(name, value)| format!("{name}: {value}\n"))
        .collect();
    std::fs::write(dir.join("get-answer.head"), head).expect("the answer's head written");
    let mut child = Command::new(std::env::current_exe().expect("this binary"))
        .env(BARE_BODY_VAR, &body_file)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the bare server starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines
        .next_line()
        .await
        .unwrap()
        .expect("the bare server's address");
    let addr = line.strip_prefix("listening on ").unwrap().parse().unwrap();
    (child, addr)
}

/// Set when this binary runs as the bare server: the file of the bytes to answer.
const BARE_BODY_VAR: &str = "LOAD_BENCH_BARE_BODY";

/// The bare server: hyper's HTTP/1 on a multi-thread runtime (as the server's), answering the
/// same status, header lines and body to every request.
async fn serve_bare(head: http::HeaderMap, body: Bytes) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("listening on {}", listener.local_addr().unwrap());
    {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (head, body) = (head.clone(), body.clone());
            tokio::spawn(async move {
                let service = service_fn(move |_request| {
                    let (head, body) = (head.clone(), body.clone());
                    async move {
                        let mut response = http::Response::new(Full::new(body));
                        *response.headers_mut() = head;
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }
}

/// Inserts with one durable commit each (immediate durability; with `two_phase`, redb's
/// two-phase commit as the store uses it), for `period`, on a blocking thread. Commits per
/// second.
fn raw_redb_commits(
    dir: &std::path::Path,
    record: &[u8],
    period: Duration,
    two_phase: bool,
) -> f64 {
    const TABLE: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("databases");
    std::fs::create_dir_all(dir).expect("a directory");
    let db = redb::Database::create(dir.join("raw.redb")).expect("a redb file");
    let started = Instant::now();
    let mut commits = 0u64;
    while started.elapsed() < period {
        let mut txn = db.begin_write().expect("write");
        txn.set_durability(Durability::Immediate)
            .expect("durability");
        txn.set_two_phase_commit(two_phase);
        {
            let mut table = txn.open_table(TABLE).expect("table");
            let key = format!("db_{commits:026}");
            table.insert(key.as_str(), record).expect("insert");
        }
        txn.commit().expect("commit");
        commits += 1;
    }
    commits as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    if let Some(body_file) = std::env::var_os(BARE_BODY_VAR) {
        let body = std::fs::read(&body_file).expect("the answer's bytes");
        let lines =
            std::fs::read_to_string(std::path::Path::new(&body_file).with_extension("head"))
                .expect("the answer's head");
        let mut head = http::HeaderMap::new();
        for line in lines.lines() {
            let (name, value) = line.split_once(": ").expect("a header line");
            head.append(
                http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                http::HeaderValue::from_str(value).expect("a header value"),
            );
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(serve_bare(head, Bytes::from(body)));
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run());
}

/// Creates 1,000 databases through `addr` with the `create` request, one after the other; a
/// `GET` request of each, and the header lines and body of the first one's answer.
async fn seed(addr: SocketAddr, create: &[u8]) -> (Vec<Vec<u8>>, (Vec<(String, String)>, Vec<u8>)) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut gets = Vec::new();
    for _ in 0..1_000 {
        reader.get_mut().write_all(create).await.unwrap();
        let (status, answer) = read_response(&mut reader).await.unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        let json: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        let path = format!("{DATABASES}/{}", json["id"].as_str().unwrap());
        gets.push(request_bytes("GET", &path, API_KEY, None));
    }
    reader.get_mut().write_all(&gets[0]).await.unwrap();
    let (status, head, answer) = read_response_with_head(&mut reader, true).await.unwrap();
    assert_eq!(status, 200);
    (gets, (head, answer))
}

async fn run() {
    let period = Duration::from_secs(env_or("LOAD_SECONDS", 5));
    let rounds = env_or("LOAD_ROUNDS", 3) as usize;
    let binary = release_server("benches/load.sh");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = std::env::var("LOAD_SERVER_LOG").unwrap_or_else(|_| "warn".into());
    let env = [
        ("DBCONSOLE_API_KEY", API_KEY),
        ("DBCONSOLE_ACCESS_TOKEN", "load-bench-token"),
        ("RUST_LOG", log.as_str()),
    ];
    let (server, addr) = start_server(&binary, &dir.path().join("data"), &env).await;
    let pid = server.id().expect("running");
    let uncached_env = [env.as_slice(), &[("DBCONSOLE_READ_CACHE_MIB", "0")]].concat();
    let (uncached_server, uncached) =
        start_server(&binary, &dir.path().join("data-uncached"), &uncached_env).await;
    let uncached_pid = uncached_server.id().expect("running");

    // Seed both, and take a GET answer's bytes for the bare server.
    let body = create_database_body();
    let create = request_bytes("POST", DATABASES, API_KEY, Some(&body));
    let (get, get_answer) = seed(addr, &create).await;
    let (get_uncached, _) = seed(uncached, &create).await;
    let (get, get_uncached_requests, create) = (
        Arc::new(get),
        Arc::new(get_uncached),
        Arc::new(vec![create]),
    );
    let (bare_process, bare) = start_bare(&get_answer.0, &get_answer.1, dir.path()).await;
    let bare_pid = bare_process.id().expect("running");
    // Another binary (BENCH_BEFORE), measured round by round with this one.
    let before = match std::env::var_os("BENCH_BEFORE") {
        Some(path) => {
            let (process, at) = start_server(
                std::path::Path::new(&path),
                &dir.path().join("data-before"),
                &env,
            )
            .await;
            let (get, _) = seed(at, &request_bytes("POST", DATABASES, API_KEY, Some(&body))).await;
            let pid = process.id().expect("running");
            Some((process, pid, at, Arc::new(get)))
        }
        None => None,
    };
    let mut get_before = Vec::new();
    let mut post_before = Vec::new();
    let rss_seeded = rss_kib(pid);

    let mut get_server = Vec::new();
    let mut get_uncached = Vec::new();
    let mut get_bare = Vec::new();
    let mut post_server = Vec::new();
    let (mut wrk_server, mut wrk_bare, mut wrk_before) = (Vec::new(), Vec::new(), Vec::new());
    // The path of a store's first GET request (each store has its own ids).
    let path_of = |requests: &[Vec<u8>]| {
        let line = String::from_utf8_lossy(&requests[0]);
        line.split(' ').nth(1).expect("a request line").to_owned()
    };
    let mut raw_commits = Vec::new();
    let mut raw_plain = Vec::new();
    for round in 0..rounds {
        // The GET phases one after the other, in turn first and last (this machine's speed
        // drifts over a run): the server, the baseline, the uncached server, the binary before.
        let mut gets: Vec<GetPhase<'_>> = vec![
            (&mut get_server, pid, addr, &get),
            (&mut get_bare, bare_pid, bare, &get),
            (
                &mut get_uncached,
                uncached_pid,
                uncached,
                &get_uncached_requests,
            ),
        ];
        if let Some((_, before_pid, at, before_get)) = &before {
            gets.push((&mut get_before, *before_pid, *at, before_get));
        }
        if round % 2 == 1 {
            gets.reverse();
        }
        for (into, pid, at, requests) in gets {
            into.push(load_costed(pid, at, 32, Arc::clone(requests), 200, period).await);
        }
        // The same GET of one id through `wrk`, on the server and the bare one, in turn first.
        let mut wrk_phases = vec![
            (&mut wrk_server, pid, addr, path_of(&get)),
            (&mut wrk_bare, bare_pid, bare, path_of(&get)),
        ];
        if let Some((_, before_pid, at, before_get)) = &before {
            wrk_phases.push((&mut wrk_before, *before_pid, *at, path_of(before_get)));
        }
        if round % 2 == 1 {
            wrk_phases.reverse();
        }
        for (into, pid, at, path) in wrk_phases {
            if let Some(phase) = wrk_costed(pid, &format!("http://{at}{path}"), period).await {
                into.push(phase);
            }
        }
        post_server.push(load(addr, 8, Arc::clone(&create), 200, period).await);
        if let Some((_, _, at, _)) = &before {
            post_before.push(load(*at, 8, Arc::clone(&create), 200, period).await);
        }
        let raw_dir = tempfile::tempdir().unwrap();
        let record = vec![7u8; 700];
        let raw_path = raw_dir.path().to_owned();
        let (two_phase, plain) = tokio::task::spawn_blocking(move || {
            let two_phase = raw_redb_commits(&raw_path.join("a"), &record, period, true);
            let plain = raw_redb_commits(&raw_path.join("b"), &record, period, false);
            (two_phase, plain)
        })
        .await
        .unwrap();
        raw_commits.push(two_phase);
        raw_plain.push(plain);
    }
    let rss_after = rss_kib(pid);
    let (get_server, get_uncached, get_bare, post_server) = (
        median_costed(get_server),
        median_costed(get_uncached),
        median_costed(get_bare),
        median(post_server),
    );
    raw_commits.sort_by(f64::total_cmp);
    let raw = raw_commits[raw_commits.len() / 2];
    raw_plain.sort_by(f64::total_cmp);
    let plain = raw_plain[raw_plain.len() / 2];

    println!("\nend to end on loopback, median of {rounds} rounds of {period:?}:");
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>8} {:>12} {:>8}",
        "", "req/s", "p50", "p99", "ratio", "CPU/answer", "ratio"
    );
    let row = |name: &str, phase: &Phase, ratio: Option<f64>| {
        println!(
            "{name:<44} {:>10.0} {:>10.2?} {:>10.2?} {:>8}",
            phase.per_second,
            phase.p50,
            phase.p99,
            ratio.map(|r| format!("{r:.2}")).unwrap_or_default()
        );
    };
    let get_row = |name: &str, measured: &(Phase, Duration)| costed_row(name, measured, &get_bare);
    get_row("GET by id, dbconsole on redb (32 conns)", &get_server);
    get_row("GET by id, read cache off (32 conns)", &get_uncached);
    get_row("GET, bare hyper, same bytes (32 conns)", &get_bare);
    if wrk_server.is_empty() || wrk_bare.is_empty() {
        println!("GET through wrk: not measured (wrk is not installed: apt-get install wrk)");
    } else {
        let (server, bare) = (median_costed(wrk_server), median_costed(wrk_bare));
        let before = (!wrk_before.is_empty()).then(|| median_costed(wrk_before));
        let rows = [
            ("GET of one id, wrk (32 conns)", Some(&server)),
            ("GET, bare hyper, wrk (32 conns)", Some(&bare)),
            (
                "before (BENCH_BEFORE): GET, wrk (32 conns)",
                before.as_ref(),
            ),
        ];
        for (name, measured) in rows {
            if let Some(measured) = measured {
                costed_row(name, measured, &bare);
            }
        }
    }
    row(
        "POST create, durable (8 conns)",
        &post_server,
        Some(post_server.per_second / raw),
    );
    println!(
        "{:<44} {raw:>10.0}",
        "raw redb: one insert + durable 2PC commit"
    );
    println!(
        "{:<44} {plain:>10.0} {:>30.2}",
        "raw redb: the same without two-phase commit",
        post_server.per_second / plain
    );
    if !get_before.is_empty() {
        let (get_before, post_before) = (median_costed(get_before), median(post_before));
        get_row("before (BENCH_BEFORE): GET by id (32 conns)", &get_before);
        row(
            "before (BENCH_BEFORE): POST create (8 conns)",
            &post_before,
            Some(post_before.per_second / raw),
        );
    }
    println!(
        "server RSS: {} KiB after seeding 1,000 databases, {} KiB at the end",
        rss_seeded, rss_after
    );
}
