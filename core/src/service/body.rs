//! Reading a request body as one JSON object, with the 400/413/415 answers of the README (*Endpoints*).

use std::time::Duration;

use bytes::{Buf as _, Bytes};
use http::{HeaderMap, header};
use http_body::Body;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Map, Value};

use super::error::ApiError;

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

/// How much of a request body is read, and for how long: the service's body limit (413 beyond)
/// and body timeout (408 beyond).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    /// The most bytes read.
    pub(crate) limit: usize,
    /// How long the body may take to arrive once the head has.
    pub(crate) timeout: Duration,
}

/// Whether a content type is JSON (`application/json`, `application/*+json`, any parameters).
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Checks the headers before anything is read: a content type other than JSON is 415, a
/// declared length over `limit` is 413. A missing content type is taken as JSON.
pub(crate) fn check_headers(headers: &HeaderMap, limit: usize) -> Result<(), ApiError> {
    if let Some(value) = headers.get(header::CONTENT_TYPE)
        && !value.to_str().is_ok_and(is_json)
    {
        return Err(ApiError::UnsupportedMediaType);
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    Ok(())
}

/// Reads a request body: 415/413 from the headers before anything is read
/// ([`check_headers`]), then at most `limit` bytes (413 beyond) within `timeout` (408
/// otherwise).
pub(crate) async fn read(
    headers: &HeaderMap,
    body: RequestBody,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    check_headers(headers, limit)?;
    let collected = tokio::time::timeout(timeout, Limited::new(body, limit).collect())
        .await
        .map_err(|_| ApiError::RequestTimeout { timeout })?;
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(ApiError::PayloadTooLarge { limit }),
        Err(_) => Err(ApiError::BadRequest(
            "the request body could not be read".into(),
        )),
    }
}

/// Reads an optional JSON object body (a run's): an empty body is an empty object, whatever
/// its content type; any other body is read as [`read`] and [`json_object`] read it.
pub(crate) async fn read_optional_object(
    headers: &HeaderMap,
    body: RequestBody,
    limit: usize,
    timeout: Duration,
) -> Result<Map<String, Value>, ApiError> {
    let mut checked = headers.clone();
    checked.remove(header::CONTENT_TYPE);
    let bytes = read(&checked, body, limit, timeout).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    check_headers(headers, limit)?;
    json_object(&bytes)
}

/// Wipes a body's bytes once they are parsed, when this is their only owner (a body that came in
/// several chunks was copied into a buffer of its own): its secrets now live only in the
/// parsed request, in buffers wiped on drop ([`crate::validate::DatabaseBody`]).
pub(crate) fn wipe(bytes: Bytes) {
    if let Ok(mut owned) = bytes.try_into_mut() {
        zeroize::Zeroize::zeroize(&mut owned[..]);
    }
}

/// A body's bytes as one JSON object (400 otherwise).
pub(crate) fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest(
            "request body must be a JSON object".into(),
        ));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ApiError::BadRequest(
            "request body must be a JSON object".into(),
        )),
        Err(error) => Err(ApiError::BadRequest(format!("malformed JSON: {error}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/merge-patch+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/x-www-form-urlencoded"));
    }
}
