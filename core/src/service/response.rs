//! The responses of the service: the body type, and the JSON and plain-text builders every
//! handler (and [`super::ApiError`]) answers with.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::Full;
use serde::Serialize;

/// The body of every response of the service.
pub type ResponseBody = Full<Bytes>;

/// A JSON response with this status.
pub(crate) fn json_response(status: StatusCode, body: &impl Serialize) -> Response<ResponseBody> {
    match json_bytes(body) {
        Ok(bytes) => json_bytes_response(status, bytes),
        Err(error) => {
            tracing::error!(%error, "response did not serialize");
            json_bytes_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                Bytes::from_static(br#"{"errors":{"detail":"Internal Server Error"}}"#),
            )
        }
    }
}

/// `body` as JSON.
pub(crate) fn json_bytes(body: &impl Serialize) -> serde_json::Result<Bytes> {
    // Most answers are a few hundred bytes to a few KiB: one allocation instead of several
    // doublings.
    let mut bytes = Vec::with_capacity(1024);
    serde_json::to_writer(&mut bytes, body)?;
    Ok(Bytes::from(bytes))
}

/// A JSON response of these bytes, already JSON.
pub(crate) fn json_bytes_response(status: StatusCode, json: Bytes) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(json));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A `text/plain; charset=utf-8` response with this status.
pub(crate) fn text_response(status: StatusCode, text: String) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
