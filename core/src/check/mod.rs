//! Check-connection: the [`ConnectionChecker`] trait, the per-adapter registry and the checkers.
//!
//! A checker opens a real connection with one credential, with its adapter's own protocol, and
//! closes it. The service wraps every check in the timeout (the credential's, else the configured
//! default), scrubs every secret out of the message and makes it one line, so checkers only
//! report what their driver said (the whole `source()` chain, see [`error_chain`]).
//!
//! Each adapter's checker sits behind its own cargo feature, so an embedder compiles only the
//! drivers it needs; [`standard_checkers`] registers every one that is compiled in:
//!
//! | feature | checker | driver |
//! |---|---|---|
//! | `postgres` | `postgres::PostgresChecker` | tokio-postgres |
//! | `mysql` | `mysql::MysqlChecker` | mysql_async, always over TCP |
//! | `clickhouse` | `clickhouse::ClickhouseChecker` | the clickhouse crate, over HTTP(S) |
//! | `sqlserver` | `sqlserver::SqlserverChecker` | tiberius |
//! | `oracle` | `oracle::OracleChecker` | the oracle crate (needs the Oracle Client library) |
//!
//! `all-checkers` turns on all five. Each module's documentation says what its check does and
//! where its driver departs from the common rules.
//!
//! All of them use one TLS stack, rustls with the aws-lc-rs provider (see `tls.rs` for the rules:
//! `ssl` off is plain; on without a CA certificate is encrypted but not verified; with a CA the
//! chain is verified against every certificate of the bundle, not the host name; with
//! `verify_server_hostname` the host name too; a stored client certificate and key are
//! presented). A database with a `tunnel_id` is reached through the [`TunnelDialer`] the
//! embedding application provides (see [`tunnel`]).

use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use crate::model::Adapter;
use crate::model::{ConnectionParameter, Credential, Database, SealedSecret, Secret, TlsField};
use crate::seal::Place;

#[cfg(feature = "clickhouse")]
pub mod clickhouse;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "oracle")]
pub mod oracle;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlserver")]
pub mod sqlserver;
#[cfg(feature = "tls")]
pub(crate) mod tls;
pub mod tunnel;

pub use tunnel::{TunnelDialer, TunnelEndpoint};

/// Everything a checker needs to open one connection.
#[derive(Clone, Debug)]
pub struct CheckTarget {
    /// Which engine.
    pub adapter: Adapter,
    /// Host to connect to (the credential's host name when set, else the database's).
    pub host: String,
    /// Port to connect to (the stored one, else the adapter's default).
    pub port: u16,
    /// Database name.
    pub database: String,
    /// Login name.
    pub username: String,
    /// Login password, when stored.
    pub password: Option<Secret>,
    /// Whether to use TLS.
    pub ssl: bool,
    /// Whether the certificate must match the host name.
    pub verify_server_hostname: bool,
    /// CA certificate(s) to verify the chain against.
    pub ca_cert: Option<Secret>,
    /// Client certificate to present.
    pub client_cert: Option<Secret>,
    /// Key of the client certificate.
    pub client_key: Option<Secret>,
    /// PostgreSQL run-time parameters.
    pub connection_parameters: Vec<ConnectionParameter>,
    /// Tunnel to reach the host through, when set.
    pub tunnel_id: Option<String>,
    /// Where to open the TCP connection instead of `host:port`: the local end of the tunnel
    /// (set by the service after the [`TunnelDialer`] answered; `None` means `host:port`).
    /// TLS still names and verifies `host` wherever the driver allows it.
    pub connect_via: Option<SocketAddr>,
    /// The bound the service puts around the whole check.
    pub timeout: Duration,
    /// The most bytes of one packet the driver reads, where it can be told (MySQL's client-side
    /// `max_allowed_packet`): a query runner's bound on a row. `None`: the driver's own.
    pub max_packet: Option<usize>,
}

impl CheckTarget {
    /// A target with the connection's identity and nothing else: no password, TLS off, no
    /// certificates, no connection parameters, no tunnel, and a 10 s timeout. The chained
    /// setters below fill in the rest:
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use dbconsole_core::check::{Adapter, CheckTarget};
    /// let target = CheckTarget::new(Adapter::Postgres, "db.internal", 5432, "orders", "reader")
    ///     .password("secret")
    ///     .ssl(true)
    ///     .timeout(Duration::from_secs(3));
    /// assert!(target.ssl && target.password.is_some());
    /// ```
    pub fn new(
        adapter: Adapter,
        host: impl Into<String>,
        port: u16,
        database: impl Into<String>,
        username: impl Into<String>,
    ) -> Self {
        Self {
            adapter,
            host: host.into(),
            port,
            database: database.into(),
            username: username.into(),
            password: None,
            ssl: false,
            verify_server_hostname: false,
            ca_cert: None,
            client_cert: None,
            client_key: None,
            connection_parameters: Vec::new(),
            tunnel_id: None,
            connect_via: None,
            max_packet: None,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }

    /// The timeout of [`CheckTarget::new`] (the reference server's default check timeout).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// Sets the login password.
    #[must_use]
    pub fn password(mut self, password: impl Into<Secret>) -> Self {
        self.password = Some(password.into());
        self
    }

    /// Turns TLS on or off.
    #[must_use]
    pub fn ssl(mut self, ssl: bool) -> Self {
        self.ssl = ssl;
        self
    }

    /// Sets whether the certificate must match the host name.
    #[must_use]
    pub fn verify_server_hostname(mut self, verify: bool) -> Self {
        self.verify_server_hostname = verify;
        self
    }

    /// Sets the CA certificate(s) to verify the chain against.
    #[must_use]
    pub fn ca_cert(mut self, pem: impl Into<Secret>) -> Self {
        self.ca_cert = Some(pem.into());
        self
    }

    /// Sets the client certificate and its key, to present.
    #[must_use]
    pub fn client_identity(mut self, cert: impl Into<Secret>, key: impl Into<Secret>) -> Self {
        self.client_cert = Some(cert.into());
        self.client_key = Some(key.into());
        self
    }

    /// Sets the PostgreSQL run-time parameters.
    #[must_use]
    pub fn connection_parameters(mut self, parameters: Vec<ConnectionParameter>) -> Self {
        self.connection_parameters = parameters;
        self
    }

    /// Sets the tunnel to reach the host through.
    #[must_use]
    pub fn tunnel_id(mut self, tunnel_id: impl Into<String>) -> Self {
        self.tunnel_id = Some(tunnel_id.into());
        self
    }

    /// Sets where to open the TCP connection instead of `host:port`.
    #[must_use]
    pub fn connect_via(mut self, addr: SocketAddr) -> Self {
        self.connect_via = Some(addr);
        self
    }

    /// Sets the bound around the whole check.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Every secret of the target, so that messages can be scrubbed of them.
    pub fn secrets(&self) -> impl Iterator<Item = &Secret> {
        [
            &self.password,
            &self.ca_cert,
            &self.client_cert,
            &self.client_key,
        ]
        .into_iter()
        .flatten()
    }
}

/// The rustls client configuration that check-connection's TLS rules give `target` (see the
/// module documentation), for other connections that follow the same rules: the PostgreSQL
/// storage's own connection uses it, so the whole service has one TLS stack.
#[cfg(feature = "tls")]
pub fn tls_client_config(target: &CheckTarget) -> Result<rustls::ClientConfig, String> {
    tls::client_config(target)
}

/// Opens a real connection for one adapter.
#[async_trait]
pub trait ConnectionChecker: Send + Sync + Debug + 'static {
    /// Connects, then closes. `Err` carries the driver's error message.
    async fn check(&self, target: &CheckTarget) -> Result<(), String>;
}

/// The checkers compiled into a service, one per adapter at most.
#[derive(Clone, Debug, Default)]
pub struct Checkers {
    /// One slot per adapter, indexed by `adapter as usize`: sized from [`Adapter::ALL`], so a new
    /// adapter grows the table (and `index` below makes sure the discriminants fit it).
    by_adapter: [Option<Arc<dyn ConnectionChecker>>; Adapter::ALL.len()],
}

impl Checkers {
    /// No checker at all: every check answers that the adapter's checker is not built in.
    pub fn none() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the checker of one adapter.
    pub fn with(mut self, adapter: Adapter, checker: Arc<dyn ConnectionChecker>) -> Self {
        self.by_adapter[index(adapter)] = Some(checker);
        self
    }

    /// The checker of one adapter.
    pub fn get(&self, adapter: Adapter) -> Option<&Arc<dyn ConnectionChecker>> {
        self.by_adapter[index(adapter)].as_ref()
    }
}

/// The slot of an adapter in [`Checkers`]. Checked at compile time for every adapter: a variant
/// whose discriminant does not index `Adapter::ALL` to itself stops the build.
const fn index(adapter: Adapter) -> usize {
    const {
        let mut i = 0;
        while i < Adapter::ALL.len() {
            assert!(
                Adapter::ALL[i] as usize == i,
                "Adapter::ALL must list the adapters in declaration order"
            );
            i += 1;
        }
    }
    adapter as usize
}

/// A function that makes an adapter's checker when its cargo feature is compiled in (`None`
/// otherwise).
macro_rules! checker_of {
    ($name:ident, $feature:literal, $checker:path) => {
        #[cfg(feature = $feature)]
        fn $name() -> Option<Arc<dyn ConnectionChecker>> {
            Some(Arc::new(<$checker>::new()))
        }
        #[cfg(not(feature = $feature))]
        fn $name() -> Option<Arc<dyn ConnectionChecker>> {
            None
        }
    };
}

checker_of!(postgres_checker, "postgres", postgres::PostgresChecker);
checker_of!(mysql_checker, "mysql", mysql::MysqlChecker);
checker_of!(
    clickhouse_checker,
    "clickhouse",
    clickhouse::ClickhouseChecker
);
checker_of!(sqlserver_checker, "sqlserver", sqlserver::SqlserverChecker);
checker_of!(oracle_checker, "oracle", oracle::OracleChecker);

/// A checker for every adapter whose cargo feature is compiled in (`postgres`, `mysql`,
/// `clickhouse`, `sqlserver`, `oracle`; `all-checkers` turns on all five).
pub fn standard_checkers() -> Checkers {
    #[cfg(feature = "tls")]
    tls::install_default_provider();
    type Make = fn() -> Option<Arc<dyn ConnectionChecker>>;
    let makers: [(Adapter, Make); 5] = [
        (Adapter::Postgres, postgres_checker),
        (Adapter::Mysql, mysql_checker),
        (Adapter::Clickhouse, clickhouse_checker),
        (Adapter::Sqlserver, sqlserver_checker),
        (Adapter::Oracle, oracle_checker),
    ];
    makers
        .into_iter()
        .filter_map(|(adapter, make)| make().map(|checker| (adapter, checker)))
        .fold(Checkers::none(), |checkers, (adapter, checker)| {
            checkers.with(adapter, checker)
        })
}

/// An error and its whole `source()` chain on one line, joined with `": "`. A cause whose text
/// the line already holds (drivers that print their cause themselves) is not repeated.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}

/// The answer when no checker is compiled in for an adapter.
pub fn not_built_message(adapter: Adapter) -> String {
    format!("the {adapter} connection checker is not built into this server")
}

/// Makes a driver's message safe to answer: every secret's text replaced by `[REDACTED]`, and
/// everything on one line.
pub fn scrub_message<'a>(message: &str, secrets: impl IntoIterator<Item = &'a Secret>) -> String {
    // Longest first: a secret that contains another (a password cut out of a certificate) must
    // go whole before the shorter one cuts it into pieces that no longer match.
    let mut values: Vec<&str> = secrets
        .into_iter()
        .filter_map(Secret::expose_str)
        .filter(|value| !value.is_empty())
        .collect();
    values.sort_by_key(|value| std::cmp::Reverse(value.len()));
    let mut text = message.to_owned();
    for value in values {
        text = text.replace(value, "[REDACTED]");
    }
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        "connection failed".to_owned()
    } else {
        one_line
    }
}

/// Why [`CheckTarget::open`] opened nothing.
#[derive(Debug)]
pub enum OpenError {
    /// A stored secret does not open with this server's keys.
    Seal(crate::seal::SealError),
    /// The credential's stored password was given for another destination: what to do.
    Held(String),
}

impl OpenError {
    /// The service's answer: 422 on `field` for a held-back password, else 500 (logged).
    pub(crate) fn answer(self, field: &str) -> crate::service::ApiError {
        match self {
            OpenError::Held(why) => crate::validate::ValidationErrors::single(field, why).into(),
            OpenError::Seal(error) => {
                tracing::error!(%error, "a stored secret does not open");
                crate::service::ApiError::Internal
            }
        }
    }
}

impl From<crate::seal::SealError> for OpenError {
    fn from(error: crate::seal::SealError) -> Self {
        Self::Seal(error)
    }
}

/// Why `credential`'s stored password is held back, when it is: it was given for another
/// host, port, tunnel or TLS setting than `db`'s now ([`Database::destination`]). A stored
/// password goes only where it was given for.
pub fn held_back(db: &Database, credential: &Credential) -> Option<String> {
    credential.password.as_ref()?;
    let bound = credential.password_for?;
    (bound != db.destination(credential)).then(|| {
        format!(
            "the stored password of {} was given for another host, port, tunnel or TLS setting \
             than the database's now: it is sent nowhere until it is given again (update the \
             credential with its password)",
            credential.username
        )
    })
}

impl CheckTarget {
    /// The target of `credential` of `db` with its secrets opened: one of the two places secrets
    /// are opened (check-connection, and a query runner's connector when a connection opens).
    /// A password given for another destination is not opened ([`held_back`]).
    pub fn open(
        sealer: &crate::seal::Sealer,
        db: &Database,
        credential: &Credential,
        timeout: std::time::Duration,
    ) -> Result<CheckTarget, OpenError> {
        let open = |sealed: Option<&SealedSecret>, place: Place| {
            sealed.map(|sealed| sealer.open(sealed, &place)).transpose()
        };
        if let Some(why) = held_back(db, credential) {
            return Err(OpenError::Held(why));
        }
        let password = open(
            credential.password.as_ref(),
            Place::password(db.id.as_str(), credential.id.as_str()),
        )?;
        let tls = |field| open(db.tls.get(field), Place::tls(db.id.as_str(), field));
        Ok(CheckTarget {
            adapter: db.adapter,
            host: credential
                .hostname
                .clone()
                .unwrap_or_else(|| db.hostname.clone()),
            port: db.effective_port(),
            database: db.database.clone(),
            username: credential.username.clone(),
            password,
            ssl: db.ssl,
            verify_server_hostname: db.verify_server_hostname,
            ca_cert: tls(TlsField::CaCert)?,
            client_cert: tls(TlsField::ClientCert)?,
            client_key: tls(TlsField::ClientKey)?,
            connection_parameters: db.connection_parameters.clone(),
            tunnel_id: db.tunnel_id.clone(),
            connect_via: None,
            max_packet: None,
            timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_secrets_and_newlines() {
        let password = Secret::from("s3cr3t");
        let text = scrub_message("login failed\nfor s3cr3t\r\n (s3cr3t)", [&password]);
        assert_eq!(text, "login failed for [REDACTED] ([REDACTED])");
    }

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn error_chain_joins_causes_without_repeating_them() {
        let inner = Layer("Connection refused (os error 111)", None);
        let middle = Layer(
            "io: Connection refused (os error 111)",
            Some(Box::new(inner)),
        );
        let outer = Layer("error connecting to server", Some(Box::new(middle)));
        assert_eq!(
            error_chain(&outer),
            "error connecting to server: io: Connection refused (os error 111)"
        );
        assert_eq!(error_chain(&Layer("alone", None)), "alone");
    }

    #[test]
    fn empty_secret_is_not_a_pattern() {
        let empty = Secret::from("");
        assert_eq!(scrub_message("abc", [&empty]), "abc");
        assert_eq!(scrub_message(" \n ", [&empty]), "connection failed");
    }
}
