//! The service on the PostgreSQL backend, against the raw `tokio-postgres` round trip of the
//! same row, measured in the same run; and the throughput of two nodes against one on the same
//! PostgreSQL. A bench binary (no criterion): each figure is the median of 5 batches.
//!
//! Run: `cargo bench -p dbconsole-benches --bench postgres` with the test database up
//! (`sudo bash .ci/db-servers-up.sh`; `DBCONSOLE_TEST_DATABASE_URL` points elsewhere). It works
//! in a fresh schema of its own.
//!
//! - `raw select`: `SELECT id, record FROM databases WHERE id = $1`, prepared, on one
//!   connection: the floor any GET pays.
//! - `GET /databases/{id}`: the whole service call (auth, routing, the pool, the same select,
//!   decoding, rendering JSON).
//! - `raw insert`: one `INSERT` of a row of the same size, autocommit.
//! - `POST /databases`: the whole create (parsing, validation, sealing two passwords, encoding,
//!   the insert).
//! - throughput: 16 concurrent clients doing GETs for 3 s against one node (one service, one
//!   pool of 16), then split over two nodes (two services, each with its own pool of 8).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dbconsole_benches::fixtures::create_database_body;
use dbconsole_benches::{DATABASES, database_request, json_of, service_on, status_of};
use dbconsole_core::{ConsoleService, Sealer};
use dbconsole_storage_postgres::PostgresStorage;
use dbconsole_storage_postgres::testing::{fresh_options, not_running, test_url};
use http::{Method, StatusCode};

const BATCHES: usize = 5;

/// The median time of one call of `op`, over [`BATCHES`] batches of `iters` calls.
async fn median<F, Fut>(iters: u32, mut op: F) -> Duration
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for i in 0..iters / 10 {
        op(iters * BATCHES as u32 + i).await;
    }
    let mut times = Vec::new();
    for batch in 0..BATCHES as u32 {
        let start = Instant::now();
        for i in 0..iters {
            op(batch * iters + i).await;
        }
        times.push(start.elapsed() / iters);
    }
    times.sort();
    times[BATCHES / 2]
}

async fn node(schema: &str, sealer: &Sealer, connections: usize) -> ConsoleService {
    let mut options = fresh_options();
    options.schema = schema.to_owned();
    options.max_connections = connections;
    let storage = PostgresStorage::connect(options, sealer)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    service_on(Arc::new(storage), sealer.clone())
}

/// GETs per second that `clients` concurrent clients get, spread over `nodes`, in `period`.
async fn throughput(nodes: &[ConsoleService], clients: usize, path: &str, period: Duration) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for client in 0..clients {
        let service = nodes[client % nodes.len()].clone();
        let (done, stop, path) = (Arc::clone(&done), Arc::clone(&stop), path.to_owned());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let request = database_request(Method::GET, &path, None);
                assert_eq!(status_of(&service, request).await, StatusCode::OK);
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(period).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.expect("a client panicked");
    }
    done.load(Ordering::Relaxed) as f64 / period.as_secs_f64()
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
    let sealer = Sealer::ephemeral().expect("a random key");
    let schema = fresh_options().schema;
    let service = node(&schema, &sealer, 16).await;
    let body = create_database_body();
    let mut id = String::new();
    for _ in 0..200 {
        let request = database_request(Method::POST, DATABASES, Some(body.clone()));
        let (status, created) = json_of(&service, request).await;
        assert_eq!(status, StatusCode::OK, "{created}");
        id = created["id"].as_str().expect("an id").to_owned();
    }
    let path = format!("{DATABASES}/{id}");

    let (raw, connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    tokio::spawn(connection);
    raw.batch_execute(&format!("SET search_path = {schema}"))
        .await
        .expect("search_path");
    let select = raw
        .prepare("SELECT id, record FROM databases WHERE id = $1")
        .await
        .expect("prepared");
    let record: Vec<u8> = raw
        .query_one(&select, &[&id])
        .await
        .expect("the row")
        .get(1);
    let insert = raw
        .prepare("INSERT INTO databases (id, api_id, name, record) VALUES ($1, NULL, $2, $3)")
        .await
        .expect("prepared");

    let raw_select = median(2000, |_| {
        let (raw, select, id) = (&raw, &select, &id);
        async move {
            raw.query_one(select, &[id]).await.expect("the row");
        }
    })
    .await;
    let get = median(2000, |_| {
        let (service, path) = (&service, &path);
        async move {
            let request = database_request(Method::GET, path, None);
            assert_eq!(status_of(service, request).await, StatusCode::OK);
        }
    })
    .await;
    let raw_insert = median(300, |n| {
        let (raw, insert, record) = (&raw, &insert, &record);
        async move {
            let id = format!("db_raw_{n:08}");
            raw.execute(insert, &[&id, &"raw".as_bytes(), record])
                .await
                .expect("inserted");
        }
    })
    .await;
    let post = median(300, |_| {
        let (service, body) = (&service, &body);
        async move {
            let request = database_request(Method::POST, DATABASES, Some(Bytes::clone(body)));
            assert_eq!(status_of(service, request).await, StatusCode::OK);
        }
    })
    .await;

    let period = Duration::from_secs(3);
    let one = throughput(std::slice::from_ref(&service), 16, &path, period).await;
    let nodes = [
        node(&schema, &sealer, 8).await,
        node(&schema, &sealer, 8).await,
    ];
    let two = throughput(&nodes, 16, &path, period).await;

    println!(
        "\nPostgreSQL ({}), median of {BATCHES} batches:",
        test_url().split('@').next_back().unwrap_or("?")
    );
    println!(
        "{:<28} {:>12} {:>16}",
        "operation", "time", "x raw round trip"
    );
    let row = |name: &str, time: Duration, base: Duration| {
        let ratio = time.as_secs_f64() / base.as_secs_f64();
        println!(
            "{name:<28} {:>9.1} µs {ratio:>16.2}",
            time.as_secs_f64() * 1e6
        );
    };
    row("raw select by id", raw_select, raw_select);
    row("GET /databases/{id}", get, raw_select);
    row("raw insert", raw_insert, raw_insert);
    row("POST /databases", post, raw_insert);
    println!("\nthroughput, 16 concurrent GET clients for {period:?}:");
    println!("one node:  {one:>8.0} requests/s");
    println!(
        "two nodes: {two:>8.0} requests/s ({:.2} x one node)",
        two / one
    );
}
