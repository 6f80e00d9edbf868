//! [`ApiError`]: every answer that is not a success, and the single place where errors become
//! statuses and bodies (README, *Endpoints*: error bodies).

use http::{HeaderValue, Method, Response, StatusCode, header};
use serde_json::json;

use super::response::{ResponseBody, json_response};
use crate::storage::{DatabaseRef, StorageError};
use crate::validate::ValidationErrors;

/// An error answer of the API.
#[derive(Debug)]
#[non_exhaustive]
pub enum ApiError {
    /// 400: the body is not a JSON object.
    BadRequest(String),
    /// 401: missing or wrong caller credential. `bearer` adds `www-authenticate: Bearer`.
    Unauthorized {
        /// Whether the route takes a Bearer token.
        bearer: bool,
        /// What the route takes, and what was wrong with what came (`errors.hint`).
        hint: &'static str,
    },
    /// 403: a valid credential whose scope does not allow the operation.
    Forbidden,
    /// 403 with why.
    Denied(String),
    /// 409 with why.
    Conflict(String),
    /// 410 with why: a one-time link that ended or was used.
    Gone(String),
    /// 502: the database a run needs could not be reached.
    BadGateway(String),
    /// 504: a run ran past its timeout.
    GatewayTimeout(String),
    /// 503: a run found its credential's connections all busy.
    Busy(String),
    /// 501: no runner for the adapter is built in.
    NotImplemented(String),
    /// 404: no such record or route.
    NotFound,
    /// 405: known path, other method; the allowed methods go into `allow`.
    MethodNotAllowed(Vec<Method>),
    /// 408: the body did not arrive within the body timeout; the connection is closed.
    RequestTimeout {
        /// The timeout it went over.
        timeout: std::time::Duration,
    },
    /// 413: body over the limit (in bytes).
    PayloadTooLarge {
        /// The limit the body went over.
        limit: usize,
    },
    /// 415: a body that is not JSON.
    UnsupportedMediaType,
    /// 422: field-keyed validation errors.
    Invalid(ValidationErrors),
    /// 422: a delete refused because other databases inherit this one's data protection
    /// policies.
    Inherited(Vec<DatabaseRef>),
    /// 412: the `If-Match` of the request does not match the record's `ETag`; nothing changed.
    PreconditionFailed,
    /// 500: a backend failure (already logged; the body says nothing more).
    Internal,
    /// 503: the storage cannot be reached now (already logged); the caller may retry.
    Unavailable,
    /// 503: the storage has no room for the write (already logged); nothing was saved.
    StorageFull,
    /// 503: the connection to the storage was lost while the write was being committed, and its
    /// outcome could not be found out (already logged): it may have been saved.
    Indeterminate,
    /// 409: another request with the same `Idempotency-Key` is being written.
    AnswerExists,
    /// 429: too many failed sign-ins from this address; the seconds to wait go into
    /// `retry-after`.
    TooManyRequests(u64),
}

impl From<ValidationErrors> for ApiError {
    fn from(errors: ValidationErrors) -> Self {
        ApiError::Invalid(errors)
    }
}

impl From<StorageError> for ApiError {
    fn from(error: StorageError) -> Self {
        match error {
            StorageError::NotFound => ApiError::NotFound,
            StorageError::Invalid(errors) => ApiError::Invalid(errors),
            StorageError::Inherited(databases) => ApiError::Inherited(databases),
            StorageError::PreconditionFailed => ApiError::PreconditionFailed,
            StorageError::AnswerExists => ApiError::AnswerExists,
            StorageError::Conflict => {
                tracing::warn!("a write met other writes of the same record at every attempt");
                crate::metrics::record_storage_error("conflict");
                ApiError::Unavailable
            }
            StorageError::Unavailable(error) => {
                tracing::warn!(%error, "storage unavailable");
                crate::metrics::record_storage_error("unavailable");
                ApiError::Unavailable
            }
            StorageError::Indeterminate(error) => {
                tracing::error!(%error, "a write's outcome is unknown");
                crate::metrics::record_storage_error("indeterminate");
                ApiError::Indeterminate
            }
            StorageError::SealKeyChanged(current) => {
                tracing::error!(
                    key = current,
                    "the store seals under a key this node cannot use (docs/operations.md, \"Rotating the \
                     secret key\")"
                );
                crate::metrics::record_storage_error("seal_key");
                ApiError::Unavailable
            }
            StorageError::Full(error) => {
                tracing::error!(%error, "storage full");
                crate::metrics::record_storage_error("full");
                ApiError::StorageFull
            }
            other => {
                tracing::error!(error = %other, "storage failure");
                crate::metrics::record_storage_error("backend");
                ApiError::Internal
            }
        }
    }
}

/// The detail of [`ApiError::Indeterminate`].
pub(crate) const INDETERMINATE: &str = "the connection to the storage was lost while the change was \
     being committed, and whether it was saved could not be found out: it may have been saved. \
     Read it back, or send the same request again with the same Idempotency-Key, before \
     writing it again";

fn detail(text: &str) -> serde_json::Value {
    json!({ "errors": { "detail": text } })
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden | ApiError::Denied(_) => StatusCode::FORBIDDEN,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::GatewayTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Invalid(_) | ApiError::Inherited(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::AnswerExists => StatusCode::CONFLICT,
            ApiError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable | ApiError::StorageFull | ApiError::Indeterminate => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// The response: status, JSON body and the headers the error calls for.
    pub fn into_response(self) -> Response<ResponseBody> {
        let status = self.status();
        let body = self.body();
        let mut response = json_response(status, &body);
        let headers = response.headers_mut();
        match self {
            ApiError::Unauthorized { bearer: true, .. } => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::RequestTimeout { .. } => {
                // The rest of the body may still come: the connection cannot be reused.
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            ApiError::TooManyRequests(seconds) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            ApiError::MethodNotAllowed(methods) => {
                let allow: Vec<&str> = methods.iter().map(Method::as_str).collect();
                if let Ok(value) = HeaderValue::from_str(&allow.join(", ")) {
                    headers.insert(header::ALLOW, value);
                }
            }
            _ => {}
        }
        response
    }

    /// The JSON body of the error: `{"errors": {"detail": …}}`, or field-keyed for a 422.
    pub fn body(&self) -> serde_json::Value {
        match self {
            ApiError::BadRequest(text) => detail(text),
            ApiError::Unauthorized { hint, .. } => {
                json!({ "errors": { "detail": "Unauthorized", "hint": hint } })
            }
            ApiError::Forbidden => detail("Forbidden"),
            ApiError::Denied(text)
            | ApiError::Conflict(text)
            | ApiError::Gone(text)
            | ApiError::BadGateway(text)
            | ApiError::GatewayTimeout(text)
            | ApiError::Busy(text)
            | ApiError::NotImplemented(text) => detail(text),
            ApiError::NotFound => detail("Not Found"),
            ApiError::MethodNotAllowed(_) => detail("Method Not Allowed"),
            ApiError::RequestTimeout { timeout } => detail(&format!(
                "the request body did not arrive within {} s",
                timeout.as_secs_f64()
            )),
            ApiError::PayloadTooLarge { limit } => detail(&format!(
                "request body is larger than {}",
                human_size(*limit)
            )),
            ApiError::UnsupportedMediaType => {
                detail("request body must be JSON (content-type: application/json)")
            }
            ApiError::Invalid(errors) => json!({ "errors": errors }),
            ApiError::Inherited(databases) => {
                let names: Vec<String> = databases
                    .iter()
                    .map(|db| format!("{} ({})", db.name, db.id))
                    .collect();
                let inherited_by: Vec<_> = databases
                    .iter()
                    .map(|db| json!({ "id": db.id, "name": db.name }))
                    .collect();
                json!({ "errors": {
                    "detail": format!("data protection policies are inherited by: {}", names.join(", ")),
                    "inherited_by": inherited_by,
                }})
            }
            ApiError::PreconditionFailed => detail(
                "Precondition Failed: the record has changed since that version (If-Match does not match its ETag); nothing was changed",
            ),
            ApiError::Internal => detail("Internal Server Error"),
            ApiError::Unavailable => detail("storage temporarily unavailable, try again"),
            ApiError::StorageFull => detail(
                "the storage is full: nothing was saved; try again once space has been freed",
            ),
            ApiError::Indeterminate => detail(INDETERMINATE),
            ApiError::AnswerExists => detail(
                "Conflict: another request with this Idempotency-Key is being answered; send it \
                 again in a moment",
            ),
            ApiError::TooManyRequests(seconds) => detail(&format!(
                "too many failed sign-ins from this address: try again in {seconds} s"
            )),
        }
    }
}

/// A byte count as people write it: `1 MiB`, `64 KiB`, or `1000 bytes`.
fn human_size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_too_large_names_the_limit() {
        assert_eq!(human_size(1024 * 1024), "1 MiB");
        assert_eq!(human_size(64 * 1024), "64 KiB");
        assert_eq!(human_size(1000), "1000 bytes");
        let response = ApiError::PayloadTooLarge { limit: 2048 }.into_response();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
