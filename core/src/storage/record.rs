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

use crate::model::{
    AccessControl, AccessLevel, Action, ActionId, Actor, Adapter, AuditAction, AuditEvent, Bypass,
    CallerKey, ColumnAction, ColumnRule, ConnectionParameter, Credential, CredentialId,
    CredentialKind, Dashboard, DashboardId, DataProtection, Database, DatabaseId, Decision,
    Delivery, DeliveryId, DeliveryStatus, EventId, InputMapping, KeyId, Panel, PanelDetails,
    PanelId, PanelInput, Permission, Policy, Principal, Query, QueryId, QueryRun, QueryStatus,
    Review, Role, RunFacts, RunOutcome, Scope, SealedSecret, StoredAnswer, SubjectKind, Target,
    Timestamp, TlsMaterial,
};
use crate::seal::SealKeys;
use serde::{Deserialize, Serialize};

/// The version byte of records written now (but databases, [`DATABASE_V2`]).
const RECORD_V1: u8 = 1;

/// The version byte of databases written now: the shape of [`DatabaseV1`], with each secret
/// stored as the id of its seal key (u32, little endian) then its sealed bytes. A version 1
/// database's secrets are their sealed bytes alone, sealed under key 0.
const DATABASE_V2: u8 = 2;

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
    /// The record stored under a key carries another id.
    #[error("the record stored under {key} carries the id {id}")]
    KeyMismatch {
        /// The table key.
        key: String,
        /// The id inside the record.
        id: String,
    },
}

/// A database as stored (versions 1 and 2, [`DATABASE_V2`]). Secrets are as core sealed them
/// ([`SealedSecret`]: `nonce ‖ ciphertext ‖ tag`), after their key id in version 2.
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

/// A database's access control as stored (version 1), under the database's id.
#[derive(Serialize, Deserialize)]
struct AccessControlV1 {
    database_id: String,
    permissions: Vec<PermissionV1>,
    inherits_from: Option<String>,
    policies: Vec<PolicyV1>,
}

#[derive(Serialize, Deserialize)]
struct PermissionV1 {
    /// `user` or `group`.
    subject_kind: String,
    subject: String,
    /// `query`, `review` or `admin`.
    access: String,
}

#[derive(Serialize, Deserialize)]
struct PolicyV1 {
    name: String,
    description: Option<String>,
    /// Column and action (`hide` or `mask`).
    columns: Vec<(String, String)>,
}

/// A caller credential as stored (version 1): its digest, never its secret.
#[derive(Serialize, Deserialize)]
struct CallerKeyV1 {
    id: String,
    name: String,
    /// `api-key` or `access-token`.
    kind: String,
    /// `full` or `setup`.
    scope: String,
    digest: [u8; 32],
    created_at: i64,
    last_used_at: Option<i64>,
}

/// A caller credential as stored (version 2): version 1's fields, and the principal it is
/// bound to.
#[derive(Serialize, Deserialize)]
struct CallerKeyV2 {
    key: CallerKeyV1,
    principal: Option<PrincipalV1>,
}

/// A principal as stored: the role by its wire name; `agent` is not stored (it is the scope's).
#[derive(Serialize, Deserialize)]
struct PrincipalV1 {
    user: String,
    groups: Vec<String>,
    role: String,
}

/// The version byte of caller keys written now: [`CallerKeyV2`].
const CALLER_KEY_V2: u8 = 2;

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

/// Encodes a database; its secrets are already sealed.
pub fn encode_database(db: &Database) -> Result<Vec<u8>, RecordError> {
    // Destructured whole, with no `..`: a field added to `Database` fails to compile here until
    // the stored form holds it.
    let Database {
        id,
        api_id,
        name,
        adapter,
        hostname,
        port,
        database,
        ssl,
        verify_server_hostname,
        restrict_access,
        review_bypass_allowed,
        group,
        slack_channel,
        tunnel_id,
        ai_enabled,
        ai_max_rows,
        connection_parameters,
        credentials,
        tls,
        inserted_at,
        updated_at,
    } = db;
    let credentials = credentials
        .iter()
        .map(|c| CredentialV1 {
            id: c.id.as_str().to_owned(),
            username: c.username.clone(),
            password: stored_secret(c.password.as_ref()),
            hostname: c.hostname.clone(),
            ai_allowed: c.ai_allowed,
            timeout: c.timeout,
            reviews_required: c.reviews_required,
            default_credential: c.default_credential,
        })
        .collect();
    let stored = DatabaseV1 {
        id: id.as_str().to_owned(),
        api_id: api_id.clone(),
        name: name.clone(),
        adapter: adapter.as_str().to_owned(),
        hostname: hostname.clone(),
        port: *port,
        database: database.clone(),
        ssl: *ssl,
        verify_server_hostname: *verify_server_hostname,
        restrict_access: *restrict_access,
        review_bypass_allowed: *review_bypass_allowed,
        group: group.clone(),
        slack_channel: slack_channel.clone(),
        tunnel_id: tunnel_id.clone(),
        ai_enabled: *ai_enabled,
        ai_max_rows: *ai_max_rows,
        connection_parameters: connection_parameters
            .iter()
            .map(|p| (p.name.clone(), p.value.clone()))
            .collect(),
        credentials,
        ca_cert: stored_secret(tls.ca_cert.as_ref()),
        client_cert: stored_secret(tls.client_cert.as_ref()),
        client_key: stored_secret(tls.client_key.as_ref()),
        inserted_at: inserted_at.as_micros(),
        updated_at: updated_at.as_micros(),
    };
    framed(DATABASE_V2, &stored)
}

/// Decodes a stored database as its stored struct (for its id and name), checking that it is
/// the record of `key`; with its version.
pub(crate) fn decode_database_stored(
    key: &str,
    bytes: &[u8],
) -> Result<(DatabaseV1, u8), RecordError> {
    let (version, body) = unframed(bytes)?;
    if version != RECORD_V1 && version != DATABASE_V2 {
        return Err(RecordError::UnknownVersion(version));
    }
    let stored: DatabaseV1 = postcard::from_bytes(body)?;
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    Ok((stored, version))
}

/// The name of the database stored under `key`, without building the whole record.
pub fn decode_database_name(key: &str, bytes: &[u8]) -> Result<String, RecordError> {
    Ok(decode_database_stored(key, bytes)?.0.name)
}

impl From<RecordError> for super::StorageError {
    fn from(error: RecordError) -> Self {
        super::StorageError::backend(error)
    }
}

/// Decodes the database stored under `key`. Its secrets stay sealed.
pub fn decode_database(key: &str, bytes: &[u8]) -> Result<Database, RecordError> {
    let (stored, version) = decode_database_stored(key, bytes)?;
    let credentials = stored
        .credentials
        .into_iter()
        .map(|c| {
            Ok(Credential {
                password: sealed_secret(version, c.password)?,
                id: CredentialId::from_stored(c.id),
                username: c.username,
                hostname: c.hostname,
                ai_allowed: c.ai_allowed,
                timeout: c.timeout,
                reviews_required: c.reviews_required,
                default_credential: c.default_credential,
            })
        })
        .collect::<Result<_, RecordError>>()?;
    let tls = TlsMaterial {
        ca_cert: sealed_secret(version, stored.ca_cert)?,
        client_cert: sealed_secret(version, stored.client_cert)?,
        client_key: sealed_secret(version, stored.client_key)?,
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
pub fn encode_dashboard(dashboard: &Dashboard) -> Result<Vec<u8>, RecordError> {
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
pub fn decode_dashboard(key: &str, bytes: &[u8]) -> Result<Dashboard, RecordError> {
    let stored: DashboardV1 = decode_keyed(key, bytes)?;
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

/// A stored record that names the key it is stored under.
trait Keyed: serde::de::DeserializeOwned {
    fn stored_key(&self) -> &str;
}

impl Keyed for DatabaseV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}

impl Keyed for DashboardV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}

impl Keyed for AccessControlV1 {
    fn stored_key(&self) -> &str {
        &self.database_id
    }
}

/// A store's seal keys as stored (version 1): the current key's id, and each key's id with its
/// key check value.
#[derive(Serialize, Deserialize)]
struct SealKeysV1 {
    current: u32,
    keys: Vec<(u32, Vec<u8>)>,
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

/// Encodes the access control of the database `database_id`.
pub fn encode_access_control(
    database_id: &str,
    access: &AccessControl,
) -> Result<Vec<u8>, RecordError> {
    let stored = AccessControlV1 {
        database_id: database_id.to_owned(),
        permissions: access
            .permissions
            .iter()
            .map(|p| PermissionV1 {
                subject_kind: p.subject_kind.as_str().to_owned(),
                subject: p.subject.clone(),
                access: p.access.as_str().to_owned(),
            })
            .collect(),
        inherits_from: access.data_protection.inherits_from.clone(),
        policies: access
            .data_protection
            .policies
            .iter()
            .map(|policy| PolicyV1 {
                name: policy.name.clone(),
                description: policy.description.clone(),
                columns: policy
                    .columns
                    .iter()
                    .map(|rule| (rule.column.clone(), rule.action.as_str().to_owned()))
                    .collect(),
            })
            .collect(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the access control stored under the database id `key`.
pub fn decode_access_control(key: &str, bytes: &[u8]) -> Result<AccessControl, RecordError> {
    let stored: AccessControlV1 = decode_keyed(key, bytes)?;
    let permissions = stored
        .permissions
        .into_iter()
        .map(|p| {
            Ok(Permission {
                subject_kind: parse::<SubjectKind>(&p.subject_kind, "subject kind")?,
                subject: p.subject,
                access: parse::<AccessLevel>(&p.access, "access level")?,
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    let policies = stored
        .policies
        .into_iter()
        .map(|policy| {
            Ok(Policy {
                name: policy.name,
                description: policy.description,
                columns: policy
                    .columns
                    .into_iter()
                    .map(|(column, action)| {
                        Ok(ColumnRule {
                            column,
                            action: parse::<ColumnAction>(&action, "column action")?,
                        })
                    })
                    .collect::<Result<Vec<_>, RecordError>>()?,
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    Ok(AccessControl {
        permissions,
        data_protection: DataProtection {
            inherits_from: stored.inherits_from,
            policies,
        },
    })
}

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

/// A query as stored (version 1): enums by their wire names.
#[derive(Serialize, Deserialize)]
struct QueryV1 {
    id: String,
    database_id: String,
    credential_id: String,
    query: String,
    limit: u32,
    author: String,
    status: String,
    run: Option<QueryRunV1>,
    inserted_at: i64,
    updated_at: i64,
}

#[derive(Serialize, Deserialize)]
struct QueryRunV1 {
    run_by: String,
    started_at: i64,
    finished_at: Option<i64>,
    row_count: u64,
    truncated: bool,
    duration_ms: u64,
    error: Option<String>,
}

impl Keyed for QueryV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}

/// Version 2 of a query: version 1 with its reviews and bypass.
const QUERY_V2: u8 = 2;

/// A query as stored (version 2).
#[derive(Serialize, Deserialize)]
struct QueryV2 {
    query: QueryV1,
    by_agent: bool,
    reviews: Vec<ReviewV1>,
    bypass: Option<BypassV1>,
}

/// Version 3 of a query: version 2 with the digest of what it runs on.
const QUERY_V3: u8 = 3;

/// A query as stored (version 3).
#[derive(Serialize, Deserialize)]
struct QueryV3 {
    v2: QueryV2,
    target: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct ReviewV1 {
    reviewer: String,
    decision: String,
    comment: Option<String>,
    at: i64,
}

#[derive(Serialize, Deserialize)]
struct BypassV1 {
    by: String,
    at: i64,
    reason: String,
    approvals: u32,
    required: u32,
}

/// Encodes a query (version 3).
pub fn encode_query(query: &Query) -> Result<Vec<u8>, RecordError> {
    let Query {
        id,
        database_id,
        credential_id,
        query,
        limit,
        author,
        by_agent,
        target,
        status,
        reviews,
        bypass,
        run,
        inserted_at,
        updated_at,
    } = query;
    let stored = QueryV1 {
        id: id.as_str().to_owned(),
        database_id: database_id.clone(),
        credential_id: credential_id.clone(),
        query: query.clone(),
        limit: *limit,
        author: author.clone(),
        status: status.as_str().to_owned(),
        run: run.as_ref().map(|run| QueryRunV1 {
            run_by: run.run_by.clone(),
            started_at: run.started_at.as_micros(),
            finished_at: run.finished_at.map(Timestamp::as_micros),
            row_count: run.row_count,
            truncated: run.truncated,
            duration_ms: run.duration_ms,
            error: run.error.clone(),
        }),
        inserted_at: inserted_at.as_micros(),
        updated_at: updated_at.as_micros(),
    };
    let stored = QueryV2 {
        query: stored,
        by_agent: *by_agent,
        reviews: reviews
            .iter()
            .map(|review| ReviewV1 {
                reviewer: review.reviewer.clone(),
                decision: review.decision.as_str().to_owned(),
                comment: review.comment.clone(),
                at: review.at.as_micros(),
            })
            .collect(),
        bypass: bypass.as_ref().map(|bypass| BypassV1 {
            by: bypass.by.clone(),
            at: bypass.at.as_micros(),
            reason: bypass.reason.clone(),
            approvals: bypass.approvals,
            required: bypass.required,
        }),
    };
    framed(
        QUERY_V3,
        &QueryV3 {
            v2: stored,
            target: target.clone(),
        },
    )
}

/// Decodes the query stored under `key` (version 1 has no reviews, version 2 no target).
pub fn decode_query(key: &str, bytes: &[u8]) -> Result<Query, RecordError> {
    let QueryV3 {
        v2:
            QueryV2 {
                query: stored,
                by_agent,
                reviews,
                bypass,
            },
        target,
    } = match unframed(bytes)? {
        (RECORD_V1, body) => QueryV3 {
            v2: QueryV2 {
                query: postcard::from_bytes(body)?,
                by_agent: false,
                reviews: Vec::new(),
                bypass: None,
            },
            target: None,
        },
        (QUERY_V2, body) => QueryV3 {
            v2: postcard::from_bytes(body)?,
            target: None,
        },
        (QUERY_V3, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    let reviews = reviews
        .into_iter()
        .map(|review| {
            Ok(Review {
                decision: parse::<Decision>(&review.decision, "review decision")?,
                reviewer: review.reviewer,
                comment: review.comment,
                at: Timestamp::from_micros(review.at),
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    Ok(Query {
        by_agent,
        target,
        reviews,
        bypass: bypass.map(|bypass| Bypass {
            by: bypass.by,
            at: Timestamp::from_micros(bypass.at),
            reason: bypass.reason,
            approvals: bypass.approvals,
            required: bypass.required,
        }),
        status: parse::<QueryStatus>(&stored.status, "query status")?,
        id: QueryId::from_stored(stored.id),
        database_id: stored.database_id,
        credential_id: stored.credential_id,
        query: stored.query,
        limit: stored.limit,
        author: stored.author,
        run: stored.run.map(|run| QueryRun {
            run_by: run.run_by,
            started_at: Timestamp::from_micros(run.started_at),
            finished_at: run.finished_at.map(Timestamp::from_micros),
            row_count: run.row_count,
            truncated: run.truncated,
            duration_ms: run.duration_ms,
            error: run.error,
        }),
        inserted_at: Timestamp::from_micros(stored.inserted_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
    })
}

/// A delivery of the outbox as stored (version 1): the target by its kind (`workflow`,
/// `slack`) and its name, the status by its wire name.
#[derive(Serialize, Deserialize)]
struct DeliveryV1 {
    id: String,
    target_kind: String,
    target: String,
    body: String,
    resource_id: String,
    status: String,
    attempts: u32,
    due_at: Option<i64>,
    last_error: Option<String>,
    inserted_at: i64,
    updated_at: i64,
    delivered_at: Option<i64>,
}

impl Keyed for DeliveryV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}

/// Encodes a delivery of the outbox.
pub fn encode_delivery(delivery: &Delivery) -> Result<Vec<u8>, RecordError> {
    let (target_kind, target) = match &delivery.target {
        Target::Workflow { workflow_id } => ("workflow", workflow_id),
        Target::Slack { channel } => ("slack", channel),
    };
    let stored = DeliveryV1 {
        id: delivery.id.as_str().to_owned(),
        target_kind: target_kind.to_owned(),
        target: target.clone(),
        body: delivery.body.clone(),
        resource_id: delivery.resource_id.clone(),
        status: delivery.status.as_str().to_owned(),
        attempts: delivery.attempts,
        due_at: delivery.due_at.map(Timestamp::as_micros),
        last_error: delivery.last_error.clone(),
        inserted_at: delivery.inserted_at.as_micros(),
        updated_at: delivery.updated_at.as_micros(),
        delivered_at: delivery.delivered_at.map(Timestamp::as_micros),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the delivery stored under `key`.
pub fn decode_delivery(key: &str, bytes: &[u8]) -> Result<Delivery, RecordError> {
    let stored: DeliveryV1 = decode_keyed(key, bytes)?;
    let target = match stored.target_kind.as_str() {
        "workflow" => Target::Workflow {
            workflow_id: stored.target,
        },
        "slack" => Target::Slack {
            channel: stored.target,
        },
        _ => return Err(RecordError::UnknownValue("delivery target")),
    };
    Ok(Delivery {
        id: DeliveryId::from_stored(stored.id),
        target,
        body: stored.body,
        resource_id: stored.resource_id,
        status: parse::<DeliveryStatus>(&stored.status, "delivery status")?,
        attempts: stored.attempts,
        due_at: stored.due_at.map(Timestamp::from_micros),
        last_error: stored.last_error,
        inserted_at: Timestamp::from_micros(stored.inserted_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
        delivered_at: stored.delivered_at.map(Timestamp::from_micros),
    })
}

/// The answer of an idempotent write as stored (version 1).
#[derive(Serialize, Deserialize)]
struct AnswerV1 {
    key: String,
    fingerprint: [u8; 32],
    status: u16,
    etag: Option<String>,
    body: Vec<u8>,
    at: i64,
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

/// An audit event as stored (version 1).
#[derive(Serialize, Deserialize)]
struct AuditEventV1 {
    id: String,
    at: i64,
    /// The action's wire name (`database.update`…).
    action: String,
    resource_id: String,
    actor_id: Option<String>,
    actor_name: String,
    request_id: Option<String>,
    changes: Vec<String>,
}

/// The version byte of audit events written now: [`AuditEventV2`], with compact changes.
const EVENT_V2: u8 = 2;

/// The field names an audit event's changes are made of, stored as their index. **Append
/// only**: a stored index never changes meaning.
const CHANGE_NAMES: &[&str] = &[
    "api_id",
    "name",
    "adapter",
    "hostname",
    "port",
    "database",
    "ssl",
    "verify_server_hostname",
    "restrict_access",
    "review_bypass_allowed",
    "group",
    "slack_channel",
    "tunnel_id",
    "ai_enabled",
    "ai_max_rows",
    "connection_parameters",
    "ssl_ca_cert",
    "ssl_cert",
    "ssl_key",
    "restricted_access",
    "archived_at",
    "panels",
    "permissions",
    "data_protection.policies",
    "data_protection.inherits_from",
    "kind",
    "scope",
];

/// The fields of a credential named in changes (`credentials[<username>].<field>`), stored as
/// their index. **Append only.**
const CREDENTIAL_FIELDS: &[&str] = &[
    "username",
    "password",
    "hostname",
    "ai_allowed",
    "timeout",
    "reviews_required",
    "default_credential",
];

/// One change of an event as stored (version 2): a known name by its index, a credential by its
/// username (with a field's index), or any other name as it is.
#[derive(Serialize, Deserialize)]
enum ChangeV2 {
    Name(u8),
    Credential(String),
    CredentialField(String, u8),
    Other(String),
}

impl ChangeV2 {
    /// The compact form of `change`; [`ChangeV2::expand`] gives back exactly `change`.
    fn of(change: &str) -> Self {
        let index = |names: &[&str], name: &str| {
            names
                .iter()
                .position(|n| *n == name)
                .and_then(|i| u8::try_from(i).ok())
        };
        if let Some(i) = index(CHANGE_NAMES, change) {
            return ChangeV2::Name(i);
        }
        if let Some(rest) = change.strip_prefix("credentials[") {
            if let Some(username) = rest.strip_suffix(']') {
                return ChangeV2::Credential(username.to_owned());
            }
            if let Some((username, field)) = rest.rsplit_once("].")
                && let Some(i) = index(CREDENTIAL_FIELDS, field)
            {
                return ChangeV2::CredentialField(username.to_owned(), i);
            }
        }
        ChangeV2::Other(change.to_owned())
    }

    fn expand(self) -> Result<String, RecordError> {
        let name = |names: &[&'static str], i: u8| {
            names
                .get(usize::from(i))
                .copied()
                .ok_or(RecordError::UnknownValue("audit change"))
        };
        Ok(match self {
            ChangeV2::Name(i) => name(CHANGE_NAMES, i)?.to_owned(),
            ChangeV2::Credential(username) => format!("credentials[{username}]"),
            ChangeV2::CredentialField(username, i) => {
                format!("credentials[{username}].{}", name(CREDENTIAL_FIELDS, i)?)
            }
            ChangeV2::Other(change) => change,
        })
    }
}

/// An audit event as stored (version 2): as version 1, with compact changes.
#[derive(Serialize, Deserialize)]
struct AuditEventV2 {
    id: String,
    at: i64,
    /// The action's wire name (`database.update`…).
    action: String,
    resource_id: String,
    actor_id: Option<String>,
    actor_name: String,
    request_id: Option<String>,
    changes: Vec<ChangeV2>,
}

/// The version byte of audit events written now: [`AuditEventV3`].
const EVENT_V3: u8 = 3;

/// An audit event as stored (version 3): version 2, and the facts of a run.
#[derive(Serialize, Deserialize)]
struct AuditEventV3 {
    event: AuditEventV2,
    run: Option<RunFactsV1>,
}

#[derive(Serialize, Deserialize)]
struct RunFactsV1 {
    database_id: String,
    credential_id: String,
    statement_sha256: String,
    statement_length: u64,
    rows: u64,
    duration_ms: u64,
    /// The outcome's wire name.
    outcome: String,
}

/// Encodes an audit event (version 3).
pub fn encode_audit_event(event: &AuditEvent) -> Result<Vec<u8>, RecordError> {
    let run = event.run.as_ref().map(|run| RunFactsV1 {
        database_id: run.database_id.clone(),
        credential_id: run.credential_id.clone(),
        statement_sha256: run.statement_sha256.clone(),
        statement_length: run.statement_length,
        rows: run.rows,
        duration_ms: run.duration_ms,
        outcome: run.outcome.as_str().to_owned(),
    });
    let event = AuditEventV2 {
        id: event.id.as_str().to_owned(),
        at: event.at.as_micros(),
        action: event.action.as_str().to_owned(),
        resource_id: event.resource_id.clone(),
        actor_id: event.actor.id.clone(),
        actor_name: event.actor.name.clone(),
        request_id: event.request_id.clone(),
        changes: event.changes.iter().map(|c| ChangeV2::of(c)).collect(),
    };
    framed(EVENT_V3, &AuditEventV3 { event, run })
}

/// Decodes the audit event stored under `key` (version 1, 2 or 3).
pub fn decode_audit_event(key: &str, bytes: &[u8]) -> Result<AuditEvent, RecordError> {
    let (version, body) = unframed(bytes)?;
    let (v2, run) = match version {
        RECORD_V1 => (None, None),
        EVENT_V2 => (Some(postcard::from_bytes::<AuditEventV2>(body)?), None),
        EVENT_V3 => {
            let v3: AuditEventV3 = postcard::from_bytes(body)?;
            (Some(v3.event), v3.run)
        }
        version => return Err(RecordError::UnknownVersion(version)),
    };
    let stored = match v2 {
        None => postcard::from_bytes::<AuditEventV1>(body)?,
        Some(v2) => AuditEventV1 {
            id: v2.id,
            at: v2.at,
            action: v2.action,
            resource_id: v2.resource_id,
            actor_id: v2.actor_id,
            actor_name: v2.actor_name,
            request_id: v2.request_id,
            changes: v2
                .changes
                .into_iter()
                .map(ChangeV2::expand)
                .collect::<Result<_, _>>()?,
        },
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    Ok(AuditEvent {
        action: parse::<AuditAction>(&stored.action, "audit action")?,
        id: EventId::from_stored(stored.id),
        at: Timestamp::from_micros(stored.at),
        resource_id: stored.resource_id,
        actor: Actor {
            id: stored.actor_id,
            name: stored.actor_name,
        },
        request_id: stored.request_id,
        changes: stored.changes,
        run: match run {
            Some(run) => Some(RunFacts {
                outcome: parse::<RunOutcome>(&run.outcome, "run outcome")?,
                database_id: run.database_id,
                credential_id: run.credential_id,
                statement_sha256: run.statement_sha256,
                statement_length: run.statement_length,
                rows: run.rows,
                duration_ms: run.duration_ms,
            }),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Secret;
    use crate::seal::{Place, Sealer};

    fn event_with(changes: &[&str]) -> AuditEvent {
        AuditEvent {
            id: EventId::generate(),
            at: Timestamp::now(),
            action: AuditAction::DatabaseCreate,
            resource_id: "db_01".to_owned(),
            actor: Actor::named("tests"),
            request_id: Some("req-1".to_owned()),
            changes: changes.iter().map(|c| (*c).to_owned()).collect(),
            run: None,
        }
    }

    #[test]
    fn audit_changes_round_trip_compactly_whatever_the_names() {
        let changes = [
            "adapter",
            "name",
            "ssl_key",
            "data_protection.inherits_from",
            "credentials[reader]",
            "credentials[reader].password",
            // Usernames that look like the encoding itself.
            "credentials[a].password]",
            "credentials[a].password].timeout",
            "credentials[]",
            "credentials[x].not_a_field",
            "credentials[",
            "something new",
        ];
        let event = event_with(&changes);
        let bytes = encode_audit_event(&event).unwrap();
        let back = decode_audit_event(event.id.as_str(), &bytes).unwrap();
        assert_eq!(back, event);

        // A create's usual names: far smaller than as strings (version 1).
        let usual = event_with(&[
            "adapter",
            "name",
            "hostname",
            "database",
            "credentials[reader]",
            "credentials[reader].password",
        ]);
        let v2 = encode_audit_event(&usual).unwrap();
        let v1 = framed(
            RECORD_V1,
            &AuditEventV1 {
                id: usual.id.as_str().to_owned(),
                at: usual.at.as_micros(),
                action: usual.action.as_str().to_owned(),
                resource_id: usual.resource_id.clone(),
                actor_id: None,
                actor_name: usual.actor.name.clone(),
                request_id: usual.request_id.clone(),
                changes: usual.changes.clone(),
            },
        )
        .unwrap();
        assert!(
            v2.len() + 50 < v1.len(),
            "v2 {} bytes, v1 {}",
            v2.len(),
            v1.len()
        );
        // Events written before (version 1) still read.
        assert_eq!(decode_audit_event(usual.id.as_str(), &v1).unwrap(), usual);
    }

    fn sample_database(name: &str, api_id: Option<&str>) -> Database {
        let now = Timestamp::now();
        Database {
            id: DatabaseId::generate(),
            api_id: api_id.map(str::to_owned),
            name: name.to_owned(),
            adapter: Adapter::Mysql,
            hostname: "db.internal".to_owned(),
            port: Some(3307),
            database: "orders".to_owned(),
            ssl: true,
            verify_server_hostname: false,
            restrict_access: true,
            review_bypass_allowed: false,
            group: Some("prod".to_owned()),
            slack_channel: None,
            tunnel_id: None,
            ai_enabled: true,
            ai_max_rows: 99,
            connection_parameters: vec![ConnectionParameter {
                name: "search_path".to_owned(),
                value: String::new(),
            }],
            credentials: Vec::new(),
            tls: TlsMaterial::default(),
            inserted_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn database_round_trips_with_its_sealed_secrets_as_they_are() {
        let sealer = Sealer::ephemeral().unwrap();
        let mut database = sample_database("Orders", Some("ext"));
        let id = CredentialId::generate();
        let place = Place::password(database.id.as_str(), id.as_str());
        database.credentials.push(Credential {
            password: Some(
                sealer
                    .seal(&Secret::from("pw-writer-distinctive"), &place)
                    .unwrap(),
            ),
            id,
            username: "writer".to_owned(),
            hostname: Some("replica".to_owned()),
            ai_allowed: true,
            timeout: Some(5),
            reviews_required: 2,
            default_credential: false,
        });
        let bytes = encode_database(&database).unwrap();
        assert_eq!(bytes[0], DATABASE_V2);
        assert!(!bytes.windows(21).any(|w| w == b"pw-writer-distinctive"));
        let back = decode_database(database.id.as_str(), &bytes).unwrap();
        assert_eq!(back, database);
        let password = back.credentials.last().unwrap().password.as_ref().unwrap();
        assert_eq!(
            sealer.open(password, &place).unwrap().expose(),
            b"pw-writer-distinctive"
        );
    }

    #[test]
    fn secrets_keep_their_key_and_version_1_secrets_are_key_0s() {
        let mut database = sample_database("Orders", None);
        database.tls.ca_cert = Some(SealedSecret::new(7, b"sealed-ca".to_vec()));
        let bytes = encode_database(&database).unwrap();
        let back = decode_database(database.id.as_str(), &bytes).unwrap();
        assert_eq!(back.tls.ca_cert.as_ref().map(SealedSecret::key), Some(7));
        assert_eq!(back, database);

        // The same record as version 1 wrote it: secrets are their sealed bytes alone.
        let (mut stored, version) = decode_database_stored(database.id.as_str(), &bytes).unwrap();
        assert_eq!(version, DATABASE_V2);
        stored.ca_cert = Some(b"sealed-ca".to_vec());
        let v1 = framed(RECORD_V1, &stored).unwrap();
        let old = decode_database(database.id.as_str(), &v1).unwrap();
        let ca = old.tls.ca_cert.unwrap();
        assert_eq!((ca.key(), ca.as_bytes()), (0, b"sealed-ca".as_slice()));

        // A version 2 secret too short to name its key is refused.
        stored.ca_cert = Some(vec![1, 2]);
        let cut = framed(DATABASE_V2, &stored).unwrap();
        assert!(matches!(
            decode_database(database.id.as_str(), &cut),
            Err(RecordError::Secret)
        ));
    }

    #[test]
    fn seal_keys_round_trip() {
        let keys = SealKeys {
            current: 3,
            keys: [(1, b"one".to_vec()), (3, b"three".to_vec())].into(),
        };
        let bytes = encode_seal_keys(&keys).unwrap();
        assert_eq!(decode_seal_keys(&bytes).unwrap(), keys);
        assert!(matches!(
            decode_seal_keys(&[9]),
            Err(RecordError::UnknownVersion(9))
        ));
    }

    #[test]
    fn a_record_under_another_key_or_of_an_unknown_version_is_refused() {
        let database = sample_database("Orders", None);
        let mut bytes = encode_database(&database).unwrap();
        assert!(matches!(
            decode_database("db_other", &bytes),
            Err(RecordError::KeyMismatch { .. })
        ));
        bytes[0] = 9;
        assert!(matches!(
            decode_database(database.id.as_str(), &bytes),
            Err(RecordError::UnknownVersion(9))
        ));
        assert!(matches!(
            decode_database(database.id.as_str(), &[]),
            Err(RecordError::Empty)
        ));
    }

    fn access_control() -> AccessControl {
        AccessControl {
            permissions: vec![
                Permission {
                    subject_kind: SubjectKind::Group,
                    subject: "Payments".to_owned(),
                    access: AccessLevel::Review,
                },
                Permission {
                    subject_kind: SubjectKind::User,
                    subject: "ana@example.com".to_owned(),
                    access: AccessLevel::Admin,
                },
            ],
            data_protection: DataProtection {
                inherits_from: Some("db_parent".to_owned()),
                policies: vec![Policy {
                    name: "pii".to_owned(),
                    description: Some("Personal data".to_owned()),
                    columns: vec![
                        ColumnRule {
                            column: "users.email".to_owned(),
                            action: ColumnAction::Mask,
                        },
                        ColumnRule {
                            column: "public.users.ssn".to_owned(),
                            action: ColumnAction::Hide,
                        },
                    ],
                }],
            },
        }
    }

    #[test]
    fn access_control_round_trips_under_its_database_id() {
        let access = access_control();
        let bytes = encode_access_control("db_1", &access).unwrap();
        assert_eq!(bytes[0], RECORD_V1);
        assert_eq!(decode_access_control("db_1", &bytes).unwrap(), access);
        assert!(matches!(
            decode_access_control("db_2", &bytes),
            Err(RecordError::KeyMismatch { .. })
        ));
        let empty = encode_access_control("db_1", &AccessControl::default()).unwrap();
        assert_eq!(
            decode_access_control("db_1", &empty).unwrap(),
            AccessControl::default()
        );
    }

    #[test]
    fn an_unknown_stored_enum_value_is_refused() {
        let mut stored = AccessControlV1 {
            database_id: "db_1".to_owned(),
            permissions: vec![PermissionV1 {
                subject_kind: "user".to_owned(),
                subject: "ana".to_owned(),
                access: "owner".to_owned(),
            }],
            inherits_from: None,
            policies: Vec::new(),
        };
        let bytes = framed(RECORD_V1, &stored).unwrap();
        assert!(matches!(
            decode_access_control("db_1", &bytes),
            Err(RecordError::UnknownValue("access level"))
        ));
        stored.permissions.clear();
        stored.policies.push(PolicyV1 {
            name: "p".to_owned(),
            description: None,
            columns: vec![("t.c".to_owned(), "shred".to_owned())],
        });
        let bytes = framed(RECORD_V1, &stored).unwrap();
        assert!(matches!(
            decode_access_control("db_1", &bytes),
            Err(RecordError::UnknownValue("column action"))
        ));
    }

    #[test]
    fn caller_key_round_trips() {
        let (mut key, _secret) =
            crate::model::mint_caller_key(CredentialKind::AccessToken, Scope::Setup, "ci");
        key.last_used_at = Some(Timestamp::from_micros(1_795_341_845_123_456));
        let bytes = encode_caller_key(&key).unwrap();
        assert_eq!(bytes[0], CALLER_KEY_V2);
        assert_eq!(decode_caller_key(key.id.as_str(), &bytes).unwrap(), key);
        // Bound to a user (an agent key: its scope says so).
        let (mut bound, _) =
            crate::model::mint_caller_key(CredentialKind::ApiKey, Scope::Agent, "agent");
        bound.principal = Some(
            crate::model::Principal::member("a@example.com")
                .groups(["g1", "g2"])
                .agent(true),
        );
        let stored = encode_caller_key(&bound).unwrap();
        assert_eq!(
            decode_caller_key(bound.id.as_str(), &stored).unwrap(),
            bound
        );
        // A version 1 record (before users) reads as a key bound to none.
        let v1 = framed(
            RECORD_V1,
            &CallerKeyV1 {
                id: key.id.as_str().to_owned(),
                name: key.name.clone(),
                kind: key.kind.as_str().to_owned(),
                scope: key.scope.as_str().to_owned(),
                digest: key.digest,
                created_at: key.created_at.as_micros(),
                last_used_at: key.last_used_at.map(Timestamp::as_micros),
            },
        )
        .unwrap();
        assert_eq!(decode_caller_key(key.id.as_str(), &v1).unwrap(), key);
        assert!(matches!(
            decode_caller_key("key_other", &bytes),
            Err(RecordError::KeyMismatch { .. })
        ));
        let mut unknown = bytes.clone();
        unknown[0] = 7;
        assert!(matches!(
            decode_caller_key(key.id.as_str(), &unknown),
            Err(RecordError::UnknownVersion(7))
        ));
    }

    #[test]
    fn queries_keep_their_reviews_and_bypass_and_version_1_queries_have_none() {
        let now = Timestamp::now();
        let query = Query {
            id: QueryId::generate(),
            database_id: "db_1".to_owned(),
            credential_id: "crd_1".to_owned(),
            query: "SELECT 1".to_owned(),
            limit: 10,
            author: "ann".to_owned(),
            by_agent: true,
            target: Some("ab12".to_owned()),
            status: QueryStatus::Running,
            reviews: vec![Review {
                reviewer: "bo".to_owned(),
                decision: Decision::Approve,
                comment: Some("looks fine".to_owned()),
                at: now,
            }],
            bypass: Some(Bypass {
                by: "ann".to_owned(),
                at: now,
                reason: "incident".to_owned(),
                approvals: 1,
                required: 2,
            }),
            run: None,
            inserted_at: now,
            updated_at: now,
        };
        let bytes = encode_query(&query).unwrap();
        assert_eq!(bytes[0], QUERY_V3);
        assert_eq!(decode_query(query.id.as_str(), &bytes).unwrap(), query);

        let QueryV3 { v2, .. } = postcard::from_bytes(&bytes[1..]).unwrap();
        let version_2 = decode_query(query.id.as_str(), &framed(QUERY_V2, &v2).unwrap()).unwrap();
        assert_eq!(version_2.target, None, "version 2 kept no target");
        assert_eq!(version_2.reviews, query.reviews);
        let QueryV2 { query: v1, .. } = v2;
        let old = decode_query(query.id.as_str(), &framed(RECORD_V1, &v1).unwrap()).unwrap();
        assert_eq!((old.reviews.len(), old.bypass), (0, None));
        assert_eq!(old.query, query.query);
        assert!(matches!(
            decode_query("qry_other", &bytes),
            Err(RecordError::KeyMismatch { .. })
        ));
    }
}
