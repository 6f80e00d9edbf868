//! The real binary on redb, for its operator:
//!
//! - when its disk fills up, writes are refused with a clear 503 and change nothing, reads go
//!   on, `/readyz` says not ready, and once space is freed writes work again without a restart,
//!   with nothing acknowledged lost. The test mounts a small tmpfs of its own, so it must run as
//!   root (CI does). Elsewhere:
//!   `sudo -E env "PATH=$PATH" cargo test -p dbconsole-server --test data_operations`;
//! - `dbconsole backup` while the server takes writes, then `dbconsole restore` into an empty
//!   data directory: every write acknowledged before the backup began is there.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dbconsole_tests::eventually;
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use serde_json::{Value, json};
use support::process::{HANG_GUARD, Server};
use support::request;

const KEY: &str = "storage-faults-api-key";
const DATABASES: &str = "/api/v1/console/databases";

/// A tmpfs of `size` mounted on a directory of its own, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Self {
        assert!(
            nix::unistd::Uid::effective().is_root(),
            "this test mounts a small tmpfs to fill, so it must run as root (CI does); run it \
             with `sudo -E env \"PATH=$PATH\" cargo test -p dbconsole-server --test data_operations`"
        );
        let dir = tempfile::tempdir().unwrap();
        mount(
            Some("tmpfs"),
            dir.path(),
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(format!("size={size},mode=0700").as_str()),
        )
        .expect("mount a tmpfs");
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn filler(&self) -> PathBuf {
        self.path().join("filler")
    }

    /// Writes a file until the disk has no byte left.
    fn fill(&self) {
        let mut file = fs::File::create(self.filler()).unwrap();
        let chunk = vec![0xa5u8; 4096];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) if error.raw_os_error() == Some(nix::libc::ENOSPC) => break,
                Err(error) => panic!("filling the disk: {error}"),
            }
        }
        // The last partial page, byte by byte.
        while let Ok(1) = file.write(&[0]) {}
    }

    fn free(&self) {
        fs::remove_file(self.filler()).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        if let Err(error) = umount2(self.dir.path(), MntFlags::MNT_DETACH) {
            eprintln!("unmounting {}: {error}", self.dir.path().display());
        }
    }
}

async fn start(data_dir: &Path) -> Server {
    let data_dir = data_dir.to_str().unwrap();
    Server::start_with(
        &[("DBCONSOLE_STORAGE", "redb"), ("DBCONSOLE_API_KEY", KEY)],
        &["serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir],
    )
    .await
}

/// A database of a few kilobytes (five credentials with long passwords), so that the disk
/// fills after a bounded number of them.
fn database(name: &str) -> String {
    let credentials: Vec<Value> = (0..5)
        .map(|i| json!({"username": format!("user{i}"), "password": "p".repeat(1000)}))
        .collect();
    json!({
        "name": name,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": credentials,
    })
    .to_string()
}

async fn call(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> support::Response {
    request(addr, method, path, &[("x-api-key", KEY)], body).await
}

/// Every item of a listing (databases, the audit trail), page by page.
async fn list_all(addr: SocketAddr, path: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let url = match &after {
            Some(after) => format!("{path}?limit=100&after={after}"),
            None => format!("{path}?limit=100"),
        };
        let page = call(addr, "GET", &url, None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.json();
        items.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return items,
        }
    }
}

/// The names of every stored database, from the listing.
async fn stored_names(addr: SocketAddr) -> BTreeSet<String> {
    list_all(addr, DATABASES)
        .await
        .iter()
        .map(|database| database["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn readyz(addr: SocketAddr) -> u16 {
    request(addr, "GET", "/readyz", &[], None).await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_keeps_reads_and_recovers_without_a_restart() {
    let disk = SmallDisk::mount("8m");
    let data_dir = disk.path().join("data");
    let server = start(&data_dir).await;
    let addr = server.addr;

    let mut acknowledged = BTreeSet::new();
    let mut first = None;
    for i in 0..20 {
        let name = format!("before-{i}");
        let created = call(addr, "POST", DATABASES, Some(&database(&name))).await;
        assert_eq!(created.status, 200, "{}", created.body);
        first.get_or_insert_with(|| created.json()["id"].as_str().unwrap().to_owned());
        acknowledged.insert(name);
    }
    let first = first.unwrap();
    assert_eq!(readyz(addr).await, 200);

    disk.fill();
    // Pages redb had already allocated may take a few more writes; then the disk refuses.
    let mut refused = None;
    for i in 0..5_000 {
        let name = format!("while-full-{i}");
        let created = call(addr, "POST", DATABASES, Some(&database(&name))).await;
        match created.status {
            200 => {
                acknowledged.insert(name);
            }
            503 => {
                refused = Some(created);
                break;
            }
            other => panic!("a create on a full disk answered {other}: {}", created.body),
        }
    }
    let refused = refused.expect("the disk never filled");
    let full = json!({"errors": {
        "detail": "the storage is full: nothing was saved; try again once space has been freed"
    }});
    assert_eq!(refused.json(), full);
    assert_eq!(
        refused.header("content-type"),
        Some("application/json"),
        "{refused:?}"
    );

    // Still full: an update is refused too, and changes nothing.
    let before = call(addr, "GET", &format!("{DATABASES}/{first}"), None).await;
    assert_eq!(before.status, 200, "{}", before.body);
    let renamed = call(
        addr,
        "PATCH",
        &format!("{DATABASES}/{first}"),
        Some(&json!({"name": "renamed"}).to_string()),
    )
    .await;
    assert_eq!(renamed.status, 503, "{}", renamed.body);
    assert_eq!(renamed.json(), full);

    // Reads go on, and show exactly the acknowledged writes.
    let after = call(addr, "GET", &format!("{DATABASES}/{first}"), None).await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(
        after.json(),
        before.json(),
        "a refused update changed nothing"
    );
    assert_eq!(stored_names(addr).await, acknowledged);
    assert_eq!(readyz(addr).await, 503, "not ready while writes fail");

    disk.free();
    // The readiness probe finds the disk writable again, without a restart.
    assert_eq!(readyz(addr).await, 200, "ready once space is freed");
    let created = call(addr, "POST", DATABASES, Some(&database("after-free"))).await;
    assert_eq!(created.status, 200, "{}", created.body);
    acknowledged.insert("after-free".to_owned());
    let renamed = call(
        addr,
        "PATCH",
        &format!("{DATABASES}/{first}"),
        Some(&json!({"name": "before-0", "hostname": "db2.internal"}).to_string()),
    )
    .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(stored_names(addr).await, acknowledged);

    // And all of it is on the disk: a restart finds every acknowledged write.
    let (status, _, stderr) = server.stop().await;
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        stderr.contains("storage full"),
        "the refusals are logged:\n{stderr}"
    );
    let server = start(&data_dir).await;
    assert_eq!(stored_names(server.addr).await, acknowledged);
    let moved = call(server.addr, "GET", &format!("{DATABASES}/{first}"), None).await;
    assert_eq!(moved.json()["hostname"], "db2.internal");
    let (status, _, stderr) = server.stop().await;
    assert!(status.success(), "{status:?}\n{stderr}");
}

/// A small database whose one password is `password`.
fn small_database(name: &str, password: &str) -> String {
    json!({
        "name": name,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "reader", "password": password}],
    })
    .to_string()
}

/// `dbconsole <args>` to its end: its exit status, standard output and standard error.
async fn run(env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let output = support::dbconsole(env, args).output().await.unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// What the writers of the load sent and what was acknowledged, in order.
#[derive(Default)]
struct Load {
    sent: Mutex<BTreeSet<String>>,
    acknowledged: Mutex<Vec<String>>,
}

fn password_of(name: &str) -> String {
    format!("Bk-{name}-pw-9Qz")
}

/// Creates databases one after the other until `stop`, recording each name before it is sent
/// and again once answered 200.
async fn write_until(addr: SocketAddr, writer: usize, load: Arc<Load>, stop: Arc<AtomicBool>) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("w{writer}-{n}");
        n += 1;
        load.sent.lock().unwrap().insert(name.clone());
        let body = small_database(&name, &password_of(&name));
        let created = call(addr, "POST", DATABASES, Some(&body)).await;
        assert_eq!(created.status, 200, "{}", created.body);
        load.acknowledged.lock().unwrap().push(name);
    }
}

fn acknowledged_count(load: &Load) -> usize {
    load.acknowledged.lock().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_write_load_restores_every_write_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let backup = dir.path().join("backups").join("dbconsole.backup");
    fs::create_dir_all(backup.parent().unwrap()).unwrap();
    let server = start(&data_dir).await;

    let load = Arc::new(Load::default());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|writer| {
            tokio::spawn(write_until(
                server.addr,
                writer,
                Arc::clone(&load),
                Arc::clone(&stop),
            ))
        })
        .collect();
    eventually(HANG_GUARD, "60 writes acknowledged", || async {
        (acknowledged_count(&load) >= 60).then_some(())
    })
    .await;

    // Everything acknowledged up to here must be in the backup.
    let before: BTreeSet<String> = load.acknowledged.lock().unwrap().iter().cloned().collect();
    let data_flag = data_dir.to_str().unwrap();
    let (ok, stdout, stderr) = run(
        &[],
        &[
            "backup",
            "--to",
            backup.to_str().unwrap(),
            "--data-dir",
            data_flag,
        ],
    )
    .await;
    assert!(ok, "backup failed:\n{stdout}\n{stderr}");
    assert!(stdout.starts_with("backed up "), "{stdout}");
    // The server took writes while the backup ran, and goes on.
    let at_backup_end = acknowledged_count(&load);
    eventually(
        HANG_GUARD,
        "20 more writes acknowledged after the backup",
        || async { (acknowledged_count(&load) >= at_backup_end + 20).then_some(()) },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    // A second backup to the same file is refused; the first stays as it was.
    let first = fs::read(&backup).unwrap();
    let (ok, _, stderr) = run(
        &[],
        &[
            "backup",
            "--to",
            backup.to_str().unwrap(),
            "--data-dir",
            data_flag,
        ],
    )
    .await;
    assert!(!ok && stderr.contains("already exists"), "{stderr}");
    assert_eq!(fs::read(&backup).unwrap(), first);
    let (status, _, server_log) = server.stop().await;
    assert!(status.success(), "{status:?}\n{server_log}");
    assert!(
        server_log.contains("backed_up"),
        "the server took the backup through its admin socket:\n{server_log}"
    );

    // Secrets stay sealed in the backup.
    let sent = load.sent.lock().unwrap().clone();
    for name in &sent {
        let password = password_of(name);
        assert!(
            !first
                .windows(password.len())
                .any(|window| window == password.as_bytes()),
            "the backup holds a password in clear"
        );
    }

    // Restore into an empty data directory: without the key it is refused, with it it works.
    let restored_dir = dir.path().join("restored");
    let restored_flag = restored_dir.to_str().unwrap();
    let backup_flag = backup.to_str().unwrap();
    let (ok, _, stderr) = run(
        &[],
        &[
            "restore",
            "--from",
            backup_flag,
            "--data-dir",
            restored_flag,
        ],
    )
    .await;
    assert!(!ok && stderr.contains("DBCONSOLE_SECRET_KEY"), "{stderr}");
    assert!(!restored_dir.join("dbconsole.redb").exists());
    let key = fs::read_to_string(data_dir.join("secret.key")).unwrap();
    let key_env = [("DBCONSOLE_SECRET_KEY", key.trim())];
    let (ok, stdout, stderr) = run(
        &key_env,
        &[
            "restore",
            "--from",
            backup_flag,
            "--data-dir",
            restored_flag,
        ],
    )
    .await;
    assert!(ok, "restore failed:\n{stdout}\n{stderr}");
    assert!(stdout.starts_with("restored "), "{stdout}");
    // Once restored, the directory has data: a second restore is refused.
    let (ok, _, stderr) = run(
        &key_env,
        &[
            "restore",
            "--from",
            backup_flag,
            "--data-dir",
            restored_flag,
        ],
    )
    .await;
    assert!(!ok && stderr.contains("exists"), "{stderr}");

    let server = Server::start_with(
        &[
            ("DBCONSOLE_STORAGE", "redb"),
            ("DBCONSOLE_API_KEY", KEY),
            ("DBCONSOLE_SECRET_KEY", key.trim()),
        ],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            restored_flag,
        ],
    )
    .await;
    let restored = stored_names(server.addr).await;
    let missing: Vec<_> = before.difference(&restored).collect();
    assert!(
        missing.is_empty(),
        "acknowledged before the backup began, missing from it: {missing:?}"
    );
    let unknown: Vec<_> = restored.difference(&sent).collect();
    assert!(unknown.is_empty(), "never sent, yet restored: {unknown:?}");
    // The snapshot holds each change with its audit event: exactly one create event per
    // restored database, and none for a database it does not hold.
    let ids: BTreeSet<String> = list_all(server.addr, DATABASES)
        .await
        .iter()
        .map(|database| database["id"].as_str().unwrap().to_owned())
        .collect();
    let created: BTreeSet<String> = list_all(server.addr, "/api/v1/console/audit")
        .await
        .iter()
        .filter(|event| event["action"] == "database.create")
        .map(|event| event["resource"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(created, ids, "restored databases and their create events");
    assert!(
        restored.len() < sent.len(),
        "writes after the backup are not in it ({} of {})",
        restored.len(),
        sent.len()
    );
    let (status, _, stderr) = server.stop().await;
    assert!(status.success(), "{status:?}\n{stderr}");
}
