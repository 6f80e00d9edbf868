//! Saved queries as stored (version 1): the sharing by its wire name, with its groups.

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::model::{SavedQuery, SavedQueryId, Sharing, identity};

/// A saved query as stored (version 1).
#[derive(Serialize, Deserialize)]
struct SavedQueryV1 {
    id: String,
    name: String,
    description: String,
    query: String,
    database_id: String,
    credential_id: String,
    tags: Vec<String>,
    /// The sharing's wire name.
    sharing: String,
    /// The groups of a `groups` sharing (empty otherwise).
    groups: Vec<String>,
    author: String,
    created_at: i64,
    updated_at: i64,
}

impl Keyed for SavedQueryV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}

/// Encodes a saved query, version 1.
pub fn encode_saved_query(saved: &SavedQuery) -> Result<Vec<u8>, RecordError> {
    let stored = SavedQueryV1 {
        id: saved.id.as_str().to_owned(),
        name: saved.name.clone(),
        description: saved.description.clone(),
        query: saved.query.clone(),
        database_id: saved.database_id.clone(),
        credential_id: saved.credential_id.clone(),
        tags: saved.tags.clone(),
        sharing: saved.sharing.as_str().to_owned(),
        groups: match &saved.sharing {
            Sharing::Groups(groups) => groups.clone(),
            Sharing::Author | Sharing::Database => Vec::new(),
        },
        author: saved.author.clone(),
        created_at: saved.created_at.as_micros(),
        updated_at: saved.updated_at.as_micros(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the saved query stored under `key` (its id).
pub fn decode_saved_query(key: &str, bytes: &[u8]) -> Result<SavedQuery, RecordError> {
    let stored: SavedQueryV1 = decode_keyed(key, bytes)?;
    let sharing = match stored.sharing.as_str() {
        "author" => Sharing::Author,
        "groups" => Sharing::Groups(stored.groups),
        "database" => Sharing::Database,
        _ => return Err(RecordError::UnknownValue("sharing")),
    };
    Ok(SavedQuery {
        id: SavedQueryId::from_stored(stored.id),
        name: stored.name,
        description: stored.description,
        query: stored.query,
        database_id: stored.database_id,
        credential_id: stored.credential_id,
        tags: stored.tags,
        sharing,
        author: identity::normalized(&stored.author),
        created_at: Timestamp::from_micros(stored.created_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
    })
}
