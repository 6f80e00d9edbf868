//! The pipeline: [`ConsoleService`], the whole HTTP JSON API as one `tower::Service`. A request
//! goes through the same steps in the same order whatever the route: recognize the path
//! (unknown: 404), authenticate (401) and check the scope (403), check the method (405), then
//! the handler its route row names, which reads the body (400/413/415), validates it (422) and
//! asks the storage. Every error becomes its status in [`ApiError`], so the service never
//! fails: `Error = Infallible`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderMap, Method, Request, Response, header};
use http_body::Body;

use super::app::App;
use super::body;
use super::cache::CacheKey;
use super::call::{self, Call};
use super::error::ApiError;
use super::idempotency::{self, Idempotent};
use super::request_id::{REQUEST_ID_HEADER, RequestId};
use super::response::ResponseBody;
use super::router::Route;
use super::routes::Endpoint;
use crate::auth::Caller;
use crate::metrics;
use crate::model::{CredentialKind, Origin};

/// The dbconsole HTTP API as a `tower::Service<http::Request<B>>`. Cheap to clone: clones share
/// the same storage, authenticator and checkers.
#[derive(Clone, Debug)]
pub struct ConsoleService {
    app: Arc<App>,
}

impl ConsoleService {
    /// The service of a built state.
    pub(crate) fn of(app: App) -> Self {
        Self { app: Arc::new(app) }
    }

    /// The built state.
    pub(crate) fn app(&self) -> &App {
        &self.app
    }

    /// The PostgreSQL wire door of this service (docs/door.md): the server hands it each
    /// connection its door listener accepts.
    pub fn door(&self) -> super::door::DoorHandle {
        super::door::DoorHandle {
            door: self.app.door.clone(),
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

        let app = Arc::clone(&self.app);
        let request_id = RequestId::of(&request);
        // Measured only when asked for: the labels cost a GET a tenth of its time.
        let measured = app.metrics.then(|| {
            (
                std::time::Instant::now(),
                app.route_template(request.uri().path()),
                request.method().clone(),
            )
        });
        // Every log line of the request, storage and checkers included, carries its id.
        let span = tracing::info_span!("request", request_id = %request_id);
        Box::pin(
            async move {
                let mut response = app
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
                // No answer (a page of the OIDC flow included) is framed by another site.
                headers
                    .entry(header::X_FRAME_OPTIONS)
                    .or_insert(http::HeaderValue::from_static("DENY"));
                if let Some((started, route, method)) = measured {
                    metrics::record_request(route, &method, response.status(), started.elapsed());
                }
                Ok(response)
            }
            .instrument(span),
        )
    }
}

impl App {
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
                // The embedding program vouches for who it is; a user a super admin
                // deactivated is refused all the same.
                let principal = super::users::served(&*self.storage, principal, false).await?;
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
        let peer = extensions.get::<call::PeerAddr>().map(|peer| peer.0);
        let call = Call {
            method,
            headers,
            query: uri.query().map(str::to_owned),
            body: body::boxed(body),
            params: route.params,
            caller: caller.as_ref(),
            origin: &origin,
            limits: self.limits,
            peer,
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
            limits,
            peer,
        } = call;
        let key = idempotency::scoped(&origin.actor, &method, path, key);
        let bytes = if method == Method::DELETE {
            bytes::Bytes::new()
        } else {
            body::read(&headers, unread, limits.limit, limits.timeout).await?
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
            body: body::boxed(http_body_util::Full::new(bytes)),
            params,
            caller,
            peer,
            origin: &origin,
            limits,
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
        // A browser's session counts only when the request presents no other credential: a
        // request with an `x-api-key` or an `Authorization` header of any kind (blank, Basic)
        // is judged by its headers alone.
        let headers_present =
            headers.contains_key(X_API_KEY) || headers.contains_key(header::AUTHORIZATION);
        if !headers_present
            && let Some((caller, kind)) =
                Box::pin(self.browser.session_caller(method, headers)).await?
        {
            // A session signed in with a key reaches what that key reaches, no more.
            if let Some(kind) = kind
                && !accepted.accepts(kind)
            {
                return Err(ApiError::Denied(format!(
                    "this session was signed in with {}, which this route does not take",
                    match kind {
                        CredentialKind::ApiKey => "an API key",
                        CredentialKind::AccessToken => "an access token",
                    }
                )));
            }
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
            let found = self.callers.authenticate(kind, secret).await?;
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
            Some(mut caller) if route.permits(&caller, method) => {
                // A key or token of a deactivated user counts for nothing.
                if let Some(principal) = caller.principal.take() {
                    // A user seen for the first time gets a record (a super admin can then
                    // find and deactivate them).
                    let source = if caller.actor.id.is_some() {
                        crate::model::UserSource::Key
                    } else {
                        crate::model::UserSource::Oidc
                    };
                    let origin = Origin::of(caller.actor.clone());
                    caller.principal = Some(
                        super::users::served_credential(
                            &*self.storage,
                            &origin,
                            principal,
                            caller.scope,
                            source,
                        )
                        .await?,
                    );
                }
                Ok(caller)
            }
            Some(_) => Err(ApiError::Forbidden),
        }
    }
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
