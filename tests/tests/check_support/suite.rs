//! The check-connection cases every adapter shares, as one table: an [`AdapterRow`] per adapter
//! says how to reach its test server and what its driver answers, and each case below is one
//! function over a row. An adapter's test file lists the cases it runs with
//! [`shared_cases!`](crate::shared_cases), which makes one `#[tokio::test]` per case (so each
//! case still passes or fails on its own); the cases only one adapter has stay in its file.

use serde_json::{Value, json};

use super::mock_tds::mock_sql_server;
use super::*;

/// Where an adapter's test server comes from.
pub(crate) enum Server {
    /// Started by `.ci/db-servers-up.sh`: every `(what, port)` must answer on loopback.
    Ci(&'static [(&'static str, u16)]),
    /// The TDS stand-in of `mock_tds.rs`, started for each test on a port of its own.
    MockTds,
}

/// What an answer must be.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expect {
    /// Exactly this text.
    Is(&'static str),
    /// This text, then something that varies (a resolver's message, a server's stack trace).
    StartsWith(&'static str),
}

impl Expect {
    /// Asserts that `answer` is what this expects.
    #[track_caller]
    pub(crate) fn assert(self, answer: &str) {
        match self {
            Expect::Is(expected) => assert_eq!(answer, expected),
            Expect::StartsWith(prefix) => assert!(answer.starts_with(prefix), "{answer}"),
        }
    }
}

/// One adapter of the table.
pub(crate) struct AdapterRow {
    /// The wire name (`"postgres"`…).
    pub(crate) adapter: &'static str,
    /// Where its server comes from.
    pub(crate) server: Server,
    /// The port of plain connections (for the stand-in, the one named where no server answers).
    pub(crate) port: u16,
    /// The port of TLS connections.
    pub(crate) tls_port: u16,
    /// The database the `checker` account may use.
    pub(crate) database: &'static str,
    /// The login name that works (with [`PASSWORD`]).
    pub(crate) username: &'static str,
    /// The answer to a wrong password.
    pub(crate) wrong_password: Expect,
    /// The answer for the database `nodb`.
    pub(crate) unknown_database: Expect,
    /// The answer when nothing listens on [`CLOSED_PORT`].
    pub(crate) closed_port: &'static str,
    /// The answer for the host `no-such-host.invalid`.
    pub(crate) unknown_host: Expect,
    /// What the driver puts before a rustls error (`None`: its server does no TLS here).
    pub(crate) tls_error: Option<&'static str>,
    /// The answer to the `certuser` account, which needs a client certificate, without one.
    pub(crate) client_cert_refused: Option<&'static str>,
}

/// A host name the resolver never finds.
pub(crate) const UNKNOWN_HOST: &str = "no-such-host.invalid";

/// The rustls answer to a chain that does not lead to the stored CA bundle.
const UNKNOWN_ISSUER: &str = "invalid peer certificate: UnknownIssuer";

/// The rustls answer when the certificate (issued to `localhost`) is checked against 127.0.0.1.
const NAME_MISMATCH: &str = "invalid peer certificate: certificate not valid for name \
                             \"127.0.0.1\"; certificate is only valid for DnsName(\"localhost\")";

impl AdapterRow {
    /// Brings the server up (or checks that it is): the port of plain connections.
    pub(crate) async fn up(&self) -> u16 {
        match self.server {
            Server::Ci(servers) => {
                for (what, port) in servers {
                    require_server(what, *port).await;
                }
                self.port
            }
            Server::MockTds => mock_sql_server().await.port(),
        }
    }

    /// A body for the `checker` account on `host:port`.
    pub(crate) fn body(&self, host: &str, port: u16) -> Value {
        database(
            self.adapter,
            host,
            port,
            self.database,
            self.username,
            PASSWORD,
        )
    }

    /// A body with `ssl` on, against the TLS port, with the CA file `ca` (from the certificates
    /// directory) and `verify_server_hostname` as given.
    pub(crate) async fn tls_body(&self, host: &str, ca: Option<&str>, verify_host: bool) -> Value {
        self.up().await;
        let mut body = self.body(host, self.tls_port);
        body["ssl"] = json!(true);
        if let Some(ca) = ca {
            body["ssl_ca_cert"] = json!(cert_b64(ca));
        }
        body["verify_server_hostname"] = json!(verify_host);
        body
    }

    /// The driver's answer to the rustls error `error`.
    fn tls_error(&self, error: &str) -> String {
        let prefix = self.tls_error.expect("this adapter's server does TLS");
        format!("{prefix}{error}")
    }
}

/// The right credentials: `ok`.
pub(crate) async fn ok(row: &AdapterRow) {
    let port = row.up().await;
    assert_eq!(check_body(&row.body("127.0.0.1", port)).await, "ok");
}

/// A wrong password: the server's refusal, without the password.
pub(crate) async fn wrong_password(row: &AdapterRow) {
    let port = row.up().await;
    let mut body = row.body("127.0.0.1", port);
    body["credentials"][0]["password"] = json!(WRONG_PASSWORD);
    let answer = check_body(&body).await;
    row.wrong_password.assert(&answer);
    assert_no_secret(&answer);
}

/// A database that does not exist.
pub(crate) async fn unknown_database(row: &AdapterRow) {
    let port = row.up().await;
    let mut body = row.body("127.0.0.1", port);
    body["database"] = json!("nodb");
    row.unknown_database.assert(&check_body(&body).await);
}

/// Nothing listens on the port.
pub(crate) async fn closed_port(row: &AdapterRow) {
    let answer = check_body(&row.body("127.0.0.1", CLOSED_PORT)).await;
    assert_eq!(answer, row.closed_port);
}

/// The host name does not resolve.
pub(crate) async fn unknown_host(row: &AdapterRow) {
    let answer = check_body(&row.body(UNKNOWN_HOST, row.port)).await;
    row.unknown_host.assert(&answer);
}

/// A server that accepts the connection and never answers: the credential's timeout.
pub(crate) async fn silent_host_times_out_within_the_credential_timeout(row: &AdapterRow) {
    let silent = silent_server().await;
    let body = with_timeout(row.body("127.0.0.1", silent.port()), 1);
    assert_timed_out(&check_body(&body).await, 1);
}

/// The same with TLS: the timeout bounds the handshake too.
pub(crate) async fn silent_host_with_tls_times_out_too(row: &AdapterRow) {
    let silent = silent_server().await;
    let mut body = with_timeout(row.body("127.0.0.1", silent.port()), 1);
    body["ssl"] = json!(true);
    assert_timed_out(&check_body(&body).await, 1);
}

/// `ssl` without a CA certificate: encrypted, the certificate not verified.
pub(crate) async fn tls_without_ca_is_encrypted_and_not_verified(row: &AdapterRow) {
    let body = row.tls_body("127.0.0.1", None, false).await;
    assert_eq!(check_body(&body).await, "ok");
}

/// With the CA bundle the chain is verified, not the host name: the certificate names
/// `localhost` only, and 127.0.0.1 is fine without `verify_server_hostname`.
pub(crate) async fn tls_with_ca_bundle_verifies_the_chain_not_the_host_name(row: &AdapterRow) {
    let body = row
        .tls_body("127.0.0.1", Some("ca-bundle.pem"), false)
        .await;
    assert_eq!(check_body(&body).await, "ok");
}

/// The server sends its leaf only: the root alone cannot reach it without the intermediate.
pub(crate) async fn tls_chain_needs_every_certificate_of_the_bundle(row: &AdapterRow) {
    let body = row.tls_body("127.0.0.1", Some("ca.pem"), false).await;
    assert_eq!(check_body(&body).await, row.tls_error(UNKNOWN_ISSUER));
}

/// A CA that did not issue the server's certificate.
pub(crate) async fn tls_with_another_ca_fails(row: &AdapterRow) {
    let body = row.tls_body("127.0.0.1", Some("other-ca.pem"), false).await;
    assert_eq!(check_body(&body).await, row.tls_error(UNKNOWN_ISSUER));
}

/// `verify_server_hostname` with the name the certificate carries.
pub(crate) async fn tls_verified_host_name_matches(row: &AdapterRow) {
    let body = row.tls_body("localhost", Some("ca-bundle.pem"), true).await;
    assert_eq!(check_body(&body).await, "ok");
}

/// `verify_server_hostname` with another name.
pub(crate) async fn tls_verified_host_name_mismatch(row: &AdapterRow) {
    let body = row.tls_body("127.0.0.1", Some("ca-bundle.pem"), true).await;
    assert_eq!(check_body(&body).await, row.tls_error(NAME_MISMATCH));
}

/// The `certuser` account is refused without a client certificate and accepted with one.
pub(crate) async fn client_certificate_is_presented(row: &AdapterRow) {
    let mut body = row.tls_body("localhost", Some("ca-bundle.pem"), true).await;
    body["credentials"] = json!([{"username": "certuser"}]);
    let refused = row
        .client_cert_refused
        .expect("this adapter's server has the certuser account");
    assert_eq!(check_body(&body).await, refused);
    body["ssl_cert"] = json!(cert_b64("client.pem"));
    body["ssl_key"] = json!(cert_b64("client.key"));
    assert_eq!(check_body(&body).await, "ok");
}

/// Makes one `#[tokio::test]` per named case of [`suite`](crate::check_support::suite), run
/// on the given [`AdapterRow`]: `shared_cases!(ROW; ok, wrong_password, …);`.
#[macro_export]
macro_rules! shared_cases {
    ($row:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                check_support::suite::$case(&$row).await;
            }
        )*
    };
}
