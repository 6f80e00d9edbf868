//! Check-connection through tunnels: a database with a `tunnel_id` is reached through the
//! service's tunnel dialer. The dialer here forwards a local port to the test servers of
//! `.ci/db-servers-up.sh` and to the SQL Server stand-in, whatever host name the record holds;
//! TLS still verifies the record's host name.

mod check_support;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use check_support::*;
use dbconsole_core::check::oracle::OracleChecker;
use dbconsole_core::check::{Adapter, TunnelDialer, TunnelEndpoint, standard_checkers};
use dbconsole_core::{Checkers, ConsoleService, Secret, StaticCredentials};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_tests::{ACCESS_TOKEN, API_KEY, Api};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Forwards the tunnel `tun-1` to `127.0.0.1:<port>` (the port of the record); other tunnels
/// are unknown. Records every forwarding and counts the ones closed.
#[derive(Debug, Default)]
struct LoopbackDialer {
    forwarded: Mutex<Vec<(String, String, u16)>>,
    closed: Arc<AtomicUsize>,
}

/// Stops the forwarding task when the check drops the endpoint.
struct Forwarding {
    task: JoinHandle<()>,
    closed: Arc<AtomicUsize>,
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        self.task.abort();
        self.closed.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl TunnelDialer for LoopbackDialer {
    async fn forward(&self, tunnel_id: &str, host: &str, port: u16) -> io::Result<TunnelEndpoint> {
        if tunnel_id != "tun-1" {
            return Err(io::Error::new(io::ErrorKind::NotFound, "unknown tunnel"));
        }
        self.forwarded
            .lock()
            .unwrap()
            .push((tunnel_id.to_owned(), host.to_owned(), port));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let local = listener.local_addr()?;
        let destination = SocketAddr::from(([127, 0, 0, 1], port));
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(destination).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Ok(TunnelEndpoint::new(
            local,
            Forwarding {
                task,
                closed: Arc::clone(&self.closed),
            },
        ))
    }
}

fn api_with_dialer(dialer: Arc<LoopbackDialer>) -> Api {
    let auth = StaticCredentials::new(
        Some(&Secret::from(API_KEY)),
        Some(&Secret::from(ACCESS_TOKEN)),
    );
    let service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(auth),
        dbconsole_tests::test_sealer(),
    )
    .checkers(standard_checkers())
    .tunnel_dialer(dialer)
    .build();
    Api { service }
}

/// A record whose host is unreachable except through the tunnel.
fn private(adapter: &str, port: u16, db: &str) -> Value {
    let mut body = database(adapter, "db.private.invalid", port, db, "checker", PASSWORD);
    body["tunnel_id"] = json!("tun-1");
    body
}

async fn check_through(body: &Value) -> (String, Arc<LoopbackDialer>) {
    let dialer = Arc::new(LoopbackDialer::default());
    let api = api_with_dialer(Arc::clone(&dialer));
    let id = create(&api, body).await;
    (check(&api, &id, "checker").await, dialer)
}

#[tokio::test]
async fn without_a_dialer_the_answer_names_the_tunnel() {
    let answer = check_body(&private("postgres", 5432, "checkdb")).await;
    assert_eq!(
        answer,
        "tunnel \"tun-1\" is not available: no tunnel dialer is configured"
    );
}

#[tokio::test]
async fn a_tunnel_the_dialer_does_not_know() {
    let mut body = private("postgres", 5432, "checkdb");
    body["tunnel_id"] = json!("tun-9");
    let (answer, _) = check_through(&body).await;
    assert_eq!(
        answer,
        "tunnel \"tun-9\" could not forward to db.private.invalid:5432: unknown tunnel"
    );
}

#[tokio::test]
async fn postgres_through_the_tunnel() {
    require_server("PostgreSQL", 5432).await;
    let (answer, dialer) = check_through(&private("postgres", 5432, "checkdb")).await;
    assert_eq!(answer, "ok");
    assert_eq!(
        *dialer.forwarded.lock().unwrap(),
        [("tun-1".to_owned(), "db.private.invalid".to_owned(), 5432)]
    );
    assert_eq!(dialer.closed.load(Ordering::SeqCst), 1, "forwarding closed");
}

#[tokio::test]
async fn postgres_wrong_password_through_the_tunnel() {
    require_server("PostgreSQL", 5432).await;
    let mut body = private("postgres", 5432, "checkdb");
    body["credentials"][0]["password"] = json!(WRONG_PASSWORD);
    let (answer, _) = check_through(&body).await;
    assert_eq!(
        answer,
        "db error: FATAL: password authentication failed for user \"checker\""
    );
}

/// The record's host is `localhost` (what the certificate names); the TCP connection goes to
/// the tunnel's 127.0.0.1 port, and verification still passes: TLS uses the record's host.
fn verified(adapter: &str, port: u16, db: &str) -> Value {
    let mut body = database(adapter, "localhost", port, db, "checker", PASSWORD);
    body["tunnel_id"] = json!("tun-1");
    body["ssl"] = json!(true);
    body["verify_server_hostname"] = json!(true);
    body["ssl_ca_cert"] = json!(cert_b64("ca-bundle.pem"));
    body
}

#[tokio::test]
async fn postgres_tls_verifies_the_record_host_through_the_tunnel() {
    require_server("PostgreSQL", 5432).await;
    let (answer, dialer) = check_through(&verified("postgres", 5432, "checkdb")).await;
    assert_eq!(answer, "ok");
    assert_eq!(dialer.forwarded.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn mysql_through_the_tunnel() {
    require_server("MariaDB", 3306).await;
    let (answer, dialer) = check_through(&private("mysql", 3306, "checkdb")).await;
    assert_eq!(answer, "ok");
    assert_eq!(dialer.forwarded.lock().unwrap().len(), 1);
    let (answer, _) = check_through(&verified("mysql", 3306, "checkdb")).await;
    assert_eq!(answer, "ok");
}

#[tokio::test]
async fn clickhouse_through_the_tunnel() {
    require_server("ClickHouse (HTTP)", 8123).await;
    require_server("ClickHouse (HTTPS)", 8443).await;
    let (answer, dialer) = check_through(&private("clickhouse", 8123, "default")).await;
    assert_eq!(answer, "ok");
    assert_eq!(dialer.forwarded.lock().unwrap().len(), 1);
    let (answer, _) = check_through(&verified("clickhouse", 8443, "default")).await;
    assert_eq!(answer, "ok");
}

#[tokio::test]
async fn sqlserver_through_the_tunnel() {
    let server = check_support::mock_tds::mock_sql_server().await;
    let (answer, dialer) = check_through(&private("sqlserver", server.port(), "checkdb")).await;
    assert_eq!(answer, "ok");
    assert_eq!(dialer.forwarded.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn oracle_connects_to_the_tunnel() {
    let seen = Arc::new(Mutex::new(String::new()));
    let oracle = {
        let seen = Arc::clone(&seen);
        OracleChecker::with_connect(move |login| {
            *seen.lock().unwrap() = login.connect_descriptor.clone();
            Ok(())
        })
    };
    let dialer = Arc::new(LoopbackDialer::default());
    let auth = StaticCredentials::new(Some(&Secret::from(API_KEY)), None);
    let service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(auth),
        dbconsole_tests::test_sealer(),
    )
    .checkers(Checkers::none().with(Adapter::Oracle, Arc::new(oracle)))
    .tunnel_dialer(Arc::clone(&dialer) as Arc<dyn TunnelDialer>)
    .build();
    let api = Api { service };
    let id = create(&api, &private("oracle", 1521, "FREEPDB1")).await;
    assert_eq!(check(&api, &id, "checker").await, "ok");
    let descriptor = seen.lock().unwrap().clone();
    assert!(descriptor.contains("(HOST=127.0.0.1)"), "{descriptor}");
    assert!(!descriptor.contains("(PORT=1521)"), "{descriptor}");
    assert_eq!(dialer.forwarded.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_silent_database_behind_the_tunnel_times_out() {
    let silent = silent_server().await;
    for adapter in ["postgres", "mysql", "clickhouse", "sqlserver"] {
        let body = with_timeout(private(adapter, silent.port(), "checkdb"), 1);
        let (answer, dialer) = check_through(&body).await;
        assert_timed_out(&answer, 1);
        assert_eq!(dialer.closed.load(Ordering::SeqCst), 1, "{adapter}");
    }
}
