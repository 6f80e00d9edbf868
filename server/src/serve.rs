//! The serving loop: accept connections, answer `/healthz`, hand every other request to the
//! [`ConsoleService`], log one line per request, and shut down gracefully.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dbconsole_core::{ApiError, ConsoleService, REQUEST_ID_HEADER, RequestId, ResponseBody};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::{GracefulConnection, GracefulShutdown};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

/// The path of the health check (liveness: the process answers).
pub const HEALTHZ: &str = "/healthz";

/// The path of the readiness check: 200 `ready` when the storage can serve requests, 503 when
/// it cannot be reached now (a load balancer takes the node out of rotation meanwhile).
pub const READYZ: &str = "/readyz";

/// How long to wait before accepting again after `accept` failed (out of file descriptors…),
/// so that a persistent failure does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The bounds of the serving loop (docs/operations.md, *The reference server*).
#[derive(Clone, Copy, Debug)]
pub struct ServeLimits {
    /// Connections that sent a complete request head, served at once; the next one's request
    /// waits until one ends.
    pub max_connections: usize,
    /// Connections that have not yet sent a complete request head, kept at once: past it, the
    /// oldest of those from the address that holds the most of them is closed to make room.
    /// They take no slot of `max_connections`, so that sockets that open and never finish a
    /// head can't crowd out callers that do, nor one address's flood close others' connections
    /// before their heads are read.
    pub max_pending: usize,
    /// How long a connection may go without sending a request head while none of its
    /// requests is being answered (a slow head, or an idle keep-alive connection) before it is
    /// closed: after between one and two of it.
    pub head_timeout: Duration,
    /// How long a shutdown waits for the requests in flight before it ends them.
    pub drain: Duration,
    /// Whether the address a request came from ([`dbconsole_core::service::PeerAddr`], which
    /// failed sign-ins are counted by) is the last of its `X-Forwarded-For` (what the trusted
    /// proxy in front saw) rather than the connection's peer.
    pub trust_forwarded_for: bool,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            max_pending: 256,
            head_timeout: Duration::from_secs(10),
            drain: Duration::from_secs(10),
            trust_forwarded_for: false,
        }
    }
}

/// A connection's state as the serving loop sees it: its slot of `max_connections` once it
/// sent a request head, and what the [`Reaper`] watches (which also tells whether it sent a
/// head: [`Conn::started`]).
#[derive(Debug, Default)]
struct Conn {
    slot: std::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    /// Request heads completed and answers ended, counted together.
    progress: AtomicU64,
    /// Requests whose answer has not ended (its body is still being sent).
    answering: AtomicUsize,
}

impl Conn {
    /// Whether it sent a complete request head (an answer ends only after one).
    fn started(&self) -> bool {
        self.progress.load(Ordering::Acquire) > 0
    }
}

/// A connection's task, as the [`Reaper`] and [`Pending`] see it: its state while it runs, and
/// how to end it.
#[derive(Debug)]
struct Handle {
    conn: std::sync::Weak<Conn>,
    abort: tokio::task::AbortHandle,
}

/// Closes the connections that made no progress (no request head completed, no answer ended)
/// for a whole period while none of their requests was being answered: a client slow to send
/// a request head, or a keep-alive connection left idle, is closed after between one and two
/// periods, while an answer however long (a stream of rows) is never cut.
///
/// One task and one timer for all the connections, looking at each once a period: a timer per
/// connection, polled with it at every request (or hyper's header read timeout, armed and
/// dropped at every request), was a measurable part of a cached `GET` (benches/README.md).
#[derive(Debug, Default)]
struct Reaper {
    watched: std::sync::Mutex<Watched>,
}

/// The connections a [`Reaper`] watches.
#[derive(Debug, Default)]
struct Watched {
    /// Every connection's task, with its progress when last looked at (`None`: not yet).
    tasks: Vec<(Handle, Option<u64>)>,
    /// How many were live when last counted.
    live: usize,
}

impl Reaper {
    fn watch(&self, handle: Handle) {
        let mut watched = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        // Ended connections are forgotten at each sweep, and here when many short ones ended
        // in between: the list stays within twice the live connections and a little.
        if watched.tasks.len() >= 2 * watched.live + 1024 {
            watched
                .tasks
                .retain(|(handle, _)| handle.conn.strong_count() > 0);
            watched.live = watched.tasks.len();
        }
        watched.tasks.push((handle, None));
    }

    /// Looks at every connection once: forgets those that ended, closes those that made no
    /// progress since the last look while answering nothing.
    fn sweep(&self) {
        let mut watched = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        watched.tasks.retain_mut(|(handle, seen)| {
            let Some(conn) = handle.conn.upgrade() else {
                return false;
            };
            let now = conn.progress.load(Ordering::Acquire);
            if *seen == Some(now) && conn.answering.load(Ordering::Acquire) == 0 {
                tracing::debug!("a connection sent no request head in time: closed");
                handle.abort.abort();
                return false;
            }
            *seen = Some(now);
            true
        });
        watched.live = watched.tasks.len();
    }

    /// Sweeps once a `period`, until dropped.
    async fn run(&self, period: Duration) {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick completes at once.
        ticks.tick().await;
        loop {
            ticks.tick().await;
            self.sweep();
        }
    }
}

/// One request of a connection being answered, from its complete head until its answer's body
/// is dropped (sent, or abandoned with the connection).
#[derive(Debug)]
struct Answering(Arc<Conn>);

impl Answering {
    /// The request whose head just completed, and whether it is its connection's first.
    fn start(conn: Arc<Conn>) -> (Self, bool) {
        let first = conn.progress.fetch_add(1, Ordering::AcqRel) == 0;
        conn.answering.fetch_add(1, Ordering::AcqRel);
        (Self(conn), first)
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.answering.fetch_sub(1, Ordering::AcqRel);
        self.0.progress.fetch_add(1, Ordering::AcqRel);
    }
}

/// An answer's body, holding its request's [`Answering`] until hyper drops it.
#[derive(Debug)]
struct Tracked {
    body: ResponseBody,
    _answering: Answering,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = <ResponseBody as hyper::body::Body>::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The connections without a complete request head, oldest first, with their peers' addresses.
#[derive(Debug, Default)]
struct Pending {
    queue: std::sync::Mutex<std::collections::VecDeque<(std::net::IpAddr, Handle)>>,
}

impl Pending {
    /// Adds `handle` of a connection from `peer`; when more than `budget` are pending, closes
    /// the oldest of the address that holds the most: a flood from one address makes room
    /// from its own sockets, never from another's connection whose head was not read yet.
    fn admit(&self, peer: std::net::IpAddr, handle: Handle, budget: usize) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.retain(|(_, pending)| pending.conn.upgrade().is_some_and(|c| !c.started()));
        queue.push_back((peer, handle));
        while queue.len() > budget.max(1) {
            let mut held: std::collections::HashMap<std::net::IpAddr, usize> =
                std::collections::HashMap::new();
            for (address, _) in queue.iter() {
                *held.entry(*address).or_default() += 1;
            }
            let most = held
                .into_iter()
                .max_by_key(|(_, count)| *count)
                .map(|(address, _)| address);
            let Some(at) = queue.iter().position(|(address, _)| Some(*address) == most) else {
                break;
            };
            // One that sent its head meanwhile is being answered: it stays.
            if let Some((_, oldest)) = queue.remove(at)
                && oldest.conn.upgrade().is_some_and(|c| !c.started())
            {
                tracing::debug!("a connection without a request head was closed to make room");
                oldest.abort.abort();
            }
        }
    }
}

/// Serves `service` on `listener` (over TLS with `tls`) until `shutdown` completes, then stops accepting, lets the
/// requests in flight finish (idle keep-alive connections are closed at once) for at most
/// `limits.drain`, or until `force` completes (a second signal), and returns.
///
/// Every request is logged once, after its response is ready, at `info` on the target
/// `dbconsole::request`: method, path (never the query string), status and duration in
/// milliseconds. `GET`/`HEAD /healthz` answers 200 `ok` without reaching the service.
pub async fn serve<F, G>(
    listener: TcpListener,
    service: ConsoleService,
    limits: ServeLimits,
    tls: Option<TlsAcceptor>,
    shutdown: F,
    force: G,
) where
    F: Future<Output = ()>,
    G: Future<Output = ()>,
{
    let graceful = GracefulShutdown::new();
    // No hyper timer, so no header read timeout of hyper's: the [`Reaper`] closes a
    // connection whose client never finishes its request head, so that it can't hold it (and
    // the shutdown) forever. It runs with this loop, and on while the shutdown drains.
    let http = http1::Builder::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let pending = Pending::default();
    let reaper = Reaper::default();
    let reaping = reaper.run(limits.head_timeout);
    tokio::pin!(reaping);
    let app = App {
        mcp: crate::mcp::Mcp::new(service.clone()),
        service,
        console: dbconsole_console_assets::ConsolePages::new(),
    };
    tokio::pin!(shutdown);
    loop {
        // Accepting never waits for a slot: a connection takes one of `max_connections` when
        // its first request head is complete ([`handle`]); until then it is one of the pending,
        // the oldest of which is closed when there are too many.
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = &mut reaping => unreachable!("the reaper runs until dropped"),
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let peer = Peer {
                        ip: peer.ip(),
                        trust_forwarded_for: limits.trust_forwarded_for,
                    };
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::debug!(%error, "could not set TCP_NODELAY");
                    }
                    let conn = Arc::new(Conn::default());
                    let weak = Arc::downgrade(&conn);
                    let app = app.clone();
                    let watcher = graceful.watcher();
                    let tls = tls.clone();
                    let http = http.clone();
                    let slots = Arc::clone(&slots);
                    let task = tokio::spawn(async move {
                        let served = async {
                            match tls {
                                None => watcher.watch(serve_with(&http, TokioIo::new(stream), app, &conn, slots, peer)).await,
                                Some(acceptor) => {
                                    // A client that never finishes its handshake is dropped.
                                    let handshake = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                                    match handshake.await {
                                        Ok(Ok(stream)) => watcher.watch(serve_with(&http, TokioIo::new(stream), app, &conn, slots, peer)).await,
                                        Ok(Err(error)) => {
                                            tracing::debug!(%error, "TLS handshake failed");
                                            Ok(())
                                        }
                                        Err(_) => {
                                            tracing::debug!("TLS handshake timed out");
                                            Ok(())
                                        }
                                    }
                                }
                            }
                        }
                        .await;
                        if let Err(error) = served {
                            tracing::debug!(%error, "connection ended with an error");
                        }
                    });
                    let handle = || Handle {
                        conn: weak.clone(),
                        abort: task.abort_handle(),
                    };
                    reaper.watch(handle());
                    pending.admit(peer.ip, handle(), limits.max_pending);
                }
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    tracing::info!(
        drain_secs = limits.drain.as_secs_f64(),
        "shutting down: no longer accepting, finishing requests in flight (a second signal stops at once)"
    );
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("shutdown complete"),
        () = &mut reaping => unreachable!("the reaper runs until dropped"),
        () = tokio::time::sleep(limits.drain) => {
            tracing::warn!("requests still in flight after the drain time: ending them");
        }
        () = force => tracing::warn!("second signal: ending the requests in flight"),
    }
}

/// How long a client may take over its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What answers requests: the service, and the MCP endpoint over it.
#[derive(Clone)]
struct App {
    service: ConsoleService,
    mcp: crate::mcp::Mcp,
    console: dbconsole_console_assets::ConsolePages,
}

/// Where a connection's requests come from.
#[derive(Clone, Copy, Debug)]
struct Peer {
    /// The connection's peer.
    ip: std::net::IpAddr,
    /// Whether a request's `X-Forwarded-For` (its last address) says instead.
    trust_forwarded_for: bool,
}

impl Peer {
    /// The address `request` came from.
    fn of<B>(self, request: &Request<B>) -> std::net::IpAddr {
        if !self.trust_forwarded_for {
            return self.ip;
        }
        request
            .headers()
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .next_back()
            .and_then(|last| {
                let last = last.trim();
                last.parse::<std::net::IpAddr>()
                    .ok()
                    .or_else(|| last.parse::<std::net::SocketAddr>().ok().map(|a| a.ip()))
            })
            .unwrap_or(self.ip)
    }
}

/// HTTP/1 on one connection (plain or TLS), answered by [`handle`]; its first request head
/// takes it out of the pending and into a slot of `slots`, held until it ends. Each request
/// carries where it came from ([`dbconsole_core::service::PeerAddr`]).
fn serve_with<I>(
    http: &http1::Builder,
    io: TokioIo<I>,
    app: App,
    conn: &Arc<Conn>,
    slots: Arc<Semaphore>,
    peer: Peer,
) -> impl GracefulConnection<Error = hyper::Error> + Send
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let conn = Arc::clone(conn);
    // One `App` per connection, shared by its requests (a clone per request cloned each of its
    // parts, the MCP service's cancellation token among them).
    let app = Arc::new(app);
    http.serve_connection(
        io,
        service_fn(move |mut request: Request<Incoming>| {
            let from = peer.of(&request);
            request
                .extensions_mut()
                .insert(dbconsole_core::service::PeerAddr(from));
            let (answering, first) = Answering::start(Arc::clone(&conn));
            // The connection's first request takes its slot: at the cap, it waits for one (as a
            // connection once waited in the backlog). Nothing of the request is looked at
            // before: the futures below do their work when polled.
            let first = first.then(|| Box::pin(take_slot(Arc::clone(&conn), Arc::clone(&slots))));
            let answer = answer(&app, request);
            async move {
                if let Some(first) = first {
                    first.await;
                }
                let response = match answer {
                    Answer::Service(call, logged) => {
                        let Ok(response) = call.await;
                        if let Some(logged) = logged {
                            log_request(
                                &response,
                                &logged.method,
                                logged.uri.path(),
                                logged.started,
                            );
                        }
                        response
                    }
                    Answer::Server(handling) => {
                        let Ok(response) = handling.await;
                        response
                    }
                };
                Ok::<_, Infallible>(response.map(|body| Tracked {
                    body,
                    _answering: answering,
                }))
            }
        }),
    )
}

/// Takes a slot of `slots` for `conn`, waiting for one at the cap.
async fn take_slot(conn: Arc<Conn>, slots: Arc<Semaphore>) {
    if let Ok(slot) = slots.acquire_owned().await {
        *conn.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(slot);
    }
}

/// How a request is answered: by the service (the API: nearly every request), with what its
/// log line needs when the request log is on, or by [`handle`] (the server's own routes, and
/// every request when browsers sign in through OIDC).
///
/// The service's call is its own boxed future, so a request of the API is moved into hyper's
/// connection as a few words, not as the largest branch of [`handle`].
enum Answer {
    Service(dbconsole_core::service::ResponseFuture, Option<Logged>),
    Server(Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>),
}

/// What a request's log line needs from it.
struct Logged {
    method: Method,
    uri: http::Uri,
    started: Instant,
}

/// Whether the server answers `path` itself ([`handle`]) rather than the service: what this
/// says `false` of, [`handle`] hands to the service.
fn serves_itself(path: &str) -> bool {
    path == crate::mcp::MCP_PATH
        || path == HEALTHZ
        || path == READYZ
        || path.starts_with(crate::docs::DOCS)
        || dbconsole_console_assets::ConsolePages::owns(path)
}

/// The [`Answer`] to `request`.
fn answer(app: &Arc<App>, request: Request<Incoming>) -> Answer {
    if serves_itself(request.uri().path()) {
        return Answer::Server(Box::pin(handle(Arc::clone(app), request)));
    }
    let logged =
        tracing::enabled!(target: "dbconsole::request", tracing::Level::INFO).then(|| Logged {
            method: request.method().clone(),
            uri: request.uri().clone(),
            started: Instant::now(),
        });
    Answer::Service(app.service.respond(request), logged)
}

/// One request: the health check, the docs, the MCP endpoint or the service, then the log
/// line. The service answers with the request's id (the caller's `x-request-id`, or a new one)
/// in `x-request-id`; the server's own routes get one here. The log line names it.
///
/// The rare routes' futures (MCP) are boxed: this future is moved into hyper's
/// connection once per request, and its size is its largest branch's.
async fn handle(
    app: Arc<App>,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let mut response = answer_own(app, request).await?;
    // Every answer, the server's own included (health, docs, MCP, pages): never sniffed into
    // another type, never framed by another site (a page's own policy stays).
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers
        .entry(header::X_FRAME_OPTIONS)
        .or_insert(HeaderValue::from_static("DENY"));
    Ok(response)
}

/// [`handle`] before the headers every answer carries.
async fn answer_own(
    app: Arc<App>,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let App {
        service,
        mcp,
        console,
    } = &*app;
    let started = Instant::now();
    let method = request.method().clone();
    // The path outlives the request (the log line): the URI's clone shares its bytes.
    let uri = request.uri().clone();
    let path = uri.path();
    if path == crate::mcp::MCP_PATH {
        // One id for the answer, the log line and the audit events of the request.
        let id = RequestId::from_headers(request.headers());
        let mut request = request;
        request
            .headers_mut()
            .insert(REQUEST_ID_HEADER, id.header_value());
        let mut response = Box::pin(mcp.handle(request)).await;
        crate::metrics::record_own(
            crate::mcp::MCP_PATH,
            &method,
            response.status(),
            started.elapsed(),
        );
        response
            .headers_mut()
            .insert(REQUEST_ID_HEADER, id.header_value());
        log_request(&response, &method, path, started);
        return Ok(response);
    }
    if let Some(page) = console.answer(&method, path) {
        let id = RequestId::from_headers(request.headers());
        let mut response = page.map(ResponseBody::full);
        response
            .headers_mut()
            .insert(REQUEST_ID_HEADER, id.header_value());
        crate::metrics::record_own("/console/", &method, response.status(), started.elapsed());
        log_request(&response, &method, path, started);
        return Ok(response);
    }
    let own_route = if path == HEALTHZ {
        Some(HEALTHZ)
    } else if path == READYZ {
        Some(READYZ)
    } else if path.starts_with(crate::docs::DOCS) && crate::docs::answer(&method, path).is_some() {
        Some(crate::docs::DOCS)
    } else {
        None
    };
    let response = match own_route {
        Some(route) => {
            let mut response = match route {
                HEALTHZ => healthz(&method),
                READYZ => Box::pin(readyz(&method, service)).await,
                _ => crate::docs::answer(&method, path)
                    .unwrap_or_else(|| ApiError::NotFound.into_response()),
            };
            // The routes the server answers itself are measured here; the service measures
            // its own.
            crate::metrics::record_own(route, &method, response.status(), started.elapsed());
            let id = RequestId::from_headers(request.headers());
            response
                .headers_mut()
                .insert(REQUEST_ID_HEADER, id.header_value());
            response
        }
        None => service.respond(request).await?,
    };
    log_request(&response, &method, path, started);
    Ok(response)
}

/// The one log line of a request.
fn log_request(response: &Response<ResponseBody>, method: &Method, path: &str, started: Instant) {
    let request_id = response
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let elapsed = started.elapsed();
    tracing::info!(
        target: "dbconsole::request",
        request_id,
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        duration_ms = elapsed.as_micros() as f64 / 1000.0,
        "request"
    );
}

/// `GET /healthz`: 200 `ok`; another method: 405 like any known route.
fn healthz(method: &Method) -> Response<ResponseBody> {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::MethodNotAllowed(vec![Method::GET, Method::HEAD]).into_response();
    }
    plain(StatusCode::OK, "ok")
}

/// `GET /readyz`: 200 `ready`, or 503 `not ready: storage unavailable` (the reason is logged).
async fn readyz(method: &Method, service: &ConsoleService) -> Response<ResponseBody> {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::MethodNotAllowed(vec![Method::GET, Method::HEAD]).into_response();
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
    let mut response = Response::new(ResponseBody::full(Bytes::from_static(text.as_bytes())));
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

    /// Completes at the next signal, and logs which one it was.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        let name = tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        };
        #[cfg(not(unix))]
        let name = match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        };
        tracing::info!(signal = name, "shutdown requested");
    }

    /// Two futures for [`serve`]: the first completes at the first signal (shut down), the
    /// second at the one after it (stop now). Needs a Tokio runtime.
    pub fn stages(mut self) -> (impl Future<Output = ()>, impl Future<Output = ()>) {
        let (first_tx, first_rx) = tokio::sync::oneshot::channel::<()>();
        let (second_tx, second_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            self.recv().await;
            let _ = first_tx.send(());
            self.recv().await;
            let _ = second_tx.send(());
        });
        (
            async move {
                let _ = first_rx.await;
            },
            async move {
                if second_rx.await.is_err() {
                    std::future::pending::<()>().await;
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watched connection whose task waits forever, and the task's handle.
    fn watched(reaper: &Reaper) -> (Arc<Conn>, tokio::task::JoinHandle<()>) {
        let conn = Arc::new(Conn::default());
        let held = Arc::clone(&conn);
        let task = tokio::spawn(async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        reaper.watch(Handle {
            conn: Arc::downgrade(&conn),
            abort: task.abort_handle(),
        });
        (conn, task)
    }

    /// Lets the runtime run what an abort scheduled.
    async fn settle() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_sweep_closes_only_what_made_no_progress_since_the_last_while_answering_nothing() {
        let reaper = Reaper::default();
        let (idle, idle_task) = watched(&reaper);
        let (busy, busy_task) = watched(&reaper);
        let (answering, answering_task) = watched(&reaper);
        let answer = Answering::start(Arc::clone(&answering)).0;
        // The first look only takes note.
        reaper.sweep();
        settle().await;
        assert!(!idle_task.is_finished());
        // Then: one made progress (a head completed), one is answering a request.
        drop(Answering::start(Arc::clone(&busy)));
        reaper.sweep();
        settle().await;
        assert!(idle_task.await.unwrap_err().is_cancelled());
        assert!(!busy_task.is_finished());
        assert!(!answering_task.is_finished());
        // The busy one went quiet for a whole period: closed; the answer is never cut.
        reaper.sweep();
        assert!(busy_task.await.unwrap_err().is_cancelled());
        reaper.sweep();
        settle().await;
        assert!(!answering_task.is_finished());
        drop(answer);
        reaper.sweep();
        reaper.sweep();
        assert!(answering_task.await.unwrap_err().is_cancelled());
        // Closed or ended connections are forgotten.
        assert!(reaper.watched.lock().unwrap().tasks.is_empty());
        drop((idle, busy, answering));
    }

    #[tokio::test]
    async fn too_many_pending_close_the_oldest_not_yet_started() {
        let reaper = Reaper::default();
        let pending = Pending::default();
        let (first, first_task) = watched(&reaper);
        let (second, second_task) = watched(&reaper);
        let (third, third_task) = watched(&reaper);
        let handle = |conn: &Arc<Conn>, task: &tokio::task::JoinHandle<()>| Handle {
            conn: Arc::downgrade(conn),
            abort: task.abort_handle(),
        };
        let here: std::net::IpAddr = [127, 0, 0, 1].into();
        pending.admit(here, handle(&first, &first_task), 2);
        pending.admit(here, handle(&second, &second_task), 2);
        // The first sends its head: it is being answered, so the next to go is the second.
        drop(Answering::start(Arc::clone(&first)));
        pending.admit(here, handle(&third, &third_task), 1);
        assert!(second_task.await.unwrap_err().is_cancelled());
        settle().await;
        assert!(!first_task.is_finished());
        assert!(!third_task.is_finished());
        drop((first, second, third));
    }

    #[tokio::test]
    async fn a_flood_from_one_address_makes_room_from_its_own() {
        let reaper = Reaper::default();
        let pending = Pending::default();
        let handle = |conn: &Arc<Conn>, task: &tokio::task::JoinHandle<()>| Handle {
            conn: Arc::downgrade(conn),
            abort: task.abort_handle(),
        };
        let caller: std::net::IpAddr = [127, 0, 0, 1].into();
        let flooder: std::net::IpAddr = [127, 0, 0, 2].into();
        let (waiting, waiting_task) = watched(&reaper);
        pending.admit(caller, handle(&waiting, &waiting_task), 3);
        let mut flood = Vec::new();
        for _ in 0..10 {
            let (conn, task) = watched(&reaper);
            pending.admit(flooder, handle(&conn, &task), 3);
            flood.push((conn, task));
        }
        settle().await;
        // The caller's connection, the oldest of all, stays; the flood keeps its newest two.
        assert!(!waiting_task.is_finished());
        let closed = flood.iter().filter(|(_, task)| task.is_finished()).count();
        assert_eq!(closed, 8);
        assert!(
            flood
                .iter()
                .rev()
                .take(2)
                .all(|(_, task)| !task.is_finished())
        );
        drop(waiting);
    }
}
