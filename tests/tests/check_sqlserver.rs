//! Check-connection for SQL Server. No SQL Server can be installed from the registries, so the
//! login runs against a small TDS stand-in (`check_support/mock_tds.rs`) that answers as SQL
//! Server does: login success, login failure (18456), unknown database (4060), no encryption
//! offered. Closed port, unknown host and a silent server are real. The cases every adapter
//! shares run from the table in `check_support/suite.rs` (the TLS ones aside: the stand-in
//! offers no encryption).

mod check_support;

use check_support::mock_tds::{DATABASE, USER};
use check_support::suite::{AdapterRow, Expect, Server};
use check_support::*;
use serde_json::json;

const SQLSERVER: AdapterRow = AdapterRow {
    adapter: "sqlserver",
    server: Server::MockTds,
    port: 1433,
    tls_port: 1433,
    database: DATABASE,
    username: USER,
    wrong_password: Expect::Is(
        "Token error: 'Login failed for user 'checker'.' on server mockmssql executing on line 1 \
         (code: 18456, state: 1, class: 14)",
    ),
    unknown_database: Expect::Is(
        "Token error: 'Cannot open database \"nodb\" requested by the login. The login failed.' \
         on server mockmssql executing on line 1 (code: 4060, state: 1, class: 11)",
    ),
    closed_port: "error connecting to 127.0.0.1:1: Connection refused (os error 111)",
    unknown_host: Expect::StartsWith(
        "error connecting to no-such-host.invalid:1433: failed to lookup address information: ",
    ),
    tls_error: None,
    client_cert_refused: None,
};

shared_cases!(SQLSERVER;
    ok,
    wrong_password,
    unknown_database,
    closed_port,
    unknown_host,
    silent_host_times_out_within_the_credential_timeout,
    silent_host_with_tls_times_out_too,
);

#[tokio::test]
async fn ssl_requires_encryption_the_server_refuses() {
    let port = SQLSERVER.up().await;
    let mut body = SQLSERVER.body("127.0.0.1", port);
    body["ssl"] = json!(true);
    assert_eq!(
        check_body(&body).await,
        "Protocol error: Server does not allow the requested encryption level."
    );
}
