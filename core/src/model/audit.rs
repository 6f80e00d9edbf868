//! The audit trail: one [`AuditEvent`] per change, stored by the backend in the same atomic
//! change as the write it records (docs/api.md, "The audit trail").

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
    /// A browser signed in (with a key, a sign-in link or OIDC), or a sign-in link was made.
    SessionCreate,
    /// A browser signed out, or a session or link was revoked (`dbconsole sessions revoke`).
    SessionRevoke,
    /// A sign-in refused (a wrong key, a used or expired link): `changes` names how and from
    /// where.
    SessionRefused,
    /// `POST …/queries`: a query stored.
    QueryCreate,
    /// `POST …/queries/{id}/run`: a query ran (the event carries [`RunFacts`]).
    QueryRun,
    /// `POST /v1/dashboards/{id}/panels/{panel_id}/run`: a panel ran (with [`RunFacts`]).
    PanelRun,
    /// `POST /v1/dashboards/test-run`: an editor ran a panel that is not saved (with
    /// [`RunFacts`]; on the panel's database).
    PanelTestRun,
    /// `POST …/queries/{id}/reviews`: a reviewer approved or rejected a query, or asked for
    /// changes.
    QueryReview,
    /// `PATCH …/queries/{id}`: its author changed a query's title, description or statement
    /// (`changes` names them, and `revision` when its approvals were counted again).
    QueryEdit,
    /// `POST …/queries/{id}/comments`: a comment on a query.
    QueryComment,
    /// `POST …/saved-queries`: a query saved.
    SavedQueryCreate,
    /// `PATCH …/saved-queries/{id}`: a saved query renamed, shared otherwise or changed
    /// (`changes` names what).
    SavedQueryUpdate,
    /// `DELETE …/saved-queries/{id}`: a saved query deleted.
    SavedQueryDelete,
    /// `POST …/queries/{id}/run` with `bypass_review`: a super admin ran their own query
    /// without the approvals it lacked.
    QueryReviewBypass,
    /// A tool call of an AI agent through the MCP endpoint (`changes` names the tool).
    AgentCall,
    /// `GET …/me/databases/{id}/schema`: a person's read of a database's catalog (with
    /// [`RunFacts`]).
    SchemaRead,
    /// `GET …/databases/{id}/data-protection/status`: a credential's role checked against the
    /// database's policies (with [`RunFacts`]; `changes` names the credential).
    ProtectionCheck,
    /// `POST …/databases/{id}/data-protection/apply`: the provisioning plan applied (`changes`
    /// names each login changed and how many statements it took).
    ProtectionApply,
    /// `POST /v1/dashboards/{id}/panels/{panel_id}/actions/{action_id}/trigger`: a row action
    /// put its workflow run in the outbox (`changes` names the panel, the action and the
    /// delivery).
    ActionTrigger,
    /// `POST …/deliveries/{id}/retry`: a dead letter retried by hand.
    DeliveryRetry,
    /// A user record created (an enrolled invitation, a first OIDC or link sign-in, a key made
    /// for a new user, an upgrade).
    UserCreate,
    /// A user changed: role, groups, display name, deactivated or active again, a passkey
    /// enrolled or removed (`changes` names what).
    UserUpdate,
    /// `POST …/invitations`: a person invited.
    InvitationCreate,
    /// `DELETE …/invitations/{id}`: a pending invitation revoked.
    InvitationRevoke,
    /// A door session opened (docs/door.md): on its database.
    DoorSessionOpen,
    /// A door session closed: on its database, with its counts.
    DoorSessionClose,
    /// A statement through the door: on its database, with its run's facts.
    DoorStatement,
    /// `POST …/me/door-passwords`: a door password minted.
    DoorPasswordCreate,
    /// `DELETE …/me/door-passwords/{id}`: a door password revoked.
    DoorPasswordRevoke,
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
    SessionCreate => "session.create",
    SessionRevoke => "session.revoke",
    SessionRefused => "session.refused",
    QueryCreate => "query.create",
    QueryRun => "query.run",
    PanelRun => "panel.run",
    PanelTestRun => "panel.test_run",
    QueryReview => "query.review",
    QueryEdit => "query.edit",
    QueryComment => "query.comment",
    SavedQueryCreate => "saved_query.create",
    SavedQueryUpdate => "saved_query.update",
    SavedQueryDelete => "saved_query.delete",
    QueryReviewBypass => "query.review_bypass",
    AgentCall => "agent.call",
    SchemaRead => "database.schema_read",
    ProtectionCheck => "data_protection.check",
    ProtectionApply => "data_protection.apply",
    ActionTrigger => "action.trigger",
    DeliveryRetry => "delivery.retry",
    UserCreate => "user.create",
    UserUpdate => "user.update",
    InvitationCreate => "invitation.create",
    InvitationRevoke => "invitation.revoke",
    DoorSessionOpen => "door.session_open",
    DoorSessionClose => "door.session_close",
    DoorStatement => "door.statement",
    DoorPasswordCreate => "door_password.create",
    DoorPasswordRevoke => "door_password.revoke",
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
            | AuditAction::AccessUpdate
            | AuditAction::AgentCall
            | AuditAction::SchemaRead
            | AuditAction::PanelTestRun
            | AuditAction::ProtectionCheck
            | AuditAction::ProtectionApply
            | AuditAction::DoorSessionOpen
            | AuditAction::DoorSessionClose
            | AuditAction::DoorStatement => ResourceKind::Database,
            AuditAction::DashboardCreate
            | AuditAction::DashboardUpdate
            | AuditAction::DashboardDelete
            | AuditAction::PanelRun
            | AuditAction::ActionTrigger => ResourceKind::Dashboard,
            AuditAction::DeliveryRetry => ResourceKind::Delivery,
            AuditAction::QueryCreate
            | AuditAction::QueryRun
            | AuditAction::QueryReview
            | AuditAction::QueryEdit
            | AuditAction::QueryComment
            | AuditAction::QueryReviewBypass => ResourceKind::Query,
            AuditAction::CallerKeyCreate | AuditAction::CallerKeyRevoke => ResourceKind::CallerKey,
            AuditAction::SessionCreate
            | AuditAction::SessionRevoke
            | AuditAction::SessionRefused
            | AuditAction::InvitationCreate
            | AuditAction::InvitationRevoke
            | AuditAction::DoorPasswordCreate
            | AuditAction::DoorPasswordRevoke => ResourceKind::Session,
            AuditAction::UserCreate | AuditAction::UserUpdate => ResourceKind::User,
            AuditAction::SavedQueryCreate
            | AuditAction::SavedQueryUpdate
            | AuditAction::SavedQueryDelete => ResourceKind::SavedQuery,
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
    /// A browser session or sign-in link.
    Session,
    /// A query.
    Query,
    /// A delivery of the outbox.
    Delivery,
    /// A user.
    User,
    /// A saved query.
    SavedQuery,
}

wire_enum!(ResourceKind, [
    Database => "database",
    Dashboard => "dashboard",
    CallerKey => "caller_key",
    Session => "session",
    Query => "query",
    Delivery => "delivery",
    User => "user",
    SavedQuery => "saved_query",
]);

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunOutcome {
    /// Every row it sent was sent.
    Succeeded,
    /// The database (or the connection to it) failed.
    Failed,
    /// The client went away; the statement was cancelled on the server.
    Cancelled,
    /// It ran past its timeout and was ended.
    TimedOut,
}

wire_enum!(RunOutcome, [
    Succeeded => "succeeded",
    Failed => "failed",
    Cancelled => "cancelled",
    TimedOut => "timed_out",
]);

/// What the audit trail keeps of a run: where, as whom, how big the statement was and a digest
/// of it, and what came of it. Never the statement's text, its inputs or a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFacts {
    /// The database it ran on.
    pub database_id: String,
    /// The credential it ran as.
    pub credential_id: String,
    /// SHA-256 of the statement's text, in lowercase hex.
    pub statement_sha256: String,
    /// The statement's length in bytes.
    pub statement_length: u64,
    /// How many rows were sent.
    pub rows: u64,
    /// How many rows a write changed, when the database said (`None` for a read).
    pub affected_rows: Option<u64>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: RunOutcome,
}

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

    /// The same origin with no `Idempotency-Key`: for writes whose answer is never stored (a
    /// run, a review).
    pub fn without_idempotency(&self) -> Self {
        Self {
            idempotency: None,
            ..self.clone()
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
    /// For a run, what ran and what came of it.
    pub run: Option<RunFacts>,
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
            run: None,
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
