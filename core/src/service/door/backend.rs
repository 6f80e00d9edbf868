//! The database-facing half of a door connection: its own TCP (or tunnel) connection, TLS by
//! the database's settings (the same rules as the runner's sessions: `check/tls.rs`), its own
//! startup and authentication (cleartext, MD5 or SCRAM-SHA-256), and then raw messages, which
//! tokio-postgres can't relay.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf as _, BytesMut};
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::frame::{self, Message};
use crate::check::{CheckTarget, TunnelEndpoint, tls};

/// A byte stream either way: TCP, or TLS over it.
pub(super) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Where a cancel request for a backend goes, and how (its own connection, with the session's
/// TLS).
#[derive(Clone)]
pub(super) struct CancelTarget {
    reach: Reach,
    process: i32,
    secret: i32,
}

impl std::fmt::Debug for CancelTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelTarget").finish_non_exhaustive()
    }
}

/// How the database is reached: the address to connect to, and TLS (its configuration and the
/// name it verifies) when the database uses it.
#[derive(Clone)]
struct Reach {
    host: String,
    port: u16,
    via: Option<SocketAddr>,
    tls: Option<Arc<rustls::ClientConfig>>,
}

/// An opened, authenticated backend session.
pub(super) struct Backend {
    /// The session's stream, past its startup.
    pub(super) stream: Box<dyn Stream>,
    /// What the server reported (`server_version`, `integer_datetimes`, …).
    pub(super) parameters: Vec<(String, String)>,
    /// Where its cancel requests go.
    pub(super) cancel: CancelTarget,
    /// The tunnel forwarding that reaches it, kept as long as the session.
    pub(super) _tunnel: Option<TunnelEndpoint>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend").finish_non_exhaustive()
    }
}

impl Reach {
    fn of(target: &CheckTarget) -> Result<Self, String> {
        let tls = if target.ssl {
            Some(Arc::new(tls::client_config(target)?))
        } else {
            None
        };
        Ok(Self {
            host: target.host.clone(),
            port: target.port,
            via: target.connect_via,
            tls,
        })
    }

    /// A new connection, through TLS when the database uses it.
    async fn connect(&self) -> Result<Box<dyn Stream>, String> {
        let tcp = match self.via {
            Some(via) => TcpStream::connect(via).await,
            None => TcpStream::connect((self.host.as_str(), self.port)).await,
        }
        .map_err(|error| format!("cannot reach {}:{}: {error}", self.host, self.port))?;
        let _ = tcp.set_nodelay(true);
        let Some(config) = &self.tls else {
            return Ok(Box::new(tcp));
        };
        let mut tcp = tcp;
        let mut request = BytesMut::new();
        frontend::ssl_request(&mut request);
        tcp.write_all(&request)
            .await
            .map_err(|error| format!("TLS request: {error}"))?;
        let answer = tcp
            .read_u8()
            .await
            .map_err(|error| format!("TLS request: {error}"))?;
        if answer != b'S' {
            return Err("the database server does not accept TLS connections".to_owned());
        }
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|_| format!("\"{}\" is not a host name TLS can verify", self.host))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::clone(config))
            .connect(name, tcp)
            .await
            .map_err(|error| format!("TLS handshake: {error}"))?;
        Ok(Box::new(stream))
    }
}

impl CancelTarget {
    /// Where a cancel for the backend `(process, secret)` of `target` goes (another node's
    /// session, found in the storage: `cancel.rs`).
    pub(super) fn of(target: &CheckTarget, process: i32, secret: i32) -> Result<Self, String> {
        Ok(Self {
            reach: Reach::of(target)?,
            process,
            secret,
        })
    }

    /// The backend's own key.
    pub(super) fn key(&self) -> (i32, i32) {
        (self.process, self.secret)
    }

    /// Sends the cancel request on its own connection and waits (at most `bound`) for the
    /// server to close it.
    pub(super) async fn cancel(&self, bound: Duration) {
        let send = async {
            let mut stream = self.reach.connect().await?;
            let mut request = BytesMut::new();
            frontend::cancel_request(self.process, self.secret, &mut request);
            stream
                .write_all(&request)
                .await
                .map_err(|e| e.to_string())?;
            stream.flush().await.map_err(|e| e.to_string())?;
            let mut rest = [0u8; 1];
            let _ = stream.read(&mut rest).await;
            Ok::<(), String>(())
        };
        match tokio::time::timeout(bound, send).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "a door cancel request was not delivered"),
            Err(_) => tracing::warn!("a door cancel request timed out"),
        }
    }
}

/// Opens a session as `target` (its secrets opened), starting it with `parameters` besides the
/// user and database, within `timeout`; a message over `max` bytes ends it.
pub(super) async fn open(
    target: &CheckTarget,
    tunnel: Option<TunnelEndpoint>,
    parameters: &[(String, String)],
    timeout: Duration,
    max: usize,
) -> Result<Backend, String> {
    let opening = async {
        let reach = Reach::of(target)?;
        let mut stream = reach.connect().await?;
        let mut out = BytesMut::new();
        let mut startup: Vec<(&str, &str)> = vec![
            ("user", target.username.as_str()),
            ("database", target.database.as_str()),
        ];
        startup.extend(parameters.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        frontend::startup_message(startup, &mut out)
            .map_err(|error| format!("startup: {error}"))?;
        send(&mut stream, &mut out).await?;
        authenticate(&mut stream, target, max).await?;
        let mut reported = Vec::new();
        let mut key = None;
        loop {
            let message = next(&mut stream, max).await?;
            match message.tag {
                b'S' => {
                    let mut body = message.body.clone();
                    let name = frame::cstr(&mut body).map_err(|e| e.to_string())?;
                    let value = frame::cstr(&mut body).map_err(|e| e.to_string())?;
                    reported.push((name, value));
                }
                b'K' => {
                    let mut body = message.body.clone();
                    if body.len() < 8 {
                        return Err("a malformed BackendKeyData".to_owned());
                    }
                    key = Some((body.get_i32(), body.get_i32()));
                }
                b'N' => {}
                b'Z' => break,
                b'E' => return Err(server_error(&message)),
                other => {
                    return Err(format!(
                        "the server sent an unexpected message ({}) at startup",
                        char::from(other)
                    ));
                }
            }
        }
        let (process, secret) = key.unwrap_or((0, 0));
        Ok(Backend {
            stream,
            parameters: reported,
            cancel: CancelTarget {
                reach,
                process,
                secret,
            },
            _tunnel: None,
        })
    };
    let mut backend = tokio::time::timeout(timeout, opening)
        .await
        .map_err(|_| format!("connecting took longer than {} s", timeout.as_secs()))??;
    backend._tunnel = tunnel;
    Ok(backend)
}

async fn send(stream: &mut Box<dyn Stream>, out: &mut BytesMut) -> Result<(), String> {
    stream
        .write_all(out)
        .await
        .map_err(|error| format!("the connection broke: {error}"))?;
    stream
        .flush()
        .await
        .map_err(|error| format!("the connection broke: {error}"))?;
    out.clear();
    Ok(())
}

async fn next(stream: &mut Box<dyn Stream>, max: usize) -> Result<Message, String> {
    frame::read_message(stream, max)
        .await
        .map_err(|error| format!("the connection broke: {error}"))?
        .ok_or_else(|| "the server closed the connection".to_owned())
}

/// The server's error message (`M`), as it said it.
pub(super) fn server_error(message: &Message) -> String {
    let fields = frame::fields(&message.body);
    fields
        .iter()
        .find(|(code, _)| *code == b'M')
        .map_or_else(|| "the server refused".to_owned(), |(_, m)| m.clone())
}

/// Answers the server's authentication requests until `AuthenticationOk`.
async fn authenticate(
    stream: &mut Box<dyn Stream>,
    target: &CheckTarget,
    max: usize,
) -> Result<(), String> {
    let password = || {
        target
            .password
            .as_ref()
            .map(|p| p.expose().to_vec())
            .ok_or_else(|| "the server asks for a password, and the credential has none".to_owned())
    };
    let mut out = BytesMut::new();
    let mut scram: Option<ScramSha256> = None;
    loop {
        let message = next(stream, max).await?;
        match message.tag {
            b'R' => {}
            b'E' => return Err(server_error(&message)),
            other => {
                return Err(format!(
                    "the server sent an unexpected message ({}) while authenticating",
                    char::from(other)
                ));
            }
        }
        let mut body = message.body.clone();
        if body.len() < 4 {
            return Err("a malformed authentication request".to_owned());
        }
        match body.get_i32() {
            0 => return Ok(()),
            3 => {
                let password = zeroize::Zeroizing::new(password()?);
                frontend::password_message(&password, &mut out).map_err(|e| e.to_string())?;
            }
            5 => {
                if body.len() < 4 {
                    return Err("a malformed MD5 request".to_owned());
                }
                let salt = [body[0], body[1], body[2], body[3]];
                let password = zeroize::Zeroizing::new(password()?);
                let hashed = postgres_protocol::authentication::md5_hash(
                    target.username.as_bytes(),
                    &password,
                    salt,
                );
                frontend::password_message(hashed.as_bytes(), &mut out)
                    .map_err(|e| e.to_string())?;
            }
            10 => {
                let mut offered = Vec::new();
                while let Ok(mechanism) = frame::cstr(&mut body) {
                    if mechanism.is_empty() {
                        break;
                    }
                    offered.push(mechanism);
                }
                if !offered.iter().any(|m| m == SCRAM_SHA_256) {
                    return Err(format!(
                        "the server offers no SASL mechanism the door speaks ({})",
                        offered.join(", ")
                    ));
                }
                let password = zeroize::Zeroizing::new(password()?);
                let started = ScramSha256::new(&password, ChannelBinding::unsupported());
                frontend::sasl_initial_response(SCRAM_SHA_256, started.message(), &mut out)
                    .map_err(|e| e.to_string())?;
                scram = Some(started);
            }
            11 => {
                let scram = scram
                    .as_mut()
                    .ok_or_else(|| "a SASL step out of order".to_owned())?;
                scram
                    .update(&body)
                    .map_err(|error| format!("SCRAM: {error}"))?;
                frontend::sasl_response(scram.message(), &mut out).map_err(|e| e.to_string())?;
            }
            12 => {
                scram
                    .as_mut()
                    .ok_or_else(|| "a SASL step out of order".to_owned())?
                    .finish(&body)
                    .map_err(|error| {
                        format!("SCRAM: the server's proof does not verify: {error}")
                    })?;
                continue;
            }
            other => {
                return Err(format!(
                    "the server asks for an authentication the door does not speak ({other})"
                ));
            }
        }
        send(stream, &mut out).await?;
    }
}
