//! The upkeep of a built service: what it holds (its storage and sealer, how its sessions
//! behave), how its run events stand, and the pruning the server runs now and then.

use super::browser::SessionOptions;
use super::idempotency;
use super::pipeline::ConsoleService;
use super::run_events::RunEventStats;
use crate::model::Timestamp;
use crate::seal::Sealer;
use crate::storage::{Storage, StorageError};
use std::sync::Arc;

impl ConsoleService {
    /// The storage the service uses.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.app().storage
    }

    /// The sealer the service seals secrets with.
    pub fn sealer(&self) -> &Sealer {
        &self.app().sealer
    }

    /// How the service's browser sessions behave.
    pub fn session_options(&self) -> &SessionOptions {
        &self.app().browser.sessions
    }

    /// What the writer of run events (a panel's, an agent's, …) has done: written, failed,
    /// the backlog of answered runs whose events are not durable yet, its peak and its bound.
    pub fn run_events(&self) -> RunEventStats {
        self.app().run_events.stats()
    }

    /// Waits until the event of every answered run is durable (or its write failed, logged):
    /// call it once the server stopped answering, before the program ends.
    pub async fn settle_run_events(&self) {
        self.app().run_events.settle().await;
    }

    /// Deletes the audit events beyond the retention the service was built with (oldest
    /// first) and answers how many. Call it now and then (the server does at start and every
    /// hour); writes never delete events themselves.
    pub async fn prune_audit(&self) -> Result<u64, StorageError> {
        let app = self.app();
        app.storage
            .prune_audit(app.audit_retention, Timestamp::now())
            .await
    }

    /// Deletes the browser sessions and sign-in links that ended (expired, or idle past the
    /// idle time) and answers how many. Call it now and then (the server does every hour).
    pub async fn prune_sessions(&self) -> Result<u64, StorageError> {
        let now = Timestamp::now();
        let idle = i64::try_from(self.app().browser.sessions.idle.as_micros()).unwrap_or(i64::MAX);
        let idle_before = Timestamp::from_micros(now.as_micros().saturating_sub(idle));
        self.app().storage.prune_sessions(now, idle_before).await
    }

    /// Deletes the answers of idempotent writes older than [`idempotency::ANSWER_TTL`] and
    /// answers how many. Call it now and then (the server does every hour, with
    /// [`ConsoleService::prune_audit`]).
    pub async fn prune_answers(&self) -> Result<u64, StorageError> {
        let ttl = i64::try_from(idempotency::ANSWER_TTL.as_micros()).unwrap_or(i64::MAX);
        let before = Timestamp::from_micros(Timestamp::now().as_micros().saturating_sub(ttl));
        self.app().storage.prune_answers(before).await
    }
}
