//! Cases of the HTTP suite: the protocol (README, *Endpoints* and *Decisions where the spec is
//! silent*): authentication and
//! scopes, the order of checks, request bodies, unknown routes and methods, statuses and the
//! shape of every error.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use dbconsole_core::auth::Caller;
use dbconsole_core::model::Actor;
use dbconsole_core::{Authenticator, ConsoleService, CredentialKind, Scope, Storage};
use http::{Method, Request, header};
use http_body_util::{BodyExt, BodyStream, Full, StreamBody};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{
    ACCESS_TOKEN, API_KEY, Api, DASHBOARDS, DATABASES, TestResponse, minimal_dashboard,
    minimal_database,
};

/// A key that the scoped authenticator accepts with [`Scope::Setup`], on every route family.
const SETUP_KEY: &str = "setup-scoped-key-0123456789";
/// A key for which the scoped authenticator fails.
const FAILING_KEY: &str = "key-whose-check-fails";
/// What the failing authenticator says; it must never reach a response.
const FAILURE_DETAIL: &str = "auth backend unreachable at 10.9.8.7";
/// 1 MiB, the body limit.
const LIMIT: usize = 1024 * 1024;

/// Full access for the harness's key and token, the setup scope for [`SETUP_KEY`], a failure
/// for [`FAILING_KEY`].
#[derive(Debug)]
struct ScopedAuth;

#[async_trait]
impl Authenticator for ScopedAuth {
    async fn authenticate(
        &self,
        kind: CredentialKind,
        presented: &str,
    ) -> Result<Option<Caller>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(match (kind, presented) {
            (_, SETUP_KEY) => Some(Caller {
                scope: Scope::Setup,
                actor: Actor::named("setup key"),
                principal: None,
            }),
            (_, FAILING_KEY) => return Err(FAILURE_DETAIL.into()),
            (CredentialKind::ApiKey, API_KEY) | (CredentialKind::AccessToken, ACCESS_TOKEN) => {
                Some(Caller::full("harness"))
            }
            _ => None,
        })
    }
}

fn scoped_api(storage: Arc<dyn Storage>) -> Api {
    Api {
        service: ConsoleService::builder(storage, Arc::new(ScopedAuth), crate::test_sealer())
            .build(),
    }
}

/// How a request authenticates itself.
#[derive(Clone, Copy, Debug)]
enum Auth<'a> {
    None,
    Key(&'a str),
    Bearer(&'a str),
    Authorization(&'a str),
}

/// Sends `method path` with this authentication, content type and raw body.
async fn raw(
    api: &Api,
    method: Method,
    path: &str,
    auth: Auth<'_>,
    content_type: Option<&str>,
    body: impl Into<Bytes>,
) -> TestResponse {
    let mut builder = Request::builder().method(method).uri(path);
    builder = match auth {
        Auth::None => builder,
        Auth::Key(key) => builder.header("x-api-key", key),
        Auth::Bearer(token) => builder.header(header::AUTHORIZATION, format!("Bearer {token}")),
        Auth::Authorization(value) => builder.header(header::AUTHORIZATION, value),
    };
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    let request = builder.body(Full::new(body.into())).expect("valid request");
    api.send(request).await
}

/// Sends a JSON body with this authentication.
async fn json_call(
    api: &Api,
    method: Method,
    path: &str,
    auth: Auth<'_>,
    body: Option<&Value>,
) -> TestResponse {
    let bytes = body.map(Value::to_string).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(api, method, path, auth, content_type, bytes).await
}

/// Sends a body as a stream of unknown length (no `content-length`, no exact size hint).
async fn streamed(
    api: &Api,
    method: Method,
    path: &str,
    auth: Auth<'_>,
    body: Bytes,
) -> TestResponse {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json");
    builder = match auth {
        Auth::Key(key) => builder.header("x-api-key", key),
        Auth::Bearer(token) => builder.header(header::AUTHORIZATION, format!("Bearer {token}")),
        _ => builder,
    };
    let body = StreamBody::new(BodyStream::new(Full::new(body)));
    let request = builder.body(body).expect("valid request");
    let response = api
        .service
        .clone()
        .oneshot(request)
        .await
        .unwrap_or_else(|never| match never {});
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .expect("a whole response body")
        .to_bytes();
    TestResponse {
        status: parts.status,
        headers: parts.headers,
        body,
        cut: None,
    }
}

/// A JSON object of more than `size` bytes: a dashboard/database body whose name is huge.
fn huge_body(size: usize) -> Bytes {
    let mut body = minimal_dashboard();
    body["name"] = json!("n".repeat(size));
    Bytes::from(body.to_string())
}

/// A valid create-dashboard body padded with whitespace to exactly `size` bytes.
fn padded_dashboard(size: usize) -> Bytes {
    let mut text = minimal_dashboard().to_string();
    assert!(text.len() < size);
    text.insert_str(1, &" ".repeat(size - text.len()));
    assert_eq!(text.len(), size);
    Bytes::from(text)
}

fn setup_body(api_id: &str) -> Value {
    json!({
        "id": api_id,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "username": "svc",
        "password": "pw-setup-1"
    })
}

#[track_caller]
fn assert_detail(response: &TestResponse, detail: &str) {
    assert_eq!(
        response.json(),
        json!({"errors": {"detail": detail}}),
        "status {}",
        response.status
    );
    assert_json(response);
}

#[track_caller]
fn assert_json(response: &TestResponse) {
    assert_eq!(
        response.header("content-type"),
        Some("application/json"),
        "status {}",
        response.status
    );
}

#[track_caller]
fn assert_unauthorized(response: TestResponse, bearer: bool) {
    let response = response.expect(401);
    crate::assert_unauthorized_body(&response);
    assert_json(&response);
    let expected = bearer.then_some("Bearer");
    assert_eq!(response.header("www-authenticate"), expected);
}

/// The `allow` header's methods, sorted.
fn allowed(response: &TestResponse) -> Vec<String> {
    let mut methods: Vec<String> = response
        .header("allow")
        .expect("405 carries allow")
        .split(',')
        .map(|m| m.trim().to_owned())
        .collect();
    methods.sort();
    methods
}

/// Records made with full access for the cases that need existing ids.
struct Fixture {
    database: Value,
    dashboard: Value,
}

impl Fixture {
    async fn new(api: &Api) -> Self {
        Self {
            database: api.create_database(&minimal_database()).await,
            dashboard: api.create_dashboard(&minimal_dashboard()).await,
        }
    }

    fn db_path(&self) -> String {
        format!("{DATABASES}/{}", self.database["id"].as_str().unwrap())
    }

    fn dash_path(&self) -> String {
        format!("{DASHBOARDS}/{}", self.dashboard["id"].as_str().unwrap())
    }

    /// Asserts that both records are still exactly as created.
    async fn assert_unchanged(&self, api: &Api) {
        let db = api.db(Method::GET, &self.db_path(), None).await.expect(200);
        assert_eq!(db.json(), self.database);
        let dash = api
            .dash(Method::GET, &self.dash_path(), None)
            .await
            .expect(200);
        assert_eq!(dash.json(), self.dashboard);
    }
}

/// No credential at all: 401 on every route family; dashboard routes add
/// `www-authenticate: Bearer`, database routes do not.
pub async fn protocol_missing_credentials_401(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let db_routes = [
        (Method::GET, DATABASES.to_owned()),
        (Method::POST, DATABASES.to_owned()),
        (Method::GET, fx.db_path()),
        (Method::PATCH, fx.db_path()),
        (Method::DELETE, fx.db_path()),
        (Method::PUT, format!("{DATABASES}/setup")),
        (Method::DELETE, format!("{DATABASES}/remove/x")),
        (
            Method::GET,
            format!("{}/check-connection/reader", fx.db_path()),
        ),
        (Method::POST, format!("{DATABASES}/check-connection")),
        (Method::POST, format!("{}/check-connection", fx.db_path())),
        (Method::GET, "/api/v1/console/audit".to_owned()),
        (Method::GET, "/api/v1/querydesk/databases".to_owned()),
    ];
    for (method, path) in db_routes {
        let response = raw(&api, method, &path, Auth::None, None, "").await;
        assert_unauthorized(response, false);
    }
    let dash_routes = [
        (Method::GET, DASHBOARDS.to_owned()),
        (Method::POST, DASHBOARDS.to_owned()),
        (Method::GET, fx.dash_path()),
        (Method::PUT, fx.dash_path()),
        (Method::DELETE, fx.dash_path()),
        (Method::GET, "/api/v1/dashboards".to_owned()),
        (Method::PATCH, format!("/api{}", fx.dash_path())),
    ];
    for (method, path) in dash_routes {
        let response = raw(&api, method, &path, Auth::None, None, "").await;
        assert_unauthorized(response, true);
    }
    fx.assert_unchanged(&api).await;
}

/// A wrong API key, or a wrong access token: 401.
pub async fn protocol_wrong_credentials_401(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for key in [
        "wrong",
        "test-api-key-012345678",
        "test-api-key-01234567890",
        "TEST-API-KEY-0123456789",
    ] {
        let response = raw(&api, Method::GET, &fx.db_path(), Auth::Key(key), None, "").await;
        assert_unauthorized(response, false);
    }
    for token in [
        "wrong",
        "test-access-token-012345678",
        "TEST-ACCESS-TOKEN-0123456789",
    ] {
        let response = raw(
            &api,
            Method::GET,
            &fx.dash_path(),
            Auth::Bearer(token),
            None,
            "",
        )
        .await;
        assert_unauthorized(response, true);
    }
    for value in [
        format!("Basic {ACCESS_TOKEN}"),
        ACCESS_TOKEN.to_owned(),
        format!("Token {ACCESS_TOKEN}"),
    ] {
        let response = raw(
            &api,
            Method::GET,
            &fx.dash_path(),
            Auth::Authorization(&value),
            None,
            "",
        )
        .await;
        assert_unauthorized(response, true);
    }
}

/// The API key does not open `/v1/dashboards`, even the correct one.
pub async fn protocol_api_key_on_v1_dashboards_401(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for key in [API_KEY, ACCESS_TOKEN] {
        for (method, path) in [
            (Method::GET, DASHBOARDS.to_owned()),
            (Method::GET, fx.dash_path()),
            (Method::DELETE, fx.dash_path()),
        ] {
            let response = raw(&api, method, &path, Auth::Key(key), None, "").await;
            assert_unauthorized(response, true);
        }
        let body = minimal_dashboard();
        let response = json_call(&api, Method::POST, DASHBOARDS, Auth::Key(key), Some(&body)).await;
        assert_unauthorized(response, true);
    }
    fx.assert_unchanged(&api).await;
    let listed = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(listed.json()["data"].as_array().unwrap().len(), 1);
}

/// A 401 says what the route takes and what was wrong with what came (`errors.hint`), without
/// telling whether any secret is close to a valid one.
pub async fn protocol_401_says_what_the_route_takes(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let compat = "/api/v1/dashboards";
    let cases = [
        (
            DATABASES,
            Auth::None,
            "this route takes an API key in the x-api-key header",
        ),
        (
            DATABASES,
            Auth::Bearer(ACCESS_TOKEN),
            "this route takes an API key in the x-api-key header, not an access token",
        ),
        (
            DATABASES,
            Auth::Key("wrong"),
            "the API key (x-api-key) is not valid",
        ),
        (
            DASHBOARDS,
            Auth::None,
            "this route takes an access token (Authorization: Bearer <token>)",
        ),
        (
            DASHBOARDS,
            Auth::Key(API_KEY),
            "this route takes an access token (Authorization: Bearer <token>), not an API key",
        ),
        (
            DASHBOARDS,
            Auth::Bearer("wrong"),
            "the access token (Authorization: Bearer) is not valid",
        ),
        (
            compat,
            Auth::None,
            "this route takes an API key in the x-api-key header or an access token (Authorization: Bearer <token>)",
        ),
        (compat, Auth::Key("wrong"), "the credential is not valid"),
    ];
    for (path, auth, hint) in cases {
        let response = raw(&api, Method::GET, path, auth, None, "")
            .await
            .expect(401);
        assert_eq!(
            response.json(),
            json!({"errors": {"detail": "Unauthorized", "hint": hint}}),
            "{path}"
        );
    }
}

/// `GET /openapi.json` answers the OpenAPI 3.1 document without a credential; other methods
/// are 405.
pub async fn protocol_openapi_document_needs_no_credential(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let response = raw(&api, Method::GET, "/openapi.json", Auth::None, None, "")
        .await
        .expect(200);
    assert_json(&response);
    let document = response.json();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(document["paths"][DATABASES]["post"]["requestBody"].is_object());
    assert_eq!(
        document["components"]["securitySchemes"]["apiKey"]["name"],
        "x-api-key"
    );
    let response = raw(&api, Method::POST, "/openapi.json", Auth::None, None, "")
        .await
        .expect(405);
    assert_eq!(response.header("allow"), Some("GET"));
}

/// A Bearer token does not open the database routes, even when it carries the API key.
pub async fn protocol_bearer_on_database_routes_401(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for token in [ACCESS_TOKEN, API_KEY] {
        for (method, path) in [
            (Method::GET, DATABASES.to_owned()),
            (Method::GET, fx.db_path()),
            (Method::DELETE, fx.db_path()),
            (
                Method::GET,
                format!("{}/check-connection/reader", fx.db_path()),
            ),
        ] {
            let response = raw(&api, method, &path, Auth::Bearer(token), None, "").await;
            assert_unauthorized(response, false);
        }
        let body = setup_body("ext-1");
        let path = format!("{DATABASES}/setup");
        let response = json_call(&api, Method::PUT, &path, Auth::Bearer(token), Some(&body)).await;
        assert_unauthorized(response, false);
    }
    fx.assert_unchanged(&api).await;
}

/// `Bearer` with an empty token, and an empty API key, are no credential: 401.
pub async fn protocol_empty_credentials_401(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for value in ["Bearer", "Bearer ", "Bearer    ", ""] {
        let response = raw(
            &api,
            Method::GET,
            &fx.dash_path(),
            Auth::Authorization(value),
            None,
            "",
        )
        .await;
        assert_unauthorized(response, true);
        let compat = format!("/api{}", fx.dash_path());
        let response = raw(
            &api,
            Method::GET,
            &compat,
            Auth::Authorization(value),
            None,
            "",
        )
        .await;
        assert_unauthorized(response, true);
    }
    for key in ["", "   "] {
        let response = raw(&api, Method::GET, &fx.db_path(), Auth::Key(key), None, "").await;
        assert_unauthorized(response, false);
    }
}

/// Unauthenticated calls about ids that do not exist answer 401, never 404, so a caller
/// without credentials learns nothing about ids.
pub async fn protocol_auth_before_existence(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let missing_db = format!("{DATABASES}/db_01aaaaaaaaaaaaaaaaaaaaaaaa");
    let missing_dash = format!("{DASHBOARDS}/dash_01aaaaaaaaaaaaaaaaaaaaaaaa");
    for auth in [Auth::None, Auth::Key("wrong")] {
        for method in [Method::GET, Method::DELETE] {
            let response = raw(&api, method, &missing_db, auth, None, "").await;
            assert_unauthorized(response, false);
        }
        let path = format!("{missing_db}/check-connection/nobody");
        let response = raw(&api, Method::GET, &path, auth, None, "").await;
        assert_unauthorized(response, false);
        let path = format!("{DATABASES}/remove/no-such-api-id");
        let response = raw(&api, Method::DELETE, &path, auth, None, "").await;
        assert_unauthorized(response, false);
    }
    for auth in [Auth::None, Auth::Bearer("wrong")] {
        for method in [Method::GET, Method::DELETE] {
            let response = raw(&api, method, &missing_dash, auth, None, "").await;
            assert_unauthorized(response, true);
        }
        let response = json_call(
            &api,
            Method::PUT,
            &missing_dash,
            auth,
            Some(&json!({"name": "x"})),
        )
        .await;
        assert_unauthorized(response, true);
    }
}

/// Unauthenticated requests with bodies that would be 400, 413, 415 or 422 answer 401; and
/// nothing is stored.
pub async fn protocol_auth_before_body(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let targets = [
        (Method::POST, DATABASES.to_owned(), false),
        (Method::PATCH, fx.db_path(), false),
        (Method::PUT, format!("{DATABASES}/setup"), false),
        (Method::POST, DASHBOARDS.to_owned(), true),
        (Method::PUT, fx.dash_path(), true),
    ];
    let bodies: [(Option<&str>, Bytes); 6] = [
        (Some("application/json"), Bytes::from_static(b"{\"name\": ")),
        (Some("application/json"), Bytes::from_static(b"[1, 2]")),
        (Some("application/json"), Bytes::from_static(b"")),
        (
            Some("application/json"),
            Bytes::from_static(b"{\"name\": \"\"}"),
        ),
        (Some("text/plain"), Bytes::from_static(b"name=x")),
        (Some("application/json"), huge_body(2 * LIMIT)),
    ];
    for (method, path, bearer) in &targets {
        for (content_type, body) in &bodies {
            let response = raw(
                &api,
                method.clone(),
                path,
                Auth::None,
                *content_type,
                body.clone(),
            )
            .await;
            assert_unauthorized(response, *bearer);
        }
        let declared = Request::builder()
            .method(method.clone())
            .uri(path.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, (2 * LIMIT).to_string())
            .body(Full::new(huge_body(2 * LIMIT)))
            .expect("valid request");
        assert_unauthorized(api.send(declared).await, *bearer);
        let response = streamed(&api, method.clone(), path, Auth::None, huge_body(2 * LIMIT)).await;
        assert_unauthorized(response, *bearer);
    }
    fx.assert_unchanged(&api).await;
}

/// Unauthenticated calls with a method the route does not take answer 401, not 405.
pub async fn protocol_auth_before_method(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for (method, path) in [
        (Method::POST, fx.db_path()),
        (Method::GET, format!("{DATABASES}/setup")),
        (Method::PUT, DATABASES.to_owned()),
        (Method::GET, format!("{DATABASES}/remove/x")),
    ] {
        let response = raw(&api, method, &path, Auth::None, None, "").await;
        let response = response.expect(401);
        assert!(response.header("allow").is_none());
        crate::assert_unauthorized_body(&response);
    }
    for (method, path) in [
        (Method::PATCH, fx.dash_path()),
        (Method::DELETE, DASHBOARDS.to_owned()),
    ] {
        let response = raw(&api, method, &path, Auth::Bearer("wrong"), None, "").await;
        assert_unauthorized(response, true);
    }
}

/// The setup scope may set up a database and remove it by api_id, and nothing else.
pub async fn protocol_setup_scope_allowed(storage: Arc<dyn Storage>) {
    let api = scoped_api(storage);
    let setup = format!("{DATABASES}/setup");
    let created = json_call(
        &api,
        Method::PUT,
        &setup,
        Auth::Key(SETUP_KEY),
        Some(&setup_body("ext-1")),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(created["api_id"], "ext-1");
    let mut again = setup_body("ext-1");
    again["name"] = json!("Renamed");
    let updated = json_call(
        &api,
        Method::PUT,
        &setup,
        Auth::Key(SETUP_KEY),
        Some(&again),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(updated["id"], created["id"]);
    assert_eq!(updated["name"], "Renamed");
    let remove = format!("{DATABASES}/remove/ext-1");
    let removed = raw(
        &api,
        Method::DELETE,
        &remove,
        Auth::Key(SETUP_KEY),
        None,
        "",
    )
    .await
    .expect(200)
    .json();
    assert_eq!(removed["id"], created["id"]);
    let path = format!("{DATABASES}/{}", created["id"].as_str().unwrap());
    api.db(Method::GET, &path, None).await.expect(404);
    let again = raw(
        &api,
        Method::DELETE,
        &remove,
        Auth::Key(SETUP_KEY),
        None,
        "",
    )
    .await;
    assert_detail(&again.expect(404), "Not Found");
}

/// The setup scope gets 403 `Forbidden` on every other database route and on every dashboard
/// route, before its body is read; nothing changes.
pub async fn protocol_setup_scope_forbidden_elsewhere(storage: Arc<dyn Storage>) {
    let api = scoped_api(storage);
    let fx = Fixture::new(&api).await;
    let db_body = minimal_database();
    let dash_body = minimal_dashboard();
    let calls: Vec<(Method, String, Auth<'_>, Option<&Value>)> = vec![
        (
            Method::GET,
            DATABASES.to_owned(),
            Auth::Key(SETUP_KEY),
            None,
        ),
        (
            Method::POST,
            DATABASES.to_owned(),
            Auth::Key(SETUP_KEY),
            Some(&db_body),
        ),
        (Method::GET, fx.db_path(), Auth::Key(SETUP_KEY), None),
        (
            Method::PATCH,
            fx.db_path(),
            Auth::Key(SETUP_KEY),
            Some(&db_body),
        ),
        (Method::DELETE, fx.db_path(), Auth::Key(SETUP_KEY), None),
        (
            Method::GET,
            format!("{}/check-connection/reader", fx.db_path()),
            Auth::Key(SETUP_KEY),
            None,
        ),
        (
            Method::POST,
            format!("{DATABASES}/check-connection"),
            Auth::Key(SETUP_KEY),
            Some(&db_body),
        ),
        (
            Method::GET,
            "/api/v1/console/audit".to_owned(),
            Auth::Key(SETUP_KEY),
            None,
        ),
        (
            Method::POST,
            format!("{}/check-connection", fx.db_path()),
            Auth::Key(SETUP_KEY),
            Some(&db_body),
        ),
        (
            Method::GET,
            "/api/v1/querydesk/databases".to_owned(),
            Auth::Key(SETUP_KEY),
            None,
        ),
        (
            Method::GET,
            format!("{DATABASES}/missing-id"),
            Auth::Key(SETUP_KEY),
            None,
        ),
        (
            Method::GET,
            DASHBOARDS.to_owned(),
            Auth::Bearer(SETUP_KEY),
            None,
        ),
        (
            Method::POST,
            DASHBOARDS.to_owned(),
            Auth::Bearer(SETUP_KEY),
            Some(&dash_body),
        ),
        (Method::GET, fx.dash_path(), Auth::Bearer(SETUP_KEY), None),
        (
            Method::PUT,
            fx.dash_path(),
            Auth::Bearer(SETUP_KEY),
            Some(&dash_body),
        ),
        (
            Method::DELETE,
            fx.dash_path(),
            Auth::Bearer(SETUP_KEY),
            None,
        ),
        (
            Method::GET,
            "/api/v1/dashboards".to_owned(),
            Auth::Key(SETUP_KEY),
            None,
        ),
        (
            Method::DELETE,
            format!("/api{}", fx.dash_path()),
            Auth::Key(SETUP_KEY),
            None,
        ),
    ];
    for (method, path, auth, body) in calls {
        let response = json_call(&api, method.clone(), &path, auth, body).await;
        let response = response.expect(403);
        assert_detail(&response, "Forbidden");
        assert!(
            response.header("www-authenticate").is_none(),
            "{method} {path}"
        );
    }
    let malformed = raw(
        &api,
        Method::POST,
        DATABASES,
        Auth::Key(SETUP_KEY),
        Some("application/json"),
        "{",
    )
    .await;
    assert_detail(&malformed.expect(403), "Forbidden");
    fx.assert_unchanged(&api).await;
    let listed = api.db(Method::GET, DATABASES, None).await.expect(200);
    assert_eq!(listed.json()["data"].as_array().unwrap().len(), 1);
}

/// When the authenticator itself fails the answer is a bare 500; its error text never shows.
pub async fn protocol_authenticator_failure_500(storage: Arc<dyn Storage>) {
    let api = scoped_api(storage);
    for (path, auth) in [
        (DATABASES, Auth::Key(FAILING_KEY)),
        (DASHBOARDS, Auth::Bearer(FAILING_KEY)),
    ] {
        let response = raw(&api, Method::GET, path, auth, None, "")
            .await
            .expect(500);
        assert_detail(&response, "Internal Server Error");
        assert!(!response.text().contains(FAILURE_DETAIL));
        assert!(!response.text().contains(FAILING_KEY));
    }
}

/// Malformed JSON is 400 with a detail saying what is wrong; nothing changes.
pub async fn protocol_malformed_json_400(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let targets = [
        (Method::POST, DATABASES.to_owned(), Auth::Key(API_KEY)),
        (Method::PATCH, fx.db_path(), Auth::Key(API_KEY)),
        (
            Method::PUT,
            format!("{DATABASES}/setup"),
            Auth::Key(API_KEY),
        ),
        (
            Method::POST,
            DASHBOARDS.to_owned(),
            Auth::Bearer(ACCESS_TOKEN),
        ),
        (Method::PUT, fx.dash_path(), Auth::Bearer(ACCESS_TOKEN)),
        (
            Method::PATCH,
            format!("/api{}", fx.dash_path()),
            Auth::Key(API_KEY),
        ),
    ];
    for (method, path, auth) in &targets {
        for body in [
            "{\"name\": ",
            "{name: 1}",
            "{\"name\": \"x\",}",
            "{\"a\":1} trailing",
            "\u{feff}{}x",
        ] {
            let response = raw(
                &api,
                method.clone(),
                path,
                *auth,
                Some("application/json"),
                body,
            )
            .await;
            let response = response.expect(400);
            assert_json(&response);
            let json = response.json();
            assert_eq!(
                json.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["errors"]
            );
            let detail = json["errors"]["detail"].as_str().expect("detail is text");
            assert!(!detail.trim().is_empty(), "{method} {path}: {body}");
            assert_eq!(json["errors"].as_object().unwrap().len(), 1);
        }
    }
    fx.assert_unchanged(&api).await;
}

/// A body that is JSON but not an object (array, string, number, boolean, null) is 400.
pub async fn protocol_non_object_json_400(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for body in ["[]", "[{\"name\":\"x\"}]", "\"text\"", "42", "true", "null"] {
        for (method, path, auth) in [
            (Method::POST, DATABASES.to_owned(), Auth::Key(API_KEY)),
            (Method::PATCH, fx.db_path(), Auth::Key(API_KEY)),
            (
                Method::POST,
                DASHBOARDS.to_owned(),
                Auth::Bearer(ACCESS_TOKEN),
            ),
            (Method::PUT, fx.dash_path(), Auth::Bearer(ACCESS_TOKEN)),
        ] {
            let response = raw(&api, method, &path, auth, Some("application/json"), body).await;
            let response = response.expect(400);
            assert_json(&response);
            assert!(response.json()["errors"]["detail"].is_string(), "{body}");
        }
    }
    fx.assert_unchanged(&api).await;
}

/// An empty (or whitespace-only) body where one is needed is 400, not 422.
pub async fn protocol_empty_body_400(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for body in ["", "  \n\t "] {
        for content_type in [Some("application/json"), None] {
            for (method, path, auth) in [
                (Method::POST, DATABASES.to_owned(), Auth::Key(API_KEY)),
                (Method::PATCH, fx.db_path(), Auth::Key(API_KEY)),
                (
                    Method::PUT,
                    format!("{DATABASES}/setup"),
                    Auth::Key(API_KEY),
                ),
                (
                    Method::POST,
                    DASHBOARDS.to_owned(),
                    Auth::Bearer(ACCESS_TOKEN),
                ),
                (Method::PUT, fx.dash_path(), Auth::Bearer(ACCESS_TOKEN)),
            ] {
                let response = raw(&api, method, &path, auth, content_type, body).await;
                let response = response.expect(400);
                assert_json(&response);
                assert!(response.json()["errors"]["detail"].is_string());
            }
        }
    }
    fx.assert_unchanged(&api).await;
}

/// Unknown paths are 404 `Not Found`, with credentials or without.
pub async fn protocol_unknown_routes_404(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let paths = [
        "/".to_owned(),
        "/api/v1/nope".to_owned(),
        "/api/v2/console/databases".to_owned(),
        "/v1/dashboards/a/b".to_owned(),
        format!("{}/extra", fx.dash_path()),
        format!("{}/check-connection/reader/more", fx.db_path()),
        format!("{DATABASES}/remove/a/b"),
        "/v2/dashboards".to_owned(),
        "/api/v1/console/dashboards".to_owned(),
    ];
    for path in &paths {
        for (auth, method) in [
            (Auth::Key(API_KEY), Method::GET),
            (Auth::Bearer(ACCESS_TOKEN), Method::GET),
            (Auth::Key(API_KEY), Method::POST),
        ] {
            let response = raw(&api, method, path, auth, None, "").await;
            assert_detail(&response.expect(404), "Not Found");
        }
    }
}

/// A missing record is 404 `Not Found` on every operation that names one.
pub async fn protocol_missing_records_404(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let db = format!("{DATABASES}/db_01aaaaaaaaaaaaaaaaaaaaaaaa");
    let dash = format!("{DASHBOARDS}/dash_01aaaaaaaaaaaaaaaaaaaaaaaa");
    for (method, path, body) in [
        (Method::GET, db.clone(), None),
        (Method::PATCH, db.clone(), Some(json!({"name": "x"}))),
        (Method::DELETE, db.clone(), None),
        (
            Method::DELETE,
            format!("{DATABASES}/remove/no-such-api-id"),
            None,
        ),
    ] {
        let response = api.db(method, &path, body.as_ref()).await;
        assert_detail(&response.expect(404), "Not Found");
    }
    for (method, path, body) in [
        (Method::GET, dash.clone(), None),
        (Method::PUT, dash.clone(), Some(json!({"name": "x"}))),
        (Method::DELETE, dash.clone(), None),
        (
            Method::PATCH,
            format!("/api{dash}"),
            Some(json!({"name": "x"})),
        ),
    ] {
        let response = api.dash(method, &path, body.as_ref()).await;
        assert_detail(&response.expect(404), "Not Found");
    }
    fx.assert_unchanged(&api).await;
}

/// A known path with another method: 405 with `allow` listing the methods it takes.
pub async fn protocol_method_not_allowed_405(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let db_cases = [
        (Method::POST, fx.db_path(), vec!["DELETE", "GET", "PATCH"]),
        (Method::PUT, fx.db_path(), vec!["DELETE", "GET", "PATCH"]),
        (Method::GET, format!("{DATABASES}/setup"), vec!["PUT"]),
        (Method::POST, format!("{DATABASES}/setup"), vec!["PUT"]),
        (Method::GET, format!("{DATABASES}/remove/x"), vec!["DELETE"]),
        (Method::PUT, DATABASES.to_owned(), vec!["GET", "POST"]),
        (Method::DELETE, DATABASES.to_owned(), vec!["GET", "POST"]),
        (
            Method::POST,
            format!("{}/check-connection/reader", fx.db_path()),
            vec!["GET"],
        ),
        (
            Method::GET,
            format!("{DATABASES}/check-connection"),
            vec!["POST"],
        ),
        (
            Method::PUT,
            format!("{}/check-connection", fx.db_path()),
            vec!["POST"],
        ),
    ];
    for (method, path, allow) in db_cases {
        let response = api.db(method.clone(), &path, None).await.expect(405);
        assert_json(&response);
        assert_eq!(allowed(&response), allow, "{method} {path}");
    }
    let dash_cases = [
        (Method::DELETE, DASHBOARDS.to_owned(), vec!["GET", "POST"]),
        (Method::PATCH, fx.dash_path(), vec!["DELETE", "GET", "PUT"]),
        (Method::POST, fx.dash_path(), vec!["DELETE", "GET", "PUT"]),
        (
            Method::POST,
            format!("/api{}", fx.dash_path()),
            vec!["DELETE", "GET", "PATCH", "PUT"],
        ),
    ];
    for (method, path, allow) in dash_cases {
        let response = api.dash(method.clone(), &path, None).await.expect(405);
        assert_json(&response);
        assert_eq!(allowed(&response), allow, "{method} {path}");
    }
    fx.assert_unchanged(&api).await;
}

/// 405 comes before the body is read: a wrong method with a malformed body is 405.
pub async fn protocol_method_before_body(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let response = raw(
        &api,
        Method::POST,
        &fx.db_path(),
        Auth::Key(API_KEY),
        Some("application/json"),
        "{",
    )
    .await;
    assert_eq!(allowed(&response.expect(405)), ["DELETE", "GET", "PATCH"]);
    let response = raw(
        &api,
        Method::PATCH,
        &fx.dash_path(),
        Auth::Bearer(ACCESS_TOKEN),
        Some("text/plain"),
        "x",
    )
    .await;
    response.expect(405);
    fx.assert_unchanged(&api).await;
}

/// A body over 1 MiB with a declared `content-length` is 413; nothing changes.
pub async fn protocol_body_over_limit_with_length_413(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for (method, path, auth) in [
        (
            Method::POST,
            DASHBOARDS.to_owned(),
            Auth::Bearer(ACCESS_TOKEN),
        ),
        (Method::PUT, fx.dash_path(), Auth::Bearer(ACCESS_TOKEN)),
        (Method::PATCH, fx.db_path(), Auth::Key(API_KEY)),
    ] {
        let body = huge_body(2 * LIMIT);
        let mut builder = Request::builder()
            .method(method)
            .uri(path.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, body.len().to_string());
        builder = match auth {
            Auth::Key(key) => builder.header("x-api-key", key),
            _ => builder.header(header::AUTHORIZATION, format!("Bearer {ACCESS_TOKEN}")),
        };
        let response = api
            .send(builder.body(Full::new(body)).unwrap())
            .await
            .expect(413);
        assert_json(&response);
        assert!(response.json()["errors"]["detail"].is_string());
    }
    fx.assert_unchanged(&api).await;
    let listed = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(listed.json()["data"].as_array().unwrap().len(), 1);
}

/// A body over 1 MiB sent without `content-length` (a whole body, or a stream) is 413 too;
/// nothing changes.
pub async fn protocol_body_over_limit_without_length_413(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    for size in [LIMIT + 1, 2 * LIMIT] {
        let response = raw(
            &api,
            Method::PUT,
            &fx.dash_path(),
            Auth::Bearer(ACCESS_TOKEN),
            Some("application/json"),
            huge_body(size),
        )
        .await;
        assert_json(&response.expect(413));
        let response = streamed(
            &api,
            Method::PUT,
            &fx.dash_path(),
            Auth::Bearer(ACCESS_TOKEN),
            huge_body(size),
        )
        .await;
        assert_json(&response.expect(413));
        let response = streamed(
            &api,
            Method::PATCH,
            &fx.db_path(),
            Auth::Key(API_KEY),
            huge_body(size),
        )
        .await;
        assert_json(&response.expect(413));
        let response = streamed(
            &api,
            Method::POST,
            DASHBOARDS,
            Auth::Bearer(ACCESS_TOKEN),
            huge_body(size),
        )
        .await;
        assert_json(&response.expect(413));
    }
    fx.assert_unchanged(&api).await;
    let listed = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(listed.json()["data"].as_array().unwrap().len(), 1);
}

/// A body of exactly 1 MiB is accepted; one byte more is 413.
pub async fn protocol_body_at_limit_accepted(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let auth = Auth::Bearer(ACCESS_TOKEN);
    let ok = raw(
        &api,
        Method::POST,
        DASHBOARDS,
        auth,
        Some("application/json"),
        padded_dashboard(LIMIT),
    )
    .await;
    assert_eq!(ok.expect(200).json()["name"], "Ops");
    let ok = streamed(
        &api,
        Method::POST,
        DASHBOARDS,
        auth,
        padded_dashboard(LIMIT),
    )
    .await;
    ok.expect(200);
    let over = raw(
        &api,
        Method::POST,
        DASHBOARDS,
        auth,
        Some("application/json"),
        padded_dashboard(LIMIT + 1),
    )
    .await;
    over.expect(413);
    let listed = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(listed.json()["data"].as_array().unwrap().len(), 2);
}

/// A body with a content type other than JSON is 415, even when it holds valid JSON; nothing
/// changes.
pub async fn protocol_non_json_content_type_415(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let dash_json = minimal_dashboard().to_string();
    let db_json = minimal_database().to_string();
    let cases = [
        (
            Method::POST,
            DASHBOARDS.to_owned(),
            Auth::Bearer(ACCESS_TOKEN),
            dash_json.clone(),
        ),
        (
            Method::PUT,
            fx.dash_path(),
            Auth::Bearer(ACCESS_TOKEN),
            r#"{"name":"Changed"}"#.to_owned(),
        ),
        (
            Method::POST,
            DATABASES.to_owned(),
            Auth::Key(API_KEY),
            db_json,
        ),
        (
            Method::PATCH,
            fx.db_path(),
            Auth::Key(API_KEY),
            r#"{"name":"Changed"}"#.to_owned(),
        ),
        (
            Method::PUT,
            format!("{DATABASES}/setup"),
            Auth::Key(API_KEY),
            setup_body("ext").to_string(),
        ),
    ];
    for (method, path, auth, body) in &cases {
        for content_type in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "text/json",
            "multipart/form-data; boundary=x",
        ] {
            let response = raw(
                &api,
                method.clone(),
                path,
                *auth,
                Some(content_type),
                body.clone(),
            )
            .await;
            let response = response.expect(415);
            assert_json(&response);
            assert!(response.json()["errors"]["detail"].is_string());
        }
    }
    let form = raw(
        &api,
        Method::PUT,
        &fx.dash_path(),
        Auth::Bearer(ACCESS_TOKEN),
        Some("application/x-www-form-urlencoded"),
        "name=Changed",
    )
    .await;
    form.expect(415);
    fx.assert_unchanged(&api).await;
    let listed = api.db(Method::GET, DATABASES, None).await.expect(200);
    assert_eq!(listed.json()["data"].as_array().unwrap().len(), 1);
}

/// JSON content types with parameters or in other case are JSON.
pub async fn protocol_json_content_type_variants(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = minimal_dashboard().to_string();
    for content_type in [
        "application/json; charset=utf-8",
        "Application/JSON",
        "application/json;charset=UTF-8",
    ] {
        let response = raw(
            &api,
            Method::POST,
            DASHBOARDS,
            Auth::Bearer(ACCESS_TOKEN),
            Some(content_type),
            body.clone(),
        )
        .await;
        response.expect(200);
    }
}

/// Every successful operation answers 200 (never 201 or 204), with a JSON object body.
pub async fn protocol_success_is_200(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api
        .db(Method::POST, DATABASES, Some(&minimal_database()))
        .await;
    let created = created.expect(200);
    assert_json(&created);
    let path = format!("{DATABASES}/{}", created.json()["id"].as_str().unwrap());
    let steps = [
        api.db(Method::GET, &path, None).await,
        api.db(Method::PATCH, &path, Some(&json!({"name": "Renamed"})))
            .await,
        api.db(Method::GET, DATABASES, None).await,
        api.db(Method::DELETE, &path, None).await,
        api.db(
            Method::PUT,
            &format!("{DATABASES}/setup"),
            Some(&setup_body("ext-9")),
        )
        .await,
        api.db(
            Method::PUT,
            &format!("{DATABASES}/setup"),
            Some(&setup_body("ext-9")),
        )
        .await,
        api.db(Method::DELETE, &format!("{DATABASES}/remove/ext-9"), None)
            .await,
    ];
    for response in steps {
        let response = response.expect(200);
        assert_json(&response);
        assert!(response.json().is_object());
    }
    let created = api
        .dash(Method::POST, DASHBOARDS, Some(&minimal_dashboard()))
        .await;
    let created = created.expect(200);
    let path = format!("{DASHBOARDS}/{}", created.json()["id"].as_str().unwrap());
    let compat = format!("/api{path}");
    let steps = [
        api.dash(Method::GET, &path, None).await,
        api.dash(Method::PUT, &path, Some(&json!({"name": "Renamed"})))
            .await,
        api.db(Method::PATCH, &compat, Some(&json!({"name": "Again"})))
            .await,
        api.dash(Method::GET, DASHBOARDS, None).await,
        api.dash(Method::DELETE, &path, None).await,
    ];
    for response in steps {
        let response = response.expect(200);
        assert_json(&response);
        assert!(response.json().is_object());
    }
}

/// Every error answer of the service is JSON of the shape `{"errors": {...}}`.
pub async fn protocol_error_bodies_are_json(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let responses = [
        raw(&api, Method::GET, DATABASES, Auth::None, None, "").await,
        raw(&api, Method::GET, "/nowhere", Auth::None, None, "").await,
        api.db(Method::POST, &fx.db_path(), None).await,
        api.db(Method::POST, DATABASES, Some(&json!({}))).await,
        api.dash(Method::POST, DASHBOARDS, Some(&json!({"name": ""})))
            .await,
        raw(
            &api,
            Method::POST,
            DASHBOARDS,
            Auth::Bearer(ACCESS_TOKEN),
            Some("application/json"),
            "{",
        )
        .await,
        raw(
            &api,
            Method::POST,
            DASHBOARDS,
            Auth::Bearer(ACCESS_TOKEN),
            Some("text/plain"),
            "{}",
        )
        .await,
        api.dash(Method::GET, &format!("{DASHBOARDS}?limit=0"), None)
            .await,
        api.db(Method::GET, &format!("{DATABASES}?limit=x"), None)
            .await,
    ];
    let statuses: Vec<u16> = responses.iter().map(|r| r.status.as_u16()).collect();
    assert_eq!(statuses, [401, 404, 405, 422, 422, 400, 415, 422, 422]);
    for response in &responses {
        assert_json(response);
        let body = response.json();
        assert_eq!(
            body.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["errors"],
            "{body}"
        );
        assert!(body["errors"].is_object(), "{body}");
    }
}

/// Either credential header on a compat dashboard route is enough; any wrong one in a request
/// is 401, beside a valid one too, and whether or not the route takes its kind; a valid one
/// beside a route it does not open does not help.
pub async fn protocol_two_credentials(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let fx = Fixture::new(&api).await;
    let compat = format!("/api{}", fx.dash_path());
    let both = |path: &str, key: &str, token: &str| {
        Request::builder()
            .method(Method::GET)
            .uri(path)
            .header("x-api-key", key)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Full::default())
            .expect("valid request")
    };
    api.send(both(&compat, API_KEY, ACCESS_TOKEN))
        .await
        .expect(200);
    assert_unauthorized(api.send(both(&compat, "wrong", ACCESS_TOKEN)).await, true);
    assert_unauthorized(api.send(both(&compat, API_KEY, "wrong")).await, true);
    assert_unauthorized(api.send(both(&compat, "wrong", "wrong")).await, true);
    assert_unauthorized(
        api.send(both(&fx.dash_path(), API_KEY, "wrong")).await,
        true,
    );
    assert_unauthorized(
        api.send(both(&fx.dash_path(), "wrong", ACCESS_TOKEN)).await,
        true,
    );
    api.send(both(&fx.dash_path(), API_KEY, ACCESS_TOKEN))
        .await
        .expect(200);
    assert_unauthorized(api.send(both(&fx.db_path(), "wrong", API_KEY)).await, false);
    assert_unauthorized(api.send(both(&fx.db_path(), API_KEY, "wrong")).await, false);
    api.send(both(&fx.db_path(), API_KEY, ACCESS_TOKEN))
        .await
        .expect(200);
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! protocol_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            protocol,
            $storage,
            [
                protocol_missing_credentials_401,
                protocol_wrong_credentials_401,
                protocol_api_key_on_v1_dashboards_401,
                protocol_401_says_what_the_route_takes,
                protocol_openapi_document_needs_no_credential,
                protocol_bearer_on_database_routes_401,
                protocol_empty_credentials_401,
                protocol_auth_before_existence,
                protocol_auth_before_body,
                protocol_auth_before_method,
                protocol_setup_scope_allowed,
                protocol_setup_scope_forbidden_elsewhere,
                protocol_authenticator_failure_500,
                protocol_malformed_json_400,
                protocol_non_object_json_400,
                protocol_empty_body_400,
                protocol_unknown_routes_404,
                protocol_missing_records_404,
                protocol_method_not_allowed_405,
                protocol_method_before_body,
                protocol_body_over_limit_with_length_413,
                protocol_body_over_limit_without_length_413,
                protocol_body_at_limit_accepted,
                protocol_non_json_content_type_415,
                protocol_json_content_type_variants,
                protocol_success_is_200,
                protocol_error_bodies_are_json,
                protocol_two_credentials,
            ]
        );
    };
}
