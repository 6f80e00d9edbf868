//! The MCP endpoint (docs/queries.md, "AI agents (MCP)"): the Model Context Protocol over Streamable
//! HTTP on `/mcp`, for AI agents, with the official Rust SDK (`rmcp`). Each request is
//! authenticated as the query routes are ([`ConsoleService::agent_caller`]) before it reaches
//! the protocol, and its caller is an AI agent whatever its key or token says. The tools are
//! the service's agent functions, so every rule of the query routes holds: only `ai_enabled`
//! databases, only `ai_allowed` credentials, at most `ai_max_rows` rows, read-only, reviews as
//! for anyone, every call audited.
//!
//! The endpoint is stateless (no MCP session is kept between requests) and answers JSON, so
//! any node behind a load balancer answers any request.

use std::sync::Arc;

use dbconsole_core::service::agent::{AgentAnswer, AgentCaller};
use dbconsole_core::{ApiError, ConsoleService, ResponseBody};
use http::{Request, Response};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// The most bytes of one MCP request.
const BODY_LIMIT: usize = 1 << 20;

/// The tools, over the service.
#[derive(Clone)]
struct Tools {
    service: ConsoleService,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct DescribeArgs {
    /// The database's id (`db_…`), as `list_databases` gives it.
    database_id: String,
    /// The credential to look through (`crd_…`); the database's first AI-allowed one if left out.
    credential_id: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct StoredQueryArgs {
    /// The query's id (`qry_…`), as `run_query` answered it.
    query_id: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct QueryArgs {
    /// The database's id (`db_…`), as `list_databases` gives it.
    database_id: String,
    /// The credential to run as (`crd_…`); the database's first AI-allowed one if left out.
    credential_id: Option<String>,
    /// One read-only SQL statement.
    sql: String,
    /// The most rows to return; never more than the database's `ai_max_rows`.
    limit: Option<u32>,
}

/// A tool's answer: JSON, or the service's refusal as an error result the agent reads.
fn answer(result: Result<serde_json::Value, ApiError>) -> CallToolResult {
    text_answer(result.map(|value| value.to_string()))
}

/// A tool's answer: JSON text, or the service's refusal as an error result the agent reads.
fn text_answer(result: Result<String, ApiError>) -> CallToolResult {
    match result {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(error) => {
            tracing::info!(
                status = error.status().as_u16(),
                "an MCP tool call was refused"
            );
            let text = format!("{} {}", error.status().as_u16(), error.body()["errors"]);
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
    }
}

/// The agent of the HTTP request a tool call came in (put there by [`handle`]).
fn agent_of(parts: &http::request::Parts) -> Result<&AgentCaller, ErrorData> {
    parts
        .extensions
        .get::<AgentCaller>()
        .ok_or_else(|| ErrorData::internal_error("the request was not authenticated", None))
}

#[tool_router]
impl Tools {
    #[tool(
        description = "List the databases you may query: id, name, adapter, the most rows a query returns (ai_max_rows), and the credentials you may use (with the reviews each requires before a query runs)."
    )]
    async fn list_databases(
        &self,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let agent = agent_of(&parts)?;
        Ok(answer(self.service.agent_databases(agent).await))
    }

    #[tool(
        description = "Describe a database's tables: each table's schema, name and columns (name, type, nullable), as the credential sees them."
    )]
    async fn describe_tables(
        &self,
        Parameters(args): Parameters<DescribeArgs>,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let agent = agent_of(&parts)?;
        let described = self
            .service
            .agent_describe(agent, &args.database_id, args.credential_id.as_deref())
            .await;
        Ok(answer(described))
    }

    #[tool(
        description = "Run one read-only SQL statement on a database: its columns and rows (at most the database's ai_max_rows; `truncated` says when there were more). When the credential requires reviews, the query is stored and waits: the answer gives its query_id for a person to review."
    )]
    async fn run_query(
        &self,
        Parameters(args): Parameters<QueryArgs>,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let agent = agent_of(&parts)?;
        let ran = self
            .service
            .agent_query(
                agent,
                &args.database_id,
                args.credential_id.as_deref(),
                &args.sql,
                args.limit,
            )
            .await
            .map(|answer| match answer {
                AgentAnswer::Rows(result) => result,
                AgentAnswer::AwaitingReview { query_id, required } => serde_json::json!({
                    "query_id": query_id,
                    "status": "awaiting_review",
                    "reviews_required": required,
                    "message": format!(
                        "the query is stored and waits for {required} review(s) before it may run: \
                         people review it (POST …/queries/{query_id}/reviews), then run it with \
                         run_reviewed_query"
                    ),
                })
                .to_string(),
            });
        Ok(text_answer(ran))
    }

    #[tool(
        description = "Run a query you stored earlier with run_query that waited for reviews, once its reviews are in: its columns and rows, read-only, at most the database's ai_max_rows. A query runs once."
    )]
    async fn run_reviewed_query(
        &self,
        Parameters(args): Parameters<StoredQueryArgs>,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let agent = agent_of(&parts)?;
        Ok(text_answer(
            self.service.agent_run(agent, &args.query_id).await,
        ))
    }
}

#[tool_handler]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("dbconsole", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Query the databases of this dbconsole as an AI agent: list_databases, then \
                 describe_tables, then run_query (read-only; results are capped, and some \
                 credentials require a person's review first).",
            )
    }
}

/// The MCP endpoint over `service`.
#[derive(Clone)]
pub struct Mcp {
    service: ConsoleService,
    protocol: StreamableHttpService<Tools, LocalSessionManager>,
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mcp").finish_non_exhaustive()
    }
}

impl Mcp {
    /// The endpoint over `service`.
    pub fn new(service: ConsoleService) -> Self {
        // Every request carries a credential the service checks, so the Host check meant for
        // unauthenticated local servers is not needed (the server may listen on any address).
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_max_request_body_bytes(BODY_LIMIT)
            .disable_allowed_hosts();
        let tools = Tools {
            service: service.clone(),
        };
        let protocol = StreamableHttpService::new(
            move || Ok(tools.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        Self { service, protocol }
    }

    /// One request to `/mcp`: 401/403 as the API answers them, else the protocol's answer.
    pub async fn handle(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let (mut parts, body) = request.into_parts();
        let agent = match self.service.agent_caller(&parts).await {
            Ok(agent) => agent,
            Err(error) => return error.into_response(),
        };
        parts.extensions.insert(agent);
        let response = self.protocol.handle(Request::from_parts(parts, body)).await;
        let (parts, body) = response.into_parts();
        // Stateless JSON answers are whole: read them, and answer them as the service does.
        match body.collect().await {
            Ok(collected) => Response::from_parts(parts, ResponseBody::full(collected.to_bytes())),
            Err(never) => match never {},
        }
    }
}
