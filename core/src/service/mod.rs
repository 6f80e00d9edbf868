//! [`ConsoleService`]: the whole HTTP JSON API as one `tower::Service`.
//!
//! A request goes through the same steps in the same order whatever the route: recognize the
//! path (unknown: 404), authenticate (401) and check the scope (403), check the method (405),
//! then the handler of the route family, which reads the body (400/413/415), validates it (422)
//! and asks the [`Storage`]. Every error becomes its status in [`ApiError`] (module `error`), so
//! the service never fails: `Error = Infallible`.
//!
//! Secrets arrive in bodies and are sealed by validation with the service's [`Sealer`]; only
//! check-connection opens them.
//!
//! ---
//!
//! *The manual's page on this part, as the repository shows it:*
#![doc = include_str!("../../../docs/api.md")]

mod access;
pub mod agent;
mod audit;
mod body;
pub mod browser;
mod cache;
mod call;
mod check_connection;
mod conditional;
mod dashboards;
mod databases;
mod error;
pub mod idempotency;
mod me;
mod openapi;
mod outbox;
mod queries;
mod render;
mod request_id;
mod response;
mod router;
mod row_tokens;
pub mod run_events;
mod schema;

pub use error::ApiError;
pub use outbox::OutboxTargets;
pub use queries::{DEFAULT_MAX_ROWS, DEFAULT_ROW_LIMIT, DEFAULT_STATEMENT_TIMEOUT};
pub use request_id::{REQUEST_ID_HEADER, REQUEST_ID_MAX, RequestId};
pub use response::{BodyError, ResponseBody};
pub use row_tokens::RowTokenOptions;
pub use run_events::RunEventStats;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderMap, Method, Request, Response, header};
use http_body::Body;

use crate::auth::{Authenticator, Caller};
use crate::check::{Checkers, TunnelDialer};
use crate::metrics;
use crate::model::{CredentialKind, Origin, Retention, Timestamp};
use crate::seal::Sealer;
use crate::storage::{Page, Storage, StorageError};
use crate::validate::{PageQuery, ValidationErrors};
use cache::{CacheKey, ReadCache};
use call::Call;
use router::{Endpoint, Idempotent, Route};

/// Largest request body accepted (1 MiB); larger is 413.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// How long a request body may take to arrive once its head has; slower is 408.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the audit trail keeps events by default: 365 days, and at most a million events.
pub const DEFAULT_AUDIT_RETENTION: Retention = Retention {
    max_age_days: Some(365),
    max_events: Some(1_000_000),
};

/// Check-connection timeout when the credential sets none.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// The dbconsole HTTP API as a `tower::Service<http::Request<B>>`. Cheap to clone: clones share
/// the same storage, authenticator and checkers.
#[derive(Clone, Debug)]
pub struct ConsoleService {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    storage: Arc<dyn Storage>,
    authenticator: Arc<dyn Authenticator>,
    sealer: Sealer,
    base_path: String,
    checkers: Checkers,
    tunnel_dialer: Option<Arc<dyn TunnelDialer>>,
    check_timeout: Duration,
    body_limit: usize,
    body_timeout: Duration,
    metrics: bool,
    read_cache: Option<ReadCache>,
    audit_retention: Retention,
    openapi: std::sync::OnceLock<bytes::Bytes>,
    runners: crate::run::Runners,
    trust_principal: bool,
    max_rows: u32,
    memory: Arc<crate::run::memory::RunMemory>,
    statement_timeout: Duration,
    outbox: OutboxTargets,
    /// Credential id → the id of its database, as panel runs found them.
    credential_index: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// How browser sessions behave.
    sessions: browser::SessionOptions,
    /// When this node last wrote each session's last use.
    session_touched: browser::Touched,
    /// The console's schema answers, kept a minute.
    schemas: schema::SchemaCache,
    /// How panel rows' tokens behave.
    row_tokens: RowTokenOptions,
    /// The audit events of panel (and other event-only) runs, written off their way.
    run_events: Arc<run_events::RunEvents>,
}

/// Builds a [`ConsoleService`].
#[derive(Debug)]
pub struct ConsoleServiceBuilder {
    shared: Shared,
}

impl ConsoleService {
    /// Starts building a service over this storage, accepting the callers this authenticator
    /// accepts, sealing secrets with this sealer. A durable storage must be given the sealer it
    /// was opened with (its key check proves the key), or the secrets it keeps will not open
    /// after a restart.
    pub fn builder(
        storage: Arc<dyn Storage>,
        authenticator: Arc<dyn Authenticator>,
        sealer: Sealer,
    ) -> ConsoleServiceBuilder {
        ConsoleServiceBuilder {
            shared: Shared {
                storage,
                authenticator,
                sealer,
                base_path: String::new(),
                checkers: Checkers::none(),
                tunnel_dialer: None,
                check_timeout: DEFAULT_CHECK_TIMEOUT,
                body_limit: DEFAULT_BODY_LIMIT,
                body_timeout: DEFAULT_BODY_TIMEOUT,
                metrics: false,
                read_cache: None,
                audit_retention: DEFAULT_AUDIT_RETENTION,
                openapi: std::sync::OnceLock::new(),
                runners: crate::run::Runners::none(),
                trust_principal: false,
                max_rows: DEFAULT_MAX_ROWS,
                memory: crate::run::memory::RunMemory::new(
                    crate::run::encode::ValueLimits::default(),
                ),
                statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
                outbox: OutboxTargets::default(),
                credential_index: std::sync::Mutex::new(std::collections::HashMap::new()),
                sessions: browser::SessionOptions::default(),
                session_touched: browser::Touched::default(),
                schemas: schema::SchemaCache::default(),
                row_tokens: RowTokenOptions::default(),
                run_events: Arc::new(run_events::RunEvents::new(run_events::DEFAULT_BOUND, false)),
            },
        }
    }

    /// The storage the service uses.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.shared.storage
    }

    /// The sealer the service seals secrets with.
    pub fn sealer(&self) -> &Sealer {
        &self.shared.sealer
    }

    /// How the service's browser sessions behave.
    pub fn session_options(&self) -> &browser::SessionOptions {
        &self.shared.sessions
    }

    /// What the writer of run events (a panel's, an agent's, …) has done: written, failed,
    /// the backlog of answered runs whose events are not durable yet, its peak and its bound.
    pub fn run_events(&self) -> RunEventStats {
        self.shared.run_events.stats()
    }

    /// Waits until the event of every answered run is durable (or its write failed, logged):
    /// call it once the server stopped answering, before the program ends.
    pub async fn settle_run_events(&self) {
        self.shared.run_events.settle().await;
    }

    /// Deletes the audit events beyond the retention the service was built with (oldest
    /// first) and answers how many. Call it now and then (the server does at start and every
    /// hour); writes never delete events themselves.
    pub async fn prune_audit(&self) -> Result<u64, StorageError> {
        let shared = &self.shared;
        shared
            .storage
            .prune_audit(shared.audit_retention, Timestamp::now())
            .await
    }

    /// Deletes the browser sessions and sign-in links that ended (expired, or idle past the
    /// idle time) and answers how many. Call it now and then (the server does every hour).
    pub async fn prune_sessions(&self) -> Result<u64, StorageError> {
        let now = Timestamp::now();
        let idle = i64::try_from(self.shared.sessions.idle.as_micros()).unwrap_or(i64::MAX);
        let idle_before = Timestamp::from_micros(now.as_micros().saturating_sub(idle));
        self.shared.storage.prune_sessions(now, idle_before).await
    }

    /// Deletes the answers of idempotent writes older than [`idempotency::ANSWER_TTL`] and
    /// answers how many. Call it now and then (the server does every hour, with
    /// [`ConsoleService::prune_audit`]).
    pub async fn prune_answers(&self) -> Result<u64, StorageError> {
        let ttl = i64::try_from(idempotency::ANSWER_TTL.as_micros()).unwrap_or(i64::MAX);
        let before = Timestamp::from_micros(Timestamp::now().as_micros().saturating_sub(ttl));
        self.shared.storage.prune_answers(before).await
    }
}

/// A base path is empty or starts with `/`, does not end with one, and has no empty segment.
#[derive(Debug, thiserror::Error)]
#[error("a base path must start with '/' and not end with '/', like /console (got {0:?})")]
pub struct InvalidBasePath(String);

impl ConsoleServiceBuilder {
    /// The connection checkers, one per adapter (default: none, and check-connection answers
    /// that the adapter's checker is not built in).
    pub fn checkers(mut self, checkers: Checkers) -> Self {
        self.shared.checkers = checkers;
        self
    }

    /// How check-connection reaches databases that have a `tunnel_id` (default: none, and such a
    /// check answers that the tunnel is not available).
    pub fn tunnel_dialer(mut self, dialer: Arc<dyn TunnelDialer>) -> Self {
        self.shared.tunnel_dialer = Some(dialer);
        self
    }

    /// The check-connection timeout for credentials that set none (default 10 s).
    pub fn check_timeout(mut self, timeout: Duration) -> Self {
        self.shared.check_timeout = timeout;
        self
    }

    /// Routes on the path below `base` (default: none, the full path). With
    /// `.base_path("/console")` the service answers `/console/api/v1/console/databases` and
    /// 404 for any path outside `/console/`: for servers that hand a mounted service the full
    /// path. (axum's `nest_service` strips the prefix itself, so it needs no base.)
    pub fn base_path(mut self, base: &str) -> Result<Self, InvalidBasePath> {
        let valid = base.is_empty()
            || (base.starts_with('/') && !base.ends_with('/') && !base.contains("//"));
        if !valid {
            return Err(InvalidBasePath(base.to_owned()));
        }
        self.shared.base_path = base.to_owned();
        Ok(self)
    }

    /// The largest request body accepted (default 1 MiB).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.shared.body_limit = bytes;
        self
    }

    /// Keeps the rendered answers of `GET` by id of databases and dashboards, up to `bytes`
    /// (default 0: none), so that a repeated read skips the storage. Only for a service that is
    /// the **only writer** of its storage (a redb file, the memory store), which invalidates
    /// what each of its writes touched before answering it; never for nodes sharing a store.
    /// docs/operations.md, *The read cache*.
    pub fn read_cache(mut self, bytes: usize) -> Self {
        self.shared.read_cache = ReadCache::new(bytes);
        self
    }

    /// How long a request body may take to arrive (default 30 s): a client that stalls in the
    /// middle of its upload gets 408 and its connection closed, instead of holding the request
    /// (and a graceful shutdown) open.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.shared.body_timeout = timeout;
        self
    }

    /// Records the service's measurements through the `metrics` facade (module [`crate::metrics`]):
    /// turn it on when the program installs a recorder (default off: nothing is measured).
    pub fn metrics(mut self, on: bool) -> Self {
        self.shared.metrics = on;
        self
    }

    /// The most answered runs (of panels, agents' tools, catalog reads, role checks) whose
    /// audit events may not be durable yet (default [`run_events::DEFAULT_BOUND`], at least 1):
    /// what a crash can lose. A run waits before its answer ends while the backlog is full.
    pub fn run_events_bound(mut self, bound: usize) -> Self {
        self.shared.run_events = Arc::new(run_events::RunEvents::new(bound, false));
        self
    }

    /// How long the audit trail keeps events (default [`DEFAULT_AUDIT_RETENTION`]: 365 days
    /// and at most a million events); [`ConsoleService::prune_audit`] applies it.
    pub fn audit_retention(mut self, retention: Retention) -> Self {
        self.shared.audit_retention = retention;
        self
    }

    /// The query runners, one per adapter (default: none, and a run answers 501 that the
    /// adapter's runner is not built in); [`crate::run::standard_runners`] has every one compiled
    /// in.
    pub fn runners(mut self, runners: crate::run::Runners) -> Self {
        self.shared.runners = runners;
        self
    }

    /// Trusts the [`crate::model::Principal`] the embedding program puts into a request's
    /// extensions (default off: extensions are ignored). Turn it on only behind middleware that
    /// authenticates every request and sets (or removes) the principal itself: a request that
    /// carries one is then the principal's, with no key or token (docs/api.md, "Who may do what").
    pub fn trust_principal(mut self, on: bool) -> Self {
        self.shared.trust_principal = on;
        self
    }

    /// The most rows a run may return (default [`DEFAULT_MAX_ROWS`]): a request's
    /// `limit` above it is refused.
    pub fn max_rows(mut self, rows: u32) -> Self {
        self.shared.max_rows = rows.max(1);
        self
    }

    /// The most bytes of one value and of one row of a result, and of all runs' large rows
    /// together (default [`crate::run::encode::ValueLimits::default`]): a result with a bigger
    /// value or row is refused, never copied into the answer; a run whose next large row does
    /// not fit in the budget waits for room (docs/queries.md, "Limits and cancel"). A row's
    /// bound is at least its value's, and the budget at least what one row of the most bytes is
    /// charged ([`crate::run::memory::CHARGE`] times its size).
    pub fn value_limits(mut self, limits: crate::run::encode::ValueLimits) -> Self {
        let max_value = limits.max_value.max(1);
        let max_row = limits.max_row.max(max_value);
        self.shared.memory = crate::run::memory::RunMemory::new(crate::run::encode::ValueLimits {
            max_value,
            max_row,
            max_in_flight: limits.max_in_flight.max(
                max_row
                    .saturating_add(crate::run::memory::FRAMING)
                    .saturating_mul(crate::run::memory::CHARGE),
            ),
        });
        self
    }

    /// What the service puts in the outbox (docs/workflows.md, "Workflows and notifications"): row
    /// action triggers when `workflows` (refused with 409 otherwise), review requests to Slack
    /// when `slack`; `wake` is the worker to wake at once. Off by default.
    pub fn outbox(mut self, targets: OutboxTargets) -> Self {
        self.shared.outbox = targets;
        self
    }

    /// The statement timeout of credentials that set none (default 30 s).
    pub fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.shared.statement_timeout = timeout;
        self
    }

    /// How browser sessions behave (default [`browser::SessionOptions::default`]: plain-HTTP
    /// cookies, the request's `Host` as the origin, 1 h idle, 12 h at most).
    pub fn sessions(mut self, options: browser::SessionOptions) -> Self {
        self.shared.sessions = options;
        self
    }

    /// How panel rows' tokens behave: their life, and whether a trigger may bring a row
    /// without one (docs/workflows.md, "Row tokens").
    pub fn row_tokens(mut self, options: RowTokenOptions) -> Self {
        self.shared.row_tokens = options;
        self
    }

    /// The service.
    pub fn build(mut self) -> ConsoleService {
        // The run events' writer records metrics when the service does.
        self.shared.run_events = Arc::new(run_events::RunEvents::new(
            self.shared.run_events.bound(),
            self.shared.metrics,
        ));
        ConsoleService {
            shared: Arc::new(self.shared),
        }
    }
}

/// The future of `ConsoleService`'s `Service::call`.
pub type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

impl<B> tower_service::Service<Request<B>> for ConsoleService
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.respond(request)
    }
}

impl ConsoleService {
    /// The answer to `request`: what [`tower_service::Service::call`] answers, without the
    /// `&mut` (the service is always ready).
    pub fn respond<B>(&self, request: Request<B>) -> ResponseFuture
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        use tracing::Instrument as _;

        let shared = Arc::clone(&self.shared);
        let request_id = RequestId::of(&request);
        // Measured only when asked for: the labels cost a GET a tenth of its time.
        let measured = shared.metrics.then(|| {
            (
                std::time::Instant::now(),
                shared.route_template(request.uri().path()),
                request.method().clone(),
            )
        });
        // Every log line of the request, storage and checkers included, carries its id.
        let span = tracing::info_span!("request", request_id = %request_id);
        Box::pin(
            async move {
                let mut response = shared
                    .handle(request, &request_id)
                    .await
                    .unwrap_or_else(ApiError::into_response);
                let headers = response.headers_mut();
                headers.insert(REQUEST_ID_HEADER, request_id.header_value());
                // Answers carry data (rows, names, ids): never kept by a browser or a proxy,
                // never sniffed into another type.
                headers
                    .entry(header::CACHE_CONTROL)
                    .or_insert(http::HeaderValue::from_static("no-store"));
                headers.insert(
                    header::X_CONTENT_TYPE_OPTIONS,
                    http::HeaderValue::from_static("nosniff"),
                );
                if let Some((started, route, method)) = measured {
                    metrics::record_request(route, &method, response.status(), started.elapsed());
                }
                Ok(response)
            }
            .instrument(span),
        )
    }
}

impl Shared {
    /// The route template of a path (the `route` label of the request metrics): the same for
    /// the compat paths of a route, `unmatched` for a path that is no route.
    fn route_template(&self, path: &str) -> &'static str {
        path.strip_prefix(self.base_path.as_str())
            .filter(|rest| rest.starts_with('/'))
            .and_then(Route::recognize)
            .map_or("unmatched", |route| route.template())
    }

    async fn handle<B>(
        &self,
        request: Request<B>,
        request_id: &RequestId,
    ) -> Result<Response<ResponseBody>, ApiError>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let http::request::Parts {
            method,
            uri,
            headers,
            extensions,
            ..
        } = parts;
        let path = uri
            .path()
            .strip_prefix(self.base_path.as_str())
            .filter(|rest| rest.starts_with('/'))
            .ok_or(ApiError::NotFound)?;
        let route = Route::recognize(path).ok_or(ApiError::NotFound)?;
        let vouched = self
            .trust_principal
            .then(|| extensions.get::<crate::model::Principal>().cloned())
            .flatten();
        let caller = match vouched {
            Some(principal) => {
                let caller = Caller::vouched(principal);
                if !route.permits(&caller, &method) {
                    return Err(ApiError::Forbidden);
                }
                Some(caller)
            }
            None if !route.credentials().required() => None,
            None => Some(self.authorize(&route, &method, &headers).await?),
        };
        // One normal form of identity for whatever authenticated the request (a stored key, a
        // token's claims, the embedding program's principal): docs/api.md, "Who may do what".
        let caller = caller.map(|mut caller| {
            caller.principal = caller.principal.map(crate::model::Principal::normalized);
            caller
        });
        let origin = call::LazyOrigin::new(caller.as_ref(), request_id.as_str());
        let endpoint = route.endpoint(&method);
        let idempotency_key = match endpoint {
            Some(endpoint) if endpoint.idempotent != Idempotent::No => {
                idempotency::key_of(&headers)?
            }
            _ => None,
        };
        let Some(endpoint) = endpoint else {
            return Err(ApiError::MethodNotAllowed(route.allowed_methods()));
        };
        tracing::debug!(route = route.template(), method = %method, "authorized");
        let written = CacheKey::written(endpoint.writes, &route.params);
        let call = Call {
            method,
            headers,
            query: uri.query().map(str::to_owned),
            body: call::boxed(body),
            params: route.params,
            caller: caller.as_ref(),
            origin: &origin,
        };
        let answer = match idempotency_key {
            // Rare, and its future is large: boxed, so every other request's stays small.
            Some(key) => Box::pin(self.idempotent(endpoint, call, &key, path)).await,
            None => (endpoint.handler)(self, call).await,
        };
        if let Some(key) = written {
            // Succeeded or not (a failed commit may still have happened), before answering.
            if let Some(cache) = &self.read_cache {
                cache.invalidate(key.as_ref());
            }
            // A changed or deleted database's pools go at once (its secrets, host or timeout
            // may have changed; docs/queries.md, "Running queries"). Other nodes replace theirs
            // at their next run (the database's version changed) or drop them when unused.
            if let Some(CacheKey::Database(id)) = &key {
                self.runners.evict(id);
            }
        }
        answer
    }

    /// A write with an `Idempotency-Key` ([`idempotency`]): the stored answer of the same
    /// request, or the write, storing its answer with it.
    async fn idempotent(
        &self,
        endpoint: &'static Endpoint,
        call: Call<'_>,
        key: &str,
        path: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let Call {
            method,
            headers,
            query,
            body: unread,
            params,
            caller,
            origin,
        } = call;
        let key = idempotency::scoped(&origin.actor, &method, path, key);
        let bytes = if method == Method::DELETE {
            bytes::Bytes::new()
        } else {
            body::read(&headers, unread, self.body_limit, self.body_timeout).await?
        };
        let fingerprint = idempotency::fingerprint(&method, path, &headers, &bytes);
        if let Some(stored) = self.storage.stored_answer(&key).await? {
            return idempotency::replay(&stored, &fingerprint);
        }
        let mut origin = Origin::clone(origin);
        origin.idempotency = Some(idempotency::idempotency(
            endpoint.idempotent,
            params.get("id"),
            &method,
            key.clone(),
            fingerprint,
        ));
        let origin = call::LazyOrigin::of(origin);
        let call = Call {
            method,
            headers,
            query,
            body: call::boxed(http_body_util::Full::new(bytes)),
            params,
            caller,
            origin: &origin,
        };
        match (endpoint.handler)(self, call).await {
            // Another request with this key wrote first: its answer, now stored.
            Err(ApiError::AnswerExists) => match self.storage.stored_answer(&key).await? {
                Some(stored) => idempotency::replay(&stored, &fingerprint),
                None => Err(ApiError::AnswerExists),
            },
            answer => answer,
        }
    }

    /// `GET /openapi.json`: the OpenAPI document, no credential needed.
    async fn openapi_document(&self, _call: Call<'_>) -> Result<Response<ResponseBody>, ApiError> {
        let body = self.openapi.get_or_init(|| {
            let document = openapi::document(&self.base_path);
            bytes::Bytes::from(serde_json::to_vec(&document).unwrap_or_default())
        });
        Ok(response::json_bytes_response(
            http::StatusCode::OK,
            body.clone(),
        ))
    }

    /// The caller `secret` is as a credential of `kind` (`None`: not a valid one); a failure of
    /// the check itself is the storage's error, or 500.
    pub(crate) async fn authenticate(
        &self,
        kind: CredentialKind,
        secret: &str,
    ) -> Result<Option<Caller>, ApiError> {
        if let Some(known) = self.authenticator.authenticate_now(kind, secret) {
            return Ok(known);
        }
        self.authenticator
            .authenticate(kind, secret)
            .await
            .map_err(|error| match error.downcast::<StorageError>() {
                Ok(error) => ApiError::from(*error),
                Err(error) => {
                    tracing::error!(%error, "authenticator failure");
                    ApiError::Internal
                }
            })
    }

    /// 401 unless a credential the route takes is valid; 403 unless its scope allows the call.
    pub(crate) async fn authorize(
        &self,
        route: &Route<'_>,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<Caller, ApiError> {
        let accepted = route.credentials();
        // The credential headers, read once.
        let credentials = presented_credentials(headers);
        let credentials = credentials.iter().flatten().copied();
        // A browser's session counts only when the request presents no other credential.
        if credentials.clone().next().is_none()
            && let Some(caller) = Box::pin(self.session_caller(method, headers)).await?
        {
            return if route.permits(&caller, method) {
                Ok(caller)
            } else {
                Err(ApiError::Forbidden)
            };
        }
        // Every credential the route takes must be valid: a wrong key beside a valid token (or
        // the reverse) is 401, never the other one's caller.
        let mut caller = None;
        let mut presented = false;
        let mut invalid = false;
        let mut other = false;
        for (kind, secret) in credentials {
            presented |= accepted.accepts(kind);
            other |= !accepted.accepts(kind);
            let found = self.authenticate(kind, secret).await?;
            match found {
                Some(found) if accepted.accepts(kind) => {
                    caller.get_or_insert(found);
                }
                Some(_) => {}
                None => invalid = true,
            }
        }
        if invalid {
            caller = None;
        }
        match caller {
            None => Err(ApiError::Unauthorized {
                bearer: accepted.takes_bearer(),
                hint: accepted.hint(presented, other),
            }),
            Some(caller) if route.permits(&caller, method) => Ok(caller),
            Some(_) => Err(ApiError::Forbidden),
        }
    }
}

/// The page request that lets [`page_response`] know whether a next page exists: one record
/// more than the limit.
pub(crate) fn page_request(query: &PageQuery) -> Page<'_> {
    Page {
        after: query.after.as_deref(),
        limit: query.limit + 1,
    }
}

/// Both results, or the errors of both (422).
pub(crate) fn both<A, B>(
    a: Result<A, ValidationErrors>,
    b: Result<B, ValidationErrors>,
) -> Result<(A, B), ApiError> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(mut errors), Err(more)) => {
            errors.merge(more);
            Err(ApiError::Invalid(errors))
        }
        (Err(errors), _) | (_, Err(errors)) => Err(ApiError::Invalid(errors)),
    }
}

/// Cuts what [`page_request`] fetched down to one page, and the id the next page starts after
/// (`None` when nothing follows).
pub(crate) fn split_page<T>(
    mut items: Vec<T>,
    query: &PageQuery,
    id_of: impl Fn(&T) -> String,
) -> (Vec<T>, Option<String>) {
    let next = if items.len() > query.limit {
        items.truncate(query.limit);
        items.last().map(id_of)
    } else {
        None
    };
    (items, next)
}

/// The header of an API key (parsed once: a lookup by `&str` parses the name every time).
const X_API_KEY: header::HeaderName = header::HeaderName::from_static("x-api-key");

/// The credentials a request presents, of either kind: `x-api-key`, and
/// `Authorization: Bearer <token>`.
fn presented_credentials(headers: &HeaderMap) -> [Option<(CredentialKind, &str)>; 2] {
    let api_key = headers
        .get(X_API_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| (CredentialKind::ApiKey, v));
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .filter(|v| !v.is_empty())
        .map(|v| (CredentialKind::AccessToken, v));
    [api_key, bearer]
}
