//! The one TLS stack of every checker: rustls with the aws-lc-rs provider.
//!
//! The rules (docs/api.md, "Check connection", TLS):
//!
//! | stored | verification |
//! |---|---|
//! | `ssl` false | none: plain connection |
//! | `ssl`, no CA certificate | encrypted, the certificate is not verified ([`Verify::Nothing`]) |
//! | `ssl` + CA certificate | the chain is verified against the CA, the host name is not ([`Verify::Chain`], libpq's `verify-ca`) |
//! | + `verify_server_hostname` | chain and host name ([`Verify::ChainAndHost`], libpq's `verify-full`) |
//!
//! Every certificate of the stored CA bundle (root and intermediates) is a trust anchor: servers
//! usually send only their leaf certificate, and a chain that needs an intermediate the server
//! does not send must still verify. rustls's stock verifier always checks the name, so the
//! chain-only mode is a verifier of its own ([`NameUncheckedVerifier`]). A stored client certificate
//! and key are presented to the server.

// Each checker uses a part of this module; with only some of them compiled in, the rest is idle.
#![cfg_attr(
    not(all(
        feature = "postgres",
        feature = "mysql",
        feature = "clickhouse",
        feature = "sqlserver"
    )),
    allow(dead_code)
)]

use std::sync::{Arc, Once};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_cert_signed_by_trust_anchor};
use rustls::crypto::{CryptoProvider, aws_lc_rs, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::CheckTarget;
use crate::model::Secret;

/// How the server certificate is verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verify {
    /// Encrypted, not verified (`ssl` without a CA certificate).
    Nothing,
    /// The chain against the CA certificate(s); not the host name.
    Chain,
    /// The chain and the host name.
    ChainAndHost,
}

impl Verify {
    /// The mode the target's settings ask for (meaningful when `target.ssl`).
    pub(crate) fn of(target: &CheckTarget) -> Self {
        match (&target.ca_cert, target.verify_server_hostname) {
            (None, _) => Verify::Nothing,
            (Some(_), false) => Verify::Chain,
            (Some(_), true) => Verify::ChainAndHost,
        }
    }
}

/// Makes aws-lc-rs the process-wide rustls provider, for the drivers that build their own
/// `ClientConfig` with `ClientConfig::builder()` (mysql_async): with a single provider compiled
/// in rustls finds it anyway; this keeps that true if another crate ever adds `ring`.
pub(crate) fn install_default_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first: that one stays, which is fine.
        let _ = aws_lc_rs::default_provider().install_default();
    });
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(aws_lc_rs::default_provider())
}

fn is_pem(bytes: &[u8]) -> bool {
    bytes.windows(11).any(|window| window == b"-----BEGIN ")
}

/// Every certificate of a stored certificate field (PEM with one or more certificates, or one
/// DER certificate). `what` names the field in messages; the content never appears in them.
pub(crate) fn certificates(
    secret: &Secret,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = secret.expose();
    if !is_pem(bytes) {
        if bytes.is_empty() {
            return Err(format!("the {what} is empty"));
        }
        return Ok(vec![CertificateDer::from(bytes.to_vec())]);
    }
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("the {what} is not valid PEM: {error}"))?;
    if certs.is_empty() {
        return Err(format!("the {what} holds no certificate"));
    }
    Ok(certs)
}

/// The stored private key (PEM: PKCS#8, PKCS#1 or SEC1; or DER).
pub(crate) fn private_key(secret: &Secret) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = secret.expose();
    if is_pem(bytes) {
        PrivateKeyDer::from_pem_slice(bytes)
            .map_err(|error| format!("the client key (ssl_key) is not a valid PEM key: {error}"))
    } else {
        PrivateKeyDer::try_from(bytes.to_vec())
            .map_err(|error| format!("the client key (ssl_key) is not a valid DER key: {error}"))
    }
}

/// The CA certificates of the target, as a trust store (every certificate of the bundle is an
/// anchor). `None` when no CA certificate is stored.
pub(crate) fn root_store(target: &CheckTarget) -> Result<Option<RootCertStore>, String> {
    let Some(ca) = &target.ca_cert else {
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    for cert in certificates(ca, "CA certificate (ssl_ca_cert)")? {
        roots
            .add(cert)
            .map_err(|error| format!("the CA certificate (ssl_ca_cert) is not usable: {error}"))?;
    }
    Ok(Some(roots))
}

/// The client certificate chain and key to present, when both are stored.
pub(crate) type ClientIdentity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The stored client identity: `None` without a client certificate; an error when only one of
/// certificate and key is stored.
pub(crate) fn client_identity(target: &CheckTarget) -> Result<Option<ClientIdentity>, String> {
    match (&target.client_cert, &target.client_key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some((
            certificates(cert, "client certificate (ssl_cert)")?,
            private_key(key)?,
        ))),
        (Some(_), None) => {
            Err("a client certificate (ssl_cert) is stored without its key (ssl_key)".to_owned())
        }
        (None, Some(_)) => {
            Err("a client key (ssl_key) is stored without its certificate (ssl_cert)".to_owned())
        }
    }
}

/// The rustls configuration for an `ssl` target, by the rules of this module.
pub(crate) fn client_config(target: &CheckTarget) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS configuration: {error}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = match (Verify::of(target), root_store(target)?) {
        (Verify::ChainAndHost, Some(roots)) => {
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|error| format!("TLS configuration: {error}"))?
        }
        (Verify::Chain, Some(roots)) => Arc::new(NameUncheckedVerifier {
            roots: Some(Arc::new(roots)),
            provider,
        }),
        _ => Arc::new(NameUncheckedVerifier {
            roots: None,
            provider,
        }),
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    match client_identity(target)? {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|error| format!("the client certificate (ssl_cert) is not usable: {error}")),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// A configuration for connectors that need one even for a plain connection; never used for a
/// handshake.
pub(crate) fn placeholder_config() -> Result<ClientConfig, String> {
    Ok(ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS configuration: {error}"))?
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth())
}

/// A verifier that never compares the host name. With `roots`, the chain must lead to one of
/// the stored certificates (a CA certificate without `verify_server_hostname`: libpq's
/// `verify-ca`); without, any certificate is accepted (`ssl` without a CA certificate: the
/// connection is encrypted, the peer is not authenticated). Either way the handshake signatures
/// are checked.
#[derive(Debug)]
struct NameUncheckedVerifier {
    roots: Option<Arc<RootCertStore>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for NameUncheckedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_and_garbage_certificates() {
        let der = Secret::new(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        assert_eq!(certificates(&der, "CA").unwrap().len(), 1);
        let empty = Secret::new(Vec::new());
        assert_eq!(certificates(&empty, "CA").unwrap_err(), "the CA is empty");
        let no_cert =
            Secret::from("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
        assert_eq!(
            certificates(&no_cert, "CA").unwrap_err(),
            "the CA holds no certificate"
        );
    }
}
