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

/// Accepts door connections until `shutdown` ends, each served on its own task; then ends the
/// open door sessions.
pub async fn serve(
    listener: TcpListener,
    door: DoorHandle,
    tls: TlsAcceptor,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
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
        let door = door.clone();
        let tls = tls.clone();
        tokio::spawn(async move { door.serve(stream, peer, tls).await });
    }
    door.close_all();
}
