//! Check-connection against a real ClickHouse 18.16 (`.ci/db-servers-up.sh`: HTTP on
//! 127.0.0.1:8123, HTTPS on 8443 with the script's certificates, user `checker`/`checkpw`).
//! The server is old on purpose: the check must work on servers that predate the formats the
//! clickhouse crate asks for by default.

mod check_support;

use check_support::*;
use serde_json::{Value, json};

const HTTP: u16 = 8123;
const HTTPS: u16 = 8443;

async fn up() {
    require_server("ClickHouse (HTTP)", HTTP).await;
    require_server("ClickHouse (HTTPS)", HTTPS).await;
}

fn ch(host: &str, port: u16, db: &str, user: &str, password: &str) -> Value {
    database("clickhouse", host, port, db, user, password)
}

fn ok_body() -> Value {
    ch("127.0.0.1", HTTP, "default", "checker", PASSWORD)
}

fn tls(host: &str, ca: Option<&str>, verify_host: bool) -> Value {
    let mut body = ch(host, HTTPS, "default", "checker", PASSWORD);
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
    let answer = check_body(&ch("127.0.0.1", HTTP, "default", "checker", WRONG_PASSWORD)).await;
    assert!(
        answer.starts_with("bad response: Code: 193, e.displayText() = DB::Exception: Wrong password for user checker"),
        "{answer}"
    );
    assert_no_secret(&answer);
}

#[tokio::test]
async fn unknown_database() {
    up().await;
    let answer = check_body(&ch("127.0.0.1", HTTP, "nodb", "checker", PASSWORD)).await;
    assert!(
        answer.starts_with(
            "bad response: Code: 81, e.displayText() = DB::Exception: Database nodb doesn't exist"
        ),
        "{answer}"
    );
}

#[tokio::test]
async fn closed_port() {
    let answer = check_body(&ch(
        "127.0.0.1",
        CLOSED_PORT,
        "default",
        "checker",
        PASSWORD,
    ))
    .await;
    assert_eq!(
        answer,
        "network error: client error (Connect): tcp connect error: Connection refused (os error 111)"
    );
}

#[tokio::test]
async fn unknown_host() {
    let answer = check_body(&ch(
        "no-such-host.invalid",
        HTTP,
        "default",
        "checker",
        PASSWORD,
    ))
    .await;
    assert!(
        answer.starts_with(
            "network error: client error (Connect): dns error: failed to lookup address information: "
        ),
        "{answer}"
    );
}

#[tokio::test]
async fn silent_host_times_out_within_the_credential_timeout() {
    let silent = silent_server().await;
    let body = with_timeout(
        ch("127.0.0.1", silent.port(), "default", "checker", PASSWORD),
        1,
    );
    assert_timed_out(&check_body(&body).await, 1);
}

#[tokio::test]
async fn silent_host_with_tls_times_out_too() {
    let silent = silent_server().await;
    let mut body = with_timeout(
        ch("127.0.0.1", silent.port(), "default", "checker", PASSWORD),
        1,
    );
    body["ssl"] = json!(true);
    assert_timed_out(&check_body(&body).await, 1);
}

#[tokio::test]
async fn plain_http_to_the_https_port_fails() {
    up().await;
    let answer = check_body(&ch("127.0.0.1", HTTPS, "default", "checker", PASSWORD)).await;
    assert_eq!(
        answer,
        "network error: client error (SendRequest): connection error: Connection reset by peer \
         (os error 104)"
    );
}

#[tokio::test]
async fn tls_to_the_http_port_fails() {
    up().await;
    let mut body = ok_body();
    body["ssl"] = json!(true);
    assert_eq!(
        check_body(&body).await,
        "network error: client error (Connect): received corrupt message of type \
         InvalidContentType"
    );
}

#[tokio::test]
async fn tls_without_ca_is_encrypted_and_not_verified() {
    up().await;
    assert_eq!(check_body(&tls("127.0.0.1", None, false)).await, "ok");
}

#[tokio::test]
async fn tls_uses_the_https_default_port() {
    up().await;
    let mut body = tls("localhost", Some("ca-bundle.pem"), true);
    body.as_object_mut().unwrap().remove("port");
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn tls_with_ca_bundle_verifies_the_chain_not_the_host_name() {
    up().await;
    assert_eq!(
        check_body(&tls("127.0.0.1", Some("ca-bundle.pem"), false)).await,
        "ok"
    );
}

#[tokio::test]
async fn tls_chain_needs_every_certificate_of_the_bundle() {
    up().await;
    assert_eq!(
        check_body(&tls("127.0.0.1", Some("ca.pem"), false)).await,
        "network error: client error (Connect): invalid peer certificate: UnknownIssuer"
    );
}

#[tokio::test]
async fn tls_with_another_ca_fails() {
    up().await;
    assert_eq!(
        check_body(&tls("127.0.0.1", Some("other-ca.pem"), false)).await,
        "network error: client error (Connect): invalid peer certificate: UnknownIssuer"
    );
}

#[tokio::test]
async fn tls_verified_host_name_matches() {
    up().await;
    assert_eq!(
        check_body(&tls("localhost", Some("ca-bundle.pem"), true)).await,
        "ok"
    );
}

#[tokio::test]
async fn tls_verified_host_name_mismatch() {
    up().await;
    assert_eq!(
        check_body(&tls("127.0.0.1", Some("ca-bundle.pem"), true)).await,
        "network error: client error (Connect): invalid peer certificate: certificate not valid \
         for name \"127.0.0.1\"; certificate is only valid for DnsName(\"localhost\")"
    );
}
