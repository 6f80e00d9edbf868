//! Cases of the HTTP suite: reviews (docs/queries.md, "Reviews"). A query on a credential with
//! `reviews_required` above 0 waits for that many approvals, counted against the requirement
//! as it is when the query runs; an author never reviews their own query, one reviewer counts
//! once, a rejection stops the query; only those with `review` or `admin` access review on a
//! restricted database; `reviewer=me` lists what a reviewer can act on; a super admin may run
//! their own query without its approvals only as docs/queries.md, "Reviews" says, and the bypass is
//! recorded on the query and in the audit trail.
//!
//! The queries run through [`CountingRunner`], a stand-in for a database that answers one row
//! and counts its runs: the rules are the service's, whatever runs the statement (the real
//! drivers are proven in `run_*.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use dbconsole_core::Storage;
use dbconsole_core::model::{Adapter, Principal, QueryStatus, Role};
use dbconsole_core::run::{Column, QueryRunner, RowSink, RunError, RunJob, Runners};
use http::{Method, Request, header};
use http_body_util::Full;
use serde_json::{Value, json};

use crate::{DATABASES, TestConsole, TestResponse, eventually};

const QUERIES: &str = "/api/v1/console/queries";

/// Numbers the databases a test makes (names are unique).
static NAMES: AtomicUsize = AtomicUsize::new(0);

/// A runner that answers one row (`ran`: how many runs it made so far) and counts its runs,
/// and those it was asked to make read-only.
#[derive(Debug, Default)]
pub struct CountingRunner {
    runs: AtomicUsize,
    read_only: AtomicUsize,
    last_max_rows: std::sync::atomic::AtomicU64,
}

impl CountingRunner {
    /// How many statements it ran.
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// The row cap of the last run.
    pub fn last_max_rows(&self) -> u64 {
        self.last_max_rows.load(Ordering::SeqCst)
    }

    /// How many of them it was asked to run read-only.
    pub fn read_only_runs(&self) -> usize {
        self.read_only.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl QueryRunner for CountingRunner {
    fn catalog(&self) -> &'static str {
        "SELECT 1"
    }

    async fn run(&self, job: RunJob, sink: &mut RowSink) -> Result<(), RunError> {
        let ran = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        self.last_max_rows.store(job.max_rows, Ordering::SeqCst);
        if job.pool.read_only {
            self.read_only.fetch_add(1, Ordering::SeqCst);
        }
        sink.columns(&[Column {
            name: "ran".to_owned(),
            type_name: "int8".to_owned(),
            base64: false,
        }]);
        if let Some(row) = sink.row() {
            row.int(ran as i64);
            sink.end_row().await.map_err(|_| RunError::Cancelled)?;
        }
        sink.flush().await.map_err(|_| RunError::Cancelled)
    }

    fn evict(&self, _database_id: &str) {}
}

/// The console over `storage` with a [`CountingRunner`] for PostgreSQL databases, trusting the
/// principal of each request (as an application that mounts it behind its own login); and the
/// runner.
fn reviewing_console(storage: Arc<dyn Storage>) -> (TestConsole, Arc<CountingRunner>) {
    let runner = Arc::new(CountingRunner::default());
    let runners = Runners::none().with(Adapter::Postgres, runner.clone());
    let console = TestConsole::builder(storage)
        .runners(runners)
        .trust_principal(true)
        .build();
    (console, runner)
}

/// A database (the management API, with the API key) whose one credential requires
/// `required` reviews; its id and its credential's id.
async fn new_database(console: &TestConsole, required: u32, extra: Value) -> (String, String) {
    let mut body = json!({
        "name": format!("Reviewed {}", NAMES.fetch_add(1, Ordering::Relaxed)),
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "reader", "password": "pw-reader-1", "reviews_required": required, "ai_allowed": true}],
    });
    for (key, value) in extra.as_object().expect("an object") {
        body[key] = value.clone();
    }
    let created = console.api.create_database(&body).await;
    (
        created["id"].as_str().unwrap().to_owned(),
        created["credentials"][0]["id"].as_str().unwrap().to_owned(),
    )
}

/// A query by `author`, with its title and description: its answer (200 asserted).
async fn new_query(console: &TestConsole, author: &Principal, db: &(String, String)) -> Value {
    console
        .as_(
            author,
            Method::POST,
            QUERIES,
            Some(json!({
                "database_id": db.0, "credential_id": db.1, "query": "SELECT 1",
                "title": "The one", "description": "For the count.",
            })),
            None,
        )
        .await
        .expect(200)
        .json()
}

/// Comments `text` on query `id` as `principal`.
async fn comment(
    console: &TestConsole,
    principal: &Principal,
    id: &str,
    text: &str,
) -> TestResponse {
    console
        .as_(
            principal,
            Method::POST,
            &format!("{QUERIES}/{id}/comments"),
            Some(json!({"text": text})),
            None,
        )
        .await
}

/// Changes query `id` as `principal`, with `body`.
async fn edit(console: &TestConsole, principal: &Principal, id: &str, body: Value) -> TestResponse {
    console
        .as_(
            principal,
            Method::PATCH,
            &format!("{QUERIES}/{id}"),
            Some(body),
            None,
        )
        .await
}

async fn review(
    console: &TestConsole,
    reviewer: &Principal,
    id: &str,
    decision: &str,
    comment: Option<&str>,
) -> TestResponse {
    let mut body = json!({"decision": decision});
    if let Some(comment) = comment {
        body["comment"] = json!(comment);
    }
    console
        .as_(
            reviewer,
            Method::POST,
            &format!("{QUERIES}/{id}/reviews"),
            Some(body),
            None,
        )
        .await
}

/// Runs query `id` as `principal`, with `body` (a bypass).
async fn run_with(
    console: &TestConsole,
    principal: &Principal,
    id: &str,
    body: Option<Value>,
) -> TestResponse {
    console
        .as_(
            principal,
            Method::POST,
            &format!("{QUERIES}/{id}/run"),
            body,
            None,
        )
        .await
}

/// Changes database `db` (the management API, with the API key): 200 asserted.
async fn patch_database(console: &TestConsole, db: &(String, String), body: Value) {
    console
        .api
        .db(Method::PATCH, &format!("{DATABASES}/{}", db.0), Some(&body))
        .await
        .expect(200);
}

async fn get(console: &TestConsole, principal: &Principal, id: &str) -> Value {
    console
        .as_(
            principal,
            Method::GET,
            &format!("{QUERIES}/{id}"),
            None,
            None,
        )
        .await
        .expect(200)
        .json()
}

/// The actions of the audit trail of query `id`, oldest first.
async fn actions(console: &TestConsole, id: &str) -> Vec<String> {
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
    let mut actions: Vec<String> = events["data"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    actions.reverse();
    actions
}

fn ann() -> Principal {
    Principal::member("ann@example.com").groups(["analysts"])
}
fn bo() -> Principal {
    Principal::member("bo@example.com").groups(["reviewers"])
}
fn cy() -> Principal {
    Principal::member("cy@example.com").groups(["reviewers"])
}
fn root() -> Principal {
    Principal::member("root@example.com").role(Role::SuperAdmin)
}

fn detail(response: &TestResponse) -> String {
    response.json()["errors"]["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A query's status, revision and approvals.
fn standing(query: &Value) -> (Value, Value, Value) {
    (
        query["status"].clone(),
        query["revision"].clone(),
        query["approvals"].clone(),
    )
}

fn id_of(query: &Value) -> String {
    query["id"].as_str().expect("an id").to_owned()
}

/// Approvals make the query ready once they reach `reviews_required`; until then a run is 409
/// saying how many it has; the author's own review is 403, a second review by one reviewer
/// 409; it then runs once, and a review after the run is 409. Each review is one event.
pub async fn reviews_approvals_let_a_query_run_once(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let db = new_database(&console, 2, json!({})).await;
    let query = new_query(&console, &ann(), &db).await;
    let id = id_of(&query);
    assert_eq!(query["status"], "awaiting_review");
    assert_eq!(
        (query["approvals"].clone(), query["reviews"].clone()),
        (json!(0), json!([]))
    );

    let refused = run_with(&console, &ann(), &id, None).await.expect(409);
    assert!(
        detail(&refused).contains("0 of the 2"),
        "{}",
        detail(&refused)
    );
    let own = review(&console, &ann(), &id, "approve", None)
        .await
        .expect(403);
    assert!(detail(&own).contains("own query"), "{}", detail(&own));

    let once = review(&console, &bo(), &id, "approve", Some("  looks right  "))
        .await
        .expect(200)
        .json();
    assert_eq!(
        (once["status"].clone(), once["approvals"].clone()),
        (json!("awaiting_review"), json!(1))
    );
    assert_eq!(once["reviews"][0]["reviewer"], "bo@example.com");
    assert_eq!(once["reviews"][0]["decision"], "approve");
    assert_eq!(once["reviews"][0]["comment"], "looks right");
    let twice = review(&console, &bo(), &id, "approve", None)
        .await
        .expect(409);
    assert!(detail(&twice).contains("counts once"), "{}", detail(&twice));
    assert_eq!(
        get(&console, &ann(), &id).await["approvals"],
        1,
        "a repeat changes nothing"
    );

    let ready = review(&console, &cy(), &id, "approve", None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        (ready["status"].clone(), ready["approvals"].clone()),
        (json!("ready"), json!(2))
    );
    let ran = run_with(&console, &ann(), &id, None)
        .await
        .expect(200)
        .json();
    assert_eq!(ran["rows"], json!([[1]]));
    assert_eq!(runner.runs(), 1);
    run_with(&console, &ann(), &id, None).await.expect(409);
    let late = review(&console, &root(), &id, "approve", None)
        .await
        .expect(409);
    assert!(detail(&late).contains("has not run"), "{}", detail(&late));
    assert_eq!(runner.runs(), 1, "a query runs once");
    assert_eq!(
        actions(&console, &id).await,
        ["query.create", "query.review", "query.review", "query.run"]
    );
}

/// A rejection stops the query for good: it never runs (not even with a bypass), and takes no
/// more reviews.
pub async fn reviews_a_rejection_stops_the_query(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let db = new_database(&console, 1, json!({"review_bypass_allowed": true})).await;
    let query = new_query(&console, &root(), &db).await;
    let id = id_of(&query);
    let rejected = review(&console, &bo(), &id, "reject", Some("drops a table"))
        .await
        .expect(200)
        .json();
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["reviews"][0]["decision"], "reject");
    review(&console, &cy(), &id, "approve", None)
        .await
        .expect(409);
    let refused = run_with(&console, &root(), &id, None).await.expect(409);
    assert!(
        detail(&refused).contains("rejected"),
        "{}",
        detail(&refused)
    );
    let bypass = json!({"bypass_review": {"acknowledge": true, "reason": "urgent"}});
    run_with(&console, &root(), &id, Some(bypass))
        .await
        .expect(409);
    assert_eq!(runner.runs(), 0);
    let listed = console
        .as_(
            &root(),
            Method::GET,
            &format!("{QUERIES}?status=rejected"),
            None,
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
}

/// The approvals are counted against `reviews_required` as it is at run time: raised after
/// approval, the query waits again (and says so); lowered, an awaiting query runs.
pub async fn reviews_count_against_the_requirement_at_run_time(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let db = new_database(&console, 1, json!({})).await;
    let id = id_of(&new_query(&console, &ann(), &db).await);
    review(&console, &bo(), &id, "approve", None)
        .await
        .expect(200);
    let set_required = |required: u32| json!({"credentials": [{"id": db.1, "username": "reader", "reviews_required": required}]});
    patch_database(&console, &db, set_required(2)).await;
    let refused = run_with(&console, &ann(), &id, None).await.expect(409);
    assert!(
        detail(&refused).contains("1 of the 2"),
        "{}",
        detail(&refused)
    );
    assert_eq!(
        get(&console, &ann(), &id).await["status"],
        "awaiting_review"
    );
    let ready = review(&console, &cy(), &id, "approve", None)
        .await
        .expect(200)
        .json();
    assert_eq!(ready["status"], "ready");
    run_with(&console, &ann(), &id, None).await.expect(200);

    let waiting = id_of(&new_query(&console, &ann(), &db).await);
    patch_database(&console, &db, set_required(0)).await;
    run_with(&console, &ann(), &waiting, None).await.expect(200);
    assert_eq!(runner.runs(), 2);
}

/// On a restricted database only `review` and `admin` grants (and super admins) review; a
/// `query` grant does not, nor does an AI agent anywhere.
pub async fn reviews_need_review_access_on_a_restricted_database(storage: Arc<dyn Storage>) {
    let (console, _runner) = reviewing_console(storage);
    let db = new_database(
        &console,
        2,
        json!({"restrict_access": true, "ai_enabled": true}),
    )
    .await;
    console
        .api
        .db(
            Method::PUT,
            &format!("{DATABASES}/{}/permissions", db.0),
            Some(&json!({"permissions": [
                {"subject_kind": "group", "subject": "analysts", "access": "query"},
                {"subject_kind": "group", "subject": "reviewers", "access": "review"},
                {"subject_kind": "user", "subject": "dan@example.com", "access": "query"},
                {"subject_kind": "user", "subject": "eve@example.com", "access": "admin"},
            ]})),
        )
        .await
        .expect(200);
    let id = id_of(&new_query(&console, &ann(), &db).await);
    let dan = Principal::member("dan@example.com");
    let refused = review(&console, &dan, &id, "approve", None)
        .await
        .expect(403);
    assert!(
        detail(&refused).contains("review or admin permission"),
        "{}",
        detail(&refused)
    );
    let agent = Principal::member("bot@example.com")
        .groups(["reviewers"])
        .agent(true);
    let refused = review(&console, &agent, &id, "approve", None)
        .await
        .expect(403);
    assert!(
        detail(&refused).contains("AI agents"),
        "{}",
        detail(&refused)
    );
    let stranger = Principal::member("zed@example.com");
    review(&console, &stranger, &id, "approve", None)
        .await
        .expect(404);
    assert_eq!(
        get(&console, &ann(), &id).await["approvals"],
        0,
        "refusals change nothing"
    );

    review(&console, &bo(), &id, "approve", None)
        .await
        .expect(200);
    let eve = Principal::member("eve@example.com");
    let done = review(&console, &eve, &id, "approve", None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        (done["approvals"].clone(), done["status"].clone()),
        (json!(2), json!("ready"))
    );
    let other = id_of(&new_query(&console, &ann(), &db).await);
    review(&console, &root(), &other, "approve", None)
        .await
        .expect(200);
}

/// `reviewer=me` lists what the caller can act on: not their own queries, not those they
/// reviewed, not those that ran or were rejected, only on databases where they may review.
pub async fn reviews_reviewer_me_lists_what_a_reviewer_can_act_on(storage: Arc<dyn Storage>) {
    let (console, _runner) = reviewing_console(storage);
    let open = new_database(&console, 2, json!({})).await;
    let restricted = new_database(&console, 1, json!({"restrict_access": true})).await;
    console
        .api
        .db(
            Method::PUT,
            &format!("{DATABASES}/{}/permissions", restricted.0),
            Some(&json!({"permissions": [
                {"subject_kind": "group", "subject": "analysts", "access": "query"},
                {"subject_kind": "group", "subject": "reviewers", "access": "query"},
            ]})),
        )
        .await
        .expect(200);
    let actionable = id_of(&new_query(&console, &ann(), &open).await);
    let own = id_of(&new_query(&console, &bo(), &open).await);
    let reviewed = id_of(&new_query(&console, &ann(), &open).await);
    review(&console, &bo(), &reviewed, "approve", None)
        .await
        .expect(200);
    let rejected = id_of(&new_query(&console, &ann(), &open).await);
    review(&console, &cy(), &rejected, "reject", None)
        .await
        .expect(200);
    let no_grant = id_of(&new_query(&console, &ann(), &restricted).await);

    let listed = |query: &'static str| {
        let console = &console;
        async move {
            let page = console
                .as_(
                    &bo(),
                    Method::GET,
                    &format!("{QUERIES}?{query}"),
                    None,
                    None,
                )
                .await
                .expect(200)
                .json();
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|q| q["id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed("status=awaiting_review&reviewer=me").await,
        std::slice::from_ref(&actionable)
    );
    assert_eq!(
        listed("reviewer=me").await,
        std::slice::from_ref(&actionable)
    );
    let everything = listed("limit=100").await;
    for id in [&actionable, &own, &reviewed, &rejected, &no_grant] {
        assert!(everything.contains(id), "bo sees {id} in the history");
    }
    for other in ["ann@example.com", ""] {
        let refused = console
            .as_(
                &bo(),
                Method::GET,
                &format!("{QUERIES}?reviewer={other}"),
                None,
                None,
            )
            .await
            .expect(422);
        assert!(refused.json()["errors"]["reviewer"].is_array(), "{other:?}");
    }
}

/// A bypass runs a super admin's own query without its approvals only on a database with
/// `review_bypass_allowed`, acknowledged and with a reason; otherwise 403 naming the condition,
/// and nothing changes. It is stored on the query and is one audit event.
pub async fn reviews_a_bypass_needs_every_condition_and_is_recorded(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let allowed = new_database(
        &console,
        2,
        json!({"review_bypass_allowed": true, "ai_enabled": true}),
    )
    .await;
    let disallowed = new_database(&console, 2, json!({})).await;
    let bypass = |acknowledge: Value, reason: Value| {
        Some(json!({"bypass_review": {"acknowledge": acknowledge, "reason": reason}}))
    };
    let good = || bypass(json!(true), json!("incident 4711: the index must go now"));
    let roots = id_of(&new_query(&console, &root(), &allowed).await);
    let anns = id_of(&new_query(&console, &ann(), &allowed).await);
    let elsewhere = id_of(&new_query(&console, &root(), &disallowed).await);
    let admin_ann = ann().role(Role::SuperAdmin);
    for (who, id, body, says) in [
        (ann(), &anns, good(), "only a super admin"),
        (root(), &anns, good(), "a query they wrote"),
        (root(), &elsewhere, good(), "review_bypass_allowed"),
        (
            root(),
            &roots,
            bypass(json!(false), json!("why not")),
            "acknowledged",
        ),
        (
            root(),
            &roots,
            bypass(Value::Null, json!("why not")),
            "acknowledged",
        ),
        (
            root(),
            &roots,
            bypass(json!(true), json!("   ")),
            "a reason is required",
        ),
        (
            root(),
            &roots,
            bypass(json!(true), Value::Null),
            "a reason is required",
        ),
        (
            admin_ann.clone().agent(true),
            &anns,
            good(),
            "never bypasses",
        ),
    ] {
        let refused = run_with(&console, &who, id, body).await.expect(403);
        assert!(
            detail(&refused).contains(says),
            "{says}: {}",
            detail(&refused)
        );
    }
    for body in [
        json!({"bypass_review": "yes"}),
        json!({"bypass_review": {"acknowledge": "yes", "reason": "x"}}),
        json!({"bypass_review": {"acknowledge": true, "reason": 5}}),
        json!({"bypass_review": {"acknowledge": true, "reason": "x".repeat(2_001)}}),
    ] {
        run_with(&console, &root(), &roots, Some(body))
            .await
            .expect(422);
    }
    assert_eq!(runner.runs(), 0, "no refused bypass ran anything");
    assert_eq!(
        get(&console, &root(), &roots).await["status"],
        "awaiting_review"
    );

    review(&console, &bo(), &roots, "approve", None)
        .await
        .expect(200);
    run_with(&console, &root(), &roots, good())
        .await
        .expect(200);
    let ran = get(&console, &root(), &roots).await;
    assert_eq!(ran["status"], "succeeded");
    let recorded = &ran["bypass"];
    assert_eq!(recorded["by"], "root@example.com");
    assert_eq!(recorded["reason"], "incident 4711: the index must go now");
    assert_eq!(
        (recorded["approvals"].clone(), recorded["required"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(
        actions(&console, &roots).await,
        [
            "query.create",
            "query.review",
            "query.review_bypass",
            "query.run"
        ]
    );

    // A bypass asked for on a query that has its approvals overrides nothing: none recorded.
    let approved = id_of(&new_query(&console, &admin_ann, &allowed).await);
    review(&console, &bo(), &approved, "approve", None)
        .await
        .expect(200);
    review(&console, &cy(), &approved, "approve", None)
        .await
        .expect(200);
    run_with(&console, &admin_ann, &approved, good())
        .await
        .expect(200);
    assert_eq!(
        get(&console, &admin_ann, &approved).await["bypass"],
        Value::Null
    );
    assert_eq!(runner.runs(), 2);
}

/// A review's body: `decision` is `approve` or `reject`, `comment` a string of at most 2,000
/// characters; otherwise 422 (400 when not JSON), and nothing changes. An unknown query is 404.
pub async fn reviews_bad_bodies_change_nothing(storage: Arc<dyn Storage>) {
    let (console, _runner) = reviewing_console(storage);
    let db = new_database(&console, 1, json!({})).await;
    let id = id_of(&new_query(&console, &ann(), &db).await);
    let path = format!("{QUERIES}/{id}/reviews");
    for (body, field) in [
        (json!({}), "decision"),
        (json!({"decision": "maybe"}), "decision"),
        (json!({"decision": 1}), "decision"),
        (json!({"decision": "approve", "comment": 5}), "comment"),
        (
            json!({"decision": "approve", "comment": "x".repeat(2_001)}),
            "comment",
        ),
    ] {
        let refused = console
            .as_(&bo(), Method::POST, &path, Some(body.clone()), None)
            .await
            .expect(422);
        assert!(refused.json()["errors"][field].is_array(), "{body}");
    }
    let mut raw = Request::builder()
        .method(Method::POST)
        .uri(&path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from_static(b"{not json")))
        .unwrap();
    raw.extensions_mut().insert(bo());
    console.api.send(raw).await.expect(400);
    review(
        &console,
        &bo(),
        "qry_01J0000000000000000000000",
        "approve",
        None,
    )
    .await
    .expect(404);
    // An unknown query is 404 whatever the body: a review's or a bypass's.
    let unknown = "qry_01J0000000000000000000000";
    console
        .as_(
            &bo(),
            Method::POST,
            &format!("{QUERIES}/{unknown}/reviews"),
            Some(json!({"decision": "maybe"})),
            None,
        )
        .await
        .expect(404);
    run_with(&console, &bo(), unknown, Some(json!({"bypass_review": 5})))
        .await
        .expect(404);
    let unchanged = get(&console, &ann(), &id).await;
    assert_eq!(
        (unchanged["approvals"].clone(), unchanged["status"].clone()),
        (json!(0), json!("awaiting_review"))
    );
    // Without a user: 403 before anything.
    let keyed = console
        .api
        .db(Method::POST, &path, Some(&json!({"decision": "approve"})))
        .await
        .expect(403);
    assert!(detail(&keyed).contains("needs a user"));
}

/// An AI agent's query runs read-only and capped whoever runs it; an agent runs only the
/// queries its user wrote.
pub async fn reviews_an_agents_query_stays_an_agents(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let db = new_database(&console, 1, json!({"ai_enabled": true, "ai_max_rows": 7})).await;
    let bot = Principal::member("bot@example.com").agent(true);
    // Through the HTTP API, with a limit above the AI cap: stored capped.
    let query = console
        .as_(
            &bot,
            Method::POST,
            QUERIES,
            Some(json!({
                "database_id": db.0, "credential_id": db.1, "query": "SELECT 1", "limit": 5000,
                "title": "One", "description": "The agent asks.",
            })),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(query["by_agent"], true);
    assert_eq!(query["limit"], 7, "an agent's query keeps the AI cap");
    let id = id_of(&query);
    review(&console, &bo(), &id, "approve", None)
        .await
        .expect(200);
    let others = id_of(&new_query(&console, &ann(), &db).await);
    review(&console, &bo(), &others, "approve", None)
        .await
        .expect(200);
    let refused = run_with(&console, &bot, &others, None).await.expect(403);
    assert!(
        detail(&refused).contains("its user wrote"),
        "{}",
        detail(&refused)
    );
    // Its user runs the agent's query in person: read-only and capped all the same, by the cap
    // of now. (Another person may not: a query's run is its author's.)
    patch_database(&console, &db, json!({"ai_max_rows": 3})).await;
    run_with(&console, &ann(), &id, None).await.expect(403);
    let in_person = Principal::member("bot@example.com");
    run_with(&console, &in_person, &id, None).await.expect(200);
    assert_eq!((runner.runs(), runner.read_only_runs()), (1, 1));
    assert_eq!(runner.last_max_rows(), 3, "the AI cap as it is now");
    run_with(&console, &ann(), &others, None).await.expect(200);
    assert_eq!(
        (runner.runs(), runner.read_only_runs()),
        (2, 1),
        "a person's own query runs as a console query"
    );
    assert_eq!(get(&console, &ann(), &others).await["by_agent"], false);
}

/// An approval covers the statement run where the query was made to run: once the database or
/// the credential connects elsewhere (host, database name, username…), the query does not run
/// (409), and nothing runs; a rotated password or an unrelated change keeps it runnable.
pub async fn reviews_cover_only_where_the_query_was_made_to_run(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let changes = [
        json!({"hostname": "elsewhere.internal"}),
        json!({"database": "payroll"}),
        json!({"port": 6543}),
        json!({"credentials": [{"id": "CRED", "username": "admin"}]}),
        json!({"credentials": [{"id": "CRED", "hostname": "replica.internal"}]}),
        json!({"connection_parameters": [{"name": "options", "value": "-c role=admin"}]}),
    ];
    for change in changes {
        let db = new_database(&console, 1, json!({})).await;
        let id = id_of(&new_query(&console, &ann(), &db).await);
        review(&console, &bo(), &id, "approve", None)
            .await
            .expect(200);
        let change: Value =
            serde_json::from_str(&change.to_string().replace("CRED", &db.1)).unwrap();
        patch_database(&console, &db, change.clone()).await;
        let refused = run_with(&console, &ann(), &id, None).await.expect(409);
        assert!(
            detail(&refused).contains("connects elsewhere"),
            "{change}: {}",
            detail(&refused)
        );
        assert_eq!(runner.runs(), 0, "{change}: nothing ran");
        assert_eq!(get(&console, &ann(), &id).await["status"], "ready");
    }
    // A rotated password, a new name or Slack channel: still where it was made to run.
    let db = new_database(&console, 1, json!({})).await;
    let id = id_of(&new_query(&console, &ann(), &db).await);
    review(&console, &bo(), &id, "approve", None)
        .await
        .expect(200);
    patch_database(
        &console,
        &db,
        json!({"name": format!("Renamed {}", db.0), "slack_channel": "#ops",
               "credentials": [{"id": db.1, "password": "pw-rotated-2"}]}),
    )
    .await;
    run_with(&console, &ann(), &id, None).await.expect(200);
    assert_eq!(runner.runs(), 1);
}

/// A query's run reads the caller's user record (deactivated users are refused), its query, its
/// database and the database's access control once each, claims the query it read, and records
/// its outcome: six storage calls, whoever runs it (its author, a super admin, a member granted
/// a restricted database), around its one statement.
pub async fn reviews_a_run_costs_six_storage_calls(storage: Arc<dyn Storage>) {
    let inner = Arc::clone(&storage);
    let counted = Arc::new(dbconsole_core::storage::Counted::new(storage));
    let (console, runner) = reviewing_console(counted.clone());
    let author = Principal::member("ann@example.com");
    let admin = Principal::member("root@example.com").role(Role::SuperAdmin);
    let granted = Principal::member("bo@example.com");
    let open = new_database(&console, 0, json!({})).await;
    let restricted = new_database(&console, 0, json!({"restrict_access": true})).await;
    console
        .api
        .db(
            Method::PUT,
            &format!("/api/v1/console/databases/{}/permissions", restricted.0),
            Some(&json!({"permissions": [
                {"subject_kind": "user", "subject": "ann@example.com", "access": "query"},
                {"subject_kind": "user", "subject": "bo@example.com", "access": "query"},
            ]})),
        )
        .await
        .expect(200);
    for (who, runner_of, db) in [
        (&author, &author, &open),
        (&author, &admin, &open),
        (&granted, &granted, &restricted),
    ] {
        let id = new_query(&console, who, db).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let ran = runner.runs.load(Ordering::SeqCst);
        counted.take();
        run_with(&console, runner_of, &id, None)
            .await
            .expect(200)
            .json();
        // Looked at past the count: the outcome is written after the answer.
        let outcome = eventually(
            Duration::from_secs(10),
            "the run's outcome is recorded",
            || async {
                let query = inner.query(&id).await.unwrap()?;
                (query.status == QueryStatus::Succeeded).then_some(query)
            },
        )
        .await;
        assert!(outcome.run.is_some());
        assert_eq!(runner.runs.load(Ordering::SeqCst), ran + 1);
        assert_eq!(
            counted.take(),
            6,
            "a run by {}: the user, the query, its database, its access control, the claim, the outcome",
            runner_of.user
        );
    }
}

/// A query whose database or credential was deleted can no longer be reviewed or run: 409 (the
/// request itself is sound, as the contract fuzzing found: it used to be a 422 on a
/// `database_id` the body does not have), and nothing changes.
pub async fn reviews_a_query_whose_database_or_credential_is_gone_is_409(
    storage: Arc<dyn Storage>,
) {
    let (console, runner) = reviewing_console(storage);
    let ann = Principal::member("ann@example.com");
    // A super admin still sees the query (to others it is gone with its database: 404).
    let root = Principal::member("root@example.com").role(Role::SuperAdmin);
    // The database goes.
    let db = new_database(&console, 1, json!({})).await;
    let query = new_query(&console, &ann, &db).await;
    let id = query["id"].as_str().unwrap().to_owned();
    console
        .api
        .db(Method::DELETE, &format!("{DATABASES}/{}", db.0), None)
        .await
        .expect(200);
    let reviewed = review(&console, &root, &id, "approve", None)
        .await
        .expect(409);
    assert!(
        reviewed.text().contains("database was deleted"),
        "{}",
        reviewed.text()
    );
    let ran = run_with(&console, &ann, &id, None).await.expect(409);
    assert!(
        ran.text().contains("database was deleted"),
        "{}",
        ran.text()
    );
    assert_eq!(get(&console, &ann, &id).await, query, "nothing changed");
    // The credential goes (replaced by another of the same username).
    let db = new_database(&console, 1, json!({})).await;
    let query = new_query(&console, &ann, &db).await;
    let id = query["id"].as_str().unwrap().to_owned();
    patch_database(
        &console,
        &db,
        json!({"credentials": [{"username": "other", "password": "pw-other-1"}]}),
    )
    .await;
    let reviewed = review(&console, &root, &id, "approve", None)
        .await
        .expect(409);
    assert!(
        reviewed.text().contains("credential was deleted"),
        "{}",
        reviewed.text()
    );
    run_with(&console, &ann, &id, None).await.expect(409);
    assert_eq!(get(&console, &ann, &id).await, query, "nothing changed");
    assert_eq!(runner.runs.load(Ordering::SeqCst), 0, "nothing ran");
}

/// One user however its name is written: a principal the embedding program builds by hand as
/// `ANN@Example.COM` (or in full-width letters) is ann: it can't approve ann's query as someone
/// else's, it runs it as its author, and the history's `author` filter finds it; a reviewer
/// approves once whatever case it uses; a group permission names its group in any case.
pub async fn reviews_one_identity_whatever_its_case(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let db = new_database(&console, 1, json!({"restrict_access": true})).await;
    console
        .api
        .db(
            Method::PUT,
            &format!("/api/v1/console/databases/{}/permissions", db.0),
            Some(&json!({"permissions": [
                {"subject_kind": "group", "subject": "Analysts", "access": "review"},
                {"subject_kind": "user", "subject": "BO@example.com", "access": "review"},
            ]})),
        )
        .await
        .expect(200);
    let by_hand = |user: &str, groups: &[&str]| Principal {
        user: user.to_owned(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        ..Principal::default()
    };
    let query = new_query(&console, &by_hand("ann@example.com", &["ANALYSTS"]), &db).await;
    let id = id_of(&query);
    assert_eq!(query["author"], "ann@example.com");
    let own = review(
        &console,
        &by_hand("ANN@Example.COM", &["analysts"]),
        &id,
        "approve",
        None,
    )
    .await
    .expect(403);
    assert!(detail(&own).contains("own query"), "{}", detail(&own));
    let fullwidth = by_hand("\u{ff21}\u{ff2e}\u{ff2e}@example.com", &["Analysts"]);
    review(&console, &fullwidth, &id, "approve", None)
        .await
        .expect(403);
    review(
        &console,
        &by_hand("bo@example.com", &[]),
        &id,
        "approve",
        None,
    )
    .await
    .expect(200);
    review(
        &console,
        &by_hand("Bo@Example.com", &[]),
        &id,
        "approve",
        None,
    )
    .await
    .expect(409);
    let listed = console
        .as_(
            &by_hand("ann@example.com", &["analysts"]),
            Method::GET,
            &format!("{QUERIES}?author=ANN%40EXAMPLE.COM"),
            None,
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    run_with(
        &console,
        &by_hand("Ann@Example.com", &["Analysts"]),
        &id,
        None,
    )
    .await
    .expect(200);
    assert_eq!(runner.runs(), 1);
    // Two permissions for one subject written two ways are one subject twice.
    let twice = console
        .api
        .db(
            Method::PUT,
            &format!("/api/v1/console/databases/{}/permissions", db.0),
            Some(&json!({"permissions": [
                {"subject_kind": "user", "subject": "cy@example.com", "access": "query"},
                {"subject_kind": "user", "subject": "CY@example.com", "access": "review"},
            ]})),
        )
        .await
        .expect(422);
    assert!(twice.text().contains("subject"), "{}", twice.text());
}

/// A request for review needs a title and a description (422 naming each, nothing stored); a
/// query elsewhere gets a title from its statement. A request for changes holds the query (no
/// approval, no run) until its author changes it; any change then, or a new statement at any
/// time, is a new revision whose approvals count from none, while a new title alone keeps them.
/// Only the author changes a query, never once it is rejected; its author and reviewers
/// comment. Each change and comment is one event.
pub async fn reviews_a_request_says_why_and_changes_start_a_new_revision(
    storage: Arc<dyn Storage>,
) {
    let (console, runner) = reviewing_console(storage);
    let db = new_database(&console, 2, json!({})).await;
    let bare = console
        .as_(
            &ann(),
            Method::POST,
            QUERIES,
            Some(json!({"database_id": db.0, "credential_id": db.1, "query": "SELECT 1", "description": "  "})),
            None,
        )
        .await
        .expect(422);
    let fields = bare.json()["errors"].clone();
    assert!(
        fields["title"].is_array() && fields["description"].is_array(),
        "{fields}"
    );
    let listed = console
        .as_(&ann(), Method::GET, QUERIES, None, None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        listed["data"],
        json!([]),
        "a refused request stores nothing"
    );
    let free = new_database(&console, 0, json!({})).await;
    let untitled = console
        .as_(
            &ann(),
            Method::POST,
            QUERIES,
            Some(json!({"database_id": free.0, "credential_id": free.1, "query": "SELECT\n  1 AS <b>x</b>"})),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (untitled["title"].clone(), untitled["description"].clone()),
        (json!("SELECT 1 AS <b>x</b>"), json!(""))
    );

    let query = new_query(&console, &ann(), &db).await;
    let id = id_of(&query);
    assert_eq!(
        (
            query["title"].clone(),
            query["description"].clone(),
            query["revision"].clone()
        ),
        (json!("The one"), json!("For the count."), json!(0))
    );
    review(&console, &bo(), &id, "approve", None)
        .await
        .expect(200);
    let held = review(&console, &cy(), &id, "request_changes", Some("add a WHERE"))
        .await
        .expect(200)
        .json();
    assert_eq!(held["status"], "changes_requested");
    assert_eq!(held["reviews"][1]["decision"], "request_changes");
    let blocked = review(&console, &root(), &id, "approve", None)
        .await
        .expect(409);
    assert!(
        detail(&blocked).contains("changes were requested"),
        "{}",
        detail(&blocked)
    );
    let not_run = run_with(&console, &ann(), &id, None).await.expect(409);
    assert!(
        detail(&not_run).contains("asked for changes"),
        "{}",
        detail(&not_run)
    );

    // The thread: the author and reviewers comment; the author alone changes the query.
    let commented = comment(&console, &ann(), &id, "  which WHERE?  ")
        .await
        .expect(201)
        .json();
    assert_eq!(commented["comments"][0]["author"], "ann@example.com");
    assert_eq!(commented["comments"][0]["text"], "which WHERE?");
    comment(&console, &bo(), &id, "").await.expect(422);
    let other = edit(&console, &bo(), &id, json!({"query": "SELECT 2"}))
        .await
        .expect(403);
    assert!(
        detail(&other).contains("only its author"),
        "{}",
        detail(&other)
    );
    edit(&console, &ann(), &id, json!({"title": "  "}))
        .await
        .expect(422);
    assert_eq!(get(&console, &ann(), &id).await["title"], "The one");

    // Any change once changes were asked for: a new revision, reviewed from none.
    let revised = edit(
        &console,
        &ann(),
        &id,
        json!({"description": "For the count, where paid."}),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(
        standing(&revised),
        (json!("awaiting_review"), json!(1), json!(0))
    );
    review(&console, &bo(), &id, "approve", None)
        .await
        .expect(200);
    let ready = review(&console, &cy(), &id, "approve", None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        (ready["status"].clone(), ready["approvals"].clone()),
        (json!("ready"), json!(2))
    );
    assert_eq!(ready["reviews"][3]["revision"], 1);
    // A new title keeps the approvals; a new statement starts again.
    let retitled = edit(&console, &ann(), &id, json!({"title": "The paid ones"}))
        .await
        .expect(200)
        .json();
    assert_eq!(standing(&retitled), (json!("ready"), json!(1), json!(2)));
    let rewritten = edit(&console, &ann(), &id, json!({"query": "SELECT 2"}))
        .await
        .expect(200)
        .json();
    assert_eq!(
        standing(&rewritten),
        (json!("awaiting_review"), json!(2), json!(0))
    );
    let two = edit(
        &console,
        &ann(),
        &id,
        json!({"query": "SELECT 1; SELECT 2"}),
    )
    .await
    .expect(422);
    assert!(two.text().contains("query"), "{}", two.text());

    // A reject stays final: no change after it.
    review(&console, &bo(), &id, "reject", Some("not this quarter"))
        .await
        .expect(200);
    let closed = edit(&console, &ann(), &id, json!({"query": "SELECT 3"}))
        .await
        .expect(409);
    assert!(detail(&closed).contains("rejected"), "{}", detail(&closed));
    assert_eq!(runner.runs(), 0, "nothing ran");
    assert_eq!(
        actions(&console, &id).await,
        [
            "query.create",
            "query.review",
            "query.review",
            "query.comment",
            "query.edit",
            "query.review",
            "query.review",
            "query.edit",
            "query.edit",
            "query.review",
        ]
    );
}

/// A run refused for what its statement is (a write where runs are read-only: an AI agent's)
/// ends the query, failed with why, rather than leaving it `ready`; nothing ran.
pub async fn reviews_a_run_refused_as_read_only_ends_the_query(storage: Arc<dyn Storage>) {
    let (console, runner) = reviewing_console(storage);
    let db = new_database(&console, 0, json!({"ai_enabled": true})).await;
    let bot = Principal::member("bot@example.com").agent(true);
    let query = console
        .as_(
            &bot,
            Method::POST,
            QUERIES,
            Some(
                json!({"database_id": db.0, "credential_id": db.1, "query": "DELETE FROM orders"}),
            ),
            None,
        )
        .await
        .expect(200)
        .json();
    let id = id_of(&query);
    assert_eq!(query["status"], "ready");
    let refused = run_with(&console, &bot, &id, None).await.expect(422).json();
    assert!(
        refused["errors"]["query"][0]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{refused}"
    );
    let after = get(&console, &bot, &id).await;
    assert_eq!(after["status"], "failed", "{after}");
    let error = after["run"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("refused before it ran: ") && error.contains("read-only"),
        "{error}"
    );
    assert_eq!(after["run"]["row_count"], 0);
    assert_eq!(runner.runs(), 0, "nothing ran");
    let again = run_with(&console, &bot, &id, None).await.expect(409);
    assert!(detail(&again).contains("already ran"), "{}", detail(&again));
}

/// Expands to one test per reviews case over fresh stores made by `$storage`.
#[macro_export]
macro_rules! review_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            reviews,
            $storage,
            [
                reviews_approvals_let_a_query_run_once,
                reviews_a_rejection_stops_the_query,
                reviews_count_against_the_requirement_at_run_time,
                reviews_need_review_access_on_a_restricted_database,
                reviews_reviewer_me_lists_what_a_reviewer_can_act_on,
                reviews_a_bypass_needs_every_condition_and_is_recorded,
                reviews_bad_bodies_change_nothing,
                reviews_an_agents_query_stays_an_agents,
                reviews_cover_only_where_the_query_was_made_to_run,
                reviews_a_run_costs_six_storage_calls,
                reviews_a_query_whose_database_or_credential_is_gone_is_409,
                reviews_one_identity_whatever_its_case,
                reviews_a_request_says_why_and_changes_start_a_new_revision,
                reviews_a_run_refused_as_read_only_ends_the_query,
            ]
        );
    };
}
