//! Cases on the outbox (docs/workflows.md, "Workflows and notifications"): a delivery is written with the
//! log of its write or not at all; the listing is newest first, by status; a claim leases each
//! due delivery to one claimer until its lease ends; a replace (with its log) and a swap
//! (without) are compare-and-swaps; racing claimers never get one delivery twice.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::check::{absent, assert_err, found, ok};
use super::origin;
use super::queries::{log_of, query};
use super::races::race_all;
use crate::model::{
    AuditAction, AuditEvent, Delivery, DeliveryStatus, QueryStatus, Target, TargetKind, Timestamp,
};
use crate::storage::{AuditQuery, Page, Storage, StorageError, WriteLog};

/// Every kind of receiver: a claimer that sends them all.
const ALL: [TargetKind; 2] = TargetKind::ALL;

fn delivery(n: usize, now: Timestamp) -> Delivery {
    let target = if n.is_multiple_of(2) {
        Target::Workflow {
            workflow_id: format!("wf-{n}"),
        }
    } else {
        Target::Slack {
            channel: "#reviews".to_owned(),
        }
    };
    Delivery::new(
        target,
        format!(r#"{{"n":{n},"text":"ünï"}}"#),
        "dash_conformance",
        now,
    )
}

fn event(resource: &str) -> AuditEvent {
    AuditEvent::new(origin(), AuditAction::ActionTrigger, resource, Vec::new())
}

fn log_with(resource: &str, outbox: Vec<Delivery>) -> WriteLog {
    WriteLog {
        event: event(resource),
        answer: None,
        outbox,
    }
}

/// An operator's retry of `delivery`: the log of a replace.
fn retry_log(delivery: &Delivery) -> WriteLog {
    WriteLog::from(AuditEvent::new(
        origin(),
        AuditAction::DeliveryRetry,
        delivery.id.as_str(),
        vec!["status".to_owned()],
    ))
}

/// A write's deliveries are stored with its change and event (a query, a log alone), whole;
/// a refused write stores none.
pub async fn deliveries_are_written_with_their_log_or_not_at_all(storage: Arc<dyn Storage>) {
    let now = Timestamp::now();
    // With a record's change.
    let waiting = query("db_1", "ann", QueryStatus::AwaitingReview);
    let mut log = log_of(&waiting, AuditAction::QueryCreate);
    let slack = delivery(1, now);
    log.outbox.push(slack.clone());
    ok(
        storage.create_query(waiting.clone(), log).await,
        "create_query",
    );
    let stored = found(storage.delivery(slack.id.as_str()).await, "delivery");
    assert_eq!(stored, slack, "a delivery reads back whole");
    // A refused change writes none of its deliveries (nor its event).
    let mut refused = log_of(&waiting, AuditAction::QueryCreate);
    let lost = delivery(3, now);
    refused.outbox.push(lost.clone());
    let refused_event = refused.event.id.clone();
    assert_err!(
        storage.create_query(waiting.clone(), refused).await,
        StorageError::AlreadyExists,
        "create_query with a taken id"
    );
    absent(
        storage.delivery(lost.id.as_str()).await,
        "delivery of a refused write",
    );
    // With a log alone (a trigger): its event and every delivery.
    let (a, b) = (delivery(4, now), delivery(6, now));
    let log = log_with("dash_t", vec![a.clone(), b.clone()]);
    let logged = log.event.id.clone();
    ok(storage.append_log(log).await, "append_log");
    for one in [&a, &b] {
        assert_eq!(
            &found(storage.delivery(one.id.as_str()).await, "delivery"),
            one
        );
    }
    let events = ok(
        storage
            .list_audit(AuditQuery {
                resource: None,
                after: None,
                limit: 100,
                ..Default::default()
            })
            .await,
        "list_audit",
    );
    assert!(events.iter().any(|e| e.id == logged), "the trigger's event");
    assert!(
        events.iter().all(|e| e.id != refused_event),
        "no event of the refused write"
    );
    absent(storage.delivery("dlv_missing").await, "delivery");
    absent(storage.delivery("dlv_\0").await, "delivery of a NUL id");
}

/// `list_deliveries` pages newest first, all of them or one status.
pub async fn deliveries_list_newest_first_by_status(storage: Arc<dyn Storage>) {
    let now = Timestamp::now();
    let all: Vec<Delivery> = (0..7).map(|n| delivery(n, now)).collect();
    ok(
        storage.append_log(log_with("dash_l", all.clone())).await,
        "append_log",
    );
    // Two delivered, one dead.
    for (index, dead) in [(1, false), (4, false), (5, true)] {
        let claimed = all[index].claimed(now, now.plus(Duration::from_secs(60)));
        let finished = if dead {
            let policy = crate::model::RetryPolicy {
                max_attempts: 1,
                ..Default::default()
            };
            claimed.failed(now, "refused".to_owned(), &policy, None)
        } else {
            claimed.delivered(now)
        };
        // The claim first, as a worker's would be.
        ok(
            storage
                .swap_delivery(claimed.clone(), all[index].updated_at)
                .await,
            "swap_delivery (claim)",
        );
        ok(
            storage.swap_delivery(finished, claimed.updated_at).await,
            "swap_delivery (outcome)",
        );
    }
    let ids = |found: &[Delivery]| -> Vec<String> {
        found.iter().map(|d| d.id.as_str().to_owned()).collect()
    };
    let newest_first: Vec<String> = all.iter().rev().map(|d| d.id.as_str().to_owned()).collect();
    let page = |after: Option<&'static str>, limit| Page { after, limit };
    let listed = ok(
        storage.list_deliveries(page(None, 100), None).await,
        "list_deliveries",
    );
    assert_eq!(ids(&listed), newest_first);
    let first = ok(
        storage.list_deliveries(page(None, 3), None).await,
        "list_deliveries",
    );
    assert_eq!(ids(&first), newest_first[..3]);
    let after = first[2].id.as_str().to_owned();
    let rest = ok(
        storage
            .list_deliveries(
                Page {
                    after: Some(&after),
                    limit: 100,
                },
                None,
            )
            .await,
        "list_deliveries after",
    );
    assert_eq!(ids(&rest), newest_first[3..]);
    for (status, expected) in [
        (DeliveryStatus::Delivered, vec![4, 1]),
        (DeliveryStatus::Dead, vec![5]),
        (DeliveryStatus::Pending, vec![6, 3, 2, 0]),
        (DeliveryStatus::Delivering, vec![]),
    ] {
        let listed = ok(
            storage.list_deliveries(page(None, 100), Some(status)).await,
            "list_deliveries by status",
        );
        let expected: Vec<String> = expected
            .iter()
            .map(|&n: &usize| all[n].id.as_str().to_owned())
            .collect();
        assert_eq!(ids(&listed), expected, "{status}");
        assert!(listed.iter().all(|d| d.status == status));
    }
    let pending_after = all[3].id.as_str().to_owned();
    let listed = ok(
        storage
            .list_deliveries(
                Page {
                    after: Some(&pending_after),
                    limit: 1,
                },
                Some(DeliveryStatus::Pending),
            )
            .await,
        "list_deliveries by status after",
    );
    assert_eq!(ids(&listed), [all[2].id.as_str()]);
}

/// A claim takes the due deliveries, oldest due first, up to its limit, and leases them: not
/// claimed again until the lease ends; delivered and dead ones never.
pub async fn claims_lease_due_deliveries_until_the_lease_ends(storage: Arc<dyn Storage>) {
    let now = Timestamp::now();
    let later = now.plus(Duration::from_secs(3600));
    let mut early = delivery(0, now);
    early.due_at = Some(Timestamp::from_micros(now.as_micros() - 2_000_000));
    let due = delivery(2, now);
    let mut future = delivery(4, now);
    future.due_at = Some(later);
    ok(
        storage
            .append_log(log_with(
                "dash_c",
                vec![due.clone(), future.clone(), early.clone()],
            ))
            .await,
        "append_log",
    );
    let lease = now.plus(Duration::from_secs(30));
    let first = ok(storage.claim_deliveries(now, lease, 1, &ALL).await, "claim");
    assert_eq!(first.len(), 1, "at most the limit");
    assert_eq!(first[0].id, early.id, "the oldest due first");
    assert_eq!(first[0], early.claimed(now, lease), "answered as claimed");
    assert_eq!(
        found(storage.delivery(early.id.as_str()).await, "delivery"),
        first[0],
        "stored as claimed"
    );
    let second = ok(
        storage.claim_deliveries(now, lease, 10, &ALL).await,
        "claim",
    );
    assert_eq!(
        second.len(),
        1,
        "the one left due; not the leased, not the future"
    );
    assert_eq!(second[0].id, due.id);
    assert_eq!(second[0].status, DeliveryStatus::Delivering);
    assert_eq!(second[0].attempts, 1);
    assert!(
        ok(
            storage.claim_deliveries(now, lease, 10, &ALL).await,
            "claim"
        )
        .is_empty(),
        "leased deliveries are not claimed again while the lease lasts"
    );
    // The lease ends (its worker stopped): claimed again, a second attempt.
    let after_lease = lease.plus(Duration::from_micros(1));
    let again = ok(
        storage
            .claim_deliveries(
                after_lease,
                after_lease.plus(Duration::from_secs(30)),
                10,
                &ALL,
            )
            .await,
        "claim after the lease",
    );
    let mut again_ids: Vec<&str> = again.iter().map(|d| d.id.as_str()).collect();
    again_ids.sort_unstable();
    let mut expected = vec![early.id.as_str(), due.id.as_str()];
    expected.sort_unstable();
    assert_eq!(again_ids, expected);
    assert!(again.iter().all(|d| d.attempts == 2));
    // Delivered and dead ones are never claimed.
    let delivered = again[0].delivered(after_lease);
    ok(
        storage.swap_delivery(delivered, again[0].updated_at).await,
        "swap_delivery",
    );
    let the_end = Timestamp::from_micros(i64::MAX - 1);
    let last = ok(
        storage.claim_deliveries(the_end, the_end, 10, &ALL).await,
        "claim at the end of time",
    );
    let mut last_ids: Vec<&str> = last.iter().map(|d| d.id.as_str()).collect();
    last_ids.sort_unstable();
    let mut expected = vec![again[1].id.as_str(), future.id.as_str()];
    expected.sort_unstable();
    assert_eq!(
        last_ids, expected,
        "the other one, and the future one, now due"
    );
}

/// A claim takes only the kinds its claimer sends: the others stay pending, untouched, for a
/// claimer that sends them.
pub async fn claims_take_only_the_kinds_asked_for(storage: Arc<dyn Storage>) {
    let now = Timestamp::now();
    // Even: workflow runs; odd: Slack messages.
    let all: Vec<Delivery> = (0..6).map(|n| delivery(n, now)).collect();
    ok(
        storage.append_log(log_with("dash_k", all.clone())).await,
        "append_log",
    );
    let lease = now.plus(Duration::from_secs(30));
    let workflows = ok(
        storage
            .claim_deliveries(now, lease, 10, &[TargetKind::Workflow])
            .await,
        "claim workflows",
    );
    assert_eq!(workflows.len(), 3, "{workflows:?}");
    assert!(
        workflows
            .iter()
            .all(|d| d.target.kind() == TargetKind::Workflow)
    );
    for slack in all.iter().filter(|d| d.target.kind() == TargetKind::Slack) {
        assert_eq!(
            found(storage.delivery(slack.id.as_str()).await, "delivery"),
            *slack,
            "untouched by a claimer that does not send it"
        );
    }
    assert!(
        ok(
            storage.claim_deliveries(now, lease, 10, &[]).await,
            "claim none"
        )
        .is_empty(),
        "a claimer that sends nothing claims nothing"
    );
    let slack = ok(
        storage
            .claim_deliveries(now, lease, 10, &[TargetKind::Slack])
            .await,
        "claim Slack messages",
    );
    assert_eq!(slack.len(), 3, "{slack:?}");
    assert!(slack.iter().all(|d| d.target.kind() == TargetKind::Slack));
    assert!(
        ok(
            storage.claim_deliveries(now, lease, 10, &ALL).await,
            "claim"
        )
        .is_empty(),
        "all leased"
    );
}

/// `swap_delivery` and `replace_delivery` swap only at the stored version, and
/// `replace_delivery` writes its log with the change.
pub async fn delivery_replace_is_a_compare_and_swap(storage: Arc<dyn Storage>) {
    let now = Timestamp::now();
    let one = delivery(0, now);
    ok(
        storage
            .append_log(log_with("dash_s", vec![one.clone()]))
            .await,
        "append_log",
    );
    let lease = now.plus(Duration::from_secs(30));
    let claimed = ok(
        storage.claim_deliveries(now, lease, 10, &ALL).await,
        "claim",
    )
    .remove(0);
    // A worker whose lease was taken over writes at a stale version: refused, nothing changes.
    let stale = one.delivered(now);
    assert_err!(
        storage.swap_delivery(stale.clone(), one.updated_at).await,
        StorageError::Conflict,
        "swap_delivery at a stale version"
    );
    assert_err!(
        storage
            .replace_delivery(stale, one.updated_at, retry_log(&one))
            .await,
        StorageError::Conflict,
        "replace_delivery at a stale version"
    );
    assert_eq!(
        found(storage.delivery(one.id.as_str()).await, "delivery"),
        claimed
    );
    let mut missing = one.clone();
    missing.id = crate::model::DeliveryId::generate();
    assert_err!(
        storage.swap_delivery(missing.clone(), one.updated_at).await,
        StorageError::NotFound,
        "swap_delivery of a missing delivery"
    );
    assert_err!(
        storage
            .replace_delivery(missing.clone(), one.updated_at, retry_log(&missing))
            .await,
        StorageError::NotFound,
        "replace_delivery of a missing delivery"
    );
    // With a log: the change and its event together.
    let policy = crate::model::RetryPolicy {
        max_attempts: 1,
        ..Default::default()
    };
    let dead = claimed.failed(now, "refused".to_owned(), &policy, None);
    ok(
        storage
            .swap_delivery(dead.clone(), claimed.updated_at)
            .await,
        "swap_delivery (dead)",
    );
    let retried = dead.retried(Timestamp::now()).expect("dead");
    let log = retry_log(&one);
    let logged = log.event.id.clone();
    ok(
        storage
            .replace_delivery(retried.clone(), dead.updated_at, log)
            .await,
        "replace_delivery with a log",
    );
    assert_eq!(
        found(storage.delivery(one.id.as_str()).await, "delivery"),
        retried
    );
    let events = ok(
        storage
            .list_audit(AuditQuery {
                resource: Some(one.id.as_str()),
                after: None,
                limit: 10,
                ..Default::default()
            })
            .await,
        "list_audit",
    );
    assert_eq!(
        events.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
        [logged]
    );
    let claimed = ok(
        storage
            .claim_deliveries(Timestamp::now(), lease, 10, &ALL)
            .await,
        "claim the retried one",
    );
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].attempts, 1, "a retry starts its attempts again");
}

/// Eight claimers racing over 200 due deliveries claim each exactly once.
pub async fn racing_claims_never_hand_out_one_delivery_twice(storage: Arc<dyn Storage>) {
    const COUNT: usize = 200;
    let now = Timestamp::now();
    let all: Vec<Delivery> = (0..COUNT).map(|n| delivery(n, now)).collect();
    for chunk in all.chunks(50) {
        ok(
            storage.append_log(log_with("dash_r", chunk.to_vec())).await,
            "append_log",
        );
    }
    let lease = now.plus(Duration::from_secs(600));
    let claims = race_all(8, |_| {
        let storage = Arc::clone(&storage);
        async move {
            let mut mine = Vec::new();
            loop {
                let claimed = storage
                    .claim_deliveries(now, lease, 7, &ALL)
                    .await
                    .expect("claim_deliveries");
                if claimed.is_empty() {
                    return mine;
                }
                mine.extend(claimed.into_iter().map(|d| d.id.as_str().to_owned()));
            }
        }
    })
    .await;
    let mut seen = HashSet::new();
    for id in claims.iter().flatten() {
        assert!(seen.insert(id.clone()), "{id} was claimed twice");
    }
    assert_eq!(seen.len(), COUNT, "every due delivery was claimed");
}
