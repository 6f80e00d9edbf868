//! [`Call`]: one request on its way through a handler, whatever the route: the method, headers,
//! query and body, the path's parameters, who called and the audit origin.

use bytes::{Buf as _, Bytes};
use http::{HeaderMap, Method};
use http_body::Body;
use http_body_util::BodyExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use serde_json::{Map, Value};

use super::Shared;
use super::body;
use super::error::ApiError;
use super::router::Params;
use crate::auth::Caller;
use crate::model::{Origin, Principal};
use crate::validate::{PageQuery, ValidationErrors, parse_page_query};

/// A request body of any type, boxed once so that handlers are plain functions.
pub(crate) type RequestBody = UnsyncBoxBody<Bytes, BodyFault>;

/// Why a request body could not be read (the transport's error), as one named type: a boxed
/// `dyn Error` as the body's error type trips the compiler's check that handlers' futures are
/// `Send`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BodyFault(Box<dyn std::error::Error + Send + Sync>);

/// Boxes `body` as a [`RequestBody`]; a body known to be empty (a `GET`'s) is not kept, and
/// its box allocates nothing.
pub(crate) fn boxed<B>(body: B) -> RequestBody
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if body.is_end_stream() {
        return http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
    }
    body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
        .map_err(|error| BodyFault(error.into()))
        .boxed_unsync()
}

/// The [`Origin`] of a call, made the first time a handler asks for it (most reads never do):
/// who called (anonymous without a credential) and the request's id. Dereferences to it.
#[derive(Debug)]
pub(crate) struct LazyOrigin<'a> {
    caller: Option<&'a Caller>,
    request_id: &'a str,
    made: std::sync::OnceLock<Origin>,
}

impl<'a> LazyOrigin<'a> {
    /// The origin of a request of `request_id` by `caller`.
    pub(crate) fn new(caller: Option<&'a Caller>, request_id: &'a str) -> Self {
        Self {
            caller,
            request_id,
            made: std::sync::OnceLock::new(),
        }
    }

    /// This origin, already made.
    pub(crate) fn of(origin: Origin) -> Self {
        Self {
            caller: None,
            request_id: "",
            made: std::sync::OnceLock::from(origin),
        }
    }
}

impl std::ops::Deref for LazyOrigin<'_> {
    type Target = Origin;

    fn deref(&self) -> &Origin {
        self.made.get_or_init(|| Origin {
            actor: self.caller.map_or_else(
                || crate::model::Actor::named("anonymous"),
                |caller| caller.actor.clone(),
            ),
            request_id: Some(self.request_id.to_owned()),
            idempotency: None,
        })
    }
}

/// One request in progress: what every handler needs.
pub(crate) struct Call<'a> {
    /// The method.
    pub(crate) method: Method,
    /// The headers.
    pub(crate) headers: HeaderMap,
    /// The query string.
    pub(crate) query: Option<String>,
    /// The body, not yet read.
    pub(crate) body: RequestBody,
    /// The path's parameters.
    pub(crate) params: Params<'a>,
    /// Who called: `None` on a route that takes no credential.
    pub(crate) caller: Option<&'a Caller>,
    /// The origin of what the call writes (its audit events), made when first used.
    pub(crate) origin: &'a LazyOrigin<'a>,
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("method", &self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Call<'_> {
    /// The path parameter `name`.
    pub(crate) fn param(&self, name: &str) -> &str {
        self.params.get(name)
    }

    /// The principal of the caller: 403 without one (the query routes need a user).
    pub(crate) fn principal(&self) -> Result<&Principal, ApiError> {
        super::queries::principal_of(self.caller)
    }

    /// The body as a JSON object (400/413/415 otherwise), read within `shared`'s body timeout
    /// (408 otherwise).
    pub(crate) async fn json(&mut self, shared: &Shared) -> Result<Map<String, Value>, ApiError> {
        let bytes = body::read(
            &self.headers,
            std::mem::take(&mut self.body),
            shared.body_limit,
            shared.body_timeout,
        )
        .await?;
        let parsed = body::json_object(&bytes);
        body::wipe(bytes);
        parsed
    }

    /// The body as an optional JSON object: an empty body is an empty object.
    pub(crate) async fn optional_json(
        &mut self,
        shared: &Shared,
    ) -> Result<Map<String, Value>, ApiError> {
        body::read_optional_object(
            &self.headers,
            std::mem::take(&mut self.body),
            shared.body_limit,
            shared.body_timeout,
        )
        .await
    }

    /// The listing query (422 on `limit` otherwise).
    pub(crate) fn page_query(&self) -> Result<PageQuery, ValidationErrors> {
        parse_page_query(self.query.as_deref())
    }

    /// The `Accept` header, when it is text.
    pub(crate) fn accept(&self) -> Option<&str> {
        self.headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
    }
}
