//! Cases on queries (docs/queries.md, "Running queries"): a query reads back whole; the history lists
//! newest first, in keyset pages, by database, author and status; a replace (with its log) and
//! a swap (without) are compare-and-swaps, and a swap lets exactly one of racing runs claim a
//! query; an event appended alone reads back with its run facts.

use std::sync::Arc;

use super::check::{absent, assert_err, found, ok};
use super::origin;
use super::races::race_all;
use crate::model::{
    AuditAction, AuditEvent, Query, QueryId, QueryRun, QueryStatus, RunFacts, RunOutcome, Timestamp,
};
use crate::storage::{AuditQuery, Page, QueryFilter, Storage, StorageError, WriteLog};

/// A query of `database` by `author` in `status`, for tests of the stores.
pub fn query(database: &str, author: &str, status: QueryStatus) -> Query {
    let now = Timestamp::now();
    Query {
        id: QueryId::generate(),
        database_id: database.to_owned(),
        credential_id: "crd_reader".to_owned(),
        query: "SELECT 'ünï' AS x -- with a comment".to_owned(),
        title: "ünï's <count>".to_owned(),
        description: "why:\n\tbecause".to_owned(),
        limit: 500,
        author: author.to_owned(),
        by_agent: false,
        target: None,
        status,
        reviews: Vec::new(),
        revision: 0,
        comments: Vec::new(),
        saved_query: Some("sq_01jdailysignups".to_owned()),
        params: vec![("since".to_owned(), "2025-01-01'; --".to_owned())],
        bypass: None,
        run: None,
        inserted_at: now,
        updated_at: now,
    }
}

/// The log of a write of `query` as `action`, for tests of the stores.
pub fn log_of(query: &Query, action: AuditAction) -> WriteLog {
    WriteLog::from(AuditEvent::new(
        origin(),
        action,
        query.id.as_str(),
        Vec::new(),
    ))
}

fn ids(queries: &[Query]) -> Vec<&str> {
    queries.iter().map(|q| q.id.as_str()).collect()
}

/// Queries read back whole; the history is newest first, paged by `after` (exclusive), and each
/// filter alone and combined keeps exactly its matches; a taken id is refused.
pub async fn queries_round_trip_and_list_newest_first(storage: Arc<dyn Storage>) {
    let mut stored = Vec::new();
    for (database, author, status) in [
        ("db_a", "alice", QueryStatus::Ready),
        ("db_b", "alice", QueryStatus::AwaitingReview),
        ("db_a", "bob", QueryStatus::Ready),
        ("db_a", "alice", QueryStatus::Ready),
        ("db_b", "bob", QueryStatus::Ready),
    ] {
        let query = query(database, author, status);
        ok(
            storage
                .create_query(query.clone(), log_of(&query, AuditAction::QueryCreate))
                .await,
            "create_query",
        );
        stored.push(query);
    }
    for query in &stored {
        let read = found(storage.query(query.id.as_str()).await, "query");
        assert_eq!(
            &read, query,
            "query must read back what create_query stored"
        );
    }
    absent(storage.query("qry_missing").await, "query of a missing id");
    assert_err!(
        storage
            .create_query(
                stored[0].clone(),
                log_of(&stored[0], AuditAction::QueryCreate)
            )
            .await,
        StorageError::AlreadyExists,
        "create_query with a taken id"
    );

    let newest_first: Vec<&str> = ids(&stored).into_iter().rev().collect();
    let all = ok(
        storage
            .list_queries(
                Page {
                    after: None,
                    limit: 100,
                },
                QueryFilter::default(),
            )
            .await,
        "list_queries",
    );
    assert_eq!(ids(&all), newest_first, "list_queries is newest first");
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = ok(
            storage
                .list_queries(
                    Page {
                        after: after.as_deref(),
                        limit: 2,
                    },
                    QueryFilter::default(),
                )
                .await,
            "list_queries by pages of 2",
        );
        assert!(page.len() <= 2, "list_queries must respect the limit");
        let Some(last) = page.last() else { break };
        after = Some(last.id.as_str().to_owned());
        paged.extend(page);
    }
    assert_eq!(
        ids(&paged),
        newest_first,
        "pages of 2 give the whole history"
    );

    let filters = [
        QueryFilter {
            database_id: Some("db_a"),
            ..QueryFilter::default()
        },
        QueryFilter {
            author: Some("alice"),
            ..QueryFilter::default()
        },
        QueryFilter {
            status: Some(QueryStatus::AwaitingReview),
            ..QueryFilter::default()
        },
        QueryFilter {
            database_id: Some("db_a"),
            author: Some("alice"),
            status: Some(QueryStatus::Ready),
        },
        QueryFilter {
            database_id: Some("db_missing"),
            ..QueryFilter::default()
        },
    ];
    for filter in filters {
        let expected: Vec<&str> = stored
            .iter()
            .rev()
            .filter(|q| filter.matches(q))
            .map(|q| q.id.as_str())
            .collect();
        let listed = ok(
            storage
                .list_queries(
                    Page {
                        after: None,
                        limit: 100,
                    },
                    filter,
                )
                .await,
            "list_queries with a filter",
        );
        assert_eq!(ids(&listed), expected, "list_queries with {filter:?}");
        // The second page of a filtered listing starts after the first's last id.
        if let Some(first) = expected.first() {
            let rest = ok(
                storage
                    .list_queries(
                        Page {
                            after: Some(first),
                            limit: 100,
                        },
                        filter,
                    )
                    .await,
                "list_queries with a filter, after its first",
            );
            assert_eq!(ids(&rest), expected[1..], "the rest of {filter:?}");
        }
    }
}

/// A replace at the stored version applies (with its event), a replace or a swap at another
/// version is a `Conflict` that changes nothing (and appends no event); of 16 racing claims
/// (swaps) of one ready query exactly one wins, and a status change moves the query between the
/// status filter's answers.
pub async fn query_replace_is_a_compare_and_swap(storage: Arc<dyn Storage>) {
    let ready = query("db_a", "alice", QueryStatus::Ready);
    ok(
        storage
            .create_query(ready.clone(), log_of(&ready, AuditAction::QueryCreate))
            .await,
        "create_query",
    );
    let claims = race_all(16, |index| {
        let storage = Arc::clone(&storage);
        let mut running = ready.clone();
        async move {
            running.status = QueryStatus::Running;
            running.updated_at = Timestamp::now();
            running.run = Some(QueryRun {
                run_by: format!("runner {index}"),
                started_at: running.updated_at,
                finished_at: None,
                row_count: 0,
                affected_rows: None,
                truncated: false,
                duration_ms: 0,
                error: None,
            });
            let result = storage.swap_query(running.clone(), ready.updated_at).await;
            (result, running)
        }
    })
    .await;
    let mut winners = Vec::new();
    for (result, running) in claims {
        match result {
            Ok(()) => winners.push(running),
            Err(StorageError::Conflict) => {}
            Err(other) => panic!("swap_query of a racing claim: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one racing claim of a query wins");
    let running = winners.remove(0);
    assert_eq!(
        found(storage.query(ready.id.as_str()).await, "query"),
        running,
        "the winning claim is what is stored"
    );

    let mut done = running.clone();
    done.status = QueryStatus::Succeeded;
    done.updated_at = Timestamp::now();
    if let Some(run) = &mut done.run {
        run.finished_at = Some(done.updated_at);
        run.row_count = 3;
        run.truncated = true;
        run.duration_ms = 12;
    }
    assert_err!(
        storage.swap_query(done.clone(), ready.updated_at).await,
        StorageError::Conflict,
        "swap_query at a stale version"
    );
    assert_err!(
        storage
            .replace_query(
                done.clone(),
                ready.updated_at,
                log_of(&done, AuditAction::QueryRun),
            )
            .await,
        StorageError::Conflict,
        "replace_query at a stale version"
    );
    assert_eq!(
        found(storage.query(ready.id.as_str()).await, "query"),
        running,
        "a conflicting replace changes nothing"
    );
    let mut missing = done.clone();
    missing.id = QueryId::generate();
    assert_err!(
        storage
            .swap_query(missing.clone(), running.updated_at)
            .await,
        StorageError::NotFound,
        "swap_query of a missing query"
    );
    assert_err!(
        storage
            .replace_query(
                missing.clone(),
                running.updated_at,
                log_of(&missing, AuditAction::QueryRun),
            )
            .await,
        StorageError::NotFound,
        "replace_query of a missing query"
    );
    ok(
        storage
            .replace_query(
                done.clone(),
                running.updated_at,
                log_of(&done, AuditAction::QueryRun),
            )
            .await,
        "replace_query at the stored version",
    );
    assert_eq!(found(storage.query(ready.id.as_str()).await, "query"), done);
    let events = ok(
        storage
            .list_audit(AuditQuery {
                resource: Some(ready.id.as_str()),
                after: None,
                limit: 10,
                ..Default::default()
            })
            .await,
        "list_audit",
    );
    let actions: Vec<AuditAction> = events.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [AuditAction::QueryRun, AuditAction::QueryCreate],
        "a replace appends its event, a swap none, a refused replace none"
    );
    for (status, expected) in [
        (QueryStatus::Ready, 0),
        (QueryStatus::Running, 0),
        (QueryStatus::Succeeded, 1),
    ] {
        let listed = ok(
            storage
                .list_queries(
                    Page {
                        after: None,
                        limit: 10,
                    },
                    QueryFilter {
                        status: Some(status),
                        ..QueryFilter::default()
                    },
                )
                .await,
            "list_queries by status",
        );
        assert_eq!(listed.len(), expected, "queries {status} after the run");
    }
}

/// An event appended alone reads back whole, with the facts of its run.
pub async fn appended_events_keep_their_run_facts(storage: Arc<dyn Storage>) {
    let mut event = AuditEvent::new(
        origin(),
        AuditAction::PanelRun,
        "dash_01",
        vec!["pl_01".to_owned()],
    );
    event.run = Some(RunFacts {
        database_id: "db_a".to_owned(),
        credential_id: "crd_reader".to_owned(),
        statement_sha256: "ab".repeat(32),
        statement_length: 42,
        rows: 7,
        affected_rows: Some(5),
        duration_ms: 3,
        outcome: RunOutcome::Cancelled,
    });
    ok(storage.append_log(event.clone().into()).await, "append_log");
    let events = ok(
        storage
            .list_audit(AuditQuery {
                resource: Some("dash_01"),
                after: None,
                limit: 10,
                ..Default::default()
            })
            .await,
        "list_audit",
    );
    assert_eq!(events, [event], "append_log stores the event whole");
}
