//! Delivering the outbox (docs/workflows.md, "Workflows and notifications"): a row action's workflow run
//! and a review request's Slack message, sent after the request that made them was answered.
//!
//! The service writes each [`Delivery`] in the same atomic change as its audit event (the
//! storage's [`WriteLog`]). A [`Worker`] on every node then, in a loop: claims the due
//! deliveries for a lease ([`Storage::claim_deliveries`]), sends each through the
//! [`Transport`] within a bounded time, and writes the outcome as a compare-and-swap on the
//! claimed version that writes no event ([`Storage::swap_delivery`]). So:
//!
//! - **At least once.** A delivery leaves the outbox only once its receiver took it; a node
//!   that stops while sending leaves its lease to run out, and the delivery is claimed again.
//!   Every attempt carries the delivery's id as `Idempotency-Key`, so a receiver drops the
//!   duplicates this allows.
//! - **Never twice at once.** A lease is held by one claimer at a time, on one node or on many
//!   sharing a PostgreSQL store (`FOR UPDATE SKIP LOCKED`). A lease is taken before the claim
//!   and ends [`WorkerOptions::lease`] later; every send of the claim must end within
//!   [`WorkerOptions::timeout`] of that same instant, on this node's monotonic clock, so a
//!   lease never ends while its send still runs (nodes sharing a store must keep their clocks
//!   within the lease's margin of each other: docs/workflows.md, "Workflows and notifications").
//! - **Bounded retries.** A failure waits an exponential backoff with jitter
//!   ([`RetryPolicy::backoff`]) or the receiver's `Retry-After`; after the last attempt the
//!   delivery is a dead letter, kept until retried by hand. A claim counts as an attempt, so a
//!   delivery whose worker stops on every attempt (a crash it causes) is a dead letter too: the
//!   claim after its last attempt marks it dead without sending it ([`Delivery::spent`]).
//!
//! [`WriteLog`]: crate::storage::WriteLog
//!
//! ---
//!
//! *The manual's page on this part, as the repository shows it:*
#![doc = include_str!("../../../docs/workflows.md")]

pub mod sign;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::model::{Delivery, DeliveryStatus, RetryPolicy, TargetKind, Timestamp};
use crate::storage::{Storage, StorageError};

/// Sends one delivery to its receiver.
#[async_trait]
pub trait Transport: Send + Sync + Debug + 'static {
    /// The kinds of receiver it can send to: its worker claims only those, and leaves the
    /// others to nodes set up to send them.
    fn kinds(&self) -> Vec<TargetKind>;

    /// Sends `delivery` once: `Ok` when its receiver took it.
    async fn send(&self, delivery: &Delivery) -> Result<(), SendFailure>;
}

/// Why an attempt failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendFailure {
    /// What went wrong, for the delivery's `last_error` (never a secret: no header or token).
    pub message: String,
    /// How long the receiver asked to wait (`Retry-After`), if it did.
    pub retry_after: Option<Duration>,
}

impl SendFailure {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry_after: None,
        }
    }
}

/// How a [`Worker`] works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerOptions {
    /// Attempts and backoff.
    pub policy: RetryPolicy,
    /// The longest one attempt may take, connecting and reading the answer included.
    pub timeout: Duration,
    /// How often the outbox is looked at when nothing wakes the worker (for retries that come
    /// due, and deliveries other nodes made).
    pub poll: Duration,
    /// The most deliveries claimed (and sent at once) in one pass.
    pub batch: usize,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self {
            policy: RetryPolicy::default(),
            timeout: Duration::from_secs(10),
            poll: Duration::from_secs(1),
            batch: 32,
        }
    }
}

impl WorkerOptions {
    /// The lease of a claim: longer than an attempt may take, so a lease never ends while its
    /// attempt runs.
    pub fn lease(&self) -> Duration {
        self.timeout + Duration::from_secs(5)
    }
}

/// Wakes the [`Worker`] of this node when a request stored a delivery, so it goes out at once
/// rather than at the next poll. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Wake(Arc<Notify>);

impl Wake {
    /// A new, unshared signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wakes the worker (once, however often it is called before the worker looks).
    pub fn wake(&self) {
        self.0.notify_one();
    }

    async fn woken(&self) {
        self.0.notified().await;
    }
}

/// Delivers the outbox of a store: see the [module documentation](self).
#[derive(Debug)]
pub struct Worker {
    storage: Arc<dyn Storage>,
    transport: Arc<dyn Transport>,
    options: WorkerOptions,
    wake: Wake,
    /// What `transport` sends.
    kinds: Vec<TargetKind>,
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Deliveries claimed.
    pub claimed: usize,
    /// Of those, delivered.
    pub delivered: usize,
    /// Of those, failed (pending again, or dead).
    pub failed: usize,
}

impl Worker {
    /// A worker over `storage` sending through `transport`, woken by `wake`.
    pub fn new(
        storage: Arc<dyn Storage>,
        transport: Arc<dyn Transport>,
        options: WorkerOptions,
        wake: Wake,
    ) -> Self {
        Self {
            kinds: transport.kinds(),
            storage,
            transport,
            options: WorkerOptions {
                // A batch of none would claim nothing, forever at once.
                batch: options.batch.max(1),
                ..options
            },
            wake,
        }
    }

    /// Works until `shutdown` resolves: a pass whenever woken, or every `poll`, and at once
    /// again while passes find a full batch. A storage failure, or a panic in a pass (a
    /// transport's bug), is logged and the loop goes on after the poll interval: the deliveries
    /// of that pass are claimed again when their leases end.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        use futures_util::FutureExt as _;
        tokio::pin!(shutdown);
        loop {
            let pass = std::panic::AssertUnwindSafe(self.pass()).catch_unwind();
            let busy = match pass.await {
                Ok(Ok(pass)) => pass.claimed == self.options.batch,
                Ok(Err(error)) => {
                    tracing::warn!(target: "dbconsole::outbox", %error, "the outbox could not be read");
                    false
                }
                Err(_) => {
                    tracing::error!(target: "dbconsole::outbox", "a pass of the outbox worker panicked; its deliveries are claimed again when their leases end");
                    false
                }
            };
            if busy {
                continue;
            }
            tokio::select! {
                () = &mut shutdown => return,
                () = self.wake.woken() => {}
                () = tokio::time::sleep(self.options.poll) => {}
            }
        }
    }

    /// Claims the due deliveries (one batch) of the kinds its transport sends, sends them at
    /// once, and writes each outcome.
    pub async fn pass(&self) -> Result<Pass, StorageError> {
        if self.kinds.is_empty() {
            return Ok(Pass::default());
        }
        // Both ends from one instant: the lease on the wall clock (what the store compares),
        // the sends' deadline on the monotonic clock, `lease() - timeout` before the lease ends.
        let deadline = tokio::time::Instant::now() + self.options.timeout;
        let now = Timestamp::now();
        let lease_until = now.plus(self.options.lease());
        let claimed = self
            .storage
            .claim_deliveries(now, lease_until, self.options.batch, &self.kinds)
            .await?;
        let mut pass = Pass {
            claimed: claimed.len(),
            ..Pass::default()
        };
        let mut outcomes = futures_util::stream::iter(claimed)
            .map(|claimed| self.attempt(claimed, deadline))
            .buffer_unordered(self.options.batch);
        while let Some(delivered) = outcomes.next().await {
            if delivered {
                pass.delivered += 1;
            } else {
                pass.failed += 1;
            }
        }
        Ok(pass)
    }

    /// One attempt of a claimed delivery, ended by `deadline`, with its outcome written:
    /// whether it was delivered.
    async fn attempt(&self, claimed: Delivery, deadline: tokio::time::Instant) -> bool {
        let id = claimed.id.as_str();
        let kind = claimed.target.kind().as_str();
        if let Some(dead) = claimed.spent(Timestamp::now(), &self.options.policy) {
            crate::metrics::record_delivery(kind, "dead");
            tracing::warn!(
                target: "dbconsole::outbox", id, kind, attempts = dead.attempts,
                "a delivery's last attempt never ended (its worker stopped): a dead letter"
            );
            self.write(dead, claimed.updated_at).await;
            return false;
        }
        let sent = match tokio::time::timeout_at(deadline, self.transport.send(&claimed)).await {
            Ok(sent) => sent,
            Err(_) => Err(SendFailure::new(format!(
                "no answer within {:?}",
                self.options.timeout
            ))),
        };
        let now = Timestamp::now();
        let next = match &sent {
            Ok(()) => claimed.delivered(now),
            Err(failure) => claimed.failed(
                now,
                failure.message.clone(),
                &self.options.policy,
                failure.retry_after,
            ),
        };
        let outcome = match (&sent, next.status) {
            (Ok(()), _) => "delivered",
            (Err(_), DeliveryStatus::Dead) => "dead",
            (Err(_), _) => "retry",
        };
        crate::metrics::record_delivery(kind, outcome);
        match &sent {
            Ok(()) => {
                tracing::info!(target: "dbconsole::outbox", id, kind, attempts = claimed.attempts, "delivered")
            }
            Err(failure) if next.status == DeliveryStatus::Dead => tracing::warn!(
                target: "dbconsole::outbox", id, kind, attempts = claimed.attempts,
                error = %failure.message, "a delivery failed its last attempt: a dead letter"
            ),
            Err(failure) => tracing::info!(
                target: "dbconsole::outbox", id, kind, attempts = claimed.attempts,
                error = %failure.message, "a delivery attempt failed; it will be tried again"
            ),
        }
        self.write(next, claimed.updated_at).await;
        sent.is_ok()
    }

    /// Writes a claimed delivery's outcome over its claimed version.
    async fn write(&self, next: Delivery, claimed_at: Timestamp) {
        let id = next.id.clone();
        if let Err(error) = self.storage.swap_delivery(next, claimed_at).await {
            // Its lease ends, and it is claimed again: sent once more rather than lost.
            tracing::warn!(target: "dbconsole::outbox", id = id.as_str(), %error, "a delivery's outcome could not be written");
        }
    }
}

/// The body of a row action's workflow request (docs/workflows.md, "Workflows and notifications").
#[allow(clippy::too_many_arguments)]
pub fn workflow_body(
    delivery_id: &str,
    workflow_id: &str,
    inputs: serde_json::Map<String, Value>,
    dashboard_id: &str,
    panel_id: &str,
    action_id: &str,
    triggered_by: &str,
    triggered_at: Timestamp,
) -> String {
    json!({
        "delivery_id": delivery_id,
        "workflow_id": workflow_id,
        "inputs": inputs,
        "dashboard_id": dashboard_id,
        "panel_id": panel_id,
        "action_id": action_id,
        "triggered_by": triggered_by,
        "triggered_at": triggered_at.to_string(),
    })
    .to_string()
}

/// The body of a review request's `chat.postMessage`: who asks, on which database, how many
/// reviews, and the query's id, never its text or values; with the console's URL, a link to
/// the query's page, where the reviewer approves or rejects it.
pub fn review_request_body(
    channel: &str,
    author: &str,
    database_name: &str,
    database_id: &str,
    reviews_required: u32,
    query_id: &str,
    console_url: Option<&str>,
) -> String {
    let reviews = if reviews_required == 1 {
        "1 review".to_owned()
    } else {
        format!("{reviews_required} reviews")
    };
    // Names are the caller's words: escaped as Slack asks, so `<!channel>` or `<https://…|x>`
    // in a name is shown, never a mention or a link.
    let (author, database_name) = (slack_escape(author), slack_escape(database_name));
    let mut text = format!(
        "{author} asks for {reviews} of query {query_id} on database {database_name} \
         ({database_id})."
    );
    // The URL is the operator's setting and the id the service's own: the one link of the
    // message (Slack's `<url|label>`), its characters escaped as any text's.
    if let Some(base) = console_url {
        let url = format!("{}/console/queries/{query_id}", base.trim_end_matches('/'));
        text.push_str(&format!(
            " <{}|Review it in the console>",
            slack_escape(&url)
        ));
    }
    json!({
        "channel": channel,
        "text": text,
        "unfurl_links": false,
        "unfurl_media": false,
    })
    .to_string()
}

/// Text for a Slack message, with its three control characters escaped (Slack's "Escaping
/// text": `&`, `<` and `>`), so it is shown as written.
fn slack_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_request_shows_names_as_written_never_as_mentions_or_links() {
        let body = review_request_body(
            "#reviews",
            "<!channel> & <https://evil.example|click>",
            "Orders <@U123>",
            "db_1",
            2,
            "qry_1",
            None,
        );
        let body: Value = serde_json::from_str(&body).unwrap();
        let text = body["text"].as_str().unwrap();
        assert_eq!(
            text,
            "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; asks for 2 reviews of \
             query qry_1 on database Orders &lt;@U123&gt; (db_1)."
        );
        assert!(!text.contains('<') && !text.contains('>'));
        assert_eq!(body["channel"], "#reviews");
        let linked = review_request_body(
            "#reviews",
            "ann",
            "Orders",
            "db_1",
            1,
            "qry_1",
            Some("https://console.example.com/"),
        );
        let linked: Value = serde_json::from_str(&linked).unwrap();
        assert!(
            linked["text"].as_str().unwrap().ends_with(
                " <https://console.example.com/console/queries/qry_1|Review it in the console>"
            ),
            "{linked}"
        );
    }
}
