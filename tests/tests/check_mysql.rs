//! Check-connection against a real MariaDB (`.ci/db-servers-up.sh`: 127.0.0.1:3306, user
//! `checker`/`checkpw`, database `checkdb`, TLS with the script's certificates, `tlsuser` that
//! must use TLS, `certuser` that must present a client certificate). The cases every adapter
//! shares run from the table in `check_support/suite.rs`; the ones below them are MySQL's own.

mod check_support;

use check_support::suite::{AdapterRow, Expect, Server};
use check_support::*;
use dbconsole_core::check::{Adapter, CheckTarget, mysql};
use mysql_async::prelude::Queryable;
use serde_json::json;

const PORT: u16 = 3306;

const MYSQL: AdapterRow = AdapterRow {
    adapter: "mysql",
    server: Server::Ci(&[("MariaDB", PORT)]),
    port: PORT,
    tls_port: PORT,
    database: "checkdb",
    username: "checker",
    wrong_password: Expect::Is(
        "Server error: `ERROR 1045 (28000): Access denied for user 'checker'@'localhost' \
         (using password: YES)'",
    ),
    unknown_database: Expect::Is(
        "Server error: `ERROR 1044 (42000): Access denied for user 'checker'@'localhost' to \
         database 'nodb''",
    ),
    closed_port: "Input/output error: Input/output error: Connection refused (os error 111)",
    unknown_host: Expect::StartsWith(
        "Input/output error: Input/output error: failed to lookup address information: ",
    ),
    tls_error: Some("Input/output error: Input/output error: "),
    client_cert_refused: Some(
        "Server error: `ERROR 1045 (28000): Access denied for user 'certuser'@'localhost' \
         (using password: NO)'",
    ),
};

shared_cases!(MYSQL;
    ok,
    wrong_password,
    unknown_database,
    closed_port,
    unknown_host,
    silent_host_times_out_within_the_credential_timeout,
    silent_host_with_tls_times_out_too,
    tls_without_ca_is_encrypted_and_not_verified,
    tls_with_ca_bundle_verifies_the_chain_not_the_host_name,
    tls_chain_needs_every_certificate_of_the_bundle,
    tls_with_another_ca_fails,
    tls_verified_host_name_matches,
    tls_verified_host_name_mismatch,
    client_certificate_is_presented,
);

#[tokio::test]
async fn talks_tcp_even_on_loopback() {
    MYSQL.up().await;
    // mysql_async's default would log in over TCP, then move to the server's unix socket.
    let target = CheckTarget::new(Adapter::Mysql, "127.0.0.1", PORT, "checkdb", "checker")
        .password(PASSWORD);
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
    MYSQL.up().await;
    let mut plain = MYSQL.body("127.0.0.1", PORT);
    plain["credentials"][0]["username"] = json!("tlsuser");
    let answer = check_body(&plain).await;
    assert_eq!(
        answer,
        "Server error: `ERROR 1045 (28000): Access denied for user 'tlsuser'@'localhost' \
         (using password: YES)'"
    );
    let mut tls = plain;
    tls["ssl"] = json!(true);
    assert_eq!(check_body(&tls).await, "ok");
}

#[tokio::test]
async fn connection_parameters_are_not_sent() {
    MYSQL.up().await;
    // A parameter the server would reject if it were sent.
    let mut body = MYSQL.body("127.0.0.1", PORT);
    body["connection_parameters"] = json!([{"name": "sql_mode", "value": "no such mode"}]);
    assert_eq!(check_body(&body).await, "ok");
}
