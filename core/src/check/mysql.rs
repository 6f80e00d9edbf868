//! MySQL and MariaDB: [`MysqlChecker`], with mysql_async (rustls, aws-lc-rs).
//!
//! The check logs in over TCP, runs `SELECT 1` and disconnects. `prefer_socket` is off: by
//! default mysql_async, after a TCP login to a loopback address, reconnects through the server's
//! unix socket, and the check would not test what a remote client sees. No connection parameter
//! is sent (they are PostgreSQL's).
//!
//! TLS is mysql_async's own rustls configuration, set by the same rules as every adapter. One
//! gap is closed here: for "CA certificate, host name not verified" mysql_async offers
//! `skip_domain_validation`, but it recognizes a name mismatch by looking for `NotValidForName`
//! in the error text, which rustls 0.23 no longer prints (the error is
//! `NotValidForNameContext`, displayed as "certificate not valid for name …"). So when the
//! first attempt fails with a name mismatch (which rustls reports only after the chain verified,
//! and before any credential is sent: MySQL sends the login inside TLS), the check connects once
//! more, verifying the chain and one of the names the certificate is valid for.

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
        let mut conn = connect(target).await?;
        let answer = conn.query_drop("SELECT 1").await;
        let closed = conn.disconnect().await;
        answer.map_err(|error| error_chain(&error))?;
        closed.map_err(|error| error_chain(&error))
    }
}

/// Opens the connection the checker opens (same settings and TLS) and hands it over, for
/// embedders that want to run more than the check on it.
pub async fn connect(target: &CheckTarget) -> Result<Conn, String> {
    tls::install_default_provider();
    match Conn::new(opts(target, None)?).await {
        Ok(conn) => Ok(conn),
        Err(error) => {
            let certified = (target.ssl && Verify::of(target) == Verify::Chain)
                .then(|| name_the_certificate_is_valid_for(&error))
                .flatten();
            let Some(name) = certified else {
                return Err(error_chain(&error));
            };
            Conn::new(opts(target, Some(name))?)
                .await
                .map_err(|error| error_chain(&error))
        }
    }
}

/// The connection options; `tls_name`: the name to verify the certificate against instead of
/// the host's.
fn opts(target: &CheckTarget, tls_name: Option<String>) -> Result<OptsBuilder, String> {
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
        .max_allowed_packet(target.max_packet)
        .prefer_socket(false);
    if target.ssl {
        opts = opts.ssl_opts(ssl_opts(target, tls_name)?);
    }
    Ok(opts)
}

fn ssl_opts(target: &CheckTarget, tls_name: Option<String>) -> Result<SslOpts, String> {
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
    if let Some(name) = tls_name {
        ssl = ssl.with_danger_tls_hostname_override(Some(name));
    } else if target.connect_via.is_some() {
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

/// When the connection failed because the server certificate is not valid for the host name
/// (its chain verified), a name it is valid for: a DNS name (a wildcard's label filled in) or
/// an IP address.
fn name_the_certificate_is_valid_for(error: &mysql_async::Error) -> Option<String> {
    use rustls::CertificateError;

    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        // An io::Error's `source()` skips the error it wraps: look inside it.
        let rustls_error = current.downcast_ref::<rustls::Error>().or_else(|| {
            current
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            presented,
            ..
        })) = rustls_error
        {
            return presented.iter().find_map(|name| presented_name(name));
        }
        cause = current.source();
    }
    None
}

/// A presented name as rustls-webpki prints it (`DnsName("db.example.com")`,
/// `IpAddress(10.0.0.5)`), as a name to verify against.
fn presented_name(presented: &str) -> Option<String> {
    let name = if let Some(dns) = presented
        .strip_prefix("DnsName(\"")
        .and_then(|rest| rest.strip_suffix("\")"))
    {
        match dns.strip_prefix("*.") {
            Some(parent) => format!("dbconsole-check.{parent}"),
            None => dns.to_owned(),
        }
    } else if let Some(ip) = presented
        .strip_prefix("IpAddress(")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        ip.parse::<std::net::IpAddr>().ok()?.to_string()
    } else {
        return None;
    };
    rustls::pki_types::ServerName::try_from(name.as_str())
        .is_ok()
        .then_some(name)
}

#[cfg(test)]
mod tests {
    use super::presented_name;

    #[test]
    fn presented_names() {
        assert_eq!(
            presented_name("DnsName(\"localhost\")").as_deref(),
            Some("localhost")
        );
        assert_eq!(
            presented_name("DnsName(\"*.example.com\")").as_deref(),
            Some("dbconsole-check.example.com")
        );
        assert_eq!(
            presented_name("IpAddress(10.0.0.5)").as_deref(),
            Some("10.0.0.5")
        );
        assert_eq!(presented_name("DirectoryName"), None);
        assert_eq!(presented_name("DnsName(\"not a name\")"), None);
    }
}
