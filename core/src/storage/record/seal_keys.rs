//! The seal keys a store knows: the current id and a key check value per key.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A store's seal keys as stored (version 1): the current key's id, and each key's id with its
/// key check value.
#[derive(Serialize, Deserialize)]
pub(super) struct SealKeysV1 {
    pub(super) current: u32,
    pub(super) keys: Vec<(u32, Vec<u8>)>,
}

/// Encodes a store's seal keys.
pub fn encode_seal_keys(keys: &SealKeys) -> Result<Vec<u8>, RecordError> {
    let SealKeys { current, keys } = keys;
    let stored = SealKeysV1 {
        current: *current,
        keys: keys
            .iter()
            .map(|(id, check)| (*id, check.clone()))
            .collect(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes a store's seal keys.
pub fn decode_seal_keys(bytes: &[u8]) -> Result<SealKeys, RecordError> {
    let stored: SealKeysV1 = match unframed(bytes)? {
        (RECORD_V1, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    Ok(SealKeys {
        current: stored.current,
        keys: stored.keys.into_iter().collect(),
    })
}
