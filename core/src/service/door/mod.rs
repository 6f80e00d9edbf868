//! The PostgreSQL wire door (docs/door.md): people's own SQL clients (psql, DBeaver, DataGrip,
//! drivers) connect to the server as to a PostgreSQL server, signed in with a door password
//! or a query key, and every statement obeys the rules of a console run on the same
//! credential: access, data protection, the row cap, the timeout, and the audit trail.
//!
//! The rooms: `frame` (the protocol's framing), `session` (a connection's TLS, startup,
//! sign-in and which database and credential it runs as), `backend` (the database-facing
//! session, opened as the runner opens its own), `judge` (what a statement may do),
//! `relay` (the messages both ways, under the rules), `live` (the open door sessions of
//! this node: caps, cancel keys, ending them) and `passwords` (the routes that mint, list
//! and revoke door passwords and list and end door sessions).
//!
//! Without the `postgres` feature, the routes answer (no session ever opens: there is no
//! listener to hand connections to), and the connection half is not built.

#![cfg_attr(
    not(feature = "postgres"),
    allow(
        dead_code,
        reason = "what connections read is built with the postgres feature"
    )
)]

use std::sync::Arc;
use std::time::Duration;

use super::admission::Admission;
use super::callers::Callers;
use super::launch::Launcher;
use super::throttle::SignInThrottle;
use crate::storage::Storage;

#[cfg(feature = "postgres")]
mod backend;
#[cfg(feature = "postgres")]
mod cancel;
#[cfg(feature = "postgres")]
mod frame;
#[cfg(feature = "postgres")]
mod judge;
pub(crate) mod live;
mod passwords;
#[cfg(feature = "postgres")]
mod relay;
#[cfg(feature = "postgres")]
mod reviewed;
#[cfg(feature = "postgres")]
mod session;

/// How the door behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoorOptions {
    /// Where people connect (`host:port`), as the console shows it; `None`: the door is off
    /// and the console says so.
    pub address: Option<String>,
    /// The longest lifetime a door password may be minted with.
    pub max_password_lifetime: Duration,
    /// How many door sessions one person holds open at most, on this node.
    pub max_per_user: usize,
    /// How many door sessions one credential holds open at most, on this node.
    pub max_per_credential: usize,
}

/// The lifetime of a door password when none is asked for.
pub const DEFAULT_PASSWORD_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);

impl Default for DoorOptions {
    fn default() -> Self {
        Self {
            address: None,
            max_password_lifetime: Duration::from_secs(90 * 24 * 3600),
            max_per_user: 10,
            max_per_credential: 50,
        }
    }
}

/// The door's state: what a connection reads, and the open sessions.
#[derive(Clone, Debug)]
pub(crate) struct Door {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) admission: Admission,
    pub(crate) launcher: Launcher,
    pub(crate) callers: Callers,
    /// Failed sign-ins, counted with the browser's.
    pub(crate) throttle: Arc<SignInThrottle>,
    pub(crate) options: Arc<DoorOptions>,
    pub(crate) live: Arc<live::Live>,
    /// The most rows a statement's result sends (the service's row cap).
    pub(crate) max_rows: u32,
    /// Stores a statement that needs reviews as a query.
    pub(crate) queries: super::queries::Queries,
    /// Runs an approved one.
    pub(crate) runs: super::runs::Runs,
}

/// The door of a built service: what the server hands each accepted connection to
/// ([`super::ConsoleService::door`]).
#[derive(Clone, Debug)]
pub struct DoorHandle {
    pub(crate) door: Door,
}

#[cfg(feature = "postgres")]
impl DoorHandle {
    /// Serves one client connection to its end: TLS (`tls`, required before startup), the
    /// startup, the sign-in, then its statements. `peer` is the client's address (throttling
    /// and the audit trail).
    pub async fn serve(
        &self,
        stream: tokio::net::TcpStream,
        peer: std::net::SocketAddr,
        tls: tokio_rustls::TlsAcceptor,
    ) {
        session::serve(&self.door, stream, peer, tls).await;
    }

    /// Ends every open door session at once (a shutdown), cancelling what runs.
    pub fn close_all(&self) {
        self.door.live.end_all();
    }
}
