//! The PostgreSQL wire door's listener (`--door-listen`, docs/door.md): its TLS certificate
//! and the accept loop that hands each connection to the service's door.
//!
//! The certificate is `--door-tls-cert`/`--door-tls-key`, else the server's own
//! (`--tls-cert`/`--tls-key`), else one made at the first start in the data directory
//! (`door-cert.pem`, `door-key.pem`, the key readable by the server's user only), valid for
//! `localhost`, `127.0.0.1` and the door's host: clients connect with `sslmode=require`, and
//! `verify-full` needs a real certificate (or that one's file as `sslrootcert`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dbconsole_core::service::DoorHandle;
use sha2::{Digest as _, Sha256};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::tls::{TlsError, server_config};

/// The application protocol a direct-TLS PostgreSQL client asks for.
const ALPN: &[u8] = b"postgresql";

/// What can go wrong making or reading the door's certificate.
#[derive(Debug, thiserror::Error)]
pub enum DoorTlsError {
    /// The certificate or key does not load.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The self-signed certificate could not be made.
    #[error("cannot make the door's certificate: {0}")]
    Generate(String),
    /// It could not be written to the data directory.
    #[error("cannot write the door's certificate to {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The door's TLS: the acceptor, and the SHA-256 fingerprint of its certificate when the
/// server made it (printed at the start, so a client can pin it).
pub fn acceptor(
    given: Option<(&Path, &Path)>,
    data_dir: &Path,
    host: &str,
) -> Result<(TlsAcceptor, Option<String>), DoorTlsError> {
    if let Some((cert, key)) = given {
        let config = server_config(cert, key, ALPN)?;
        return Ok((TlsAcceptor::from(Arc::new(config)), None));
    }
    let cert = data_dir.join("door-cert.pem");
    let key = data_dir.join("door-key.pem");
    if !cert.exists() || !key.exists() {
        make_self_signed(&cert, &key, host)?;
    }
    let config = server_config(&cert, &key, ALPN)?;
    let fingerprint = std::fs::read(&cert).ok().and_then(|pem| {
        rustls_pki_types::pem::PemObject::from_pem_slice(&pem)
            .ok()
            .map(|der: rustls_pki_types::CertificateDer<'static>| {
                let digest = Sha256::digest(der.as_ref());
                digest
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect::<Vec<_>>()
                    .join(":")
            })
    });
    Ok((TlsAcceptor::from(Arc::new(config)), fingerprint))
}

fn make_self_signed(cert: &Path, key: &Path, host: &str) -> Result<(), DoorTlsError> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    if !host.is_empty() && !names.iter().any(|n| n == host) {
        names.push(host.to_owned());
    }
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|error| DoorTlsError::Generate(error.to_string()))?;
    let write = |path: &Path, text: String, private: bool| {
        let result = if private {
            write_private(path, text.as_bytes())
        } else {
            std::fs::write(path, text)
        };
        result.map_err(|source| DoorTlsError::Write {
            path: path.to_owned(),
            source,
        })
    };
    write(key, made.signing_key.serialize_pem(), true)?;
    write(cert, made.cert.pem(), false)?;
    Ok(())
}

/// Writes a file only its owner reads.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Accepts door connections until `shutdown` ends, then ends the open door sessions.
///
/// The sessions run on `threads` threads of their own, each a single-threaded runtime that a
/// connection stays on (given in turn): a session's two directions and its database's answers
/// then meet on one thread, without the wake-ups across the server's worker threads that cost
/// a relayed statement most of its time (docs/door.md, "Speed").
pub async fn serve(
    listener: TcpListener,
    door: DoorHandle,
    tls: TlsAcceptor,
    threads: usize,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut workers = Vec::new();
    for index in 0..threads.max(1) {
        match worker(index, door.clone(), tls.clone()) {
            Ok(sender) => workers.push(sender),
            Err(error) => tracing::error!(%error, "the door could not start a thread"),
        }
    }
    tokio::pin!(shutdown);
    let mut next = 0usize;
    loop {
        let accepted: (tokio::net::TcpStream, SocketAddr) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "the door could not accept a connection");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (stream, peer) = accepted;
        // Handed to a door thread as a plain socket (it registers it with its own runtime);
        // without one, it is served here.
        if let Some(sender) = workers.get(next % workers.len().max(1)) {
            next = next.wrapping_add(1);
            match stream.into_std() {
                Ok(stream) => {
                    let _ = sender.send((stream, peer));
                }
                Err(error) => tracing::warn!(%error, "the door could not hand a connection over"),
            }
        } else {
            let door = door.clone();
            let tls = tls.clone();
            tokio::spawn(async move { door.serve(stream, peer, tls).await });
        }
    }
    door.close_all();
}

type Accepted = (std::net::TcpStream, SocketAddr);

/// Starts door thread `index`: it serves each connection sent to it until the sender is
/// dropped, then waits a little for its sessions' last words.
fn worker(
    index: usize,
    door: DoorHandle,
    tls: TlsAcceptor,
) -> std::io::Result<tokio::sync::mpsc::UnboundedSender<Accepted>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Accepted>();
    std::thread::Builder::new()
        .name(format!("door-{index}"))
        .spawn(move || {
            runtime.block_on(async move {
                let mut sessions = tokio::task::JoinSet::new();
                while let Some((stream, peer)) = receiver.recv().await {
                    while sessions.try_join_next().is_some() {}
                    let stream = match tokio::net::TcpStream::from_std(stream) {
                        Ok(stream) => stream,
                        Err(error) => {
                            tracing::warn!(%error, "the door could not take a connection");
                            continue;
                        }
                    };
                    let door = door.clone();
                    let tls = tls.clone();
                    sessions.spawn(async move { door.serve(stream, peer, tls).await });
                }
                let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
                    while sessions.join_next().await.is_some() {}
                })
                .await;
            });
        })?;
    Ok(sender)
}
