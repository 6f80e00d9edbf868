//! Check-connection against a real PostgreSQL (`.ci/db-servers-up.sh`: 127.0.0.1:5432, role
//! `checker`/`checkpw`, database `checkdb`, TLS with the script's certificates, role `certuser`
//! that logs in with a client certificate only).

mod check_support;

use std::time::{Duration, Instant};

use check_support::*;
use dbconsole_core::Secret;
use dbconsole_core::check::{Adapter, CheckTarget, ConnectionChecker, postgres};
use dbconsole_core::model::ConnectionParameter;
use serde_json::json;

const PORT: u16 = 5432;

async fn up() {
    require_server("PostgreSQL", PORT).await;
}

fn pg(host: &str, port: u16, db: &str, user: &str, password: &str) -> serde_json::Value {
    database("postgres", host, port, db, user, password)
}

fn ok_body() -> serde_json::Value {
    pg("127.0.0.1", PORT, "checkdb", "checker", PASSWORD)
}

/// A check target for calling the checker (or `postgres::connect`) directly.
fn target() -> CheckTarget {
    CheckTarget {
        adapter: Adapter::Postgres,
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
    }
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
async fn ok() {
    up().await;
    assert_eq!(check_body(&ok_body()).await, "ok");
}

#[tokio::test]
async fn wrong_password() {
    up().await;
    let answer = check_body(&pg("127.0.0.1", PORT, "checkdb", "checker", WRONG_PASSWORD)).await;
    assert_eq!(
        answer,
        "db error: FATAL: password authentication failed for user \"checker\""
    );
    assert_no_secret(&answer);
}

#[tokio::test]
async fn unknown_database() {
    up().await;
    let answer = check_body(&pg("127.0.0.1", PORT, "nodb", "checker", PASSWORD)).await;
    assert_eq!(answer, "db error: FATAL: database \"nodb\" does not exist");
}

#[tokio::test]
async fn closed_port() {
    let answer = check_body(&pg(
        "127.0.0.1",
        CLOSED_PORT,
        "checkdb",
        "checker",
        PASSWORD,
    ))
    .await;
    assert_eq!(
        answer,
        "error connecting to server: Connection refused (os error 111)"
    );
}

#[tokio::test]
async fn unknown_host() {
    let answer = check_body(&pg(
        "no-such-host.invalid",
        PORT,
        "checkdb",
        "checker",
        PASSWORD,
    ))
    .await;
    assert!(
        answer.starts_with("error connecting to server: failed to lookup address information: "),
        "{answer}"
    );
}

#[tokio::test]
async fn silent_host_times_out_within_the_credential_timeout() {
    let silent = silent_server().await;
    let body = with_timeout(
        pg("127.0.0.1", silent.port(), "checkdb", "checker", PASSWORD),
        1,
    );
    assert_timed_out(&check_body(&body).await, 1);
}

#[tokio::test]
async fn silent_host_with_tls_times_out_too() {
    let silent = silent_server().await;
    let mut body = with_timeout(
        pg("127.0.0.1", silent.port(), "checkdb", "checker", PASSWORD),
        1,
    );
    body["ssl"] = json!(true);
    assert_timed_out(&check_body(&body).await, 1);
}

#[tokio::test]
async fn plain_when_ssl_is_off_and_encrypted_when_on() {
    up().await;
    assert!(!session_uses_tls(&target()).await);
    let mut tls = target();
    tls.ssl = true;
    assert!(session_uses_tls(&tls).await);
}

#[tokio::test]
async fn tls_without_ca_is_encrypted_and_not_verified() {
    up().await;
    let mut body = ok_body();
    body["ssl"] = json!(true);
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn tls_with_ca_bundle_verifies_the_chain_not_the_host_name() {
    up().await;
    // The certificate names `localhost` only; 127.0.0.1 is fine without verify_server_hostname.
    let mut body = ok_body();
    body["ssl"] = json!(true);
    body["ssl_ca_cert"] = json!(cert_b64("ca-bundle.pem"));
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn tls_chain_needs_every_certificate_of_the_bundle() {
    up().await;
    // The server sends its leaf only; the root alone cannot reach it without the intermediate.
    let mut body = ok_body();
    body["ssl"] = json!(true);
    body["ssl_ca_cert"] = json!(cert_b64("ca.pem"));
    assert_eq!(
        check_body(&body).await,
        "error performing TLS handshake: invalid peer certificate: UnknownIssuer"
    );
}

#[tokio::test]
async fn tls_with_another_ca_fails() {
    up().await;
    let mut body = ok_body();
    body["ssl"] = json!(true);
    body["ssl_ca_cert"] = json!(cert_b64("other-ca.pem"));
    assert_eq!(
        check_body(&body).await,
        "error performing TLS handshake: invalid peer certificate: UnknownIssuer"
    );
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

#[tokio::test]
async fn tls_verified_host_name_matches() {
    up().await;
    let mut body = pg("localhost", PORT, "checkdb", "checker", PASSWORD);
    body["ssl"] = json!(true);
    body["verify_server_hostname"] = json!(true);
    body["ssl_ca_cert"] = json!(cert_b64("ca-bundle.pem"));
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn tls_verified_host_name_mismatch() {
    up().await;
    let mut body = ok_body();
    body["ssl"] = json!(true);
    body["verify_server_hostname"] = json!(true);
    body["ssl_ca_cert"] = json!(cert_b64("ca-bundle.pem"));
    assert_eq!(
        check_body(&body).await,
        "error performing TLS handshake: invalid peer certificate: certificate not valid for \
         name \"127.0.0.1\"; certificate is only valid for DnsName(\"localhost\")"
    );
}

#[tokio::test]
async fn client_certificate_is_presented() {
    up().await;
    let mut body = pg("localhost", PORT, "checkdb", "certuser", "");
    body["credentials"][0]
        .as_object_mut()
        .unwrap()
        .remove("password");
    body["ssl"] = json!(true);
    body["verify_server_hostname"] = json!(true);
    body["ssl_ca_cert"] = json!(cert_b64("ca-bundle.pem"));
    let without = check_body(&body).await;
    assert_eq!(
        without,
        "db error: FATAL: connection requires a valid client certificate"
    );
    body["ssl_cert"] = json!(cert_b64("client.pem"));
    body["ssl_key"] = json!(cert_b64("client.key"));
    assert_eq!(check_body(&body).await, "ok");
}

#[tokio::test]
async fn connection_parameters_reach_the_session() {
    up().await;
    let mut target = target();
    target.connection_parameters = vec![
        ConnectionParameter {
            name: "application_name".to_owned(),
            value: "dbconsole check".to_owned(),
        },
        ConnectionParameter {
            name: "search_path".to_owned(),
            value: r"public, x\y".to_owned(),
        },
        ConnectionParameter {
            name: "dbconsole.probe".to_owned(),
            value: "a = b".to_owned(),
        },
        ConnectionParameter {
            name: "statement_timeout".to_owned(),
            value: "1234".to_owned(),
        },
    ];
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
    target.connection_parameters = vec![ConnectionParameter {
        name: "statement_timeout".to_owned(),
        value: "soon".to_owned(),
    }];
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
    let mut body = pg("no-such-host.invalid", PORT, "checkdb", "checker", PASSWORD);
    body["credentials"][0]["hostname"] = json!("127.0.0.1");
    assert_eq!(check_body(&body).await, "ok");
}

/// Not a test of behaviour: prints how long one check takes next to a raw tokio-postgres
/// connect in the same run. `cargo test -p dbconsole-tests --test check_postgres -- --ignored
/// --nocapture timing`
#[tokio::test]
#[ignore]
async fn timing() {
    up().await;
    let api = api();
    let id = create(&api, &ok_body()).await;
    let rounds = 20u32;
    let mut check_total = Duration::ZERO;
    let mut raw_total = Duration::ZERO;
    for _ in 0..rounds {
        let start = Instant::now();
        assert_eq!(check(&api, &id, "checker").await, "ok");
        check_total += start.elapsed();

        let start = Instant::now();
        let (client, connection) = tokio_postgres::connect(
            "host=127.0.0.1 port=5432 user=checker password=checkpw dbname=checkdb",
            tokio_postgres::NoTls,
        )
        .await
        .expect("raw connect");
        let task = tokio::spawn(connection);
        client.simple_query("SELECT 1").await.expect("raw query");
        drop(client);
        let _ = task.await;
        raw_total += start.elapsed();
    }
    println!(
        "postgres, mean of {rounds}: check-connection through the service {:?}; raw \
         tokio-postgres connect + SELECT 1 {:?}",
        check_total / rounds,
        raw_total / rounds
    );
}
