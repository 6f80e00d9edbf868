//! The serving loop: accept connections, answer `/healthz`, hand every other request to the
//! [`ConsoleService`], log one line per request, and shut down gracefully.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::io;
use std::time::{Duration, Instant};

use bytes::Bytes;
use dbconsole_core::{ApiError, ConsoleService, ResponseBody};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tower_service::Service;

/// The path of the health check (liveness: the process answers).
pub const HEALTHZ: &str = "/healthz";

/// The path of the readiness check: 200 `ready` when the storage can serve requests, 503 when
/// it cannot be reached now (a load balancer takes the node out of rotation meanwhile).
pub const READYZ: &str = "/readyz";

/// How long to wait before accepting again after `accept` failed (out of file descriptors…),
/// so that a persistent failure does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `service` on `listener` until `shutdown` completes, then stops accepting, lets the
/// requests in flight finish (idle keep-alive connections are closed at once) and returns.
///
/// Every request is logged once, after its response is ready, at `info` on the target
/// `dbconsole::request`: method, path (never the query string), status and duration in
/// milliseconds. `GET`/`HEAD /healthz` answers 200 `ok` without reaching the service.
pub async fn serve<F>(listener: TcpListener, service: ConsoleService, shutdown: F)
where
    F: Future<Output = ()>,
{
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    // The timer enables hyper's header read timeout, so a client that never finishes its
    // request head cannot hold a connection (and the shutdown) forever.
    http.timer(TokioTimer::new());
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::debug!(%error, "could not set TCP_NODELAY");
                    }
                    let service = service.clone();
                    let connection = http.serve_connection(
                        TokioIo::new(stream),
                        service_fn(move |request| handle(service.clone(), request)),
                    );
                    let connection = graceful.watch(connection);
                    tokio::spawn(async move {
                        if let Err(error) = connection.await {
                            tracing::debug!(%error, "connection ended with an error");
                        }
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    tracing::info!("shutting down: no longer accepting, finishing requests in flight");
    graceful.shutdown().await;
    tracing::info!("shutdown complete");
}

/// One request: the health check or the service, then the log line.
async fn handle(
    mut service: ConsoleService,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = if path == HEALTHZ {
        healthz(&method)
    } else if path == READYZ {
        readyz(&method, &service).await
    } else {
        poll_fn(|cx| Service::<Request<Incoming>>::poll_ready(&mut service, cx)).await?;
        service.call(request).await?
    };
    let elapsed = started.elapsed();
    tracing::info!(
        target: "dbconsole::request",
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        duration_ms = elapsed.as_micros() as f64 / 1000.0,
        "request"
    );
    Ok(response)
}

/// `GET /healthz`: 200 `ok`; another method: 405 like any known route.
fn healthz(method: &Method) -> Response<ResponseBody> {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::MethodNotAllowed(&[Method::GET, Method::HEAD]).into_response();
    }
    plain(StatusCode::OK, "ok")
}

/// `GET /readyz`: 200 `ready`, or 503 `not ready: storage unavailable` (the reason is logged).
async fn readyz(method: &Method, service: &ConsoleService) -> Response<ResponseBody> {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::MethodNotAllowed(&[Method::GET, Method::HEAD]).into_response();
    }
    match service.storage().check_ready().await {
        Ok(()) => plain(StatusCode::OK, "ready"),
        Err(error) => {
            tracing::warn!(%error, "not ready");
            plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "not ready: storage unavailable",
            )
        }
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// SIGINT and SIGTERM (Ctrl-C only, off Unix), installed before the server starts so that a
/// signal that arrives early is not lost to the default action.
#[derive(Debug)]
pub struct ShutdownSignal {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignal {
    /// Installs the handlers. Needs a Tokio runtime with signals enabled.
    pub fn install() -> io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// Completes at the first signal, and logs which one it was.
    pub async fn recv(self) {
        #[cfg(unix)]
        let name = {
            let Self {
                mut interrupt,
                mut terminate,
            } = self;
            tokio::select! {
                _ = interrupt.recv() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            }
        };
        #[cfg(not(unix))]
        let name = match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        };
        tracing::info!(signal = name, "shutdown requested");
    }
}
