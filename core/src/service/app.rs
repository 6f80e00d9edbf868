//! [`App`]: what a built service holds: the pipeline's own few settings, and one state per
//! route family. A route row names its handler as `family.handler`, the method `handler` of the
//! field `family` here, found in the file of the same name; each family's state holds only what
//! its handlers read.

use std::sync::Arc;

use super::access::Access;
use super::agent::Agents;
use super::audit::Audit;
use super::body::BodyLimits;
use super::browser::Browser;
use super::cache::ReadCache;
use super::callers::Callers;
use super::check_connection::CheckConnection;
use super::dashboards::Dashboards;
use super::databases::Databases;
use super::document::Document;
use super::downloads::Downloads;
use super::me::Me;
use super::oidc::Oidc;
use super::outbox::Outbox;
use super::panels::Panels;
use super::protection_status::ProtectionStatus;
use super::provisioning::Provisioner;
use super::queries::Queries;
use super::reviews::Reviews;
use super::run_events::RunEvents;
use super::runs::Runs;
use super::schema::Schema;
use crate::model::Retention;
use crate::run::Runners;
use crate::seal::Sealer;
use crate::storage::Storage;

/// The service's state: the pipeline's settings and every route family's state.
#[derive(Debug)]
pub(crate) struct App {
    /// The path the service is mounted below (`""`: the root).
    pub(crate) base_path: String,
    /// Whether a principal in a request's extensions is trusted.
    pub(crate) trust_principal: bool,
    /// Whether requests are measured.
    pub(crate) metrics: bool,
    /// How much of a request body is read, and for how long.
    pub(crate) limits: BodyLimits,
    /// Who a presented key or token is.
    pub(crate) callers: Callers,
    /// The storage (stored answers of idempotent writes, upkeep).
    pub(crate) storage: Arc<dyn Storage>,
    /// The sealer of secrets.
    pub(crate) sealer: Sealer,
    /// The rendered records of recent reads, emptied of what a write touched.
    pub(crate) read_cache: Option<Arc<ReadCache>>,
    /// The query runners, whose pools of a changed database go at once.
    pub(crate) runners: Runners,
    /// How long the audit trail keeps events.
    pub(crate) audit_retention: Retention,
    /// The writer of run events.
    pub(crate) run_events: Arc<RunEvents>,

    /// `…/databases`.
    pub(crate) databases: Databases,
    /// `…/databases/…/check-connection`.
    pub(crate) check_connection: CheckConnection,
    /// `…/databases/{id}/permissions` and `…/data-protection`.
    pub(crate) access: Access,
    /// `…/databases/{id}/data-protection/status`.
    pub(crate) protection_status: ProtectionStatus,
    /// `…/databases/{id}/data-protection/plan`, `…/apply`, `…/provisioning/check-connection`.
    pub(crate) provisioning: Provisioner,
    /// `…/sign-in`, `…/sign-out`, and the session a cookie names.
    pub(crate) browser: Browser,
    /// `…/oidc`, `…/oidc/start`, `…/oidc/callback`: signing in through the issuer.
    pub(crate) oidc: Oidc,
    /// `…/me/passkeys`, `…/sign-in/passkey`: passkeys.
    pub(crate) passkeys: super::passkeys::Passkeys,
    /// `…/me/door…`: the PostgreSQL wire door's passwords and sessions.
    pub(crate) door: super::door::Door,
    /// `…/users`, `…/invitations`: people.
    pub(crate) users: super::users::Users,
    /// `…/me`, `…/me/databases`.
    pub(crate) me: Me,
    /// `…/me/databases/{id}/schema`.
    pub(crate) schema: Schema,
    /// `…/queries`.
    pub(crate) queries: Queries,
    /// `…/queries/{id}/run`.
    pub(crate) runs: Runs,
    /// `…/saved-queries`.
    pub(crate) saved_queries: super::saved_queries::SavedQueries,
    /// `…/queries/{id}/reviews`.
    pub(crate) reviews: Reviews,
    /// `…/queries/{id}/download`, `…/downloads/csv`.
    pub(crate) downloads: Downloads,
    /// `…/dashboards/test-run`, `…/dashboards/{id}/panels/{panel_id}/run`.
    pub(crate) panels: Panels,
    /// `…/audit`.
    pub(crate) audit: Audit,
    /// `…/deliveries`, row action triggers.
    pub(crate) outbox: Outbox,
    /// `…/dashboards`.
    pub(crate) dashboards: Dashboards,
    /// `/openapi.json`.
    pub(crate) document: Document,
    /// The AI agents' tools (the MCP endpoint of the server).
    pub(crate) agents: Agents,
}
