//! The runner's sessions, opened with a guard on what the server sends ([`super::super::memory`]).
//!
//! tokio-postgres reads a whole protocol message into memory before it hands it over, so a
//! `SELECT repeat('x', 1073741800)` would be a gigabyte in the process before any bound could
//! look at it. The guard sits on the session's stream, under the driver (above TLS) and reads
//! each message's length as it goes by:
//!
//! - a message over [`RunMemory::max_message`] stops the session before its body is read (the
//!   run is refused as too large);
//! - a row of [`LARGE_ROW`] bytes or more, during a run, waits until the budget of all runs has
//!   room for it, and its charge goes to the session's [`Ledger`].
//!
//! Sessions are opened on a socket of the runner's own ([`Config::connect_raw`]): the same
//! settings, TLS and startup parameters as the checker's ([`crate::check::postgres`]). A
//! cancel request goes to the same address.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{AcquireError, OwnedSemaphorePermit};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, NoTls, TlsConnect, TlsStream};
use tokio_postgres::{CancelToken, Client, Config};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::check::{CheckTarget, error_chain, tls};
use crate::run::memory::{LARGE_ROW, Ledger, RunMemory};

type Acquire =
    Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send + 'static>>;

/// A stream whose incoming protocol messages are measured before they are read.
pub(super) struct Guarded<S> {
    inner: S,
    memory: Arc<RunMemory>,
    ledger: Arc<Ledger>,
    /// The message header being read: its type and length.
    header: [u8; 5],
    have: usize,
    /// Bytes of the current message's body still to come.
    body_left: usize,
    /// A large row waiting for room in the budget, by its number in the run.
    waiting: Option<(u64, Acquire)>,
    /// Why the stream stopped: the messages before the one over the bound were handed over,
    /// the next read fails.
    stopped: Option<String>,
}

impl<S> Guarded<S> {
    fn new(inner: S, memory: Arc<RunMemory>, ledger: Arc<Ledger>) -> Self {
        Self {
            inner,
            memory,
            ledger,
            header: [0; 5],
            have: 0,
            body_left: 0,
            waiting: None,
            stopped: None,
        }
    }

    /// Reads the headers in `bytes` (just read). When a message is over the bound: how many of
    /// the bytes come before it (they are handed over; the stream stops after them).
    fn measure(&mut self, bytes: &[u8]) -> Result<(), usize> {
        // Where the current header began in these bytes: `None` for one begun in an earlier read.
        let mut header_at = None;
        let mut at = 0;
        while at < bytes.len() {
            if self.body_left > 0 {
                let n = self.body_left.min(bytes.len() - at);
                self.body_left -= n;
                at += n;
                continue;
            }
            if self.have == 0 {
                header_at = Some(at);
            }
            self.header[self.have] = bytes[at];
            self.have += 1;
            at += 1;
            if self.have < self.header.len() {
                continue;
            }
            self.have = 0;
            let kind = self.header[0];
            let length = u32::from_be_bytes([
                self.header[1],
                self.header[2],
                self.header[3],
                self.header[4],
            ]) as usize;
            let body = length.saturating_sub(4);
            if body > self.memory.max_message() {
                let bound = self.memory.limits().max_row;
                let why = if kind == b'D' {
                    crate::run::encode::row_over_bound(Some(body), bound)
                } else {
                    format!(
                        "the database sent a message of {body} bytes, over this server's bound \
                         of {bound} bytes"
                    )
                };
                self.ledger.trip(why.clone());
                self.stopped = Some(why);
                // A header begun in an earlier read: nothing of this one is handed over.
                return Err(header_at.unwrap_or(0));
            }
            self.body_left = body;
            if body >= LARGE_ROW {
                self.ledger.saw(body);
            }
            if kind == b'D'
                && let Some(number) = self.ledger.arrived()
                && body >= LARGE_ROW
                && self.waiting.is_none()
            {
                let units = self.memory.units_for(body);
                self.waiting = Some((
                    number,
                    Box::pin(self.memory.budget().acquire_many_owned(units)),
                ));
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(why) = &this.stopped {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why.clone())));
        }
        if let Some((number, acquire)) = &mut this.waiting {
            // Nothing more of the row is read until the budget has room for it.
            let permit = ready!(acquire.as_mut().poll(cx))
                .map_err(|_| io::Error::other("the run memory budget is closed"))?;
            this.ledger.charge(*number, permit);
            this.waiting = None;
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if let Err(kept) = this.measure(&buf.filled()[before..]) {
            if kept == 0 {
                let why = this.stopped.clone().unwrap_or_default();
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why)));
            }
            // The messages before it are the driver's; the next read fails.
            buf.set_filled(before + kept);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<S: TlsStream + Unpin> TlsStream for Guarded<S> {
    fn channel_binding(&self) -> ChannelBinding {
        self.inner.channel_binding()
    }
}

/// Puts the guard on the stream a TLS connector makes.
struct GuardedTls<T> {
    inner: T,
    memory: Arc<RunMemory>,
    ledger: Arc<Ledger>,
}

impl<S, T> TlsConnect<S> for GuardedTls<T>
where
    T: TlsConnect<S> + Send + 'static,
    T::Future: Send + 'static,
    T::Stream: Send + 'static,
    S: Send + 'static,
{
    type Stream = Guarded<T::Stream>;
    type Error = T::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Stream, T::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let Self {
            inner,
            memory,
            ledger,
        } = self;
        Box::pin(async move {
            let stream = inner.connect(stream).await?;
            Ok(Guarded::new(stream, memory, ledger))
        })
    }
}

/// How to reach the server again, for a cancel request.
#[derive(Clone)]
pub(super) struct Canceller {
    token: CancelToken,
    address: Address,
    tls: Option<(MakeRustlsConnect, String)>,
}

#[derive(Clone)]
enum Address {
    Via(std::net::SocketAddr),
    Host(String, u16),
}

impl Address {
    async fn connect(&self) -> io::Result<TcpStream> {
        let stream = match self {
            Address::Via(via) => TcpStream::connect(via).await?,
            Address::Host(host, port) => TcpStream::connect((host.as_str(), *port)).await?,
        };
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

impl Canceller {
    /// Asks the server to cancel the session's statement, on a new connection.
    pub(super) async fn cancel(self) -> Result<(), String> {
        let stream = self.address.connect().await.map_err(|e| e.to_string())?;
        match self.tls {
            Some((mut make, host)) => {
                let connect = <MakeRustlsConnect as MakeTlsConnect<TcpStream>>::make_tls_connect(
                    &mut make, &host,
                )
                .unwrap_or_else(|never| match never {});
                self.token.cancel_query_raw(stream, connect).await
            }
            None => self.token.cancel_query_raw(stream, NoTls).await,
        }
        .map_err(|error| error_chain(&error))
    }
}

/// Opens a runner's session to `target`, guarded by `memory`, counting its rows in the
/// returned [`Ledger`]; the connection runs on a spawned task that ends when the client is
/// dropped.
pub(super) async fn connect(
    target: &CheckTarget,
    memory: Arc<RunMemory>,
) -> Result<(Client, Canceller, Arc<Ledger>), String> {
    let config: Config = crate::check::postgres::config(target);
    let address = match target.connect_via {
        Some(via) => Address::Via(via),
        None => Address::Host(target.host.clone(), target.port),
    };
    let stream = address.connect().await.map_err(|e| e.to_string())?;
    let ledger = Arc::new(Ledger::default());
    let (client, tls) = if target.ssl {
        let mut make = MakeRustlsConnect::new(tls::client_config(target)?);
        let connect = <MakeRustlsConnect as MakeTlsConnect<TcpStream>>::make_tls_connect(
            &mut make,
            &target.host,
        )
        .unwrap_or_else(|never| match never {});
        let guarded = GuardedTls {
            inner: connect,
            memory,
            ledger: Arc::clone(&ledger),
        };
        let (client, connection) = config
            .connect_raw(stream, guarded)
            .await
            .map_err(|error| error_chain(&error))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        (client, Some((make, target.host.clone())))
    } else {
        let guarded = Guarded::new(stream, memory, Arc::clone(&ledger));
        let (client, connection) = config
            .connect_raw(guarded, NoTls)
            .await
            .map_err(|error| error_chain(&error))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        (client, None)
    };
    let canceller = Canceller {
        token: client.cancel_token(),
        address,
        tls,
    };
    Ok((client, canceller, ledger))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::encode::ValueLimits;

    fn guarded(max_row: usize) -> Guarded<tokio::io::Empty> {
        let memory = RunMemory::new(ValueLimits {
            max_value: max_row,
            max_row,
            max_in_flight: 64 * max_row,
        });
        Guarded::new(tokio::io::empty(), memory, Arc::new(Ledger::default()))
    }

    fn message(kind: u8, body: usize) -> Vec<u8> {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&u32::try_from(body + 4).unwrap().to_be_bytes());
        bytes.resize(5 + body, b'x');
        bytes
    }

    #[test]
    fn messages_are_measured_across_reads() {
        let mut guard = guarded(1024 * 1024);
        let mut stream = message(b'T', 10);
        stream.extend(message(b'D', 300));
        stream.extend(message(b'C', 3));
        // In pieces of every size, headers split anywhere.
        for piece in stream.chunks(3) {
            guard.measure(piece).unwrap();
        }
        assert_eq!((guard.have, guard.body_left), (0, 0));
        assert!(guard.ledger.tripped().is_none());
    }

    #[test]
    fn a_message_over_the_bound_stops_the_session_before_its_body() {
        let mut guard = guarded(1024 * 1024);
        let huge = u32::try_from(guard.memory.max_message() + 5).unwrap();
        let mut header = vec![b'D'];
        header.extend_from_slice(&huge.to_be_bytes());
        let mut read = message(b'D', 10);
        read.extend(&header);
        assert_eq!(
            guard.measure(&read),
            Err(15),
            "the row before it is handed over"
        );
        let why = guard.ledger.tripped().unwrap();
        assert!(why.contains("a row of the result is"), "{why}");
        let mut split = guarded(1024 * 1024);
        split.measure(&header[..2]).unwrap();
        assert_eq!(
            split.measure(&header[2..]),
            Err(0),
            "a header split across reads"
        );
    }

    #[tokio::test]
    async fn a_large_row_in_a_run_waits_for_its_charge() {
        let mut guard = guarded(1024 * 1024);
        guard.ledger.begin();
        guard.measure(&message(b'D', LARGE_ROW)[..5]).unwrap();
        assert!(guard.waiting.is_some(), "a large row in a run is charged");
        let mut small = guarded(1024 * 1024);
        small.ledger.begin();
        small.measure(&message(b'D', 100)).unwrap();
        assert!(small.waiting.is_none(), "a small row is not");
        let mut outside = guarded(1024 * 1024);
        outside.measure(&message(b'D', LARGE_ROW)[..5]).unwrap();
        assert!(outside.waiting.is_none(), "nor is a row outside a run");
    }
}
