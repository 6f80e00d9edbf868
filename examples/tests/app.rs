//! The `axum_mount` example's router ([`dbconsole_examples::app`]), started in-process: the
//! application's own routes and the mounted dbconsole API both answer, each with its own rules,
//! and both see the same store.

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use dbconsole_core::Secret;
use dbconsole_examples::{app, memory_console};
use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

const KEY: &str = "app-test-key";
const TOKEN: &str = "app-test-token";

fn router() -> Router {
    app(memory_console(&Secret::from(KEY), &Secret::from(TOKEN)))
}

async fn call(router: &Router, request: Request<Body>) -> (StatusCode, http::HeaderMap, Bytes) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, body)
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

fn create_database() -> Request<Body> {
    let body = json!({
        "name": "orders",
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "console", "password": "s3cret-pw"}],
    });
    Request::post("/api/v1/console/databases")
        .header("x-api-key", KEY)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn own_routes_answer() {
    let router = router();
    let (status, _, body) = call(&router, get("/")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).contains("/app/status"));

    let (status, _, body) = call(&router, get("/healthz")).await;
    assert_eq!((status, &body[..]), (StatusCode::OK, &b"ok"[..]));

    let (status, headers, body) = call(&router, get("/app/status")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(
        json(&body),
        json!({"status": "ok", "databases": 0, "dashboards": 0})
    );
}

#[tokio::test]
async fn mounted_api_answers_with_full_paths_and_shares_the_store() {
    let router = router();
    let (status, _, body) = call(&router, create_database()).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let created = json(&body);
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("db_"));
    assert!(!String::from_utf8_lossy(&body).contains("s3cret-pw"));

    let retrieve = Request::get(format!("/api/v1/console/databases/{id}"))
        .header("x-api-key", KEY)
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = call(&router, retrieve).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json(&body), created);

    let dashboard = Request::post("/v1/dashboards")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"name":"ops","restricted_access":false}"#))
        .unwrap();
    let (status, _, body) = call(&router, dashboard).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(json(&body)["id"].as_str().unwrap().starts_with("dash_"));

    // The application's own route reads the store the console wrote to.
    let (_, _, body) = call(&router, get("/app/status")).await;
    assert_eq!(
        json(&body),
        json!({"status": "ok", "databases": 1, "dashboards": 1})
    );
}

#[tokio::test]
async fn the_api_nested_under_a_prefix_answers_there_on_the_same_store() {
    let router = router();
    let mut create = create_database();
    *create.uri_mut() = "/console/api/v1/console/databases".parse().unwrap();
    let (status, _, body) = call(&router, create).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let id = json(&body)["id"].as_str().unwrap().to_owned();

    // The same record, through the nested path and through the full path.
    for path in [
        format!("/console/api/v1/console/databases/{id}"),
        format!("/api/v1/console/databases/{id}"),
    ] {
        let request = Request::get(&path)
            .header("x-api-key", KEY)
            .body(Body::empty())
            .unwrap();
        let (status, _, body) = call(&router, request).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(json(&body)["id"], id.as_str(), "{path}");
    }
    // Its own errors, below the prefix too.
    let (status, _, body) = call(&router, get("/console/api/v1/console/databases")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        json(&body),
        json!({"errors": {
            "detail": "Unauthorized",
            "hint": "this route takes an API key in the x-api-key header",
        }})
    );
}

#[tokio::test]
async fn mounted_api_keeps_its_own_authentication_and_errors() {
    let router = router();
    // The console's 401, with its JSON body, for a database route without a key.
    let (status, _, body) = call(&router, get("/api/v1/console/databases")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        json(&body),
        json!({"errors": {
            "detail": "Unauthorized",
            "hint": "this route takes an API key in the x-api-key header",
        }})
    );

    // The dashboard routes take the bearer token, not the API key.
    let wrong = Request::get("/v1/dashboards")
        .header("x-api-key", KEY)
        .body(Body::empty())
        .unwrap();
    let (status, headers, _) = call(&router, wrong).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");

    // A path neither the application nor the console knows: the console's JSON 404.
    let (status, _, body) = call(&router, get("/nowhere")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json(&body), json!({"errors": {"detail": "Not Found"}}));

    // The application's own routes need no key.
    let (status, _, _) = call(&router, get("/app/status")).await;
    assert_eq!(status, StatusCode::OK);
}

/// One HTTP/1.1 request over a real socket, read to the end (`connection: close`).
async fn http_over_loopback(addr: std::net::SocketAddr, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).unwrap()
}

#[tokio::test]
async fn serves_both_over_a_loopback_socket() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, router())
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });

    let own = http_over_loopback(
        addr,
        "GET /app/status HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(own.starts_with("HTTP/1.1 200 OK\r\n"), "{own}");
    let (_, own_body) = own.split_once("\r\n\r\n").unwrap();
    assert_eq!(
        json(own_body.as_bytes()),
        json!({"status": "ok", "databases": 0, "dashboards": 0})
    );

    let body = r#"{"name":"ops","restricted_access":true}"#;
    let api = http_over_loopback(
        addr,
        &format!(
            "POST /v1/dashboards HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\
             authorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert!(api.starts_with("HTTP/1.1 200 OK\r\n"), "{api}");
    let (_, api_body) = api.split_once("\r\n\r\n").unwrap();
    let dashboard = json(api_body.as_bytes());
    assert_eq!(dashboard["name"], "ops");
    assert_eq!(dashboard["restricted_access"], true);

    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// The mounted console checks connections with the real drivers: a PostgreSQL database on a
/// closed port answers the driver's refusal, not "not built into this server".
#[tokio::test]
async fn check_connection_uses_real_drivers() {
    let router = router();
    let body = json!({
        "name": "closed",
        "adapter": "postgres",
        "hostname": "127.0.0.1",
        "port": 1,
        "database": "orders",
        "credentials": [{"username": "console", "password": "s3cret-pw", "timeout": 5}],
    });
    let request = Request::post("/api/v1/console/databases")
        .header("x-api-key", KEY)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, created) = call(&router, request).await;
    assert_eq!(status, StatusCode::OK);
    let id = json(&created)["id"].as_str().unwrap().to_owned();
    let check = Request::get(format!(
        "/console/api/v1/console/databases/{id}/check-connection/console"
    ))
    .header("x-api-key", KEY)
    .body(Body::empty())
    .unwrap();
    let (status, _, answer) = call(&router, check).await;
    assert_eq!(status, StatusCode::OK);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.contains("Connection refused"), "{answer}");
    assert!(!answer.contains("s3cret-pw"));
}
