//! The stored answers of idempotent writes.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The answer of an idempotent write as stored (version 1).
#[derive(Serialize, Deserialize)]
pub(super) struct AnswerV1 {
    pub(super) key: String,
    pub(super) fingerprint: [u8; 32],
    pub(super) status: u16,
    pub(super) etag: Option<String>,
    pub(super) body: Vec<u8>,
    pub(super) at: i64,
}

impl Keyed for AnswerV1 {
    fn stored_key(&self) -> &str {
        &self.key
    }
}

/// Encodes the answer of an idempotent write.
pub fn encode_answer(answer: &StoredAnswer) -> Result<Vec<u8>, RecordError> {
    let StoredAnswer {
        key,
        fingerprint,
        status,
        etag,
        body,
        at,
    } = answer;
    let stored = AnswerV1 {
        key: key.clone(),
        fingerprint: *fingerprint,
        status: *status,
        etag: etag.clone(),
        body: body.clone(),
        at: at.as_micros(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the answer stored under `key`.
pub fn decode_answer(key: &str, bytes: &[u8]) -> Result<StoredAnswer, RecordError> {
    let stored: AnswerV1 = decode_keyed(key, bytes)?;
    Ok(StoredAnswer {
        key: stored.key,
        fingerprint: stored.fingerprint,
        status: stored.status,
        etag: stored.etag,
        body: stored.body,
        at: Timestamp::from_micros(stored.at),
    })
}
