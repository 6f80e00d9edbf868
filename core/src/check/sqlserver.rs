//! SQL Server: [`SqlserverChecker`], with tiberius (TDS 7.x; rustls with aws-lc-rs).
//!
//! The check opens the TCP connection itself (tiberius takes a connected stream), logs in with
//! SQL Server authentication, runs `SELECT 1` and closes. A server that redirects the login
//! (Azure SQL's gateway) is followed once. No connection parameter is sent (they are
//! PostgreSQL's).
//!
//! TLS: `ssl` off asks for no encryption at all (`ENCRYPT_NOT_SUP`; a server that requires
//! encryption anyway gets it, with its certificate not verified, as with any SQL Server client's
//! `Encrypt=false`); `ssl` on requires encryption (a server that cannot encrypt is refused). Without a CA certificate the
//! server certificate is not verified. With one, tiberius verifies the chain against it (and the
//! platform's trust store) **and the host name**: tiberius builds its own rustls verifier and has
//! no chain-only mode, so for this adapter a CA certificate always means chain and host name. A
//! stored client certificate and key are presented; tiberius reads them from files, so they are
//! written to a private temporary directory (mode 0700) that is removed when the check ends.
//! Writing and removing those files is blocking file I/O, so both run on tokio's blocking pool
//! (`spawn_blocking`), never on an async worker thread.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use base64::Engine as _;
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::TokioAsyncWriteCompatExt;

use super::{CheckTarget, ConnectionChecker, error_chain, tls};

/// Checks SQL Server credentials.
#[derive(Clone, Debug, Default)]
pub struct SqlserverChecker {}

impl SqlserverChecker {
    /// The checker.
    pub fn new() -> Self {
        Self {}
    }
}

#[async_trait]
impl ConnectionChecker for SqlserverChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        let (mut client, _files) = connect(target).await?;
        let answer = match client.simple_query("SELECT 1").await {
            Ok(stream) => stream.into_results().await.map(drop),
            Err(error) => Err(error),
        };
        let closed = client.close().await;
        answer.map_err(|error| error_chain(&error))?;
        closed.map_err(|error| error_chain(&error))
    }
}

/// A logged-in client for `target` (the checker's: same TLS, same routing), and the temporary
/// files of its client certificate, which must live as long as it.
pub(crate) async fn connect(
    target: &CheckTarget,
) -> Result<(Client<tokio_util::compat::Compat<TcpStream>>, ClientFiles), String> {
    let (config, files) = config(target).await?;
    let tcp = match target.connect_via {
        Some(via) => TcpStream::connect(via).await,
        None => TcpStream::connect((target.host.as_str(), target.port)).await,
    }
    .map_err(|error| {
        format!(
            "error connecting to {}:{}: {}",
            target.host,
            target.port,
            error_chain(&error)
        )
    })?;
    let _ = tcp.set_nodelay(true);
    let client = match Client::connect(config.clone(), tcp.compat_write()).await {
        Ok(client) => client,
        Err(tiberius::error::Error::Routing { host, port }) if target.connect_via.is_none() => {
            let mut routed = config;
            routed.host(&host);
            routed.port(port);
            let tcp = TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|error| {
                    format!(
                        "error connecting to {host}:{port} (the server redirected the \
                             login there): {}",
                        error_chain(&error)
                    )
                })?;
            let _ = tcp.set_nodelay(true);
            Client::connect(routed, tcp.compat_write())
                .await
                .map_err(|error| error_chain(&error))?
        }
        Err(error) => return Err(error_chain(&error)),
    };
    Ok((client, files))
}

/// The tiberius configuration, and the temporary directory holding the client certificate files
/// (kept until the check ends).
async fn config(target: &CheckTarget) -> Result<(Config, ClientFiles), String> {
    let mut config = Config::new();
    config.host(&target.host);
    config.port(target.port);
    config.database(&target.database);
    config.application_name("dbconsole");
    let password = target
        .password
        .as_ref()
        .map(|password| String::from_utf8_lossy(password.expose()).into_owned())
        .unwrap_or_default();
    config.authentication(AuthMethod::sql_server(&target.username, password));
    if !target.ssl {
        config.encryption(EncryptionLevel::NotSupported);
        // A server that requires encryption makes tiberius encrypt anyway; like every SQL Server
        // client with `Encrypt=false`, it then does not verify the certificate.
        config.trust_cert();
        return Ok((config, ClientFiles(None)));
    }
    config.encryption(EncryptionLevel::Required);
    match &target.ca_cert {
        None => config.trust_cert(),
        Some(ca) => {
            tls::root_store(target)?; // a broken bundle is reported as such
            config.trust_cert_ca_bundle(ca.expose().to_vec());
        }
    }
    let files = match tls::client_identity(target)? {
        Some(identity) => {
            let (dir, cert_path, key_path) =
                tokio::task::spawn_blocking(move || write_client_identity(identity))
                    .await
                    .map_err(|error| format!("client certificate: {error}"))??;
            config.client_certificate(cert_path, key_path);
            ClientFiles(Some(dir))
        }
        None => ClientFiles(None),
    };
    Ok((config, files))
}

/// The temporary directory of the client certificate files, if any. Dropping it removes the
/// directory on the blocking pool (also when the check is cancelled by its timeout).
pub(crate) struct ClientFiles(Option<tempfile::TempDir>);

impl Drop for ClientFiles {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(move || drop(dir))),
                Err(_) => drop(dir),
            }
        }
    }
}

/// Writes the client certificate chain and key as PEM files into a new private temporary
/// directory: the directory and the two paths. Blocking: runs on the blocking pool.
fn write_client_identity(
    (chain, key): tls::ClientIdentity,
) -> Result<(tempfile::TempDir, PathBuf, PathBuf), String> {
    let dir = tempfile::TempDir::new()
        .map_err(|error| format!("client certificate: {}", error_chain(&error)))?;
    let cert_path = dir.path().join("client.pem");
    let key_path = dir.path().join("client.key");
    let mut cert_pem = String::new();
    for cert in &chain {
        cert_pem.push_str(&pem("CERTIFICATE", cert.as_ref()));
    }
    let label = match &key {
        rustls::pki_types::PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        rustls::pki_types::PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => "PRIVATE KEY",
    };
    write_private(&cert_path, cert_pem.as_bytes())?;
    write_private(&key_path, pem(label, key.secret_der()).as_bytes())?;
    Ok((dir, cert_path, key_path))
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|error| format!("client certificate: {}", error_chain(&error)))
}
