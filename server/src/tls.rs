//! TLS on the server's own listener (`--tls-cert`, `--tls-key`), for deployments without a
//! proxy in front: rustls with aws-lc-rs, TLS 1.2 and 1.3, HTTP/1.1 over it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// What can go wrong reading the certificate and key.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate chain file cannot be read or holds no PEM certificate.
    #[error("cannot read the certificate chain {}: {source}", path.display())]
    Certificates {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rustls_pki_types::pem::Error,
    },
    /// The key file cannot be read or holds no PEM private key.
    #[error("cannot read the private key {}: {source}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rustls_pki_types::pem::Error,
    },
    /// The key does not go with the certificate, or rustls refuses them.
    #[error("the certificate and key cannot serve TLS: {0}")]
    Config(rustls::Error),
}

/// An acceptor for the PEM certificate chain (leaf first) and private key in these files.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    Ok(TlsAcceptor::from(Arc::new(server_config(
        cert,
        key,
        b"http/1.1",
    )?)))
}

/// The rustls configuration of the PEM certificate chain (leaf first) and private key in these
/// files, offering the application protocol `alpn`.
pub fn server_config(
    cert: &Path,
    key: &Path,
    alpn: &[u8],
) -> Result<rustls::ServerConfig, TlsError> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .and_then(|chain| {
            if chain.is_empty() {
                Err(rustls_pki_types::pem::Error::NoItemsFound)
            } else {
                Ok(chain)
            }
        })
        .map_err(|source| TlsError::Certificates {
            path: cert.to_owned(),
            source,
        })?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|source| TlsError::Key {
        path: key.to_owned(),
        source,
    })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}
