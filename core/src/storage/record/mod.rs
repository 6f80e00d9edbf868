//! The stored form of records, for backends that keep each aggregate as bytes (redb, and the
//! record column of PostgreSQL): private structs, separate from [`crate::model`] (which has no
//! `Serialize` on purpose), encoded as one version byte followed by the record in postcard.
//!
//! Postcard is compact and its wire format is specified and frozen for 1.x, but it is not
//! self-describing: a field is identified by its position. So a record struct never changes
//! shape; a new shape is a new struct with a new version byte, and the `decode_*` functions keep
//! reading every older version (upgrading it in memory; the next write stores it in the current
//! version). Enums are stored by their wire names (`postgres`, `admin`, `mask`…), so reordering
//! or extending an enum in the model never changes what a stored record means.

pub(super) mod access;
mod answers;
mod audit;
mod dashboards;
mod databases;
mod deliveries;
mod keys;
mod queries;
mod saved_queries;
mod seal_keys;
mod sessions;
#[cfg(test)]
mod tests;
mod users;

pub use access::{decode_access_control, encode_access_control};
pub use answers::{decode_answer, encode_answer};
pub use audit::{decode_audit_event, encode_audit_event};
pub use dashboards::{decode_dashboard, encode_dashboard};
pub use databases::{decode_database, decode_database_name, encode_database};
pub use deliveries::{decode_delivery, encode_delivery};
pub use keys::{decode_caller_key, encode_caller_key};
pub use queries::{decode_query, encode_query};
pub use saved_queries::{decode_saved_query, encode_saved_query};
pub use seal_keys::{decode_seal_keys, encode_seal_keys};
pub use sessions::{decode_session, encode_session};
pub use users::{decode_user, encode_user};

use crate::model::{
    AccessControl, AccessLevel, Action, ActionId, Actor, Adapter, AuditAction, AuditEvent, Bypass,
    CallerKey, ColumnAction, ColumnRule, Comment, ConnectionParameter, Credential, CredentialId,
    CredentialKind, Dashboard, DashboardId, DataProtection, Database, DatabaseId, Decision,
    Delivery, DeliveryId, DeliveryStatus, EventId, Exemption, InputMapping, KeyId, Mask, Panel,
    PanelDetails, PanelId, PanelInput, Permission, Policy, Presentation, Principal, Provisioning,
    Query, QueryId, QueryRun, QueryStatus, Review, Role, RunFacts, RunOutcome, Scope, SealedSecret,
    StoredAnswer, SubjectKind, Target, Timestamp, TlsMaterial,
};
use crate::seal::SealKeys;
use serde::{Deserialize, Serialize};

/// The version byte of records written now (but databases, [`databases::DATABASE_V2`]).
const RECORD_V1: u8 = 1;

/// A record could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record starts with a version this build does not know.
    #[error("a stored record has format version {0}, which this version of dbconsole cannot read")]
    UnknownVersion(u8),
    /// The record is empty.
    #[error("a stored record is empty")]
    Empty,
    /// Postcard failed.
    #[error("a stored record could not be encoded or decoded: {0}")]
    Postcard(#[from] postcard::Error),
    /// The stored adapter name is unknown.
    #[error("a stored record names an unknown adapter")]
    Adapter,
    /// A stored enum value (subject kind, access level, column action, credential kind or
    /// scope) is unknown.
    #[error("a stored record has an unknown {0}")]
    UnknownValue(&'static str),
    /// A stored secret is too short to hold its seal key id.
    #[error("a stored secret is too short to name its seal key")]
    Secret,
    /// A dashboard's presentation document did not encode or decode as JSON.
    #[error("a stored dashboard's presentation document is not valid")]
    Presentation,
    /// The record stored under a key carries another id.
    #[error("the record stored under {key} carries the id {id}")]
    KeyMismatch {
        /// The table key.
        key: String,
        /// The id inside the record.
        id: String,
    },
}

fn framed(version: u8, record: &impl Serialize) -> Result<Vec<u8>, RecordError> {
    Ok(postcard::to_extend(record, vec![version])?)
}

fn unframed(bytes: &[u8]) -> Result<(u8, &[u8]), RecordError> {
    bytes
        .split_first()
        .map(|(v, rest)| (*v, rest))
        .ok_or(RecordError::Empty)
}

fn stored_secret(secret: Option<&SealedSecret>) -> Option<Vec<u8>> {
    secret.map(|sealed| {
        let mut stored = Vec::with_capacity(4 + sealed.as_bytes().len());
        stored.extend_from_slice(&sealed.key().to_le_bytes());
        stored.extend_from_slice(sealed.as_bytes());
        stored
    })
}

fn sealed_secret(
    version: u8,
    stored: Option<Vec<u8>>,
) -> Result<Option<SealedSecret>, RecordError> {
    let Some(mut stored) = stored else {
        return Ok(None);
    };
    if version == RECORD_V1 {
        return Ok(Some(SealedSecret::from_stored(stored)));
    }
    let key: [u8; 4] = stored
        .get(..4)
        .and_then(|key| key.try_into().ok())
        .ok_or(RecordError::Secret)?;
    stored.drain(..4);
    Ok(Some(SealedSecret::new(u32::from_le_bytes(key), stored)))
}

impl From<RecordError> for super::StorageError {
    fn from(error: RecordError) -> Self {
        super::StorageError::backend(error)
    }
}

/// A stored record that names the key it is stored under.
trait Keyed: serde::de::DeserializeOwned {
    fn stored_key(&self) -> &str;
}

/// Decodes the record stored under `key`: a format version this build reads, and the record of
/// `key` (not one stored under another key by mistake).
fn decode_keyed<T: Keyed>(key: &str, bytes: &[u8]) -> Result<T, RecordError> {
    let stored: T = match unframed(bytes)? {
        (RECORD_V1, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.stored_key() != key {
        return Err(key_mismatch(key, stored.stored_key().to_owned()));
    }
    Ok(stored)
}

fn key_mismatch(key: &str, id: String) -> RecordError {
    RecordError::KeyMismatch {
        key: key.to_owned(),
        id,
    }
}

fn parse<T: std::str::FromStr>(name: &str, what: &'static str) -> Result<T, RecordError> {
    name.parse().map_err(|_| RecordError::UnknownValue(what))
}
