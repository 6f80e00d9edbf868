//! [`PostgresOptions`]: where the store is and how it is reached; [`ConnectError`]: why
//! connecting failed.

use std::time::Duration;

use dbconsole_core::check::{Adapter, CheckTarget, tls_client_config};
use dbconsole_core::model::Secret;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How to reach the store.
#[derive(Clone)]
pub struct PostgresOptions {
    /// A libpq-style URL or key-value string: `postgres://user:password@host:5432/dbname`,
    /// with `sslmode=disable|prefer|require` (default `prefer`), `connect_timeout` and the
    /// other parameters tokio-postgres reads. Never logged: it may hold a password.
    pub url: String,
    /// The schema the tables live in, created when missing (default `dbconsole`): lower-case
    /// letters, digits and `_`, starting with a letter or `_`.
    pub schema: String,
    /// PEM of the CA certificate(s) the server's certificate must chain to. With it, TLS is
    /// required and both the chain and the host name are verified (libpq's `verify-full`);
    /// without it, `sslmode=require` encrypts without verifying (libpq's `require`).
    pub ca_cert: Option<Vec<u8>>,
    /// Connections in the pool of this node (default 16).
    pub max_connections: usize,
    /// The bound on each operation, waiting for a connection included (default 5 s). An
    /// operation that reaches it answers `StorageError::Unavailable`.
    pub timeout: Duration,
}

impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &"[REDACTED]")
            .field("schema", &self.schema)
            .field("ca_cert", &self.ca_cert.as_ref().map(|_| "[PEM]"))
            .field("max_connections", &self.max_connections)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Why [`crate::PostgresStorage::connect`] failed. Never repeats the URL (it may hold a
/// password).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL does not parse.
    #[error("the database URL is not valid: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// The URL names no host.
    #[error("the database URL names no host")]
    NoHost,
    /// The schema name is not a plain identifier.
    #[error(
        "the schema name {0:?} is not valid: use lower-case letters, digits and _, starting \
         with a letter or _"
    )]
    Schema(String),
    /// The TLS settings are not usable (a CA certificate that does not parse…).
    #[error("TLS to PostgreSQL: {0}")]
    Tls(String),
    /// The pool could not be built.
    #[error("the connection pool could not be built: {0}")]
    Pool(String),
    /// PostgreSQL could not be reached, or refused the login.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Creating the schema or applying a migration failed.
    #[error("migrating the schema failed: {0}")]
    Migrate(#[source] tokio_postgres::Error),
    /// A stored record could not be read while a migration filled new columns from it.
    #[error("migrating the schema failed: a stored record could not be read: {0}")]
    Record(#[source] dbconsole_core::storage::record::RecordError),
    /// The schema was migrated by a newer dbconsole.
    #[error(
        "the schema is at version {found}, newer than this dbconsole knows ({supported}): \
         run the newer version, or restore a backup taken before the upgrade"
    )]
    NewerSchema {
        /// The version found.
        found: i32,
        /// The newest version this build knows.
        supported: i32,
    },
    /// The store's secrets were sealed with another key.
    #[error("the secret key does not match the one this data was written with")]
    WrongKey,
    /// The key check value could not be made.
    #[error("the system random number generator failed")]
    Random,
    /// The stored seal keys are damaged (none is current, or an id is out of range).
    #[error("the stored seal keys are damaged: {0}")]
    Corrupt(&'static str),
    /// The store's secrets need a seal key this node's keyring lacks (named in the message).
    #[error(transparent)]
    SealKey(dbconsole_core::seal::SealKeyError),
}

impl PostgresOptions {
    /// Options for this URL, with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: "dbconsole".to_owned(),
            ca_cert: None,
            max_connections: 16,
            timeout: Duration::from_secs(5),
        }
    }

    /// The pool these options describe; connects lazily.
    pub(crate) fn pool(&self) -> Result<Pool, ConnectError> {
        if !is_identifier(&self.schema) {
            return Err(ConnectError::Schema(self.schema.clone()));
        }
        let mut config: tokio_postgres::Config = self.url.parse().map_err(ConnectError::Url)?;
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            #[cfg(unix)]
            Some(Host::Unix(path)) => path.display().to_string(),
            None => return Err(ConnectError::NoHost),
        };
        // Every statement is unqualified: the pool's connections work in the schema.
        // The server also ends a statement at the bound: a connection whose operation timed out
        // goes back to the pool with nothing still running behind the next borrower.
        config.options(format!(
            "-c search_path={} -c client_min_messages=warning -c statement_timeout={}",
            self.schema,
            self.timeout.as_millis().max(1)
        ));
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(self.timeout);
        }
        config.keepalives_idle(Duration::from_secs(30));
        let mut target = CheckTarget::new(Adapter::Postgres, host, 5432, "", "").ssl(true);
        if let Some(pem) = &self.ca_cert {
            config.ssl_mode(SslMode::Require);
            target = target
                .ca_cert(Secret::new(pem.clone()))
                .verify_server_hostname(true);
        }
        let tls = tls_client_config(&target).map_err(ConnectError::Tls)?;
        let manager = Manager::from_config(
            config,
            MakeRustlsConnect::new(tls),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        Pool::builder(manager)
            .max_size(self.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(self.timeout))
            .create_timeout(Some(self.timeout))
            .recycle_timeout(Some(self.timeout))
            .build()
            .map_err(|error| ConnectError::Pool(error.to_string()))
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_identifiers() {
        for good in ["dbconsole", "_t1", "node_2"] {
            assert!(is_identifier(good), "{good}");
        }
        for bad in ["", "1a", "Public", "a-b", "a;drop", "a b", &"x".repeat(64)] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn debug_and_errors_never_show_the_url() {
        let options = PostgresOptions::new("postgres://u:hunter2@db/x");
        assert!(!format!("{options:?}").contains("hunter2"));
        let mut bad = PostgresOptions::new("postgres://u:hunter2@db/x?sslmode=bogus");
        let error = bad.pool().unwrap_err().to_string();
        assert!(!error.contains("hunter2"), "{error}");
        bad.url = "postgres://u:pw@db/x".into();
        bad.schema = "No".into();
        assert!(matches!(bad.pool(), Err(ConnectError::Schema(_))));
    }
}
