//! Criterion benchmarks of the dbconsole service's main operations on the in-memory backend,
//! with two baselines measured the same way in the same run, so results read as ratios.
//!
//! Run: `cargo bench -p dbconsole-benches` (add `-- --quick` for a fast, rougher run, or a
//! filter such as `-- databases/`). At the end the run prints each benchmark's time and its
//! ratio to the baselines; `benches/README.md` explains each benchmark and the figures measured.
//!
//! Every service benchmark builds its request and sends it with `oneshot` inside the timed
//! loop, on a current-thread tokio runtime, and checks the status, so a benchmark that starts
//! failing stops instead of timing error answers.

use std::hint::black_box;
use std::time::{Instant, SystemTime};

use criterion::Criterion;
use std::sync::Arc;

use dbconsole_benches::fixtures::{
    UNKNOWN_PATH, create_database_body, dashboard_body, seeded, seeded_on, update_database_body,
};
use dbconsole_benches::{
    DASHBOARDS, DATABASES, dashboard_request, database_request, report, service, service_on,
    service_with_read_cache, status_of,
};
use dbconsole_core::model::{SealedSecret, TlsField};
use dbconsole_core::seal::{Place, Sealer};
use dbconsole_storage_redb::RedbStorage;
use http::{Method, StatusCode};
use tokio::runtime::Runtime;

/// Databases in the store the read and update benchmarks use.
const SEED_DATABASES: usize = 1_000;
/// Dashboards in that store.
const SEED_DASHBOARDS: usize = 100;
/// Panels per dashboard, and row actions per panel.
const PANELS: usize = 10;
const ACTIONS: usize = 3;

/// Every benchmark of this target, as `(group, bench)`, for the ratio table.
const BENCHES: [(&str, &str); 10] = [
    ("baseline", "unknown_route_404"),
    ("baseline", "json_parse_body"),
    ("databases", "create"),
    ("databases", "retrieve"),
    ("databases", "retrieve_cached"),
    ("databases", "update"),
    ("dashboards", "create_10x3"),
    ("dashboards", "retrieve_10x3"),
    ("redb", "retrieve"),
    ("redb", "open_secrets_of_one_database"),
];

fn baseline(c: &mut Criterion, runtime: &Runtime) {
    let mut group = c.benchmark_group("baseline");
    let service = service();
    group.bench_function("unknown_route_404", |b| {
        b.to_async(runtime).iter(|| async {
            let request = database_request(Method::GET, UNKNOWN_PATH, None);
            let status = status_of(&service, request).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
        })
    });
    let body = create_database_body();
    group.bench_function("json_parse_body", |b| {
        b.iter(|| {
            let value: serde_json::Value =
                serde_json::from_slice(black_box(&body)).expect("valid JSON");
            value
        })
    });
    group.finish();
}

fn databases(c: &mut Criterion, runtime: &Runtime) {
    let mut group = c.benchmark_group("databases");
    let body = create_database_body();
    // A fresh store per sample, so memory stays bounded however many iterations criterion asks.
    group.bench_function("create", |b| {
        b.to_async(runtime).iter_custom(|iters| {
            let body = body.clone();
            async move {
                let service = service();
                let start = Instant::now();
                for _ in 0..iters {
                    let request = database_request(Method::POST, DATABASES, Some(body.clone()));
                    assert_eq!(status_of(&service, request).await, StatusCode::OK);
                }
                start.elapsed()
            }
        })
    });

    let store = runtime.block_on(seeded(SEED_DATABASES, 0, PANELS, ACTIONS));
    let path = format!("{DATABASES}/{}", store.database_id);
    group.bench_function("retrieve", |b| {
        b.to_async(runtime).iter(|| async {
            let request = database_request(Method::GET, &path, None);
            assert_eq!(status_of(&store.service, request).await, StatusCode::OK);
        })
    });
    // The same with the read cache on, as the server runs by default: a GET after the first
    // answers the rendered record.
    let cached = service_with_read_cache();
    let cached_store = runtime.block_on(seeded_on(cached, 10, 0, PANELS, ACTIONS));
    let cached_path = format!("{DATABASES}/{}", cached_store.database_id);
    group.bench_function("retrieve_cached", |b| {
        b.to_async(runtime).iter(|| async {
            let request = database_request(Method::GET, &cached_path, None);
            assert_eq!(
                status_of(&cached_store.service, request).await,
                StatusCode::OK
            );
        })
    });
    let body = update_database_body();
    group.bench_function("update", |b| {
        b.to_async(runtime).iter(|| async {
            let request = database_request(Method::PATCH, &path, Some(body.clone()));
            assert_eq!(status_of(&store.service, request).await, StatusCode::OK);
        })
    });
    group.finish();
}

fn dashboards(c: &mut Criterion, runtime: &Runtime) {
    let mut group = c.benchmark_group("dashboards");
    let body = dashboard_body(PANELS, ACTIONS);
    group.bench_function("create_10x3", |b| {
        b.to_async(runtime).iter_custom(|iters| {
            let body = body.clone();
            async move {
                let service = service();
                let start = Instant::now();
                for _ in 0..iters {
                    let request = dashboard_request(Method::POST, DASHBOARDS, Some(body.clone()));
                    assert_eq!(status_of(&service, request).await, StatusCode::OK);
                }
                start.elapsed()
            }
        })
    });

    let store = runtime.block_on(seeded(0, SEED_DASHBOARDS, PANELS, ACTIONS));
    let path = format!("{DASHBOARDS}/{}", store.dashboard_id);
    group.bench_function("retrieve_10x3", |b| {
        b.to_async(runtime).iter(|| async {
            let request = dashboard_request(Method::GET, &path, None);
            assert_eq!(status_of(&store.service, request).await, StatusCode::OK);
        })
    });
    group.finish();
}

/// GET of a database on redb (a data file in a temporary directory), and what that GET used to
/// pay on top before records carried their secrets sealed: opening every secret of the record
/// (two passwords and a CA certificate). After the run, the sealer's count proves the GETs opened
/// nothing.
fn redb(c: &mut Criterion, runtime: &Runtime) {
    let mut group = c.benchmark_group("redb");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sealer = Sealer::ephemeral().expect("a random key");
    let storage = RedbStorage::open(&dir.path().join("bench.redb"), &sealer).expect("opens");
    let service = service_on(Arc::new(storage), sealer.clone());
    let store = runtime.block_on(seeded_on(service, 200, 0, PANELS, ACTIONS));
    let path = format!("{DATABASES}/{}", store.database_id);
    group.bench_function("retrieve", |b| {
        b.to_async(runtime).iter(|| async {
            let request = database_request(Method::GET, &path, None);
            assert_eq!(status_of(&store.service, request).await, StatusCode::OK);
        })
    });
    assert_eq!(sealer.opened(), 0, "a GET of a database opened a secret");

    let database = runtime
        .block_on(store.service.storage().database(&store.database_id))
        .expect("the store answers")
        .expect("the seeded database");
    let mut sealed: Vec<(SealedSecret, Place)> = database
        .credentials
        .iter()
        .filter_map(|c| {
            let place = Place::password(database.id.as_str(), c.id.as_str());
            c.password.clone().map(|secret| (secret, place))
        })
        .collect();
    for field in TlsField::ALL {
        if let Some(secret) = database.tls.get(field) {
            sealed.push((secret.clone(), Place::tls(database.id.as_str(), field)));
        }
    }
    assert!(!sealed.is_empty(), "the seeded database has secrets");
    group.bench_function("open_secrets_of_one_database", |b| {
        b.iter(|| {
            for (secret, place) in &sealed {
                black_box(sealer.open(secret, place).expect("opens"));
            }
        })
    });
    group.finish();
}

fn main() {
    let started = SystemTime::now();
    // Timers on: a request body is read under a deadline.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut criterion = Criterion::default().configure_from_args();
    baseline(&mut criterion, &runtime);
    databases(&mut criterion, &runtime);
    dashboards(&mut criterion, &runtime);
    redb(&mut criterion, &runtime);
    criterion.final_summary();
    report::print_ratios(&BENCHES, started);
}
