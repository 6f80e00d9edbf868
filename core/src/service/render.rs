//! Response bodies: the wire shape of each record, with exactly the keys the README's
//! *Endpoints* lists and
//! never a secret (the stored types hold secrets; these views have no field for them).

use serde::Serialize;

use crate::model::{
    AccessControl, Action, AuditEvent, Credential, Dashboard, Database, InputMapping, Panel,
    PanelDetails, PanelInput,
};

/// A database as every database endpoint returns it.
#[derive(Serialize)]
pub(crate) struct DatabaseView<'a> {
    id: &'a str,
    api_id: Option<&'a str>,
    name: &'a str,
    adapter: &'static str,
    hostname: &'a str,
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
    ai_max_rows: u32,
    connection_parameters: Vec<ParameterView<'a>>,
    credentials: Vec<CredentialView<'a>>,
    inserted_at: String,
    updated_at: String,
}

#[derive(Serialize)]
struct ParameterView<'a> {
    name: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct CredentialView<'a> {
    id: &'a str,
    username: &'a str,
    hostname: Option<&'a str>,
    ai_allowed: bool,
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
#[derive(Serialize)]
pub(crate) struct DashboardView<'a> {
    id: &'a str,
    name: &'a str,
    restricted_access: bool,
    panels: Vec<PanelView<'a>>,
}

#[derive(Serialize)]
struct PanelView<'a> {
    id: &'a str,
    title: &'a str,
    inputs: Vec<InputView<'a>>,
    actions: Vec<ActionView<'a>>,
    details: DetailsView<'a>,
}

#[derive(Serialize)]
struct InputView<'a> {
    key: &'a str,
    description: &'a str,
}

#[derive(Serialize)]
struct DetailsView<'a> {
    __type__: &'static str,
    query: &'a str,
    credential_id: &'a str,
}

#[derive(Serialize)]
struct ActionView<'a> {
    id: &'a str,
    label: Option<&'a str>,
    workflow_id: Option<&'a str>,
    input_mappings: Vec<MappingView<'a>>,
}

#[derive(Serialize)]
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
#[derive(Serialize)]
pub(crate) struct AuditEventView<'a> {
    id: &'a str,
    at: String,
    action: &'static str,
    resource: ResourceView<'a>,
    actor: ActorView<'a>,
    request_id: Option<&'a str>,
    changes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<RunFactsView<'a>>,
}

#[derive(Serialize)]
struct RunFactsView<'a> {
    database_id: &'a str,
    credential_id: &'a str,
    statement_sha256: &'a str,
    statement_length: u64,
    rows: u64,
    duration_ms: u64,
    outcome: &'static str,
}

#[derive(Serialize)]
struct ResourceView<'a> {
    kind: &'static str,
    id: &'a str,
}

#[derive(Serialize)]
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

#[derive(Serialize)]
pub(crate) struct PageView<T> {
    pub(crate) data: Vec<T>,
    pub(crate) next: Option<String>,
}

/// `GET|PUT …/permissions`: `{"database_id", "permissions": [{"subject_kind", "subject",
/// "access"}]}`.
#[derive(Serialize)]
pub(crate) struct PermissionsView<'a> {
    database_id: &'a str,
    permissions: Vec<PermissionView<'a>>,
}

#[derive(Serialize)]
struct PermissionView<'a> {
    subject_kind: &'static str,
    subject: &'a str,
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
#[derive(Serialize)]
pub(crate) struct DataProtectionView<'a> {
    database_id: &'a str,
    inherits_from: Option<&'a str>,
    policies: Vec<PolicyView<'a>>,
}

#[derive(Serialize)]
struct PolicyView<'a> {
    name: &'a str,
    description: Option<&'a str>,
    columns: Vec<ColumnView<'a>>,
}

#[derive(Serialize)]
struct ColumnView<'a> {
    column: &'a str,
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
#[derive(Serialize)]
pub(crate) struct QueryView<'a> {
    id: &'a str,
    database_id: &'a str,
    credential_id: &'a str,
    query: &'a str,
    limit: u32,
    author: &'a str,
    by_agent: bool,
    status: &'static str,
    approvals: u32,
    reviews: Vec<ReviewView<'a>>,
    bypass: Option<BypassView<'a>>,
    run: Option<QueryRunView<'a>>,
    inserted_at: String,
    updated_at: String,
}

#[derive(Serialize)]
struct ReviewView<'a> {
    reviewer: &'a str,
    decision: &'static str,
    comment: Option<&'a str>,
    reviewed_at: String,
}

#[derive(Serialize)]
struct BypassView<'a> {
    by: &'a str,
    at: String,
    reason: &'a str,
    approvals: u32,
    required: u32,
}

#[derive(Serialize)]
struct QueryRunView<'a> {
    run_by: &'a str,
    started_at: String,
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
#[derive(Serialize)]
pub(crate) struct DeliveryView<'a> {
    id: &'a str,
    kind: &'static str,
    workflow_id: Option<&'a str>,
    channel: Option<&'a str>,
    resource_id: &'a str,
    status: &'static str,
    attempts: u32,
    due_at: Option<String>,
    last_error: Option<&'a str>,
    payload: serde_json::Value,
    inserted_at: String,
    updated_at: String,
    delivered_at: Option<String>,
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
