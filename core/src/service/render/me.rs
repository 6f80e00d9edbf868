//! `GET …/me` and `GET …/me/databases`: who the caller is and what it may do ([`MeView`],
//! [`MayView`]), and the databases it may query ([`QueryableDatabaseView`]); `GET
//! …/me/sessions`: the user's browser sessions ([`MySessionView`]).

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::{adapter, credential_id, database_id, role, scope};
use crate::model::{Credential, Database};

/// One of the user's live browser sessions (`GET …/me/sessions`): never its secret.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "MySession", deny_unknown_fields)]
pub(crate) struct MySessionView<'a> {
    /// `ses_…`: what `DELETE …/me/sessions/{id}` takes.
    pub(crate) id: &'a str,
    /// How it was signed in: `key`, `link` or `oidc`.
    pub(crate) method: &'static str,
    /// When.
    #[schemars(schema_with = "super::fields::timestamp")]
    pub(crate) created_at: String,
    /// Its last request (written at most once a minute).
    #[schemars(schema_with = "super::fields::timestamp")]
    pub(crate) last_seen_at: String,
    /// When it ends whatever its use.
    #[schemars(schema_with = "super::fields::timestamp")]
    pub(crate) expires_at: String,
    /// Whether it is the session of this request.
    pub(crate) current: bool,
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
    /// Create, edit and delete every dashboard.
    pub(crate) manage_dashboards: bool,
    /// Make dashboards (and edit those one is an editor of: docs/dashboards.md, "Who edits and
    /// views").
    pub(crate) make_dashboards: bool,
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
