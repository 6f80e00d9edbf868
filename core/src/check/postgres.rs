//! PostgreSQL: [`PostgresChecker`], with tokio-postgres and rustls.
//!
//! The check logs in, runs `SELECT 1` and closes the session. The database's
//! `connection_parameters` go to the server at connection start, in the startup packet's
//! `options` (`-c name=value` for each, spaces and backslashes escaped), so the session runs with
//! every one of them set, as if libpq had sent it; a parameter the server rejects fails the check
//! with the server's own message. TLS: `sslmode=require` with the verification of the `tls`
//! module (none, chain, or chain and host name).

use async_trait::async_trait;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{CheckTarget, ConnectionChecker, error_chain, tls};
use crate::model::ConnectionParameter;

/// Checks PostgreSQL credentials.
#[derive(Clone, Debug, Default)]
pub struct PostgresChecker {}

impl PostgresChecker {
    /// The checker.
    pub fn new() -> Self {
        Self {}
    }
}

#[async_trait]
impl ConnectionChecker for PostgresChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        let client = connect(target).await?;
        client
            .simple_query("SELECT 1")
            .await
            .map_err(|error| error_chain(&error))?;
        drop(client); // ends the session: the connection task sends Terminate and closes
        Ok(())
    }
}

/// Opens the session the checker opens (same settings, TLS and startup parameters) and hands
/// it over; the connection runs on a spawned task that ends when the client is dropped. For
/// embedders that want to run more than the check on it.
pub async fn connect(target: &CheckTarget) -> Result<tokio_postgres::Client, String> {
    let config = config(target);
    let tls = if target.ssl {
        tls::client_config(target)?
    } else {
        // Never used with `SslMode::Disable`, but the connector type needs one.
        tls::placeholder_config()?
    };
    let (client, connection) = config
        .connect(MakeRustlsConnect::new(tls))
        .await
        .map_err(|error| error_chain(&error))?;
    tokio::spawn(async move {
        // Errors after login (the server closing, a broken socket) end the task; the client sees
        // them on its next call.
        let _ = connection.await;
    });
    Ok(client)
}

/// The session's settings: host, database, user, TLS mode, password and startup parameters.
pub(crate) fn config(target: &CheckTarget) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    config
        .host(&target.host)
        .dbname(&target.database)
        .user(&target.username)
        .ssl_mode(if target.ssl {
            SslMode::Require
        } else {
            SslMode::Disable
        });
    match target.connect_via {
        // Connect to the tunnel; TLS still names and verifies `host`.
        Some(via) => config.hostaddr(via.ip()).port(via.port()),
        None => config.port(target.port),
    };
    if let Some(password) = &target.password {
        config.password(password.expose());
    }
    if !target.connection_parameters.is_empty() {
        config.options(startup_options(&target.connection_parameters));
    }
    config
}

/// The startup `options` that set every parameter: `-c name=value …`, with whitespace and
/// backslashes escaped by a backslash (how the server splits `options`).
pub(crate) fn startup_options(parameters: &[ConnectionParameter]) -> String {
    fn escape(text: &str, out: &mut String) {
        for c in text.chars() {
            if c == '\\' || c.is_ascii_whitespace() {
                out.push('\\');
            }
            out.push(c);
        }
    }
    let mut options = String::new();
    for parameter in parameters {
        if !options.is_empty() {
            options.push(' ');
        }
        options.push_str("-c ");
        escape(&parameter.name, &mut options);
        options.push('=');
        escape(&parameter.value, &mut options);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parameter(name: &str, value: &str) -> ConnectionParameter {
        ConnectionParameter {
            name: name.to_owned(),
            value: value.to_owned(),
        }
    }

    #[test]
    fn options_escape_spaces_and_backslashes() {
        let options = startup_options(&[
            parameter("application_name", "my app"),
            parameter("search_path", r"a\b,c"),
            parameter("x.empty", ""),
        ]);
        assert_eq!(
            options,
            r"-c application_name=my\ app -c search_path=a\\b,c -c x.empty="
        );
    }
}
