//! Running queries on SQL Server, as far as no real server allows (none is obtainable here):
//! against the TDS stand-in of the check tests, a batch runs and answers its (empty) result, a
//! wrong password is a 502 that says why and no secret, and the timeout and the cancel close
//! the connection (what ends a statement on SQL Server, since tiberius sends no attention
//! signal): the stand-in sees its client go within a second. Parameters and values are covered
//! by the runner's unit tests.

mod check_support;
mod run_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use check_support::mock_tds::{CLOSED_WHILE_WAITING, WAITFOR_RECEIVED, mock_sql_server};
use dbconsole_tests::eventually;
use run_support::*;
use serde_json::json;

async fn closed_within(before: usize, within: Duration) {
    eventually(
        within,
        "the stand-in sees its client close the connection",
        || async { (CLOSED_WHILE_WAITING.load(Ordering::SeqCst) > before).then_some(()) },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_run_and_the_timeout_and_cancel_close_the_connection() {
    let server = mock_sql_server().await;
    let console = Arc::new(run_console());
    let (db, credentials) = console
        .database(
            "sqlserver",
            server.port(),
            json!({}),
            json!([
                {"username": "checker", "password": PASSWORD, "timeout": 1},
                {"username": "other", "password": "Wr0ng-Pa55word-7731"},
            ]),
        )
        .await;
    let (_, answer) = console
        .query(&alice(), &db, &credentials[0], "SELECT 1", None, None)
        .await;
    let result = answer.expect(200).json();
    assert_eq!(result["columns"], json!([]));
    assert_eq!(result["row_count"], 0);

    let (_, answer) = console
        .query(&alice(), &db, &credentials[1], "SELECT 1", None, None)
        .await;
    let text = answer.expect(502).text();
    assert!(text.contains("Login failed"), "{text}");
    assert!(!text.contains("Wr0ng-Pa55word-7731"), "{text}");

    let before = CLOSED_WHILE_WAITING.load(Ordering::SeqCst);
    let started = Instant::now();
    let (_, answer) = console
        .query(
            &alice(),
            &db,
            &credentials[0],
            "WAITFOR DELAY '00:10:00'",
            None,
            None,
        )
        .await;
    answer.expect(504);
    assert!(started.elapsed() < Duration::from_secs(3));
    closed_within(before, Duration::from_secs(1)).await;

    let before = CLOSED_WHILE_WAITING.load(Ordering::SeqCst);
    let received = WAITFOR_RECEIVED.load(Ordering::SeqCst);
    let (db, credentials) = console
        .database(
            "sqlserver",
            server.port(),
            json!({}),
            json!([{"username": "checker", "password": PASSWORD}]),
        )
        .await;
    let created = console
        .create_query(
            &alice(),
            &db,
            &credentials[0],
            "WAITFOR DELAY '00:10:00'",
            None,
        )
        .await
        .expect(200)
        .json();
    let id = created["id"].as_str().unwrap().to_owned();
    let run = {
        let console = Arc::clone(&console);
        tokio::spawn(async move { console.run(&alice(), &id, None).await })
    };
    // The client goes away once its statement is on the server.
    eventually(
        Duration::from_secs(10),
        "the stand-in receives the statement",
        || async { (WAITFOR_RECEIVED.load(Ordering::SeqCst) > received).then_some(()) },
    )
    .await;
    run.abort();
    closed_within(before, Duration::from_secs(1)).await;
}
