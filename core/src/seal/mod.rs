//! Sealing: how secrets are kept. One [`Sealer`] per deployment seals every password,
//! certificate and key when a request brings it, and opens one only when check-connection needs
//! it.
//!
//! Records hold secrets only as [`SealedSecret`]s, so reading, listing and rendering a record
//! never decrypts anything, and every backend, in memory or durable, stores exactly what core
//! sealed. The cipher is XChaCha20-Poly1305 ([`chacha20poly1305`], RustCrypto) under a 32-byte
//! [`SecretKey`], with a fresh random 24-byte nonce per value and per write. Each value is bound
//! to its place by its associated data ([`Place`]: `database/<id>/credential/<credential
//! id>/password`, `database/<id>/tls/<field>`), so a value copied onto another credential, field
//! or record does not open.
//!
//! A durable backend keeps a [key check value](Sealer::key_check) beside its data and compares
//! it at open ([`Sealer::matches_key_check`]): a node started with another key refuses to start
//! instead of answering garbage later.

mod key;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

pub use key::{KeyError, SecretKey};

use crate::model::{SealedSecret, Secret, TlsField};

/// Nonce length of XChaCha20-Poly1305.
const NONCE_LEN: usize = 24;

/// What is sealed as the key check value.
const KEY_CHECK_LABEL: &[u8] = b"dbconsole secret key check";

/// Where a sealed value belongs. Its associated data is `dbconsole/v1` then each part of the
/// place as its length (u32 LE) and bytes: unambiguous whatever the parts contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    aad: Vec<u8>,
    name: String,
}

impl Place {
    /// The password of credential `credential_id` of database `database_id`.
    pub fn password(database_id: &str, credential_id: &str) -> Self {
        Self::from_parts(&[
            "database",
            database_id,
            "credential",
            credential_id,
            "password",
        ])
    }

    /// A TLS field of database `database_id`.
    pub fn tls(database_id: &str, field: TlsField) -> Self {
        Self::from_parts(&["database", database_id, "tls", field.place_name()])
    }

    fn key_check() -> Self {
        Self::from_parts(&["meta", "key_check"])
    }

    /// A place from its parts.
    pub fn from_parts(parts: &[&str]) -> Self {
        let mut aad = b"dbconsole/v1".to_vec();
        for part in parts {
            let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
            aad.extend_from_slice(&len.to_le_bytes());
            aad.extend_from_slice(part.as_bytes());
        }
        Self {
            aad,
            name: parts.join("/"),
        }
    }
}

/// A sealing or opening failed; never says anything about the plaintext.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The value does not open under this key at this place (another key, tampered or moved).
    #[error("a stored secret does not decrypt under the secret key at its place ({0})")]
    Open(String),
    /// The system random number generator failed, or the value is too long to seal.
    #[error("a secret could not be encrypted")]
    Seal,
}

/// Seals and opens secrets under one [`SecretKey`]. Cheap to clone: clones share the cipher and
/// the count of opened secrets.
#[derive(Clone)]
pub struct Sealer {
    inner: Arc<Inner>,
}

struct Inner {
    cipher: XChaCha20Poly1305,
    opened: AtomicU64,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("opened", &self.opened())
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer under this key.
    pub fn new(key: &SecretKey) -> Self {
        let key: &Key = key.bytes().into();
        Self {
            inner: Arc::new(Inner {
                cipher: XChaCha20Poly1305::new(key),
                opened: AtomicU64::new(0),
            }),
        }
    }

    /// A sealer under a new random key, for stores that do not outlive the process (the
    /// in-memory backend, tests).
    pub fn ephemeral() -> Result<Self, KeyError> {
        Ok(Self::new(&SecretKey::generate()?))
    }

    /// Seals `secret` for `place`, with a fresh random nonce.
    pub fn seal(&self, secret: &Secret, place: &Place) -> Result<SealedSecret, SealError> {
        self.seal_bytes(secret.expose(), place)
            .map(SealedSecret::from_stored)
    }

    fn seal_bytes(&self, plaintext: &[u8], place: &Place) -> Result<Bytes, SealError> {
        let nonce = XNonce::try_generate().map_err(|_| SealError::Seal)?;
        let ciphertext = self
            .inner
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad: &place.aad,
                },
            )
            .map_err(|_| SealError::Seal)?;
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(nonce.as_slice());
        sealed.extend_from_slice(&ciphertext);
        Ok(Bytes::from(sealed))
    }

    /// The secret that [`Sealer::seal`] sealed for the same place. Counted (see
    /// [`Sealer::opened`]).
    pub fn open(&self, sealed: &SealedSecret, place: &Place) -> Result<Secret, SealError> {
        self.inner.opened.fetch_add(1, Ordering::Relaxed);
        self.open_bytes(sealed.as_bytes(), place)
    }

    fn open_bytes(&self, sealed: &[u8], place: &Place) -> Result<Secret, SealError> {
        let fail = || SealError::Open(place.name.clone());
        if sealed.len() < NONCE_LEN {
            return Err(fail());
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| fail())?;
        let plaintext = self
            .inner
            .cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: ciphertext,
                    aad: &place.aad,
                },
            )
            .map_err(|_| fail())?;
        Ok(Secret::new(plaintext))
    }

    /// How many secrets this sealer (and its clones) opened since it was made: what proves that
    /// a code path decrypts nothing.
    pub fn opened(&self) -> u64 {
        self.inner.opened.load(Ordering::Relaxed)
    }

    /// A key check value: a fixed label sealed under this key, for a durable backend to keep
    /// beside its data.
    pub fn key_check(&self) -> Result<Vec<u8>, SealError> {
        self.seal_bytes(KEY_CHECK_LABEL, &Place::key_check())
            .map(|bytes| bytes.to_vec())
    }

    /// Whether `stored` is a key check value made under this key.
    pub fn matches_key_check(&self, stored: &[u8]) -> bool {
        self.open_bytes(stored, &Place::key_check())
            .is_ok_and(|label| label.expose() == KEY_CHECK_LABEL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer(byte: u8) -> Sealer {
        Sealer::new(&SecretKey::from_bytes([byte; 32]))
    }

    #[test]
    fn seals_and_opens_at_the_same_place() {
        let sealer = sealer(1);
        let place = Place::password("db_1", "crd_1");
        let sealed = sealer
            .seal(&Secret::from("hunter2-password"), &place)
            .unwrap();
        assert!(!sealed.as_bytes().windows(7).any(|w| w == b"hunter2"));
        assert_eq!(sealer.opened(), 0);
        assert_eq!(
            sealer.open(&sealed, &place).unwrap().expose(),
            b"hunter2-password"
        );
        assert_eq!(sealer.clone().opened(), 1);
        // A fresh nonce each time.
        assert_ne!(
            sealed,
            sealer
                .seal(&Secret::from("hunter2-password"), &place)
                .unwrap()
        );
    }

    #[test]
    fn another_place_or_key_does_not_open() {
        let sealer = sealer(1);
        let place = Place::password("db_1", "crd_1");
        let sealed = sealer.seal(&Secret::from("pw"), &place).unwrap();
        let other = Place::password("db_1", "crd_2");
        assert!(sealer.open(&sealed, &other).is_err());
        assert!(
            sealer
                .open(&sealed, &Place::tls("db_1", TlsField::CaCert))
                .is_err()
        );
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        let sealed_ab = sealer
            .seal(&Secret::from("pw"), &Place::from_parts(&["ab", "c"]))
            .unwrap();
        assert!(
            sealer
                .open(&sealed_ab, &Place::from_parts(&["a", "bc"]))
                .is_err()
        );
        assert!(super::tests::sealer(2).open(&sealed, &place).is_err());
        let cut = SealedSecret::from_stored(sealed.as_bytes()[..10].to_vec());
        assert!(sealer.open(&cut, &place).is_err());
        let message = sealer.open(&sealed, &other).unwrap_err().to_string();
        assert!(message.contains("database/db_1/credential/crd_2/password"));
    }

    #[test]
    fn key_check_recognises_the_key() {
        let check = sealer(1).key_check().unwrap();
        assert!(sealer(1).matches_key_check(&check));
        assert!(!sealer(2).matches_key_check(&check));
        assert!(!sealer(1).matches_key_check(b"garbage"));
    }

    #[test]
    fn debug_shows_no_key() {
        let text = format!("{:?}", sealer(0x41));
        assert!(text.starts_with("Sealer"), "{text}");
        assert!(!text.contains("65"), "{text}");
        assert!(!text.contains("AAAA"), "{text}");
    }
}
