//! Response bodies: the wire shape of each record, with exactly the keys the README's
//! *Endpoints* lists and
//! never a secret (the stored types hold secrets; these views have no field for them).

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;

use crate::model::{
    AccessControl, Action, AuditEvent, Credential, Dashboard, Database, InputMapping, Panel,
    PanelDetails, PanelInput,
};

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

/// A dashboard as every dashboard endpoint returns it: `id, name, restricted_access, panels`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Dashboard", deny_unknown_fields)]
pub(crate) struct DashboardView<'a> {
    #[schemars(schema_with = "dashboard_id")]
    id: &'a str,
    name: &'a str,
    restricted_access: bool,
    panels: Vec<PanelView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Panel", deny_unknown_fields)]
struct PanelView<'a> {
    #[schemars(schema_with = "panel_id")]
    id: &'a str,
    title: &'a str,
    inputs: Vec<InputView<'a>>,
    actions: Vec<ActionView<'a>>,
    details: DetailsView<'a>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "PanelInput", deny_unknown_fields)]
struct InputView<'a> {
    key: &'a str,
    description: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "PanelDetails", deny_unknown_fields)]
struct DetailsView<'a> {
    #[schemars(schema_with = "panel_type")]
    __type__: &'static str,
    query: &'a str,
    credential_id: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Action", deny_unknown_fields)]
struct ActionView<'a> {
    #[schemars(schema_with = "action_id")]
    id: &'a str,
    label: Option<&'a str>,
    workflow_id: Option<&'a str>,
    input_mappings: Vec<MappingView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "InputMapping", deny_unknown_fields)]
struct MappingView<'a> {
    workflow_input_key: &'a str,
    column: Option<&'a str>,
    prompt_user: bool,
    prompt: Option<&'a str>,
}

impl<'a> From<&'a InputMapping> for MappingView<'a> {
    fn from(m: &'a InputMapping) -> Self {
        Self {
            workflow_input_key: &m.workflow_input_key,
            column: m.column.as_deref(),
            prompt_user: m.prompt_user,
            prompt: m.prompt.as_deref(),
        }
    }
}

impl<'a> From<&'a Action> for ActionView<'a> {
    fn from(a: &'a Action) -> Self {
        Self {
            id: a.id.as_str(),
            label: a.label.as_deref(),
            workflow_id: a.workflow_id.as_deref(),
            input_mappings: a.input_mappings.iter().map(MappingView::from).collect(),
        }
    }
}

impl<'a> From<&'a PanelInput> for InputView<'a> {
    fn from(i: &'a PanelInput) -> Self {
        Self {
            key: &i.key,
            description: &i.description,
        }
    }
}

impl<'a> From<&'a Panel> for PanelView<'a> {
    fn from(p: &'a Panel) -> Self {
        let PanelDetails::Query {
            query,
            credential_id,
        } = &p.details;
        Self {
            id: p.id.as_str(),
            title: &p.title,
            inputs: p.inputs.iter().map(InputView::from).collect(),
            actions: p.actions.iter().map(ActionView::from).collect(),
            details: DetailsView {
                __type__: "query",
                query,
                credential_id,
            },
        }
    }
}

impl<'a> From<&'a Dashboard> for DashboardView<'a> {
    fn from(d: &'a Dashboard) -> Self {
        Self {
            id: d.id.as_str(),
            name: &d.name,
            restricted_access: d.restricted_access,
            panels: d.panels.iter().map(PanelView::from).collect(),
        }
    }
}

/// One page of a listing: `{"data": [...], "next": "<id>" | null}`.
/// An audit event as `GET …/audit` lists it.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "AuditEvent", deny_unknown_fields)]
pub(crate) struct AuditEventView<'a> {
    /// `evt_…`: ordered by time; pass as `after` to page on.
    id: &'a str,
    #[schemars(schema_with = "timestamp")]
    at: String,
    #[schemars(schema_with = "audit_action")]
    action: &'static str,
    resource: ResourceView<'a>,
    /// The caller credential that made the change: a stored key's id and name (id null for a static credential or a command). Never its secret.
    actor: ActorView<'a>,
    request_id: Option<&'a str>,
    /// The names of the fields the change set; never a value (a secret appears as `credentials[<username>].password` or `ssl_key`).
    changes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    /// A run's facts (`query.run`, `panel.run` only); never its text, inputs or rows.
    run: Option<RunFactsView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "RunFacts", deny_unknown_fields)]
struct RunFactsView<'a> {
    database_id: &'a str,
    credential_id: &'a str,
    statement_sha256: &'a str,
    statement_length: u64,
    rows: u64,
    duration_ms: u64,
    #[schemars(schema_with = "run_outcome")]
    outcome: &'static str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Resource", deny_unknown_fields)]
struct ResourceView<'a> {
    #[schemars(schema_with = "resource_kind")]
    kind: &'static str,
    id: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Actor", deny_unknown_fields)]
struct ActorView<'a> {
    id: Option<&'a str>,
    name: &'a str,
}

impl<'a> From<&'a AuditEvent> for AuditEventView<'a> {
    fn from(event: &'a AuditEvent) -> Self {
        Self {
            id: event.id.as_str(),
            at: event.at.to_string(),
            action: event.action.as_str(),
            resource: ResourceView {
                kind: event.action.resource_kind().as_str(),
                id: &event.resource_id,
            },
            actor: ActorView {
                id: event.actor.id.as_deref(),
                name: &event.actor.name,
            },
            request_id: event.request_id.as_deref(),
            changes: &event.changes,
            run: event.run.as_ref().map(|run| RunFactsView {
                database_id: &run.database_id,
                credential_id: &run.credential_id,
                statement_sha256: &run.statement_sha256,
                statement_length: run.statement_length,
                rows: run.rows,
                duration_ms: run.duration_ms,
                outcome: run.outcome.as_str(),
            }),
        }
    }
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "{T}Page", deny_unknown_fields)]
pub(crate) struct PageView<T> {
    pub(crate) data: Vec<T>,
    /// The id to pass as `after` for the next page; null when nothing follows.
    pub(crate) next: Option<String>,
}

/// `GET …/me`: who the caller is and what its credential lets it do (a console shows and hides
/// its screens by this; every route still decides for itself).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Me", deny_unknown_fields)]
pub(crate) struct MeView<'a> {
    /// The user the credential acts for; null for a credential bound to no user.
    pub(crate) user: Option<&'a str>,
    /// The user's groups, in their normal form.
    pub(crate) groups: Vec<&'a str>,
    /// `super-admin` or `member`; null without a user.
    #[schemars(schema_with = "role")]
    pub(crate) role: Option<&'static str>,
    /// Whether the caller is an AI agent acting for the user.
    pub(crate) agent: bool,
    /// The credential's scope.
    #[schemars(schema_with = "scope")]
    pub(crate) scope: &'static str,
    /// What the caller may do.
    pub(crate) may: MayView,
}

/// The routes a caller may use, by what they do. Per-record rules still apply (a restricted
/// database's grants, a query's author, a database's `review_bypass_allowed`).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Abilities", deny_unknown_fields)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag per ability is the wire shape"
)]
pub(crate) struct MayView {
    /// Write and run queries (the query routes; needs a user).
    pub(crate) query: bool,
    /// Review others' queries where its grants allow (needs a user; never an agent).
    pub(crate) review: bool,
    /// Run its own query without the approvals, with a reason, where a database allows it
    /// (super admins).
    pub(crate) bypass_reviews: bool,
    /// Create, edit and delete databases, their permissions and data protection.
    pub(crate) manage_databases: bool,
    /// Create, edit and delete dashboards.
    pub(crate) manage_dashboards: bool,
    /// Read the audit trail and the outbox.
    pub(crate) read_audit: bool,
}

/// `GET …/me/databases`: a database the caller may query, with what choosing it needs.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "QueryableDatabase", deny_unknown_fields)]
pub(crate) struct QueryableDatabaseView<'a> {
    #[schemars(schema_with = "database_id")]
    id: &'a str,
    name: &'a str,
    group: Option<&'a str>,
    #[schemars(schema_with = "adapter")]
    adapter: &'static str,
    restrict_access: bool,
    review_bypass_allowed: bool,
    /// The credentials it may run as (an agent: only `ai_allowed` ones).
    credentials: Vec<QueryableCredentialView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "QueryableCredential", deny_unknown_fields)]
struct QueryableCredentialView<'a> {
    #[schemars(schema_with = "credential_id")]
    id: &'a str,
    username: &'a str,
    reviews_required: u32,
    default_credential: bool,
}

impl<'a> QueryableDatabaseView<'a> {
    /// `db` with the credentials `usable` admits.
    pub(crate) fn of(db: &'a Database, usable: impl Fn(&Credential) -> bool) -> Self {
        Self {
            id: db.id.as_str(),
            name: &db.name,
            group: db.group.as_deref(),
            adapter: db.adapter.as_str(),
            restrict_access: db.restrict_access,
            review_bypass_allowed: db.review_bypass_allowed,
            credentials: db
                .credentials
                .iter()
                .filter(|c| usable(c))
                .map(|c| QueryableCredentialView {
                    id: c.id.as_str(),
                    username: &c.username,
                    reviews_required: c.reviews_required,
                    default_credential: c.default_credential,
                })
                .collect(),
        }
    }
}

/// `GET|PUT …/permissions`: `{"database_id", "permissions": [{"subject_kind", "subject",
/// "access"}]}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Permissions", deny_unknown_fields)]
pub(crate) struct PermissionsView<'a> {
    database_id: &'a str,
    permissions: Vec<PermissionView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Permission", deny_unknown_fields)]
struct PermissionView<'a> {
    #[schemars(schema_with = "subject_kind")]
    subject_kind: &'static str,
    subject: &'a str,
    #[schemars(schema_with = "access_level")]
    access: &'static str,
}

impl<'a> PermissionsView<'a> {
    pub(crate) fn new(database_id: &'a str, access: &'a AccessControl) -> Self {
        Self {
            database_id,
            permissions: access
                .permissions
                .iter()
                .map(|p| PermissionView {
                    subject_kind: p.subject_kind.as_str(),
                    subject: &p.subject,
                    access: p.access.as_str(),
                })
                .collect(),
        }
    }
}

/// `GET|PUT …/data-protection`: `{"database_id", "inherits_from", "policies": [{"name",
/// "description", "columns": [{"column", "action"}]}]}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "DataProtection", deny_unknown_fields)]
pub(crate) struct DataProtectionView<'a> {
    database_id: &'a str,
    inherits_from: Option<&'a str>,
    policies: Vec<PolicyView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Policy", deny_unknown_fields)]
struct PolicyView<'a> {
    name: &'a str,
    description: Option<&'a str>,
    columns: Vec<ColumnView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "ColumnRule", deny_unknown_fields)]
struct ColumnView<'a> {
    column: &'a str,
    #[schemars(schema_with = "column_action")]
    action: &'static str,
}

impl<'a> DataProtectionView<'a> {
    pub(crate) fn new(database_id: &'a str, access: &'a AccessControl) -> Self {
        let document = &access.data_protection;
        Self {
            database_id,
            inherits_from: document.inherits_from.as_deref(),
            policies: document
                .policies
                .iter()
                .map(|p| PolicyView {
                    name: &p.name,
                    description: p.description.as_deref(),
                    columns: p
                        .columns
                        .iter()
                        .map(|c| ColumnView {
                            column: &c.column,
                            action: c.action.as_str(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// A query: `{"id", "database_id", "credential_id", "query", "limit", "author", "status",
/// "run", "inserted_at", "updated_at"}`; `run` is null until it starts.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Query", deny_unknown_fields)]
pub(crate) struct QueryView<'a> {
    /// `qry_…`: ordered by creation; pass as `after` to page on (newest first).
    id: &'a str,
    database_id: &'a str,
    credential_id: &'a str,
    query: &'a str,
    #[schemars(range(min = 1))]
    limit: u32,
    author: &'a str,
    /// Whether an AI agent wrote it: it then runs read-only and capped, whoever runs it.
    by_agent: bool,
    #[schemars(schema_with = "query_status")]
    status: &'static str,
    /// How many reviewers approved.
    approvals: u32,
    reviews: Vec<ReviewView<'a>>,
    /// A super admin ran their own query without the approvals it lacked.
    bypass: Option<BypassView<'a>>,
    run: Option<QueryRunView<'a>>,
    #[schemars(schema_with = "timestamp")]
    inserted_at: String,
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Review", deny_unknown_fields)]
struct ReviewView<'a> {
    reviewer: &'a str,
    #[schemars(schema_with = "decision")]
    decision: &'static str,
    comment: Option<&'a str>,
    #[schemars(schema_with = "timestamp")]
    reviewed_at: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Bypass", deny_unknown_fields)]
struct BypassView<'a> {
    by: &'a str,
    #[schemars(schema_with = "timestamp")]
    at: String,
    reason: &'a str,
    approvals: u32,
    required: u32,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "QueryRun", deny_unknown_fields)]
struct QueryRunView<'a> {
    run_by: &'a str,
    #[schemars(schema_with = "timestamp")]
    started_at: String,
    #[schemars(schema_with = "timestamp_or_null")]
    finished_at: Option<String>,
    row_count: u64,
    truncated: bool,
    duration_ms: u64,
    error: Option<&'a str>,
}

impl<'a> From<&'a crate::model::Query> for QueryView<'a> {
    fn from(query: &'a crate::model::Query) -> Self {
        Self {
            id: query.id.as_str(),
            database_id: &query.database_id,
            credential_id: &query.credential_id,
            query: &query.query,
            limit: query.limit,
            author: &query.author,
            by_agent: query.by_agent,
            status: query.status.as_str(),
            approvals: query.approvals(),
            reviews: query
                .reviews
                .iter()
                .map(|review| ReviewView {
                    reviewer: &review.reviewer,
                    decision: review.decision.as_str(),
                    comment: review.comment.as_deref(),
                    reviewed_at: review.at.to_string(),
                })
                .collect(),
            bypass: query.bypass.as_ref().map(|bypass| BypassView {
                by: &bypass.by,
                at: bypass.at.to_string(),
                reason: &bypass.reason,
                approvals: bypass.approvals,
                required: bypass.required,
            }),
            run: query.run.as_ref().map(|run| QueryRunView {
                run_by: &run.run_by,
                started_at: run.started_at.to_string(),
                finished_at: run.finished_at.map(|at| at.to_string()),
                row_count: run.row_count,
                truncated: run.truncated,
                duration_ms: run.duration_ms,
                error: run.error.as_deref(),
            }),
            inserted_at: query.inserted_at.to_string(),
            updated_at: query.updated_at.to_string(),
        }
    }
}

/// A delivery of the outbox: `{"id", "kind", "workflow_id", "channel", "resource_id",
/// "status", "attempts", "due_at", "last_error", "payload", "inserted_at", "updated_at",
/// "delivered_at"}`; `payload` is the JSON body every attempt sends.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Delivery", deny_unknown_fields)]
pub(crate) struct DeliveryView<'a> {
    /// `dlv_…`: ordered by creation; the `Idempotency-Key` of every attempt.
    id: &'a str,
    #[schemars(schema_with = "target_kind")]
    kind: &'static str,
    workflow_id: Option<&'a str>,
    channel: Option<&'a str>,
    /// The dashboard (a trigger) or query (a review request) it came from.
    resource_id: &'a str,
    #[schemars(schema_with = "delivery_status")]
    status: &'static str,
    attempts: u32,
    #[schemars(schema_with = "timestamp_or_null")]
    due_at: Option<String>,
    last_error: Option<&'a str>,
    /// The JSON body every attempt sends.
    payload: serde_json::Value,
    #[schemars(schema_with = "timestamp")]
    inserted_at: String,
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
    #[schemars(schema_with = "timestamp_or_null")]
    delivered_at: Option<String>,
}

/// How a workflow run the caller started is doing (`GET …/me/deliveries/{id}`): a delivery
/// without its payload, which holds row values.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "DeliveryProgress", deny_unknown_fields)]
pub(crate) struct DeliveryProgressView<'a> {
    /// `dlv_…`.
    id: &'a str,
    workflow_id: Option<&'a str>,
    #[schemars(schema_with = "delivery_status")]
    status: &'static str,
    /// Attempts started so far.
    attempts: u32,
    /// The next attempt while pending (the end of its lease while delivering).
    #[schemars(schema_with = "timestamp_or_null")]
    due_at: Option<String>,
    /// Why the last attempt failed.
    last_error: Option<&'a str>,
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
    #[schemars(schema_with = "timestamp_or_null")]
    delivered_at: Option<String>,
}

impl<'a> From<&'a crate::model::Delivery> for DeliveryProgressView<'a> {
    fn from(delivery: &'a crate::model::Delivery) -> Self {
        let workflow_id = match &delivery.target {
            crate::model::Target::Workflow { workflow_id } => Some(workflow_id.as_str()),
            crate::model::Target::Slack { .. } => None,
        };
        Self {
            id: delivery.id.as_str(),
            workflow_id,
            status: delivery.status.as_str(),
            attempts: delivery.attempts,
            due_at: delivery.due_at.map(|at| at.to_string()),
            last_error: delivery.last_error.as_deref(),
            updated_at: delivery.updated_at.to_string(),
            delivered_at: delivery.delivered_at.map(|at| at.to_string()),
        }
    }
}

impl<'a> From<&'a crate::model::Delivery> for DeliveryView<'a> {
    fn from(delivery: &'a crate::model::Delivery) -> Self {
        let (workflow_id, channel) = match &delivery.target {
            crate::model::Target::Workflow { workflow_id } => (Some(workflow_id.as_str()), None),
            crate::model::Target::Slack { channel } => (None, Some(channel.as_str())),
        };
        Self {
            id: delivery.id.as_str(),
            kind: delivery.target.kind().as_str(),
            workflow_id,
            channel,
            resource_id: &delivery.resource_id,
            status: delivery.status.as_str(),
            attempts: delivery.attempts,
            due_at: delivery.due_at.map(|at| at.to_string()),
            last_error: delivery.last_error.as_deref(),
            payload: serde_json::from_str(&delivery.body).unwrap_or(serde_json::Value::Null),
            inserted_at: delivery.inserted_at.to_string(),
            updated_at: delivery.updated_at.to_string(),
            delivered_at: delivery.delivered_at.map(|at| at.to_string()),
        }
    }
}

// The schemas of the fields whose Rust type says less than the answer (a wire name, an id's
// shape, a timestamp's format), for the derived `JsonSchema` of the views above.

/// A value of one of `names`.
fn one_of(names: impl IntoIterator<Item = &'static str>) -> Schema {
    let names: Vec<&str> = names.into_iter().collect();
    json_schema!({ "type": "string", "enum": names })
}

fn id(prefix: &str) -> Schema {
    json_schema!({ "type": "string", "pattern": format!("^{prefix}_[0-9a-z]{{26}}$"), "readOnly": true })
}

fn timestamp(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "date-time", "readOnly": true })
}

fn timestamp_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "format": "date-time", "readOnly": true })
}

fn database_id(_: &mut SchemaGenerator) -> Schema {
    id("db")
}

fn credential_id(_: &mut SchemaGenerator) -> Schema {
    id("crd")
}

fn dashboard_id(_: &mut SchemaGenerator) -> Schema {
    id("dash")
}

fn panel_id(_: &mut SchemaGenerator) -> Schema {
    id("pl")
}

fn action_id(_: &mut SchemaGenerator) -> Schema {
    id("act")
}

fn panel_type(_: &mut SchemaGenerator) -> Schema {
    one_of(["query"])
}

macro_rules! wire_names {
    ($($name:ident: $type:ty),* $(,)?) => {
        $(fn $name(_: &mut SchemaGenerator) -> Schema {
            one_of(<$type>::ALL.map(<$type>::as_str))
        })*
    };
}

wire_names! {
    adapter: crate::model::Adapter,
    audit_action: crate::model::AuditAction,
    run_outcome: crate::model::RunOutcome,
    resource_kind: crate::model::ResourceKind,
    subject_kind: crate::model::SubjectKind,
    access_level: crate::model::AccessLevel,
    column_action: crate::model::ColumnAction,
    query_status: crate::model::QueryStatus,
    decision: crate::model::Decision,
    target_kind: crate::model::TargetKind,
    delivery_status: crate::model::DeliveryStatus,
    scope: crate::model::Scope,
}

fn role(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "enum": [
        crate::model::Role::SuperAdmin.as_str(), crate::model::Role::Member.as_str(), null
    ] })
}
