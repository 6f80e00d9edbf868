//! [`TestConsole`]: the one test console of the workspace, a [`ConsoleService`] over one store
//! with the harness's credentials ([`crate::test_credentials`]) and a sealer with a random key,
//! built with the options a test needs (runners, trusted principals, the outbox, the row cap),
//! and the requests the tests make of it: as a trusted principal, with the API key, with an
//! `Accept`, an `Idempotency-Key`, and the queries API's steps (create, run, read back).

use std::sync::Arc;

use bytes::Bytes;
use dbconsole_core::model::Principal;
use dbconsole_core::run::Runners;
use dbconsole_core::service::OutboxTargets;
use dbconsole_core::service::agent::AgentCaller;
use dbconsole_core::{ConsoleService, Storage};
use http::{Method, Request, header};
use http_body_util::Full;
use serde_json::{Value, json};

use crate::{API_KEY, Api, TestResponse, test_credentials, test_sealer};

/// Path prefix of the query routes.
const QUERIES: &str = "/api/v1/console/queries";

/// A service under test and the requests the tests make of it; [`TestConsole::builder`]
/// makes one.
#[derive(Clone, Debug)]
pub struct TestConsole {
    /// The service, with the helpers of the HTTP suite (the API key, the access token).
    pub api: Api,
}

/// Builds a [`TestConsole`]: by default no runner (a run answers 501), principals in a
/// request's extensions ignored, nothing put in the outbox and the service's row cap.
#[derive(Debug)]
pub struct TestConsoleBuilder {
    storage: Arc<dyn Storage>,
    runners: Runners,
    trust_principal: bool,
    outbox: Option<OutboxTargets>,
    max_rows: Option<u32>,
    value_limits: Option<dbconsole_core::run::encode::ValueLimits>,
    row_tokens: Option<dbconsole_core::service::RowTokenOptions>,
}

impl TestConsoleBuilder {
    /// The query runners, one per adapter.
    pub fn runners(mut self, runners: Runners) -> Self {
        self.runners = runners;
        self
    }

    /// Whether the service trusts the principal a request carries in its extensions (as an
    /// application that mounts it behind its own login): [`TestConsole::as_`] and
    /// [`TestConsole::send`] with a principal need it.
    pub fn trust_principal(mut self, on: bool) -> Self {
        self.trust_principal = on;
        self
    }

    /// What the service puts in the outbox.
    pub fn outbox(mut self, targets: OutboxTargets) -> Self {
        self.outbox = Some(targets);
        self
    }

    /// The most rows a run may return.
    pub fn max_rows(mut self, rows: u32) -> Self {
        self.max_rows = Some(rows);
        self
    }

    /// The service's bounds on a value and a row of a result.
    pub fn value_limits(mut self, limits: dbconsole_core::run::encode::ValueLimits) -> Self {
        self.value_limits = Some(limits);
        self
    }

    /// How panel rows' tokens behave.
    pub fn row_tokens(mut self, options: dbconsole_core::service::RowTokenOptions) -> Self {
        self.row_tokens = Some(options);
        self
    }

    /// The console.
    pub fn build(self) -> TestConsole {
        let mut builder =
            ConsoleService::builder(self.storage, Arc::new(test_credentials()), test_sealer())
                .runners(self.runners)
                .trust_principal(self.trust_principal);
        if let Some(targets) = self.outbox {
            builder = builder.outbox(targets);
        }
        if let Some(limits) = self.value_limits {
            builder = builder.value_limits(limits);
        }
        if let Some(rows) = self.max_rows {
            builder = builder.max_rows(rows);
        }
        if let Some(options) = self.row_tokens {
            builder = builder.row_tokens(options);
        }
        TestConsole {
            api: Api {
                service: builder.build(),
            },
        }
    }
}

impl TestConsole {
    /// Starts building a console over `storage`.
    pub fn builder(storage: Arc<dyn Storage>) -> TestConsoleBuilder {
        TestConsoleBuilder {
            storage,
            runners: Runners::none(),
            trust_principal: false,
            outbox: None,
            max_rows: None,
            value_limits: None,
            row_tokens: None,
        }
    }

    /// The service under test.
    pub fn service(&self) -> &ConsoleService {
        &self.api.service
    }

    /// A request as `principal` (no key nor token: the trusted principal alone), with
    /// `content-type: application/json` whether or not it has a body, and an
    /// `Idempotency-Key` when given one. The body must arrive whole.
    pub async fn as_(
        &self,
        principal: &Principal,
        method: Method,
        path: &str,
        body: Option<Value>,
        idempotency_key: Option<&str>,
    ) -> TestResponse {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(key) = idempotency_key {
            request = request.header("idempotency-key", key);
        }
        let mut request = request
            .body(Full::new(
                body.map(|b| Bytes::from(b.to_string())).unwrap_or_default(),
            ))
            .expect("a request");
        request.extensions_mut().insert(principal.clone());
        self.api.send(request).await
    }

    /// A request as `principal`, or with the API key without one; with `Accept: accept` when
    /// given, and `content-type: application/json` with a body. A streamed body cut off by an
    /// error is answered in [`TestResponse::cut`].
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        principal: Option<Principal>,
        accept: Option<&str>,
        body: Option<&Value>,
    ) -> TestResponse {
        let mut request = Request::builder().method(method).uri(path);
        if principal.is_none() {
            request = request.header("x-api-key", API_KEY);
        }
        if let Some(accept) = accept {
            request = request.header(header::ACCEPT, accept);
        }
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let mut request = request
            .body(Full::new(
                body.map(|b| Bytes::from(b.to_string())).unwrap_or_default(),
            ))
            .expect("a request");
        if let Some(principal) = principal {
            request.extensions_mut().insert(principal);
        }
        self.api.answer(request).await
    }

    /// `principal` as the MCP endpoint takes it: an AI agent.
    pub async fn agent(&self, principal: &Principal) -> AgentCaller {
        let (mut parts, ()) = Request::new(()).into_parts();
        parts.extensions.insert(principal.clone());
        self.service()
            .agent_caller(&parts)
            .await
            .expect("a vouched principal is an agent")
    }

    /// The tables `describe_tables` gives for database `id`, as `principal`'s agent.
    pub async fn describe(&self, principal: &Principal, id: &str) -> Value {
        let agent = self.agent(principal).await;
        self.service()
            .agent_describe(&agent, id, None)
            .await
            .unwrap_or_else(|error| panic!("describe_tables: {}", error.body()))
    }

    /// Puts database `db`'s data protection document (`{"inherits_from", "policies"}`).
    pub async fn protect(&self, db: &str, document: &Value) {
        self.send(
            Method::PUT,
            &format!("/api/v1/console/databases/{db}/data-protection"),
            None,
            None,
            Some(document),
        )
        .await
        .expect(200);
    }

    /// Creates a database of `adapter` on `127.0.0.1:port` (database `checkdb`, where the test
    /// database servers are) with the API key, `extra` merged into its body; its id and its
    /// credentials' ids, in order.
    pub async fn database(
        &self,
        adapter: &str,
        port: u16,
        extra: Value,
        credentials: Value,
    ) -> (String, Vec<String>) {
        let mut body = json!({
            "name": format!("run test {}", unique()),
            "adapter": adapter,
            "hostname": "127.0.0.1",
            "port": port,
            "database": "checkdb",
            "credentials": credentials,
        });
        for (key, value) in extra.as_object().expect("an object") {
            body[key] = value.clone();
        }
        let created = self
            .send(
                Method::POST,
                "/api/v1/console/databases",
                None,
                None,
                Some(&body),
            )
            .await
            .expect(200)
            .json();
        let ids = created["credentials"]
            .as_array()
            .expect("credentials")
            .iter()
            .map(|c| c["id"].as_str().expect("an id").to_owned())
            .collect();
        (created["id"].as_str().expect("an id").to_owned(), ids)
    }

    /// Creates a query as `principal` (`limit` when given); the answer.
    pub async fn create_query(
        &self,
        principal: &Principal,
        database: &str,
        credential: &str,
        query: &str,
        limit: Option<u32>,
    ) -> TestResponse {
        // A title and a reason, as a request for review needs them (any credential takes them).
        let mut body = json!({
            "database_id": database, "credential_id": credential, "query": query,
            "title": "A test's query", "description": "Sent by a test.",
        });
        if let Some(limit) = limit {
            body["limit"] = json!(limit);
        }
        self.send(
            Method::POST,
            QUERIES,
            Some(principal.clone()),
            None,
            Some(&body),
        )
        .await
    }

    /// Runs query `id` as `principal`, with no body; the answer (its body possibly cut off).
    pub async fn run(&self, principal: &Principal, id: &str, accept: Option<&str>) -> TestResponse {
        self.send(
            Method::POST,
            &format!("{QUERIES}/{id}/run"),
            Some(principal.clone()),
            accept,
            None,
        )
        .await
    }

    /// Creates (200 asserted) and runs a query; its id and the run's answer.
    pub async fn query(
        &self,
        principal: &Principal,
        database: &str,
        credential: &str,
        query: &str,
        limit: Option<u32>,
        accept: Option<&str>,
    ) -> (String, TestResponse) {
        let created = self
            .create_query(principal, database, credential, query, limit)
            .await
            .expect(200)
            .json();
        let id = created["id"].as_str().expect("an id").to_owned();
        let answer = self.run(principal, &id, accept).await;
        (id, answer)
    }

    /// Query `id` as `principal` reads it (200 asserted).
    pub async fn history(&self, principal: &Principal, id: &str) -> Value {
        self.send(
            Method::GET,
            &format!("{QUERIES}/{id}"),
            Some(principal.clone()),
            None,
            None,
        )
        .await
        .expect(200)
        .json()
    }
}

/// Text unique to this call in the process (for names that must differ).
fn unique() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{now:x}-{n}")
}
