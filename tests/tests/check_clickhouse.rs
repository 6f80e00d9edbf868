//! Check-connection against a real ClickHouse 18.16 (`.ci/db-servers-up.sh`: HTTP on
//! 127.0.0.1:8123, HTTPS on 8443 with the script's certificates, user `checker`/`checkpw`).
//! The server is old on purpose: the check must work on servers that predate the formats the
//! clickhouse crate asks for by default. The cases every adapter shares run from the table in
//! `check_support/suite.rs`; the ones below them are ClickHouse's own (HTTP and HTTPS are two
//! ports).

mod check_support;

use check_support::suite::{AdapterRow, Expect, Server};
use check_support::*;
use serde_json::json;

const HTTP: u16 = 8123;
const HTTPS: u16 = 8443;

const CLICKHOUSE: AdapterRow = AdapterRow {
    adapter: "clickhouse",
    server: Server::Ci(&[("ClickHouse (HTTP)", HTTP), ("ClickHouse (HTTPS)", HTTPS)]),
    port: HTTP,
    tls_port: HTTPS,
    database: "default",
    username: "checker",
    wrong_password: Expect::StartsWith(
        "bad response: Code: 193, e.displayText() = DB::Exception: Wrong password for user \
         checker",
    ),
    unknown_database: Expect::StartsWith(
        "bad response: Code: 81, e.displayText() = DB::Exception: Database nodb doesn't exist",
    ),
    closed_port: "network error: client error (Connect): tcp connect error: Connection refused \
                  (os error 111)",
    unknown_host: Expect::StartsWith(
        "network error: client error (Connect): dns error: failed to lookup address information: ",
    ),
    tls_error: Some("network error: client error (Connect): "),
    client_cert_refused: None,
};

shared_cases!(CLICKHOUSE;
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
);

#[tokio::test]
async fn plain_http_to_the_https_port_fails() {
    CLICKHOUSE.up().await;
    let answer = check_body(&CLICKHOUSE.body("127.0.0.1", HTTPS)).await;
    assert_eq!(
        answer,
        "network error: client error (SendRequest): connection error: Connection reset by peer \
         (os error 104)"
    );
}

#[tokio::test]
async fn tls_to_the_http_port_fails() {
    CLICKHOUSE.up().await;
    let mut body = CLICKHOUSE.body("127.0.0.1", HTTP);
    body["ssl"] = json!(true);
    assert_eq!(
        check_body(&body).await,
        "network error: client error (Connect): received corrupt message of type \
         InvalidContentType"
    );
}

#[tokio::test]
async fn tls_uses_the_https_default_port() {
    let mut body = CLICKHOUSE
        .tls_body("localhost", Some("ca-bundle.pem"), true)
        .await;
    body.as_object_mut().unwrap().remove("port");
    assert_eq!(check_body(&body).await, "ok");
}
