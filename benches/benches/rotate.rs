//! Rotating the seal key of a redb store (`dbconsole_core::storage::rotate`), next to the
//! baseline measured in the same run on the same store: one ordinary update of every database,
//! one after the other. A bench binary (no criterion): each figure is the best of 3 rounds.
//!
//! Run: `cargo bench -p dbconsole-benches --bench rotate` (`DBCONSOLE_BENCH_DATABASES` sets how
//! many databases, default 2,000).

use std::time::{Duration, Instant};

use dbconsole_core::model::{Actor, Database, Origin, Timestamp};
use dbconsole_core::seal::{Sealer, SecretKey};
use dbconsole_core::storage::rotate;
use dbconsole_core::storage::{DatabaseFilter, Edits as _, Page, Storage};
use dbconsole_core::validate::database_from_body;
use dbconsole_storage_redb::RedbStorage;
use serde_json::json;

const ROUNDS: usize = 3;

fn databases() -> usize {
    std::env::var("DBCONSOLE_BENCH_DATABASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000)
}

async fn ids(storage: &RedbStorage) -> Vec<String> {
    let page = Page {
        after: None,
        limit: usize::MAX,
    };
    storage
        .list_databases(page, DatabaseFilter::default())
        .await
        .expect("lists")
        .iter()
        .map(|database| database.id.to_string())
        .collect()
}

/// One update of every database (its name), one after the other: what a rotation that sealed
/// one database at a time would cost.
async fn touch_all(storage: &RedbStorage, origin: &Origin, round: usize) -> Duration {
    let started = Instant::now();
    for id in ids(storage).await {
        storage
            .update_database(
                &id,
                |db: &Database| {
                    let mut next = db.clone();
                    next.name = format!("Touched {round}");
                    Ok(next)
                },
                origin,
            )
            .await
            .expect("updates");
    }
    started.elapsed()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let count = databases();
    let dir = tempfile::tempdir().expect("a directory");
    let sealer = Sealer::ephemeral().expect("a key");
    let storage =
        RedbStorage::open(&dir.path().join("bench.redb"), &sealer).expect("opens a data file");
    let origin = Origin::of(Actor::named("bench"));
    for n in 0..count {
        let body = json!({
            "name": format!("Database {n}"), "adapter": "postgres", "hostname": "h",
            "database": "d", "ssl_ca_cert": "Q0EgY2VydGlmaWNhdGU=",
            "credentials": [{"username": "u", "password": format!("pw-{n}")}],
        });
        let body = body.as_object().expect("an object").clone();
        let database = database_from_body(None, &body.clone().into(), Timestamp::now(), &sealer)
            .expect("valid");
        storage
            .insert_database(database, &origin)
            .await
            .expect("inserts");
    }

    let mut touched = Duration::MAX;
    let mut rotated = Duration::MAX;
    for round in 0..ROUNDS {
        touched = touched.min(touch_all(&storage, &origin, round).await);
        let id = u32::try_from(round + 1).expect("a small id");
        sealer.add_key(id, &SecretKey::generate().expect("a key"));
        let started = Instant::now();
        let rotation = rotate(&storage, &sealer, Some(id), 100, &origin)
            .await
            .expect("rotates");
        rotated = rotated.min(started.elapsed());
        assert_eq!(rotation.resealed, count as u64);
        assert_eq!(rotation.retired, vec![id - 1]);
    }
    println!(
        "rotate {count} databases (redb, durable): {:.2} s, {:.0} databases/s",
        rotated.as_secs_f64(),
        count as f64 / rotated.as_secs_f64()
    );
    println!(
        "baseline, one update of each in turn: {:.2} s; rotation / baseline = {:.2}",
        touched.as_secs_f64(),
        rotated.as_secs_f64() / touched.as_secs_f64()
    );
}
