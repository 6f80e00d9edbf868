//! Shared helpers of the check-connection tests (`check_*.rs`): the service with the standard
//! checkers, database records, the servers started by `.ci/db-servers-up.sh` and the
//! certificates it makes, and stand-in servers (silent, closed). The cases every adapter shares
//! are one table, in `suite.rs`.
#![allow(dead_code)] // each test file uses a part

pub(crate) mod mock_tds;
pub(crate) mod suite;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use dbconsole_core::check::standard_checkers;
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_tests::{Api, DATABASES};
use http::Method;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// How to bring up what these tests need.
pub(crate) const START_SERVERS: &str =
    "start the test database servers with `sudo bash .ci/db-servers-up.sh`";

/// The password of the `checker` account on every test server.
pub(crate) const PASSWORD: &str = "checkpw";

/// A wrong password that would be easy to spot if it leaked into an answer.
pub(crate) const WRONG_PASSWORD: &str = "Wr0ng-Pa55word-7731";

/// A port nothing listens on.
pub(crate) const CLOSED_PORT: u16 = 1;

/// The service over a fresh in-memory store, with every checker.
pub(crate) fn api() -> Api {
    Api::with_checkers(Arc::new(MemoryStorage::new()), standard_checkers())
}

/// Creates a database from `body` and returns its id.
pub(crate) async fn create(api: &Api, body: &Value) -> String {
    let created = api.create_database(body).await;
    created["id"].as_str().expect("id").to_owned()
}

/// Runs check-connection for `username`; the answer must be 200 plain text. Returns the body.
pub(crate) async fn check(api: &Api, id: &str, username: &str) -> String {
    let response = api
        .db(
            Method::GET,
            &format!("{DATABASES}/{id}/check-connection/{username}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    response.text()
}

/// Creates the database and checks its first credential in one go.
pub(crate) async fn check_body(body: &Value) -> String {
    let api = api();
    let id = create(&api, body).await;
    let username = body["credentials"][0]["username"]
        .as_str()
        .expect("username")
        .to_owned();
    check(&api, &id, &username).await
}

/// A create-database body for one credential.
pub(crate) fn database(
    adapter: &str,
    host: &str,
    port: u16,
    database: &str,
    username: &str,
    password: &str,
) -> Value {
    json!({
        "name": format!("{adapter} test"),
        "adapter": adapter,
        "hostname": host,
        "port": port,
        "database": database,
        "credentials": [{"username": username, "password": password}],
    })
}

/// Sets the first credential's timeout (whole seconds).
pub(crate) fn with_timeout(mut body: Value, seconds: u32) -> Value {
    body["credentials"][0]["timeout"] = json!(seconds);
    body
}

/// Fails the test, saying how to start the servers, when nothing answers on `127.0.0.1:port`.
pub(crate) async fn require_server(what: &str, port: u16) {
    if let Err(error) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
        panic!("{what} is not running on 127.0.0.1:{port} ({error}): {START_SERVERS}");
    }
}

/// The directory of the certificates that `.ci/db-servers-up.sh` makes.
pub(crate) fn certs_dir() -> PathBuf {
    std::env::var_os("DBCONSOLE_CI_CERTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/dbconsole-ci-certs"))
}

/// One certificate file of that directory, as the base64 of its PEM text (how the API takes it).
pub(crate) fn cert_b64(name: &str) -> String {
    let path = certs_dir().join(name);
    let pem = std::fs::read(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}; {START_SERVERS}", path.display()));
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// A server that accepts TCP connections and never answers; its address. The connections stay
/// open until the test ends.
pub(crate) async fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    addr
}

/// Asserts that `answer` is the service's timeout message for `seconds`.
#[track_caller]
pub(crate) fn assert_timed_out(answer: &str, seconds: u32) {
    assert_eq!(answer, format!("connection timed out after {seconds} s"));
}

/// Asserts that the answer does not hold the (wrong) password.
#[track_caller]
pub(crate) fn assert_no_secret(answer: &str) {
    assert!(!answer.contains(WRONG_PASSWORD), "secret leaked: {answer}");
    assert!(!answer.contains(PASSWORD), "secret leaked: {answer}");
}
