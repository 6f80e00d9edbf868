//! # dbconsole-tests
//!
//! The HTTP-level conformance suite: every rule of the interface and the contract, checked by
//! driving [`ConsoleService`] through `tower::ServiceExt::oneshot`, exactly as a server would.
//! It is written once and run per storage backend:
//!
//! ```ignore
//! dbconsole_tests::http_suite!(|| std::sync::Arc::new(MyStorage::new()));
//! ```
//!
//! expands to one `#[tokio::test]` per case, each with a fresh store from the closure.
//!
//! Besides the suite, the crate holds what every test of the workspace shares: [`TestConsole`],
//! the one test console (built with [`TestConsole::builder`]), and [`eventually`], the one way
//! a test waits for something to happen.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dbconsole_core::{Checkers, ConsoleService, Sealer, Secret, StaticCredentials, Storage};
use http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tower::ServiceExt;

pub mod access;
pub mod audit;
pub mod browser;
mod console;
pub mod dashboards;
pub mod databases;
pub mod idempotency;
pub mod me;
pub mod outbox;
pub mod people;
pub mod presentation;
pub mod protocol;
pub mod reviews;
pub mod row_actions;
pub mod saved_queries;
pub mod versions;

pub use console::{TestConsole, TestConsoleBuilder};

/// The API key the harness's service accepts.
pub const API_KEY: &str = "test-api-key-0123456789";
/// The access token the harness's service accepts.
pub const ACCESS_TOKEN: &str = "test-access-token-0123456789";

/// Path prefix of the database routes.
pub const DATABASES: &str = "/api/v1/console/databases";
/// Path prefix of the dashboard routes.
pub const DASHBOARDS: &str = "/v1/dashboards";

/// The static credentials the harness's services accept: [`API_KEY`] and [`ACCESS_TOKEN`].
pub fn test_credentials() -> StaticCredentials {
    StaticCredentials::new(
        Some(&Secret::from(API_KEY)),
        Some(&Secret::from(ACCESS_TOKEN)),
    )
}

/// A sealer with a new random key.
pub fn test_sealer() -> Sealer {
    Sealer::ephemeral().expect("the system random number generator")
}

/// A service over one store, and helpers to call it.
#[derive(Clone, Debug)]
pub struct Api {
    /// The service under test.
    pub service: ConsoleService,
}

/// What the service answered.
#[derive(Clone, Debug)]
pub struct TestResponse {
    /// Status code.
    pub status: StatusCode,
    /// Headers.
    pub headers: HeaderMap,
    /// Body bytes (those that arrived, when [`TestResponse::cut`] says the body was cut off).
    pub body: Bytes,
    /// The error that cut the body off (a streamed answer failed after its head was sent):
    /// only through [`Api::answer`], since [`Api::send`] demands a whole body.
    pub cut: Option<String>,
}

impl TestResponse {
    /// The body as JSON (panics with the body text when it is not JSON or was cut off).
    #[track_caller]
    pub fn json(&self) -> Value {
        if let Some(error) = &self.cut {
            panic!("{}: the body was cut off: {error}", self.status);
        }
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    /// The body as text (panics when it was cut off).
    #[track_caller]
    pub fn text(&self) -> String {
        if let Some(error) = &self.cut {
            panic!("{}: the body was cut off: {error}", self.status);
        }
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as text, and the error that cut it off, if one did.
    fn shown(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        match &self.cut {
            Some(error) => format!("{text} (cut off: {error})"),
            None => text.into_owned(),
        }
    }

    /// Asserts the status, showing the body when it differs; returns `self`.
    #[track_caller]
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.shown()
        );
        self
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl Api {
    /// A service over `storage` with the harness's credentials, a sealer with a random key and
    /// no connection checkers. (The stores never open secrets, so any key does.)
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        Self::with_checkers(storage, Checkers::none())
    }

    /// A service over `storage` with the harness's credentials, a sealer with a random key and
    /// these checkers.
    pub fn with_checkers(storage: Arc<dyn Storage>, checkers: Checkers) -> Self {
        Self::with_sealer(storage, test_sealer(), checkers)
    }

    /// A service over `storage` with the harness's credentials, this sealer and these
    /// checkers.
    pub fn with_sealer(storage: Arc<dyn Storage>, sealer: Sealer, checkers: Checkers) -> Self {
        let service = ConsoleService::builder(storage, Arc::new(test_credentials()), sealer)
            .checkers(checkers)
            .read_cache(READ_CACHE.load(std::sync::atomic::Ordering::Relaxed))
            .build();
        Self { service }
    }

    /// Sends a request as it is (panics when the body is cut off).
    pub async fn send(&self, request: Request<Full<Bytes>>) -> TestResponse {
        let response = self.answer(request).await;
        if let Some(error) = &response.cut {
            panic!("a whole response body: {error}");
        }
        response
    }

    /// Sends a request as it is; a body cut off by an error (a streamed result that failed
    /// after its first rows) is answered with [`TestResponse::cut`].
    pub async fn answer(&self, request: Request<Full<Bytes>>) -> TestResponse {
        let response = self
            .service
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let (parts, body) = response.into_parts();
        let (body, cut) = match body.collect().await {
            Ok(collected) => (collected.to_bytes(), None),
            Err(error) => (Bytes::new(), Some(error.to_string())),
        };
        TestResponse {
            status: parts.status,
            headers: parts.headers,
            body,
            cut,
        }
    }

    /// A request with an optional JSON body (and `content-type: application/json` with it).
    pub fn request(method: Method, path: &str, body: Option<&Value>) -> http::request::Builder {
        let builder = Request::builder().method(method).uri(path);
        match body {
            Some(_) => builder.header(header::CONTENT_TYPE, "application/json"),
            None => builder,
        }
    }

    fn body(body: Option<&Value>) -> Full<Bytes> {
        Full::new(body.map(|b| Bytes::from(b.to_string())).unwrap_or_default())
    }

    /// Calls a database route with the API key.
    pub async fn db(&self, method: Method, path: &str, body: Option<&Value>) -> TestResponse {
        let request = Self::request(method, path, body)
            .header("x-api-key", API_KEY)
            .body(Self::body(body))
            .expect("valid request");
        self.send(request).await
    }

    /// Calls a dashboard route with the access token.
    pub async fn dash(&self, method: Method, path: &str, body: Option<&Value>) -> TestResponse {
        let request = Self::request(method, path, body)
            .header(header::AUTHORIZATION, format!("Bearer {ACCESS_TOKEN}"))
            .body(Self::body(body))
            .expect("valid request");
        self.send(request).await
    }

    /// Calls any route with the credential it takes (an access token on `/v1/dashboards…`, the
    /// API key elsewhere) and these extra headers.
    pub async fn call_with(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> TestResponse {
        let mut request = Self::request(method, path, body);
        request = if path.starts_with(DASHBOARDS) {
            request.header(header::AUTHORIZATION, format!("Bearer {ACCESS_TOKEN}"))
        } else {
            request.header("x-api-key", API_KEY)
        };
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(Self::body(body)).expect("valid request"))
            .await
    }

    /// The `name` of every item a listing answers for `query`, all pages followed (pages of
    /// 2, so that paging is part of every check).
    pub async fn listed_names(&self, base: &str, query: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut after = String::new();
        loop {
            let path = format!("{base}?limit=2&after={after}&{query}");
            let page = self
                .call_with(Method::GET, &path, &[], None)
                .await
                .expect(200)
                .json();
            for item in page["data"].as_array().expect("data") {
                names.push(item["name"].as_str().expect("name").to_owned());
            }
            match page["next"].as_str() {
                Some(next) => after = next.to_owned(),
                None => return names,
            }
        }
    }

    /// Creates a database (expecting 200) and returns its JSON.
    pub async fn create_database(&self, body: &Value) -> Value {
        self.db(Method::POST, DATABASES, Some(body))
            .await
            .expect(200)
            .json()
    }

    /// Creates a dashboard (expecting 200) and returns its JSON.
    pub async fn create_dashboard(&self, body: &Value) -> Value {
        self.dash(Method::POST, DASHBOARDS, Some(body))
            .await
            .expect(200)
            .json()
    }
}

/// Polls `check` until it answers `Some`, and answers that; panics, saying `what` and how long
/// it waited, when `within` has passed without. Between polls it pauses a little (10 ms at
/// first, growing to 100 ms): the time a test waits is decided by what it waits for, never by a
/// fixed sleep.
///
/// ```ignore
/// let history = eventually(Duration::from_secs(5), "the run's history says it failed", || async {
///     let history = console.history(&alice(), &id).await;
///     (history["status"] == "failed").then_some(history)
/// })
/// .await;
/// ```
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(10);
    loop {
        if let Some(done) = check().await {
            return done;
        }
        let waited = started.elapsed();
        if waited >= within {
            panic!("{what}: not so after {waited:?} (waited at most {within:?})");
        }
        tokio::time::sleep(pause.min(within - waited)).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// A 401 body: `detail` is "Unauthorized", and `hint` says what the route takes.
#[track_caller]
pub fn assert_unauthorized_body(response: &TestResponse) {
    let body = response.json();
    let errors = body["errors"].as_object().expect("an errors object");
    assert_eq!(errors["detail"], "Unauthorized", "{body}");
    assert!(errors["hint"].is_string(), "{body}");
    assert_eq!(errors.len(), 2, "{body}");
}

/// Standard base64 with padding (the tests crate has no base64 dependency).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A minimal valid create-database body.
pub fn minimal_database() -> Value {
    serde_json::json!({
        "name": "Orders",
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "reader", "password": "pw-reader-1"}]
    })
}

/// A minimal valid create-dashboard body.
pub fn minimal_dashboard() -> Value {
    serde_json::json!({ "name": "Ops", "restricted_access": false })
}

/// The read cache of the services [`Api`] builds (none unless [`use_read_cache`] was called).
static READ_CACHE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// From now on, the services [`Api`] builds in this test binary keep a read cache (1 MiB), as
/// the server does on redb: the HTTP suite then proves that every answer after a write is the
/// written record. Call it from the store factory of an `http_suite!`.
pub fn use_read_cache() {
    READ_CACHE.store(1 << 20, std::sync::atomic::Ordering::Relaxed);
}

/// Expands to the whole HTTP suite: one `#[tokio::test]` per case, each over a fresh store made
/// by `$storage` (an expression that evaluates to `Arc<dyn Storage>`, called once per test).
#[macro_export]
macro_rules! http_suite {
    ($storage:expr) => {
        $crate::database_tests!($storage);
        $crate::dashboard_tests!($storage);
        $crate::protocol_tests!($storage);
        $crate::access_tests!($storage);
        $crate::version_tests!($storage);
        $crate::audit_tests!($storage);
        $crate::idempotency_tests!($storage);
        $crate::review_tests!($storage);
        $crate::outbox_tests!($storage);
        $crate::row_action_tests!($storage);
        $crate::me_tests!($storage);
        $crate::browser_tests!($storage);
        $crate::people_tests!($storage);
        $crate::saved_query_tests!($storage);
        $crate::presentation_tests!($storage);
    };
}

/// Defines one `#[tokio::test]` per listed case of a suite module.
#[macro_export]
#[doc(hidden)]
macro_rules! suite_cases {
    ($module:ident, $storage:expr, [$($case:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let storage: ::std::sync::Arc<dyn $crate::__Storage> = ($storage)();
                $crate::$module::$case(storage).await;
            }
        )*
    };
}

#[doc(hidden)]
pub use dbconsole_core::Storage as __Storage;
