//! Check-connection against a real PostgreSQL (`.ci/db-servers-up.sh`: 127.0.0.1:5432, role
//! `checker`/`checkpw`, database `checkdb`, TLS with the script's certificates, role `certuser`
//! that logs in with a client certificate only). The cases every adapter shares run from the
//! table in `check_support/suite.rs`; the ones below them are PostgreSQL's own.

mod check_support;

use check_support::suite::{AdapterRow, Expect, Server};
use check_support::*;
use dbconsole_core::check::{Adapter, CheckTarget, ConnectionChecker, postgres};
use dbconsole_core::model::ConnectionParameter;
use serde_json::json;

const PORT: u16 = 5432;

const POSTGRES: AdapterRow = AdapterRow {
    adapter: "postgres",
    server: Server::Ci(&[("PostgreSQL", PORT)]),
    port: PORT,
    tls_port: PORT,
    database: "checkdb",
    username: "checker",
    wrong_password: Expect::Is(
        "db error: FATAL: password authentication failed for user \"checker\"",
    ),
    unknown_database: Expect::Is("db error: FATAL: database \"nodb\" does not exist"),
    closed_port: "error connecting to server: Connection refused (os error 111)",
    unknown_host: Expect::StartsWith(
        "error connecting to server: failed to lookup address information: ",
    ),
    tls_error: Some("error performing TLS handshake: "),
    client_cert_refused: Some("db error: FATAL: connection requires a valid client certificate"),
};

shared_cases!(POSTGRES;
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

async fn up() {
    POSTGRES.up().await;
}

fn ok_body() -> serde_json::Value {
    POSTGRES.body("127.0.0.1", PORT)
}

/// A check target for calling the checker (or `postgres::connect`) directly.
fn target() -> CheckTarget {
    CheckTarget::new(Adapter::Postgres, "127.0.0.1", PORT, "checkdb", "checker").password(PASSWORD)
}

async fn session_uses_tls(target: &CheckTarget) -> bool {
    let client = postgres::connect(target).await.expect("connect");
    let row = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .expect("query");
    row.get(0)
}

#[tokio::test]
async fn plain_when_ssl_is_off_and_encrypted_when_on() {
    up().await;
    assert!(!session_uses_tls(&target()).await);
    assert!(session_uses_tls(&target().ssl(true)).await);
}

#[tokio::test]
async fn an_unusable_ca_certificate_is_named() {
    use base64::Engine as _;
    let mut body = ok_body();
    body["ssl"] = json!(true);
    body["ssl_ca_cert"] = json!(
        base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n")
    );
    assert_eq!(
        check_body(&body).await,
        "the CA certificate (ssl_ca_cert) is not valid PEM: base64 decode error: \
         InvalidCharacter(33)"
    );
}

#[tokio::test]
async fn a_client_certificate_without_its_key_is_named() {
    let mut body = ok_body();
    body["ssl"] = json!(true);
    body["ssl_cert"] = json!(cert_b64("client.pem"));
    assert_eq!(
        check_body(&body).await,
        "a client certificate (ssl_cert) is stored without its key (ssl_key)"
    );
}

fn parameter(name: &str, value: &str) -> ConnectionParameter {
    ConnectionParameter {
        name: name.to_owned(),
        value: value.to_owned(),
    }
}

#[tokio::test]
async fn connection_parameters_reach_the_session() {
    up().await;
    let target = target().connection_parameters(vec![
        parameter("application_name", "dbconsole check"),
        parameter("search_path", r"public, x\y"),
        parameter("dbconsole.probe", "a = b"),
        parameter("statement_timeout", "1234"),
    ]);
    let client = postgres::connect(&target).await.expect("connect");
    let row = client
        .query_one(
            "SELECT current_setting('application_name'), current_setting('search_path'), \
             current_setting('dbconsole.probe'), current_setting('statement_timeout')",
            &[],
        )
        .await
        .expect("query");
    let values: Vec<String> = (0..4).map(|i| row.get(i)).collect();
    assert_eq!(
        values,
        ["dbconsole check", r"public, x\y", "a = b", "1234ms"]
    );
    // And the checker itself sends them: a value the server rejects fails the check.
    let target = target.connection_parameters(vec![parameter("statement_timeout", "soon")]);
    let error = postgres::PostgresChecker::new()
        .check(&target)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        "db error: FATAL: invalid value for parameter \"statement_timeout\": \"soon\""
    );
}

#[tokio::test]
async fn connection_parameters_through_the_api() {
    up().await;
    let mut body = ok_body();
    body["connection_parameters"] = json!([
        {"name": "application_name", "value": "from the api"},
        {"name": "work_mem", "value": "not a size"},
    ]);
    assert_eq!(
        check_body(&body).await,
        "db error: FATAL: invalid value for parameter \"work_mem\": \"not a size\""
    );
    body["connection_parameters"] = json!([{"name": "work_mem", "value": "8MB"}]);
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn credential_host_name_overrides_the_database_one() {
    up().await;
    let mut body = POSTGRES.body(suite::UNKNOWN_HOST, PORT);
    body["credentials"][0]["hostname"] = json!("127.0.0.1");
    assert_eq!(check_body(&body).await, "ok");
}
