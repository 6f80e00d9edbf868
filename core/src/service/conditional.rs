//! Conditional requests (docs/api.md, "No silent overwrites"). Every database and dashboard has a
//! version: its `updated_at`, which every write moves strictly forward. Responses that carry a
//! record carry its version as a strong `ETag`; `If-Match` makes a write conditional (checked
//! against the version read, which the store's compare-and-swap then requires; 412 when it does
//! not match); `If-None-Match` makes a `GET`
//! answer 304 when the client's copy is current.

use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use super::error::ApiError;
use super::response::ResponseBody;
use crate::model::Timestamp;
use crate::storage::{DeleteCheck, StorageError};

/// The `ETag` of a record at this version: `"` + its `updated_at` in microseconds + `"`.
pub(crate) fn etag(updated_at: Timestamp) -> HeaderValue {
    HeaderValue::try_from(format!("\"{}\"", updated_at.as_micros()))
        .expect("digits and quotes are a header value")
}

/// One entity tag of a header: its opaque text and whether it is weak (`W/"…"`).
#[derive(Debug, PartialEq, Eq)]
struct Tag<'a> {
    weak: bool,
    opaque: &'a str,
}

/// A conditional header as the request gives it: `None` when absent (or only empty values),
/// `Some(None)` for `*`, else its entity tags; 400, naming the header, when a value is not `*`
/// or a list of entity tags.
fn condition<'a>(
    headers: &'a HeaderMap,
    name: &header::HeaderName,
    shown: &str,
) -> Result<Option<Option<Vec<Tag<'a>>>>, ApiError> {
    let given = headers
        .get_all(name)
        .iter()
        .any(|value| !value.as_bytes().trim_ascii().is_empty());
    if !given {
        return Ok(None);
    }
    tags(headers, name).map(Some).map_err(|()| {
        ApiError::BadRequest(format!(
            "{shown} must be * or a list of entity tags, like \"1795000000000000\""
        ))
    })
}

/// The tags of every value of `name`: `Ok(None)` for `*`, `Err` when a value is not a list of
/// entity tags (empty values are skipped).
fn tags<'a>(headers: &'a HeaderMap, name: &header::HeaderName) -> Result<Option<Vec<Tag<'a>>>, ()> {
    let mut tags = Vec::new();
    for value in headers.get_all(name) {
        let text = value.to_str().map_err(|_| ())?.trim();
        if text == "*" {
            return Ok(None);
        }
        if text.is_empty() {
            continue;
        }
        let mut rest = text;
        let before = tags.len();
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            if rest.is_empty() {
                break;
            }
            let weak = rest.starts_with("W/");
            if weak {
                rest = &rest[2..];
            }
            let quoted = rest.strip_prefix('"').ok_or(())?;
            let end = quoted.find('"').ok_or(())?;
            tags.push(Tag {
                weak,
                opaque: &quoted[..end],
            });
            rest = &quoted[end + 1..];
            if !(rest.is_empty() || rest.starts_with([' ', '\t', ','])) {
                return Err(());
            }
        }
        // A value with no entity tag at all (empty, or only commas) is not a list of them.
        if tags.len() == before {
            return Err(());
        }
    }
    Ok(Some(tags))
}

/// The opaque text of our `ETag` for `updated_at`.
fn opaque(updated_at: Timestamp) -> String {
    updated_at.as_micros().to_string()
}

/// The `If-Match` of a write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IfMatch {
    /// `*`: the record must exist.
    Any,
    /// The record must be at one of these versions (strong comparison: a weak tag never
    /// matches).
    Versions(Vec<String>),
}

impl IfMatch {
    /// The request's `If-Match`, if it has one; 400 when it is not `*` or a list of entity tags.
    pub(crate) fn of(headers: &HeaderMap) -> Result<Option<Self>, ApiError> {
        Ok(
            condition(headers, &header::IF_MATCH, "If-Match")?.map(|tags| match tags {
                None => IfMatch::Any,
                Some(tags) => IfMatch::Versions(
                    tags.into_iter()
                        .filter(|tag| !tag.weak)
                        .map(|tag| tag.opaque.to_owned())
                        .collect(),
                ),
            }),
        )
    }

    /// `Ok` when a record at `updated_at` meets the condition, else
    /// [`StorageError::PreconditionFailed`].
    pub(crate) fn check(&self, updated_at: Timestamp) -> Result<(), StorageError> {
        match self {
            IfMatch::Any => Ok(()),
            IfMatch::Versions(versions) if versions.contains(&opaque(updated_at)) => Ok(()),
            IfMatch::Versions(_) => Err(StorageError::PreconditionFailed),
        }
    }

    /// A condition on a delete: the stored record's version (`updated_at` of it) must match.
    pub(crate) fn delete_check<T: 'static>(
        condition: Option<Self>,
        updated_at: fn(&T) -> Timestamp,
    ) -> Option<DeleteCheck<T>> {
        condition.map(|condition| {
            Box::new(move |stored: &T| condition.check(updated_at(stored))) as DeleteCheck<T>
        })
    }
}

/// The `If-None-Match` of a `GET`: `*`, or the entity tags of the client's copies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IfNoneMatch {
    /// `*`: any current version.
    Any,
    /// These versions (weak comparison: `W/"…"` names the same version as `"…"`).
    Versions(Vec<String>),
}

impl IfNoneMatch {
    /// The request's `If-None-Match`, if it has one; 400 when it is not `*` or a list of
    /// entity tags.
    pub(crate) fn of(headers: &HeaderMap) -> Result<Option<Self>, ApiError> {
        Ok(
            condition(headers, &header::IF_NONE_MATCH, "If-None-Match")?.map(|tags| match tags {
                None => IfNoneMatch::Any,
                Some(tags) => IfNoneMatch::Versions(
                    tags.into_iter().map(|tag| tag.opaque.to_owned()).collect(),
                ),
            }),
        )
    }

    /// Whether the record whose `ETag` is `etag` is one the client has: then 304.
    pub(crate) fn matches(&self, etag: &HeaderValue) -> bool {
        let current = etag
            .to_str()
            .ok()
            .and_then(|text| text.strip_prefix('"'))
            .and_then(|text| text.strip_suffix('"'));
        match (self, current) {
            (IfNoneMatch::Any, _) => true,
            (IfNoneMatch::Versions(versions), Some(current)) => {
                versions.iter().any(|version| version == current)
            }
            (IfNoneMatch::Versions(_), None) => false,
        }
    }
}

/// `response` with the `ETag` of a record at `updated_at`.
pub(crate) fn tagged(
    mut response: Response<ResponseBody>,
    updated_at: Timestamp,
) -> Response<ResponseBody> {
    response
        .headers_mut()
        .insert(header::ETAG, etag(updated_at));
    response
}

/// The 304 answer: no body, the `ETag` again.
pub(crate) fn not_modified_response(etag: HeaderValue) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::default());
    *response.status_mut() = StatusCode::NOT_MODIFIED;
    response.headers_mut().insert(header::ETAG, etag);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: header::HeaderName, values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn if_match_takes_star_and_lists_of_strong_tags() {
        let at = Timestamp::from_micros(1_795_000_000_000_001);
        let other = Timestamp::from_micros(7);
        assert_eq!(IfMatch::of(&HeaderMap::new()).unwrap(), None);
        let any = IfMatch::of(&headers(header::IF_MATCH, &["*"]))
            .unwrap()
            .unwrap();
        assert!(any.check(other).is_ok());
        for values in [
            &["\"1795000000000001\""][..],
            &["\"7\", \"1795000000000001\""],
            &["\"7\"", "\"1795000000000001\""],
            &[" \"x,y\" ,\"1795000000000001\""],
        ] {
            let condition = IfMatch::of(&headers(header::IF_MATCH, values))
                .unwrap()
                .unwrap();
            assert!(condition.check(at).is_ok(), "{values:?}");
            assert!(matches!(
                IfMatch::of(&headers(header::IF_MATCH, &["\"8\""]))
                    .unwrap()
                    .unwrap()
                    .check(at),
                Err(StorageError::PreconditionFailed)
            ));
        }
        // A weak tag never matches an If-Match.
        let weak = IfMatch::of(&headers(header::IF_MATCH, &["W/\"1795000000000001\""]))
            .unwrap()
            .unwrap();
        assert!(weak.check(at).is_err());
        for malformed in ["1795000000000001", "\"unterminated", "\"a\"b", "W/x", " , "] {
            assert!(
                matches!(
                    IfMatch::of(&headers(header::IF_MATCH, &[malformed])),
                    Err(ApiError::BadRequest(_))
                ),
                "{malformed}"
            );
        }
    }

    #[test]
    fn an_empty_header_counts_as_absent() {
        for name in [header::IF_MATCH, header::IF_NONE_MATCH] {
            let empty = headers(name, &["", "  "]);
            assert_eq!(IfMatch::of(&empty).unwrap(), None);
            assert_eq!(IfNoneMatch::of(&empty).unwrap(), None);
        }
    }

    #[test]
    fn if_none_match_compares_weakly() {
        let tag = etag(Timestamp::from_micros(42));
        assert_eq!(tag, "\"42\"");
        assert_eq!(IfNoneMatch::of(&HeaderMap::new()).unwrap(), None);
        let of = |values: &[&str]| {
            IfNoneMatch::of(&headers(header::IF_NONE_MATCH, values))
                .unwrap()
                .unwrap()
        };
        for yes in [&["\"42\""][..], &["W/\"42\""], &["\"1\", \"42\""], &["*"]] {
            assert!(of(yes).matches(&tag), "{yes:?}");
        }
        assert!(!of(&["\"43\""]).matches(&tag));
        for malformed in ["42", "\"4\"2", ","] {
            assert!(matches!(
                IfNoneMatch::of(&headers(header::IF_NONE_MATCH, &[malformed])),
                Err(ApiError::BadRequest(_))
            ));
        }
    }
}
