//! [`Call`]: one request on its way through a handler, whatever the route: the method, headers,
//! query and body, the path's parameters, who called and the audit origin; and what every
//! handler answers ([`Answer`]), with the paging helpers the listing handlers share.

use http::{HeaderMap, Method};
use serde_json::{Map, Value};

use super::body::{self, BodyLimits, RequestBody};
use super::error::ApiError;
use super::params::Params;
use super::response::ResponseBody;
use crate::auth::Caller;
use crate::model::{Origin, Principal};
use crate::storage::Page;
use crate::validate::{PageQuery, ValidationErrors, parse_page_query};

/// What a handler answers.
pub(crate) type Answer = Result<http::Response<ResponseBody>, ApiError>;

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
    /// How much of the body is read, and for how long.
    pub(crate) limits: BodyLimits,
    /// Where the request came from, when the embedding server says ([`PeerAddr`]).
    pub(crate) peer: Option<std::net::IpAddr>,
}

/// Where a request came from: the embedding server puts it into the request's extensions (the
/// reference server: the connection's peer, or behind `--trust-forwarded-for` the address the
/// proxy saw). Failed sign-ins are counted per address (docs/console.md, "Signing in").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub std::net::IpAddr);

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
        principal_of(self.caller)
    }

    /// The body as a JSON object (400/413/415 otherwise), read within the body timeout (408
    /// otherwise).
    pub(crate) async fn json(&mut self) -> Result<Map<String, Value>, ApiError> {
        let bytes = body::read(
            &self.headers,
            std::mem::take(&mut self.body),
            self.limits.limit,
            self.limits.timeout,
        )
        .await?;
        let parsed = body::json_object(&bytes);
        body::wipe(bytes);
        parsed
    }

    /// The body as an optional JSON object: an empty body is an empty object.
    pub(crate) async fn optional_json(&mut self) -> Result<Map<String, Value>, ApiError> {
        body::read_optional_object(
            &self.headers,
            std::mem::take(&mut self.body),
            self.limits.limit,
            self.limits.timeout,
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

/// The principal of a caller of the query routes: 403 without one (or without a caller).
pub(crate) fn principal_of(caller: Option<&Caller>) -> Result<&Principal, ApiError> {
    caller
        .and_then(|caller| caller.principal.as_ref())
        .ok_or_else(|| {
            ApiError::Denied(
                "running queries needs a user: a key or token bound to one (dbconsole keys create \
                 --user …), or a principal the embedding program vouches for"
                    .to_owned(),
            )
        })
}

/// The page request that lets [`split_page`] know whether a next page exists: one record
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
