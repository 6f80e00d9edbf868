//! Tunnels: how a check reaches a database in a private network.
//!
//! The console itself does not know how tunnels are made (an SSH jump host, an agent in the
//! private network, a cloud provider's port forwarding…); the embedding application does. It
//! gives the service a [`TunnelDialer`] (`ConsoleServiceBuilder::tunnel_dialer`), which, for a
//! database with a `tunnel_id`, opens a local address that forwards to the database's
//! `host:port`. Every driver can connect to a local address, so one design works for all five
//! checkers; the drivers still use the database's own host name for TLS (server name and
//! certificate verification) wherever they allow it.
//!
//! Without a dialer, a check of a database with a tunnel answers
//! `tunnel "<id>" is not available: no tunnel dialer is configured`.

use std::any::Any;
use std::fmt;
use std::io;
use std::net::SocketAddr;

use async_trait::async_trait;

use super::{CheckTarget, ConnectionChecker, error_chain};

/// Opens forwarded connections through the tunnels of the embedding application.
#[async_trait]
pub trait TunnelDialer: Send + Sync + fmt::Debug + 'static {
    /// Makes `host:port` reachable through the tunnel `tunnel_id`: the answer is a local address
    /// that forwards every TCP connection to `host:port`, open for as long as the returned
    /// [`TunnelEndpoint`] lives. An unknown tunnel is an `Err` (its message is answered to the
    /// caller, so it must not hold secrets).
    async fn forward(&self, tunnel_id: &str, host: &str, port: u16) -> io::Result<TunnelEndpoint>;
}

/// The local end of a forwarding: the address to connect to, and whatever keeps the forwarding
/// open (dropped when the check ends).
pub struct TunnelEndpoint {
    local_addr: SocketAddr,
    _guard: Box<dyn Any + Send + Sync>,
}

impl TunnelEndpoint {
    /// An endpoint at `local_addr`, kept open while `guard` lives (a task handle, a session, a
    /// listener… anything whose drop closes the forwarding; `()` when nothing needs closing).
    pub fn new(local_addr: SocketAddr, guard: impl Any + Send + Sync) -> Self {
        Self {
            local_addr,
            _guard: Box::new(guard),
        }
    }

    /// The local address that forwards to the database.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl fmt::Debug for TunnelEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TunnelEndpoint")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// The answer for a database whose tunnel cannot be used because no dialer is configured.
pub fn no_dialer_message(tunnel_id: &str) -> String {
    format!("tunnel \"{tunnel_id}\" is not available: no tunnel dialer is configured")
}

/// Runs `checker` on `target`, through the target's tunnel when it has one. The service calls
/// this inside the check's timeout, so opening the tunnel counts against it too.
pub async fn check_through(
    checker: &dyn ConnectionChecker,
    target: &CheckTarget,
    dialer: Option<&dyn TunnelDialer>,
) -> Result<(), String> {
    let Some(tunnel_id) = target.tunnel_id.as_deref() else {
        return checker.check(target).await;
    };
    let Some(dialer) = dialer else {
        return Err(no_dialer_message(tunnel_id));
    };
    let endpoint = dialer
        .forward(tunnel_id, &target.host, target.port)
        .await
        .map_err(|error| {
            format!(
                "tunnel \"{tunnel_id}\" could not forward to {}:{}: {}",
                target.host,
                target.port,
                error_chain(&error)
            )
        })?;
    let mut through = target.clone();
    through.connect_via = Some(endpoint.local_addr());
    let result = checker.check(&through).await;
    drop(endpoint);
    result
}
