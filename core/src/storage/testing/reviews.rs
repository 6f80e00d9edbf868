//! Cases on reviews (docs/queries.md, "Reviews"), each a race through [`Edits::update_query`]: racing
//! reviewers each count once and one reviewer counts once however often they race; approvals
//! racing runs let the query run exactly once, and every approval is either counted before the
//! claim or refused after it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::check::{found, ok};
use super::origin;
use super::queries::{log_of, query};
use super::races::race_all;
use crate::model::{
    AuditAction, AuditEvent, Decision, Query, QueryStatus, Review, ReviewRefusal, RunRefusal,
    Timestamp,
};
use crate::storage::{AuditQuery, Edits as _, Storage, WriteLog};

/// How often a racing run looks again at a query that still awaits its approval.
const RUN_LOOKS: usize = 5_000;

/// `reviewer` approves query `id` (requiring `required`), with its event, as the service does.
async fn approve(
    storage: Arc<dyn Storage>,
    id: String,
    reviewer: String,
    required: u32,
) -> Result<Query, ReviewRefusal> {
    let changed = storage
        .update_query(&id, |stored| {
            let review = Review {
                reviewer: reviewer.clone(),
                decision: Decision::Approve,
                comment: None,
                at: Timestamp::now(),
                revision: stored.revision,
            };
            let next = stored.reviewed(review, required)?;
            let event = AuditEvent::new(
                origin(),
                AuditAction::QueryReview,
                &id,
                vec!["reviews".to_owned()],
            );
            Ok((next, Some(WriteLog::from(event))))
        })
        .await;
    ok(changed, "update_query with a review")
}

/// Claims query `id` for its run, looking again while it awaits its approvals; whether this
/// claim won.
async fn run(storage: Arc<dyn Storage>, id: String, required: u32) -> bool {
    for _ in 0..RUN_LOOKS {
        let claimed = storage
            .update_query(&id, |stored| {
                Ok((
                    stored.claimed("ann", required, None, Timestamp::now())?,
                    None,
                ))
            })
            .await;
        match ok(claimed, "update_query with a claim") {
            Ok(_) => return true,
            Err(RunRefusal::AlreadyRan) => return false,
            Err(RunRefusal::AwaitingReview { .. }) => {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            Err(other) => panic!("a racing run was refused: {other}"),
        }
    }
    panic!("the query never became ready to run");
}

/// Stores a query by `ann` that awaits its reviews; its id.
async fn awaiting_query(storage: &Arc<dyn Storage>) -> String {
    let waiting = query("db_a", "ann", QueryStatus::AwaitingReview);
    ok(
        storage
            .create_query(waiting.clone(), log_of(&waiting, AuditAction::QueryCreate))
            .await,
        "create_query",
    );
    waiting.id.as_str().to_owned()
}

fn reviewers(query: &Query) -> BTreeSet<&str> {
    query.reviews.iter().map(|r| r.reviewer.as_str()).collect()
}

/// Eight reviewers approving at once each count once, and the same reviewer racing eight times
/// with them counts once: the stored approvals are exactly the eight reviewers, each with its
/// one event, and the query is ready.
pub async fn racing_reviewers_each_count_once(storage: Arc<dyn Storage>) {
    let id = awaiting_query(&storage).await;
    let outcomes = race_all(16, |index| {
        // Eight distinct reviewers, then `rev0` eight more times.
        let reviewer = format!("rev{}", if index < 8 { index } else { 0 });
        approve(Arc::clone(&storage), id.clone(), reviewer, 8)
    })
    .await;
    let approved = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(approved, 8, "each reviewer counts once: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .filter_map(|o| o.as_ref().err())
            .all(|refusal| *refusal == ReviewRefusal::AlreadyReviewed),
        "a repeated review is refused as already reviewed: {outcomes:?}"
    );
    let stored = found(storage.query(&id).await, "query");
    assert_eq!(stored.approvals(), 8, "the count is exact");
    let expected: BTreeSet<String> = (0..8).map(|i| format!("rev{i}")).collect();
    let expected: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    assert_eq!(reviewers(&stored), expected);
    assert_eq!(
        stored.status,
        QueryStatus::Ready,
        "eight of eight approvals"
    );
    let events = ok(
        storage
            .list_audit(AuditQuery {
                resource: Some(&id),
                after: None,
                limit: 100,
                ..Default::default()
            })
            .await,
        "list_audit",
    );
    let reviews = events
        .iter()
        .filter(|e| e.action == AuditAction::QueryReview)
        .count();
    assert_eq!(
        reviews, 8,
        "one event per counted review, none for a refused one"
    );
}

/// Two approvals race eight runs of a query that needs one: exactly one run claims it; an
/// approval either landed before the claim (and is stored) or is refused because the query is
/// running, never lost; the winning claim saw an approval.
pub async fn approvals_racing_runs_let_the_query_run_once(storage: Arc<dyn Storage>) {
    let id = awaiting_query(&storage).await;
    enum Outcome {
        Approved(Result<(), ReviewRefusal>),
        Ran(bool),
    }
    let outcomes = race_all(10, |index| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        async move {
            match index {
                0 => Outcome::Approved(approve(storage, id, "bo".to_owned(), 1).await.map(drop)),
                1 => Outcome::Approved(approve(storage, id, "cy".to_owned(), 1).await.map(drop)),
                _ => Outcome::Ran(run(storage, id, 1).await),
            }
        }
    })
    .await;
    let mut runs = 0;
    let mut approved = BTreeSet::new();
    for (index, outcome) in outcomes.iter().enumerate() {
        match outcome {
            Outcome::Ran(won) => runs += usize::from(*won),
            Outcome::Approved(Ok(_)) => {
                approved.insert(if index == 0 { "bo" } else { "cy" });
            }
            Outcome::Approved(Err(refusal)) => assert_eq!(
                *refusal,
                ReviewRefusal::Closed(QueryStatus::Running),
                "an approval is refused only once the query runs"
            ),
        }
    }
    assert_eq!(runs, 1, "the query runs exactly once");
    let stored = found(storage.query(&id).await, "query");
    assert_eq!(stored.status, QueryStatus::Running);
    assert!(!approved.is_empty(), "the run needed an approval");
    assert_eq!(
        reviewers(&stored),
        approved,
        "exactly the approvals that were answered yes are stored"
    );
    assert_eq!(stored.bypass, None);
}
