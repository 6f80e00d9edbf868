//! How the reference server delivers the outbox (docs/workflows.md, "Workflows and notifications"): an
//! HTTPS POST to the workflow endpoint, signed, and Slack's `chat.postMessage` with the bot
//! token. The worker that claims, retries and records is core's
//! ([`dbconsole_core::outbox::Worker`]); this is its [`Transport`].
//!
//! Nothing secret leaves here in a message: an attempt's error names the status or the kind of
//! failure, never a URL (a webhook URL may carry a token), a header or the token.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use dbconsole_core::Secret;
use dbconsole_core::model::{Delivery, Target, TargetKind};
use dbconsole_core::outbox::sign::{IDEMPOTENCY_HEADER, SIGNATURE_HEADER, header};
use dbconsole_core::outbox::{SendFailure, Transport};
use http::{HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

/// The largest answer read from a receiver (Slack's answer says whether it took the message).
const ANSWER_LIMIT: usize = 64 * 1024;

/// What a path segment escapes: a workflow id becomes one segment of the workflow URL, never a
/// path, query or fragment of its own.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']')
    .add(b'&')
    .add(b'=')
    .add(b'+')
    .add(b';')
    .add(b':')
    .add(b'@')
    .add(b'$')
    .add(b',');

/// The placeholder of the workflow URL.
pub const WORKFLOW_PLACEHOLDER: &str = "{workflow_id}";

/// Where and how deliveries go.
pub struct DeliveryTargets {
    /// The workflow endpoint, with [`WORKFLOW_PLACEHOLDER`] where the workflow's id goes.
    pub workflow_url: Option<String>,
    /// The shared secret the workflow requests are signed with.
    pub workflow_secret: Option<Secret>,
    /// The Slack bot token (`xoxb-…`).
    pub slack_token: Option<Secret>,
    /// The Slack Web API's base URL (`https://slack.com/api`).
    pub slack_api_url: String,
}

impl fmt::Debug for DeliveryTargets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeliveryTargets")
            .field("workflow_url", &self.workflow_url.as_ref().map(|_| "…"))
            .field("workflow_secret", &self.workflow_secret)
            .field("slack_token", &self.slack_token)
            .field("slack_api_url", &self.slack_api_url)
            .finish()
    }
}

/// Why a delivery setting was refused at start.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The URL does not parse, or is not HTTPS (plain HTTP is taken for loopback hosts only).
    #[error("{0}")]
    Url(String),
    /// The workflow secret is too short to sign with.
    #[error("the workflow secret must be at least 16 bytes (32 random bytes are recommended)")]
    ShortSecret,
}

/// Checks a delivery URL: HTTPS, or HTTP to a loopback host (a local receiver, a sidecar).
/// The workflow id goes in the path only, at most once: never in the host, query or fragment.
pub fn check_url(name: &str, url: &str) -> Result<(), TargetError> {
    const MARK: &str = "dbconsole-workflow-id-mark";
    let probe = url.replace(WORKFLOW_PLACEHOLDER, MARK);
    let uri: Uri = probe
        .parse()
        .map_err(|_| TargetError::Url(format!("--{name} is not a URL")))?;
    let placed = url.matches(WORKFLOW_PLACEHOLDER).count();
    if placed > 1 || (placed == 1 && !uri.path().contains(MARK)) || probe.contains('#') {
        return Err(TargetError::Url(format!(
            "--{name} may hold {WORKFLOW_PLACEHOLDER} once, in its path, and no fragment"
        )));
    }
    let host = uri
        .host()
        .ok_or_else(|| TargetError::Url(format!("--{name} names no host")))?;
    match uri.scheme_str() {
        Some("https") => Ok(()),
        Some("http") if matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1") => Ok(()),
        _ => Err(TargetError::Url(format!(
            "--{name} must be an https:// URL (http:// only to a loopback host)"
        ))),
    }
}

impl DeliveryTargets {
    /// Checks the settings.
    pub fn check(&self) -> Result<(), TargetError> {
        if let Some(url) = &self.workflow_url {
            check_url("workflow-url", url)?;
        }
        if self
            .workflow_secret
            .as_ref()
            .is_some_and(|secret| secret.expose().len() < 16)
        {
            return Err(TargetError::ShortSecret);
        }
        check_url("slack-api-url", &self.slack_api_url)
    }
}

/// Delivers over HTTP(S) with the system's root certificates.
pub struct HttpTransport {
    targets: DeliveryTargets,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("targets", &self.targets)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// A transport to `targets`.
    pub fn new(targets: DeliveryTargets) -> std::io::Result<Self> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Self { targets, client })
    }

    async fn post(
        &self,
        uri: Uri,
        headers: Vec<(&'static str, HeaderValue)>,
        body: &str,
    ) -> Result<(StatusCode, Option<Duration>, Bytes), SendFailure> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(
                http::header::CONTENT_TYPE,
                "application/json; charset=utf-8",
            )
            .header(
                http::header::USER_AGENT,
                concat!("dbconsole/", env!("CARGO_PKG_VERSION")),
            );
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
            .map_err(|_| SendFailure::new("the request could not be built"))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| SendFailure::new(format!("the request failed: {error}")))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let answer = Limited::new(response.into_body(), ANSWER_LIMIT)
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        Ok((status, retry_after, answer))
    }

    async fn send_workflow(
        &self,
        delivery: &Delivery,
        workflow_id: &str,
    ) -> Result<(), SendFailure> {
        let template = self.targets.workflow_url.as_deref().ok_or_else(|| {
            SendFailure::new("this node has no workflow endpoint (--workflow-url)")
        })?;
        // A dot segment would climb the endpoint's path (`%2E%2E` too, for many servers).
        if matches!(workflow_id, "." | "..") {
            return Err(SendFailure::new(
                "a workflow_id of . or .. is not a workflow",
            ));
        }
        let url = template.replace(
            WORKFLOW_PLACEHOLDER,
            &utf8_percent_encode(workflow_id, SEGMENT).to_string(),
        );
        let uri: Uri = url
            .parse()
            .map_err(|_| SendFailure::new("the workflow URL with this workflow_id is not a URL"))?;
        let mut headers = vec![(
            IDEMPOTENCY_HEADER,
            HeaderValue::from_str(delivery.id.as_str())
                .map_err(|_| SendFailure::new("the delivery id is not a header value"))?,
        )];
        if let Some(secret) = &self.targets.workflow_secret {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs() as i64);
            let signature = header(secret.expose(), now, delivery.body.as_bytes());
            headers.push((
                SIGNATURE_HEADER,
                HeaderValue::from_str(&signature)
                    .map_err(|_| SendFailure::new("the signature is not a header value"))?,
            ));
        }
        let (status, retry_after, _) = self.post(uri, headers, &delivery.body).await?;
        if status.is_success() {
            return Ok(());
        }
        Err(SendFailure {
            message: format!("the workflow endpoint answered {status}"),
            retry_after,
        })
    }

    async fn send_slack(&self, delivery: &Delivery) -> Result<(), SendFailure> {
        let token =
            self.targets.slack_token.as_ref().ok_or_else(|| {
                SendFailure::new("this node has no Slack bot token (--slack-token)")
            })?;
        let url = format!(
            "{}/chat.postMessage",
            self.targets.slack_api_url.trim_end_matches('/')
        );
        let uri: Uri = url
            .parse()
            .map_err(|_| SendFailure::new("the Slack API URL is not a URL"))?;
        let mut bearer = b"Bearer ".to_vec();
        bearer.extend_from_slice(token.expose());
        let mut authorization = HeaderValue::from_bytes(&bearer)
            .map_err(|_| SendFailure::new("the Slack bot token is not a header value"))?;
        authorization.set_sensitive(true);
        let headers = vec![("authorization", authorization)];
        let (status, retry_after, answer) = self.post(uri, headers, &delivery.body).await?;
        if !status.is_success() {
            return Err(SendFailure {
                message: format!("Slack answered {status}"),
                retry_after,
            });
        }
        // Slack answers 200 with `{"ok": false, "error": "channel_not_found"}` when it refuses.
        let answer: serde_json::Value = serde_json::from_slice(&answer)
            .map_err(|_| SendFailure::new("Slack's answer is not JSON"))?;
        if answer["ok"] == serde_json::Value::Bool(true) {
            return Ok(());
        }
        let error = answer["error"]
            .as_str()
            .filter(|error| {
                error.len() <= 64
                    && error
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            .unwrap_or("unknown_error");
        Err(SendFailure {
            message: format!("Slack refused the message: {error}"),
            retry_after,
        })
    }
}

#[async_trait]
impl Transport for HttpTransport {
    /// Workflow runs with a workflow endpoint, Slack messages with a token.
    fn kinds(&self) -> Vec<TargetKind> {
        let mut kinds = Vec::new();
        if self.targets.workflow_url.is_some() {
            kinds.push(TargetKind::Workflow);
        }
        if self.targets.slack_token.is_some() {
            kinds.push(TargetKind::Slack);
        }
        kinds
    }

    async fn send(&self, delivery: &Delivery) -> Result<(), SendFailure> {
        match &delivery.target {
            Target::Workflow { workflow_id } => self.send_workflow(delivery, workflow_id).await,
            Target::Slack { .. } => self.send_slack(delivery).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_or_loopback_http() {
        for good in [
            "https://flows.example.com/run/{workflow_id}",
            "http://127.0.0.1:9000/run/{workflow_id}",
            "http://localhost/hook",
            "https://slack.com/api",
        ] {
            assert!(check_url("workflow-url", good).is_ok(), "{good}");
        }
        for bad in [
            "http://flows.example.com/run/{workflow_id}",
            "ftp://127.0.0.1/x",
            "not a url",
            "/relative/{workflow_id}",
            "https://{workflow_id}.example.com/run",
            "https://flows.example.com/run?workflow={workflow_id}",
            "https://flows.example.com/run/{workflow_id}/{workflow_id}",
            "https://flows.example.com/run/{workflow_id}#x",
        ] {
            assert!(check_url("workflow-url", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_workflow_id_stays_one_path_segment() {
        let escaped = utf8_percent_encode("../admin?x=1#y/z", SEGMENT).to_string();
        assert_eq!(escaped, "..%2Fadmin%3Fx%3D1%23y%2Fz");
        let url =
            "https://flows.example.com/run/{workflow_id}".replace(WORKFLOW_PLACEHOLDER, &escaped);
        let uri: Uri = url.parse().unwrap();
        assert_eq!(uri.path(), "/run/..%2Fadmin%3Fx%3D1%23y%2Fz");
        assert_eq!(uri.query(), None);
    }

    #[test]
    fn debug_hides_the_secrets_and_the_url() {
        let targets = DeliveryTargets {
            workflow_url: Some("https://hooks.example.com/T0KEN/{workflow_id}".to_owned()),
            workflow_secret: Some(Secret::from("whsec-0123456789abcdef")),
            slack_token: Some(Secret::from("xoxb-secret-token")),
            slack_api_url: "https://slack.com/api".to_owned(),
        };
        let shown = format!("{targets:?}");
        for secret in ["T0KEN", "whsec-0123456789abcdef", "xoxb-secret-token"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
