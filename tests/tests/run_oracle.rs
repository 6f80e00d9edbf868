//! Running queries on Oracle, as far as this machine allows: no Oracle Client library (nor
//! server) is obtainable here, so a run answers 502 naming the missing library, and the query's
//! history says it failed. Binds and values are covered by the runner's unit tests.

mod run_support;

use run_support::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_the_oracle_client_says_so() {
    let console = run_console();
    let (db, credentials) = console
        .database(
            "oracle",
            1521,
            json!({"database": "ORCLPDB1"}),
            json!([{"username": "checker", "password": PASSWORD}]),
        )
        .await;
    let (id, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "SELECT 1 FROM dual",
            None,
            None,
        )
        .await;
    let text = answer.expect(502).text();
    assert!(
        text.contains("Oracle Client library not found on this server"),
        "{text}"
    );
    assert!(!text.contains(PASSWORD), "{text}");
    assert_eq!(console.history(&alice(), &id).await["status"], "failed");
}

/// A run refused before it starts (no runner for the adapter: 501) leaves the query ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_run_leaves_the_query_ready() {
    let console = run_console_with(dbconsole_core::run::Runners::none());
    let (db, credentials) = console
        .database(
            "postgres",
            1,
            json!({}),
            json!([{"username": "checker", "password": PASSWORD}]),
        )
        .await;
    let (id, answer) = console
        .query(&alice(), &db, &credentials[0], "SELECT 1", None, None)
        .await;
    let text = answer.expect(501).text();
    assert!(text.contains("not built into this server"), "{text}");
    assert_eq!(console.history(&alice(), &id).await["status"], "ready");
}
