//! Check-connection against real PostgreSQL, next to a raw `tokio-postgres` connect and
//! `SELECT 1` measured in the same run: what the service adds to the driver's own round trips.
//! A bench binary (no criterion): each figure is the mean of 20 rounds, alternating.
//!
//! Run: `cargo bench -p dbconsole-benches --bench check` with the test database servers up
//! (`sudo bash .ci/db-servers-up.sh`: the role `checker`, password `checkpw`, database
//! `checkdb` on 127.0.0.1:5432).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use dbconsole_benches::{ACCESS_TOKEN, API_KEY, DATABASES, json_of};
use dbconsole_core::{ConsoleService, Sealer, Secret, StaticCredentials};
use dbconsole_storage_memory::MemoryStorage;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use tower::ServiceExt;

const ROUNDS: u32 = 20;

fn service() -> ConsoleService {
    let auth = StaticCredentials::new(
        Some(&Secret::from(API_KEY)),
        Some(&Secret::from(ACCESS_TOKEN)),
    );
    ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(auth),
        Sealer::ephemeral().expect("a random key"),
    )
    .checkers(dbconsole_core::check::standard_checkers())
    .build()
}

fn request(method: Method, path: &str, body: Option<&serde_json::Value>) -> Request<Full<Bytes>> {
    let builder = Request::builder()
        .method(method)
        .uri(path)
        .header("x-api-key", API_KEY)
        .header("content-type", "application/json");
    let body = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    builder.body(Full::new(body)).expect("a valid request")
}

async fn check(service: &ConsoleService, path: &str) -> String {
    let response = match service
        .clone()
        .oneshot(request(Method::GET, path, None))
        .await
    {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let body = match response.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) => panic!("the body was cut off: {error}"),
    };
    String::from_utf8_lossy(&body).into_owned()
}

#[tokio::main]
async fn main() {
    let service = service();
    let body = serde_json::json!({
        "name": "Bench", "adapter": "postgres", "hostname": "127.0.0.1", "port": 5432,
        "database": "checkdb",
        "credentials": [{"username": "checker", "password": "checkpw"}],
    });
    let (status, created) = json_of(&service, request(Method::POST, DATABASES, Some(&body))).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let path = format!(
        "{DATABASES}/{}/check-connection/checker",
        created["id"].as_str().unwrap()
    );
    let first = check(&service, &path).await;
    assert_eq!(
        first, "ok",
        "the check must connect: start the test servers with `sudo bash .ci/db-servers-up.sh`"
    );

    let mut through_service = Duration::ZERO;
    let mut raw = Duration::ZERO;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        assert_eq!(check(&service, &path).await, "ok");
        through_service += start.elapsed();

        let start = Instant::now();
        let (client, connection) = tokio_postgres::connect(
            "host=127.0.0.1 port=5432 user=checker password=checkpw dbname=checkdb",
            tokio_postgres::NoTls,
        )
        .await
        .expect("raw connect");
        let task = tokio::spawn(connection);
        client.simple_query("SELECT 1").await.expect("raw query");
        drop(client);
        let _ = task.await;
        raw += start.elapsed();
    }
    let (service_mean, raw_mean) = (through_service / ROUNDS, raw / ROUNDS);
    println!(
        "check-connection on PostgreSQL, mean of {ROUNDS}: through the service {service_mean:?}; \
         raw tokio-postgres connect + SELECT 1 {raw_mean:?}; ratio {:.2}",
        service_mean.as_secs_f64() / raw_mean.as_secs_f64()
    );
}
