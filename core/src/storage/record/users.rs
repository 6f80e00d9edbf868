//! Users as stored: their names, groups, role, times, settings and passkeys (public keys only).

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::model::{User, UserPasskey, UserSettings, UserSource};

/// A passkey as stored (version 1, inside [`UserV1`]).
#[derive(Serialize, Deserialize)]
struct PasskeyV1 {
    id: String,
    name: String,
    created_at: i64,
    last_used_at: Option<i64>,
    credential: String,
}

/// A user as stored (version 1).
#[derive(Serialize, Deserialize)]
struct UserV1 {
    name: String,
    display_name: String,
    groups: Vec<String>,
    /// The role's wire name.
    role: String,
    /// The source's wire name.
    source: String,
    created_at: i64,
    last_sign_in_at: Option<i64>,
    deactivated_at: Option<i64>,
    theme: Option<String>,
    time_zone: Option<String>,
    handle: [u8; 16],
    passkeys: Vec<PasskeyV1>,
    updated_at: i64,
}

impl Keyed for UserV1 {
    fn stored_key(&self) -> &str {
        &self.name
    }
}

/// Encodes a user, version 1.
pub fn encode_user(user: &User) -> Result<Vec<u8>, RecordError> {
    let stored = UserV1 {
        name: user.name.clone(),
        display_name: user.display_name.clone(),
        groups: user.groups.clone(),
        role: user.role.as_str().to_owned(),
        source: user.source.as_str().to_owned(),
        created_at: user.created_at.as_micros(),
        last_sign_in_at: user.last_sign_in_at.map(Timestamp::as_micros),
        deactivated_at: user.deactivated_at.map(Timestamp::as_micros),
        theme: user.settings.theme.clone(),
        time_zone: user.settings.time_zone.clone(),
        handle: user.handle,
        passkeys: user
            .passkeys
            .iter()
            .map(|p| PasskeyV1 {
                id: p.id.clone(),
                name: p.name.clone(),
                created_at: p.created_at.as_micros(),
                last_used_at: p.last_used_at.map(Timestamp::as_micros),
                credential: p.credential.clone(),
            })
            .collect(),
        updated_at: user.updated_at.as_micros(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the user stored under `key` (its name).
pub fn decode_user(key: &str, bytes: &[u8]) -> Result<User, RecordError> {
    let stored: UserV1 = decode_keyed(key, bytes)?;
    Ok(User {
        role: parse::<Role>(&stored.role, "role")?,
        source: parse::<UserSource>(&stored.source, "user source")?,
        name: stored.name,
        display_name: stored.display_name,
        groups: stored.groups,
        created_at: Timestamp::from_micros(stored.created_at),
        last_sign_in_at: stored.last_sign_in_at.map(Timestamp::from_micros),
        deactivated_at: stored.deactivated_at.map(Timestamp::from_micros),
        settings: UserSettings {
            theme: stored.theme,
            time_zone: stored.time_zone,
        },
        handle: stored.handle,
        passkeys: stored
            .passkeys
            .into_iter()
            .map(|p| UserPasskey {
                id: p.id,
                name: p.name,
                created_at: Timestamp::from_micros(p.created_at),
                last_used_at: p.last_used_at.map(Timestamp::from_micros),
                credential: p.credential,
            })
            .collect(),
        updated_at: Timestamp::from_micros(stored.updated_at),
    })
}
