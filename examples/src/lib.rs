//! # dbconsole-examples
//!
//! How another program embeds dbconsole. The pieces here are shared by the example binaries
//! (`examples/`) and by the tests that keep them honest (`tests/`):
//!
//! - [`app`]: an axum application with routes of its own that mounts the whole dbconsole API
//!   ([`ConsoleService`]) next to them. Run it with
//!   `cargo run -p dbconsole-examples --example axum_mount`; `tests/app.rs` drives the same
//!   router in-process and over a loopback socket.
//! - [`provision`]: a small pretend program that registers databases through the HTTP API, and
//!   `tests/embedded.rs`, which tests that program against the service over the in-memory
//!   backend, with no server and no network.
//!
//! Why mount with [`Router::fallback_service`]: the service expects the full request path
//! (`/api/v1/console/databases/...`, `/v1/dashboards/...`), and `nest_service` would strip the
//! prefix. As the fallback, the service sees every request that no route of the application
//! matched, answers the API paths, and answers anything else with its own JSON 404.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Json;
use axum::routing::get;
use dbconsole_core::storage::Page;
use dbconsole_core::{ConsoleService, Sealer, Secret, StaticCredentials, Storage};
use dbconsole_storage_memory::MemoryStorage;
use serde_json::{Value, json};

pub mod provision;

/// The API key the example accepts when `DBCONSOLE_API_KEY` is not set. A demo value: never use
/// a fixed key outside a demo.
pub const DEMO_API_KEY: &str = "demo-api-key";

/// The access token the example accepts when `DBCONSOLE_ACCESS_TOKEN` is not set. A demo value.
pub const DEMO_ACCESS_TOKEN: &str = "demo-access-token";

/// A dbconsole service over a fresh in-memory store, accepting this API key (database routes)
/// and this access token (dashboard routes), with every connection checker (the
/// `all-checkers` feature of `dbconsole-core`).
pub fn memory_console(api_key: &Secret, access_token: &Secret) -> ConsoleService {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let auth = StaticCredentials::new(Some(api_key), Some(access_token));
    // The in-memory store does not outlive the process, so a random sealing key is enough.
    let sealer = Sealer::ephemeral().expect("the system random number generator");
    ConsoleService::builder(storage, Arc::new(auth), sealer)
        .checkers(dbconsole_core::check::standard_checkers())
        .build()
}

/// The example application: its own routes, and the dbconsole API mounted next to them.
///
/// - `GET /`: a plain-text greeting;
/// - `GET /healthz`: `ok`;
/// - `GET /app/status`: JSON with how many databases and dashboards the console holds, read
///   straight from the storage the console shares with the application;
/// - `/console/...`: the same dbconsole API nested under a prefix with `nest_service` (axum
///   strips `/console` before the service sees the path);
/// - everything else: the dbconsole API (`/api/v1/console/databases...`, `/v1/dashboards...`
///   and the compatibility routes), with its own authentication and error bodies.
///
/// (A server that hands a mounted service the full path instead would build the console with
/// `ConsoleServiceBuilder::base_path("/console")`.)
pub fn app(console: ConsoleService) -> Router {
    let storage = Arc::clone(console.storage());
    Router::new()
        .route("/", get(index))
        .route("/healthz", get(|| async { "ok" }))
        .route("/app/status", get(status))
        .nest_service("/console", console.clone())
        .fallback_service(console)
        .with_state(storage)
}

async fn index() -> &'static str {
    "example application: its own routes at / and /app/status, dbconsole under /api/v1 and /v1\n"
}

async fn status(State(storage): State<Arc<dyn Storage>>) -> Result<Json<Value>, StatusCode> {
    match counts(storage.as_ref()).await {
        Ok((databases, dashboards)) => Ok(Json(json!({
            "status": "ok",
            "databases": databases,
            "dashboards": dashboards,
        }))),
        Err(error) => {
            eprintln!("status: storage failure: {error}");
            Err(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

/// How many databases and dashboards the store holds, page by page.
async fn counts(storage: &dyn Storage) -> Result<(usize, usize), dbconsole_core::StorageError> {
    const LIMIT: usize = 500;
    let mut databases = 0;
    let mut after: Option<String> = None;
    loop {
        let page = Page {
            after: after.as_deref(),
            limit: LIMIT,
        };
        let items = storage.list_databases(page, Default::default()).await?;
        databases += items.len();
        match items.last() {
            Some(last) if items.len() == LIMIT => after = Some(last.id.to_string()),
            _ => break,
        }
    }
    let mut dashboards = 0;
    let mut after: Option<String> = None;
    loop {
        let page = Page {
            after: after.as_deref(),
            limit: LIMIT,
        };
        let items = storage.list_dashboards(page, Default::default()).await?;
        dashboards += items.len();
        match items.last() {
            Some(last) if items.len() == LIMIT => after = Some(last.id.to_string()),
            _ => break,
        }
    }
    Ok((databases, dashboards))
}
