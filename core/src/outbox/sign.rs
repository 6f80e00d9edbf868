//! The signature of a workflow request (docs/workflows.md, "Workflows and notifications"): Stripe's
//! scheme. The header `Dbconsole-Signature: t=<unix seconds>,v1=<hex>` holds the lowercase hex
//! HMAC-SHA256, under the shared workflow secret, of `<t>.<body>`: the timestamp, a dot, and
//! the raw body bytes. A receiver recomputes it over the bytes it got, compares in constant
//! time, and rejects a timestamp too far from its clock (a replay of an old request), then
//! drops a repeated `Idempotency-Key` (a replay within the tolerance, or a redelivery).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The name of the signature header.
pub const SIGNATURE_HEADER: &str = "dbconsole-signature";

/// The name of the header that carries the delivery's id, the same on every attempt.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// How far a request's timestamp may be from the receiver's clock by default: 5 minutes.
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The signature header's value for `body` sent at `timestamp` (Unix seconds).
pub fn header(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let digest = mac(secret, timestamp, body).finalize().into_bytes();
    format!("t={timestamp},v1={}", hex::encode(digest))
}

/// Why a signature was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The header is not `t=…,v1=…`.
    #[error("the signature header is malformed")]
    Malformed,
    /// No `v1` signature matches the body.
    #[error("no signature matches the body")]
    Mismatch,
    /// The timestamp is further from now than the tolerance.
    #[error("the signature's timestamp is outside the tolerance")]
    Stale,
}

/// Checks a signature header as a receiver does: some `v1` matches `body` under `secret`
/// (compared in constant time), and `t` is within `tolerance_secs` of `now` (Unix seconds).
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => {
                timestamp = Some(
                    value
                        .parse::<i64>()
                        .map_err(|_| SignatureError::Malformed)?,
                );
            }
            Some(("v1", value)) => {
                signatures.push(hex::decode(value).map_err(|_| SignatureError::Malformed)?);
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let matches = signatures
        .iter()
        .any(|signature| mac(secret, timestamp, body).verify_slice(signature).is_ok());
    if !matches {
        return Err(SignatureError::Mismatch);
    }
    if (now - timestamp).abs() > tolerance_secs {
        return Err(SignatureError::Stale);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_hmac_of_timestamp_dot_body() {
        // RFC 4231-style check against an independent computation: HMAC-SHA256("key",
        // "1700000000.{}").
        let value = header(b"key", 1_700_000_000, b"{}");
        let expected = {
            let mut mac = Hmac::<Sha256>::new_from_slice(b"key").unwrap();
            mac.update(b"1700000000.{}");
            hex::encode(mac.finalize().into_bytes())
        };
        assert_eq!(value, format!("t=1700000000,v1={expected}"));
        assert_eq!(expected.len(), 64);
    }

    #[test]
    fn verify_takes_the_right_body_and_refuses_tampering_other_keys_and_replays() {
        let body = br#"{"workflow_id":"wf"}"#;
        let value = header(b"secret", 1_000, body);
        assert_eq!(verify(b"secret", &value, body, 1_000, 300), Ok(()));
        assert_eq!(verify(b"secret", &value, body, 1_299, 300), Ok(()));
        assert_eq!(
            verify(b"secret", &value, br#"{"workflow_id":"wg"}"#, 1_000, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"other", &value, body, 1_000, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"secret", &value, body, 1_301, 300),
            Err(SignatureError::Stale)
        );
        // The timestamp is signed: moving it forward breaks the signature.
        let moved = value.replace("t=1000", "t=1300");
        assert_eq!(
            verify(b"secret", &moved, body, 1_300, 300),
            Err(SignatureError::Mismatch)
        );
        for malformed in ["", "t=1000", "v1=00", "t=x,v1=00", "t=1000,v1=zz"] {
            assert_eq!(
                verify(b"secret", malformed, body, 1_000, 300),
                Err(SignatureError::Malformed),
                "{malformed}"
            );
        }
    }
}
