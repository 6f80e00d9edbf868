//! Cases of the HTTP suite: the audit trail (docs/api.md, *The audit trail*). A scripted series of
//! requests, some refused, then `GET /api/v1/console/audit` lists exactly the changes made,
//! newest first, each with its caller and request id and the names of the fields it changed,
//! and no secret anywhere; it pages, filters by record, takes only full-scope API keys and
//! offers no way to change or delete an event.

use std::sync::Arc;

use dbconsole_core::Storage;
use http::Method;
use serde_json::{Value, json};

use crate::{ACCESS_TOKEN, API_KEY, Api, DASHBOARDS, DATABASES, TestResponse, base64};

const AUDIT: &str = "/api/v1/console/audit";
const CA_PEM: &str =
    "-----BEGIN CERTIFICATE-----\nMIIBaudittrailcertificate\n-----END CERTIFICATE-----\n";

/// A call with the route's credential and an `x-request-id`.
async fn call(
    api: &Api,
    method: Method,
    path: &str,
    request_id: &str,
    extra: &[(&str, &str)],
    body: Option<&Value>,
) -> TestResponse {
    let mut headers = vec![("x-request-id", request_id)];
    headers.extend_from_slice(extra);
    api.call_with(method, path, &headers, body).await
}

/// The whole trail, newest first.
async fn trail(api: &Api) -> Vec<Value> {
    let page = call(
        api,
        Method::GET,
        &format!("{AUDIT}?limit=500"),
        "read",
        &[],
        None,
    )
    .await
    .expect(200)
    .json();
    assert_eq!(page["next"], Value::Null);
    page["data"].as_array().expect("data").clone()
}

/// The scripted series: every change is listed once, newest first, with its action, record,
/// caller, request id and changed field names; refused requests and reads are not; no secret
/// appears.
pub async fn audit_lists_exactly_the_changes_made(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let passwords = ["Audit-pw-1", "Audit-pw-2", "Audit-pw-3"];
    let created = call(
        &api,
        Method::POST,
        DATABASES,
        "req-create",
        &[],
        Some(&json!({
            "name": "Orders", "adapter": "postgres", "hostname": "db.internal",
            "database": "orders", "ssl": true, "ssl_ca_cert": base64(CA_PEM.as_bytes()),
            "credentials": [{"username": "reader", "password": passwords[0]}],
        })),
    )
    .await
    .expect(200);
    let database = created.json();
    let id = database["id"].as_str().expect("id").to_owned();
    let credential = database["credentials"][0]["id"].clone();
    let path = format!("{DATABASES}/{id}");
    call(
        &api,
        Method::PATCH,
        &path,
        "req-rotate",
        &[],
        Some(&json!({"name": "Orders EU", "credentials": [{"id": credential, "password": passwords[1]}]})),
    )
    .await
    .expect(200);
    // Refused: nothing to record.
    call(
        &api,
        Method::PATCH,
        &path,
        "req-stale",
        &[("if-match", "\"1\"")],
        Some(&json!({"name": "x"})),
    )
    .await
    .expect(412);
    call(
        &api,
        Method::PATCH,
        &path,
        "req-invalid",
        &[],
        Some(&json!({"hostname": ""})),
    )
    .await
    .expect(422);
    call(&api, Method::GET, &path, "req-read", &[], None)
        .await
        .expect(200);
    let setup = call(
        &api,
        Method::PUT,
        &format!("{DATABASES}/setup"),
        "req-setup",
        &[],
        Some(&json!({
            "id": "ext-audit", "adapter": "mysql", "hostname": "db.internal",
            "database": "app", "username": "svc", "password": passwords[2],
        })),
    )
    .await
    .expect(200);
    let setup_id = setup.json()["id"].as_str().expect("id").to_owned();
    call(
        &api,
        Method::PUT,
        &format!("{path}/permissions"),
        "req-permissions",
        &[],
        Some(&json!({"permissions": [{"subject_kind": "group", "subject": "Payments", "access": "review"}]})),
    )
    .await
    .expect(200);
    call(
        &api,
        Method::PUT,
        &format!("{path}/data-protection"),
        "req-policies",
        &[],
        Some(&json!({"policies": [{"name": "pii", "columns": [{"column": "users.email", "action": "mask"}]}]})),
    )
    .await
    .expect(200);
    let board = call(
        &api,
        Method::POST,
        DASHBOARDS,
        "req-board",
        &[],
        Some(&json!({"name": "Ops", "restricted_access": false})),
    )
    .await
    .expect(200);
    let board_id = board.json()["id"].as_str().expect("id").to_owned();
    let board_path = format!("{DASHBOARDS}/{board_id}");
    call(
        &api,
        Method::PUT,
        &board_path,
        "req-board-edit",
        &[],
        Some(&json!({"name": "Ops 2"})),
    )
    .await
    .expect(200);
    call(
        &api,
        Method::DELETE,
        &board_path,
        "req-board-delete",
        &[],
        None,
    )
    .await
    .expect(200);
    call(
        &api,
        Method::DELETE,
        &format!("{DATABASES}/remove/ext-audit"),
        "req-remove",
        &[],
        None,
    )
    .await
    .expect(200);
    call(&api, Method::DELETE, &path, "req-delete", &[], None)
        .await
        .expect(200);

    let events = trail(&api).await;
    let listed: Vec<(String, String, String, Value)> = events
        .iter()
        .map(|event| {
            (
                event["action"].as_str().expect("action").to_owned(),
                event["resource"]["id"].as_str().expect("id").to_owned(),
                event["request_id"].as_str().expect("request id").to_owned(),
                event["changes"].clone(),
            )
        })
        .collect();
    let event = |action: &str, resource: &str, request: &str, changes: Value| {
        (
            action.to_owned(),
            resource.to_owned(),
            request.to_owned(),
            changes,
        )
    };
    let created_changes = listed
        .iter()
        .find(|(action, ..)| action == "database.create")
        .map(|(.., changes)| changes.clone())
        .expect("the create is listed");
    let setup_changes = listed
        .iter()
        .find(|(action, ..)| action == "database.setup")
        .map(|(.., changes)| changes.clone())
        .expect("the setup is listed");
    assert_eq!(
        listed,
        vec![
            event("database.delete", &id, "req-delete", json!([])),
            event("database.remove", &setup_id, "req-remove", json!([])),
            event("dashboard.delete", &board_id, "req-board-delete", json!([])),
            event(
                "dashboard.update",
                &board_id,
                "req-board-edit",
                json!(["name"])
            ),
            event(
                "dashboard.create",
                &board_id,
                "req-board",
                json!(["name", "restricted_access", "archived_at", "panels"])
            ),
            event(
                "access_control.update",
                &id,
                "req-policies",
                json!(["data_protection.policies"])
            ),
            event(
                "access_control.update",
                &id,
                "req-permissions",
                json!(["permissions"])
            ),
            event(
                "database.setup",
                &setup_id,
                "req-setup",
                setup_changes.clone()
            ),
            event(
                "database.update",
                &id,
                "req-rotate",
                json!(["name", "credentials[reader].password"])
            ),
            event(
                "database.create",
                &id,
                "req-create",
                created_changes.clone()
            ),
        ]
    );
    for expected in [
        "name",
        "hostname",
        "ssl",
        "ssl_ca_cert",
        "credentials[reader]",
        "credentials[reader].password",
    ] {
        assert!(
            created_changes
                .as_array()
                .unwrap()
                .contains(&json!(expected)),
            "{expected} in {created_changes}"
        );
    }
    assert!(
        setup_changes
            .as_array()
            .unwrap()
            .contains(&json!("credentials[svc].password"))
    );
    for event in &events {
        let resource_kind = if event["action"].as_str().unwrap().starts_with("dashboard") {
            "dashboard"
        } else {
            "database"
        };
        assert_eq!(event["resource"]["kind"], resource_kind, "{event}");
        let actor = if resource_kind == "dashboard" {
            "static access token"
        } else {
            "static API key"
        };
        assert_eq!(
            event["actor"],
            json!({"id": null, "name": actor}),
            "{event}"
        );
        assert!(event["id"].as_str().unwrap().starts_with("evt_"));
        assert!(event["at"].as_str().unwrap().ends_with('Z'));
    }

    let text = call(
        &api,
        Method::GET,
        &format!("{AUDIT}?limit=500"),
        "read",
        &[],
        None,
    )
    .await
    .expect(200)
    .text();
    for secret in passwords.iter().copied().chain([
        API_KEY,
        ACCESS_TOKEN,
        "MIIBaudittrail",
        base64(CA_PEM.as_bytes()).as_str(),
    ]) {
        assert!(
            !text.contains(secret),
            "the audit trail holds a secret: {secret}"
        );
    }
}

/// The trail pages with `limit` and `after` (newest first) and filters by record; `limit` out
/// of range is 422; it takes only full-scope API keys (the suite's protocol cases) and answers
/// only GET: an event cannot be changed or deleted through the API.
pub async fn audit_pages_filters_and_cannot_be_changed(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut ids = Vec::new();
    for n in 0..3 {
        let created = call(
            &api,
            Method::POST,
            DATABASES,
            &format!("req-{n}"),
            &[],
            Some(&crate::minimal_database()),
        )
        .await
        .expect(200);
        ids.push(created.json()["id"].as_str().expect("id").to_owned());
    }
    call(
        &api,
        Method::PATCH,
        &format!("{DATABASES}/{}", ids[0]),
        "req-patch",
        &[],
        Some(&json!({"name": "A"})),
    )
    .await
    .expect(200);
    let all = trail(&api).await;
    assert_eq!(all.len(), 4);
    let first = call(
        &api,
        Method::GET,
        &format!("{AUDIT}?limit=3"),
        "read",
        &[],
        None,
    )
    .await
    .expect(200)
    .json();
    assert_eq!(first["data"].as_array().unwrap()[..], all[..3]);
    let next = first["next"].as_str().expect("a next page").to_owned();
    let rest = call(
        &api,
        Method::GET,
        &format!("{AUDIT}?limit=3&after={next}"),
        "read",
        &[],
        None,
    )
    .await
    .expect(200)
    .json();
    assert_eq!(rest["data"].as_array().unwrap()[..], all[3..]);
    assert_eq!(rest["next"], Value::Null);
    let of_first = call(
        &api,
        Method::GET,
        &format!("{AUDIT}?resource={}", ids[0]),
        "read",
        &[],
        None,
    )
    .await
    .expect(200)
    .json();
    let actions: Vec<&str> = of_first["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["database.update", "database.create"]);
    call(
        &api,
        Method::GET,
        &format!("{AUDIT}?limit=0"),
        "read",
        &[],
        None,
    )
    .await
    .expect(422);
    for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        let refused = call(&api, method, AUDIT, "write", &[], Some(&json!({})))
            .await
            .expect(405);
        assert_eq!(refused.header("allow"), Some("GET"));
    }
    assert_eq!(trail(&api).await, all, "nothing changed the trail");
}

/// The trail filters on the server by database (its own events and its queries'), actor,
/// action and time, all at once; a filter that is not one is 422.
pub async fn audit_filters_by_database_actor_action_and_time(storage: Arc<dyn Storage>) {
    let console = crate::TestConsole::builder(storage)
        .trust_principal(true)
        .build();
    let mut ids = Vec::new();
    for name in ["Filtered one", "Filtered two"] {
        let db = console
            .api
            .create_database(&json!({
                "name": name, "adapter": "postgres", "hostname": "db.internal", "database": "orders",
                "credentials": [{"username": "reader", "password": "pw-filtered"}],
            }))
            .await;
        ids.push((
            db["id"].as_str().unwrap().to_owned(),
            db["credentials"][0]["id"].as_str().unwrap().to_owned(),
        ));
    }
    let ann = dbconsole_core::model::Principal::member("ann@example.com");
    let query = console
        .as_(
            &ann,
            Method::POST,
            "/api/v1/console/queries",
            Some(json!({"database_id": ids[0].0, "credential_id": ids[0].1, "query": "select 1"})),
            None,
        )
        .await
        .expect(200)
        .json();
    let list = |filter: String| {
        let console = &console;
        async move {
            console
                .api
                .db(Method::GET, &format!("{AUDIT}?{filter}"), None)
                .await
                .expect(200)
                .json()["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["action"].as_str().unwrap().to_owned(),
                        e["resource"]["id"].as_str().unwrap().to_owned(),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let one = &ids[0].0;
    let query_id = query["id"].as_str().unwrap().to_owned();
    assert_eq!(
        list(format!("database={one}")).await,
        [
            ("query.create".to_owned(), query_id.clone()),
            ("database.create".to_owned(), one.clone())
        ]
    );
    assert_eq!(
        list("action=query.create".to_owned()).await,
        [("query.create".to_owned(), query_id.clone())]
    );
    assert_eq!(
        list("actor=ann%40example.com".to_owned()).await,
        [("query.create".to_owned(), query_id)]
    );
    assert_eq!(list("action=database.create".to_owned()).await.len(), 2);
    assert!(
        list("since=2999-01-01T00:00:00Z".to_owned())
            .await
            .is_empty()
    );
    assert!(
        list("until=2000-01-01T00:00:00Z".to_owned())
            .await
            .is_empty()
    );
    assert_eq!(
        list(format!(
            "database={one}&action=database.create&since=2000-01-01T00:00:00%2B02:00"
        ))
        .await
        .len(),
        1
    );
    let refused = console
        .api
        .db(
            Method::GET,
            &format!("{AUDIT}?action=nope&since=yesterday"),
            None,
        )
        .await
        .expect(422)
        .json();
    assert!(refused["errors"]["action"].is_array(), "{refused}");
    assert!(refused["errors"]["since"].is_array(), "{refused}");
    let empty = console
        .api
        .db(Method::GET, &format!("{AUDIT}?until=&action="), None)
        .await
        .expect(422)
        .json();
    assert!(
        empty["errors"]["until"].is_array() && empty["errors"]["action"].is_array(),
        "{empty}"
    );
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! audit_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            audit,
            $storage,
            [
                audit_lists_exactly_the_changes_made,
                audit_pages_filters_and_cannot_be_changed,
                audit_filters_by_database_actor_action_and_time,
            ]
        );
    };
}
