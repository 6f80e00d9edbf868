//! # dbconsole-server
//!
//! The reference server of dbconsole: the binary `dbconsole`, which serves the HTTP JSON API of
//! [`dbconsole_core::ConsoleService`] over HTTP/1 with hyper. The API itself (routes,
//! validation, errors) lives in `dbconsole-core`; this crate only chooses a storage backend,
//! reads the callers' credentials, and runs the accept loop with request logging and graceful
//! shutdown. Programs that embed the API in their own server do not need it.
//!
//! ```text
//! dbconsole serve [--listen ADDR] [--storage redb|memory] [--data-dir DIR] [--check-timeout-secs N]
//! ```
//!
//! | flag | environment | default | meaning |
//! |---|---|---|---|
//! | `--listen` | `DBCONSOLE_LISTEN` | `127.0.0.1:4000` | socket address to listen on; port 0 picks a free one |
//! | `--storage` | `DBCONSOLE_STORAGE` | `redb` | storage backend: `redb` (durable file in the data directory) or `memory` (nothing survives the process) |
//! | `--data-dir` | `DBCONSOLE_DATA_DIR` | `./data` | directory of the redb file `dbconsole.redb` and the key file `secret.key`, created when missing (unused by `memory`) |
//! | `--check-timeout-secs` | `DBCONSOLE_CHECK_TIMEOUT_SECS` | `10` | check-connection timeout for credentials that set none |
//!
//! **Callers' credentials.** `DBCONSOLE_API_KEY` (sent as `x-api-key` on the database routes)
//! and `DBCONSOLE_ACCESS_TOKEN` (sent as `Authorization: Bearer` on the dashboard routes) are
//! static full-access credentials, read from the environment only (never a flag: flags show in
//! the process list). When neither is set, the server generates one of each at start (32 bytes
//! from the operating system's random source, base64url) and prints them once on standard
//! output; they are valid for that run only. A configured credential is never printed.
//!
//! **Secrets at rest.** With `redb`, passwords, certificates and keys are encrypted with
//! XChaCha20-Poly1305 under a 32-byte key: `DBCONSOLE_SECRET_KEY` (base64) when set, else the
//! key file `secret.key` in the data directory, created once with mode 0600. Starting with a
//! key other than the one the data was written with fails with a clear message. Keep a copy of
//! the key apart from backups of the data file.
//!
//! **Output.** Standard output carries only the generated credentials (when any) and the line
//! `listening on <address>` once the socket is bound, so a supervisor or a test can start the
//! server on port 0 and read the address. Logs go to standard error through `tracing`, filtered
//! by `RUST_LOG` (default `info`): startup (address, storage), one line per request (method,
//! path without the query string, status, duration in milliseconds; never a body, a header
//! value or a secret), and shutdown.
//!
//! **Health.** `GET /healthz` answers 200 `ok` without credentials; the server answers it before
//! the API service sees the request.
//!
//! **Shutdown.** On SIGINT or SIGTERM the server stops accepting connections, finishes the
//! requests in flight, closes idle connections and exits with status 0. A flag it cannot parse
//! or an address it cannot bind ends it with a non-zero status and a one-line message.

pub mod backend;
pub mod cli;
pub mod credentials;
pub mod serve;

pub use backend::StorageKind;
pub use cli::{Cli, Command, ServeArgs};
pub use credentials::CallerCredentials;
pub use serve::{ShutdownSignal, serve};

/// Sends `tracing` output to standard error, filtered by `RUST_LOG` (default `info`), without
/// colours unless standard error is a terminal.
pub fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
