//! An audit event as `GET …/audit` lists it: [`AuditEventView`], with the record it changed,
//! who changed it and, for a run, the run's facts.

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::{audit_action, resource_kind, run_outcome, timestamp};
use crate::model::AuditEvent;

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
    /// The rows a write changed, when the database said (null for a read).
    affected_rows: Option<u64>,
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
                affected_rows: run.affected_rows,
                duration_ms: run.duration_ms,
                outcome: run.outcome.as_str(),
            }),
        }
    }
}
