//! Rotating the seal key end to end on the real binary (docs/operations.md, "Rotating the secret key"),
//! while clients keep writing databases with passwords:
//!
//! - on redb, `dbconsole keys rotate-seal` goes through the server's admin socket; the server is
//!   killed (SIGKILL) in the middle of the rotation, restarted, and the rotation run again
//!   finishes it;
//! - on PostgreSQL, two nodes serve while the command, run from a third process, is killed
//!   midway and run again.
//!
//! Then every secret opens under the new key alone, the old key is retired (from the store and
//! from the key file), no password is anywhere in the data, and a node without the new key
//! refuses to start, naming it.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dbconsole_core::Storage;
use dbconsole_core::model::Database;
use dbconsole_core::seal::{Keyring, Place, Sealer, SecretKey, sealed_keys};
use dbconsole_core::storage::Page;
use dbconsole_storage_postgres::testing::{fresh_schema, test_url};
use dbconsole_storage_postgres::{PostgresOptions, PostgresStorage};
use dbconsole_storage_redb::RedbStorage;
use dbconsole_tests::eventually;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinSet;

use support::process::Server;
use support::{dbconsole, request};

/// Only keeps a broken binary from hanging the test run; no test measures time.
const HANG_GUARD: Duration = Duration::from_secs(120);

const DATABASES: &str = "/api/v1/console/databases";
const API_KEY: &str = "rotation-test-api-key";
const DATA_FILE: &str = "dbconsole.redb";
const KEY_FILE: &str = "secret.key";

/// Databases stored before the rotation: enough that a pass of one database per page takes
/// many durable writes, so the rotation is still under way when it is cut off.
const STORED: usize = 1_500;

/// The password of the `n`th database a test writes: a marker no sealed byte string contains.
fn password(n: usize) -> String {
    format!("PLAINTEXT-rotation-{n:06}")
}

fn body(n: usize) -> Value {
    json!({
        "name": format!("Rotated {n}"),
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "reader", "password": password(n)}],
    })
}

/// One request with the API key: status and JSON body (null when not JSON, or no answer).
async fn call(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string);
    let headers = [("x-api-key", API_KEY)];
    let response = request(addr, method, path, &headers, body.as_deref()).await;
    let json = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response.status, json)
}

/// The password each stored database was last answered 200 for, by id.
type Written = Arc<Mutex<BTreeMap<String, String>>>;

/// Creates databases `range` through `addr`, 8 at a time, recording each in `written`.
async fn create(addr: SocketAddr, range: std::ops::Range<usize>, written: &Written) {
    let mut tasks = JoinSet::new();
    for n in range {
        if tasks.len() >= 8 {
            tasks.join_next().await.unwrap().unwrap();
        }
        let written = Arc::clone(written);
        tasks.spawn(async move {
            let (status, created) = call(addr, "POST", DATABASES, Some(&body(n))).await;
            assert_eq!(status, 200, "{created}");
            let id = created["id"].as_str().unwrap().to_owned();
            written.lock().unwrap().insert(id, password(n));
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

/// Clients writing until `stop`: each creates databases with new passwords and renames stored
/// ones (a write that carries their sealed passwords as they are). A write that got no answer
/// (the server was killed) is not counted; every answer must be 200. Answers how many were.
fn load(
    addrs: Vec<SocketAddr>,
    written: Written,
    first: usize,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut tasks = JoinSet::new();
        for client in 0..4 {
            let addr = addrs[client % addrs.len()];
            let written = Arc::clone(&written);
            let stop = stop.clone();
            tasks.spawn(async move {
                let mut answered = 0;
                let mut n = first + client * 1_000_000;
                while !*stop.borrow() {
                    n += 1;
                    let created =
                        tokio::spawn(
                            async move { call(addr, "POST", DATABASES, Some(&body(n))).await },
                        )
                        .await;
                    let Ok((status, created)) = created else {
                        continue; // no answer: the server went away
                    };
                    assert_eq!(status, 200, "a create during the rotation: {created}");
                    let id = created["id"].as_str().unwrap().to_owned();
                    written.lock().unwrap().insert(id.clone(), password(n));
                    let path = format!("{DATABASES}/{id}");
                    let rename = json!({"name": format!("Renamed {n}")});
                    let renamed =
                        tokio::spawn(
                            async move { call(addr, "PATCH", &path, Some(&rename)).await },
                        )
                        .await;
                    if let Ok((status, renamed)) = renamed {
                        assert_eq!(status, 200, "a rename during the rotation: {renamed}");
                    }
                    answered += 2;
                }
                answered
            });
        }
        let mut answered = 0;
        while let Some(done) = tasks.join_next().await {
            answered += done.unwrap();
        }
        answered
    })
}

/// `dbconsole keys ARGS…` with `env`, to the end: (success, stdout, stderr).
async fn keys(env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["keys"];
    all.extend_from_slice(args);
    let output = tokio::time::timeout(HANG_GUARD, dbconsole(env, &all).output())
        .await
        .expect("`dbconsole keys` did not finish within the hang guard")
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Starts `dbconsole keys rotate-seal` one database per page, waits until `seal-status` says a
/// rotation is under way, then kills `victim` (the command itself when `None`) with SIGKILL.
async fn start_rotation_and_kill(env: &[(&str, &str)], args: &[&str], victim: Option<u32>) {
    let mut all = vec!["keys"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["rotate-seal", "--batch", "1"]);
    let mut rotation = dbconsole(env, &all).spawn().unwrap();
    let mut status_args = args.to_vec();
    status_args.push("seal-status");
    eventually(HANG_GUARD, "a rotation under way", || {
        // Whether it had ended, looked at before its status: one that had, and is not under
        // way, never will be.
        let ended = rotation.try_wait().unwrap().is_some();
        let status_args = &status_args;
        async move {
            let (ok, out, err) = keys(env, status_args).await;
            assert!(ok, "seal-status failed: {out}{err}");
            if out.contains("rotation is under way") {
                return Some(());
            }
            assert!(
                !ended,
                "the rotation ended before it was seen under way: store more databases"
            );
            None
        }
    })
    .await;
    let pid = victim.unwrap_or_else(|| rotation.id().unwrap());
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    let _ = tokio::time::timeout(HANG_GUARD, rotation.wait()).await;
}

/// Every stored database: sealed under `key` alone, its password the one last written.
async fn assert_all_sealed_under(
    storage: &dyn Storage,
    sealer: &Sealer,
    key: u32,
    written: &Written,
) {
    let page = Page {
        after: None,
        limit: usize::MAX,
    };
    let databases: Vec<Database> = storage
        .list_databases(page, Default::default())
        .await
        .unwrap();
    let written = written.lock().unwrap().clone();
    assert!(databases.len() >= STORED, "{} databases", databases.len());
    for database in &databases {
        assert!(
            sealed_keys(database).all(|id| id == key),
            "{} has a secret sealed under another key than {key}",
            database.id
        );
        let credential = &database.credentials[0];
        let place = Place::password(database.id.as_str(), credential.id.as_str());
        let opened = sealer
            .open(credential.password.as_ref().unwrap(), &place)
            .unwrap_or_else(|error| panic!("{}: {error}", database.id));
        // A create in flight when the server was killed may be stored without an answer: its
        // name says which password it was sent with.
        let expected = written
            .get(database.id.as_str())
            .cloned()
            .or_else(|| {
                let n = database.name.strip_prefix("Rotated ")?.parse().ok()?;
                Some(password(n))
            })
            .unwrap_or_else(|| panic!("{} ({}) was never sent", database.id, database.name));
        assert_eq!(opened.expose_str(), Some(expected.as_str()));
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// No file under `dir` holds a password: every one written starts with the same marker.
fn assert_no_plaintext_under(dir: &Path) {
    let mut files: Vec<PathBuf> = vec![dir.to_owned()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue; // the admin socket
        };
        assert!(
            !contains(&bytes, b"PLAINTEXT-rotation-"),
            "{} holds a password in clear",
            path.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redb_rotation_under_load_survives_a_kill_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap().to_owned();
    let env = [
        ("DBCONSOLE_STORAGE", "redb"),
        ("DBCONSOLE_DATA_DIR", data_dir.as_str()),
        ("DBCONSOLE_API_KEY", API_KEY),
        ("DBCONSOLE_ACCESS_TOKEN", "rotation-test-token"),
    ];
    let written: Written = Arc::default();
    let server = Server::start(&env).await;
    create(server.addr, 0..STORED, &written).await;

    // Under load, the rotation starts and the server is killed in the middle of it.
    let (stop, stopped) = watch::channel(false);
    let writers = load(vec![server.addr], Arc::clone(&written), STORED, stopped);
    let pid = server.child.id().unwrap();
    start_rotation_and_kill(&env, &[], Some(pid)).await;
    stop.send(true).unwrap();
    assert!(writers.await.unwrap() > 0, "no write was answered");
    drop(server);

    // The key file holds both keys; the store says a rotation is under way.
    let keyring = Keyring::load(&dir.path().join(KEY_FILE)).unwrap();
    assert_eq!(keyring.ids().collect::<Vec<_>>(), vec![0, 1]);
    let server = Server::start(&env).await;
    let (ok, out, err) = keys(&env, &["seal-status"]).await;
    assert!(
        ok && out.contains("current seal key: 1") && out.contains("under way"),
        "{out}{err}"
    );

    // Run again, under load, it finishes.
    let (stop, stopped) = watch::channel(false);
    let writers = load(
        vec![server.addr],
        Arc::clone(&written),
        10 * STORED,
        stopped,
    );
    let (ok, out, err) = keys(&env, &["rotate-seal", "--batch", "50"]).await;
    stop.send(true).unwrap();
    assert!(writers.await.unwrap() > 0, "no write was answered");
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("finished making seal key 1 current") && out.contains("retired 0"),
        "{out}"
    );
    let (_, _, log) = server.stop().await;
    assert!(!log.contains("PLAINTEXT"), "a password reached the log");

    // Key 0 is gone from the key file; the data opens with key 1 alone.
    let keyring = Keyring::load(&dir.path().join(KEY_FILE)).unwrap();
    assert_eq!(keyring.ids().collect::<Vec<_>>(), vec![1]);
    let sealer = Sealer::with_keyring(&keyring);
    let store = RedbStorage::open(&dir.path().join(DATA_FILE), &sealer).unwrap();
    let stored = store.seal_keys().await.unwrap();
    assert_eq!((stored.current, stored.keys.len()), (1, 1));
    assert_all_sealed_under(&store, &sealer, 1, &written).await;
    drop(store);
    assert_no_plaintext_under(dir.path());
}

/// The environment of a node (or a command) on `schema` with seal keys `keys`.
fn postgres_env<'a>(schema: &'a str, url: &'a str, keys: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("DBCONSOLE_STORAGE", "postgres"),
        ("DBCONSOLE_DATABASE_URL", url),
        ("DBCONSOLE_DATABASE_SCHEMA", schema),
        ("DBCONSOLE_SECRET_KEY", keys),
        ("DBCONSOLE_API_KEY", API_KEY),
        ("DBCONSOLE_ACCESS_TOKEN", "rotation-test-token"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_rotation_on_two_nodes_under_load_survives_a_kill_and_finishes() {
    let schema = fresh_schema();
    let url = test_url();
    let old = SecretKey::generate().unwrap();
    let new = SecretKey::generate().unwrap();
    let only_old = format!("0:{}", old.to_base64().as_str());
    let both = format!("{only_old} 1:{}", new.to_base64().as_str());
    let only_new = format!("1:{}", new.to_base64().as_str());
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir];

    // A node with the old key alone stores databases.
    let written: Written = Arc::default();
    let first = Server::start_with(&postgres_env(&schema, &url, &only_old), &args).await;
    create(first.addr, 0..STORED, &written).await;
    first.stop().await;

    // The new key is added on every node, which restart; then the rotation, under load through
    // both nodes, is cut off by killing the command.
    let env = postgres_env(&schema, &url, &both);
    let a = Server::start_with(&env, &args).await;
    let b = Server::start_with(&env, &args).await;
    let (stop, stopped) = watch::channel(false);
    let writers = load(vec![a.addr, b.addr], Arc::clone(&written), STORED, stopped);
    start_rotation_and_kill(&env, &[], None).await;
    let (ok, out, err) = keys(&env, &["seal-status"]).await;
    assert!(
        ok && out.contains("current seal key: 1") && out.contains("under way"),
        "{out}{err}"
    );
    let (ok, out, err) = keys(&env, &["rotate-seal", "--batch", "50"]).await;
    stop.send(true).unwrap();
    assert!(writers.await.unwrap() > 0, "no write was answered");
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("retired 0") && out.contains("DBCONSOLE_SECRET_KEY"),
        "{out}"
    );
    for node in [a, b] {
        let (_, _, log) = node.stop().await;
        assert!(!log.contains("PLAINTEXT"), "a password reached the log");
        // Each node met the new key through the store's refusal, and went on under it.
        assert!(
            log.contains("the store seals under another key now; adopted it"),
            "a node never adopted the new key:\n{log}"
        );
    }

    // The store opens with the new key alone; every secret is under it and opens.
    let sealer = Sealer::with_keyring(&Keyring::from_text(&only_new).unwrap());
    let mut options = PostgresOptions::new(url.clone());
    options.schema = schema.clone();
    let store = PostgresStorage::connect(options, &sealer).await.unwrap();
    let stored = store.seal_keys().await.unwrap();
    assert_eq!((stored.current, stored.keys.len()), (1, 1));
    assert_all_sealed_under(&store, &sealer, 1, &written).await;

    // No password in any table.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    for table in ["databases", "audit_events", "idempotency_answers", "meta"] {
        let rows = client
            .query(&format!("SELECT t::text FROM {schema}.{table} t"), &[])
            .await
            .unwrap();
        for row in rows {
            let text: String = row.get(0);
            assert!(
                !text.contains("PLAINTEXT"),
                "{table} holds a password in clear"
            );
        }
    }

    // A node with the old key alone refuses to start, naming the key it lacks.
    let mut refused = dbconsole(&postgres_env(&schema, &url, &only_old), &args)
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&std::mem::take(&mut refused.stderr)).into_owned();
    assert!(stderr.contains("seal key 1"), "{stderr}");
}
