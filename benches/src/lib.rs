//! # dbconsole-benches
//!
//! Criterion benchmarks of [`ConsoleService`] over the in-memory backend, driven exactly as a
//! server drives it: one `tower::ServiceExt::oneshot` per request. This library holds what the
//! bench target (`benches/service.rs`) uses: the service and its fixtures ([`fixtures`]), and
//! the table of ratios printed at the end of a run ([`report`]). `README.md` beside
//! `Cargo.toml` says how to run the benches, what each one measures, and the figures measured.
//!
//! Why ratios: absolute times depend on the machine; the ratio of an operation to a baseline
//! measured the same way, in the same run, on the same machine, is what can be compared across
//! machines and over time.

use std::sync::Arc;

use bytes::Bytes;
use dbconsole_core::{ConsoleService, Sealer, Secret, StaticCredentials, Storage};
use dbconsole_storage_memory::MemoryStorage;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use tower::ServiceExt;

pub mod fixtures;
pub mod loopback;
pub mod report;

/// The API key the benchmarked service accepts.
pub const API_KEY: &str = "bench-api-key-0123456789";
/// The access token the benchmarked service accepts.
pub const ACCESS_TOKEN: &str = "bench-access-token-0123456789";

/// Path prefix of the database routes.
pub const DATABASES: &str = "/api/v1/console/databases";
/// Path prefix of the dashboard routes.
pub const DASHBOARDS: &str = "/v1/dashboards";

/// A service over a fresh, empty in-memory store.
pub fn service() -> ConsoleService {
    let sealer = Sealer::ephemeral().expect("a random key");
    service_on(Arc::new(MemoryStorage::new()), sealer)
}

/// A service over this store, sealing with this sealer (the one a durable store was opened
/// with).
pub fn service_on(storage: Arc<dyn Storage>, sealer: Sealer) -> ConsoleService {
    builder_on(storage, sealer).build()
}

/// An in-memory service with the server's default read cache (8 MiB of rendered records).
pub fn service_with_read_cache() -> ConsoleService {
    let sealer = Sealer::ephemeral().expect("a random key");
    builder_on(Arc::new(MemoryStorage::new()), sealer)
        .read_cache(8 << 20)
        .build()
}

fn builder_on(storage: Arc<dyn Storage>, sealer: Sealer) -> dbconsole_core::ConsoleServiceBuilder {
    let auth = StaticCredentials::new(
        Some(&Secret::from(API_KEY)),
        Some(&Secret::from(ACCESS_TOKEN)),
    );
    ConsoleService::builder(storage, Arc::new(auth), sealer)
}

/// A request to a database route (`x-api-key`), with a JSON body when one is given.
pub fn database_request(method: Method, path: &str, body: Option<Bytes>) -> Request<Full<Bytes>> {
    request(method, path, ("x-api-key", API_KEY.to_owned()), body)
}

/// A request to a dashboard route (`Authorization: Bearer`), with a JSON body when one is
/// given.
pub fn dashboard_request(method: Method, path: &str, body: Option<Bytes>) -> Request<Full<Bytes>> {
    let auth = (
        header::AUTHORIZATION.as_str(),
        format!("Bearer {ACCESS_TOKEN}"),
    );
    request(method, path, auth, body)
}

fn request(
    method: Method,
    path: &str,
    (name, value): (&str, String),
    body: Option<Bytes>,
) -> Request<Full<Bytes>> {
    let builder = Request::builder()
        .method(method)
        .uri(path)
        .header(name, value);
    let request = match body {
        Some(body) => builder
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(body)),
        None => builder.body(Full::new(Bytes::new())),
    };
    request.expect("a valid request")
}

/// Sends a request and returns the status; the response body is dropped unread (the service
/// has built it already). This is what every benchmark iteration does.
pub async fn status_of(service: &ConsoleService, request: Request<Full<Bytes>>) -> StatusCode {
    match service.clone().oneshot(request).await {
        Ok(response) => response.status(),
        Err(never) => match never {},
    }
}

/// Sends a request and returns the status and the body as JSON, for setting benches up.
///
/// # Panics
///
/// When the body is not JSON.
pub async fn json_of(
    service: &ConsoleService,
    request: Request<Full<Bytes>>,
) -> (StatusCode, serde_json::Value) {
    let response = match service.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let status = response.status();
    let body = match response.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => panic!("{status}: the body was cut off: {error}"),
    };
    let value = serde_json::from_slice(&body).unwrap_or_else(|error| {
        panic!(
            "{status}: body is not JSON ({error}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    (status, value)
}
