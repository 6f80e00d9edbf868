//! Flat cost with size: the release server on redb at 1,000, 100,000 and 1,000,000 stored
//! databases. Not part of CI (the full run writes about a gigabyte and takes minutes).
//!
//! Run: `bash benches/scale.sh` (it builds the release server, then this bench);
//! `SCALE_SIZES=1000,100000` picks the sizes. For each size the bench fills the data file
//! through the `Storage` API (the same records the service makes, sealed, written with group
//! commit), starts the server on it and reports:
//!
//! - restart time: from spawning the process to its `listening on` line;
//! - GET by id of 4,096 random stored databases (the same working set at every size: what
//!   changes is only the store around it), 32 connections, 5 s: requests/s, p50, p99; once as
//!   the server runs by default (its read cache holds the working set), once more on a restart
//!   with the read cache off (`DBCONSOLE_READ_CACHE_MIB=0`: every GET reads the store);
//! - listing pages (`?limit=50&after=<random id>`), 8 connections, 5 s: pages/s;
//! - filtered listing pages, 8 connections, 5 s: pages/s of `?group=needle&limit=50` and of
//!   `?name_prefix=needle-&limit=50`, over the same 100 databases of group `needle` (written
//!   once, at the first size) whatever the size of the store around them: flat figures mean
//!   the filters read indexes, not the store;
//! - the server's resident memory (VmRSS) after the reads, and the data file's size; and, from
//!   redb's own accounting after the fill, the live bytes stored (the file also holds free
//!   pages, as many as the fill's batching left) and those of the audit events.

use dbconsole_core::storage::Edits as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dbconsole_benches::fixtures::create_database_body;
use dbconsole_benches::loopback::{load, release_server, request_bytes, rss_kib, start_server};
use dbconsole_core::model::{Actor, Origin, Timestamp};
use dbconsole_core::seal::{Sealer, SecretKey};
use dbconsole_core::validate::database_from_body;
use dbconsole_storage_redb::RedbStorage;

const API_KEY: &str = "scale-bench-api-key";
const DATABASES: &str = "/api/v1/console/databases";

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
                let database =
                    database_from_body(None, &(*body).clone().into(), Timestamp::now(), &sealer)
                        .expect("a valid body");
                let id = database.id.as_str().to_owned();
                storage
                    .insert_database(database, &bench_origin())
                    .await
                    .expect("inserted");
                id
            }));
        }
        for task in tasks {
            ids.push(task.await.expect("an insert task"));
        }
        n += chunk;
    }
}

/// Where the bench's writes come from, in the audit trail.
fn bench_origin() -> Origin {
    Origin::of(Actor::named("scale bench"))
}

/// Whether `ids` was just filled to the first size (the needles go in once).
fn from_size_is_first(ids: &[String], size: usize) -> bool {
    ids.len() == size && !NEEDLES_ADDED.swap(true, std::sync::atomic::Ordering::Relaxed)
}

static NEEDLES_ADDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// 100 databases of group `needle`, named `needle-0` …: what the filtered pages read.
async fn add_needles(storage: &Arc<RedbStorage>, sealer: &Sealer) {
    for n in 0..100 {
        let body = serde_json::json!({
            "name": format!("needle-{n}"), "adapter": "postgres", "hostname": "db.internal",
            "database": "app", "group": "needle",
            "credentials": [{"username": "reader", "password": "pw"}],
        });
        let body = body.as_object().expect("an object").clone();
        let database = database_from_body(None, &body.clone().into(), Timestamp::now(), sealer)
            .expect("a valid body");
        storage
            .insert_database(database, &bench_origin())
            .await
            .expect("inserted");
    }
}

/// Stops the server with SIGTERM, by PID (a clean shutdown, so the next open has nothing to
/// repair); its resident memory just before, in KiB.
async fn stop(mut child: tokio::process::Child) -> u64 {
    let pid = child.id().expect("running");
    let rss = rss_kib(pid);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait().await;
    rss
}

/// What the data file holds, from redb's own accounting (the file's size also counts free pages,
/// which depend on how the fill's commits were batched): live bytes in all, and those of the
/// audit trail's events. In MiB.
fn stored_mib(file: &Path) -> (f64, f64) {
    use redb::ReadableTableMetadata;
    let database = redb::Database::open(file).expect("the data file opens");
    let txn = database.begin_write().expect("a write transaction");
    let all = txn.stats().expect("stats").stored_bytes();
    let events: redb::TableDefinition<'_, &str, &[u8]> = redb::TableDefinition::new("audit_events");
    let audit = txn
        .open_table(events)
        .expect("the audit table")
        .stats()
        .expect("table stats")
        .stored_bytes();
    txn.abort().expect("aborted");
    let mib = |bytes: u64| bytes as f64 / 1024.0 / 1024.0;
    (mib(all), mib(audit))
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
    let binary = release_server("benches/scale.sh");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data_dir = dir.path().join("data");
    let key = SecretKey::generate().expect("a key");
    let key_text = key.to_base64();
    let sealer = Sealer::new(&key);
    let mut ids = Vec::new();
    let period = Duration::from_secs(5);

    println!(
        "{:>9} {:>10} {:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10} {:>9} {:>10}",
        "databases",
        "restart",
        "GET/s",
        "p50",
        "p99",
        "uncached/s",
        "p50",
        "p99",
        "pages/s",
        "RSS MiB",
        "file MiB"
    );
    println!(
        "{:>9} {:>12} {:>12}",
        "databases", "group pages/s", "prefix pages/s"
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
        if from_size_is_first(&ids, size) {
            let storage = Arc::new(
                RedbStorage::open(&data_dir.join("dbconsole.redb"), &sealer).expect("opens"),
            );
            add_needles(&storage, &sealer).await;
        }
        let filled = started.elapsed();
        let (stored, audit) = stored_mib(&data_dir.join("dbconsole.redb"));

        let key_env = ("DBCONSOLE_SECRET_KEY", key_text.as_str());
        let env = [
            key_env,
            ("DBCONSOLE_API_KEY", API_KEY),
            ("DBCONSOLE_ACCESS_TOKEN", "scale-bench-token"),
            ("RUST_LOG", "warn"),
        ];

        // Random stored ids, spread over the whole store.
        let mut pick = 0x9e37_79b9_7f4a_7c15u64;
        let mut random_id = || {
            pick ^= pick << 13;
            pick ^= pick >> 7;
            pick ^= pick << 17;
            ids[(pick % ids.len() as u64) as usize].clone()
        };
        let gets: Arc<Vec<Vec<u8>>> = Arc::new(
            (0..4096)
                .map(|_| {
                    request_bytes(
                        "GET",
                        &format!("{DATABASES}/{}", random_id()),
                        API_KEY,
                        None,
                    )
                })
                .collect(),
        );
        let pages: Vec<Vec<u8>> = (0..1024)
            .map(|_| {
                let path = format!("{DATABASES}?limit=50&after={}", random_id());
                request_bytes("GET", &path, API_KEY, None)
            })
            .collect();

        let started = Instant::now();
        let (child, addr) = start_server(&binary, &data_dir, &env).await;
        let restart = started.elapsed();
        let cached = load(addr, 32, Arc::clone(&gets), 200, period).await;
        let pages = load(addr, 8, Arc::new(pages), 200, period).await;
        let by_group = vec![request_bytes(
            "GET",
            &format!("{DATABASES}?group=needle&limit=50"),
            API_KEY,
            None,
        )];
        let by_group = load(addr, 8, Arc::new(by_group), 200, period).await;
        let by_prefix = vec![request_bytes(
            "GET",
            &format!("{DATABASES}?name_prefix=needle-&limit=50"),
            API_KEY,
            None,
        )];
        let by_prefix = load(addr, 8, Arc::new(by_prefix), 200, period).await;
        let rss = stop(child).await;

        let uncached_env = [env.as_slice(), &[("DBCONSOLE_READ_CACHE_MIB", "0")]].concat();
        let (child, addr) = start_server(&binary, &data_dir, &uncached_env).await;
        let uncached = load(addr, 32, gets, 200, period).await;
        stop(child).await;
        println!(
            "{size:>9} {:>9.2?} {:>10.0} {:>9.2?} {:>9.2?} {:>10.0} {:>9.2?} {:>9.2?} {:>10.0} {:>9.1} {:>10.1}   (filled in {filled:.1?})",
            restart,
            cached.per_second,
            cached.p50,
            cached.p99,
            uncached.per_second,
            uncached.p50,
            uncached.p99,
            pages.per_second,
            rss as f64 / 1024.0,
            dir_size(&data_dir) as f64 / 1024.0 / 1024.0,
        );
        println!(
            "{size:>9} {:>12.0} {:>12.0}   (filtered pages of the same 100 databases)",
            by_group.per_second, by_prefix.per_second
        );
        println!(
            "{size:>9} live data {stored:.1} MiB, of it audit events {audit:.1} MiB \
             (redb's stored bytes)"
        );
    }
}
