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
    // Most answers are a few hundred bytes to a few KiB: one allocation instead of several
    // doublings.
    let mut bytes = Vec::with_capacity(1024);
    match serde_json::to_writer(&mut bytes, body) {
        Ok(()) => {
            let mut response = Response::new(Full::new(Bytes::from(bytes)));
            *response.status_mut() = status;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => {
            tracing::error!(%error, "response did not serialize");
            let mut response = Response::new(Full::new(Bytes::from_static(
                br#"{"errors":{"detail":"Internal Server Error"}}"#,
            )));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
    }
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
