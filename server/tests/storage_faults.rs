//! The real binary on redb when its disk fills up: writes are refused with a clear 503 and
//! change nothing, reads go on, `/readyz` says not ready, and once space is freed writes work
//! again without a restart, with nothing acknowledged lost.
//!
//! The test mounts a small tmpfs of its own, so it must run as root (CI does). Elsewhere:
//! `sudo -E env "PATH=$PATH" cargo test -p dbconsole-server --test storage_faults`.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use serde_json::{Value, json};
use support::process::Server;
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
             with `sudo -E env \"PATH=$PATH\" cargo test -p dbconsole-server --test storage_faults`"
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

/// The names of every stored database, from the listing.
async fn stored_names(addr: SocketAddr) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(after) => format!("{DATABASES}?limit=100&after={after}"),
            None => format!("{DATABASES}?limit=100"),
        };
        let page = call(addr, "GET", &path, None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.json();
        for database in page["data"].as_array().unwrap() {
            names.insert(database["name"].as_str().unwrap().to_owned());
        }
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return names,
        }
    }
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
