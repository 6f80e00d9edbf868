//! Browser sessions and sign-in links as stored: their digests, never their secrets.

use super::keys::PrincipalV1;
#[allow(clippy::wildcard_imports)]
use super::*;
use crate::model::{Session, SessionId, SessionKind, SignInMethod};

/// A session or sign-in link as stored (version 1).
#[derive(Serialize, Deserialize)]
struct SessionV1 {
    id: String,
    /// `browser` or `sign-in-link`.
    kind: String,
    digest: [u8; 32],
    principal: PrincipalV1,
    agent: bool,
    /// The scope's wire name.
    scope: String,
    key_id: Option<String>,
    /// `key`, `link` or `oidc`.
    method: String,
    created_at: i64,
    last_seen_at: i64,
    expires_at: i64,
}

/// Encodes a session (its digest; it has no secret to seal), version 1.
pub fn encode_session(session: &Session) -> Result<Vec<u8>, RecordError> {
    let stored = SessionV1 {
        id: session.id.as_str().to_owned(),
        kind: session.kind.as_str().to_owned(),
        digest: session.digest,
        principal: PrincipalV1 {
            user: session.principal.user.clone(),
            groups: session.principal.groups.clone(),
            role: session.principal.role.as_str().to_owned(),
        },
        agent: session.principal.agent,
        scope: session.scope.as_str().to_owned(),
        key_id: session.key_id.as_ref().map(|id| id.as_str().to_owned()),
        method: session.method.as_str().to_owned(),
        created_at: session.created_at.as_micros(),
        last_seen_at: session.last_seen_at.as_micros(),
        expires_at: session.expires_at.as_micros(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the session stored under `key`.
pub fn decode_session(key: &str, bytes: &[u8]) -> Result<Session, RecordError> {
    let stored: SessionV1 = match unframed(bytes)? {
        (RECORD_V1, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    Ok(Session {
        id: SessionId::from_stored(stored.id),
        kind: parse::<SessionKind>(&stored.kind, "session kind")?,
        digest: stored.digest,
        principal: Principal {
            role: parse::<Role>(&stored.principal.role, "role")?,
            user: stored.principal.user,
            groups: stored.principal.groups,
            agent: stored.agent,
        },
        scope: parse::<Scope>(&stored.scope, "scope")?,
        key_id: stored.key_id.map(KeyId::from_stored),
        method: parse::<SignInMethod>(&stored.method, "sign-in method")?,
        created_at: Timestamp::from_micros(stored.created_at),
        last_seen_at: Timestamp::from_micros(stored.last_seen_at),
        expires_at: Timestamp::from_micros(stored.expires_at),
    })
}
