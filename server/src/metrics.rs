//! `GET /metrics` in the Prometheus text format, on its own listener (`--metrics-listen`), so
//! it can be bound where only the monitoring can reach it. The service's own measurements
//! (`dbconsole_core::metrics`) go to the Prometheus recorder installed here; the
//! stored record counts are read from the storage at each scrape.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use dbconsole_core::metrics::record_request;
use dbconsole_core::{ApiError, ResponseBody, Storage};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

/// The path of the metrics.
pub const METRICS: &str = "/metrics";

/// Stored records, by kind (a gauge set at each scrape).
pub const RECORDS: &str = "dbconsole_records";

/// Latency buckets in seconds: from half a millisecond (a cached GET) to the check-connection
/// timeout.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Installs the process's Prometheus recorder (once; later calls get the same handle's twin
/// only if the first succeeded).
pub fn install() -> Result<PrometheusHandle, metrics_exporter_prometheus::BuildError> {
    PrometheusBuilder::new()
        .set_buckets(&BUCKETS)?
        .install_recorder()
}

/// Serves `/metrics` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, handle: PrometheusHandle, storage: Arc<dyn Storage>) {
    let state = Arc::new((handle, storage));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(answer(&request, &state.0, &*state.1).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer<B>(
    request: &Request<B>,
    handle: &PrometheusHandle,
    storage: &dyn Storage,
) -> Response<ResponseBody> {
    if request.uri().path() != METRICS {
        return ApiError::NotFound.into_response();
    }
    if request.method() != Method::GET {
        return ApiError::MethodNotAllowed(vec![Method::GET]).into_response();
    }
    match storage.record_counts().await {
        Ok(counts) => {
            for (kind, count) in [
                ("databases", counts.databases),
                ("dashboards", counts.dashboards),
                ("caller_keys", counts.caller_keys),
            ] {
                metrics::gauge!(RECORDS, "kind" => kind).set(count as f64);
            }
        }
        Err(error) => tracing::warn!(%error, "cannot count the stored records"),
    }
    let mut response = Response::new(ResponseBody::full(Bytes::from(handle.render())));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// Records a request the server answered itself (health, readiness, docs) under its path.
pub fn record_own(
    path: &'static str,
    method: &Method,
    status: StatusCode,
    took: std::time::Duration,
) {
    record_request(path, method, status, took);
}
