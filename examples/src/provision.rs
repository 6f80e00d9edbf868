//! A pretend program that uses dbconsole: a provisioning step that registers the databases it
//! manages through the HTTP API, the way an infrastructure tool would.
//!
//! It talks to the API through any `tower::Service<http::Request<Full<Bytes>>>`. In production
//! that is an HTTP client (for example `hyper_util::client::legacy::Client`, which is such a
//! service) pointed at a dbconsole server; in a test it is the [`ConsoleService`] itself over
//! the in-memory store, so the test runs the real API with no server, no socket and no
//! database. `tests/embedded.rs` does exactly that.
//!
//! [`ConsoleService`]: dbconsole_core::ConsoleService

use std::fmt;

use bytes::Bytes;
use dbconsole_core::Secret;
use http::{Method, Request, Response, StatusCode, header};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower::{Service, ServiceExt};

/// The error type a transport may fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A database the program manages, as it describes it.
#[derive(Clone, Debug)]
pub struct DatabaseSpec {
    /// The program's own identifier for the database (dbconsole's `api_id`).
    pub api_id: String,
    /// `postgres`, `mysql`, `clickhouse`, `sqlserver` or `oracle`.
    pub adapter: String,
    /// Host of the database server.
    pub hostname: String,
    /// Port, or the adapter's default.
    pub port: Option<u16>,
    /// Database name.
    pub database: String,
    /// Username of the console's credential.
    pub username: String,
    /// Its password; never printed (`Secret`'s `Debug` is redacted).
    pub password: Secret,
    /// Reviews a query needs before it runs.
    pub reviews_required: u32,
}

/// What the console answered for a provisioned database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provisioned {
    /// dbconsole's id of the database.
    pub id: String,
    /// The program's identifier, echoed back.
    pub api_id: String,
    /// The id of the database's one credential.
    pub credential_id: String,
}

/// Why provisioning failed.
#[derive(Debug)]
pub enum ProvisionError {
    /// The console did not accept the API key (401) or its scope (403).
    Unauthorized(StatusCode),
    /// The console rejected the description (422); the field-keyed errors it gave.
    Invalid(Value),
    /// Any other answer.
    Unexpected {
        /// Status the console answered.
        status: StatusCode,
        /// Its body, as text.
        body: String,
    },
    /// The request did not get an answer.
    Transport(BoxError),
}

impl fmt::Display for ProvisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unauthorized(status) => write!(f, "the console refused the API key ({status})"),
            Self::Invalid(errors) => write!(f, "the console rejected the database: {errors}"),
            Self::Unexpected { status, body } => write!(f, "unexpected answer {status}: {body}"),
            Self::Transport(error) => write!(f, "transport failure: {error}"),
        }
    }
}

impl std::error::Error for ProvisionError {}

/// Registers databases with a dbconsole API reached through `S`.
#[derive(Clone, Debug)]
pub struct Provisioner<S> {
    service: S,
    api_key: Secret,
}

impl<S, B> Provisioner<S>
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
    S::Error: Into<BoxError>,
    B: Body,
    B::Error: Into<BoxError>,
{
    /// A provisioner that calls `service` with this API key.
    pub fn new(service: S, api_key: Secret) -> Self {
        Self { service, api_key }
    }

    /// Makes the console hold exactly this database: creates it the first time, updates it
    /// afterwards (`PUT /api/v1/console/databases/setup`). Safe to run on every deploy.
    pub async fn ensure(&self, spec: &DatabaseSpec) -> Result<Provisioned, ProvisionError> {
        let body = json!({
            "id": spec.api_id,
            "adapter": spec.adapter,
            "hostname": spec.hostname,
            "port": spec.port,
            "database": spec.database,
            "username": spec.username,
            "password": String::from_utf8_lossy(spec.password.expose()),
            "reviews_required": spec.reviews_required,
        });
        let (status, body) = self
            .send(Method::PUT, "/api/v1/console/databases/setup", Some(body))
            .await?;
        match status {
            StatusCode::OK => parse_provisioned(&body),
            StatusCode::UNPROCESSABLE_ENTITY => {
                let errors = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|mut v| v.get_mut("errors").map(Value::take))
                    .unwrap_or(Value::Null);
                Err(ProvisionError::Invalid(errors))
            }
            other => Err(unexpected(other, &body)),
        }
    }

    /// Removes the database the program registered under `api_id`
    /// (`DELETE /api/v1/console/databases/remove/{api_id}`). `Ok(false)` when there was none,
    /// so running it twice is fine.
    pub async fn decommission(&self, api_id: &str) -> Result<bool, ProvisionError> {
        let path = format!(
            "/api/v1/console/databases/remove/{}",
            encode_segment(api_id)
        );
        let (status, body) = self.send(Method::DELETE, &path, None).await?;
        match status {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            other => Err(unexpected(other, &body)),
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Bytes), ProvisionError> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("x-api-key", self.api_key.expose());
        let body = match body {
            Some(value) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Full::new(Bytes::from(value.to_string()))
            }
            None => Full::new(Bytes::new()),
        };
        let request = request
            .body(body)
            .map_err(|error| ProvisionError::Transport(error.into()))?;
        let response = self
            .service
            .clone()
            .oneshot(request)
            .await
            .map_err(|error| ProvisionError::Transport(error.into()))?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(ProvisionError::Unauthorized(status));
        }
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|error| ProvisionError::Transport(error.into()))?
            .to_bytes();
        Ok((status, bytes))
    }
}

fn parse_provisioned(body: &[u8]) -> Result<Provisioned, ProvisionError> {
    let malformed = || ProvisionError::Unexpected {
        status: StatusCode::OK,
        body: String::from_utf8_lossy(body).into_owned(),
    };
    let value: Value = serde_json::from_slice(body).map_err(|_| malformed())?;
    let text = |v: &Value| v.as_str().map(str::to_owned);
    Ok(Provisioned {
        id: text(&value["id"]).ok_or_else(malformed)?,
        api_id: text(&value["api_id"]).ok_or_else(malformed)?,
        credential_id: text(&value["credentials"][0]["id"]).ok_or_else(malformed)?,
    })
}

fn unexpected(status: StatusCode, body: &[u8]) -> ProvisionError {
    ProvisionError::Unexpected {
        status,
        body: String::from_utf8_lossy(body).into_owned(),
    }
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved characters).
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(encode_segment("orders-db_1.x~"), "orders-db_1.x~");
        assert_eq!(encode_segment("a b/c"), "a%20b%2Fc");
        assert_eq!(encode_segment("é"), "%C3%A9");
    }
}
