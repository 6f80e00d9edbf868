//! # dbconsole-server
//!
//! The reference server of dbconsole: the binary `dbconsole`, which serves the HTTP JSON API of
//! [`dbconsole_core::ConsoleService`] over HTTP/1 with hyper, manages the stored keys of its
//! callers, and backs up and restores its redb data. The API itself (routes, validation, errors, scopes) lives in `dbconsole-core`; this
//! crate only chooses a storage backend, sets up the callers' credentials, and runs the accept
//! loop with request logging and graceful shutdown. Programs that embed the API in their own
//! server do not need it.
//!
//! ```text
//! dbconsole serve [FLAGS]           # every flag, its environment variable and default: --help
//! dbconsole keys create|list|revoke
//! dbconsole backup --to FILE
//! dbconsole restore --from FILE
//! ```
//!
//! Flags are documented once, in `--help` (from [`cli`]); the operations manual
//! (`docs/operations.md`, included below) says how to run, watch, back up and restore it. This
//! documentation keeps what the code promises and why.
//!
//! `GET /healthz` answers 200 `ok` while the process runs (liveness); `GET /readyz` answers 200
//! `ready` while the storage can serve requests and 503 `not ready: storage unavailable` while it
//! cannot: PostgreSQL unreachable, or redb writes failing (a full disk) until one succeeds again
//! (readiness: a load balancer takes the node out of rotation meanwhile).
//!
//! **Several nodes**: with `--storage postgres`, any number of `dbconsole serve` processes share
//! one PostgreSQL database (the same `--database-url` and `--database-schema`) and must share
//! the seal keys: set the same `DBCONSOLE_SECRET_KEY` (or key file) on every node (a node whose
//! keys do not fit the store refuses to start, saying so; docs/operations.md, "Rotating the secret key").
//!
//! ## Callers' credentials
//!
//! A caller presents an API key (`x-api-key`, database routes) or an access token
//! (`Authorization: Bearer`, dashboard routes). Two sources are accepted, checked on every
//! request ([`dbconsole_core::auth::StoredCredentials`]):
//!
//! - **Static**: `DBCONSOLE_API_KEY` and `DBCONSOLE_ACCESS_TOKEN`, full access, read from the
//!   environment only (never a flag: flags show in the process list), never stored, never
//!   printed.
//! - **Stored keys**: kept in the storage backend as SHA-256 digests only, each with an id
//!   (`key_…`), a name, a kind, a scope (`full`, or `setup`: only
//!   `PUT /api/v1/console/databases/setup` and `DELETE /api/v1/console/databases/remove/{api_id}`,
//!   anything else answers 403), its creation time and the time it was last used (recorded at
//!   most once a minute). A secret is `dbc_ak_…` (API key) or `dbc_at_…` (access token), 32
//!   random bytes in base64url; it is printed once when the key is created and cannot be shown
//!   again. A revoked key is refused (401) from the next request on.
//!
//! **First start.** When neither variable is set and the store holds no key at all, `serve`
//! creates one full-scope API key and one full-scope access token, stores them (digests only)
//! and prints them once on standard output, labelled, before the `listening on` line. With
//! `redb` they survive restarts, and a restart creates no more; with `memory` they last as long
//! as the process. Should every key be revoked later, the next start without the variables
//! creates two new ones.
//!
//! ## `dbconsole keys`
//!
//! Keys are managed on the command line, on the storage `serve` uses: the same `--storage`,
//! `--data-dir`, `--database-url` (and `DBCONSOLE_STORAGE`, `DBCONSOLE_DATA_DIR`,
//! `DBCONSOLE_DATABASE_URL`, `DBCONSOLE_SECRET_KEY`). With `postgres` the commands work on the
//! shared database directly, and every node honours a new or revoked key from its next request
//! (each request looks the key up in the store). With
//! `memory` the commands fail with a message that says why: a memory store lives inside its
//! server process, which has no admin socket, so no other process can reach its keys. `keys create` prints the id and the secret, once; `keys list` prints a table (id,
//! kind, scope, name, created, last used), never a secret or a digest; `keys revoke ID` prints
//! what was revoked. A command that fails (an unknown id, a bad name) exits non-zero with a
//! one-line message on standard error. `keys rotate-seal`, `keys seal-status` and `keys
//! add-seal-key` manage the seal keys instead ([`admin::seal`]; docs/operations.md, "Rotating the secret
//! key").
//!
//! redb lets one process at a time open the data file, so the commands work in two ways:
//!
//! - **A server is running on the data directory**: the command connects to the server's
//!   admin socket `DATA_DIR/admin.sock` and the server runs it on its own store, so a created
//!   key works and a revoked one fails from the server's next request. No secret key is needed
//!   on this path. See [`admin`]: its socket, client, operations and messages (one
//!   JSON line each way).
//! - **No server is running**: the command opens the data file itself, does its work and
//!   closes it. `keys create` creates the data directory, the key file and the data file when
//!   missing, so keys can be made before the first `serve`; `list` and `revoke` need existing
//!   data. While the command holds the file (a moment), a `serve` starting on it fails with
//!   "already open in another process".
//!
//! The command tries the socket first; when nothing answers there it opens the file; when the
//! file is held by a process whose socket does not answer (a server starting or stopping), it
//! tries again for a few seconds, then fails with a message that says so.
//!
//! **The admin socket is as sensitive as the data directory**: whoever can connect can create
//! full-access keys, as whoever can read `secret.key` can read the stored secrets. It is created
//! with mode 0600 inside the data directory, the server serves only peers running as its own
//! user or root, and it exists only while a server on `redb` runs (removed at shutdown; one left
//! by a killed server is removed at the next start). Keep the data directory private to the
//! server's user.
//!
//! ## Secrets at rest
//!
//! With `redb`, passwords, certificates and keys are encrypted with XChaCha20-Poly1305 under a
//! 32-byte key of the node's keyring: `DBCONSOLE_SECRET_KEY` when set, else the key file
//! `secret.key` in the data directory, created once with mode 0600 (`dbconsole keys
//! rotate-seal` rotates it; docs/operations.md, "Rotating the secret key"). Starting with a key other than the one the data
//! was written with fails with a clear message, and so does data without its key file and
//! without the variable (no new key file is made then). Keep a copy of the key apart from
//! backups of the data file. The data file holds the callers' keys as digests only.
//!
//! ## Output
//!
//! Standard output of `serve` carries only the keys created at first start (when any) and the
//! line `listening on <address>` once the socket is bound, so a supervisor or a test can start
//! the server on port 0 and read the address. Logs go to standard error through `tracing`,
//! filtered by `RUST_LOG` (default `info`): startup (address, storage), one line per request
//! (method, path without the query string, status, duration in milliseconds; never a body, a
//! header value or a secret), one line per admin-socket key operation (operation, result, key
//! id, kind, scope), and shutdown. Lines are written, in order, by a thread of their own: a
//! request does not wait for standard error (docs/operations.md, "Logs").
//!
//! **Health.** `GET /healthz` answers 200 `ok` without credentials; the server answers it before
//! the API service sees the request.
//!
//! **Shutdown.** On SIGINT or SIGTERM the server stops accepting connections, finishes the
//! requests in flight, closes idle connections, removes the admin socket and exits with status
//! 0. A flag it cannot parse or an address it cannot bind ends it with a non-zero status and a
//! one-line message.
//!
//! ---
//!
//! *The manual's page on this part, as the repository shows it:*
#![doc = include_str!("../../docs/operations.md")]

pub mod admin;
pub mod backend;
pub mod backup;
pub mod cli;
pub mod credentials;
pub mod deliver;
pub mod docs;
pub mod door;
pub mod mcp;
pub mod metrics;
pub mod oidc;
pub mod serve;
pub mod tls;

pub use backend::StorageKind;
pub use cli::{
    Cli, Command, KeysArgs, KeysCommand, LogFormat, ServeArgs, SessionsArgs, SessionsCommand,
};
pub use credentials::EnvCredentials;
pub use serve::{ServeLimits, ShutdownSignal, serve};

/// Sends `tracing` output to standard error, filtered by `RUST_LOG` (default `info`): lines of
/// text without colours unless standard error is a terminal, or one JSON object per line.
///
/// Lines are formatted on the thread that logs them and written by a thread of their own, in
/// order, each batch in one write (a request's line costs it no system call). None is dropped:
/// when 128k lines wait, logging waits. Keep the guard until the program ends: dropping it
/// writes what waits.
pub fn init_tracing(format: cli::LogFormat) -> LogGuard {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;

    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("dbconsole-log")
        .finish(std::io::BufWriter::new(std::io::stderr()));
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        cli::LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        cli::LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
    LogGuard(guard)
}

/// Keeps the log's writing thread: dropping it writes the lines still waiting
/// ([`init_tracing`]).
#[must_use = "dropping the guard stops the log's writing thread"]
#[derive(Debug)]
pub struct LogGuard(
    #[expect(dead_code, reason = "held for its drop, which writes what waits")]
    tracing_appender::non_blocking::WorkerGuard,
);
