//! Two `dbconsole` nodes on one PostgreSQL store, as behind a load balancer: what one node
//! writes the other reads, and the contract holds across them. Each test runs both nodes in a
//! fresh schema of the test database (`.ci/db-servers-up.sh` starts it).
//!
//! - concurrent PATCHes of different fields, split over both nodes, all apply;
//! - 20 concurrent setups of one `api_id`, split over both nodes, make one database;
//! - `A → B` through one node and `B → A` through the other: exactly one succeeds;
//! - a key revoked with `dbconsole keys` is refused by the other node at its next request;
//! - a browser session made on one node is the other's too, a sign-in link works once across
//!   them, and `dbconsole sessions revoke` ends a session on both;
//! - a node started with another sealing key refuses to start, saying why;
//! - reviews racing through both nodes count exactly, and runs racing through both nodes run
//!   the query once (against the real PostgreSQL server as the queried database).

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use dbconsole_storage_postgres::testing::{fresh_schema, test_url};
use dbconsole_tests::eventually;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use support::{database_body, request};

/// Only keeps a broken node from hanging the test run; no test measures time.
const HANG_GUARD: Duration = Duration::from_secs(60);

const DATABASES: &str = "/api/v1/console/databases";
const API_KEY: &str = "nodes-test-api-key";
/// The sealing key both nodes share (base64 of 32 bytes).
const SHARED_KEY: &str = "bm9kZXMtc2hhcmUtb25lLXNlYWxpbmcta2V5LTMyYnk=";

/// One running node.
struct Node {
    _child: Child,
    addr: SocketAddr,
}

/// The environment and flags of a node (or a `keys` command) on `schema`.
fn storage_env(schema: &str, key: &str) -> Vec<(String, String)> {
    vec![
        ("DBCONSOLE_STORAGE".into(), "postgres".into()),
        ("DBCONSOLE_DATABASE_URL".into(), test_url()),
        ("DBCONSOLE_DATABASE_SCHEMA".into(), schema.into()),
        ("DBCONSOLE_SECRET_KEY".into(), key.into()),
        ("DBCONSOLE_API_KEY".into(), API_KEY.into()),
        ("DBCONSOLE_ACCESS_TOKEN".into(), "nodes-test-token".into()),
    ]
}

fn command(env: &[(String, String)], args: &[&str]) -> tokio::process::Command {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    support::dbconsole(&env, args)
}

impl Node {
    /// Starts a node on `schema` and waits for its `listening on` line.
    async fn start(schema: &str, data_dir: &std::path::Path) -> Self {
        Self::try_start(schema, SHARED_KEY, data_dir)
            .await
            .unwrap_or_else(|output| panic!("the node did not start:\n{output}"))
    }

    /// Starts a node, or returns everything it wrote when it exits without listening.
    async fn try_start(
        schema: &str,
        key: &str,
        data_dir: &std::path::Path,
    ) -> Result<Self, String> {
        let dir = data_dir.to_str().unwrap();
        let args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dir];
        let mut child = command(&storage_env(schema, key), &args)
            .spawn()
            .expect("spawn dbconsole");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let found = tokio::time::timeout(HANG_GUARD, async {
            let mut seen = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    return Ok(addr.parse::<SocketAddr>().unwrap());
                }
                seen.push(line);
            }
            Err(seen.join("\n"))
        })
        .await
        .expect("the node neither listened nor exited within the hang guard");
        match found {
            Ok(addr) => {
                // Keep draining both pipes so the node never blocks on a full one.
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                let mut errors = BufReader::new(stderr).lines();
                tokio::spawn(async move { while let Ok(Some(_)) = errors.next_line().await {} });
                Ok(Self {
                    _child: child,
                    addr,
                })
            }
            Err(stdout) => {
                let mut text = String::new();
                let mut errors = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = errors.next_line().await {
                    text.push_str(&line);
                    text.push('\n');
                }
                Err(format!("{stdout}\n{text}"))
            }
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        call(self.addr, method, path.to_owned(), body.cloned()).await
    }
}

/// One request with the API key: status and JSON body (null when not JSON).
async fn call(addr: SocketAddr, method: &str, path: String, body: Option<Value>) -> (u16, Value) {
    let body = body.as_ref().map(Value::to_string);
    let headers = [("x-api-key", API_KEY)];
    let response = request(addr, method, &path, &headers, body.as_deref()).await;
    let json = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response.status, json)
}

/// Two nodes on a fresh schema, and the directory they keep (nothing in it: the store is
/// PostgreSQL).
async fn two_nodes() -> (Node, Node, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let schema = fresh_schema();
    let a = Node::start(&schema, &dir.path().join("a")).await;
    let b = Node::start(&schema, &dir.path().join("b")).await;
    (a, b, dir, schema)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_of_different_fields_through_both_nodes_all_apply() {
    let (a, b, _dir, _schema) = two_nodes().await;
    let body: Value = serde_json::from_str(&database_body("pw-1")).unwrap();
    let (status, created) = a.call("POST", DATABASES, Some(&body)).await;
    assert_eq!(status, 200, "{created}");
    let path = format!("{DATABASES}/{}", created["id"].as_str().unwrap());

    let patches = [
        json!({"name": "Orders (renamed)"}),
        json!({"group": "payments"}),
        json!({"slack_channel": "#orders"}),
        json!({"ai_max_rows": 77}),
        json!({"restrict_access": true}),
        json!({"review_bypass_allowed": true}),
        json!({"ai_enabled": true}),
        json!({"port": 6543}),
        json!({"tunnel_id": "tunnel-1"}),
        json!({"connection_parameters": [{"name": "search_path", "value": "app"}]}),
    ];
    let nodes = [&a, &b];
    let calls = patches
        .into_iter()
        .enumerate()
        .map(|(i, patch)| call(nodes[i % 2].addr, "PATCH", path.clone(), Some(patch)));
    for (status, body) in join_all(calls).await {
        assert_eq!(status, 200, "{body}");
    }

    for node in nodes {
        let (status, stored) = node.call("GET", &path, None).await;
        assert_eq!(status, 200);
        assert_eq!(stored["name"], "Orders (renamed)");
        assert_eq!(stored["group"], "payments");
        assert_eq!(stored["slack_channel"], "#orders");
        assert_eq!(stored["ai_max_rows"], 77);
        assert_eq!(stored["restrict_access"], true);
        assert_eq!(stored["review_bypass_allowed"], true);
        assert_eq!(stored["ai_enabled"], true);
        assert_eq!(stored["port"], 6543);
        assert_eq!(stored["tunnel_id"], "tunnel-1");
        assert_eq!(
            stored["connection_parameters"],
            json!([{"name": "search_path", "value": "app"}])
        );
        assert!(stored["updated_at"].as_str() > created["updated_at"].as_str());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_setups_of_one_api_id_make_one_database() {
    let (a, b, _dir, _schema) = two_nodes().await;
    let setup = |n: usize| {
        json!({
            "id": "ext-orders", "adapter": "postgres", "hostname": "db.internal",
            "database": "orders", "username": "console", "password": format!("pw-{n}"),
        })
    };
    let nodes = [&a, &b];
    let calls = (0..20).map(|n| {
        let path = format!("{DATABASES}/setup");
        call(nodes[n % 2].addr, "PUT", path, Some(setup(n)))
    });
    let answers = join_all(calls).await;
    let mut ids: Vec<&str> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 200, "{body}");
            body["id"].as_str().unwrap()
        })
        .collect();
    ids.dedup();
    assert_eq!(
        ids.len(),
        1,
        "every setup answered the same database: {ids:?}"
    );

    let (status, listed) = b.call("GET", DATABASES, None).await;
    assert_eq!(status, 200);
    let data = listed["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{listed}");
    assert_eq!(data[0]["api_id"], "ext-orders");
    assert_eq!(data[0]["credentials"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crossing_inheritance_through_two_nodes_never_makes_a_cycle() {
    let (a, b, _dir, _schema) = two_nodes().await;
    let body: Value = serde_json::from_str(&database_body("pw-1")).unwrap();
    for round in 0..8 {
        let (_, x) = a.call("POST", DATABASES, Some(&body)).await;
        let (_, y) = b.call("POST", DATABASES, Some(&body)).await;
        let (x, y) = (x["id"].as_str().unwrap(), y["id"].as_str().unwrap());
        let inherit = |from: &str| json!({"inherits_from": from, "policies": []});
        let (x_to_y, y_to_x) = (inherit(y), inherit(x));
        let x_path = format!("{DATABASES}/{x}/data-protection");
        let y_path = format!("{DATABASES}/{y}/data-protection");
        let (first, second) = tokio::join!(
            a.call("PUT", &x_path, Some(&x_to_y)),
            b.call("PUT", &y_path, Some(&y_to_x)),
        );
        let statuses = [first.0, second.0];
        assert!(
            statuses.contains(&200) && statuses.contains(&422),
            "round {round}: exactly one of the crossing writes succeeds: {first:?} {second:?}"
        );
        let refused = if first.0 == 422 { &first.1 } else { &second.1 };
        assert_eq!(
            refused,
            &json!({"errors": {"inherits_from": ["would create an inheritance cycle"]}})
        );
        // What is stored has no cycle: one of them inherits, the other does not.
        let (_, x_now) = b.call("GET", &x_path, None).await;
        let (_, y_now) = a.call("GET", &y_path, None).await;
        let inherited = [&x_now["inherits_from"], &y_now["inherits_from"]];
        assert_eq!(
            inherited.iter().filter(|v| v.is_null()).count(),
            1,
            "{x_now} {y_now}"
        );
    }
}

/// Runs `dbconsole keys …` on the schema and returns its standard output.
async fn keys(schema: &str, args: &[&str]) -> String {
    admin(schema, "keys", args).await
}

/// `dbconsole <what> ARGS…` on `schema`, which must succeed: its standard output.
async fn admin(schema: &str, what: &str, args: &[&str]) -> String {
    let mut all = vec![what];
    all.extend_from_slice(args);
    let output = command(&storage_env(schema, SHARED_KEY), &all)
        .output()
        .await
        .expect("run dbconsole keys");
    assert!(
        output.status.success(),
        "dbconsole {all:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_revoked_with_the_keys_command_is_refused_by_both_nodes() {
    let (a, b, _dir, schema) = two_nodes().await;
    let created = keys(
        &schema,
        &[
            "create", "--kind", "api-key", "--scope", "full", "--name", "ci",
        ],
    )
    .await;
    let field = |name: &str| {
        created
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in:\n{created}"))
    };
    let (id, secret) = (field("id:"), field("secret:"));
    let list = |node: &Node| {
        let secret = secret.clone();
        let addr = node.addr;
        async move {
            let headers = [("x-api-key", secret.as_str())];
            request(addr, "GET", DATABASES, &headers, None).await.status
        }
    };
    assert_eq!(list(&a).await, 200, "node A accepts the new key");
    assert_eq!(list(&b).await, 200, "node B accepts the new key");

    let listed = keys(&schema, &["list"]).await;
    assert!(listed.contains(&id), "{listed}");
    keys(&schema, &["revoke", &id]).await;
    // Every request looks the key up in the shared store: refused from the next request on.
    assert_eq!(list(&b).await, 401, "node B refuses the revoked key");
    assert_eq!(list(&a).await, 401, "node A refuses the revoked key");
}

/// A sign-in link made with `dbconsole sessions link` is exchanged on node A; node B accepts
/// the session (they share it), a second exchange of the link on B is refused (single use on
/// every node), and `dbconsole sessions revoke --user` ends the session on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_browser_session_is_shared_and_a_revoke_ends_it_on_both_nodes() {
    let (a, b, _dir, schema) = two_nodes().await;
    let printed = admin(
        &schema,
        "sessions",
        &[
            "link",
            "--user",
            "Ann@Example.com",
            "--public-url",
            "http://localhost",
        ],
    )
    .await;
    let token = printed
        .split("#sign-in=")
        .nth(1)
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_else(|| panic!("no link in:\n{printed}"));
    let browser = [("x-dbconsole-request", "1"), ("origin", "http://localhost")];
    let body = json!({ "token": token }).to_string();
    let signed = request(
        a.addr,
        "POST",
        "/api/v1/console/sign-in/link",
        &browser,
        Some(&body),
    )
    .await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    let cookie = signed
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_owned();
    let again = request(
        b.addr,
        "POST",
        "/api/v1/console/sign-in/link",
        &browser,
        Some(&body),
    )
    .await;
    assert_eq!(
        again.status, 401,
        "a link works once, on every node: {}",
        again.body
    );
    let me = |node: &Node| {
        let cookie = cookie.clone();
        let addr = node.addr;
        async move {
            let headers = [("x-dbconsole-request", "1"), ("cookie", cookie.as_str())];
            request(addr, "GET", "/api/v1/console/me", &headers, None).await
        }
    };
    let on_b = me(&b).await;
    assert_eq!(
        on_b.status, 200,
        "node B knows node A's session: {}",
        on_b.body
    );
    assert_eq!(on_b.json()["user"], "ann@example.com");
    let listed = admin(&schema, "sessions", &["list"]).await;
    assert!(
        listed.contains("ann@example.com") && listed.contains("browser"),
        "{listed}"
    );
    assert!(!listed.contains(&token), "no secret in the listing");
    admin(
        &schema,
        "sessions",
        &["revoke", "--user", "ann@example.com"],
    )
    .await;
    assert_eq!(
        me(&a).await.status,
        401,
        "node A: the revoked session has ended"
    );
    assert_eq!(
        me(&b).await.status,
        401,
        "node B: the revoked session has ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_another_key_refuses_to_start() {
    let (_a, _b, dir, schema) = two_nodes().await;
    let other_key = "b3RoZXItbm9kZS1vdGhlci1zZWFsaW5nLWtleS0zMmI=";
    let output = match Node::try_start(&schema, other_key, &dir.path().join("c")).await {
        Ok(node) => panic!("a node with another key started on {}", node.addr),
        Err(output) => output,
    };
    assert!(
        output.contains(
            "the secret key does not match the one the PostgreSQL store was written with: \
             every node must run with the same seal keys (DBCONSOLE_SECRET_KEY or key file)"
        ),
        "{output}"
    );
    assert!(!output.contains(other_key), "the key is never printed");
}

/// The secret of a new `query` key bound to `user` (`dbconsole keys create`).
async fn user_key(schema: &str, user: &str) -> String {
    let created = keys(
        schema,
        &[
            "create", "--kind", "api-key", "--scope", "query", "--user", user, "--name", user,
        ],
    )
    .await;
    created
        .lines()
        .find_map(|line| line.strip_prefix("secret:"))
        .map(|value| value.trim().to_owned())
        .unwrap_or_else(|| panic!("no secret in:\n{created}"))
}

/// One request with `key`: status and JSON body (null when not JSON).
async fn call_as(
    addr: SocketAddr,
    key: &str,
    method: &str,
    path: String,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.as_ref().map(Value::to_string);
    let headers = [("x-api-key", key)];
    let response = request(addr, method, &path, &headers, body.as_deref()).await;
    let json = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response.status, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reviews_and_runs_racing_through_both_nodes_count_exactly_and_run_once() {
    let (a, b, _dir, schema) = two_nodes().await;
    let author = user_key(&schema, "ann@example.com").await;
    let mut reviewers = Vec::new();
    for index in 0..6 {
        reviewers.push(user_key(&schema, &format!("rev{index}@example.com")).await);
    }
    let (status, db) = a
        .call(
            "POST",
            DATABASES,
            Some(&json!({
                "name": "Reviewed on two nodes",
                "adapter": "postgres",
                "hostname": "127.0.0.1",
                "port": 5432,
                "database": "checkdb",
                "credentials": [{"username": "checker", "password": "checkpw", "reviews_required": 6}],
            })),
        )
        .await;
    assert_eq!(status, 200, "{db}");
    // A query by the author, through node b: its id.
    let create = |sql: &'static str| {
        let (author, db) = (author.clone(), db.clone());
        async move {
            let (status, query) = call_as(
                b.addr,
                &author,
                "POST",
                "/api/v1/console/queries".to_owned(),
                Some(json!({
                    "database_id": db["id"],
                    "credential_id": db["credentials"][0]["id"],
                    "query": sql,
                    "title": "Counted across nodes",
                    "description": "Six approvals from two nodes.",
                })),
            )
            .await;
            assert_eq!(status, 200, "{query}");
            query["id"].as_str().unwrap().to_owned()
        }
    };
    // Query `id` as the author reads it through `node`.
    let read = |node: SocketAddr, id: String| {
        let author = author.clone();
        async move {
            call_as(
                node,
                &author,
                "GET",
                format!("/api/v1/console/queries/{id}"),
                None,
            )
            .await
            .1
        }
    };
    let id = create("SELECT count(*) AS n FROM generate_series(1, 10)").await;
    let reviews = format!("/api/v1/console/queries/{id}/reviews");

    // Six reviewers, each approving twice at once, alternating nodes.
    let approvals = join_all((0..12).map(|index| {
        let node = if index % 2 == 0 { a.addr } else { b.addr };
        let (key, path) = (reviewers[index % 6].clone(), reviews.clone());
        async move {
            call_as(
                node,
                &key,
                "POST",
                path,
                Some(json!({"decision": "approve"})),
            )
            .await
            .0
        }
    }))
    .await;
    let mut counted = approvals.clone();
    counted.sort_unstable();
    assert_eq!(
        counted,
        [200; 6]
            .iter()
            .chain([409; 6].iter())
            .copied()
            .collect::<Vec<_>>()
    );
    let stored = read(a.addr, id.clone()).await;
    assert_eq!(stored["approvals"], 6, "{stored}");
    assert_eq!(stored["status"], "ready");

    // Eight runs at once through both nodes: one runs, the others are 409.
    let runs = join_all((0..8).map(|index| {
        let node = if index % 2 == 0 { a.addr } else { b.addr };
        let (key, path) = (author.clone(), format!("/api/v1/console/queries/{id}/run"));
        async move {
            let response = request(node, "POST", &path, &[("x-api-key", &key)], None).await;
            (response.status, response.body)
        }
    }))
    .await;
    let ran = runs.iter().filter(|(status, _)| *status == 200).count();
    assert_eq!(ran, 1, "{runs:?}");
    // The one run's outcome, as either node reads it once recorded: one row, succeeded.
    let done = eventually(
        Duration::from_secs(10),
        "the run's outcome is recorded",
        || async {
            let done = read(b.addr, id.clone()).await;
            (done["status"] != "running").then_some(done)
        },
    )
    .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["run"]["row_count"], 1, "{done}");
    assert!(
        runs.iter()
            .all(|(status, _)| *status == 200 || *status == 409),
        "{runs:?}"
    );
    let (_, events) = a
        .call(
            "GET",
            &format!("/api/v1/console/audit?resource={id}&limit=100"),
            None,
        )
        .await;
    let actions: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions.iter().filter(|a| **a == "query.review").count(), 6);
    assert_eq!(actions.iter().filter(|a| **a == "query.run").count(), 1);

    // The last approval racing four runs through both nodes, a few times over: the approval
    // always counts (no run can claim before it), at most one run wins the race, and the
    // query runs exactly once in all.
    for round in 0..5 {
        let id = create("SELECT 1 AS one").await;
        let reviews = format!("/api/v1/console/queries/{id}/reviews");
        for key in &reviewers[..5] {
            let (status, _) = call_as(
                a.addr,
                key,
                "POST",
                reviews.clone(),
                Some(json!({"decision": "approve"})),
            )
            .await;
            assert_eq!(status, 200);
        }
        let last = {
            let (key, path) = (reviewers[5].clone(), reviews.clone());
            tokio::spawn(async move {
                call_as(
                    a.addr,
                    &key,
                    "POST",
                    path,
                    Some(json!({"decision": "approve"})),
                )
                .await
                .0
            })
        };
        let runs = join_all((0..4).map(|index| {
            let node = if index % 2 == 0 { b.addr } else { a.addr };
            let (key, path) = (author.clone(), format!("/api/v1/console/queries/{id}/run"));
            async move {
                request(node, "POST", &path, &[("x-api-key", &key)], None)
                    .await
                    .status
            }
        }))
        .await;
        assert_eq!(
            last.await.unwrap(),
            200,
            "round {round}: the approval counts"
        );
        let won = runs.iter().filter(|status| **status == 200).count();
        assert!(won <= 1, "round {round}: {runs:?}");
        assert!(runs.iter().all(|s| *s == 200 || *s == 409), "{runs:?}");
        let after = request(
            b.addr,
            "POST",
            &format!("/api/v1/console/queries/{id}/run"),
            &[("x-api-key", &author)],
            None,
        )
        .await
        .status;
        assert_eq!(
            won + usize::from(after == 200),
            1,
            "round {round}: runs once in all ({runs:?}, then {after})"
        );
        let stored = read(a.addr, id.clone()).await;
        assert_eq!(stored["approvals"], 6, "round {round}: {stored}");
    }
}

/// Runs the futures at once, each on a task of its own, and returns their outputs in order.
async fn join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::new();
    for handle in handles {
        outputs.push(handle.await.expect("a request task panicked"));
    }
    outputs
}
