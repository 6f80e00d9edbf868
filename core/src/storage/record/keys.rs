//! Caller keys as stored: their digests, scopes and the principal they are bound to.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A caller credential as stored (version 1): its digest, never its secret.
#[derive(Serialize, Deserialize)]
pub(super) struct CallerKeyV1 {
    pub(super) id: String,
    pub(super) name: String,
    /// `api-key` or `access-token`.
    pub(super) kind: String,
    /// `full` or `setup`.
    pub(super) scope: String,
    pub(super) digest: [u8; 32],
    pub(super) created_at: i64,
    pub(super) last_used_at: Option<i64>,
}

/// A caller credential as stored (version 2): version 1's fields, and the principal it is
/// bound to.
#[derive(Serialize, Deserialize)]
pub(super) struct CallerKeyV2 {
    pub(super) key: CallerKeyV1,
    pub(super) principal: Option<PrincipalV1>,
}

/// A principal as stored: the role by its wire name; `agent` is not stored (it is the scope's).
#[derive(Serialize, Deserialize)]
pub(super) struct PrincipalV1 {
    pub(super) user: String,
    pub(super) groups: Vec<String>,
    pub(super) role: String,
}

/// The version byte of caller keys written now: [`CallerKeyV2`].
pub(super) const CALLER_KEY_V2: u8 = 2;

/// Encodes a caller credential (its digest; it has no secret to seal), version 2.
pub fn encode_caller_key(key: &CallerKey) -> Result<Vec<u8>, RecordError> {
    let stored = CallerKeyV2 {
        key: CallerKeyV1 {
            id: key.id.as_str().to_owned(),
            name: key.name.clone(),
            kind: key.kind.as_str().to_owned(),
            scope: key.scope.as_str().to_owned(),
            digest: key.digest,
            created_at: key.created_at.as_micros(),
            last_used_at: key.last_used_at.map(Timestamp::as_micros),
        },
        principal: key.principal.as_ref().map(|principal| PrincipalV1 {
            user: principal.user.clone(),
            groups: principal.groups.clone(),
            role: principal.role.as_str().to_owned(),
        }),
    };
    framed(CALLER_KEY_V2, &stored)
}

/// Decodes the caller credential stored under `key` (version 1 or 2).
pub fn decode_caller_key(key: &str, bytes: &[u8]) -> Result<CallerKey, RecordError> {
    let CallerKeyV2 {
        key: stored,
        principal,
    } = match unframed(bytes)? {
        (RECORD_V1, body) => CallerKeyV2 {
            key: postcard::from_bytes(body)?,
            principal: None,
        },
        (CALLER_KEY_V2, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    let scope = parse::<Scope>(&stored.scope, "scope")?;
    let principal = match principal {
        Some(p) => Some(Principal {
            role: parse::<Role>(&p.role, "role")?,
            user: p.user,
            groups: p.groups,
            agent: scope == Scope::Agent,
        }),
        None => None,
    };
    Ok(CallerKey {
        kind: parse::<CredentialKind>(&stored.kind, "credential kind")?,
        scope,
        id: KeyId::from_stored(stored.id),
        name: stored.name,
        digest: stored.digest,
        created_at: Timestamp::from_micros(stored.created_at),
        last_used_at: stored.last_used_at.map(Timestamp::from_micros),
        principal,
    })
}
