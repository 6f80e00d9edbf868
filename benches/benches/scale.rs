//! Flat cost with size: the release server on redb at 1,000, 100,000 and 1,000,000 stored
//! databases. Not part of CI (the full run writes about a gigabyte and takes minutes).
//!
//! Run: `bash benches/scale.sh` (it builds the release server, then this bench);
//! `SCALE_SIZES=1000,100000` picks the sizes. For each size the bench fills the data file
//! through the `Storage` API (the same records the service makes, sealed, written with group
//! commit), starts the server on it and reports:
//!
//! - restart time: from spawning the process to its `listening on` line;
//! - GET by id of random stored databases, 32 connections, 5 s: requests/s, p50, p99;
//! - listing pages (`?limit=50&after=<random id>`), 8 connections, 5 s: pages/s;
//! - the server's resident memory (VmRSS) after the reads, and the data file's size.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dbconsole_benches::fixtures::create_database_body;
use dbconsole_core::model::Timestamp;
use dbconsole_core::seal::{Sealer, SecretKey};
use dbconsole_core::storage::Storage;
use dbconsole_core::validate::database_from_body;
use dbconsole_storage_redb::RedbStorage;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Command;

const API_KEY: &str = "scale-bench-api-key";
const DATABASES: &str = "/api/v1/console/databases";

async fn read_response(reader: &mut BufReader<TcpStream>) -> std::io::Result<u16> {
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line).await?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok(status)
}

/// `connections` connections sending the requests of `requests` in turn for `period`.
/// Requests per second, p50 and p99.
async fn load(
    addr: std::net::SocketAddr,
    connections: usize,
    requests: Arc<Vec<Vec<u8>>>,
    period: Duration,
) -> (f64, Duration, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (stop, next, requests) = (Arc::clone(&stop), Arc::clone(&next), Arc::clone(&requests));
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let mut reader = BufReader::new(stream);
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let request = &requests[next.fetch_add(1, Ordering::Relaxed) % requests.len()];
                let started = Instant::now();
                reader.get_mut().write_all(request).await.expect("send");
                let status = read_response(&mut reader).await.expect("answer");
                assert_eq!(status, 200);
                latencies.push(started.elapsed());
            }
            latencies
        }));
    }
    tokio::time::sleep(period).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("a connection panicked"));
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    (
        latencies.len() as f64 / period.as_secs_f64(),
        at(0.5),
        at(0.99),
    )
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: localhost\r\nx-api-key: {API_KEY}\r\n\r\n").into_bytes()
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Fills the store up to `target` databases; returns the ids written.
async fn fill(
    storage: &Arc<RedbStorage>,
    sealer: &Sealer,
    from: usize,
    target: usize,
    ids: &mut Vec<String>,
) {
    let body = create_database_body();
    let body: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&body).expect("a JSON object");
    let body = Arc::new(body);
    let mut n = from;
    while n < target {
        let chunk = (target - n).min(4096);
        let mut tasks = Vec::new();
        for _ in 0..chunk {
            let (storage, sealer, body) = (Arc::clone(storage), sealer.clone(), Arc::clone(&body));
            tasks.push(tokio::spawn(async move {
                let database = database_from_body(None, &body, Timestamp::now(), &sealer)
                    .expect("a valid body");
                let id = database.id.as_str().to_owned();
                storage.insert_database(database).await.expect("inserted");
                id
            }));
        }
        for task in tasks {
            ids.push(task.await.expect("an insert task"));
        }
        n += chunk;
    }
}

fn dir_size(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.metadata().ok())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run());
}

async fn run() {
    let sizes: Vec<usize> = std::env::var("SCALE_SIZES")
        .unwrap_or_else(|_| "1000,100000,1000000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let binary =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/dbconsole");
    assert!(
        binary.exists(),
        "run `bash benches/scale.sh`, which builds the server first"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data_dir = dir.path().join("data");
    let key = SecretKey::generate().expect("a key");
    let key_text = key.to_base64();
    let sealer = Sealer::new(&key);
    let mut ids = Vec::new();
    let period = Duration::from_secs(5);

    println!(
        "{:>9} {:>10} {:>10} {:>9} {:>9} {:>10} {:>9} {:>10}",
        "databases", "restart", "GET/s", "p50", "p99", "pages/s", "RSS MiB", "file MiB"
    );
    for size in sizes {
        let started = Instant::now();
        {
            let storage = Arc::new(
                RedbStorage::open(&data_dir.join("dbconsole.redb"), &sealer).expect("opens"),
            );
            let from = ids.len();
            fill(&storage, &sealer, from, size, &mut ids).await;
        }
        let filled = started.elapsed();

        let started = Instant::now();
        let mut child = Command::new(&binary)
            .args(["serve", "--listen", "127.0.0.1:0", "--storage", "redb"])
            .arg("--data-dir")
            .arg(&data_dir)
            .env("DBCONSOLE_SECRET_KEY", key_text.as_str())
            .env("DBCONSOLE_API_KEY", API_KEY)
            .env("DBCONSOLE_ACCESS_TOKEN", "scale-bench-token")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the server starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr: std::net::SocketAddr = loop {
            let line = lines.next_line().await.unwrap().expect("the server exited");
            if let Some(addr) = line.strip_prefix("listening on ") {
                break addr.parse().unwrap();
            }
        };
        let restart = started.elapsed();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

        // Random stored ids, spread over the whole store.
        let mut pick = 0x9e37_79b9_7f4a_7c15u64;
        let mut random_id = || {
            pick ^= pick << 13;
            pick ^= pick >> 7;
            pick ^= pick << 17;
            ids[(pick % ids.len() as u64) as usize].clone()
        };
        let gets: Vec<Vec<u8>> = (0..4096)
            .map(|_| get(&format!("{DATABASES}/{}", random_id())))
            .collect();
        let pages: Vec<Vec<u8>> = (0..1024)
            .map(|_| get(&format!("{DATABASES}?limit=50&after={}", random_id())))
            .collect();
        let (get_rate, p50, p99) = load(addr, 32, Arc::new(gets), period).await;
        let (page_rate, _, _) = load(addr, 8, Arc::new(pages), period).await;
        let pid = child.id().expect("running");
        let rss = rss_kib(pid);
        // SIGTERM, by PID: a clean shutdown, so the next open has nothing to repair.
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let _ = child.wait().await;
        println!(
            "{size:>9} {:>9.2?} {get_rate:>10.0} {p50:>9.2?} {p99:>9.2?} {page_rate:>10.0} {:>9.1} {:>10.1}   (filled in {filled:.1?})",
            restart,
            rss as f64 / 1024.0,
            dir_size(&data_dir) as f64 / 1024.0 / 1024.0,
        );
    }
}
