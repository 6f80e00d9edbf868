//! MySQL and MariaDB: [`MysqlChecker`], with mysql_async (rustls, aws-lc-rs).
//!
//! The check logs in over TCP, runs `SELECT 1` and disconnects. `prefer_socket` is off: by
//! default mysql_async, after a TCP login to a loopback address, reconnects through the server's
//! unix socket, and the check would not test what a remote client sees. No connection parameter
//! is sent (they are PostgreSQL's).

use async_trait::async_trait;
use mysql_async::prelude::Queryable;
use mysql_async::{ClientIdentity, Conn, OptsBuilder, SslOpts};

use super::tls::{self, Verify};
use super::{CheckTarget, ConnectionChecker, error_chain};

/// Checks MySQL and MariaDB credentials.
#[derive(Clone, Debug, Default)]
pub struct MysqlChecker {}

impl MysqlChecker {
    /// The checker.
    pub fn new() -> Self {
        Self {}
    }
}

#[async_trait]
impl ConnectionChecker for MysqlChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        tls::install_default_provider();
        let opts = opts(target)?;
        let mut conn = Conn::new(opts).await.map_err(|error| error_chain(&error))?;
        let answer = conn.query_drop("SELECT 1").await;
        let closed = conn.disconnect().await;
        answer.map_err(|error| error_chain(&error))?;
        closed.map_err(|error| error_chain(&error))
    }
}

fn opts(target: &CheckTarget) -> Result<OptsBuilder, String> {
    let (address, port) = match target.connect_via {
        Some(via) => (via.ip().to_string(), via.port()),
        None => (target.host.clone(), target.port),
    };
    let password = target
        .password
        .as_ref()
        .map(|password| String::from_utf8_lossy(password.expose()).into_owned());
    let mut opts = OptsBuilder::default()
        .ip_or_hostname(address)
        .tcp_port(port)
        .user(Some(target.username.clone()))
        .pass(password)
        .db_name(Some(target.database.clone()))
        .prefer_socket(false);
    if target.ssl {
        opts = opts.ssl_opts(ssl_opts(target)?);
    }
    Ok(opts)
}

fn ssl_opts(target: &CheckTarget) -> Result<SslOpts, String> {
    let mut ssl = SslOpts::default();
    match (Verify::of(target), &target.ca_cert) {
        (Verify::Nothing, _) | (_, None) => {
            ssl = ssl.with_danger_accept_invalid_certs(true);
        }
        (verify, Some(ca)) => {
            // Validate the bundle here, so that a broken one is reported as such.
            tls::root_store(target)?;
            ssl = ssl
                .with_root_certs(vec![ca.expose().to_vec().into()])
                .with_disable_built_in_roots(true)
                .with_danger_skip_domain_validation(verify == Verify::Chain);
        }
    }
    if target.connect_via.is_some() {
        // Through a tunnel: TLS still names and verifies the database's host.
        ssl = ssl.with_danger_tls_hostname_override(Some(target.host.clone()));
    }
    if let (Some(cert), Some(key)) = (&target.client_cert, &target.client_key) {
        ssl = ssl.with_client_identity(Some(ClientIdentity::new(
            cert.expose().to_vec().into(),
            key.expose().to_vec().into(),
        )));
    } else {
        tls::client_identity(target)?; // only one of the two: the same message as elsewhere
    }
    Ok(ssl)
}
