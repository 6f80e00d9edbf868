//! The door of AI agents (docs/queries.md, "AI agents (MCP)"): what the reference server's MCP endpoint
//! offers, as functions of the service so that every rule of the query routes holds for it.
//!
//! Whoever comes through this door is an AI agent, whatever its key or token says: it sees and
//! queries only `ai_enabled` databases it may query, only as `ai_allowed` credentials, gets at
//! most `ai_max_rows` rows, runs read-only, and waits for reviews as anyone does. Every call is
//! audited: listing and describing as `agent.call` events, a query as its `query.create` and
//! `query.run` events.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::admission::Admission;
use super::error::ApiError;
use super::launch::{Launcher, Record, collected};
use super::queries::Queries;
use super::runs::Runs;
use super::schema::Schema;
use crate::model::{
    Actor, AuditAction, AuditEvent, Credential, Database, Origin, Principal, QueryStatus,
};
use crate::run::Format;
use crate::storage::{DatabaseFilter, Page, Storage};
use crate::validate::ValidationErrors;

pub use super::schema::DESCRIBE_MAX_COLUMNS;

/// An AI agent, authenticated: the principal it acts for (marked as an agent) and who it is in
/// the audit trail.
#[derive(Clone, Debug)]
pub struct AgentCaller {
    principal: Principal,
    actor: Actor,
    request_id: String,
}

impl AgentCaller {
    /// The agent acting for `principal` (marked as an agent by the caller), as `actor`, in
    /// request `request_id`.
    pub(crate) fn new(principal: Principal, actor: Actor, request_id: String) -> Self {
        Self {
            principal,
            actor,
            request_id,
        }
    }

    /// The principal it acts for (always an agent).
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    pub(crate) fn origin(&self) -> Origin {
        Origin {
            actor: self.actor.clone(),
            request_id: Some(self.request_id.clone()),
            idempotency: None,
        }
    }
}

/// What a query of an agent came to.
#[derive(Debug)]
pub enum AgentAnswer {
    /// It ran: the result as the query routes answer it in JSON (`columns`, `rows`,
    /// `row_count`, `truncated`, `duration_ms`), with the query's id first, as JSON text.
    Rows(String),
    /// It needs reviews: it is stored, and waits.
    AwaitingReview {
        /// The query's id (`qry_…`), for a person to review and run.
        query_id: String,
        /// Approvals its credential requires.
        required: u32,
    },
}

/// What the agents' tools read: the storage, admission, the launcher, the query history and
/// runs their queries go through, the schema, and the most rows a run may return.
#[derive(Debug)]
pub(crate) struct Agents {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Who may query which database.
    pub(crate) admission: Admission,
    /// Starts runs (and says first what would refuse one).
    pub(crate) launcher: Launcher,
    /// Stores an agent's queries.
    pub(crate) queries: Queries,
    /// Runs them.
    pub(crate) runs: Runs,
    /// Reads a database's catalog.
    pub(crate) schema: Schema,
    /// The most rows a run may return.
    pub(crate) max_rows: u32,
}

impl Agents {
    /// `list_databases`: [`ConsoleService::agent_databases`](super::ConsoleService::agent_databases).
    pub(crate) async fn agent_databases(&self, agent: &AgentCaller) -> Result<Value, ApiError> {
        let listed = self.databases_for(agent).await;
        self.audit_refusal(agent, "list_databases", "*", &listed)
            .await;
        listed
    }

    async fn databases_for(&self, agent: &AgentCaller) -> Result<Value, ApiError> {
        let mut listed = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .storage
                .list_databases(
                    Page {
                        after: after.as_deref(),
                        limit: 500,
                    },
                    DatabaseFilter::default(),
                )
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.as_str().to_owned());
            for db in page {
                let credentials: Vec<Value> = db
                    .credentials
                    .iter()
                    .filter(|c| c.ai_allowed)
                    .map(|c| {
                        json!({
                            "id": c.id.as_str(),
                            "username": c.username,
                            "reviews_required": c.reviews_required,
                        })
                    })
                    .collect();
                if !db.ai_enabled
                    || credentials.is_empty()
                    || !self.admission.may_query(&agent.principal, &db).await?
                {
                    continue;
                }
                listed.push(json!({
                    "id": db.id.as_str(),
                    "name": db.name,
                    "adapter": db.adapter.as_str(),
                    "database": db.database,
                    "ai_max_rows": db.ai_max_rows,
                    "credentials": credentials,
                }));
            }
        }
        let event = AuditEvent::new(
            &agent.origin(),
            AuditAction::AgentCall,
            "*",
            vec!["list_databases".to_owned()],
        );
        self.storage.append_log(event.into()).await?;
        Ok(json!({ "databases": listed }))
    }

    /// `describe_tables`: [`ConsoleService::agent_describe`](super::ConsoleService::agent_describe).
    pub(crate) async fn agent_describe(
        &self,
        agent: &AgentCaller,
        database_id: &str,
        credential_id: Option<&str>,
    ) -> Result<Value, ApiError> {
        let described = self.describe(agent, database_id, credential_id).await;
        self.audit_refusal(agent, "describe_tables", database_id, &described)
            .await;
        described
    }

    async fn describe(
        &self,
        agent: &AgentCaller,
        database_id: &str,
        credential_id: Option<&str>,
    ) -> Result<Value, ApiError> {
        let (db, credential) = self.agent_target(database_id, credential_id).await?;
        if credential.reviews_required > 0 {
            return Err(ValidationErrors::single(
                "credential_id",
                "describe_tables runs only as credentials with reviews_required 0: what a \
                 reviewed credential sees is reviewed too",
            )
            .into());
        }
        // The AI rules decide whether it may look; the catalog is not data, so `ai_max_rows`
        // does not cap it (docs/queries.md, "AI agents (MCP)").
        let guarded = self.admission.guarded(db).await?;
        guarded.admit(&agent.principal, &credential, DESCRIBE_MAX_COLUMNS)?;
        let record = Record::Agent {
            database_id: guarded.db.id.as_str().to_owned(),
            tool: "describe_tables",
            origin: agent.origin(),
        };
        let tables = self
            .schema
            .read_catalog(guarded, credential, record)
            .await?;
        let mut answer = tables;
        answer["database_id"] = json!(database_id);
        Ok(answer)
    }

    /// `run_query`: [`ConsoleService::agent_query`](super::ConsoleService::agent_query).
    pub(crate) async fn agent_query(
        &self,
        agent: &AgentCaller,
        database_id: &str,
        credential_id: Option<&str>,
        sql: &str,
        limit: Option<u32>,
    ) -> Result<AgentAnswer, ApiError> {
        let answered = self
            .query_for(agent, database_id, credential_id, sql, limit)
            .await;
        self.audit_refusal(agent, "run_query", database_id, &answered)
            .await;
        answered
    }

    async fn query_for(
        &self,
        agent: &AgentCaller,
        database_id: &str,
        credential_id: Option<&str>,
        sql: &str,
        limit: Option<u32>,
    ) -> Result<AgentAnswer, ApiError> {
        let (db, credential) = self.agent_target(database_id, credential_id).await?;
        // What would refuse the run refuses it before the query is stored.
        let runner = self.launcher.runner_for(db.adapter)?;
        let guarded = self.admission.guarded(db).await?;
        self.launcher
            .protection_for_run(&guarded, &*runner, sql, true, None)
            .await?;
        let db = guarded.db;
        let mut body = Map::new();
        body.insert("database_id".to_owned(), json!(db.id.as_str()));
        body.insert("credential_id".to_owned(), json!(credential.id.as_str()));
        body.insert("query".to_owned(), json!(sql));
        body.insert("title".to_owned(), json!(crate::model::title_of(sql)));
        body.insert(
            "description".to_owned(),
            json!(format!(
                "Written by the AI agent {}; the person who runs it may say why here.",
                agent.principal.user
            )),
        );
        let limit = limit.unwrap_or(db.ai_max_rows).min(db.ai_max_rows).max(1);
        body.insert("limit".to_owned(), json!(limit.min(self.max_rows)));
        let origin = agent.origin();
        let query = self
            .queries
            .store_query(&agent.principal, body, &origin)
            .await?;
        let id = query.id.as_str().to_owned();
        if query.status == QueryStatus::AwaitingReview {
            return Ok(AgentAnswer::AwaitingReview {
                query_id: id,
                required: credential.reviews_required,
            });
        }
        let response = self
            .runs
            .run_stored(&agent.principal, &id, &Map::new(), Format::Json, &origin)
            .await?;
        Ok(AgentAnswer::Rows(with_query_id(
            &id,
            &collected(response).await?,
        )))
    }

    /// `run_reviewed_query`: [`ConsoleService::agent_run`](super::ConsoleService::agent_run).
    pub(crate) async fn agent_run(
        &self,
        agent: &AgentCaller,
        query_id: &str,
    ) -> Result<String, ApiError> {
        let ran = self.run_for(agent, query_id).await;
        self.audit_refusal(agent, "run_reviewed_query", query_id, &ran)
            .await;
        ran
    }

    /// One `agent.call` event for a tool call the service refused (a 4xx: the AI rules,
    /// access, validation, a query that waits), naming the tool and the status, on the record
    /// the call named when it names one by a plausible id (else `*`). What ran or failed
    /// running has its own events.
    async fn audit_refusal<T>(
        &self,
        agent: &AgentCaller,
        tool: &str,
        resource: &str,
        result: &Result<T, ApiError>,
    ) {
        let Err(error) = result else {
            return;
        };
        let status = error.status();
        if !status.is_client_error() {
            return;
        }
        let plausible = !resource.is_empty()
            && resource.len() <= 64
            && resource
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let event = AuditEvent::new(
            &agent.origin(),
            AuditAction::AgentCall,
            if plausible { resource } else { "*" },
            vec![tool.to_owned(), format!("refused {}", status.as_u16())],
        );
        if let Err(error) = self.storage.append_log(event.into()).await {
            tracing::warn!(%error, tool, "a refused agent call could not be audited");
        }
    }

    async fn run_for(&self, agent: &AgentCaller, query_id: &str) -> Result<String, ApiError> {
        let query = self
            .storage
            .query(query_id)
            .await?
            .filter(|query| crate::model::identity::same(&query.author, &agent.principal.user))
            .ok_or(ApiError::NotFound)?;
        let origin = agent.origin();
        let response = self
            .runs
            .run_stored(
                &agent.principal,
                query.id.as_str(),
                &Map::new(),
                Format::Json,
                &origin,
            )
            .await?;
        Ok(with_query_id(query_id, &collected(response).await?))
    }
}

impl Agents {
    /// Database `database_id` and the credential an agent names, or its first `ai_allowed`
    /// one: 422 when either is unknown (whether the agent may use them is
    /// `Guarded::admit`'s question).
    async fn agent_target(
        &self,
        database_id: &str,
        credential_id: Option<&str>,
    ) -> Result<(Database, Credential), ApiError> {
        let db =
            self.storage.database(database_id).await?.ok_or_else(|| {
                ValidationErrors::single("database_id", "does not name a database")
            })?;
        let credential = match credential_id {
            Some(id) => db.credentials.iter().find(|c| c.id.as_str() == id).cloned(),
            None => db
                .credentials
                .iter()
                .find(|c| c.ai_allowed)
                .or_else(|| db.credentials.first())
                .cloned(),
        };
        let credential = credential.ok_or_else(|| {
            ValidationErrors::single(
                "credential_id",
                "does not name a credential of this database",
            )
        })?;
        Ok((db, credential))
    }
}

/// A run's JSON answer (an object) with `query_id` first, as it came: the rows are never
/// parsed again (a JSON cell may nest deeper than a parser allows).
fn with_query_id(id: &str, result: &[u8]) -> String {
    let rest = String::from_utf8_lossy(result);
    let rest = rest.trim_start().strip_prefix('{').unwrap_or(&rest);
    format!("{{\"query_id\":{},{rest}", Value::from(id))
}
