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
    /// What was already received, then the rest.
    Stream(
        std::collections::VecDeque<Result<Bytes, BodyError>>,
        mpsc::Receiver<Result<Bytes, BodyError>>,
    ),
}

impl ResponseBody {
    /// A body of these bytes.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            kind: Kind::Full(Some(bytes.into())).normalized(),
        }
    }

    /// A body made of what is sent on `chunks`, ending when every sender is gone; or, when the
    /// result is already whole (every chunk sent, every sender gone, no error), those bytes:
    /// with a `content-length`, in the response's one write, instead of a chunk and an end
    /// written apart.
    pub(crate) fn collected(mut chunks: mpsc::Receiver<Result<Bytes, BodyError>>) -> Self {
        let mut received = std::collections::VecDeque::new();
        loop {
            match chunks.try_recv() {
                Ok(chunk) => received.push_back(chunk),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    let size: usize = received.iter().flatten().map(Bytes::len).sum();
                    // One chunk is answered as it is (a large row's memory charge goes with
                    // it); several are copied together only when small.
                    let whole = received.iter().all(Result::is_ok)
                        && (received.len() <= 1 || size <= COLLECTED_AT_MOST);
                    if whole {
                        let chunks: Vec<Bytes> = received.into_iter().flatten().collect();
                        let bytes = match chunks.len() {
                            1 => chunks.into_iter().next().unwrap_or_default(),
                            _ => Bytes::from(chunks.concat()),
                        };
                        return Self::full(bytes);
                    }
                    break;
                }
            }
        }
        Self {
            kind: Kind::Stream(received, chunks),
        }
    }
}

/// The most bytes of several chunks [`ResponseBody::collected`] copies into one.
const COLLECTED_AT_MOST: usize = 64 * 1024;

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
            Kind::Stream(received, chunks) => match received.pop_front() {
                Some(chunk) => Poll::Ready(Some(chunk.map(Frame::data))),
                None => chunks
                    .poll_recv(cx)
                    .map(|chunk| chunk.map(|chunk| chunk.map(Frame::data))),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Stream(..) => SizeHint::default(),
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
