//! The outbox: what the service must send somewhere else after it answered (a row action's
//! workflow run, a review request's Slack message), kept until it was sent (docs/workflows.md,
//! "Workflows and notifications").
//!
//! A [`Delivery`] is written in the same atomic change as the event that makes it (a trigger, a
//! query waiting for reviews). The outbox worker (`dbconsole_core::outbox`) claims due deliveries for a
//! lease, sends them, and writes the outcome; the transitions are the pure functions here, so
//! every backend and every node applies the same rules.

use std::time::Duration;

use super::{DeliveryId, Timestamp};

/// Where a delivery is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryStatus {
    /// Waiting for its next attempt (`due_at`).
    Pending,
    /// Claimed by a worker that is sending it now, until `due_at` (its lease). A worker that
    /// stopped while it sent leaves it here; once the lease ends it is due again.
    Delivering,
    /// The receiver took it.
    Delivered,
    /// Every attempt failed: kept as a dead letter until someone retries it by hand.
    Dead,
}

wire_enum!(DeliveryStatus, [
    Pending => "pending",
    Delivering => "delivering",
    Delivered => "delivered",
    Dead => "dead",
]);

/// Where a delivery goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The server's workflow endpoint, for this workflow.
    Workflow {
        /// The workflow to start (the action's `workflow_id`).
        workflow_id: String,
    },
    /// Slack's `chat.postMessage`, to this channel.
    Slack {
        /// The database's `slack_channel`.
        channel: String,
    },
}

/// What kind of receiver a delivery goes to: what a node must be set up to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    /// A workflow run ([`Target::Workflow`]).
    Workflow,
    /// A Slack message ([`Target::Slack`]).
    Slack,
}

wire_enum!(TargetKind, [
    Workflow => "workflow",
    Slack => "slack",
]);

impl Target {
    /// Its kind of receiver.
    pub fn kind(&self) -> TargetKind {
        match self {
            Target::Workflow { .. } => TargetKind::Workflow,
            Target::Slack { .. } => TargetKind::Slack,
        }
    }
}

/// One message of the outbox, with the state of its delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Assigned when made (`dlv_…`); also the `Idempotency-Key` a receiver sees on every
    /// attempt.
    pub id: DeliveryId,
    /// Where it goes.
    pub target: Target,
    /// The JSON body, fixed when it was made: every attempt sends the same bytes.
    pub body: String,
    /// The record it came from (a dashboard or a query).
    pub resource_id: String,
    /// Where it is in its life.
    pub status: DeliveryStatus,
    /// Attempts started so far (a claim counts as one, even when its worker stopped).
    pub attempts: u32,
    /// When it is due: its next attempt while pending, the end of its lease while delivering;
    /// `None` once delivered or dead.
    pub due_at: Option<Timestamp>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When it was made.
    pub inserted_at: Timestamp,
    /// Time of the last change; strictly increases (what a replace compares).
    pub updated_at: Timestamp,
    /// When the receiver took it.
    pub delivered_at: Option<Timestamp>,
}

/// How often and how far apart a delivery is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts before a delivery becomes a dead letter.
    pub max_attempts: u32,
    /// The wait after the first failure; it doubles after each next one.
    pub base: Duration,
    /// The longest wait between two attempts.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    /// 8 attempts, waiting about 1 s, 2 s, 4 s … up to 5 minutes: about 8 minutes in all.
    fn default() -> Self {
        Self {
            max_attempts: 8,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// The wait before the attempt after `attempts` failed ones: `base · 2^(attempts-1)`, at
    /// most `cap`, with "equal jitter" (half of it fixed, half drawn at random) so that the
    /// deliveries of one outage don't come back all at once.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let exponent = attempts.saturating_sub(1).min(30);
        let full = self.base.saturating_mul(1 << exponent).min(self.cap);
        let half = full / 2;
        half + half.mul_f64(rand::random::<f64>())
    }
}

impl Delivery {
    /// A new delivery of `body` to `target`, due now.
    pub fn new(target: Target, body: String, resource_id: &str, now: Timestamp) -> Self {
        Self {
            id: DeliveryId::generate(),
            target,
            body,
            resource_id: resource_id.to_owned(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            due_at: Some(now),
            last_error: None,
            inserted_at: now,
            updated_at: now,
            delivered_at: None,
        }
    }

    /// When a worker may claim it, if ever again: its next attempt while pending, the end of
    /// its lease while delivering; `None` once delivered or dead. What a store indexes the
    /// live outbox by.
    pub fn claimable_at(&self) -> Option<Timestamp> {
        match self.status {
            DeliveryStatus::Pending | DeliveryStatus::Delivering => self.due_at,
            DeliveryStatus::Delivered | DeliveryStatus::Dead => None,
        }
    }

    /// Whether a worker may claim it at `now`: pending and due, or delivering past its lease.
    pub fn is_due(&self, now: Timestamp) -> bool {
        self.claimable_at().is_some_and(|due| due <= now)
    }

    /// Claimed at `now` by a worker for an attempt that ends by `lease_until`.
    pub fn claimed(&self, now: Timestamp, lease_until: Timestamp) -> Self {
        Self {
            status: DeliveryStatus::Delivering,
            attempts: self.attempts.saturating_add(1),
            due_at: Some(lease_until),
            updated_at: now.not_before_next(self.updated_at),
            ..self.clone()
        }
    }

    /// Taken by its receiver at `now`.
    pub fn delivered(&self, now: Timestamp) -> Self {
        Self {
            status: DeliveryStatus::Delivered,
            due_at: None,
            last_error: None,
            delivered_at: Some(now),
            updated_at: now.not_before_next(self.updated_at),
            ..self.clone()
        }
    }

    /// Its attempt failed at `now` with `error`: pending again after a backoff (at least
    /// `retry_after` when the receiver asked for it), or dead after the last attempt.
    pub fn failed(
        &self,
        now: Timestamp,
        error: String,
        policy: &RetryPolicy,
        retry_after: Option<Duration>,
    ) -> Self {
        let dead = self.attempts >= policy.max_attempts;
        let wait = policy
            .backoff(self.attempts)
            .max(retry_after.unwrap_or_default().min(policy.cap));
        Self {
            status: if dead {
                DeliveryStatus::Dead
            } else {
                DeliveryStatus::Pending
            },
            due_at: (!dead).then(|| now.plus(wait)),
            last_error: Some(error),
            updated_at: now.not_before_next(self.updated_at),
            ..self.clone()
        }
    }

    /// A claimed delivery whose attempts are spent before it was sent: the claim that made
    /// it exceed `policy.max_attempts` came after a last attempt whose worker stopped before
    /// it wrote an outcome (or after the limit was lowered). Dead at `now`, not sent again;
    /// `None` while it has an attempt left.
    pub fn spent(&self, now: Timestamp, policy: &RetryPolicy) -> Option<Self> {
        (self.attempts > policy.max_attempts).then(|| Self {
            status: DeliveryStatus::Dead,
            attempts: policy.max_attempts,
            due_at: None,
            last_error: Some(
                "its last attempt never ended: the worker sending it stopped first".to_owned(),
            ),
            updated_at: now.not_before_next(self.updated_at),
            ..self.clone()
        })
    }

    /// A dead letter retried by hand at `now`: pending, due now, with every attempt again.
    /// `None` unless it is dead.
    pub fn retried(&self, now: Timestamp) -> Option<Self> {
        (self.status == DeliveryStatus::Dead).then(|| Self {
            status: DeliveryStatus::Pending,
            attempts: 0,
            due_at: Some(now),
            updated_at: now.not_before_next(self.updated_at),
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Delivery {
        Delivery::new(
            Target::Workflow {
                workflow_id: "wf".to_owned(),
            },
            "{}".to_owned(),
            "dash_1",
            Timestamp::from_micros(1_000_000),
        )
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter_in_the_upper_half() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(10),
        };
        for (attempts, full) in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (30, 10), (99, 10)] {
            let full = Duration::from_secs(full);
            for _ in 0..50 {
                let wait = policy.backoff(attempts);
                assert!(wait >= full / 2 && wait <= full, "{attempts}: {wait:?}");
            }
        }
        let draws: std::collections::HashSet<Duration> =
            (0..20).map(|_| policy.backoff(4)).collect();
        assert!(draws.len() > 1, "the wait is drawn at random");
    }

    #[test]
    fn a_claim_leases_and_counts_an_attempt_and_the_lease_ends_it() {
        let start = Timestamp::from_micros(2_000_000);
        let until = Timestamp::from_micros(3_000_000);
        let delivery = fresh();
        assert!(delivery.is_due(start));
        let claimed = delivery.claimed(start, until);
        assert_eq!(claimed.status, DeliveryStatus::Delivering);
        assert_eq!(claimed.attempts, 1);
        assert!(!claimed.is_due(start), "leased");
        assert!(claimed.is_due(until), "the lease ended");
        assert!(claimed.updated_at > delivery.updated_at);
    }

    #[test]
    fn failures_wait_then_the_last_makes_a_dead_letter_and_a_retry_revives_it() {
        let policy = RetryPolicy {
            max_attempts: 3,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        };
        let mut delivery = fresh();
        let mut now = Timestamp::from_micros(5_000_000);
        for attempt in 1..=3 {
            delivery = delivery.claimed(now, now.plus(Duration::from_secs(30)));
            assert_eq!(delivery.attempts, attempt);
            delivery = delivery.failed(now, format!("boom {attempt}"), &policy, None);
            if attempt < 3 {
                assert_eq!(delivery.status, DeliveryStatus::Pending);
                // At least half the doubling wait (1 s, then 2 s) after the failure.
                let wait = Duration::from_millis(500 << (attempt - 1));
                assert!(delivery.due_at.unwrap() >= now.plus(wait), "{attempt}");
                assert!(!delivery.is_due(now));
            }
            now = now.plus(Duration::from_secs(5));
        }
        assert_eq!(delivery.status, DeliveryStatus::Dead);
        assert_eq!(delivery.due_at, None);
        assert_eq!(delivery.last_error.as_deref(), Some("boom 3"));
        assert!(!delivery.is_due(Timestamp::from_micros(i64::MAX)));
        let revived = delivery.retried(now).unwrap();
        assert_eq!(revived.status, DeliveryStatus::Pending);
        assert_eq!(revived.attempts, 0);
        assert!(revived.is_due(now));
        assert_eq!(revived.retried(now), None, "only a dead letter is retried");
    }

    #[test]
    fn a_claim_past_the_last_attempt_is_dead_unsent() {
        let policy = RetryPolicy {
            max_attempts: 2,
            ..RetryPolicy::default()
        };
        let now = Timestamp::from_micros(7_000_000);
        let lease = now.plus(Duration::from_secs(15));
        // Two claims whose workers stopped before writing an outcome: each counted.
        let mut delivery = fresh().claimed(now, lease);
        assert_eq!(delivery.spent(now, &policy), None, "first attempt");
        delivery = delivery.claimed(lease, lease.plus(Duration::from_secs(15)));
        assert_eq!(delivery.spent(lease, &policy), None, "last attempt");
        let later = lease.plus(Duration::from_secs(15));
        let third = delivery.claimed(later, later.plus(Duration::from_secs(15)));
        let dead = third.spent(later, &policy).expect("attempts spent");
        assert_eq!(dead.status, DeliveryStatus::Dead);
        assert_eq!(dead.attempts, 2);
        assert_eq!(dead.due_at, None);
        assert!(dead.last_error.as_deref().unwrap().contains("never ended"));
        assert!(dead.updated_at > third.updated_at);
        assert!(
            dead.retried(later).is_some(),
            "a dead letter like any other"
        );
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base: Duration::from_millis(10),
            cap: Duration::from_secs(60),
        };
        let now = Timestamp::from_micros(0);
        let claimed = fresh().claimed(now, now.plus(Duration::from_secs(30)));
        let failed = claimed.failed(
            now,
            "429".to_owned(),
            &policy,
            Some(Duration::from_secs(20)),
        );
        assert_eq!(failed.due_at, Some(now.plus(Duration::from_secs(20))));
        let capped = claimed.failed(now, "429".to_owned(), &policy, Some(Duration::MAX));
        assert!(capped.due_at.unwrap() <= now.plus(Duration::from_secs(60)));
    }

    #[test]
    fn delivered_is_final() {
        let now = Timestamp::from_micros(9);
        let done = fresh().claimed(now, now).delivered(now);
        assert_eq!(done.status, DeliveryStatus::Delivered);
        assert_eq!(done.delivered_at, Some(now));
        assert!(!done.is_due(Timestamp::from_micros(i64::MAX)));
    }
}
