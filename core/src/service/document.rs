//! `GET /openapi.json`: the OpenAPI document of the route table, rendered at its first request
//! and kept; no credential needed.

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use super::call::{Answer, Call};
use super::response::json_bytes_response;

/// The document's state: where the service is mounted, what renders the document, and the
/// document once rendered.
#[derive(Debug)]
pub(crate) struct Document {
    /// The base path the service is mounted at.
    base_path: String,
    /// Renders the document for a base path (the route table's).
    render: fn(&str) -> Value,
    /// The document, once rendered.
    body: OnceLock<Bytes>,
}

impl Document {
    /// The document `render` makes for a service mounted at `base_path`.
    pub(crate) fn new(base_path: String, render: fn(&str) -> Value) -> Self {
        Self {
            base_path,
            render,
            body: OnceLock::new(),
        }
    }

    /// `GET /openapi.json`.
    pub(crate) async fn openapi_document(&self, _call: Call<'_>) -> Answer {
        let body = self.body.get_or_init(|| {
            let document = (self.render)(&self.base_path);
            Bytes::from(serde_json::to_vec(&document).unwrap_or_default())
        });
        Ok(json_bytes_response(http::StatusCode::OK, body.clone()))
    }
}
