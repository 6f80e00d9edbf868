//! Sealing secrets with XChaCha20-Poly1305, each bound to its place by associated data.

use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use dbconsole_core::model::Secret;

use crate::key::SecretKey;

/// Nonce length of XChaCha20-Poly1305.
const NONCE_LEN: usize = 24;

/// What is encrypted under the key and stored in the meta table, to recognise the key at open.
const KEY_CHECK_LABEL: &[u8] = b"dbconsole secret key check";

/// Where a sealed value belongs: the parts its associated data is made of, so that a
/// ciphertext moved to another record, credential or field no longer opens.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place<'a>(pub(crate) &'a [&'a str]);

impl Place<'_> {
    /// `dbconsole/v1` then each part as its length (u32 LE) and bytes: unambiguous whatever
    /// the parts contain.
    fn associated_data(&self) -> Vec<u8> {
        let mut aad = b"dbconsole/v1".to_vec();
        for part in self.0 {
            let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
            aad.extend_from_slice(&len.to_le_bytes());
            aad.extend_from_slice(part.as_bytes());
        }
        aad
    }
}

/// A sealing or opening failed; never says anything about the plaintext.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CryptoError {
    /// The ciphertext does not open under this key at this place (wrong key, tampered or moved).
    #[error("a stored secret does not decrypt under the secret key at its place ({0})")]
    Open(String),
    /// The system random number generator failed, or the value is too long to seal.
    #[error("a secret could not be encrypted")]
    Seal,
}

/// The cipher of one store.
pub(crate) struct Cipher(XChaCha20Poly1305);

impl Cipher {
    pub(crate) fn new(key: &SecretKey) -> Self {
        let key: &Key = key.bytes().into();
        Self(XChaCha20Poly1305::new(key))
    }

    /// `nonce ‖ ciphertext ‖ tag`, with a fresh random nonce.
    pub(crate) fn seal(&self, plaintext: &[u8], place: Place<'_>) -> Result<Vec<u8>, CryptoError> {
        let nonce = XNonce::try_generate().map_err(|_| CryptoError::Seal)?;
        let aad = place.associated_data();
        let ciphertext = self
            .0
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| CryptoError::Seal)?;
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(nonce.as_slice());
        sealed.extend_from_slice(&ciphertext);
        Ok(sealed)
    }

    /// The plaintext of what [`Cipher::seal`] made for the same place.
    pub(crate) fn open(&self, sealed: &[u8], place: Place<'_>) -> Result<Secret, CryptoError> {
        let fail = || CryptoError::Open(place.0.join("/"));
        if sealed.len() < NONCE_LEN {
            return Err(fail());
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| fail())?;
        let aad = place.associated_data();
        let plaintext = self
            .0
            .decrypt(
                &nonce,
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| fail())?;
        Ok(Secret::new(plaintext))
    }

    pub(crate) fn seal_secret(
        &self,
        secret: Option<&Secret>,
        place: Place<'_>,
    ) -> Result<Option<Vec<u8>>, CryptoError> {
        secret
            .map(|secret| self.seal(secret.expose(), place))
            .transpose()
    }

    pub(crate) fn open_secret(
        &self,
        sealed: Option<&[u8]>,
        place: Place<'_>,
    ) -> Result<Option<Secret>, CryptoError> {
        sealed.map(|sealed| self.open(sealed, place)).transpose()
    }

    /// The key check value stored in the meta table.
    pub(crate) fn key_check(&self) -> Result<Vec<u8>, CryptoError> {
        self.seal(KEY_CHECK_LABEL, Place(&["meta", "key_check"]))
    }

    /// Whether `stored` is a key check value made under this key.
    pub(crate) fn matches_key_check(&self, stored: &[u8]) -> bool {
        self.open(stored, Place(&["meta", "key_check"]))
            .is_ok_and(|label| label.expose() == KEY_CHECK_LABEL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher(byte: u8) -> Cipher {
        Cipher::new(&SecretKey::from_bytes([byte; 32]))
    }

    #[test]
    fn seals_and_opens_at_the_same_place() {
        let cipher = cipher(1);
        let place = Place(&["database", "db_1", "credential", "crd_1", "password"]);
        let sealed = cipher.seal(b"hunter2-password", place).unwrap();
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(
            cipher.open(&sealed, place).unwrap().expose(),
            b"hunter2-password"
        );
        // A fresh nonce each time.
        assert_ne!(sealed, cipher.seal(b"hunter2-password", place).unwrap());
    }

    #[test]
    fn another_place_or_key_does_not_open() {
        let cipher = cipher(1);
        let place = Place(&["database", "db_1", "credential", "crd_1", "password"]);
        let sealed = cipher.seal(b"pw", place).unwrap();
        let other = Place(&["database", "db_1", "credential", "crd_2", "password"]);
        assert!(cipher.open(&sealed, other).is_err());
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        let sealed_ab = cipher.seal(b"pw", Place(&["ab", "c"])).unwrap();
        assert!(cipher.open(&sealed_ab, Place(&["a", "bc"])).is_err());
        assert!(super::tests::cipher(2).open(&sealed, place).is_err());
        assert!(cipher.open(&sealed[..10], place).is_err());
    }

    #[test]
    fn key_check_recognises_the_key() {
        let check = cipher(1).key_check().unwrap();
        assert!(cipher(1).matches_key_check(&check));
        assert!(!cipher(2).matches_key_check(&check));
        assert!(!cipher(1).matches_key_check(b"garbage"));
    }
}
