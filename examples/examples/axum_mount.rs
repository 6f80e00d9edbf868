//! Mounting the dbconsole API inside an axum application.
//!
//! The application has routes of its own (`/`, `/healthz`, `/app/status`) and mounts
//! [`dbconsole_core::ConsoleService`] next to them as the router's fallback service, so the
//! console answers its full paths (`/api/v1/console/databases...`, `/v1/dashboards...`)
//! unchanged. The store is the in-memory backend: everything is gone when the process stops.
//! The router itself is [`dbconsole_examples::app`]; `tests/app.rs` tests it.
//!
//! Run:
//!
//! ```text
//! cargo run -p dbconsole-examples --example axum_mount
//! ```
//!
//! It listens on `127.0.0.1:3000` (`EXAMPLE_LISTEN` overrides it) and accepts the API key in
//! `DBCONSOLE_API_KEY` and the access token in `DBCONSOLE_ACCESS_TOKEN`; when they are unset it
//! accepts the demo values `demo-api-key` and `demo-access-token`. Then, from another shell:
//!
//! ```text
//! curl localhost:3000/app/status
//! curl -X POST localhost:3000/api/v1/console/databases \
//!   -H 'x-api-key: demo-api-key' -H 'content-type: application/json' \
//!   -d '{"name":"orders","adapter":"postgres","hostname":"db.internal","database":"orders",
//!        "credentials":[{"username":"console","password":"change-me"}]}'
//! curl localhost:3000/app/status
//! curl -X POST localhost:3000/v1/dashboards -H 'authorization: Bearer demo-access-token' \
//!   -H 'content-type: application/json' -d '{"name":"ops","restricted_access":false}'
//! ```
//!
//! Ctrl-C stops it, after the requests in flight are answered.

use dbconsole_core::Secret;
use dbconsole_examples::{DEMO_ACCESS_TOKEN, DEMO_API_KEY, app, memory_console};

/// A secret from the environment, or the demo value when the variable is unset or empty.
/// Returns whether the demo value was used; the value itself is never printed.
fn secret_from_env(variable: &str, demo: &str) -> (Secret, bool) {
    match std::env::var(variable) {
        Ok(value) if !value.trim().is_empty() => (Secret::from(value), false),
        _ => (Secret::from(demo), true),
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (api_key, demo_key) = secret_from_env("DBCONSOLE_API_KEY", DEMO_API_KEY);
    let (access_token, demo_token) = secret_from_env("DBCONSOLE_ACCESS_TOKEN", DEMO_ACCESS_TOKEN);
    let console = memory_console(&api_key, &access_token);

    let listen = std::env::var("EXAMPLE_LISTEN").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("listening on http://{}", listener.local_addr()?);
    if demo_key || demo_token {
        println!(
            "using the demo API key and/or access token (see the example's doc); set \
             DBCONSOLE_API_KEY and DBCONSOLE_ACCESS_TOKEN to choose your own"
        );
    }

    axum::serve(listener, app(console))
        .with_graceful_shutdown(async {
            // If the signal handler cannot be installed, run until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await
}
