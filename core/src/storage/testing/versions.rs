//! The compare-and-swap primitives themselves: a write at a version the record is no longer at
//! is a [`StorageError::Conflict`] that changes nothing and appends no event; of writers racing
//! from one version exactly one wins; core's retry loop then makes every loser see the winner's
//! change.

use std::sync::Arc;

use super::check::{found, ok};
use super::fixtures::{parameter, plain_dashboard, plain_database};
use super::origin;
use super::races::race_all;
use crate::model::{AccessControl, AuditEvent, Database};
use crate::storage::{AuditQuery, Edits as _, Storage, StorageError, audit};

const RACERS: usize = 16;

async fn events_of(storage: &dyn Storage, id: &str) -> Vec<AuditEvent> {
    let query = AuditQuery {
        resource: Some(id),
        after: None,
        limit: 1000,
        ..Default::default()
    };
    ok(storage.list_audit(query).await, "list_audit")
}

fn conflict<T: std::fmt::Debug>(result: Result<T, StorageError>, call: &str) {
    assert!(
        matches!(result, Err(StorageError::Conflict)),
        "{call} at a stale version must be a Conflict, got {result:?}"
    );
}

/// The record `stored` edited: one connection parameter more, the version one step on.
fn edited(stored: &Database, name: &str) -> Database {
    let mut next = stored.clone();
    next.updated_at = stored.updated_at.not_before_next(stored.updated_at);
    next.connection_parameters.push(parameter(name, "x"));
    next
}

/// Replace and remove at a version the record is no longer at, for databases, dashboards and
/// access control: each is a `Conflict`, and the record and its events stay as they were.
pub async fn writes_at_a_stale_version_conflict_and_change_nothing(storage: Arc<dyn Storage>) {
    let storage = storage.as_ref();
    let original = plain_database("Versioned", Some("ext-versioned"));
    let id = original.id.as_str().to_owned();
    ok(
        storage.insert_database(original.clone(), origin()).await,
        "insert_database",
    );
    let current = ok(
        storage
            .update_database(&id, |db: &Database| Ok(edited(db, "first")), origin())
            .await,
        "update_database",
    );
    let events = events_of(storage, &id).await;

    let stale = edited(&original, "stale");
    let event = audit::database_updated(origin(), &original, &stale);
    conflict(
        storage
            .replace_database(stale, original.updated_at, event.into())
            .await,
        "replace_database",
    );
    let event = audit::database_deleted(origin(), crate::storage::DatabaseKey::Id(&id), &original);
    conflict(
        storage
            .remove_database(&id, original.updated_at, event.into())
            .await,
        "remove_database",
    );
    let stored = found(storage.database(&id).await, "database");
    assert_eq!(stored, current, "a stale write changed the database");
    assert_eq!(
        events_of(storage, &id).await,
        events,
        "a stale write appended an event"
    );

    // A replace that changes the api_id is refused whatever its version.
    let mut renamed = edited(&current, "renamed");
    renamed.api_id = Some("ext-other".to_owned());
    let event = audit::database_updated(origin(), &current, &renamed);
    let refused = storage
        .replace_database(renamed, current.updated_at, event.into())
        .await;
    assert!(
        matches!(refused, Err(StorageError::IdentityChanged)),
        "replace_database changing api_id: {refused:?}"
    );

    // Access control: compared whole.
    let expected = found(storage.access_control(&id).await, "access_control");
    let mut changed = expected.clone();
    changed.data_protection.policies.clear();
    changed.permissions.push(super::fixtures::permission(
        crate::model::SubjectKind::Group,
        "first",
        crate::model::AccessLevel::Query,
    ));
    let event = audit::access_updated(origin(), &id, &expected, &changed);
    ok(
        storage
            .replace_access_control(&id, expected.clone(), changed.clone(), event.into())
            .await,
        "replace_access_control",
    );
    let mut late = AccessControl::default();
    late.data_protection.inherits_from = None;
    let event = audit::access_updated(origin(), &id, &expected, &late);
    conflict(
        storage
            .replace_access_control(&id, expected, late, event.into())
            .await,
        "replace_access_control",
    );
    assert_eq!(
        found(storage.access_control(&id).await, "access_control"),
        changed
    );

    // Dashboards.
    let dashboard = plain_dashboard("Versioned");
    let dashboard_id = dashboard.id.as_str().to_owned();
    ok(
        storage.insert_dashboard(dashboard.clone(), origin()).await,
        "insert_dashboard",
    );
    let renamed = ok(
        storage
            .update_dashboard(
                &dashboard_id,
                |d: &crate::model::Dashboard| {
                    let mut next = d.clone();
                    next.name = "Renamed".to_owned();
                    Ok(next)
                },
                origin(),
            )
            .await,
        "update_dashboard",
    );
    assert!(
        renamed.updated_at > dashboard.updated_at,
        "the version moved"
    );
    let mut stale = dashboard.clone();
    stale.name = "Stale".to_owned();
    let event = audit::dashboard_updated(origin(), &dashboard, &stale);
    conflict(
        storage
            .replace_dashboard(stale, dashboard.updated_at, event.into())
            .await,
        "replace_dashboard",
    );
    let event = audit::dashboard_deleted(origin(), &dashboard);
    conflict(
        storage
            .remove_dashboard(&dashboard_id, dashboard.updated_at, event.into())
            .await,
        "remove_dashboard",
    );
    assert_eq!(
        found(storage.dashboard(&dashboard_id).await, "dashboard"),
        renamed
    );
}

/// 16 writers read one version and swap at it at the same moment: exactly one wins. Each loser
/// then goes through core's retry loop and finds the winner's change in what it edits.
pub async fn racing_swaps_admit_one_and_losers_retry_onto_the_winner(storage: Arc<dyn Storage>) {
    let original = plain_database("Raced swap", None);
    let id = original.id.as_str().to_owned();
    ok(
        storage.insert_database(original.clone(), origin()).await,
        "insert_database",
    );
    let results = race_all(RACERS, |index| {
        let storage = Arc::clone(&storage);
        let original = original.clone();
        async move {
            let next = edited(&original, &format!("swap{index}"));
            let event = audit::database_updated(origin(), &original, &next);
            storage
                .replace_database(next, original.updated_at, event.into())
                .await
        }
    })
    .await;
    let winners: Vec<usize> = (0..RACERS).filter(|i| results[*i].is_ok()).collect();
    assert_eq!(
        winners.len(),
        1,
        "swaps at one version: exactly one may win, got {results:?}"
    );
    for (index, result) in results.iter().enumerate() {
        if index != winners[0] {
            assert!(
                matches!(result, Err(StorageError::Conflict)),
                "a losing swap #{index} must be a Conflict: {result:?}"
            );
        }
    }
    let winner = format!("swap{}", winners[0]);

    // The losers retry through core's loop: each edit sees the winner's change.
    let losers: Vec<usize> = (0..RACERS).filter(|i| *i != winners[0]).collect();
    let retried = race_all(losers.len(), |slot| {
        let storage = Arc::clone(&storage);
        let (id, winner, index) = (id.clone(), winner.clone(), losers[slot]);
        async move {
            storage
                .update_database(
                    &id,
                    move |stored: &Database| {
                        assert!(
                            stored
                                .connection_parameters
                                .iter()
                                .any(|p| p.name == winner),
                            "a retried edit must see the winner's change"
                        );
                        Ok(edited(stored, &format!("swap{index}")))
                    },
                    origin(),
                )
                .await
        }
    })
    .await;
    for result in retried {
        ok(result, "update_database retried after a lost swap");
    }
    let stored = found(storage.database(&id).await, "database");
    let mut names: Vec<&str> = stored
        .connection_parameters
        .iter()
        .map(|p| p.name.as_str())
        .filter(|name| name.starts_with("swap"))
        .collect();
    names.sort_unstable();
    let mut expected: Vec<String> = (0..RACERS).map(|i| format!("swap{i}")).collect();
    expected.sort_unstable();
    assert_eq!(names, expected, "every writer's change, once");
    // One event for the create, one per applied write.
    assert_eq!(events_of(storage.as_ref(), &id).await.len(), 1 + RACERS);
}
