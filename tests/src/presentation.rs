//! Cases of the HTTP suite: a dashboard's presentation document and who edits dashboards
//! (docs/dashboards.md). The interface's operations neither show nor change the document, so
//! the DevHub Terraform provider's flows (create, read, update through the compatibility path
//! with the fields its Go model has, never `actions`) leave it as it was; a panel or input an
//! update removes loses its entries; people who are not super admins edit the dashboards they
//! are editors of, and only with panels on credentials they may run; typed inputs and the time
//! range reach the database as bind parameters (NULL for an optional blank one).

use std::sync::Arc;

use dbconsole_core::Storage;
use dbconsole_core::model::Principal;
use http::Method;
use serde_json::{Value, json};

use crate::databases::sorted_keys;
use crate::saved_queries::{ann, bo, console_of, new_database, root};
use crate::{TestConsole, TestResponse};

const COMPAT: &str = "/api/v1/dashboards";
const V1: &str = "/v1/dashboards";

/// Asserts that a dashboard answer carries exactly the interface's keys, at every level.
#[track_caller]
fn assert_interface_keys(dashboard: &Value) {
    assert_eq!(
        sorted_keys(dashboard),
        ["id", "name", "panels", "restricted_access"]
    );
    for panel in dashboard["panels"].as_array().unwrap() {
        assert_eq!(
            sorted_keys(panel),
            ["actions", "details", "id", "inputs", "title"]
        );
        for action in panel["actions"].as_array().unwrap() {
            assert_eq!(
                sorted_keys(action),
                ["id", "input_mappings", "label", "workflow_id"]
            );
        }
    }
}

async fn as_(
    console: &TestConsole,
    who: &Principal,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    console.as_(who, method, path, body, None).await
}

/// The provider's panel as its Go model marshals it: no `actions` key.
fn provider_panel(id: &Value, title: &str, credential: &str, inputs: Value) -> Value {
    json!({
        "id": id,
        "title": title,
        "inputs": inputs,
        "details": {"__type__": "query", "query": "select status, count(*) as n from orders where day > ${since} group by status", "credential_id": credential},
    })
}

/// The provider's flows (create, read, update, read) on the compatibility path keep the
/// presentation document as it was, ETag and all, and its answers keep exactly their keys; an
/// update that removes a panel and an input removes their entries (and moves the document's
/// ETag); a stale `If-Match` on the document is 412 and a bad document 422, changing nothing.
pub async fn presentation_survives_the_terraform_provider(storage: Arc<dyn Storage>) {
    let (console, _runner) = console_of(storage);
    let db = new_database(&console, 0).await;
    let since = json!([{"key": "since", "description": "From"}]);
    let created = console
        .api
        .db(
            Method::POST,
            COMPAT,
            Some(&json!({
                "id": "",
                "name": "Orders",
                "restricted_access": false,
                "panels": [provider_panel(&json!(""), "By status", &db.1, since.clone()),
                           provider_panel(&json!(""), "Second", &db.1, json!([]))],
            })),
        )
        .await
        .expect(200)
        .json();
    assert_interface_keys(&created);
    let id = created["id"].as_str().unwrap().to_owned();
    let (first, second) = (
        created["panels"][0]["id"].clone(),
        created["panels"][1]["id"].clone(),
    );
    let doc_path = format!("{V1}/{id}/presentation");
    let empty = as_(&console, &root(), Method::GET, &doc_path, None)
        .await
        .expect(200);
    assert_eq!(
        empty.json(),
        json!({"editors": [], "viewers": [], "panels": {}, "inputs": {}}),
        "a dashboard made by a key names no editor"
    );
    let document = json!({
        "editors": [{"kind": "user", "name": "ann@example.com"}],
        "viewers": [{"kind": "group", "name": "support"}],
        "time_range": "30d",
        "panels": {
            (first.as_str().unwrap()): {"display": {"kind": "bar", "x": "status", "series": ["n"]},
                                        "layout": {"x": 0, "y": 0, "w": 6, "h": 4}},
            (second.as_str().unwrap()): {"layout": {"x": 6, "y": 0, "w": 6, "h": 4}},
        },
        "inputs": {"since": {"type": "date", "default": "2026-01-01"}},
    });
    let put = as_(
        &console,
        &root(),
        Method::PUT,
        &doc_path,
        Some(document.clone()),
    )
    .await
    .expect(200);
    assert_eq!(
        put.json(),
        document,
        "the document reads back as it was put"
    );
    let etag = put.header("etag").expect("an ETag").to_owned();

    // The provider reads and applies: the document stays, ETag and all.
    let compat_path = format!("{COMPAT}/{id}");
    let read = console
        .api
        .db(Method::GET, &compat_path, None)
        .await
        .expect(200)
        .json();
    assert_interface_keys(&read);
    let applied = console
        .api
        .db(
            Method::PATCH,
            &compat_path,
            Some(&json!({
                "id": id, "name": "Orders, renamed", "restricted_access": false,
                "panels": [provider_panel(&first, "By status", &db.1, since.clone()),
                           provider_panel(&second, "Second", &db.1, json!([]))],
            })),
        )
        .await
        .expect(200)
        .json();
    assert_interface_keys(&applied);
    assert_eq!(applied["name"], "Orders, renamed");
    let after = as_(&console, &root(), Method::GET, &doc_path, None)
        .await
        .expect(200);
    assert_eq!(
        after.json(),
        document,
        "an apply leaves the document as it was"
    );
    assert_eq!(after.header("etag"), Some(etag.as_str()));
    // Also on the dashboards' own path, with the interface's PUT.
    let put_dash = console
        .api
        .dash(
            Method::PUT,
            &format!("{V1}/{id}"),
            Some(&json!({"name": "Orders"})),
        )
        .await
        .expect(200)
        .json();
    assert_interface_keys(&put_dash);
    let after = as_(&console, &root(), Method::GET, &doc_path, None)
        .await
        .expect(200);
    assert_eq!(after.json(), document);

    // A stale If-Match and a bad document change nothing.
    let stale = console
        .as_(&root(), Method::PUT, &doc_path, Some(json!({})), None)
        .await
        .expect(200)
        .header("etag")
        .unwrap()
        .to_owned();
    as_(
        &console,
        &root(),
        Method::PUT,
        &doc_path,
        Some(document.clone()),
    )
    .await
    .expect(200);
    let mut request = http::Request::builder()
        .method(Method::PUT)
        .uri(&doc_path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header("if-match", &stale)
        .body(http_body_util::Full::new(bytes::Bytes::from("{}")))
        .unwrap();
    request.extensions_mut().insert(root());
    console.api.send(request).await.expect(412);
    for (bad, field) in [
        (
            json!({"panels": {"pl_elsewhere": {}}}),
            "panels.pl_elsewhere",
        ),
        (
            json!({"panels": {(first.as_str().unwrap()): {"layout": {"x": 8, "y": 0, "w": 6, "h": 1}}}}),
            "x",
        ),
        (
            json!({"inputs": {"since": {"type": "date", "default": "yesterday"}}}),
            "default",
        ),
        (json!({"inputs": {"since": {"type": "choice"}}}), "choices"),
        (
            json!({"panels": {(first.as_str().unwrap()): {"display": {"kind": "radar"}}}}),
            "kind",
        ),
        (json!({"time_range": "forever"}), "time_range"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let refused = as_(&console, &root(), Method::PUT, &doc_path, Some(bad.clone()))
            .await
            .expect(422)
            .text();
        assert!(refused.contains(field), "{bad}: {refused}");
    }
    assert_eq!(
        as_(&console, &root(), Method::GET, &doc_path, None)
            .await
            .expect(200)
            .json(),
        document
    );

    // An update that removes the second panel and the input removes their entries.
    let pruned = console
        .api
        .db(
            Method::PATCH,
            &compat_path,
            Some(&json!({"panels": [provider_panel(&first, "By status", &db.1, json!([]))]})),
        )
        .await
        .expect(200)
        .json();
    assert_interface_keys(&pruned);
    let after = as_(&console, &root(), Method::GET, &doc_path, None)
        .await
        .expect(200);
    let doc = after.json();
    assert_eq!(sorted_keys(&doc["panels"]), [first.as_str().unwrap()]);
    assert_eq!(doc["inputs"], json!({}));
    assert_eq!(doc["editors"], document["editors"], "who edits stays");
    assert_ne!(
        after.header("etag"),
        Some(etag.as_str()),
        "the document changed"
    );
}

/// A person who may query a database makes a dashboard and is its first editor; another
/// person is refused on it (403) until an editor names them; an editor saves panels only on
/// credentials they may run (422 for one that needs reviews, 403 on a database they may not
/// query), while a panel someone else made stays as it was; a restricted dashboard shows to its
/// viewers; agents make none; the audit trail names who changed what.
pub async fn people_edit_the_dashboards_they_are_editors_of(storage: Arc<dyn Storage>) {
    let (console, _runner) = console_of(storage);
    let open = new_database(&console, 0).await;
    let reviewed = new_database(&console, 1).await;
    let closed = console
        .api
        .create_database(&json!({
            "name": format!("Closed {}", dbconsole_core::model::DeliveryId::generate()),
            "adapter": "postgres", "hostname": "db.internal", "database": "hr",
            "restrict_access": true,
            "credentials": [{"username": "hr", "password": "pw-hr-1"}],
        }))
        .await;
    let closed_credential = closed["credentials"][0]["id"].as_str().unwrap().to_owned();
    let panel = |title: &str, credential: &str| json!({"title": title, "details": {"__type__": "query", "query": "select 1", "credential_id": credential}});
    let created = as_(
        &console,
        &ann(),
        Method::POST,
        V1,
        Some(
            json!({"name": "Ann's", "restricted_access": true, "panels": [panel("Mine", &open.1)]}),
        ),
    )
    .await
    .expect(200)
    .json();
    assert_interface_keys(&created);
    let id = created["id"].as_str().unwrap().to_owned();
    let path = format!("{V1}/{id}");
    let doc_path = format!("{path}/presentation");
    let doc = as_(&console, &ann(), Method::GET, &doc_path, None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        doc["editors"],
        json!([{"kind": "user", "name": "ann@example.com"}])
    );

    // Ann edits hers; her panels must be on credentials she may run.
    as_(
        &console,
        &ann(),
        Method::PUT,
        &path,
        Some(json!({"name": "Ann's board"})),
    )
    .await
    .expect(200);
    let refused = as_(
        &console,
        &ann(),
        Method::PUT,
        &path,
        Some(json!({"panels": [panel("Reviewed", &reviewed.1)]})),
    )
    .await
    .expect(422)
    .text();
    assert!(refused.contains("reviews"), "{refused}");
    as_(
        &console,
        &ann(),
        Method::PUT,
        &path,
        Some(json!({"panels": [panel("HR", &closed_credential)]})),
    )
    .await
    .expect(403);
    as_(&console, &ann(), Method::POST, V1,
        Some(json!({"name": "x", "restricted_access": false, "panels": [panel("HR", &closed_credential)]}))).await.expect(403);
    let mut agent = ann();
    agent.agent = true;
    as_(
        &console,
        &agent,
        Method::POST,
        V1,
        Some(json!({"name": "x", "restricted_access": false})),
    )
    .await
    .expect(403);

    // Bo may query the open database but is no editor of Ann's dashboard, nor a viewer.
    as_(&console, &bo(), Method::GET, &path, None)
        .await
        .expect(200);
    as_(
        &console,
        &bo(),
        Method::PUT,
        &path,
        Some(json!({"name": "Bo's now"})),
    )
    .await
    .expect(403);
    as_(&console, &bo(), Method::PUT, &doc_path, Some(json!({})))
        .await
        .expect(403);
    as_(&console, &bo(), Method::DELETE, &path, None)
        .await
        .expect(403);

    // A super admin adds an HR panel; Ann may still rename the dashboard, which keeps it.
    let with_hr = as_(
        &console,
        &root(),
        Method::PUT,
        &path,
        Some(json!({"panels": [created["panels"][0].clone(), panel("HR", &closed_credential)]})),
    )
    .await
    .expect(200)
    .json();
    let kept_panels = with_hr["panels"].clone();
    let renamed = as_(
        &console,
        &ann(),
        Method::PUT,
        &path,
        Some(json!({"name": "Ann's, with HR", "panels": kept_panels.clone()})),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(renamed["panels"], kept_panels);
    // Bo sees the restricted dashboard only once he is a viewer (he can't query HR).
    as_(&console, &bo(), Method::GET, &path, None)
        .await
        .expect(403);
    let mut named = as_(&console, &ann(), Method::GET, &doc_path, None)
        .await
        .expect(200)
        .json();
    named["viewers"] = json!([{"kind": "group", "name": "Support"}]);
    as_(
        &console,
        &ann(),
        Method::PUT,
        &doc_path,
        Some(named.clone()),
    )
    .await
    .expect(200);
    as_(&console, &bo(), Method::GET, &path, None)
        .await
        .expect(200);
    as_(
        &console,
        &bo(),
        Method::PUT,
        &path,
        Some(json!({"name": "Bo's now"})),
    )
    .await
    .expect(403);
    // Made an editor, he changes it.
    named["editors"] = json!([{"kind": "user", "name": "ann@example.com"}, {"kind": "user", "name": "BO@example.com"}]);
    as_(&console, &ann(), Method::PUT, &doc_path, Some(named))
        .await
        .expect(200);
    as_(
        &console,
        &bo(),
        Method::PUT,
        &path,
        Some(json!({"name": "Bo's now"})),
    )
    .await
    .expect(200);

    // The audit trail says who changed what.
    let events = console
        .api
        .db(
            Method::GET,
            &format!("/api/v1/console/audit?resource={id}"),
            None,
        )
        .await
        .expect(200)
        .json();
    let events = events["data"].as_array().unwrap();
    let by = |actor: &str, change: &str| {
        events.iter().any(|e| {
            e["actor"].to_string().contains(actor)
                && e["changes"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c == change))
        })
    };
    assert!(by("ann@example.com", "presentation.editors"), "{events:?}");
    assert!(by("ann@example.com", "presentation.viewers"), "{events:?}");
    assert!(by("bo@example.com", "name"), "{events:?}");
    as_(&console, &bo(), Method::DELETE, &path, None)
        .await
        .expect(200);
}

/// Typed inputs and the time range go to the database as bind parameters: a date as it is
/// written, an optional blank choice as NULL, a default for one left out, `__from` and `__to`
/// as times; a bad value is 422 on its field. A choice input's values come from its list, or
/// its query run as its credential.
pub async fn typed_inputs_and_the_time_range_bind_as_parameters(storage: Arc<dyn Storage>) {
    let (console, runner) = console_of(storage);
    let db = new_database(&console, 0).await;
    let created = console
        .api
        .dash(
            Method::POST,
            V1,
            Some(&json!({"name": "Typed", "restricted_access": false, "panels": [{
                "title": "Orders",
                "inputs": [{"key": "since", "description": ""}, {"key": "status", "description": ""}],
                "details": {"__type__": "query", "credential_id": db.1,
                    "query": "SELECT * FROM orders WHERE day > ${since} AND status = ${status} AND at BETWEEN ${__from} AND ${__to}"},
            }]})),
        )
        .await
        .expect(200)
        .json();
    let id = created["id"].as_str().unwrap();
    let run = format!(
        "{V1}/{id}/panels/{}/run",
        created["panels"][0]["id"].as_str().unwrap()
    );
    as_(
        &console,
        &root(),
        Method::PUT,
        &format!("{V1}/{id}/presentation"),
        Some(json!({
            "inputs": {
                "since": {"type": "date", "default": "2026-01-01"},
                "status": {"type": "choice", "required": false, "choices": ["paid", "new'; --"]},
            }
        })),
    )
    .await
    .expect(200);
    as_(
        &console,
        &ann(),
        Method::POST,
        &run,
        Some(json!({
            "inputs": {"status": ""},
            "time_range": {"from": "2026-12-01T00:00:00Z", "to": "2026-12-02T12:30:00+01:00"},
        })),
    )
    .await
    .expect(200);
    let sent = runner.sent.lock().unwrap().clone().expect("the runner ran");
    assert_eq!(
        sent,
        (
            "SELECT * FROM orders WHERE day > $1 AND status = $2 AND at BETWEEN $3 AND $4"
                .to_owned(),
            vec![
                ("since".to_owned(), Some("2026-01-01".to_owned())),
                ("status".to_owned(), None),
                (
                    "__from".to_owned(),
                    Some("2026-12-01T00:00:00.000000Z".to_owned())
                ),
                (
                    "__to".to_owned(),
                    Some("2026-12-02T11:30:00.000000Z".to_owned())
                ),
            ]
        )
    );
    as_(
        &console,
        &ann(),
        Method::POST,
        &run,
        Some(json!({"inputs": {"since": "2026-02-03", "status": "new'; --"}})),
    )
    .await
    .expect(200);
    let sent = runner.sent.lock().unwrap().clone().unwrap();
    assert_eq!(
        sent.1[1],
        ("status".to_owned(), Some("new'; --".to_owned()))
    );
    let refused = as_(
        &console,
        &ann(),
        Method::POST,
        &run,
        Some(json!({
            "inputs": {"since": "03/02/2026", "status": "lost"},
            "time_range": {"from": "2026-12-02T00:00:00Z", "to": "2026-12-01T00:00:00Z"},
        })),
    )
    .await
    .expect(422)
    .json();
    for field in ["inputs.since", "inputs.status", "time_range.to"] {
        assert!(refused["errors"][field].is_array(), "{field}: {refused}");
    }
    // Reserved keys.
    let reserved = console
        .api
        .dash(
            Method::PUT,
            &format!("{V1}/{id}"),
            Some(&json!({"panels": [{
            "title": "x", "inputs": [{"key": "__from", "description": ""}],
            "details": {"__type__": "query", "query": "select 1", "credential_id": db.1}}]})),
        )
        .await
        .expect(422)
        .text();
    assert!(reserved.contains("reserved"), "{reserved}");

    // Choices: the fixed list, and a query's first column.
    let choices = as_(
        &console,
        &ann(),
        Method::GET,
        &format!("{V1}/{id}/inputs/status/choices"),
        None,
    )
    .await
    .expect(200)
    .json();
    assert_eq!(choices["choices"], json!(["paid", "new'; --"]));
    as_(&console, &root(), Method::PUT, &format!("{V1}/{id}/presentation"), Some(json!({
        "inputs": {"status": {"type": "choice", "choices_query": {"query": "SELECT DISTINCT status FROM orders", "credential_id": db.1}}}
    })))
    .await
    .expect(200);
    let choices = as_(
        &console,
        &ann(),
        Method::GET,
        &format!("{V1}/{id}/inputs/status/choices"),
        None,
    )
    .await
    .expect(200)
    .json();
    assert_eq!(choices["choices"], json!(["1"]), "the runner's one row");
    assert_eq!(
        runner.sent.lock().unwrap().clone().unwrap().0,
        "SELECT DISTINCT status FROM orders"
    );
    as_(
        &console,
        &ann(),
        Method::GET,
        &format!("{V1}/{id}/inputs/since/choices"),
        None,
    )
    .await
    .expect(404);
}

#[macro_export]
#[doc(hidden)]
macro_rules! presentation_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            presentation,
            $storage,
            [
                presentation_survives_the_terraform_provider,
                people_edit_the_dashboards_they_are_editors_of,
                typed_inputs_and_the_time_range_bind_as_parameters,
            ]
        );
    };
}
