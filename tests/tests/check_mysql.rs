//! Check-connection against a real MariaDB (`.ci/db-servers-up.sh`: 127.0.0.1:3306, user
//! `checker`/`checkpw`, database `checkdb`, TLS with the script's certificates, `tlsuser` that
//! must use TLS, `certuser` that must present a client certificate).

mod check_support;

use std::time::Duration;

use check_support::*;
use dbconsole_core::Secret;
use dbconsole_core::check::{Adapter, CheckTarget, mysql};
use mysql_async::prelude::Queryable;
use serde_json::{Value, json};

const PORT: u16 = 3306;

async fn up() {
    require_server("MariaDB", PORT).await;
}

fn my(host: &str, port: u16, db: &str, user: &str, password: &str) -> Value {
    database("mysql", host, port, db, user, password)
}

fn ok_body() -> Value {
    my("127.0.0.1", PORT, "checkdb", "checker", PASSWORD)
}

fn tls(mut body: Value, ca: Option<&str>, verify_host: bool) -> Value {
    body["ssl"] = json!(true);
    if let Some(ca) = ca {
        body["ssl_ca_cert"] = json!(cert_b64(ca));
    }
    body["verify_server_hostname"] = json!(verify_host);
    body
}

#[tokio::test]
async fn ok() {
    up().await;
    assert_eq!(check_body(&ok_body()).await, "ok");
}

#[tokio::test]
async fn wrong_password() {
    up().await;
    let answer = check_body(&my("127.0.0.1", PORT, "checkdb", "checker", WRONG_PASSWORD)).await;
    assert_eq!(
        answer,
        "Server error: `ERROR 1045 (28000): Access denied for user 'checker'@'localhost' \
         (using password: YES)'"
    );
    assert_no_secret(&answer);
}

#[tokio::test]
async fn unknown_database() {
    up().await;
    let answer = check_body(&my("127.0.0.1", PORT, "nodb", "checker", PASSWORD)).await;
    assert_eq!(
        answer,
        "Server error: `ERROR 1044 (42000): Access denied for user 'checker'@'localhost' to \
         database 'nodb''"
    );
}

#[tokio::test]
async fn closed_port() {
    let answer = check_body(&my(
        "127.0.0.1",
        CLOSED_PORT,
        "checkdb",
        "checker",
        PASSWORD,
    ))
    .await;
    assert_eq!(
        answer,
        "Input/output error: Input/output error: Connection refused (os error 111)"
    );
}

#[tokio::test]
async fn unknown_host() {
    let answer = check_body(&my(
        "no-such-host.invalid",
        PORT,
        "checkdb",
        "checker",
        PASSWORD,
    ))
    .await;
    assert!(
        answer.starts_with(
            "Input/output error: Input/output error: failed to lookup address information: "
        ),
        "{answer}"
    );
}

#[tokio::test]
async fn silent_host_times_out_within_the_credential_timeout() {
    let silent = silent_server().await;
    let body = with_timeout(
        my("127.0.0.1", silent.port(), "checkdb", "checker", PASSWORD),
        1,
    );
    assert_timed_out(&check_body(&body).await, 1);
}

#[tokio::test]
async fn talks_tcp_even_on_loopback() {
    up().await;
    // mysql_async's default would log in over TCP, then move to the server's unix socket.
    let target = CheckTarget {
        adapter: Adapter::Mysql,
        host: "127.0.0.1".to_owned(),
        port: PORT,
        database: "checkdb".to_owned(),
        username: "checker".to_owned(),
        password: Some(Secret::from(PASSWORD)),
        ssl: false,
        verify_server_hostname: false,
        ca_cert: None,
        client_cert: None,
        client_key: None,
        connection_parameters: Vec::new(),
        tunnel_id: None,
        connect_via: None,
        timeout: Duration::from_secs(10),
    };
    let mut conn = mysql::connect(&target).await.expect("connect");
    let host: Option<String> = conn
        .query_first("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        .await
        .expect("query");
    let _ = conn.disconnect().await;
    // A TCP client's host carries its port ("localhost:41234"); a unix socket client's does not.
    let host = host.expect("own process");
    assert!(host.starts_with("localhost:"), "{host}");
}

#[tokio::test]
async fn tls_user_is_refused_plain_and_accepted_over_tls() {
    up().await;
    let plain = my("127.0.0.1", PORT, "checkdb", "tlsuser", PASSWORD);
    let answer = check_body(&plain).await;
    assert_eq!(
        answer,
        "Server error: `ERROR 1045 (28000): Access denied for user 'tlsuser'@'localhost' \
         (using password: YES)'"
    );
    assert_eq!(check_body(&tls(plain, None, false)).await, "ok");
}

#[tokio::test]
async fn tls_without_ca_is_encrypted_and_not_verified() {
    up().await;
    assert_eq!(check_body(&tls(ok_body(), None, false)).await, "ok");
}

#[tokio::test]
async fn tls_with_ca_bundle_verifies_the_chain_not_the_host_name() {
    up().await;
    assert_eq!(
        check_body(&tls(ok_body(), Some("ca-bundle.pem"), false)).await,
        "ok"
    );
}

#[tokio::test]
async fn tls_chain_needs_every_certificate_of_the_bundle() {
    up().await;
    assert_eq!(
        check_body(&tls(ok_body(), Some("ca.pem"), false)).await,
        "Input/output error: Input/output error: invalid peer certificate: UnknownIssuer"
    );
}

#[tokio::test]
async fn tls_with_another_ca_fails() {
    up().await;
    assert_eq!(
        check_body(&tls(ok_body(), Some("other-ca.pem"), false)).await,
        "Input/output error: Input/output error: invalid peer certificate: UnknownIssuer"
    );
}

#[tokio::test]
async fn tls_verified_host_name_matches() {
    up().await;
    let body = my("localhost", PORT, "checkdb", "checker", PASSWORD);
    assert_eq!(
        check_body(&tls(body, Some("ca-bundle.pem"), true)).await,
        "ok"
    );
}

#[tokio::test]
async fn tls_verified_host_name_mismatch() {
    up().await;
    assert_eq!(
        check_body(&tls(ok_body(), Some("ca-bundle.pem"), true)).await,
        "Input/output error: Input/output error: invalid peer certificate: certificate not \
         valid for name \"127.0.0.1\"; certificate is only valid for DnsName(\"localhost\")"
    );
}

#[tokio::test]
async fn client_certificate_is_presented() {
    up().await;
    let mut body = tls(
        my("localhost", PORT, "checkdb", "certuser", ""),
        Some("ca-bundle.pem"),
        true,
    );
    body["credentials"][0]
        .as_object_mut()
        .unwrap()
        .remove("password");
    assert_eq!(
        check_body(&body).await,
        "Server error: `ERROR 1045 (28000): Access denied for user 'certuser'@'localhost' \
         (using password: NO)'"
    );
    body["ssl_cert"] = json!(cert_b64("client.pem"));
    body["ssl_key"] = json!(cert_b64("client.key"));
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn connection_parameters_are_not_sent() {
    up().await;
    // A parameter the server would reject if it were sent.
    let mut body = ok_body();
    body["connection_parameters"] = json!([{"name": "sql_mode", "value": "no such mode"}]);
    assert_eq!(check_body(&body).await, "ok");
}
