//! The door of AI agents as functions of the service (docs/queries.md, "AI agents (MCP)"): the
//! reference server's MCP endpoint calls these. Who the agent is comes through the pipeline's
//! own authorization; what each tool does is the `agent` family's.

use serde_json::Value;

use super::agent::{AgentAnswer, AgentCaller};
use super::call::principal_of;
use super::error::ApiError;
use super::pipeline::ConsoleService;
use super::request_id::RequestId;
use super::router::Route;
use crate::auth::Caller;
use crate::model::Principal;

impl ConsoleService {
    /// The agent a request to the MCP endpoint comes from, authenticated as the query routes
    /// authenticate (an API key or Bearer token bound to a user, or a principal the embedding
    /// program vouches for): 401 without a valid credential, 403 for one without a user or of
    /// a scope that reaches no query route.
    pub async fn agent_caller(
        &self,
        parts: &http::request::Parts,
    ) -> Result<AgentCaller, ApiError> {
        let app = self.app();
        let vouched = app
            .trust_principal
            .then(|| parts.extensions.get::<Principal>().cloned())
            .flatten();
        let caller = match vouched {
            Some(principal) => {
                Caller::vouched(super::users::served(&*app.storage, principal, false).await?)
            }
            None => {
                // The query routes' credentials and rules: those of storing a query. A browser's
                // session cookie never counts here: agents present keys or tokens.
                let route =
                    Route::recognize("/api/v1/console/queries").ok_or(ApiError::Internal)?;
                let mut headers = parts.headers.clone();
                headers.remove(http::header::COOKIE);
                app.authorize(&route, &http::Method::POST, &headers).await?
            }
        };
        let mut principal = principal_of(Some(&caller))?.clone();
        principal.agent = true;
        Ok(AgentCaller::new(
            principal,
            caller.actor,
            RequestId::from_headers(&parts.headers).as_str().to_owned(),
        ))
    }

    /// The databases `agent` may query: `ai_enabled`, open to it, with at least one
    /// `ai_allowed` credential (only those are listed). One `agent.call` event.
    pub async fn agent_databases(&self, agent: &AgentCaller) -> Result<Value, ApiError> {
        self.app().agents.agent_databases(agent).await
    }

    /// The tables and columns of database `database_id` as credential `credential_id` (or its
    /// first `ai_allowed` one) sees them, read-only, at most
    /// [`DESCRIBE_MAX_COLUMNS`](super::agent::DESCRIBE_MAX_COLUMNS) columns. One `agent.call`
    /// event with the run's facts.
    pub async fn agent_describe(
        &self,
        agent: &AgentCaller,
        database_id: &str,
        credential_id: Option<&str>,
    ) -> Result<Value, ApiError> {
        self.app()
            .agents
            .agent_describe(agent, database_id, credential_id)
            .await
    }

    /// Stores and runs `sql` (one statement) on database `database_id` as credential
    /// `credential_id` (or its first `ai_allowed` one), for `agent`: the rows (at most the
    /// database's `ai_max_rows`), or the query's id when it needs reviews first.
    pub async fn agent_query(
        &self,
        agent: &AgentCaller,
        database_id: &str,
        credential_id: Option<&str>,
        sql: &str,
        limit: Option<u32>,
    ) -> Result<AgentAnswer, ApiError> {
        self.app()
            .agents
            .agent_query(agent, database_id, credential_id, sql, limit)
            .await
    }

    /// Runs query `query_id` (one the agent's user wrote, typically one that waited for its
    /// reviews) for `agent`: read-only, at most its database's `ai_max_rows` rows, once; 409
    /// while it still lacks approvals.
    pub async fn agent_run(&self, agent: &AgentCaller, query_id: &str) -> Result<String, ApiError> {
        self.app().agents.agent_run(agent, query_id).await
    }
}
