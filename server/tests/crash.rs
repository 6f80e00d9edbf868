//! Crash safety of the real `dbconsole` binary on its default storage (redb).
//!
//! Each round starts the binary on the same data directory, lets several clients send
//! concurrent creates and updates of databases and dashboards, kills the process with SIGKILL
//! at a random moment, restarts it and checks that:
//!
//! - every write that was answered 200 is present, complete and readable (a later write to the
//!   same record that was in flight at the kill may have landed too, never an earlier one);
//! - no partial record exists: every stored record is one that some request wrote whole (all
//!   fields of one write agree with each other), and every record reads back (secrets decrypt).
//!
//! A second test kills the server under clients that send every create with an
//! `Idempotency-Key` and send it again after each kill: each key ends as exactly one database.
//!
//! CI runs [`survives_sigkill_at_random_moments`] (20 kills). For deeper runs:
//! `DBCONSOLE_CRASH_KILLS=200 cargo test -p dbconsole-server --test crash -- --ignored`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rand::Rng;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_dbconsole");
const KEY: &str = "crash-test-api-key";
const TOKEN: &str = "crash-test-access-token";
const CLIENTS: usize = 4;

/// A server process on a data directory.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    async fn start(data_dir: &Path) -> Server {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env_remove("DBCONSOLE_STORAGE")
            .env_remove("DBCONSOLE_SECRET_KEY")
            .env("DBCONSOLE_API_KEY", KEY)
            .env("DBCONSOLE_ACCESS_TOKEN", TOKEN)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the dbconsole binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.expect("stdout readable") {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    return addr.parse().expect("a socket address");
                }
            }
            panic!("the server exited before listening (see its stderr above)");
        })
        .await
        .expect("the server listens within 60 s");
        Server { child, addr }
    }

    async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL sent");
        self.child
            .wait()
            .await
            .expect("the killed server is reaped");
    }
}

/// One keep-alive HTTP/1 connection.
struct Client {
    sender: http1::SendRequest<Full<Bytes>>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Option<Client> {
        let stream = TcpStream::connect(addr).await.ok()?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.ok()?;
        tokio::spawn(connection);
        Some(Client { sender })
    }

    /// `None` when the connection broke (the server was killed).
    async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Option<(StatusCode, Value)> {
        self.send_keyed(method, path, None, body).await
    }

    /// [`Client::send`] with an `Idempotency-Key`.
    async fn send_keyed(
        &mut self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Option<(StatusCode, Value)> {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request = if path.starts_with("/v1/dashboards") {
            request.header("authorization", format!("Bearer {TOKEN}"))
        } else {
            request.header("x-api-key", KEY)
        };
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let body = Full::new(body.map(|b| Bytes::from(b.to_string())).unwrap_or_default());
        self.sender.ready().await.ok()?;
        let response = self
            .sender
            .send_request(request.body(body).ok()?)
            .await
            .ok()?;
        let status = response.status();
        let bytes = response.into_body().collect().await.ok()?.to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Some((status, json))
    }
}

/// What the clients know about one record: the highest write sequence answered 200, and the
/// highest one sent (answered or not).
#[derive(Clone, Copy, Debug, Default)]
struct Writes {
    acked: Option<u64>,
    sent: u64,
}

#[derive(Clone, Default)]
struct Ledger {
    databases: HashMap<String, Writes>,
    dashboards: HashMap<String, Writes>,
}

fn database_body(client: usize, seq: u64, credential_id: Option<&str>) -> Value {
    let mut first = json!({"username": "owner", "password": format!("pw-{client}-{seq}-secret")});
    if let Some(id) = credential_id {
        first["id"] = json!(id);
    }
    json!({
        "name": format!("c{client}-s{seq}"),
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "port": 1000 + seq % 60_000,
        "group": format!("g{seq}"),
        "ssl_ca_cert": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=",
        "connection_parameters": [{"name": "application_name", "value": format!("s{seq}")}],
        "credentials": [first, {"username": format!("extra{seq}"), "password": "x"}]
    })
}

fn dashboard_body(client: usize, seq: u64) -> Value {
    json!({
        "name": format!("c{client}-s{seq}"),
        "restricted_access": seq.is_multiple_of(2),
        "panels": [{
            "title": format!("t{seq}"),
            "details": {"__type__": "query", "query": format!("select {seq}"), "credential_id": "crd_x"},
            "actions": [{"label": format!("l{seq}"), "workflow_id": "wf", "input_mappings": [
                {"workflow_input_key": "k", "column": format!("col{seq}")}
            ]}]
        }]
    })
}

/// The write sequence a stored database was written by, after checking that all its fields
/// come from that one write.
fn database_seq(db: &Value) -> u64 {
    let name = db["name"].as_str().expect("name");
    let seq: u64 = name
        .rsplit_once("-s")
        .expect("name carries the seq")
        .1
        .parse()
        .expect("seq");
    assert_eq!(
        db["port"],
        json!(1000 + seq % 60_000),
        "partial record: {db}"
    );
    assert_eq!(
        db["group"],
        json!(format!("g{seq}")),
        "partial record: {db}"
    );
    assert_eq!(
        db["connection_parameters"][0]["value"],
        json!(format!("s{seq}")),
        "partial record: {db}"
    );
    let credentials = db["credentials"].as_array().expect("credentials");
    assert_eq!(credentials.len(), 2, "partial record: {db}");
    assert_eq!(credentials[0]["username"], "owner", "partial record: {db}");
    assert_eq!(
        credentials[1]["username"],
        json!(format!("extra{seq}")),
        "partial record: {db}"
    );
    seq
}

fn dashboard_seq(dashboard: &Value) -> u64 {
    let name = dashboard["name"].as_str().expect("name");
    let seq: u64 = name
        .rsplit_once("-s")
        .expect("name carries the seq")
        .1
        .parse()
        .expect("seq");
    let panel = &dashboard["panels"][0];
    assert_eq!(
        dashboard["restricted_access"],
        json!(seq.is_multiple_of(2)),
        "partial record: {dashboard}"
    );
    assert_eq!(
        panel["title"],
        json!(format!("t{seq}")),
        "partial record: {dashboard}"
    );
    assert_eq!(
        panel["details"]["query"],
        json!(format!("select {seq}")),
        "partial record: {dashboard}"
    );
    assert_eq!(
        panel["actions"][0]["input_mappings"][0]["column"],
        json!(format!("col{seq}")),
        "partial record: {dashboard}"
    );
    seq
}

/// One client's writes until the server goes away: creates, then updates of its own records
/// (one client per record, so a record's writes are ordered).
async fn client_loop(addr: SocketAddr, client: usize, ledger: Arc<Mutex<Ledger>>, mut seq: u64) {
    let Some(mut http) = Client::connect(addr).await else {
        return;
    };
    let mut own_databases: Vec<(String, String)> = Vec::new();
    let mut own_dashboards: Vec<String> = Vec::new();
    loop {
        seq += 1;
        let choice = rand::rng().random_range(0..10);
        let outcome = if choice < 2 || own_databases.is_empty() {
            let body = database_body(client, seq, None);
            http.send(Method::POST, "/api/v1/console/databases", Some(&body))
                .await
                .map(|(status, db)| {
                    assert_eq!(status, StatusCode::OK, "{db}");
                    let id = db["id"].as_str().expect("id").to_owned();
                    let credential = db["credentials"][0]["id"]
                        .as_str()
                        .expect("credential id")
                        .to_owned();
                    ledger.lock().unwrap().databases.insert(
                        id.clone(),
                        Writes {
                            acked: Some(seq),
                            sent: seq,
                        },
                    );
                    own_databases.push((id, credential));
                })
        } else if choice < 3 || own_dashboards.is_empty() {
            let body = dashboard_body(client, seq);
            http.send(Method::POST, "/v1/dashboards", Some(&body))
                .await
                .map(|(status, d)| {
                    assert_eq!(status, StatusCode::OK, "{d}");
                    let id = d["id"].as_str().expect("id").to_owned();
                    ledger.lock().unwrap().dashboards.insert(
                        id.clone(),
                        Writes {
                            acked: Some(seq),
                            sent: seq,
                        },
                    );
                    own_dashboards.push(id);
                })
        } else if choice < 8 {
            let (id, credential) =
                own_databases[rand::rng().random_range(0..own_databases.len())].clone();
            ledger
                .lock()
                .unwrap()
                .databases
                .get_mut(&id)
                .expect("known")
                .sent = seq;
            let body = database_body(client, seq, Some(&credential));
            let path = format!("/api/v1/console/databases/{id}");
            http.send(Method::PATCH, &path, Some(&body))
                .await
                .map(|(status, db)| {
                    assert_eq!(status, StatusCode::OK, "{db}");
                    assert_eq!(db["credentials"][0]["id"], json!(credential));
                    ledger
                        .lock()
                        .unwrap()
                        .databases
                        .get_mut(&id)
                        .expect("known")
                        .acked = Some(seq);
                })
        } else {
            let id = own_dashboards[rand::rng().random_range(0..own_dashboards.len())].clone();
            ledger
                .lock()
                .unwrap()
                .dashboards
                .get_mut(&id)
                .expect("known")
                .sent = seq;
            let body = dashboard_body(client, seq);
            http.send(Method::PUT, &format!("/v1/dashboards/{id}"), Some(&body))
                .await
                .map(|(status, d)| {
                    assert_eq!(status, StatusCode::OK, "{d}");
                    ledger
                        .lock()
                        .unwrap()
                        .dashboards
                        .get_mut(&id)
                        .expect("known")
                        .acked = Some(seq);
                })
        };
        if outcome.is_none() {
            return;
        }
    }
}

/// Every record listed, page by page.
async fn list_all(http: &mut Client, path: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut after = String::new();
    loop {
        let url = format!("{path}?limit=500&after={after}");
        let (status, page) = http
            .send(Method::GET, &url, None)
            .await
            .expect("server answers");
        assert_eq!(status, StatusCode::OK, "{page}");
        all.extend(page["data"].as_array().expect("data").iter().cloned());
        match page["next"].as_str() {
            Some(next) => after = next.to_owned(),
            None => return all,
        }
    }
}

async fn verify(addr: SocketAddr, ledger: &Ledger) -> (usize, usize) {
    let mut http = Client::connect(addr)
        .await
        .expect("restarted server accepts");
    let databases = list_all(&mut http, "/api/v1/console/databases").await;
    let dashboards = list_all(&mut http, "/v1/dashboards").await;
    let stored_databases: HashMap<&str, u64> = databases
        .iter()
        .map(|db| (db["id"].as_str().expect("id"), database_seq(db)))
        .collect();
    let stored_dashboards: HashMap<&str, u64> = dashboards
        .iter()
        .map(|d| (d["id"].as_str().expect("id"), dashboard_seq(d)))
        .collect();
    for (kind, known, stored) in [
        ("database", &ledger.databases, &stored_databases),
        ("dashboard", &ledger.dashboards, &stored_dashboards),
    ] {
        for (id, writes) in known {
            let Some(acked) = writes.acked else { continue };
            let seq = *stored
                .get(id.as_str())
                .unwrap_or_else(|| panic!("{kind} {id} was answered 200 and is gone"));
            assert!(
                (acked..=writes.sent).contains(&seq),
                "{kind} {id}: stored write {seq}, but write {acked} was answered 200 (last sent {})",
                writes.sent
            );
        }
    }
    // The audit trail went with the changes: every stored record has its create event, and
    // every create event names a stored record (this test deletes nothing), so no crash left a
    // change without its event or an event without its change.
    let events = list_all(&mut http, "/api/v1/console/audit").await;
    for (kind, stored) in [
        ("database", &stored_databases),
        ("dashboard", &stored_dashboards),
    ] {
        let created: std::collections::BTreeSet<&str> = events
            .iter()
            .filter(|event| event["action"] == format!("{kind}.create"))
            .map(|event| event["resource"]["id"].as_str().expect("resource id"))
            .collect();
        let stored: std::collections::BTreeSet<&str> = stored.keys().copied().collect();
        assert_eq!(created, stored, "{kind}s and their create events");
    }
    // Every record also reads back one by one (secrets decrypt).
    for db in &databases {
        let path = format!(
            "/api/v1/console/databases/{}",
            db["id"].as_str().expect("id")
        );
        let (status, fetched) = http.send(Method::GET, &path, None).await.expect("answers");
        assert_eq!(status, StatusCode::OK, "{fetched}");
        assert_eq!(&fetched, db);
    }
    (databases.len(), dashboards.len())
}

/// Kills `server` with SIGKILL at a random moment within `max_ms` while `clients` work, then
/// waits for the clients (a client's panic fails the test).
async fn kill_at_random(server: Server, clients: Vec<tokio::task::JoinHandle<()>>, max_ms: u64) {
    let delay = rand::rng().random_range(20..max_ms);
    tokio::time::sleep(Duration::from_millis(delay)).await;
    server.kill().await;
    for client in clients {
        client
            .await
            .expect("a client task panicked: see the assertion above");
    }
}

async fn run_rounds(kills: usize) {
    let data = tempfile::tempdir().expect("temp dir");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut seq_base = 0;
    for round in 0..kills {
        let server = Server::start(data.path()).await;
        if round > 0 {
            let known = ledger.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let (dbs, dashes) = verify(server.addr, &known).await;
            eprintln!("round {round}: {dbs} databases, {dashes} dashboards verified after SIGKILL");
        }
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let ledger = Arc::clone(&ledger);
                tokio::spawn(client_loop(server.addr, client, ledger, seq_base))
            })
            .collect();
        kill_at_random(server, clients, 400).await;
        seq_base += 1_000_000;
    }
    let server = Server::start(data.path()).await;
    let known = ledger.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let (dbs, dashes) = verify(server.addr, &known).await;
    eprintln!("after {kills} kills: {dbs} databases, {dashes} dashboards, all complete");
    assert!(
        dbs > 0,
        "the workload wrote nothing: the test exercised no crash"
    );
    server.kill().await;
}

/// The create of the keyed clients: a minimal database named `name` (its key too).
fn keyed_body(name: &str) -> Value {
    json!({
        "name": name, "adapter": "postgres", "hostname": "db.internal",
        "database": "orders", "credentials": [{"username": "reader", "password": "pw"}],
    })
}

/// The creates of one client with `Idempotency-Key`s across kills: each key is sent, and sent
/// again (the same request) after every broken connection or restart, until it is answered
/// 200. `next` is the first key not yet answered.
async fn keyed_client(addr: SocketAddr, client: usize, next: Arc<Mutex<u64>>) {
    let Some(mut http) = Client::connect(addr).await else {
        return;
    };
    while send_next_key(&mut http, client, &next).await.is_some() {}
}

/// Sends the create of `client`'s next key once: on 200 (checked) the key after it is next;
/// any other answer fails the test; `None` when the connection broke.
async fn send_next_key(http: &mut Client, client: usize, next: &Mutex<u64>) -> Option<()> {
    let n = *next.lock().unwrap_or_else(|p| p.into_inner());
    let name = format!("idem-{client}-{n}");
    let (status, answer) = http
        .send_keyed(
            Method::POST,
            "/api/v1/console/databases",
            Some(&name),
            Some(&keyed_body(&name)),
        )
        .await?;
    assert_eq!(status, StatusCode::OK, "{name}: {answer}");
    assert_eq!(answer["name"], name.as_str(), "{answer}");
    *next.lock().unwrap_or_else(|p| p.into_inner()) = n + 1;
    Some(())
}

/// SIGKILL, where no server can say whether a write in flight was made: clients that send
/// every create with an `Idempotency-Key` and send it again after each kill end with exactly
/// one database per key (docs/api.md, "Retrying a write safely").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_with_idempotency_keys_make_one_record_per_key_across_sigkills() {
    let data = tempfile::tempdir().expect("temp dir");
    let next: Vec<Arc<Mutex<u64>>> = (0..CLIENTS).map(|_| Arc::new(Mutex::new(0))).collect();
    for _ in 0..10 {
        let server = Server::start(data.path()).await;
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                tokio::spawn(keyed_client(server.addr, client, Arc::clone(&next[client])))
            })
            .collect();
        kill_at_random(server, clients, 300).await;
    }
    // The last key of each client was in flight at the last kill: send it once more.
    let server = Server::start(data.path()).await;
    let mut http = Client::connect(server.addr).await.expect("connects");
    for (client, next) in next.iter().enumerate() {
        send_next_key(&mut http, client, next)
            .await
            .expect("answered");
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for database in list_all(&mut http, "/api/v1/console/databases").await {
        *counts
            .entry(database["name"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    let mut keys = 0;
    for (client, next) in next.iter().enumerate() {
        for n in 0..*next.lock().unwrap() {
            let name = format!("idem-{client}-{n}");
            assert_eq!(
                counts.get(&name),
                Some(&1),
                "{name} must be stored exactly once"
            );
            keys += 1;
        }
    }
    assert_eq!(counts.len(), keys, "a record no key asked for: {counts:?}");
    eprintln!("{keys} keys across 10 kills: one database each");
    server.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_sigkill_at_random_moments() {
    run_rounds(20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "deep run: DBCONSOLE_CRASH_KILLS=200 cargo test -p dbconsole-server --test crash -- --ignored"]
async fn survives_many_sigkills() {
    let kills = std::env::var("DBCONSOLE_CRASH_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    run_rounds(kills).await;
}
