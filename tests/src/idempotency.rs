//! Cases of the HTTP suite: retrying a write safely (docs/api.md, *Retrying a write safely*). A
//! write sent again with the same `Idempotency-Key` and the same request gets the first answer
//! again and writes nothing; the same key with another request is 422; keys are per caller;
//! racing requests with one key make one record; a malformed key is 400.

use std::sync::Arc;

use dbconsole_core::Storage;
use http::Method;
use serde_json::{Value, json};

use crate::{Api, DASHBOARDS, DATABASES, TestResponse, minimal_dashboard, minimal_database};

const KEY: &str = "idempotency-key";
const REPLAYED: &str = "idempotent-replayed";

async fn send(
    api: &Api,
    method: Method,
    path: &str,
    key: &str,
    body: Option<&Value>,
) -> TestResponse {
    api.call_with(method, path, &[(KEY, key)], body).await
}

#[track_caller]
fn assert_replay(first: &TestResponse, again: &TestResponse) {
    assert_eq!(again.status, first.status, "{}", again.text());
    assert_eq!(again.body, first.body, "the first answer, byte for byte");
    assert_eq!(again.header("etag"), first.header("etag"));
    assert_eq!(again.header(REPLAYED), Some("true"));
    assert_eq!(first.header(REPLAYED), None);
}

/// A create sent three times with one key makes one database, and every answer is the first.
pub async fn idempotency_a_retried_create_makes_one_record(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = minimal_database();
    let first = send(&api, Method::POST, DATABASES, "create-1", Some(&body))
        .await
        .expect(200);
    for _ in 0..2 {
        let again = send(&api, Method::POST, DATABASES, "create-1", Some(&body)).await;
        assert_replay(&first, &again);
    }
    assert_eq!(api.listed_names(DATABASES, "").await, ["Orders"]);
    // Another key is another request.
    send(&api, Method::POST, DATABASES, "create-2", Some(&body))
        .await
        .expect(200);
    assert_eq!(api.listed_names(DATABASES, "").await.len(), 2);
    // Without a key, every create writes.
    api.db(Method::POST, DATABASES, Some(&body))
        .await
        .expect(200);
    assert_eq!(api.listed_names(DATABASES, "").await.len(), 3);
}

/// The same key with another body is 422 naming `idempotency_key`, and writes nothing; on
/// another path it is another key.
pub async fn idempotency_the_same_key_for_another_request_is_refused(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = minimal_database();
    let first = send(&api, Method::POST, DATABASES, "k", Some(&body))
        .await
        .expect(200)
        .json();
    let mut other = body.clone();
    other["name"] = json!("Other");
    let refused = send(&api, Method::POST, DATABASES, "k", Some(&other))
        .await
        .expect(422)
        .json();
    assert_eq!(
        refused,
        json!({"errors": {"idempotency_key": ["was already used with another request"]}})
    );
    assert_eq!(api.listed_names(DATABASES, "").await, ["Orders"]);
    // A key names one request to one path: on another path it is another key.
    let path = format!("{DATABASES}/{}", first["id"].as_str().unwrap());
    send(&api, Method::PATCH, &path, "k", Some(&other))
        .await
        .expect(200);
}

/// An update, a setup, a permissions replace and a delete, each retried: the first answer
/// again (a delete's retry answers the deleted record, not 404), and one change each.
pub async fn idempotency_every_write_replays_its_first_answer(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_database(&minimal_database()).await;
    let path = format!("{DATABASES}/{}", created["id"].as_str().unwrap());

    let rename = json!({"name": "Renamed"});
    let first = send(&api, Method::PATCH, &path, "patch", Some(&rename))
        .await
        .expect(200);
    let etag = first.header("etag").unwrap().to_owned();
    let again = send(&api, Method::PATCH, &path, "patch", Some(&rename)).await;
    assert_replay(&first, &again);
    let now = api.db(Method::GET, &path, None).await.expect(200);
    assert_eq!(
        now.header("etag"),
        Some(etag.as_str()),
        "the retry wrote nothing"
    );

    let grants =
        json!({"permissions": [{"subject_kind": "group", "subject": "data", "access": "query"}]});
    let permissions = format!("{path}/permissions");
    let first = send(&api, Method::PUT, &permissions, "grant", Some(&grants))
        .await
        .expect(200);
    assert_replay(
        &first,
        &send(&api, Method::PUT, &permissions, "grant", Some(&grants)).await,
    );

    let setup = format!("{DATABASES}/setup");
    let declared = json!({
        "id": "ext-idem", "adapter": "postgres", "hostname": "pg.internal",
        "database": "billing", "username": "svc", "password": "pw-svc-1"
    });
    let first = send(&api, Method::PUT, &setup, "setup", Some(&declared))
        .await
        .expect(200);
    assert_replay(
        &first,
        &send(&api, Method::PUT, &setup, "setup", Some(&declared)).await,
    );

    let first = send(&api, Method::DELETE, &path, "delete", None)
        .await
        .expect(200);
    assert_replay(
        &first,
        &send(&api, Method::DELETE, &path, "delete", None).await,
    );
    api.db(Method::GET, &path, None).await.expect(404);

    let dashboard = api.create_dashboard(&minimal_dashboard()).await;
    let dash_path = format!("{DASHBOARDS}/{}", dashboard["id"].as_str().unwrap());
    let change = json!({"name": "Renamed"});
    let first = send(&api, Method::PUT, &dash_path, "dash", Some(&change))
        .await
        .expect(200);
    assert_replay(
        &first,
        &send(&api, Method::PUT, &dash_path, "dash", Some(&change)).await,
    );

    // Six writes with keys, one event each: no retry wrote.
    let audit = api
        .db(Method::GET, "/api/v1/console/audit?limit=100", None)
        .await
        .expect(200)
        .json();
    assert_eq!(audit["data"].as_array().unwrap().len(), 7, "{audit}");
}

/// A failed write stores no answer: the same key may be sent again once the request is fixed.
pub async fn idempotency_a_refused_write_keeps_no_answer(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut invalid = minimal_database();
    invalid["port"] = json!(70000);
    send(&api, Method::POST, DATABASES, "retry-me", Some(&invalid))
        .await
        .expect(422);
    send(
        &api,
        Method::POST,
        DATABASES,
        "retry-me",
        Some(&minimal_database()),
    )
    .await
    .expect(200);
    assert_eq!(api.listed_names(DATABASES, "").await, ["Orders"]);
}

/// 16 creates with one key at the same time: one database, and every answer is its.
pub async fn idempotency_racing_requests_with_one_key_make_one_record(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = minimal_database();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (api, body) = (api.clone(), body.clone());
            tokio::spawn(
                async move { send(&api, Method::POST, DATABASES, "raced", Some(&body)).await },
            )
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        let answer = task.await.unwrap();
        // A request that met the winner while it was being written may be told to retry.
        if answer.status.as_u16() == 409 {
            let again = send(&api, Method::POST, DATABASES, "raced", Some(&body)).await;
            ids.push(again.expect(200).json()["id"].clone());
        } else {
            ids.push(answer.expect(200).json()["id"].clone());
        }
    }
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(api.listed_names(DATABASES, "").await, ["Orders"]);
}

/// A malformed key is 400 and writes nothing; a key on a check-connection or a read is ignored.
pub async fn idempotency_malformed_keys_are_refused(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = minimal_database();
    let long = "k".repeat(256);
    for key in [long.as_str(), "tab\tkey"] {
        let refused = send(&api, Method::POST, DATABASES, key, Some(&body))
            .await
            .expect(400)
            .json();
        assert!(
            refused["errors"]["detail"]
                .as_str()
                .unwrap()
                .contains("Idempotency-Key"),
            "{refused}"
        );
    }
    assert!(api.listed_names(DATABASES, "").await.is_empty());
    send(&api, Method::GET, DATABASES, "read", None)
        .await
        .expect(200);
}

/// Defines the idempotency cases for a storage backend.
#[macro_export]
#[doc(hidden)]
macro_rules! idempotency_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            idempotency,
            $storage,
            [
                idempotency_a_retried_create_makes_one_record,
                idempotency_the_same_key_for_another_request_is_refused,
                idempotency_every_write_replays_its_first_answer,
                idempotency_a_refused_write_keeps_no_answer,
                idempotency_racing_requests_with_one_key_make_one_record,
                idempotency_malformed_keys_are_refused,
            ]
        );
    };
}
