//! Embedding the dbconsole service with the in-memory backend in a test of another program.
//!
//! The program under test is [`dbconsole_examples::provision`]: it registers the databases it
//! manages through the dbconsole HTTP API, through whatever `tower::Service` it is given. Here
//! it is given the real [`ConsoleService`] over a fresh [`MemoryStorage`], so each test runs the
//! whole API (routing, authentication, validation, the setup merge rules) in-process, with no
//! server, socket or database, and then looks at what the console holds, through the API and
//! straight in the store.
//!
//! Run: `cargo test -p dbconsole-examples --test embedded`.

use std::sync::Arc;

use bytes::Bytes;
use dbconsole_core::seal::Place;
use dbconsole_core::{ConsoleService, Sealer, Secret, StaticCredentials, Storage};
use dbconsole_examples::provision::{DatabaseSpec, ProvisionError, Provisioner};
use dbconsole_storage_memory::MemoryStorage;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tower::ServiceExt;

const KEY: &str = "embedded-test-key";

/// The console the program talks to in these tests: the real service, in memory.
fn console() -> ConsoleService {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let auth = StaticCredentials::new(Some(&Secret::from(KEY)), None);
    let sealer = Sealer::ephemeral().expect("a random key");
    ConsoleService::builder(storage, Arc::new(auth), sealer).build()
}

fn spec(api_id: &str, password: &str) -> DatabaseSpec {
    DatabaseSpec {
        api_id: api_id.to_owned(),
        adapter: "postgres".to_owned(),
        hostname: "orders.db.internal".to_owned(),
        port: Some(5433),
        database: "orders".to_owned(),
        username: "console".to_owned(),
        password: Secret::from(password),
        reviews_required: 1,
    }
}

/// A GET through the same service, as the test's own look at what the console holds.
async fn get_json(console: &ConsoleService, path: &str) -> (StatusCode, Value) {
    let request = Request::get(path)
        .header("x-api-key", KEY)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = console.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

/// The stored password of the database's only credential, read straight from the store and
/// opened with the console's sealer.
async fn stored_password(console: &ConsoleService, id: &str) -> Option<Secret> {
    let database = console.storage().database(id).await.unwrap().unwrap();
    assert_eq!(database.credentials.len(), 1);
    let credential = &database.credentials[0];
    let place = Place::password(database.id.as_str(), credential.id.as_str());
    let sealed = credential.password.as_ref()?;
    Some(console.sealer().open(sealed, &place).expect("opens"))
}

#[tokio::test]
async fn provisioning_is_idempotent() {
    let console = console();
    let provisioner = Provisioner::new(console.clone(), Secret::from(KEY));

    let first = provisioner
        .ensure(&spec("orders-db", "pw-one"))
        .await
        .unwrap();
    let second = provisioner
        .ensure(&spec("orders-db", "pw-one"))
        .await
        .unwrap();
    assert_eq!(first, second);
    assert_eq!(first.api_id, "orders-db");

    // One database, holding what the program described.
    let (status, list) = get_json(&console, "/api/v1/console/databases").await;
    assert_eq!(status, StatusCode::OK);
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    let database = &data[0];
    assert_eq!(database["id"], first.id.as_str());
    assert_eq!(database["api_id"], "orders-db");
    assert_eq!(database["name"], "orders");
    assert_eq!(database["port"], 5433);
    let credentials = database["credentials"].as_array().unwrap();
    assert_eq!(credentials.len(), 1);
    assert_eq!(credentials[0]["id"], first.credential_id.as_str());
    assert_eq!(credentials[0]["username"], "console");
    assert_eq!(credentials[0]["reviews_required"], 1);
    assert_eq!(credentials[0]["default_credential"], true);
    assert!(credentials[0].get("password").is_none());
}

#[tokio::test]
async fn rotating_the_password_keeps_the_credential() {
    let console = console();
    let provisioner = Provisioner::new(console.clone(), Secret::from(KEY));
    let before = provisioner
        .ensure(&spec("orders-db", "pw-one"))
        .await
        .unwrap();
    assert_eq!(
        stored_password(&console, &before.id).await,
        Some(Secret::from("pw-one"))
    );

    let after = provisioner
        .ensure(&spec("orders-db", "pw-two"))
        .await
        .unwrap();
    // Same username: the credential keeps its id (dashboards refer to it), the password moves.
    assert_eq!(after, before);
    assert_eq!(
        stored_password(&console, &after.id).await,
        Some(Secret::from("pw-two"))
    );
}

#[tokio::test]
async fn separate_api_ids_are_separate_databases() {
    let console = console();
    let provisioner = Provisioner::new(console.clone(), Secret::from(KEY));
    let orders = provisioner.ensure(&spec("orders-db", "pw")).await.unwrap();
    let billing = provisioner
        .ensure(&spec("billing db/eu", "pw"))
        .await
        .unwrap();
    assert_ne!(orders.id, billing.id);
    assert_eq!(billing.api_id, "billing db/eu");

    // Decommissioning goes by api_id (percent-encoded in the path), and is safe to repeat.
    assert!(provisioner.decommission("billing db/eu").await.unwrap());
    assert!(!provisioner.decommission("billing db/eu").await.unwrap());
    let (status, _) = get_json(
        &console,
        &format!("/api/v1/console/databases/{}", billing.id),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = get_json(
        &console,
        &format!("/api/v1/console/databases/{}", orders.id),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_rejected_description_reports_the_console_errors() {
    let console = console();
    let provisioner = Provisioner::new(console.clone(), Secret::from(KEY));
    let mut bad = spec("orders-db", "pw");
    bad.adapter = "sqlite".to_owned();
    bad.hostname = " ".to_owned();
    match provisioner.ensure(&bad).await {
        Err(ProvisionError::Invalid(errors)) => {
            assert!(
                errors["adapter"][0]
                    .as_str()
                    .unwrap()
                    .starts_with("must be one of")
            );
            assert_eq!(errors["hostname"][0], "can't be blank");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    // Nothing was stored.
    let (_, list) = get_json(&console, "/api/v1/console/databases").await;
    assert_eq!(list["data"], Value::Array(vec![]));
}

#[tokio::test]
async fn a_wrong_key_is_refused_and_never_shown() {
    let console = console();
    let provisioner = Provisioner::new(console.clone(), Secret::from("not-the-key"));
    match provisioner.ensure(&spec("orders-db", "pw-secret")).await {
        Err(ProvisionError::Unauthorized(status)) => assert_eq!(status, StatusCode::UNAUTHORIZED),
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    let shown = format!("{provisioner:?} {:?}", spec("orders-db", "pw-secret"));
    assert!(!shown.contains("not-the-key"), "{shown}");
    assert!(!shown.contains("pw-secret"), "{shown}");
}

/// A console built with a base path answers only below it, and routes on the path below it
/// exactly as it would from the root (for servers that hand a mounted service the full path).
#[tokio::test]
async fn a_base_path_mounts_the_whole_api_below_it() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let auth = StaticCredentials::new(Some(&Secret::from(KEY)), None);
    let sealer = Sealer::ephemeral().expect("a random key");
    let console = ConsoleService::builder(storage, Arc::new(auth), sealer)
        .base_path("/console")
        .expect("a valid base path")
        .build();
    let status = |path: &'static str| {
        let console = console.clone();
        async move {
            let request = Request::get(path)
                .header("x-api-key", KEY)
                .body(Full::new(Bytes::new()))
                .unwrap();
            console.oneshot(request).await.unwrap().status()
        }
    };
    assert_eq!(
        status("/console/api/v1/console/databases").await,
        StatusCode::OK
    );
    assert_eq!(
        status("/console/api/v1/console/databases/db_x").await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        status("/api/v1/console/databases").await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        status("/consoleapi/v1/console/databases").await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(status("/console").await, StatusCode::NOT_FOUND);

    let builder = || {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let auth = Arc::new(StaticCredentials::default());
        ConsoleService::builder(storage, auth, Sealer::ephemeral().unwrap())
    };
    for invalid in ["console", "/console/", "//console", "/a//b"] {
        assert!(builder().base_path(invalid).is_err(), "{invalid}");
    }
    assert!(builder().base_path("").is_ok());
}
