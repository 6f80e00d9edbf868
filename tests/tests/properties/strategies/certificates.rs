//! Certificates and keys: random PEM documents and the TLS material a body may send.

use proptest::option::weighted;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// A PEM document: the text, its random body line, and the base64 that is sent.
#[derive(Clone, Debug)]
pub(crate) struct Pem {
    pub(crate) text: String,
    pub(crate) body: String,
    pub(crate) base64: String,
}

pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(crate) fn pem(label: &'static str) -> BoxedStrategy<Pem> {
    "[A-Za-z0-9+/]{48,96}"
        .prop_map(move |body| {
            let text = format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n");
            Pem {
                base64: base64(text.as_bytes()),
                text,
                body,
            }
        })
        .boxed()
}

/// Certificate and key material a body may send (`ssl_ca_cert`, `ssl_cert`, `ssl_key`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Tls {
    pub(crate) ca: Option<Pem>,
    pub(crate) cert: Option<Pem>,
    pub(crate) key: Option<Pem>,
}

impl Tls {
    pub(crate) fn add_to(&self, body: &mut Map<String, Value>) {
        for (key, pem) in [
            ("ssl_ca_cert", &self.ca),
            ("ssl_cert", &self.cert),
            ("ssl_key", &self.key),
        ] {
            if let Some(pem) = pem {
                body.insert(key.to_owned(), pem.base64.clone().into());
            }
        }
    }

    pub(crate) fn pems(&self) -> impl Iterator<Item = &Pem> {
        [&self.ca, &self.cert, &self.key].into_iter().flatten()
    }
}

pub(crate) fn some_tls(p: f64) -> BoxedStrategy<Tls> {
    (
        weighted(p, pem("CERTIFICATE")),
        weighted(p, pem("CERTIFICATE")),
        weighted(p, pem("PRIVATE KEY")),
    )
        .prop_map(|(ca, cert, key)| Tls { ca, cert, key })
        .boxed()
}

pub(crate) fn full_tls() -> BoxedStrategy<Tls> {
    (pem("CERTIFICATE"), pem("CERTIFICATE"), pem("PRIVATE KEY"))
        .prop_map(|(ca, cert, key)| Tls {
            ca: Some(ca),
            cert: Some(cert),
            key: Some(key),
        })
        .boxed()
}

/// The bytes a checker must receive for a PEM, as text.
pub(crate) fn pem_text(pem: Option<&Pem>) -> Option<String> {
    pem.map(|pem| pem.text.clone())
}
