//! Running queries (README, "Running queries"): the query history (`…/queries`), running a
//! stored query once (`…/queries/{id}/run`), and running a dashboard panel
//! (`…/dashboards/{id}/panels/{panel_id}/run`).
//!
//! Who may run what is decided here, before any connection opens: a principal is needed, a
//! restricted database needs a grant, an AI agent needs an `ai_enabled` database and an
//! `ai_allowed` credential and gets at most `ai_max_rows` rows. Then a run is spawned: it
//! streams its rows into the response body and records its outcome (the query's status, one
//! audit event, the metrics) when it ends, whether the client stayed or not.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{HeaderValue, Method, Response, StatusCode, header};
use http_body::Body;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use tokio::sync::{mpsc, oneshot};

use super::check_connection::open_target;
use super::error::ApiError;
use super::render::{PageView, QueryView};
use super::response::{ResponseBody, json_response};
use super::router::Route;
use super::{Call, Shared, metrics, page_request, split_page};
use crate::auth::Caller;
use crate::model::{
    AccessLevel, Adapter, AuditAction, AuditEvent, BypassRequest, Credential, Database, Decision,
    Origin, Panel, PanelDetails, Principal, Query, QueryId, QueryStatus, Review, ReviewRefusal,
    Role, RunFacts, RunOutcome, RunRefusal, Timestamp,
};
use crate::run::protect::{Protection, Refused};
use crate::run::statement::{self, Dialect};
use crate::run::{
    CHANNEL_CHUNKS, Connector, Format, Inputs, Opened, PoolKey, RowSink, RunError, RunJob,
};
use crate::storage::{Edits as _, Page, QueryFilter, StorageError, WriteLog};
use crate::validate::{QUERY_MAX, ValidationErrors, message};

/// Rows a run returns when its request sets no `limit`.
pub const DEFAULT_ROW_LIMIT: u32 = 1_000;

/// The most rows a run may return unless the service is built with another maximum.
pub const DEFAULT_MAX_ROWS: u32 = 100_000;

/// Statement timeout when the credential sets none.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The dialect a statement of this adapter is read in.
fn dialect(adapter: Adapter) -> Dialect {
    match adapter {
        Adapter::Postgres => Dialect::Postgres,
        Adapter::Mysql => Dialect::Mysql,
        Adapter::Clickhouse => Dialect::Clickhouse,
        Adapter::Sqlserver => Dialect::Sqlserver,
        Adapter::Oracle => Dialect::Oracle,
    }
}

/// What ends a run: where its outcome is recorded.
pub(super) enum Record {
    /// A stored query: its status and run, with the audit event.
    Query { query: Box<Query>, origin: Origin },
    /// A panel: the audit event alone.
    Panel {
        dashboard_id: String,
        panel_id: String,
        origin: Origin,
    },
    /// A tool call of an AI agent that ran a statement of its own (`describe_tables`): the
    /// audit event alone.
    Agent {
        database_id: String,
        tool: &'static str,
        origin: Origin,
    },
}

impl Shared {
    /// The principal of a caller of the query routes: 403 without one.
    pub(super) fn principal<'a>(&self, caller: &'a Caller) -> Result<&'a Principal, ApiError> {
        caller.principal.as_ref().ok_or_else(|| {
            ApiError::Denied(
                "running queries needs a user: a key or token bound to one (dbconsole keys create \
                 --user …), or a principal the embedding program vouches for"
                    .to_owned(),
            )
        })
    }

    /// Whether `principal` may query `db` (README, "Who may do what"): every database when it
    /// is a super admin, an unrestricted one when it is a member, a restricted one when a
    /// permission names it or one of its groups.
    pub(super) async fn may_query(
        &self,
        principal: &Principal,
        db: &Database,
    ) -> Result<bool, ApiError> {
        if principal.role == Role::SuperAdmin || !db.restrict_access {
            return Ok(true);
        }
        let access = self.storage.access_control(db.id.as_str()).await?;
        Ok(access.is_some_and(|access| {
            access
                .permissions
                .iter()
                .any(|permission| principal.is_named_by(permission))
        }))
    }

    /// 403 unless `principal` may query `db` as `credential`, with the AI limits of an agent;
    /// the most rows it may get.
    pub(super) async fn admit(
        &self,
        principal: &Principal,
        db: &Database,
        credential: &Credential,
        limit: u32,
    ) -> Result<u32, ApiError> {
        if !self.may_query(principal, db).await? {
            return Err(ApiError::Denied(format!(
                "{} has no access to database {}: it restricts access, and no permission names \
                 the user or one of its groups",
                principal.user, db.id
            )));
        }
        if principal.agent {
            if !db.ai_enabled {
                return Err(ApiError::Denied(format!(
                    "AI agents may not query database {}: its ai_enabled is false",
                    db.id
                )));
            }
            if !credential.ai_allowed {
                return Err(ApiError::Denied(format!(
                    "AI agents may not query as credential {}: its ai_allowed is false",
                    credential.id
                )));
            }
            return Ok(limit.min(db.ai_max_rows));
        }
        Ok(limit)
    }

    pub(super) async fn queries<B>(
        &self,
        route: Route<'_>,
        call: Call<B>,
        caller: &Caller,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let principal = self.principal(caller)?;
        match (route, &call.method) {
            (Route::Queries, &Method::POST) => {
                let body = call.json(self).await?;
                let query = self.create_query(principal, body, origin).await?;
                Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
            }
            (Route::Queries, _) => self.list_queries(principal, call.query.as_deref()).await,
            (Route::Query(id), _) => {
                let query = self.visible_query(principal, &id).await?;
                Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
            }
            (Route::QueryRun(id), _) => {
                let format = Format::from_accept(accept(&call.headers));
                let body = call.optional_json(self).await?;
                self.run_query(principal, &id, &body, format, origin).await
            }
            (Route::QueryReviews(id), _) => {
                let body = call.json(self).await?;
                self.review_query(principal, &id, body, origin).await
            }
            (
                Route::PanelRun {
                    dashboard, panel, ..
                },
                _,
            ) => {
                let format = Format::from_accept(accept(&call.headers));
                let body = call.json(self).await?;
                self.run_panel(principal, &dashboard, &panel, body, format, origin)
                    .await
            }
            _ => Err(ApiError::NotFound),
        }
    }

    /// The query `id` if `principal` may see it (its author, or one who may query its
    /// database); 404 otherwise.
    async fn visible_query(&self, principal: &Principal, id: &str) -> Result<Query, ApiError> {
        let query = self.storage.query(id).await?.ok_or(ApiError::NotFound)?;
        if query.author == principal.user || principal.role == Role::SuperAdmin {
            return Ok(query);
        }
        match self.storage.database(&query.database_id).await? {
            Some(db) if self.may_query(principal, &db).await? => Ok(query),
            _ => Err(ApiError::NotFound),
        }
    }

    async fn list_queries(
        &self,
        principal: &Principal,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let page = crate::validate::parse_page_query(query)?;
        let params: HashMap<String, String> =
            form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .filter(|(_, value)| !value.is_empty())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
        // An empty `status=` names no status either: 422 (README, "Finding records").
        let status = crate::validate::parse_named_parameter::<QueryStatus>(query, "status")?;
        // `reviewer=me`: only what the caller can act on as a reviewer (README, "Reviews"); an
        // empty `reviewer=` is no `me` either.
        let reviewer = crate::validate::given_parameter(query, "reviewer");
        let as_reviewer = match reviewer.as_deref() {
            None => false,
            Some("me") => true,
            Some(_) => {
                return Err(ValidationErrors::single(
                    "reviewer",
                    "must be \"me\": a reviewer lists only what they can act on",
                )
                .into());
            }
        };
        let filter = QueryFilter {
            database_id: params.get("database_id").map(String::as_str),
            author: params.get("author").map(String::as_str),
            status,
        };
        let items = self
            .storage
            .list_queries(page_request(&page), filter)
            .await?;
        let (items, next) = split_page(items, &page, |q| q.id.to_string());
        // A page keeps what the principal may see: it may be shorter than `limit` (README).
        let mut visible = Vec::with_capacity(items.len());
        let mut allowed: HashMap<String, bool> = HashMap::new();
        let mut reviews: HashMap<String, bool> = HashMap::new();
        for query in items {
            if as_reviewer {
                let open = matches!(
                    query.status,
                    QueryStatus::Ready | QueryStatus::AwaitingReview
                );
                if !open || query.author == principal.user || query.reviewed_by(&principal.user) {
                    continue;
                }
                let may = if let Some(known) = reviews.get(&query.database_id) {
                    *known
                } else {
                    let may = match self.storage.database(&query.database_id).await? {
                        Some(db) => self.may_review(principal, &db).await?,
                        None => false,
                    };
                    reviews.insert(query.database_id.clone(), may);
                    may
                };
                if !may {
                    continue;
                }
            }
            let sees = if query.author == principal.user || principal.role == Role::SuperAdmin {
                true
            } else if let Some(known) = allowed.get(&query.database_id) {
                *known
            } else {
                let sees = match self.storage.database(&query.database_id).await? {
                    Some(db) => self.may_query(principal, &db).await?,
                    None => false,
                };
                allowed.insert(query.database_id.clone(), sees);
                sees
            };
            if sees {
                visible.push(query);
            }
        }
        let data: Vec<QueryView<'_>> = visible.iter().map(QueryView::from).collect();
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }

    /// Stores the query `body` describes, by `principal`.
    pub(super) async fn create_query(
        &self,
        principal: &Principal,
        body: serde_json::Map<String, Value>,
        origin: &Origin,
    ) -> Result<Query, ApiError> {
        let mut errors = ValidationErrors::new();
        let text = |errors: &mut ValidationErrors, field: &str| match body.get(field) {
            Some(Value::String(value)) if !value.trim().is_empty() => Some(value.clone()),
            None | Some(Value::Null) => {
                errors.add(field, message::BLANK);
                None
            }
            Some(Value::String(_)) => {
                errors.add(field, message::BLANK);
                None
            }
            Some(_) => {
                errors.add(field, message::INVALID);
                None
            }
        };
        let database_id = text(&mut errors, "database_id");
        let credential_id = text(&mut errors, "credential_id");
        let query_text = text(&mut errors, "query");
        let limit = match body.get("limit") {
            None | Some(Value::Null) => DEFAULT_ROW_LIMIT.min(self.max_rows),
            Some(value) => match value.as_u64() {
                Some(n) if n >= 1 && n <= u64::from(self.max_rows) => n as u32,
                _ => {
                    errors.add(
                        "limit",
                        format!("must be a whole number from 1 to {}", self.max_rows),
                    );
                    0
                }
            },
        };
        if let Some(text) = &query_text
            && text.len() > QUERY_MAX
        {
            errors.add(
                "query",
                format!("should be at most {QUERY_MAX} character(s)"),
            );
        }
        let db = match &database_id {
            Some(id) => self.storage.database(id).await?,
            None => None,
        };
        if database_id.is_some() && db.is_none() {
            errors.add("database_id", "does not name a database");
        }
        let credential = match (&db, &credential_id) {
            (Some(db), Some(id)) => {
                let found = db.credentials.iter().find(|c| c.id.as_str() == id);
                if found.is_none() {
                    errors.add(
                        "credential_id",
                        "does not name a credential of this database",
                    );
                }
                found.cloned()
            }
            _ => None,
        };
        if let (Some(db), Some(text)) = (&db, &query_text)
            && let Err(why) = statement::single(text, dialect(db.adapter))
        {
            errors.add("query", why);
        }
        let (Some(db), Some(credential), Some(query_text)) = (db, credential, query_text) else {
            return Err(ApiError::Invalid(errors));
        };
        if !errors.is_empty() {
            return Err(ApiError::Invalid(errors));
        }
        // An agent's query keeps the agent's cap, whoever runs it later.
        let limit = self.admit(principal, &db, &credential, limit).await?;
        let now = Timestamp::now();
        let query = Query {
            target: Some(db.target_digest(&credential)),
            id: QueryId::generate(),
            database_id: db.id.as_str().to_owned(),
            credential_id: credential.id.as_str().to_owned(),
            query: query_text,
            limit,
            author: principal.user.clone(),
            by_agent: principal.agent,
            status: if credential.reviews_required > 0 {
                QueryStatus::AwaitingReview
            } else {
                QueryStatus::Ready
            },
            reviews: Vec::new(),
            bypass: None,
            run: None,
            inserted_at: now,
            updated_at: now,
        };
        let event = AuditEvent::new(
            origin,
            AuditAction::QueryCreate,
            query.id.as_str(),
            ["database_id", "credential_id", "query", "limit"]
                .map(str::to_owned)
                .to_vec(),
        );
        // A query that waits for reviews asks for them in its database's Slack channel, through
        // the outbox, in the same change (README, "Workflows and notifications").
        let outbox: Vec<_> = self
            .review_request(&db, &query, credential.reviews_required)
            .into_iter()
            .collect();
        let notify = !outbox.is_empty();
        let log = WriteLog {
            event,
            answer: origin.answer(crate::model::Written::Query(&query)),
            outbox,
        };
        self.storage.create_query(query.clone(), log).await?;
        if notify {
            self.wake_outbox();
        }
        Ok(query)
    }

    /// The query `id`'s database and credential as they are now: 422 when either was deleted.
    async fn target_of(&self, query: &Query) -> Result<(Database, Credential), ApiError> {
        let db = self
            .storage
            .database(&query.database_id)
            .await?
            .ok_or_else(|| {
                ValidationErrors::single("database_id", "the query's database was deleted")
            })?;
        let credential = db
            .credentials
            .iter()
            .find(|c| c.id.as_str() == query.credential_id)
            .cloned()
            .ok_or_else(|| {
                ValidationErrors::single("credential_id", "the query's credential was deleted")
            })?;
        Ok((db, credential))
    }

    pub(super) async fn run_query(
        &self,
        principal: &Principal,
        id: &str,
        body: &serde_json::Map<String, Value>,
        format: Format,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let query = self.visible_query(principal, id).await?;
        // 404 before 422: an unknown query is unknown whatever the body says.
        let bypass = bypass_of(body)?;
        if principal.agent && query.author != principal.user {
            return Err(ApiError::Denied(
                "an AI agent runs only the queries its user wrote".to_owned(),
            ));
        }
        match query.status {
            QueryStatus::Ready | QueryStatus::AwaitingReview => {}
            QueryStatus::Rejected => {
                return Err(ApiError::Conflict(RunRefusal::Rejected.to_string()));
            }
            QueryStatus::Running | QueryStatus::Succeeded | QueryStatus::Failed => {
                return Err(ApiError::Conflict(RunRefusal::AlreadyRan.to_string()));
            }
        }
        let (db, credential) = self.target_of(&query).await?;
        // Its approvals cover the statement run where it was written for, nowhere else.
        if query
            .target
            .as_ref()
            .is_some_and(|target| *target != db.target_digest(&credential))
        {
            return Err(ApiError::Conflict(format!(
                "the query's database or credential {} now connects elsewhere (host, port, \
                 database, tunnel, parameters or username changed since the query was made): \
                 it does not run; create a new query",
                credential.id
            )));
        }
        let max_rows = self.admit(principal, &db, &credential, query.limit).await?;
        // An agent's query is capped as an agent's whoever runs it, by the cap of now.
        let max_rows = if query.by_agent {
            max_rows.min(db.ai_max_rows)
        } else {
            max_rows
        };
        // What could refuse the run comes before the claim, so that a refused run leaves the
        // query as it was (but for its status, which follows a raised requirement: README,
        // "Reviews").
        if self.runners.get(db.adapter).is_none() {
            return Err(run_error(RunError::NotBuilt(db.adapter)));
        }
        let statement = statement::single(&query.query, dialect(db.adapter))
            .map_err(|why| ValidationErrors::single("query", why))?
            .to_owned();
        let bypass = match bypass {
            Some(asked) => Some(may_bypass(principal, &query, &db, asked)?),
            None => None,
        };
        let protection = self.protection_for_run(&db).await?;
        // The claim: of two runs, one moves the query to running and the other conflicts; a
        // review racing the claim lands either before it (and counts) or after (refused).
        let required = credential.reviews_required;
        let claimed = self
            .storage
            .update_query(id, |stored| {
                let running =
                    stored.claimed(&principal.user, required, bypass.clone(), Timestamp::now())?;
                let log = running
                    .bypass
                    .as_ref()
                    .filter(|_| stored.bypass.is_none())
                    .map(|_| {
                        WriteLog::from(AuditEvent::new(
                            &origin.without_idempotency(),
                            AuditAction::QueryReviewBypass,
                            id,
                            vec!["bypass".to_owned()],
                        ))
                    });
                Ok((running, log))
            })
            .await?;
        let running = match claimed {
            Ok(running) => running,
            Err(refusal) => {
                if let RunRefusal::AwaitingReview { .. } = refusal {
                    self.mark_awaiting(id, required).await;
                }
                return Err(ApiError::Conflict(refusal.to_string()));
            }
        };
        let record = Record::Query {
            query: Box::new(running),
            origin: origin.clone(),
        };
        // An AI agent's query runs read-only, as a panel does, whoever runs it.
        let read_only = principal.agent || query.by_agent;
        self.start_run(
            db, credential, statement, None, max_rows, read_only, format, record, protection,
        )
        .await
    }

    /// Moves a `ready` query whose credential now requires more approvals than it has back to
    /// `awaiting_review` (README, "Reviews").
    async fn mark_awaiting(&self, id: &str, required: u32) {
        let marked = self
            .storage
            .update_query(id, |stored| {
                if stored.status != QueryStatus::Ready || stored.approvals() >= required {
                    return Err(());
                }
                let mut waiting = stored.clone();
                waiting.status = QueryStatus::AwaitingReview;
                waiting.updated_at = Timestamp::now().not_before_next(stored.updated_at);
                Ok((waiting, None))
            })
            .await;
        if let Err(error) = marked {
            tracing::warn!(%error, "a query's status could not follow its raised requirement");
        }
    }

    /// Whether `principal` may review queries on `db` (README, "Reviews"): a super admin
    /// anywhere; on an unrestricted database anyone; on a restricted one those a `review` or
    /// `admin` permission names. AI agents never review.
    async fn may_review(&self, principal: &Principal, db: &Database) -> Result<bool, ApiError> {
        if principal.agent {
            return Ok(false);
        }
        if principal.role == Role::SuperAdmin || !db.restrict_access {
            return Ok(true);
        }
        let access = self.storage.access_control(db.id.as_str()).await?;
        Ok(access.is_some_and(|access| {
            access.permissions.iter().any(|permission| {
                matches!(permission.access, AccessLevel::Review | AccessLevel::Admin)
                    && principal.is_named_by(permission)
            })
        }))
    }

    async fn review_query(
        &self,
        principal: &Principal,
        id: &str,
        body: serde_json::Map<String, Value>,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        // 404 before 422: an unknown query is unknown whatever the body says.
        let query = self.visible_query(principal, id).await?;
        let (decision, comment) = review_of(&body)?;
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents do not review queries: a person does".to_owned(),
            ));
        }
        let (db, credential) = self.target_of(&query).await?;
        if !self.may_review(principal, &db).await? {
            return Err(ApiError::Denied(format!(
                "{} may not review queries on database {}: it restricts access, and no review or \
                 admin permission names the user or one of its groups",
                principal.user, db.id
            )));
        }
        let required = credential.reviews_required;
        let reviewed = self
            .storage
            .update_query(id, |stored| {
                let review = Review {
                    reviewer: principal.user.clone(),
                    decision,
                    comment: comment.clone(),
                    at: Timestamp::now(),
                };
                let next = stored.reviewed(review, required)?;
                let mut changes = vec!["reviews".to_owned()];
                if next.status != stored.status {
                    changes.push("status".to_owned());
                }
                let event = AuditEvent::new(
                    &origin.without_idempotency(),
                    AuditAction::QueryReview,
                    id,
                    changes,
                );
                Ok((next, Some(WriteLog::from(event))))
            })
            .await?;
        match reviewed {
            Ok(query) => Ok(json_response(StatusCode::OK, &QueryView::from(&query))),
            Err(refusal @ ReviewRefusal::OwnQuery) => Err(ApiError::Denied(refusal.to_string())),
            Err(refusal) => Err(ApiError::Conflict(refusal.to_string())),
        }
    }

    /// The database a panel's `credential_id` belongs to (credential ids are unique across
    /// databases), remembered once found.
    async fn database_of_credential(
        &self,
        credential_id: &str,
    ) -> Result<Option<Database>, ApiError> {
        let known = self
            .credential_index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(credential_id)
            .cloned();
        if let Some(id) = known
            && let Some(db) = self.storage.database(&id).await?
            && db
                .credentials
                .iter()
                .any(|c| c.id.as_str() == credential_id)
        {
            return Ok(Some(db));
        }
        let mut after: Option<String> = None;
        loop {
            let page = self
                .storage
                .list_databases(
                    Page {
                        after: after.as_deref(),
                        limit: 500,
                    },
                    crate::storage::DatabaseFilter::default(),
                )
                .await?;
            let Some(last) = page.last() else {
                return Ok(None);
            };
            after = Some(last.id.as_str().to_owned());
            if let Some(db) = page.into_iter().find(|db| {
                db.credentials
                    .iter()
                    .any(|c| c.id.as_str() == credential_id)
            }) {
                self.credential_index
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(credential_id.to_owned(), db.id.as_str().to_owned());
                return Ok(Some(db));
            }
        }
    }

    /// The database and credential a panel of `dashboard` runs as (`credential_id`), and the
    /// most rows it may give `principal` of `limit`: 422 when the credential is gone or needs
    /// reviews, 403 when `principal` may not run it (README, "Running queries").
    pub(super) async fn panel_access(
        &self,
        principal: &Principal,
        dashboard: &crate::model::Dashboard,
        credential_id: &str,
        limit: u32,
    ) -> Result<(Database, Credential, u32), ApiError> {
        let db = self
            .database_of_credential(credential_id)
            .await?
            .ok_or_else(|| {
                ValidationErrors::single(
                    "credential_id",
                    format!("the panel's credential {credential_id} names no stored credential"),
                )
            })?;
        let credential = db
            .credentials
            .iter()
            .find(|c| c.id.as_str() == credential_id)
            .cloned()
            .ok_or(ApiError::NotFound)?;
        if credential.reviews_required > 0 {
            return Err(ValidationErrors::single(
                "credential_id",
                "the panel's credential requires reviews: panels run only as credentials with \
                 reviews_required 0",
            )
            .into());
        }
        // A restricted dashboard runs only for those with access to the database; an agent
        // keeps to the AI limits on any dashboard.
        let max_rows = if dashboard.restricted_access || principal.agent {
            self.admit(principal, &db, &credential, limit).await?
        } else {
            limit
        };
        Ok((db, credential, max_rows))
    }

    /// Dashboard `dashboard_id` and the index of its panel `panel_id`: 404 when either is
    /// missing.
    pub(super) async fn dashboard_panel(
        &self,
        dashboard_id: &str,
        panel_id: &str,
    ) -> Result<(crate::model::Dashboard, usize), ApiError> {
        let dashboard = self
            .storage
            .dashboard(dashboard_id)
            .await?
            .ok_or(ApiError::NotFound)?;
        let panel = dashboard
            .panels
            .iter()
            .position(|p| p.id.as_str() == panel_id)
            .ok_or(ApiError::NotFound)?;
        Ok((dashboard, panel))
    }

    async fn run_panel(
        &self,
        principal: &Principal,
        dashboard_id: &str,
        panel_id: &str,
        body: serde_json::Map<String, Value>,
        format: Format,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (dashboard, panel) = self.dashboard_panel(dashboard_id, panel_id).await?;
        let panel = &dashboard.panels[panel];
        let PanelDetails::Query {
            query,
            credential_id,
        } = &panel.details;
        let inputs = panel_inputs(panel, &body)?;
        let limit = match body.get("limit") {
            None | Some(Value::Null) => DEFAULT_ROW_LIMIT.min(self.max_rows),
            Some(value) => match value.as_u64() {
                Some(n) if n >= 1 && n <= u64::from(self.max_rows) => n as u32,
                _ => {
                    return Err(ValidationErrors::single(
                        "limit",
                        format!("must be a whole number from 1 to {}", self.max_rows),
                    )
                    .into());
                }
            },
        };
        let (db, credential, max_rows) = self
            .panel_access(principal, &dashboard, credential_id, limit)
            .await?;
        let statement = statement::single(query, dialect(db.adapter))
            .map_err(|why| ValidationErrors::single("query", why))?
            .to_owned();
        let record = Record::Panel {
            dashboard_id: dashboard.id.as_str().to_owned(),
            panel_id: panel.id.as_str().to_owned(),
            origin: origin.clone(),
        };
        let protection = self.protection_for_run(&db).await?;
        self.start_run(
            db,
            credential,
            statement,
            Some(inputs),
            max_rows,
            true,
            format,
            record,
            protection,
        )
        .await
    }

    /// Spawns the run and answers as soon as it knows how: the first rows (200, streamed), or
    /// the error that came before them.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn start_run(
        &self,
        db: Database,
        credential: Credential,
        statement: String,
        inputs: Option<Inputs>,
        max_rows: u32,
        read_only: bool,
        format: Format,
        record: Record,
        protection: Option<Arc<Protection>>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let adapter = db.adapter;
        let Some(runner) = self.runners.get(adapter).cloned() else {
            let error = RunError::NotBuilt(adapter);
            return Err(run_error(error));
        };
        let timeout = credential
            .timeout
            .map(|secs| Duration::from_secs(u64::from(secs)))
            .unwrap_or(self.statement_timeout);
        let job = RunJob {
            pool: PoolKey {
                database_id: db.id.as_str().to_owned(),
                credential_id: credential.id.as_str().to_owned(),
                read_only,
            },
            version: db.updated_at,
            connector: self.connector(&db, &credential),
            statement: statement.clone(),
            inputs,
            max_rows: u64::from(max_rows),
            timeout,
            connect_timeout: self.check_timeout,
            protection,
        };
        let (chunks, body) = mpsc::channel(CHANNEL_CHUNKS);
        let (started, start) = oneshot::channel();
        let mut sink = RowSink::new(format, chunks, started, u64::from(max_rows));
        let storage = Arc::clone(&self.storage);
        let measured = self.metrics;
        let facts = RunFacts {
            database_id: db.id.as_str().to_owned(),
            credential_id: credential.id.as_str().to_owned(),
            statement_sha256: hex(&Sha256::digest(statement.as_bytes())),
            statement_length: statement.len() as u64,
            rows: 0,
            duration_ms: 0,
            outcome: RunOutcome::Succeeded,
        };
        tokio::spawn(async move {
            let began = Instant::now();
            let outcome = runner.run(job, &mut sink).await;
            let took = began.elapsed();
            let duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
            let (rows, truncated) = (sink.rows(), sink.truncated());
            let run_outcome = match &outcome {
                Ok(()) => RunOutcome::Succeeded,
                Err(RunError::Cancelled) => RunOutcome::Cancelled,
                Err(RunError::TimedOut(_)) => RunOutcome::TimedOut,
                Err(_) => RunOutcome::Failed,
            };
            let kind = match record {
                Record::Query { .. } => "query",
                Record::Panel { .. } => "panel",
                Record::Agent { .. } => "agent",
            };
            if measured {
                metrics::record_run(adapter.as_str(), kind, run_outcome.as_str(), rows, took);
            }
            let facts = RunFacts {
                rows,
                duration_ms,
                outcome: run_outcome,
                ..facts
            };
            let error = outcome.as_ref().err().map(ToString::to_string);
            // A query's history holds its outcome before the client reads the end of its
            // result; a panel's event is written after (it is on no one's way).
            let record = match record {
                query @ Record::Query { .. } => {
                    let written =
                        record_outcome(&*storage, query, facts.clone(), truncated, error.clone())
                            .await;
                    if let Err(error) = written {
                        tracing::error!(%error, "the outcome of a run could not be recorded");
                    }
                    None
                }
                panel => Some(panel),
            };
            sink.finish(&outcome, duration_ms).await;
            if let Some(panel) = record
                && let Err(error) = record_outcome(&*storage, panel, facts, truncated, error).await
            {
                tracing::error!(%error, "the outcome of a run could not be recorded");
            }
        });
        match start.await {
            Ok(Ok(())) => {
                let mut response = Response::new(ResponseBody::stream(body));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(format.content_type()),
                );
                Ok(response)
            }
            Ok(Err(error)) => Err(run_error(error)),
            Err(_) => {
                tracing::error!("a run ended without an answer");
                Err(ApiError::Internal)
            }
        }
    }

    /// The data protection a run on `db` is checked against (`None`: it has no policies); 422
    /// when its adapter's statements can't be checked.
    pub(super) async fn protection_for_run(
        &self,
        db: &Database,
    ) -> Result<Option<Arc<Protection>>, ApiError> {
        let protection = self.protection_of(db).await?;
        if let Some(protection) = &protection
            && !matches!(db.adapter, Adapter::Postgres | Adapter::Mysql)
        {
            return Err(run_error(RunError::Protected(Refused::undecided(
                protection,
                format!(
                    "statements on {} can't be checked against data protection yet (only \
                     PostgreSQL's and MySQL's can): no query runs on a database with policies",
                    db.adapter.as_str()
                ),
            ))));
        }
        Ok(protection)
    }

    /// The columns `db`'s data protection protects: its own policies and those of every
    /// database it inherits from, the whole chain (README, "Data protection"); `None` when
    /// there are none.
    async fn protection_of(&self, db: &Database) -> Result<Option<Arc<Protection>>, ApiError> {
        let mut chain = Vec::new();
        let mut next = Some(db.id.as_str().to_owned());
        while let Some(id) = next.take() {
            if chain.iter().any(|(seen, _)| *seen == id) {
                break;
            }
            if let Some(access) = self.storage.access_control(&id).await? {
                next = access.data_protection.inherits_from.clone();
                chain.push((id, access.data_protection));
            }
        }
        let protection = Protection::of_chain(
            chain
                .iter()
                .map(|(id, protection)| (id.as_str(), protection)),
        );
        Ok((!protection.is_empty()).then(|| Arc::new(protection)))
    }

    /// Opens `credential`'s target when a connection opens, through the database's tunnel.
    fn connector(&self, db: &Database, credential: &Credential) -> Connector {
        let sealer = self.sealer.clone();
        let db = Arc::new(db.clone());
        let credential = Arc::new(credential.clone());
        let dialer = self.tunnel_dialer.clone();
        let timeout = self.check_timeout;
        Arc::new(move || {
            let sealer = sealer.clone();
            let db = Arc::clone(&db);
            let credential = Arc::clone(&credential);
            let dialer = dialer.clone();
            Box::pin(async move {
                let mut target =
                    open_target(&sealer, &db, &credential, timeout).map_err(|error| {
                        tracing::error!(%error, "a stored secret does not open");
                        "a stored secret of this database does not open with this server's keys"
                            .to_owned()
                    })?;
                let tunnel = match (&target.tunnel_id, dialer) {
                    (None, _) => None,
                    (Some(id), None) => return Err(crate::check::tunnel::no_dialer_message(id)),
                    (Some(id), Some(dialer)) => {
                        let endpoint = dialer
                            .forward(id, &target.host, target.port)
                            .await
                            .map_err(|error| format!("tunnel \"{id}\": {error}"))?;
                        target.connect_via = Some(endpoint.local_addr());
                        Some(endpoint)
                    }
                };
                Ok(Opened { target, tunnel })
            })
        })
    }
}

/// The inputs of a panel run: `{"inputs": {"key": "value"}}`; every declared key given (a
/// string, number or boolean), no other.
fn panel_inputs(panel: &Panel, body: &serde_json::Map<String, Value>) -> Result<Inputs, ApiError> {
    let mut errors = ValidationErrors::new();
    let declared: Vec<String> = panel.inputs.iter().map(|i| i.key.clone()).collect();
    let mut values = HashMap::new();
    let given = match body.get("inputs") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return Err(ValidationErrors::single("inputs", "must be an object").into());
        }
    };
    for (key, value) in &given {
        let field = format!("inputs.{key}");
        if !declared.contains(key) {
            errors.add(&field, "is not an input of this panel");
            continue;
        }
        match value {
            Value::String(text) => {
                values.insert(key.clone(), text.clone());
            }
            Value::Number(n) => {
                values.insert(key.clone(), n.to_string());
            }
            Value::Bool(b) => {
                values.insert(key.clone(), b.to_string());
            }
            _ => errors.add(&field, "must be a string, a number or a boolean"),
        }
    }
    for key in &declared {
        if !given.contains_key(key) {
            errors.add(&format!("inputs.{key}"), "is missing");
        }
    }
    errors
        .into_result(Inputs { declared, values })
        .map_err(Into::into)
}

/// Writes how a run ended: the query's outcome with its event, or a panel's event.
async fn record_outcome(
    storage: &dyn crate::storage::Storage,
    record: Record,
    facts: RunFacts,
    truncated: bool,
    error: Option<String>,
) -> Result<(), StorageError> {
    match record {
        Record::Query { query, origin } => {
            let mut done = (*query).clone();
            let now = Timestamp::now();
            done.updated_at = now.not_before_next(query.updated_at);
            done.status = if facts.outcome == RunOutcome::Succeeded {
                QueryStatus::Succeeded
            } else {
                QueryStatus::Failed
            };
            if let Some(run) = &mut done.run {
                run.finished_at = Some(now);
                run.row_count = facts.rows;
                run.truncated = truncated;
                run.duration_ms = facts.duration_ms;
                run.error = error;
            }
            let mut event = AuditEvent::new(
                &origin.without_idempotency(),
                AuditAction::QueryRun,
                done.id.as_str(),
                Vec::new(),
            );
            event.run = Some(facts);
            storage
                .replace_query(done, query.updated_at, Some(WriteLog::from(event)))
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
    }
}

fn run_error(error: RunError) -> ApiError {
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
        RunError::Protected(refused) => {
            ValidationErrors::single("query", refused.to_string()).into()
        }
    }
}

/// Longest review comment or bypass reason, in characters.
pub const REASON_MAX: usize = 2_000;

/// A run's `bypass_review` as asked: whether it was acknowledged, and why.
#[derive(Debug)]
pub(super) struct AskedBypass {
    acknowledge: bool,
    reason: String,
}

/// The `bypass_review` of a run's body, when it has one: `{"acknowledge": true, "reason": "…"}`
/// (422 when it is not of that shape; whether it may be used is [`may_bypass`]'s question).
fn bypass_of(body: &serde_json::Map<String, Value>) -> Result<Option<AskedBypass>, ApiError> {
    let asked = match body.get("bypass_review") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(asked)) => asked,
        Some(_) => {
            return Err(ValidationErrors::single("bypass_review", "must be an object").into());
        }
    };
    let mut errors = ValidationErrors::new();
    let acknowledge = match asked.get("acknowledge") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(acknowledge)) => *acknowledge,
        Some(_) => {
            errors.add("bypass_review.acknowledge", "must be a boolean");
            false
        }
    };
    let reason = match asked.get("reason") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(reason)) if reason.chars().count() <= REASON_MAX => reason.clone(),
        Some(Value::String(_)) => {
            errors.add(
                "bypass_review.reason",
                format!("should be at most {REASON_MAX} character(s)"),
            );
            String::new()
        }
        Some(_) => {
            errors.add("bypass_review.reason", "must be a string");
            String::new()
        }
    };
    errors
        .into_result(Some(AskedBypass {
            acknowledge,
            reason,
        }))
        .map_err(Into::into)
}

/// The bypass `principal` asked for on `query`, if every condition of README "Reviews" holds;
/// 403 naming the first that does not.
fn may_bypass(
    principal: &Principal,
    query: &Query,
    db: &Database,
    asked: AskedBypass,
) -> Result<BypassRequest, ApiError> {
    let refused = |why: &str| Err(ApiError::Denied(format!("review bypass refused: {why}")));
    if principal.agent {
        return refused("an AI agent never bypasses reviews");
    }
    if principal.role != Role::SuperAdmin {
        return refused("only a super admin may bypass reviews");
    }
    if query.author != principal.user {
        return refused("a super admin may bypass reviews only on a query they wrote");
    }
    if !db.review_bypass_allowed {
        return refused(&format!(
            "database {} does not allow it (its review_bypass_allowed is false)",
            db.id
        ));
    }
    if !asked.acknowledge {
        return refused("the override must be acknowledged (bypass_review.acknowledge: true)");
    }
    if asked.reason.trim().is_empty() {
        return refused("a reason is required (bypass_review.reason)");
    }
    Ok(BypassRequest {
        by: principal.user.clone(),
        reason: asked.reason.trim().to_owned(),
    })
}

/// A review's body: `{"decision": "approve" | "reject", "comment": "…"}`.
fn review_of(
    body: &serde_json::Map<String, Value>,
) -> Result<(Decision, Option<String>), ApiError> {
    let mut errors = ValidationErrors::new();
    let decision = match body.get("decision") {
        Some(Value::String(name)) => match name.parse::<Decision>() {
            Ok(decision) => Some(decision),
            Err(_) => {
                errors.add("decision", "must be \"approve\" or \"reject\"");
                None
            }
        },
        None | Some(Value::Null) => {
            errors.add("decision", message::BLANK);
            None
        }
        Some(_) => {
            errors.add("decision", "must be \"approve\" or \"reject\"");
            None
        }
    };
    let comment = match body.get("comment") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.chars().count() <= REASON_MAX => {
            Some(text.trim().to_owned()).filter(|text| !text.is_empty())
        }
        Some(Value::String(_)) => {
            errors.add(
                "comment",
                format!("should be at most {REASON_MAX} character(s)"),
            );
            None
        }
        Some(_) => {
            errors.add("comment", message::INVALID);
            None
        }
    };
    match (decision, errors.is_empty()) {
        (Some(decision), true) => Ok((decision, comment)),
        _ => Err(ApiError::Invalid(errors)),
    }
}

fn accept(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
