//! The responses of the service: the body type, and the JSON and plain-text builders every
//! handler (and [`super::ApiError`]) answers with.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use serde::Serialize;
use tokio::sync::mpsc;

pub use crate::run::BodyError;

/// The body of every response of the service: whole bytes, or the rows of a query as they
/// arrive. Dropping a streamed body (the client went away) is what cancels its query.
#[derive(Debug)]
pub struct ResponseBody {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Result<Bytes, BodyError>>),
}

impl ResponseBody {
    /// A body of these bytes.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            kind: Kind::Full(Some(bytes.into())).normalized(),
        }
    }

    /// A body made of what is sent on `chunks`, ending when every sender is gone.
    pub(crate) fn stream(chunks: mpsc::Receiver<Result<Bytes, BodyError>>) -> Self {
        Self {
            kind: Kind::Stream(chunks),
        }
    }
}

impl Kind {
    fn normalized(self) -> Self {
        match self {
            Kind::Full(Some(bytes)) if bytes.is_empty() => Kind::Full(None),
            other => other,
        }
    }
}

impl From<Bytes> for ResponseBody {
    fn from(bytes: Bytes) -> Self {
        Self::full(bytes)
    }
}

impl Default for ResponseBody {
    fn default() -> Self {
        Self {
            kind: Kind::Full(None),
        }
    }
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match &mut self.get_mut().kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            Kind::Stream(chunks) => chunks
                .poll_recv(cx)
                .map(|chunk| chunk.map(|chunk| chunk.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}

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
    let mut response = Response::new(ResponseBody::full(json));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A `text/plain; charset=utf-8` response with this status.
pub(crate) fn text_response(status: StatusCode, text: String) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
