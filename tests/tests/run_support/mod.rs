//! Shared helpers of the run tests (`run_*.rs`): the service with every runner and trusted
//! principals (as an application that mounts it behind its own login), its answers read whole
//! (or the error that cut a body off), and the people who ask.
#![allow(dead_code)] // each test file uses a part

pub mod protect;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dbconsole_core::auth::StaticCredentials;
use dbconsole_core::model::{Principal, Role, Secret};
use dbconsole_core::run::{PoolLimits, standard_runners};
use dbconsole_core::{ConsoleService, Sealer};
use dbconsole_storage_memory::MemoryStorage;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// The password of the `checker` account on every test server.
pub const PASSWORD: &str = "checkpw";
pub const API_KEY: &str = "run-tests-api-key-0123456789";
pub const QUERIES: &str = "/api/v1/console/queries";

pub struct Console {
    service: ConsoleService,
}

pub struct Answer {
    pub status: StatusCode,
    pub content_type: Option<String>,
    pub body: Result<Bytes, String>,
}

impl Answer {
    pub fn json(&self) -> Value {
        let body = self.body.as_ref().expect("a whole body");
        serde_json::from_slice(body).unwrap_or_else(|error| {
            panic!(
                "{}: not JSON ({error}): {}",
                self.status,
                String::from_utf8_lossy(body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(self.body.as_ref().expect("a whole body")).into_owned()
    }

    #[track_caller]
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {:?}",
            self.body
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
        );
        self
    }
}

/// A direct session on the test PostgreSQL's `checkdb` (`.ci/db-servers-up.sh`), to look at
/// the server from outside dbconsole; a missing server fails the test, saying how to start it.
pub async fn postgres_admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port=5432 user=checker password={PASSWORD} dbname=checkdb"),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "PostgreSQL is not running on 127.0.0.1:5432 ({error}): start the test database \
             servers with `sudo bash .ci/db-servers-up.sh`"
        )
    });
    tokio::spawn(connection);
    client
}

pub fn alice() -> Principal {
    Principal::member("alice@example.com").groups(["analysts"])
}

pub fn root() -> Principal {
    Principal::member("root@example.com").role(Role::SuperAdmin)
}

impl Console {
    pub fn new() -> Self {
        Self::with_runners(standard_runners(PoolLimits {
            size: 2,
            wait: Duration::from_millis(500),
        }))
    }

    /// The service with these runners (`Runners::none()`: every run answers 501).
    pub fn with_runners(runners: dbconsole_core::run::Runners) -> Self {
        let credentials = StaticCredentials::new(Some(&Secret::from(API_KEY)), None);
        let service = ConsoleService::builder(
            Arc::new(MemoryStorage::new()),
            Arc::new(credentials),
            Sealer::ephemeral().expect("a random key"),
        )
        .runners(runners)
        .trust_principal(true)
        .max_rows(1_000)
        .build();
        Self { service }
    }

    /// `principal` as the MCP endpoint takes it: an AI agent.
    pub async fn agent(
        &self,
        principal: &Principal,
    ) -> dbconsole_core::service::agent::AgentCaller {
        let (mut parts, ()) = Request::new(()).into_parts();
        parts.extensions.insert(principal.clone());
        self.service
            .agent_caller(&parts)
            .await
            .expect("a vouched principal is an agent")
    }

    /// The tables `describe_tables` gives for database `id`, as `principal`'s agent.
    pub async fn describe(&self, principal: &Principal, id: &str) -> Value {
        let agent = self.agent(principal).await;
        self.service
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

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        principal: Option<Principal>,
        accept: Option<&str>,
        body: Option<&Value>,
    ) -> Answer {
        let mut request = Request::builder().method(method).uri(path);
        match &principal {
            Some(_) => {}
            None => request = request.header("x-api-key", API_KEY),
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
        let response = self
            .service
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .into_body()
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .map_err(|error| error.to_string());
        Answer {
            status,
            content_type,
            body,
        }
    }

    /// Creates a database of `adapter` on `127.0.0.1:port` (database `checkdb`) as the
    /// management API does; its id and its credentials' ids, in order.
    pub async fn database(
        &self,
        adapter: &str,
        port: u16,
        extra: Value,
        credentials: Value,
    ) -> (String, Vec<String>) {
        let mut body = json!({
            "name": format!("run test {}", ulid()),
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

    pub async fn create_query(
        &self,
        principal: &Principal,
        database: &str,
        credential: &str,
        query: &str,
        limit: Option<u32>,
    ) -> Answer {
        let mut body =
            json!({"database_id": database, "credential_id": credential, "query": query});
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

    pub async fn run(&self, principal: &Principal, id: &str, accept: Option<&str>) -> Answer {
        self.send(
            Method::POST,
            &format!("{QUERIES}/{id}/run"),
            Some(principal.clone()),
            accept,
            None,
        )
        .await
    }

    /// Creates and runs a query; the run's answer.
    pub async fn query(
        &self,
        principal: &Principal,
        database: &str,
        credential: &str,
        query: &str,
        limit: Option<u32>,
        accept: Option<&str>,
    ) -> (String, Answer) {
        let created = self
            .create_query(principal, database, credential, query, limit)
            .await
            .expect(200)
            .json();
        let id = created["id"].as_str().expect("an id").to_owned();
        let answer = self.run(principal, &id, accept).await;
        (id, answer)
    }

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

pub fn ulid() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    )
}
