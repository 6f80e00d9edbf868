//! [`Secret`]: bytes that must never leave the process by accident; [`SealedSecret`]: a secret
//! as it is kept, encrypted (by the `seal` module).

use std::fmt;

use bytes::Bytes;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// A password, certificate or key. Its `Debug` is redacted, it has no `Display` and no
/// `Serialize`, its memory is wiped on drop, and equality is compared in constant time.
/// The only way to the bytes is [`Secret::expose`], which makes every use greppable.
#[derive(Clone, Default)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Wraps secret bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(Zeroizing::new(bytes.into()))
    }

    /// The secret bytes.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The secret as UTF-8 text, when it is (passwords always are).
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// Whether the secret holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value.as_bytes())
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value.into_bytes())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_slice().ct_eq(other.0.as_slice()).into()
    }
}

impl Eq for Secret {}

/// A secret as records hold it: the id of the seal key that sealed it, and `nonce ‖ ciphertext
/// ‖ tag` of XChaCha20-Poly1305, made by `seal::Sealer::seal` and bound to its place (which
/// database, credential and field).
///
/// Records carry secrets only in this form: reading, listing or rendering a record never
/// decrypts anything, and a backend stores these bytes as they are. Only check-connection
/// opens one, with `seal::Sealer::open`, under the key its id names. Cloning is cheap (shared
/// bytes). Its `Debug` shows the key id and the length only.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedSecret {
    key: u32,
    bytes: Bytes,
}

impl SealedSecret {
    /// Sealed bytes made under seal key `key`.
    pub fn new(key: u32, bytes: impl Into<Bytes>) -> Self {
        Self {
            key,
            bytes: bytes.into(),
        }
    }

    /// Wraps sealed bytes stored before seal keys had ids: they were sealed under key 0.
    pub fn from_stored(bytes: impl Into<Bytes>) -> Self {
        Self::new(0, bytes)
    }

    /// The id of the seal key that sealed it.
    pub fn key(&self) -> u32 {
        self.key
    }

    /// The sealed bytes (`nonce ‖ ciphertext ‖ tag`), to store beside the key id.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for SealedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SealedSecret(key {}, {} bytes)",
            self.key,
            self.bytes.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let secret = Secret::from("hunter2");
        assert_eq!(format!("{secret:?}"), "Secret([REDACTED])");
        assert_eq!(
            format!("{:?}", Some(secret.clone())),
            "Some(Secret([REDACTED]))"
        );
        assert_eq!(secret.expose_str(), Some("hunter2"));
    }

    #[test]
    fn sealed_debug_shows_the_length_only() {
        let sealed = SealedSecret::from_stored(b"\x01\x02hunter2".to_vec());
        assert_eq!(format!("{sealed:?}"), "SealedSecret(key 0, 9 bytes)");
    }

    #[test]
    fn equality_compares_content() {
        assert_eq!(Secret::from("a"), Secret::from("a"));
        assert_ne!(Secret::from("a"), Secret::from("ab"));
    }
}
