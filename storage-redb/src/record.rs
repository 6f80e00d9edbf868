//! The stored format of records: private structs, separate from `dbconsole_core::model`, encoded
//! as one version byte followed by the record in postcard.
//!
//! Postcard is compact and its wire format is specified and frozen for 1.x, but it is not
//! self-describing: a field is identified by its position. So a record struct never changes
//! shape; a new shape is a new struct with a new version byte, and [`decode_database`] /
//! [`decode_dashboard`] keep reading every older version (upgrading it in memory; the next write
//! stores it in the current version).

use dbconsole_core::model::{
    Action, ActionId, Adapter, ConnectionParameter, Credential, CredentialId, Dashboard,
    DashboardId, Database, DatabaseId, InputMapping, Panel, PanelDetails, PanelId, PanelInput,
    Secret, Timestamp, TlsMaterial,
};
use serde::{Deserialize, Serialize};

use crate::crypto::{Cipher, CryptoError, Place};

/// The version byte of records written now.
const RECORD_V1: u8 = 1;

/// A record could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
    /// The record starts with a version this build does not know.
    #[error("a stored record has format version {0}, which this version of dbconsole cannot read")]
    UnknownVersion(u8),
    /// The record is empty.
    #[error("a stored record is empty")]
    Empty,
    /// Postcard failed.
    #[error("a stored record could not be encoded or decoded: {0}")]
    Postcard(#[from] postcard::Error),
    /// A secret could not be sealed or opened.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    /// The stored adapter name is unknown.
    #[error("a stored record names an unknown adapter")]
    Adapter,
    /// The record stored under a key carries another id.
    #[error("the record stored under {key} carries the id {id}")]
    KeyMismatch {
        /// The table key.
        key: String,
        /// The id inside the record.
        id: String,
    },
}

/// A database as stored (version 1). Secrets are sealed: `nonce ‖ ciphertext ‖ tag`.
#[derive(Serialize, Deserialize)]
pub(crate) struct DatabaseV1 {
    pub(crate) id: String,
    pub(crate) api_id: Option<String>,
    pub(crate) name: String,
    /// The adapter's wire name (`postgres`…), robust to reordering the enum.
    adapter: String,
    hostname: String,
    port: Option<u16>,
    database: String,
    ssl: bool,
    verify_server_hostname: bool,
    restrict_access: bool,
    review_bypass_allowed: bool,
    group: Option<String>,
    slack_channel: Option<String>,
    tunnel_id: Option<String>,
    ai_enabled: bool,
    ai_max_rows: u32,
    connection_parameters: Vec<(String, String)>,
    credentials: Vec<CredentialV1>,
    ca_cert: Option<Vec<u8>>,
    client_cert: Option<Vec<u8>>,
    client_key: Option<Vec<u8>>,
    inserted_at: i64,
    updated_at: i64,
}

#[derive(Serialize, Deserialize)]
struct CredentialV1 {
    id: String,
    username: String,
    password: Option<Vec<u8>>,
    hostname: Option<String>,
    ai_allowed: bool,
    timeout: Option<u32>,
    reviews_required: u32,
    default_credential: bool,
}

#[derive(Serialize, Deserialize)]
struct DashboardV1 {
    id: String,
    name: String,
    restricted_access: bool,
    archived_at: Option<i64>,
    panels: Vec<PanelV1>,
    inserted_at: i64,
    updated_at: i64,
}

#[derive(Serialize, Deserialize)]
struct PanelV1 {
    id: String,
    title: String,
    inputs: Vec<(String, String)>,
    actions: Vec<ActionV1>,
    details: PanelDetailsV1,
}

/// New kinds of panel are appended (postcard numbers variants by position).
#[derive(Serialize, Deserialize)]
enum PanelDetailsV1 {
    Query {
        query: String,
        credential_id: String,
    },
}

#[derive(Serialize, Deserialize)]
struct ActionV1 {
    id: String,
    label: Option<String>,
    workflow_id: Option<String>,
    input_mappings: Vec<InputMappingV1>,
}

#[derive(Serialize, Deserialize)]
struct InputMappingV1 {
    workflow_input_key: String,
    column: Option<String>,
    prompt_user: bool,
    prompt: Option<String>,
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

/// Encodes a database, sealing its secrets.
pub(crate) fn encode_database(cipher: &Cipher, db: &Database) -> Result<Vec<u8>, RecordError> {
    let id = db.id.as_str();
    let seal_tls = |secret: Option<&Secret>, field: &str| {
        cipher.seal_secret(secret, Place(&["database", id, "tls", field]))
    };
    let credentials = db
        .credentials
        .iter()
        .map(|c| {
            Ok(CredentialV1 {
                id: c.id.as_str().to_owned(),
                username: c.username.clone(),
                password: cipher.seal_secret(
                    c.password.as_ref(),
                    Place(&["database", id, "credential", c.id.as_str(), "password"]),
                )?,
                hostname: c.hostname.clone(),
                ai_allowed: c.ai_allowed,
                timeout: c.timeout,
                reviews_required: c.reviews_required,
                default_credential: c.default_credential,
            })
        })
        .collect::<Result<Vec<_>, CryptoError>>()?;
    let stored = DatabaseV1 {
        id: id.to_owned(),
        api_id: db.api_id.clone(),
        name: db.name.clone(),
        adapter: db.adapter.as_str().to_owned(),
        hostname: db.hostname.clone(),
        port: db.port,
        database: db.database.clone(),
        ssl: db.ssl,
        verify_server_hostname: db.verify_server_hostname,
        restrict_access: db.restrict_access,
        review_bypass_allowed: db.review_bypass_allowed,
        group: db.group.clone(),
        slack_channel: db.slack_channel.clone(),
        tunnel_id: db.tunnel_id.clone(),
        ai_enabled: db.ai_enabled,
        ai_max_rows: db.ai_max_rows,
        connection_parameters: db
            .connection_parameters
            .iter()
            .map(|p| (p.name.clone(), p.value.clone()))
            .collect(),
        credentials,
        ca_cert: seal_tls(db.tls.ca_cert.as_ref(), "ca_cert")?,
        client_cert: seal_tls(db.tls.client_cert.as_ref(), "client_cert")?,
        client_key: seal_tls(db.tls.client_key.as_ref(), "client_key")?,
        inserted_at: db.inserted_at.as_micros(),
        updated_at: db.updated_at.as_micros(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes a stored database without opening its secrets (for its id and name), checking that
/// it is the record of `key`.
pub(crate) fn decode_database_stored(key: &str, bytes: &[u8]) -> Result<DatabaseV1, RecordError> {
    let stored: DatabaseV1 = match unframed(bytes)? {
        (RECORD_V1, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.id != key {
        return Err(RecordError::KeyMismatch {
            key: key.to_owned(),
            id: stored.id,
        });
    }
    Ok(stored)
}

/// Decodes the database stored under `key`, opening its secrets.
pub(crate) fn decode_database(
    cipher: &Cipher,
    key: &str,
    bytes: &[u8],
) -> Result<Database, RecordError> {
    let stored = decode_database_stored(key, bytes)?;
    let id = stored.id.as_str();
    let open_tls = |sealed: Option<Vec<u8>>, field: &str| {
        cipher.open_secret(sealed.as_deref(), Place(&["database", id, "tls", field]))
    };
    let credentials = stored
        .credentials
        .into_iter()
        .map(|c| {
            Ok(Credential {
                password: cipher.open_secret(
                    c.password.as_deref(),
                    Place(&["database", id, "credential", &c.id, "password"]),
                )?,
                id: CredentialId::from_stored(c.id),
                username: c.username,
                hostname: c.hostname,
                ai_allowed: c.ai_allowed,
                timeout: c.timeout,
                reviews_required: c.reviews_required,
                default_credential: c.default_credential,
            })
        })
        .collect::<Result<Vec<_>, CryptoError>>()?;
    let tls = TlsMaterial {
        ca_cert: open_tls(stored.ca_cert, "ca_cert")?,
        client_cert: open_tls(stored.client_cert, "client_cert")?,
        client_key: open_tls(stored.client_key, "client_key")?,
    };
    Ok(Database {
        adapter: stored
            .adapter
            .parse::<Adapter>()
            .map_err(|_| RecordError::Adapter)?,
        id: DatabaseId::from_stored(stored.id),
        api_id: stored.api_id,
        name: stored.name,
        hostname: stored.hostname,
        port: stored.port,
        database: stored.database,
        ssl: stored.ssl,
        verify_server_hostname: stored.verify_server_hostname,
        restrict_access: stored.restrict_access,
        review_bypass_allowed: stored.review_bypass_allowed,
        group: stored.group,
        slack_channel: stored.slack_channel,
        tunnel_id: stored.tunnel_id,
        ai_enabled: stored.ai_enabled,
        ai_max_rows: stored.ai_max_rows,
        connection_parameters: stored
            .connection_parameters
            .into_iter()
            .map(|(name, value)| ConnectionParameter { name, value })
            .collect(),
        credentials,
        tls,
        inserted_at: Timestamp::from_micros(stored.inserted_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
    })
}

/// Encodes a dashboard (dashboards hold no secrets).
pub(crate) fn encode_dashboard(dashboard: &Dashboard) -> Result<Vec<u8>, RecordError> {
    let stored = DashboardV1 {
        id: dashboard.id.as_str().to_owned(),
        name: dashboard.name.clone(),
        restricted_access: dashboard.restricted_access,
        archived_at: dashboard.archived_at.map(Timestamp::as_micros),
        panels: dashboard
            .panels
            .iter()
            .map(|panel| PanelV1 {
                id: panel.id.as_str().to_owned(),
                title: panel.title.clone(),
                inputs: panel
                    .inputs
                    .iter()
                    .map(|i| (i.key.clone(), i.description.clone()))
                    .collect(),
                actions: panel
                    .actions
                    .iter()
                    .map(|action| ActionV1 {
                        id: action.id.as_str().to_owned(),
                        label: action.label.clone(),
                        workflow_id: action.workflow_id.clone(),
                        input_mappings: action
                            .input_mappings
                            .iter()
                            .map(|m| InputMappingV1 {
                                workflow_input_key: m.workflow_input_key.clone(),
                                column: m.column.clone(),
                                prompt_user: m.prompt_user,
                                prompt: m.prompt.clone(),
                            })
                            .collect(),
                    })
                    .collect(),
                details: match &panel.details {
                    PanelDetails::Query {
                        query,
                        credential_id,
                    } => PanelDetailsV1::Query {
                        query: query.clone(),
                        credential_id: credential_id.clone(),
                    },
                },
            })
            .collect(),
        inserted_at: dashboard.inserted_at.as_micros(),
        updated_at: dashboard.updated_at.as_micros(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the dashboard stored under `key`.
pub(crate) fn decode_dashboard(key: &str, bytes: &[u8]) -> Result<Dashboard, RecordError> {
    let stored: DashboardV1 = match unframed(bytes)? {
        (RECORD_V1, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.id != key {
        return Err(RecordError::KeyMismatch {
            key: key.to_owned(),
            id: stored.id,
        });
    }
    Ok(Dashboard {
        id: DashboardId::from_stored(stored.id),
        name: stored.name,
        restricted_access: stored.restricted_access,
        archived_at: stored.archived_at.map(Timestamp::from_micros),
        panels: stored
            .panels
            .into_iter()
            .map(|panel| Panel {
                id: PanelId::from_stored(panel.id),
                title: panel.title,
                inputs: panel
                    .inputs
                    .into_iter()
                    .map(|(key, description)| PanelInput { key, description })
                    .collect(),
                actions: panel
                    .actions
                    .into_iter()
                    .map(|action| Action {
                        id: ActionId::from_stored(action.id),
                        label: action.label,
                        workflow_id: action.workflow_id,
                        input_mappings: action
                            .input_mappings
                            .into_iter()
                            .map(|m| InputMapping {
                                workflow_input_key: m.workflow_input_key,
                                column: m.column,
                                prompt_user: m.prompt_user,
                                prompt: m.prompt,
                            })
                            .collect(),
                    })
                    .collect(),
                details: match panel.details {
                    PanelDetailsV1::Query {
                        query,
                        credential_id,
                    } => PanelDetails::Query {
                        query,
                        credential_id,
                    },
                },
            })
            .collect(),
        inserted_at: Timestamp::from_micros(stored.inserted_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::SecretKey;
    use crate::tests::sample_database;

    fn cipher() -> Cipher {
        Cipher::new(&SecretKey::from_bytes([3; 32]))
    }

    #[test]
    fn database_round_trips_and_seals_its_secrets() {
        let cipher = cipher();
        let mut database = sample_database("Orders", Some("ext"));
        database.credentials.push(Credential {
            id: CredentialId::generate(),
            username: "writer".to_owned(),
            password: Some(Secret::from("pw-writer-distinctive")),
            hostname: Some("replica".to_owned()),
            ai_allowed: true,
            timeout: Some(5),
            reviews_required: 2,
            default_credential: false,
        });
        let bytes = encode_database(&cipher, &database).unwrap();
        assert_eq!(bytes[0], RECORD_V1);
        assert!(!bytes.windows(21).any(|w| w == b"pw-writer-distinctive"));
        let back = decode_database(&cipher, database.id.as_str(), &bytes).unwrap();
        assert_eq!(back, database);
    }

    #[test]
    fn a_password_moved_to_another_credential_does_not_decrypt() {
        let cipher = cipher();
        let mut database = sample_database("Orders", None);
        let mut second = database.credentials[0].clone();
        second.id = CredentialId::generate();
        second.username = "other".to_owned();
        database.credentials.push(second);
        let bytes = encode_database(&cipher, &database).unwrap();

        let mut stored = decode_database_stored(database.id.as_str(), &bytes).unwrap();
        let first = stored.credentials[0].password.take();
        stored.credentials[0].password = stored.credentials[1].password.take();
        stored.credentials[1].password = first;
        let swapped = framed(RECORD_V1, &stored).unwrap();
        let error = decode_database(&cipher, database.id.as_str(), &swapped).unwrap_err();
        assert!(matches!(error, RecordError::Crypto(_)), "{error}");

        // A TLS file moved to another field does not decrypt either.
        let mut stored = decode_database_stored(database.id.as_str(), &bytes).unwrap();
        stored.client_key = stored.ca_cert.take();
        let moved = framed(RECORD_V1, &stored).unwrap();
        assert!(decode_database(&cipher, database.id.as_str(), &moved).is_err());
    }

    #[test]
    fn a_record_under_another_key_or_of_an_unknown_version_is_refused() {
        let cipher = cipher();
        let database = sample_database("Orders", None);
        let mut bytes = encode_database(&cipher, &database).unwrap();
        assert!(matches!(
            decode_database(&cipher, "db_other", &bytes),
            Err(RecordError::KeyMismatch { .. })
        ));
        bytes[0] = 9;
        assert!(matches!(
            decode_database(&cipher, database.id.as_str(), &bytes),
            Err(RecordError::UnknownVersion(9))
        ));
        assert!(matches!(
            decode_database(&cipher, database.id.as_str(), &[]),
            Err(RecordError::Empty)
        ));
    }
}
