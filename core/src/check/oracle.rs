//! Oracle: [`OracleChecker`], with the oracle crate (ODPI-C over the Oracle Client library).
//!
//! The oracle crate is blocking, so the connection attempt runs on tokio's blocking pool
//! (`spawn_blocking`), together with writing and removing the temporary wallet (blocking file
//! I/O): slow Oracle checks never hold an async worker thread, and the service's
//! timeout still bounds the answer. A timed-out attempt keeps its blocking thread until the
//! Oracle client gives up, so the connect descriptor also carries the timeout
//! (`CONNECT_TIMEOUT`, `TRANSPORT_CONNECT_TIMEOUT`, no retries).
//!
//! The crate loads the Oracle Client library (`libclntsh.so`, e.g. Instant Client) at the first
//! connection. When it is not installed, every check answers so
//! ("Oracle Client library not found on this server: DPI Error: DPI-1047: …").
//!
//! The database field is the service name: the check connects to
//! `(DESCRIPTION=…(ADDRESS=(PROTOCOL=TCP|TCPS)(HOST=…)(PORT=…))(CONNECT_DATA=(SERVICE_NAME=…)))`.
//! TLS (`PROTOCOL=TCPS`) is handled by the Oracle client, not rustls: with a CA certificate it is
//! written, with a stored client certificate and key, as a PEM wallet (`ewallet.pem`) in a private
//! temporary directory named by `MY_WALLET_DIRECTORY`; `SSL_SERVER_DN_MATCH` follows
//! `verify_server_hostname`. Oracle Net has no "encrypted but not verified" mode: `ssl` without
//! a CA certificate verifies against the client's default wallet. (Not tested here: no Oracle
//! Client or server is obtainable on CI.) No connection parameter is sent.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use super::{CheckTarget, ConnectionChecker, error_chain};
use crate::model::Secret;

/// One Oracle login, as the blocking connect function receives it.
#[derive(Clone)]
pub struct OracleLogin {
    /// Login name.
    pub username: String,
    /// Password (empty when none is stored).
    pub password: Secret,
    /// The connect descriptor: address, service name, timeouts and TLS settings.
    pub connect_descriptor: String,
    /// The temporary wallet directory named in the descriptor, removed when the last clone of
    /// the login is dropped.
    _wallet: Option<Arc<tempfile::TempDir>>,
}

impl fmt::Debug for OracleLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OracleLogin")
            .field("username", &self.username)
            .field("password", &self.password)
            .field("connect_descriptor", &self.connect_descriptor)
            .finish_non_exhaustive()
    }
}

/// A blocking function that opens one Oracle connection and closes it (`Err`: the message).
pub type OracleConnectFn = dyn Fn(&OracleLogin) -> Result<(), String> + Send + Sync;

/// Checks Oracle credentials.
#[derive(Clone)]
pub struct OracleChecker {
    connect: Arc<OracleConnectFn>,
}

impl OracleChecker {
    /// The checker, connecting with the oracle crate.
    pub fn new() -> Self {
        Self::with_connect(connect_with_oracle_crate)
    }

    /// A checker that connects with `connect` instead of the oracle crate (another driver, or a
    /// stand-in in tests). It runs on the blocking pool, like the oracle crate's call.
    pub fn with_connect(
        connect: impl Fn(&OracleLogin) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            connect: Arc::new(connect),
        }
    }
}

impl Default for OracleChecker {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for OracleChecker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OracleChecker").finish_non_exhaustive()
    }
}

#[async_trait]
impl ConnectionChecker for OracleChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        let target = target.clone();
        let connect = Arc::clone(&self.connect);
        // The login writes (and, when dropped, removes) the temporary wallet: blocking file I/O,
        // so it is made on the blocking pool with the connection attempt.
        tokio::task::spawn_blocking(move || connect(&login(&target)?))
            .await
            .map_err(|error| format!("the Oracle connection attempt failed: {error}"))?
    }
}

/// What [`OracleChecker::new`] runs: connect, `SELECT 1 FROM DUAL`, close.
fn connect_with_oracle_crate(login: &OracleLogin) -> Result<(), String> {
    let password = String::from_utf8_lossy(login.password.expose()).into_owned();
    let connection = oracle::Connector::new(
        login.username.as_str(),
        password,
        login.connect_descriptor.as_str(),
    )
    .connect()
    .map_err(|error| describe(&error))?;
    let answer = connection.query_row("SELECT 1 FROM DUAL", &[]).map(drop);
    let closed = connection.close();
    answer.map_err(|error| describe(&error))?;
    closed.map_err(|error| describe(&error))
}

/// The driver's message; a missing Oracle Client library is named as such.
pub(crate) fn describe(error: &oracle::Error) -> String {
    let text = error_chain(error);
    if text.contains("DPI-1047") {
        format!("Oracle Client library not found on this server: {text}")
    } else {
        text
    }
}

/// The login for a target: the connect descriptor with its timeouts and TLS settings.
pub(crate) fn login(target: &CheckTarget) -> Result<OracleLogin, String> {
    let (host, port) = match target.connect_via {
        Some(via) => (via.ip().to_string(), via.port()),
        None => (target.host.clone(), target.port),
    };
    descriptor_value("host name", &host)?;
    descriptor_value("service name (database)", &target.database)?;
    let seconds = target.timeout.as_secs_f64().ceil().max(1.0);
    let protocol = if target.ssl { "TCPS" } else { "TCP" };
    let mut descriptor = format!(
        "(DESCRIPTION=(CONNECT_TIMEOUT={seconds})(TRANSPORT_CONNECT_TIMEOUT={seconds})\
         (RETRY_COUNT=0)(ADDRESS=(PROTOCOL={protocol})(HOST={host})(PORT={port}))\
         (CONNECT_DATA=(SERVICE_NAME={})))",
        target.database
    );
    let mut wallet = None;
    if target.ssl {
        let dn_match = if target.verify_server_hostname {
            "ON"
        } else {
            "OFF"
        };
        let mut security = format!("(SECURITY=(SSL_SERVER_DN_MATCH={dn_match})");
        if target.ca_cert.is_some() {
            let dir = pem_wallet(target)?;
            let path = dir.path().to_string_lossy().into_owned();
            descriptor_value("wallet directory", &path)?;
            security.push_str(&format!("(MY_WALLET_DIRECTORY={path})"));
            wallet = Some(Arc::new(dir));
        }
        security.push(')');
        descriptor.truncate(descriptor.len() - 1); // reopen DESCRIPTION
        descriptor.push_str(&security);
        descriptor.push(')');
    }
    Ok(OracleLogin {
        username: target.username.clone(),
        password: target.password.clone().unwrap_or_default(),
        connect_descriptor: descriptor,
        _wallet: wallet,
    })
}

/// Refuses a value that would change the connect descriptor's structure.
fn descriptor_value(what: &str, value: &str) -> Result<(), String> {
    let bad = |c: char| "()=\"'\\#".contains(c) || c.is_whitespace() || c.is_control();
    if value.is_empty() || value.chars().any(bad) {
        return Err(format!(
            "the {what} cannot be used in an Oracle connect descriptor"
        ));
    }
    Ok(())
}

/// A private temporary directory holding `ewallet.pem`: the CA certificate(s), and the client
/// certificate and key when stored.
fn pem_wallet(target: &CheckTarget) -> Result<tempfile::TempDir, String> {
    use std::io::Write as _;
    let dir = tempfile::TempDir::new()
        .map_err(|error| format!("Oracle wallet: {}", error_chain(&error)))?;
    let mut contents = Vec::new();
    for secret in [&target.client_key, &target.client_cert, &target.ca_cert]
        .into_iter()
        .flatten()
    {
        contents.extend_from_slice(secret.expose());
        contents.push(b'\n');
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(dir.path().join("ewallet.pem"))
        .and_then(|mut file| file.write_all(&contents))
        .map_err(|error| format!("Oracle wallet: {}", error_chain(&error)))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::Adapter;

    fn target() -> CheckTarget {
        CheckTarget::new(Adapter::Oracle, "db.example.com", 1521, "ORCLPDB1", "scott")
            .password("tiger")
            .timeout(Duration::from_millis(2500))
    }

    #[test]
    fn descriptor_carries_address_service_and_timeout() {
        let login = login(&target()).unwrap();
        assert_eq!(
            login.connect_descriptor,
            "(DESCRIPTION=(CONNECT_TIMEOUT=3)(TRANSPORT_CONNECT_TIMEOUT=3)(RETRY_COUNT=0)\
             (ADDRESS=(PROTOCOL=TCP)(HOST=db.example.com)(PORT=1521))\
             (CONNECT_DATA=(SERVICE_NAME=ORCLPDB1)))"
        );
        assert!(!format!("{login:?}").contains("tiger"));
    }

    #[test]
    fn tls_uses_tcps_and_dn_match() {
        let mut target = target();
        target.ssl = true;
        target.verify_server_hostname = true;
        let descriptor = login(&target).unwrap().connect_descriptor;
        assert!(descriptor.contains("(PROTOCOL=TCPS)"), "{descriptor}");
        assert!(
            descriptor.ends_with("(SECURITY=(SSL_SERVER_DN_MATCH=ON)))"),
            "{descriptor}"
        );
    }

    #[test]
    fn descriptor_injection_is_refused() {
        let mut target = target();
        target.database = "X)(SERVER=DEDICATED".to_owned();
        assert_eq!(
            login(&target).unwrap_err(),
            "the service name (database) cannot be used in an Oracle connect descriptor"
        );
    }
}
