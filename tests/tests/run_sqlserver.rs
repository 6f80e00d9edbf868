//! Running queries on SQL Server, as far as no real server allows (none is obtainable here):
//! against the TDS stand-in of the check tests, a batch runs and answers its (empty) result, a
//! wrong password is a 502 that says why and no secret, and the timeout and the cancel close
//! the connection (what ends a statement on SQL Server, since tiberius sends no attention
//! signal): the stand-in receives the statement, then sees its client go. Parameters and
//! values are covered by the runner's unit tests.

mod check_support;
mod run_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use check_support::mock_tds::{CLOSED_WHILE_WAITING, WAITFOR_RECEIVED, mock_sql_server};
use dbconsole_tests::eventually;
use run_support::*;
use serde_json::json;

/// Waits (at most [`DEADLINE`]) for the stand-in to see one more client close its connection
/// while it held a `WAITFOR` batch than `before`.
async fn closed(before: usize) {
    eventually(
        DEADLINE,
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
    let received = WAITFOR_RECEIVED.load(Ordering::SeqCst);
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
    // The statement was on the server (the stand-in counts what it received, and holds it until
    // its client goes), and the timeout closed its connection.
    assert_eq!(
        WAITFOR_RECEIVED.load(Ordering::SeqCst),
        received + 1,
        "the stand-in received the statement"
    );
    closed(before).await;

    let before = CLOSED_WHILE_WAITING.load(Ordering::SeqCst);
    let received = WAITFOR_RECEIVED.load(Ordering::SeqCst);
    let (db, credentials) = console
        .database(
            "sqlserver",
            server.port(),
            json!({}),
            // Ended by the cancel within the deadline, never by a timeout.
            json!([{"username": "checker", "password": PASSWORD, "timeout": OUTLIVES}]),
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
    eventually(DEADLINE, "the stand-in receives the statement", || async {
        (WAITFOR_RECEIVED.load(Ordering::SeqCst) > received).then_some(())
    })
    .await;
    run.abort();
    closed(before).await;
}
