//! The audit trail: one [`AuditEvent`] per change, stored by the backend in the same atomic
//! change as the write it records (README, "The audit trail").

use super::{EventId, Timestamp};

/// What a change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuditAction {
    /// `POST …/databases`.
    DatabaseCreate,
    /// `PATCH …/databases/{id}`.
    DatabaseUpdate,
    /// `PUT …/databases/setup` (a create or an update by `api_id`).
    DatabaseSetup,
    /// `DELETE …/databases/{id}`.
    DatabaseDelete,
    /// `DELETE …/databases/remove/{api_id}`.
    DatabaseRemove,
    /// `PUT …/databases/{id}/permissions` or `…/data-protection`.
    AccessUpdate,
    /// `POST /v1/dashboards`.
    DashboardCreate,
    /// `PUT` or `PATCH` of a dashboard.
    DashboardUpdate,
    /// `DELETE` of a dashboard.
    DashboardDelete,
    /// A caller key created (`dbconsole keys create`, or the server's first start).
    CallerKeyCreate,
    /// A caller key revoked (`dbconsole keys revoke`).
    CallerKeyRevoke,
}

wire_enum!(AuditAction, [
    DatabaseCreate => "database.create",
    DatabaseUpdate => "database.update",
    DatabaseSetup => "database.setup",
    DatabaseDelete => "database.delete",
    DatabaseRemove => "database.remove",
    AccessUpdate => "access_control.update",
    DashboardCreate => "dashboard.create",
    DashboardUpdate => "dashboard.update",
    DashboardDelete => "dashboard.delete",
    CallerKeyCreate => "caller_key.create",
    CallerKeyRevoke => "caller_key.revoke",
]);

impl AuditAction {
    /// The kind of record the action changes.
    pub fn resource_kind(self) -> ResourceKind {
        match self {
            AuditAction::DatabaseCreate
            | AuditAction::DatabaseUpdate
            | AuditAction::DatabaseSetup
            | AuditAction::DatabaseDelete
            | AuditAction::DatabaseRemove
            | AuditAction::AccessUpdate => ResourceKind::Database,
            AuditAction::DashboardCreate
            | AuditAction::DashboardUpdate
            | AuditAction::DashboardDelete => ResourceKind::Dashboard,
            AuditAction::CallerKeyCreate | AuditAction::CallerKeyRevoke => ResourceKind::CallerKey,
        }
    }
}

/// The kind of record an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceKind {
    /// A database (with its credentials and access control).
    Database,
    /// A dashboard.
    Dashboard,
    /// A stored caller credential.
    CallerKey,
}

wire_enum!(ResourceKind, [
    Database => "database",
    Dashboard => "dashboard",
    CallerKey => "caller_key",
]);

/// Who made a change: the caller credential's id (`None` for a static credential from the
/// environment, or the server itself) and name. Never its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    /// The stored key's id (`key_…`), when the caller presented a stored key.
    pub id: Option<String>,
    /// The key's name; for others what they are (`DBCONSOLE_API_KEY`, `dbconsole keys`…).
    pub name: String,
}

impl Actor {
    /// An actor that is not a stored key: a static credential, a command, the server.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            id: None,
            name: name.into(),
        }
    }
}

/// Where a change comes from: given with every write of the storage contract, and recorded in
/// its event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Who.
    pub actor: Actor,
    /// The request it was part of (its `x-request-id`), when it came through the HTTP API.
    pub request_id: Option<String>,
    /// The request's `Idempotency-Key`, when it has one: the write stores its answer with it.
    pub idempotency: Option<super::Idempotency>,
}

impl Origin {
    /// A change made by `actor` outside any request.
    pub fn of(actor: Actor) -> Self {
        Self {
            actor,
            request_id: None,
            idempotency: None,
        }
    }

    /// The answer to store with a write that produced `written`, when the request has an
    /// `Idempotency-Key`.
    pub fn answer(&self, written: super::Written<'_>) -> Option<super::StoredAnswer> {
        self.idempotency
            .as_ref()
            .map(|idempotency| idempotency.answer(written))
    }
}

/// One change, as the audit trail keeps it. `changes` holds field names only, never a value:
/// for a secret, `credentials[reader].password` says it changed, not to what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    /// `evt_…`: ordered by time.
    pub id: EventId,
    /// When the change was made.
    pub at: Timestamp,
    /// What it did.
    pub action: AuditAction,
    /// The id of the record changed (`db_…`, `dash_…`, `key_…`).
    pub resource_id: String,
    /// Who made it.
    pub actor: Actor,
    /// The request it was part of.
    pub request_id: Option<String>,
    /// The names of the fields it changed (for a create, the fields it set).
    pub changes: Vec<String>,
}

impl AuditEvent {
    /// The event of `action` on `resource_id` by `origin`, made now.
    pub fn new(
        origin: &Origin,
        action: AuditAction,
        resource_id: &str,
        changes: Vec<String>,
    ) -> Self {
        Self {
            id: EventId::generate(),
            at: Timestamp::now(),
            action,
            resource_id: resource_id.to_owned(),
            actor: origin.actor.clone(),
            request_id: origin.request_id.clone(),
            changes,
        }
    }
}

/// How long the audit trail keeps events: at most `max_age_days` days and at most `max_events`
/// events (the oldest go first); `None` bounds nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    /// Events older than this many days are deleted.
    pub max_age_days: Option<u32>,
    /// Beyond this many events, the oldest are deleted.
    pub max_events: Option<u64>,
}
