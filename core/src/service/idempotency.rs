//! Retrying a write safely (docs/api.md, "Retrying a write safely"): a write request may carry an
//! `Idempotency-Key`. Its answer is stored with the write, in the same atomic change, scoped to
//! the caller, for [`ANSWER_TTL`]. A retry with the same key and the same request (method,
//! path, `If-Match` and body) gets that first answer again, marked `idempotent-replayed: true`,
//! and writes nothing; the same key with another request is 422. Of two requests with one key
//! at the same time, one writes and the other gets its answer (the store refuses a second
//! answer under one key, and with it the second write).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, header};
use sha2::{Digest, Sha256};

use super::conditional::etag;
use super::error::ApiError;
use super::render::{DashboardView, DataProtectionView, DatabaseView, PermissionsView};
use super::response::{ResponseBody, json_bytes, json_bytes_response};
use crate::model::{Actor, Idempotency, RenderAnswer, StoredAnswer, Written};
use crate::validate::ValidationErrors;

/// Whether an endpoint takes an `Idempotency-Key`, and what its stored answer renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Idempotent {
    /// It writes nothing a retry could repeat (reads, checks), or streams its answer (runs).
    No,
    /// A write answered with the record it wrote.
    Record,
    /// A write of a database's permissions, answered with them.
    Permissions,
    /// A write of a database's data protection, answered with it.
    DataProtection,
}

/// The request header.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Set on an answer given again to a retry.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");
/// How long an answer is kept for retries.
pub const ANSWER_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest key, in characters.
pub const KEY_MAX: usize = 255;

/// The request's `Idempotency-Key`: `None` when absent (or empty); 400 unless it is 1 to
/// [`KEY_MAX`] printable ASCII characters.
pub(crate) fn key_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::BadRequest(format!(
            "Idempotency-Key must be one value of 1 to {KEY_MAX} printable ASCII characters"
        ))
    };
    if values.next().is_some() {
        return Err(invalid());
    }
    let key = value.to_str().map_err(|_| invalid())?.trim();
    if key.is_empty() {
        return Ok(None);
    }
    if key.len() > KEY_MAX || !key.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(invalid());
    }
    Ok(Some(key.to_owned()))
}

/// The key as stored: scoped to the caller and to the method and path it was sent to, so that
/// two callers' keys never meet, and a key names one request to one resource.
pub(crate) fn scoped(actor: &Actor, method: &Method, path: &str, key: &str) -> String {
    let caller = actor.id.as_deref().unwrap_or(&actor.name);
    format!("{caller} {method} {path} {key}")
}

/// What identifies the request behind a key: its method, path, `If-Match` and body.
pub(crate) fn fingerprint(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in [method.as_str().as_bytes(), path.as_bytes()] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    for value in headers.get_all(header::IF_MATCH) {
        hash.update((value.len() as u64).to_le_bytes());
        hash.update(value.as_bytes());
    }
    hash.update(b"\0body");
    hash.update(body);
    hash.finalize().into()
}

/// The `ETag` of a permissions or data protection document, as its `GET` answers it.
fn document_tag(view: &impl serde::Serialize) -> Option<String> {
    Some(format!("\"{}\"", super::access::digest_of(view)))
}

/// How the answer of a write of this `kind` on the record `id` is rendered from what it
/// wrote: exactly the bytes the route's handler answers (a delete's answer carries no `ETag`).
fn renderer(kind: Idempotent, id: &str, method: &Method) -> RenderAnswer {
    let tagged = method != Method::DELETE;
    let access = match kind {
        Idempotent::Permissions => Some((id.to_owned(), true)),
        Idempotent::DataProtection => Some((id.to_owned(), false)),
        Idempotent::No | Idempotent::Record => None,
    };
    let tag = move |updated_at: crate::model::Timestamp| {
        tagged.then(|| {
            etag(updated_at)
                .to_str()
                .map(str::to_owned)
                .unwrap_or_default()
        })
    };
    Arc::new(move |written: Written<'_>| {
        let (etag, body) = match (written, &access) {
            (Written::Delivery(d), _) => {
                let body = json_bytes(&super::render::DeliveryView::from(d));
                return (202, None, body.map(|b| b.to_vec()).unwrap_or_default());
            }
            (Written::Query(q), _) => (None, json_bytes(&super::render::QueryView::from(q))),
            (Written::Database(db), _) => (tag(db.updated_at), json_bytes(&DatabaseView::from(db))),
            (Written::Dashboard(d), _) => (tag(d.updated_at), json_bytes(&DashboardView::from(d))),
            (Written::Access(a), Some((id, true))) => {
                let view = PermissionsView::new(id, a);
                (document_tag(&view), json_bytes(&view))
            }
            (Written::Access(a), Some((id, false))) => {
                let view = DataProtectionView::new(id, a);
                (document_tag(&view), json_bytes(&view))
            }
            (Written::Access(_), None) => (None, Ok(Bytes::new())),
        };
        (200, etag, body.map(|b| b.to_vec()).unwrap_or_default())
    })
}

/// The idempotency of a write: its scoped key, fingerprint and renderer.
pub(crate) fn idempotency(
    kind: Idempotent,
    id: &str,
    method: &Method,
    key: String,
    fingerprint: [u8; 32],
) -> Idempotency {
    Idempotency {
        key,
        fingerprint,
        render: renderer(kind, id, method),
    }
}

/// The answer to a retry that found `stored` under its key: the first answer again when the
/// request is the same, 422 when it is another.
pub(crate) fn replay(
    stored: &StoredAnswer,
    fingerprint: &[u8; 32],
) -> Result<Response<ResponseBody>, ApiError> {
    if stored.fingerprint != *fingerprint {
        return Err(ApiError::Invalid(ValidationErrors::single(
            "idempotency_key",
            "was already used with another request",
        )));
    }
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut response = json_bytes_response(status, Bytes::from(stored.body.clone()));
    let headers = response.headers_mut();
    if let Some(tag) = stored
        .etag
        .as_deref()
        .and_then(|t| HeaderValue::from_str(t).ok())
    {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(REPLAYED, HeaderValue::from_static("true"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(IDEMPOTENCY_KEY, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn keys_are_one_short_printable_value() {
        assert_eq!(key_of(&headers(&[])).unwrap(), None);
        assert_eq!(key_of(&headers(&["  "])).unwrap(), None);
        assert_eq!(
            key_of(&headers(&[" order-42 "])).unwrap().as_deref(),
            Some("order-42")
        );
        assert!(key_of(&headers(&[&"k".repeat(KEY_MAX)])).unwrap().is_some());
        assert!(key_of(&headers(&[&"k".repeat(KEY_MAX + 1)])).is_err());
        assert!(key_of(&headers(&["a", "b"])).is_err());
        assert!(key_of(&headers(&["tab\there"])).is_err());
    }

    #[test]
    fn the_fingerprint_covers_method_path_condition_and_body() {
        let none = HeaderMap::new();
        let base = fingerprint(&Method::POST, "/a", &none, b"{}");
        assert_eq!(base, fingerprint(&Method::POST, "/a", &none, b"{}"));
        assert_ne!(base, fingerprint(&Method::PUT, "/a", &none, b"{}"));
        assert_ne!(base, fingerprint(&Method::POST, "/b", &none, b"{}"));
        assert_ne!(base, fingerprint(&Method::POST, "/a", &none, b"{ }"));
        let mut conditional = HeaderMap::new();
        conditional.insert(header::IF_MATCH, HeaderValue::from_static("\"1\""));
        assert_ne!(base, fingerprint(&Method::POST, "/a", &conditional, b"{}"));
        // The path and the body can't trade bytes.
        assert_ne!(
            fingerprint(&Method::POST, "/ab", &none, b""),
            fingerprint(&Method::POST, "/a", &none, b"b")
        );
    }

    #[test]
    fn keys_are_scoped_to_their_caller() {
        let stored = Actor {
            id: Some("key_1".into()),
            name: "ci".into(),
        };
        let post = |actor: &Actor| scoped(actor, &Method::POST, "/api/v1/console/databases", "k");
        assert_eq!(post(&stored), "key_1 POST /api/v1/console/databases k");
        assert_ne!(post(&stored), post(&Actor::named("static API key")));
        assert_ne!(
            post(&stored),
            scoped(&stored, &Method::PUT, "/api/v1/console/databases", "k")
        );
    }
}
