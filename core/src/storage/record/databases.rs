//! Databases as stored: versions 1, 2 (each secret after the id of its seal key) and 3 (each
//! credential with where its password was given for).

#[allow(clippy::wildcard_imports)]
use super::*;

/// The version byte of databases written now: the shape of [`DatabaseV1`], with each secret
/// stored as the id of its seal key (u32, little endian) then its sealed bytes. A version 1
/// database's secrets are their sealed bytes alone, sealed under key 0.
pub(super) const DATABASE_V2: u8 = 2;

/// The version byte of databases written now: version 2 with each credential's
/// [`CredentialV3::password_for`].
pub(super) const DATABASE_V3: u8 = 3;

/// A database as stored (versions 1 and 2, [`DATABASE_V2`]). Secrets are as core sealed them
/// ([`SealedSecret`]: `nonce ‖ ciphertext ‖ tag`), after their key id in version 2.
#[derive(Serialize, Deserialize)]
pub(crate) struct DatabaseV1<C = CredentialV3> {
    pub(crate) id: String,
    pub(crate) api_id: Option<String>,
    pub(crate) name: String,
    /// The adapter's wire name (`postgres`…), robust to reordering the enum.
    pub(super) adapter: String,
    pub(super) hostname: String,
    pub(super) port: Option<u16>,
    pub(super) database: String,
    pub(super) ssl: bool,
    pub(super) verify_server_hostname: bool,
    pub(super) restrict_access: bool,
    pub(super) review_bypass_allowed: bool,
    pub(super) group: Option<String>,
    pub(super) slack_channel: Option<String>,
    pub(super) tunnel_id: Option<String>,
    pub(super) ai_enabled: bool,
    pub(super) ai_max_rows: u32,
    pub(super) connection_parameters: Vec<(String, String)>,
    pub(super) credentials: Vec<C>,
    pub(super) ca_cert: Option<Vec<u8>>,
    pub(super) client_cert: Option<Vec<u8>>,
    pub(super) client_key: Option<Vec<u8>>,
    pub(super) inserted_at: i64,
    pub(super) updated_at: i64,
}

#[derive(Serialize, Deserialize)]
pub(super) struct CredentialV1 {
    pub(super) id: String,
    pub(super) username: String,
    pub(super) password: Option<Vec<u8>>,
    pub(super) hostname: Option<String>,
    pub(super) ai_allowed: bool,
    pub(super) timeout: Option<u32>,
    pub(super) reviews_required: u32,
    pub(super) default_credential: bool,
}

/// A credential as version 3 stores it: version 1's and where its password was given for.
#[derive(Serialize, Deserialize)]
pub(super) struct CredentialV3 {
    pub(super) id: String,
    pub(super) username: String,
    pub(super) password: Option<Vec<u8>>,
    pub(super) hostname: Option<String>,
    pub(super) ai_allowed: bool,
    pub(super) timeout: Option<u32>,
    pub(super) reviews_required: u32,
    pub(super) default_credential: bool,
    pub(super) password_for: Option<[u8; 32]>,
}

impl From<CredentialV1> for CredentialV3 {
    fn from(c: CredentialV1) -> Self {
        Self {
            id: c.id,
            username: c.username,
            password: c.password,
            hostname: c.hostname,
            ai_allowed: c.ai_allowed,
            timeout: c.timeout,
            reviews_required: c.reviews_required,
            default_credential: c.default_credential,
            password_for: None,
        }
    }
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
        .map(|c| CredentialV3 {
            password_for: c.password_for,
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
    framed(DATABASE_V3, &stored)
}

/// Decodes a stored database as its stored struct (for its id and name), checking that it is
/// the record of `key`; with its version.
pub(crate) fn decode_database_stored(
    key: &str,
    bytes: &[u8],
) -> Result<(DatabaseV1, u8), RecordError> {
    let (version, body) = unframed(bytes)?;
    let stored: DatabaseV1 = match version {
        RECORD_V1 | DATABASE_V2 => {
            let old: DatabaseV1<CredentialV1> = postcard::from_bytes(body)?;
            DatabaseV1 {
                credentials: old.credentials.into_iter().map(Into::into).collect(),
                id: old.id,
                api_id: old.api_id,
                name: old.name,
                adapter: old.adapter,
                hostname: old.hostname,
                port: old.port,
                database: old.database,
                ssl: old.ssl,
                verify_server_hostname: old.verify_server_hostname,
                restrict_access: old.restrict_access,
                review_bypass_allowed: old.review_bypass_allowed,
                group: old.group,
                slack_channel: old.slack_channel,
                tunnel_id: old.tunnel_id,
                ai_enabled: old.ai_enabled,
                ai_max_rows: old.ai_max_rows,
                connection_parameters: old.connection_parameters,
                ca_cert: old.ca_cert,
                client_cert: old.client_cert,
                client_key: old.client_key,
                inserted_at: old.inserted_at,
                updated_at: old.updated_at,
            }
        }
        DATABASE_V3 => postcard::from_bytes(body)?,
        version => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    Ok((stored, version))
}

/// The name of the database stored under `key`, without building the whole record.
pub fn decode_database_name(key: &str, bytes: &[u8]) -> Result<String, RecordError> {
    Ok(decode_database_stored(key, bytes)?.0.name)
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
                password_for: c.password_for,
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

impl Keyed for DatabaseV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}
