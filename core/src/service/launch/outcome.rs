//! How a run ends: what its outcome is written to (the query's status and run, or an audit
//! event alone), and the status a failed run answers with.

use crate::model::{AuditAction, AuditEvent, Origin, Query, RunFacts, Timestamp};
use crate::run::RunError;
use crate::storage::{StorageError, WriteLog};
use crate::validate::ValidationErrors;

use super::super::error::ApiError;

/// What ends a run: where its outcome is recorded.
#[derive(Debug)]
pub(crate) enum Record {
    /// A stored query: its status and run, with the audit event.
    Query { query: Box<Query>, origin: Origin },
    /// A panel: the audit event alone.
    Panel {
        dashboard_id: String,
        panel_id: String,
        origin: Origin,
    },
    /// A dashboard input's choices query: the audit event alone, as a panel run's.
    InputChoices {
        dashboard_id: String,
        key: String,
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
    /// The wire door's check of its session's role before a statement: nothing is recorded
    /// (the statement's own event is).
    #[cfg_attr(
        not(feature = "postgres"),
        allow(dead_code, reason = "the door is built with the postgres feature")
    )]
    Silent,
    /// A check of a credential's role against the database's data protection: the event alone.
    ProtectionCheck {
        database_id: String,
        credential_id: String,
        origin: Origin,
    },
}

/// Writes how a stored query's run ended: its status and run, with its audit event, in one
/// change.
pub(crate) async fn record_query(
    storage: &dyn crate::storage::Storage,
    query: Box<Query>,
    origin: &Origin,
    facts: RunFacts,
    truncated: bool,
    error: Option<String>,
) -> Result<(), StorageError> {
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

impl Record {
    /// The metrics' name of the kind of run.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Record::Query { .. } => "query",
            Record::Panel { .. } => "panel",
            Record::PanelTest { .. } => "panel_test",
            Record::InputChoices { .. } => "input_choices",
            Record::Agent { .. } => "agent",
            Record::Schema { .. } => "schema",
            Record::ProtectionCheck { .. } => "protection_check",
            Record::Silent => "door_check",
        }
    }

    /// The audit event of a run that records nothing else, with its `facts`: every run but a
    /// stored query's (which is given back: [`record_query`]).
    pub(crate) fn event(self, facts: RunFacts) -> Recorded {
        let (origin, action, resource, changed) = match self {
            Record::Silent => return Recorded::Nothing,
            Record::Query { query, origin } => {
                return Recorded::Query {
                    query,
                    origin,
                    facts,
                };
            }
            Record::Panel {
                dashboard_id,
                panel_id,
                origin,
            } => (
                origin,
                AuditAction::PanelRun,
                dashboard_id,
                vec![format!("panels[{panel_id}]")],
            ),
            Record::PanelTest {
                database_id,
                origin,
            } => (origin, AuditAction::PanelTestRun, database_id, Vec::new()),
            Record::InputChoices {
                dashboard_id,
                key,
                origin,
            } => (
                origin,
                AuditAction::PanelRun,
                dashboard_id,
                vec![format!("inputs[{key}]")],
            ),
            Record::Agent {
                database_id,
                tool,
                origin,
            } => (
                origin,
                AuditAction::AgentCall,
                database_id,
                vec![tool.to_owned()],
            ),
            Record::ProtectionCheck {
                database_id,
                credential_id,
                origin,
            } => (
                origin,
                AuditAction::ProtectionCheck,
                database_id,
                vec![format!("credentials[{credential_id}]")],
            ),
            Record::Schema {
                database_id,
                origin,
            } => (origin, AuditAction::SchemaRead, database_id, Vec::new()),
        };
        let mut event = AuditEvent::new(&origin.without_idempotency(), action, &resource, changed);
        event.run = Some(facts);
        Recorded::Event(event)
    }
}

/// How a run's outcome is recorded ([`Record::event`]).
pub(crate) enum Recorded {
    /// Nothing.
    Nothing,
    /// Its audit event alone.
    Event(AuditEvent),
    /// A stored query's outcome ([`record_query`]), with its run's facts.
    Query {
        query: Box<Query>,
        origin: Origin,
        facts: RunFacts,
    },
}

pub(crate) fn run_error(error: RunError) -> ApiError {
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
            let mut errors = ValidationErrors::single("query", refused.to_string());
            for column in &refused.unmatched {
                errors.add(
                    "unmatched",
                    format!("{column} matches no column of a table: it protects nothing"),
                );
            }
            errors.into()
        }
    }
}
