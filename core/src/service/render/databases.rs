//! A database as every database endpoint returns it: [`DatabaseView`], with its connection
//! parameters and its credentials (never a password: the view has no field for it).

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::{adapter, credential_id, database_id, timestamp};
use crate::model::{Credential, Database};

/// A database as every database endpoint returns it.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Database", deny_unknown_fields)]
pub(crate) struct DatabaseView<'a> {
    #[schemars(schema_with = "database_id")]
    id: &'a str,
    api_id: Option<&'a str>,
    name: &'a str,
    #[schemars(schema_with = "adapter")]
    adapter: &'static str,
    hostname: &'a str,
    #[schemars(range(min = 1))]
    port: Option<u16>,
    database: &'a str,
    ssl: bool,
    verify_server_hostname: bool,
    restrict_access: bool,
    review_bypass_allowed: bool,
    group: Option<&'a str>,
    slack_channel: Option<&'a str>,
    tunnel_id: Option<&'a str>,
    ai_enabled: bool,
    #[schemars(range(min = 1))]
    ai_max_rows: u32,
    connection_parameters: Vec<ParameterView<'a>>,
    credentials: Vec<CredentialView<'a>>,
    /// RFC 3339 UTC with microseconds.
    #[schemars(schema_with = "timestamp")]
    inserted_at: String,
    /// RFC 3339 UTC with microseconds: the version (`ETag`).
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "ConnectionParameter", deny_unknown_fields)]
struct ParameterView<'a> {
    name: &'a str,
    value: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Credential", deny_unknown_fields)]
struct CredentialView<'a> {
    #[schemars(schema_with = "credential_id")]
    id: &'a str,
    username: &'a str,
    hostname: Option<&'a str>,
    ai_allowed: bool,
    #[schemars(range(min = 1))]
    timeout: Option<u32>,
    reviews_required: u32,
    default_credential: bool,
}

impl<'a> From<&'a Credential> for CredentialView<'a> {
    fn from(c: &'a Credential) -> Self {
        Self {
            id: c.id.as_str(),
            username: &c.username,
            hostname: c.hostname.as_deref(),
            ai_allowed: c.ai_allowed,
            timeout: c.timeout,
            reviews_required: c.reviews_required,
            default_credential: c.default_credential,
        }
    }
}

impl<'a> From<&'a Database> for DatabaseView<'a> {
    /// Destructured whole, with no `..`: a field added to [`Database`] fails to compile here
    /// until the response decides about it (TLS material is write-only and never shown).
    fn from(db: &'a Database) -> Self {
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
            tls: _,
            inserted_at,
            updated_at,
        } = db;
        Self {
            id: id.as_str(),
            api_id: api_id.as_deref(),
            name,
            adapter: adapter.as_str(),
            hostname,
            port: *port,
            database,
            ssl: *ssl,
            verify_server_hostname: *verify_server_hostname,
            restrict_access: *restrict_access,
            review_bypass_allowed: *review_bypass_allowed,
            group: group.as_deref(),
            slack_channel: slack_channel.as_deref(),
            tunnel_id: tunnel_id.as_deref(),
            ai_enabled: *ai_enabled,
            ai_max_rows: *ai_max_rows,
            connection_parameters: connection_parameters
                .iter()
                .map(|p| ParameterView {
                    name: &p.name,
                    value: &p.value,
                })
                .collect(),
            credentials: credentials.iter().map(CredentialView::from).collect(),
            inserted_at: inserted_at.to_string(),
            updated_at: updated_at.to_string(),
        }
    }
}
