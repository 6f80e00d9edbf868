//! Cases of the HTTP suite: saved queries (docs/queries.md, "Saved queries"). A saved query is
//! seen by its author, by a super admin, and by those its sharing names who may query its
//! database (everyone else gets 404, as for a query that does not exist); its author alone
//! changes it; a run of it is a new query that links back to it and holds its parameters'
//! values, which reach the database as bind parameters, never as text; a run on a reviewed
//! credential waits for its reviews like any request; bad bodies change nothing.
//!
//! The queries run through [`BindingRunner`], a stand-in for a database that records the
//! statement and parameters it was sent (the real drivers bind through the same
//! `RunJob::bound`, proven in `run_*.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use dbconsole_core::Storage;
use dbconsole_core::model::{Adapter, Principal, Role};
use dbconsole_core::run::statement::Dialect;
use dbconsole_core::run::{Column, QueryRunner, RowSink, RunError, RunJob, Runners};
use http::Method;
use serde_json::{Value, json};

use crate::{TestConsole, TestResponse};

const SAVED: &str = "/api/v1/console/saved-queries";
const QUERIES: &str = "/api/v1/console/queries";

static NAMES: AtomicUsize = AtomicUsize::new(0);

/// A statement as sent, and its parameters' input keys and values.
type Sent = (String, Vec<(String, Option<String>)>);

/// A runner that answers one row and keeps the last statement and parameters it was sent.
#[derive(Debug, Default)]
pub struct BindingRunner {
    pub(crate) sent: Mutex<Option<Sent>>,
}

#[async_trait::async_trait]
impl QueryRunner for BindingRunner {
    fn catalog(&self) -> &'static str {
        "SELECT 1"
    }

    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        let bound = job.bound(Dialect::Postgres, |n, _| format!("${}", n + 1))?;
        *self.sent.lock().unwrap() = Some((bound.text, bound.params));
        sink.columns(&[Column {
            name: "one".to_owned(),
            type_name: "int4".to_owned(),
            base64: false,
        }]);
        if let Some(row) = sink.row() {
            row.int(1);
            sink.end_row().await.map_err(|_| RunError::Cancelled)?;
        }
        sink.flush().await.map_err(|_| RunError::Cancelled)
    }

    fn evict(&self, _database_id: &str) {}
}

pub(crate) fn console_of(storage: Arc<dyn Storage>) -> (TestConsole, Arc<BindingRunner>) {
    let runner = Arc::new(BindingRunner::default());
    let console = TestConsole::builder(storage)
        .runners(Runners::none().with(Adapter::Postgres, runner.clone()))
        .trust_principal(true)
        .build();
    (console, runner)
}

/// A database whose one credential needs `required` reviews: its id and its credential's.
pub(crate) async fn new_database(console: &TestConsole, required: u32) -> (String, String) {
    let created = console
        .api
        .create_database(&json!({
            "name": format!("Saved {}", NAMES.fetch_add(1, Ordering::Relaxed)),
            "adapter": "postgres",
            "hostname": "db.internal",
            "database": "orders",
            "credentials": [{"username": "reader", "password": "pw-reader-1", "reviews_required": required}],
        }))
        .await;
    (
        created["id"].as_str().unwrap().to_owned(),
        created["credentials"][0]["id"].as_str().unwrap().to_owned(),
    )
}

async fn call(
    console: &TestConsole,
    who: &Principal,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    console.as_(who, method, path, body, None).await
}

pub(crate) fn ann() -> Principal {
    Principal::member("ann@example.com").groups(["analysts"])
}
pub(crate) fn bo() -> Principal {
    Principal::member("bo@example.com").groups(["support"])
}
fn cy() -> Principal {
    Principal::member("cy@example.com").groups(["ops"])
}
pub(crate) fn root() -> Principal {
    Principal::member("root@example.com").role(Role::SuperAdmin)
}

fn names(listed: &Value) -> Vec<String> {
    listed["data"]
        .as_array()
        .expect("a page")
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Shared with a group, a saved query is seen by its members and not by others (404); its
/// author alone changes it; a run of it is a new query with its parameters' values, which the
/// database receives as bind parameters; a share with everyone lets the others see it; a
/// delete leaves its runs in the history. Each write is one event.
pub async fn saved_queries_share_by_group_and_run_with_bound_params(storage: Arc<dyn Storage>) {
    let (console, runner) = console_of(storage);
    let db = new_database(&console, 0).await;
    let created = call(
        &console,
        &cy(),
        Method::POST,
        SAVED,
        Some(json!({
            "name": "Orders of <b>a customer</b>",
            "description": "For support calls",
            "query": "SELECT * FROM orders WHERE customer = ${customer} AND note = '${note}' AND id > ${customer}",
            "database_id": db.0, "credential_id": db.1,
            "tags": ["support", "Support", "orders"],
            "sharing": "groups", "groups": ["Analysts"],
        })),
    )
    .await
    .expect(201)
    .json();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("sq_"), "{id}");
    assert_eq!(created["params"], json!(["customer", "note"]));
    assert_eq!(created["tags"], json!(["support", "orders"]));
    assert_eq!(
        (
            created["sharing"].clone(),
            created["groups"].clone(),
            created["mine"].clone()
        ),
        (json!("groups"), json!(["analysts"]), json!(true))
    );
    let path = format!("{SAVED}/{id}");

    let seen = call(&console, &ann(), Method::GET, &path, None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        (seen["name"].clone(), seen["mine"].clone()),
        (created["name"].clone(), json!(false))
    );
    call(&console, &bo(), Method::GET, &path, None)
        .await
        .expect(404);
    assert!(
        names(
            &call(&console, &bo(), Method::GET, SAVED, None)
                .await
                .expect(200)
                .json()
        )
        .is_empty()
    );
    assert_eq!(
        names(
            &call(
                &console,
                &ann(),
                Method::GET,
                &format!("{SAVED}?search=SUPPORT%20calls"),
                None
            )
            .await
            .expect(200)
            .json()
        ),
        ["Orders of <b>a customer</b>"]
    );
    assert!(
        names(
            &call(
                &console,
                &ann(),
                Method::GET,
                &format!("{SAVED}?search=refunds"),
                None
            )
            .await
            .expect(200)
            .json()
        )
        .is_empty()
    );
    assert_eq!(
        names(
            &call(
                &console,
                &ann(),
                Method::GET,
                &format!("{SAVED}?tag=ORDERS"),
                None
            )
            .await
            .expect(200)
            .json()
        )
        .len(),
        1
    );
    assert_eq!(
        names(
            &call(&console, &root(), Method::GET, SAVED, None)
                .await
                .expect(200)
                .json()
        )
        .len(),
        1,
        "a super admin sees every one"
    );

    // Only its author changes it; one it is not shared with is not there to delete.
    call(
        &console,
        &ann(),
        Method::PATCH,
        &path,
        Some(json!({"name": "Mine now"})),
    )
    .await
    .expect(403);
    call(&console, &bo(), Method::DELETE, &path, None)
        .await
        .expect(404);
    call(
        &console,
        &bo(),
        Method::POST,
        &format!("{path}/queries"),
        Some(json!({"params": {"customer": 1, "note": "x"}})),
    )
    .await
    .expect(404);

    // A run needs every parameter, and no other; a refused one stores nothing.
    let refused = call(
        &console,
        &ann(),
        Method::POST,
        &format!("{path}/queries"),
        Some(json!({"params": {"customer": 7, "other": 1}})),
    )
    .await
    .expect(422)
    .json();
    assert!(
        refused["errors"]["params.note"].is_array() && refused["errors"]["params.other"].is_array(),
        "{refused}"
    );
    let history = call(&console, &ann(), Method::GET, QUERIES, None)
        .await
        .expect(200)
        .json();
    assert_eq!(history["data"], json!([]));

    let hostile = "x'; DROP TABLE orders; --";
    let query = call(
        &console,
        &ann(),
        Method::POST,
        &format!("{path}/queries"),
        Some(json!({"params": {"customer": 7, "note": hostile}, "limit": 5})),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(
        (
            query["saved_query_id"].clone(),
            query["status"].clone(),
            query["title"].clone(),
            query["author"].clone(),
            query["limit"].clone()
        ),
        (
            json!(id),
            json!("ready"),
            created["name"].clone(),
            json!("ann@example.com"),
            json!(5)
        )
    );
    assert_eq!(
        query["params"],
        json!([{"name": "customer", "value": "7"}, {"name": "note", "value": hostile}])
    );
    let qid = query["id"].as_str().unwrap();
    let ran = call(
        &console,
        &ann(),
        Method::POST,
        &format!("{QUERIES}/{qid}/run"),
        None,
    )
    .await
    .expect(200);
    assert!(ran.text().contains("\"one\""), "{}", ran.text());
    let sent = runner.sent.lock().unwrap().clone().expect("the runner ran");
    assert_eq!(
        sent,
        (
            "SELECT * FROM orders WHERE customer = $1 AND note = $2 AND id > $3".to_owned(),
            vec![
                ("customer".to_owned(), Some("7".to_owned())),
                ("note".to_owned(), Some(hostile.to_owned())),
                ("customer".to_owned(), Some("7".to_owned())),
            ]
        ),
        "the values go as parameters, never into the text"
    );

    // Shared with everyone who may query the database, the others see it too.
    let shared = call(
        &console,
        &cy(),
        Method::PATCH,
        &path,
        Some(json!({"sharing": "database", "name": "  Orders  "})),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(
        (
            shared["sharing"].clone(),
            shared["groups"].clone(),
            shared["name"].clone()
        ),
        (json!("database"), json!([]), json!("Orders"))
    );
    call(&console, &bo(), Method::GET, &path, None)
        .await
        .expect(200);
    call(&console, &bo(), Method::DELETE, &path, None)
        .await
        .expect(403);
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
    let actions: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["saved_query.update", "saved_query.create"]);
    assert_eq!(events["data"][0]["changes"], json!(["name", "sharing"]));

    call(&console, &cy(), Method::DELETE, &path, None)
        .await
        .expect(200);
    call(&console, &cy(), Method::GET, &path, None)
        .await
        .expect(404);
    let kept = call(
        &console,
        &ann(),
        Method::GET,
        &format!("{QUERIES}/{qid}"),
        None,
    )
    .await
    .expect(200)
    .json();
    assert_eq!(
        kept["saved_query_id"],
        json!(id),
        "its runs stay, with their link"
    );
}

/// A run of a saved query on a reviewed credential is a request for review with the saved
/// query's name for its title; other values are another request, reviewed on its own.
pub async fn saved_queries_runs_on_a_reviewed_credential_wait_for_reviews(
    storage: Arc<dyn Storage>,
) {
    let (console, runner) = console_of(storage);
    let db = new_database(&console, 1).await;
    let created = call(
        &console,
        &ann(),
        Method::POST,
        SAVED,
        Some(json!({"name": "Refund", "query": "UPDATE orders SET refunded = true WHERE id = ${id}", "database_id": db.0, "credential_id": db.1, "sharing": "database"})),
    )
    .await
    .expect(201)
    .json();
    let path = format!("{SAVED}/{}/queries", created["id"].as_str().unwrap());
    let first = call(
        &console,
        &ann(),
        Method::POST,
        &path,
        Some(json!({"params": {"id": 1}})),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(
        (first["status"].clone(), first["title"].clone()),
        (json!("awaiting_review"), json!("Refund"))
    );
    assert!(
        first["description"].as_str().unwrap().contains("Refund"),
        "{first}"
    );
    let qid = first["id"].as_str().unwrap();
    call(
        &console,
        &ann(),
        Method::POST,
        &format!("{QUERIES}/{qid}/run"),
        None,
    )
    .await
    .expect(409);
    let second = call(
        &console,
        &ann(),
        Method::POST,
        &path,
        Some(json!({"params": {"id": 2}})),
    )
    .await
    .expect(200)
    .json();
    assert_ne!(second["id"], first["id"], "other values are a new request");
    call(
        &console,
        &bo(),
        Method::POST,
        &format!("{QUERIES}/{qid}/reviews"),
        Some(json!({"decision": "approve"})),
    )
    .await
    .expect(200);
    call(
        &console,
        &ann(),
        Method::POST,
        &format!("{QUERIES}/{qid}/run"),
        None,
    )
    .await
    .expect(200);
    assert_eq!(
        runner.sent.lock().unwrap().clone().unwrap().1,
        [("id".to_owned(), Some("1".to_owned()))]
    );
    let other = second["id"].as_str().unwrap();
    call(
        &console,
        &ann(),
        Method::POST,
        &format!("{QUERIES}/{other}/run"),
        None,
    )
    .await
    .expect(409);
}

/// Bad bodies get 422 naming each field, an AI agent 403, and none stores anything.
pub async fn saved_queries_bad_bodies_change_nothing(storage: Arc<dyn Storage>) {
    let (console, _) = console_of(storage);
    let db = new_database(&console, 0).await;
    let other = new_database(&console, 0).await;
    let base =
        json!({"name": "N", "query": "SELECT 1", "database_id": db.0, "credential_id": db.1});
    let with = |extra: Value| {
        let mut body = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    for (body, field) in [
        (json!({}), "name"),
        (with(json!({"name": "  "})), "name"),
        (with(json!({"query": ""})), "query"),
        (with(json!({"sharing": "world"})), "sharing"),
        (with(json!({"sharing": "groups"})), "groups"),
        (
            with(json!({"sharing": "author", "groups": ["a"]})),
            "groups",
        ),
        (with(json!({"tags": "growth"})), "tags"),
        (with(json!({"database_id": "db_missing"})), "database_id"),
        (with(json!({"credential_id": other.1})), "credential_id"),
        (with(json!({"query": "SELECT ${x"})), "query"),
        (with(json!({"query": "SELECT 1; SELECT 2"})), "query"),
        (with(json!({"query": "SELECT 'a ${x} b'"})), "query"),
        (with(json!({"name": "x".repeat(201)})), "name"),
    ] {
        let refused = call(&console, &ann(), Method::POST, SAVED, Some(body.clone()))
            .await
            .expect(422)
            .json();
        assert!(refused["errors"][field].is_array(), "{body} → {refused}");
    }
    let agent = Principal {
        agent: true,
        ..ann()
    };
    call(&console, &agent, Method::POST, SAVED, Some(base.clone()))
        .await
        .expect(403);
    assert!(
        names(
            &call(&console, &root(), Method::GET, SAVED, None)
                .await
                .expect(200)
                .json()
        )
        .is_empty(),
        "nothing stored"
    );
    let saved = call(&console, &ann(), Method::POST, SAVED, Some(base.clone()))
        .await
        .expect(201)
        .json();
    let path = format!("{SAVED}/{}", saved["id"].as_str().unwrap());
    call(
        &console,
        &ann(),
        Method::PATCH,
        &path,
        Some(json!({"name": ""})),
    )
    .await
    .expect(422);
    call(
        &console,
        &ann(),
        Method::PATCH,
        &path,
        Some(json!({"credential_id": other.1})),
    )
    .await
    .expect(422);
    let after = call(&console, &ann(), Method::GET, &path, None)
        .await
        .expect(200)
        .json();
    assert_eq!(after, saved, "a refused change changes nothing");
    call(
        &console,
        &ann(),
        Method::GET,
        &format!("{SAVED}/sq_missing"),
        None,
    )
    .await
    .expect(404);
}

/// Expands to one test per saved-query case over fresh stores made by `$storage`.
#[macro_export]
macro_rules! saved_query_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            saved_queries,
            $storage,
            [
                saved_queries_share_by_group_and_run_with_bound_params,
                saved_queries_runs_on_a_reviewed_credential_wait_for_reviews,
                saved_queries_bad_bodies_change_nothing,
            ]
        );
    };
}
