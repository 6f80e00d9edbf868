//! Check-connection: the [`ConnectionChecker`] trait and the per-adapter registry.
//!
//! A checker opens a real connection with one credential and closes it. The service wraps every
//! check in the timeout (the credential's, else the configured default), scrubs every secret
//! out of the message and makes it one line, so checkers only report what their driver said.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use crate::model::Adapter;
use crate::model::{ConnectionParameter, Secret};

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
    /// The bound the service puts around the whole check.
    pub timeout: Duration,
}

impl CheckTarget {
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

/// Opens a real connection for one adapter.
#[async_trait]
pub trait ConnectionChecker: Send + Sync + Debug + 'static {
    /// Connects, then closes. `Err` carries the driver's error message.
    async fn check(&self, target: &CheckTarget) -> Result<(), String>;
}

/// The checkers compiled into a service, one per adapter at most.
#[derive(Clone, Debug, Default)]
pub struct Checkers {
    by_adapter: [Option<Arc<dyn ConnectionChecker>>; 5],
}

impl Checkers {
    /// No checker at all: every check answers that the adapter's checker is not built in.
    pub fn none() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the checker of one adapter.
    pub fn with(mut self, adapter: Adapter, checker: Arc<dyn ConnectionChecker>) -> Self {
        self.by_adapter[adapter as usize] = Some(checker);
        self
    }

    /// The checker of one adapter.
    pub fn get(&self, adapter: Adapter) -> Option<&Arc<dyn ConnectionChecker>> {
        self.by_adapter[adapter as usize].as_ref()
    }
}

/// The answer when no checker is compiled in for an adapter.
pub fn not_built_message(adapter: Adapter) -> String {
    format!("the {adapter} connection checker is not built into this server")
}

/// Makes a driver's message safe to answer: every secret's text replaced by `[REDACTED]`, and
/// everything on one line.
pub fn scrub_message<'a>(message: &str, secrets: impl IntoIterator<Item = &'a Secret>) -> String {
    let mut text = message.to_owned();
    for secret in secrets {
        if let Some(value) = secret.expose_str().filter(|value| !value.is_empty()) {
            text = text.replace(value, "[REDACTED]");
        }
    }
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        "connection failed".to_owned()
    } else {
        one_line
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

    #[test]
    fn empty_secret_is_not_a_pattern() {
        let empty = Secret::from("");
        assert_eq!(scrub_message("abc", [&empty]), "abc");
        assert_eq!(scrub_message(" \n ", [&empty]), "connection failed");
    }
}
