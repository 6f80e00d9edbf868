//! How a run ends: what its outcome is written to (the query's status and run, or an audit
//! event alone), and the status a failed run answers with.

use crate::model::{AuditAction, AuditEvent, Origin, Query, RunFacts, Timestamp};
use crate::run::RunError;
use crate::storage::{StorageError, WriteLog};
use crate::validate::ValidationErrors;

use super::super::error::ApiError;

/// What ends a run: where its outcome is recorded.
#[derive(Debug)]
pub(in crate::service) enum Record {
    /// A stored query: its status and run, with the audit event.
    Query { query: Box<Query>, origin: Origin },
    /// A panel: the audit event alone.
    Panel {
        dashboard_id: String,
        panel_id: String,
        origin: Origin,
    },
    /// A panel that is not saved, run by its editor: the audit event alone, on its database.
    PanelTest { database_id: String, origin: Origin },
    /// A tool call of an AI agent that ran a statement of its own (`describe_tables`): the
    /// audit event alone.
    Agent {
        database_id: String,
        tool: &'static str,
        origin: Origin,
    },
    /// A person's read of a database's catalog (the console's schema): the audit event alone.
    Schema { database_id: String, origin: Origin },
    /// A check of a credential's role against the database's data protection: the event alone.
    ProtectionCheck {
        database_id: String,
        credential_id: String,
        origin: Origin,
    },
}

/// Writes how a run ended: the query's outcome with its event, or a panel's event.
pub(super) async fn record_outcome(
    storage: &dyn crate::storage::Storage,
    record: Record,
    facts: RunFacts,
    truncated: bool,
    error: Option<String>,
) -> Result<(), StorageError> {
    match record {
        Record::Query { query, origin } => {
            let done = query.finished(&facts, truncated, error, Timestamp::now());
            let mut event = AuditEvent::new(
                &origin.without_idempotency(),
                AuditAction::QueryRun,
                done.id.as_str(),
                Vec::new(),
            );
            event.run = Some(facts);
            storage
                .replace_query(done, query.updated_at, WriteLog::from(event))
                .await
        }
        Record::Panel {
            dashboard_id,
            panel_id,
            origin,
        } => {
            let mut event = AuditEvent::new(
                &origin.without_idempotency(),
                AuditAction::PanelRun,
                &dashboard_id,
                vec![format!("panels[{panel_id}]")],
            );
            event.run = Some(facts);
            storage.append_log(event.into()).await
        }
        Record::PanelTest {
            database_id,
            origin,
        } => {
            let mut event = AuditEvent::new(
                &origin.without_idempotency(),
                AuditAction::PanelTestRun,
                &database_id,
                Vec::new(),
            );
            event.run = Some(facts);
            storage.append_log(event.into()).await
        }
        Record::Agent {
            database_id,
            tool,
            origin,
        } => {
            let mut event = AuditEvent::new(
                &origin.without_idempotency(),
                AuditAction::AgentCall,
                &database_id,
                vec![tool.to_owned()],
            );
            event.run = Some(facts);
            storage.append_log(event.into()).await
        }
        Record::ProtectionCheck {
            database_id,
            credential_id,
            origin,
        } => {
            let mut event = AuditEvent::new(
                &origin.without_idempotency(),
                AuditAction::ProtectionCheck,
                &database_id,
                vec![format!("credentials[{credential_id}]")],
            );
            event.run = Some(facts);
            storage.append_log(event.into()).await
        }
        Record::Schema {
            database_id,
            origin,
        } => {
            let mut event = AuditEvent::new(
                &origin.without_idempotency(),
                AuditAction::SchemaRead,
                &database_id,
                Vec::new(),
            );
            event.run = Some(facts);
            storage.append_log(event.into()).await
        }
    }
}

pub(super) fn run_error(error: RunError) -> ApiError {
    match error {
        RunError::Input { field, message } => ValidationErrors::single(&field, message).into(),
        RunError::Database(message) => ValidationErrors::single("query", message).into(),
        RunError::Connect(message) => {
            ApiError::BadGateway(format!("the database could not be reached: {message}"))
        }
        error @ RunError::TimedOut(_) => ApiError::GatewayTimeout(error.to_string()),
        error @ RunError::Busy => ApiError::Busy(error.to_string()),
        error @ RunError::NotBuilt(_) => ApiError::NotImplemented(error.to_string()),
        RunError::Cancelled => ApiError::Unavailable,
        RunError::TooLarge(why) => ValidationErrors::single("query", why).into(),
        RunError::Protected(refused) => {
            ValidationErrors::single("query", refused.to_string()).into()
        }
    }
}
