//! [`Secret`]: bytes that must never leave the process by accident.

use std::fmt;

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
    fn equality_compares_content() {
        assert_eq!(Secret::from("a"), Secret::from("a"));
        assert_ne!(Secret::from("a"), Secret::from("ab"));
    }
}
