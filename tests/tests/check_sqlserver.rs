//! Check-connection for SQL Server. No SQL Server can be installed from the registries, so the
//! login runs against a small TDS stand-in (`check_support/mock_tds.rs`) that answers as SQL
//! Server does: login success, login failure (18456), unknown database (4060), no encryption
//! offered. Closed port, unknown host and a silent server are real.

mod check_support;

use check_support::mock_tds::{DATABASE, USER, mock_sql_server};
use check_support::*;
use serde_json::{Value, json};

fn ms(host: &str, port: u16, db: &str, user: &str, password: &str) -> Value {
    database("sqlserver", host, port, db, user, password)
}

#[tokio::test]
async fn ok() {
    let server = mock_sql_server().await;
    let body = ms("127.0.0.1", server.port(), DATABASE, USER, PASSWORD);
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn wrong_password() {
    let server = mock_sql_server().await;
    let body = ms("127.0.0.1", server.port(), DATABASE, USER, WRONG_PASSWORD);
    let answer = check_body(&body).await;
    assert_eq!(
        answer,
        "Token error: 'Login failed for user 'checker'.' on server mockmssql executing on line 1 \
         (code: 18456, state: 1, class: 14)"
    );
    assert_no_secret(&answer);
}

#[tokio::test]
async fn unknown_database() {
    let server = mock_sql_server().await;
    let body = ms("127.0.0.1", server.port(), "nodb", USER, PASSWORD);
    assert_eq!(
        check_body(&body).await,
        "Token error: 'Cannot open database \"nodb\" requested by the login. The login failed.' \
         on server mockmssql executing on line 1 (code: 4060, state: 1, class: 11)"
    );
}

#[tokio::test]
async fn ssl_requires_encryption_the_server_refuses() {
    let server = mock_sql_server().await;
    let mut body = ms("127.0.0.1", server.port(), DATABASE, USER, PASSWORD);
    body["ssl"] = json!(true);
    assert_eq!(
        check_body(&body).await,
        "Protocol error: Server does not allow the requested encryption level."
    );
}

#[tokio::test]
async fn closed_port() {
    let body = ms("127.0.0.1", CLOSED_PORT, DATABASE, USER, PASSWORD);
    assert_eq!(
        check_body(&body).await,
        "error connecting to 127.0.0.1:1: Connection refused (os error 111)"
    );
}

#[tokio::test]
async fn unknown_host() {
    let body = ms("no-such-host.invalid", 1433, DATABASE, USER, PASSWORD);
    let answer = check_body(&body).await;
    assert!(
        answer.starts_with(
            "error connecting to no-such-host.invalid:1433: failed to lookup address information: "
        ),
        "{answer}"
    );
}

#[tokio::test]
async fn silent_host_times_out_within_the_credential_timeout() {
    let silent = silent_server().await;
    let body = with_timeout(ms("127.0.0.1", silent.port(), DATABASE, USER, PASSWORD), 1);
    assert_timed_out(&check_body(&body).await, 1);
}

#[tokio::test]
async fn silent_host_with_tls_times_out_too() {
    let silent = silent_server().await;
    let mut body = with_timeout(ms("127.0.0.1", silent.port(), DATABASE, USER, PASSWORD), 1);
    body["ssl"] = json!(true);
    assert_timed_out(&check_body(&body).await, 1);
}
