//! The audit trail: every write that changes something appends exactly one event, in its own
//! atomic change, saying what it did to which record, who did it and which fields changed
//! (names only); a write that fails or is refused appends none; the trail lists newest first,
//! by record, in keyset pages; only `prune_audit` removes events, oldest first.

use crate::storage::Edits as _;
use std::sync::Arc;

use super::check::ok;
use super::fixtures::{plain_dashboard, plain_database, sealed, set_inheritance};
use super::origin;
use super::races::race_all;
use crate::model::mint_caller_key;
use crate::model::{
    AccessControl, AuditAction, AuditEvent, CredentialKind, Dashboard, Database, Retention, Scope,
    Timestamp,
};
use crate::storage::{AuditQuery, DatabaseKey, Storage, StorageError};
use crate::validate::ValidationErrors;

/// The whole trail, newest first.
async fn trail(storage: &dyn Storage) -> Vec<AuditEvent> {
    ok(
        storage
            .list_audit(AuditQuery {
                resource: None,
                after: None,
                limit: usize::MAX,
                ..Default::default()
            })
            .await,
        "list_audit",
    )
}

/// One write of each kind: the trail holds one event per write, newest first, each with its
/// action, record, origin and changed fields.
pub async fn every_write_appends_one_event(storage: Arc<dyn Storage>) {
    let database = plain_database("Audited", None);
    let id = database.id.as_str().to_owned();
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );
    let renamed = ok(
        storage
            .update_database(
                &id,
                Box::new(|stored: &Database| {
                    let mut next = stored.clone();
                    next.name = "Renamed".to_owned();
                    next.credentials[0].password = Some(sealed(b"rotated".to_vec()));
                    next.updated_at = Timestamp::now().not_before_next(stored.updated_at);
                    Ok(next)
                }),
                origin(),
            )
            .await,
        "update_database",
    );
    let set_up = plain_database("Set up", Some("ext-audit"));
    let setup_id = set_up.id.as_str().to_owned();
    ok(
        storage
            .upsert_database_by_api_id(
                "ext-audit",
                Box::new(move |_: Option<&Database>| Ok(set_up.clone())),
                origin(),
            )
            .await,
        "upsert_database_by_api_id",
    );
    ok(
        set_inheritance(storage.as_ref(), &id, Some(&setup_id)).await,
        "update_access_control",
    );
    let dashboard = plain_dashboard("Audited");
    let dashboard_id = dashboard.id.as_str().to_owned();
    ok(
        storage.insert_dashboard(dashboard, origin()).await,
        "insert_dashboard",
    );
    ok(
        storage
            .update_dashboard(
                &dashboard_id,
                Box::new(|stored: &Dashboard| {
                    let mut next = stored.clone();
                    next.restricted_access = true;
                    Ok(next)
                }),
                origin(),
            )
            .await,
        "update_dashboard",
    );
    ok(
        storage
            .delete_dashboard(&dashboard_id, None, origin())
            .await,
        "delete_dashboard",
    );
    let (key, _) = mint_caller_key(CredentialKind::ApiKey, Scope::Full, "ci");
    let key_id = key.id.as_str().to_owned();
    ok(
        storage.insert_caller_key(key, origin()).await,
        "insert_caller_key",
    );
    ok(
        storage.delete_caller_key(&key_id, origin()).await,
        "delete_caller_key",
    );
    ok(
        storage
            .delete_database(DatabaseKey::Id(&id), None, origin())
            .await,
        "delete_database",
    );
    ok(
        storage
            .delete_database(DatabaseKey::ApiId("ext-audit"), None, origin())
            .await,
        "delete_database by api_id",
    );

    let events = trail(storage.as_ref()).await;
    let seen: Vec<(AuditAction, &str)> = events
        .iter()
        .map(|event| (event.action, event.resource_id.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (AuditAction::DatabaseRemove, setup_id.as_str()),
            (AuditAction::DatabaseDelete, id.as_str()),
            (AuditAction::CallerKeyRevoke, key_id.as_str()),
            (AuditAction::CallerKeyCreate, key_id.as_str()),
            (AuditAction::DashboardDelete, dashboard_id.as_str()),
            (AuditAction::DashboardUpdate, dashboard_id.as_str()),
            (AuditAction::DashboardCreate, dashboard_id.as_str()),
            (AuditAction::AccessUpdate, id.as_str()),
            (AuditAction::DatabaseSetup, setup_id.as_str()),
            (AuditAction::DatabaseUpdate, id.as_str()),
            (AuditAction::DatabaseCreate, id.as_str()),
        ],
        "one event per write, newest first"
    );
    for event in &events {
        assert_eq!(event.actor, origin().actor);
        assert_eq!(event.request_id, origin().request_id);
    }
    let changes = |action| {
        events
            .iter()
            .find(|event| event.action == action)
            .map(|event| event.changes.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        changes(AuditAction::DatabaseUpdate),
        vec!["name", "credentials[reader].password"]
    );
    assert_eq!(
        changes(AuditAction::AccessUpdate),
        vec!["data_protection.inherits_from"]
    );
    assert_eq!(
        changes(AuditAction::DashboardUpdate),
        vec!["restricted_access"]
    );
    assert!(
        changes(AuditAction::DatabaseCreate).contains(&"credentials[reader].password".to_owned())
    );
    assert!(changes(AuditAction::DatabaseDelete).is_empty());
    assert_eq!(renamed.name, "Renamed");
    // Ids order the trail: newest first is descending ids.
    let mut ids: Vec<&str> = events.iter().map(|event| event.id.as_str()).collect();
    let listed = ids.clone();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(listed, ids);
}

/// Writes that fail or are refused append nothing: a taken id, an edit that refuses, a missing
/// record, the delete guard, an inheritance cycle, a refused delete check.
pub async fn refused_writes_append_no_event(storage: Arc<dyn Storage>) {
    let parent = plain_database("Parent", Some("ext-parent"));
    let heir = plain_database("Heir", None);
    for database in [&parent, &heir] {
        ok(
            storage.insert_database(database.clone(), origin()).await,
            "insert_database",
        );
    }
    ok(
        set_inheritance(storage.as_ref(), heir.id.as_str(), Some(parent.id.as_str())).await,
        "set_inheritance",
    );
    let before = trail(storage.as_ref()).await;
    assert_eq!(before.len(), 3);

    let refusals: Vec<Result<(), StorageError>> = vec![
        storage.insert_database(parent.clone(), origin()).await,
        storage
            .update_database(
                parent.id.as_str(),
                Box::new(|_: &Database| Err(ValidationErrors::single("name", "no").into())),
                origin(),
            )
            .await
            .map(drop),
        storage
            .update_database(
                "db_missing",
                Box::new(|d: &Database| Ok(d.clone())),
                origin(),
            )
            .await
            .map(drop),
        storage
            .upsert_database_by_api_id(
                "ext-parent",
                Box::new(|_: Option<&Database>| Err(StorageError::PreconditionFailed)),
                origin(),
            )
            .await
            .map(drop),
        storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()), None, origin())
            .await
            .map(drop),
        storage
            .delete_database(
                DatabaseKey::Id(heir.id.as_str()),
                Some(Box::new(|_: &Database| {
                    Err(StorageError::PreconditionFailed)
                })),
                origin(),
            )
            .await
            .map(drop),
        set_inheritance(storage.as_ref(), parent.id.as_str(), Some(heir.id.as_str()))
            .await
            .map(drop),
        storage
            .update_access_control(
                "db_missing",
                Box::new(|a: &AccessControl| Ok(a.clone())),
                origin(),
            )
            .await
            .map(drop),
        storage
            .delete_dashboard("dash_missing", None, origin())
            .await
            .map(drop),
        storage
            .delete_caller_key("key_missing", origin())
            .await
            .map(drop),
    ];
    for (index, refused) in refusals.iter().enumerate() {
        assert!(refused.is_err(), "refusal #{index} was accepted");
    }
    assert_eq!(
        trail(storage.as_ref()).await,
        before,
        "a write that fails or is refused appends nothing"
    );
}

/// The trail pages newest first with `after` (exclusive, any string) and `limit`, and
/// `resource` keeps one record's events, in pages too.
pub async fn audit_listing_pages_newest_first_by_resource(storage: Arc<dyn Storage>) {
    let a = plain_database("A", None);
    let b = plain_database("B", None);
    for database in [&a, &b] {
        ok(
            storage.insert_database(database.clone(), origin()).await,
            "insert_database",
        );
    }
    for round in 0..4 {
        for database in [&a, &b] {
            ok(
                storage
                    .update_database(
                        database.id.as_str(),
                        Box::new(move |stored: &Database| {
                            let mut next = stored.clone();
                            next.ai_max_rows = 10 + round;
                            Ok(next)
                        }),
                        origin(),
                    )
                    .await,
                "update_database",
            );
        }
    }
    let all = trail(storage.as_ref()).await;
    assert_eq!(all.len(), 10);

    let page = |resource: Option<String>, after: Option<String>, limit: usize| {
        let storage = Arc::clone(&storage);
        async move {
            ok(
                storage
                    .list_audit(AuditQuery {
                        resource: resource.as_deref(),
                        after: after.as_deref(),
                        limit,
                        ..Default::default()
                    })
                    .await,
                "list_audit",
            )
        }
    };
    // Every page of 3 in turn gives the whole trail, in order.
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let next = page(None, after.clone(), 3).await;
        if next.is_empty() {
            break;
        }
        after = Some(next.last().unwrap().id.as_str().to_owned());
        paged.extend(next);
    }
    assert_eq!(paged, all);
    // One record's events, newest first, paged.
    let of_a: Vec<AuditEvent> = all
        .iter()
        .filter(|event| event.resource_id == a.id.as_str())
        .cloned()
        .collect();
    assert_eq!(of_a.len(), 5);
    let first = page(Some(a.id.as_str().to_owned()), None, 2).await;
    assert_eq!(first, of_a[..2]);
    let rest = page(
        Some(a.id.as_str().to_owned()),
        Some(first[1].id.as_str().to_owned()),
        10,
    )
    .await;
    assert_eq!(rest, of_a[2..]);
    // `after` any string: before every id, after every id; an unknown record has none.
    assert_eq!(page(None, Some("evt_".to_owned()), 10).await, Vec::new());
    assert_eq!(page(None, Some("evt_~".to_owned()), 100).await, all);
    assert_eq!(
        page(Some("db_unknown".to_owned()), None, 10).await,
        Vec::new()
    );
    assert_eq!(page(None, None, 0).await, Vec::new());
}

/// A filter keeps the events of any of its records, of its action, by its actor (key id or
/// name) and within its times, all at once; a filtered page is full when enough events match,
/// however many it passes over, and pages on with `after`.
pub async fn audit_listing_filters_by_records_action_actor_and_time(storage: Arc<dyn Storage>) {
    use crate::model::{Actor, Origin};
    use crate::storage::AuditFilter;
    let base = Timestamp::now().as_micros() - 3_600_000_000;
    let at = |i: i64| Timestamp::from_micros(base + i * 1_000_000);
    let ann = Origin::of(Actor::named("ann@example.com"));
    let bob = Origin::of(Actor {
        id: Some("key_bob".to_owned()),
        name: "bob@example.com".to_owned(),
    });
    // 40 events: resources cycle through a database, two of its queries and a dashboard;
    // actors alternate; every third is a run.
    let resources = [
        "db_filtered",
        "qry_filtered_1",
        "qry_filtered_2",
        "dash_filtered",
    ];
    for i in 0..40_i64 {
        let origin = if i % 2 == 0 { &ann } else { &bob };
        let action = if i % 3 == 0 {
            AuditAction::QueryRun
        } else {
            AuditAction::DatabaseUpdate
        };
        let mut event = AuditEvent::new(origin, action, resources[(i % 4) as usize], Vec::new());
        event.at = at(i);
        ok(storage.append_log(event.into()).await, "append_log");
    }
    let all = trail(storage.as_ref()).await;
    let list = |filter: AuditFilter<'static>, after: Option<String>, limit: usize| {
        let storage = Arc::clone(&storage);
        async move {
            ok(
                storage
                    .list_audit(AuditQuery {
                        resource: None,
                        after: after.as_deref(),
                        limit,
                        filter,
                    })
                    .await,
                "list_audit",
            )
        }
    };
    static DATABASE_AND_QUERIES: std::sync::OnceLock<std::collections::BTreeSet<String>> =
        std::sync::OnceLock::new();
    let of_database = DATABASE_AND_QUERIES.get_or_init(|| {
        ["db_filtered", "qry_filtered_1", "qry_filtered_2"]
            .map(str::to_owned)
            .into()
    });
    let by_records = list(
        AuditFilter {
            any_of: Some(of_database),
            ..AuditFilter::default()
        },
        None,
        100,
    )
    .await;
    assert_eq!(by_records.len(), 30);
    assert!(by_records.iter().all(|e| e.resource_id != "dash_filtered"));
    let expected: Vec<AuditEvent> = all
        .iter()
        .filter(|e| e.resource_id != "dash_filtered")
        .cloned()
        .collect();
    assert_eq!(by_records, expected, "newest first");
    let runs_by_bob = list(
        AuditFilter {
            action: Some(AuditAction::QueryRun),
            actor: Some("key_bob"),
            ..AuditFilter::default()
        },
        None,
        100,
    )
    .await;
    // Odd i that are multiples of 3: 3, 9, 15, 21, 27, 33, 39.
    assert_eq!(runs_by_bob.len(), 7);
    let by_name = list(
        AuditFilter {
            action: Some(AuditAction::QueryRun),
            actor: Some("bob@example.com"),
            ..AuditFilter::default()
        },
        None,
        100,
    )
    .await;
    assert_eq!(by_name, runs_by_bob, "an actor by its key id or its name");
    // Time: [at(10), at(20)) holds ten events.
    let window = list(
        AuditFilter {
            since: Some(at(10)),
            until: Some(at(20)),
            ..AuditFilter::default()
        },
        None,
        100,
    )
    .await;
    assert_eq!(window.len(), 10);
    assert!(window.iter().all(|e| e.at >= at(10) && e.at < at(20)));
    // Pages of a filter: each full, together the whole, in order.
    let filter = AuditFilter {
        any_of: Some(of_database),
        actor: Some("ann@example.com"),
        ..AuditFilter::default()
    };
    let whole = list(filter, None, 100).await;
    assert_eq!(
        whole.len(),
        20,
        "ann's (even i) are all on the database or its second query"
    );
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = list(filter, after.clone(), 4).await;
        if page.is_empty() {
            break;
        }
        assert!(page.len() == 4 || paged.len() + page.len() == whole.len());
        after = Some(page.last().unwrap().id.as_str().to_owned());
        paged.extend(page);
    }
    assert_eq!(paged, whole);
    // With `resource` too, both apply.
    let one = ok(
        storage
            .list_audit(AuditQuery {
                resource: Some("qry_filtered_1"),
                after: None,
                limit: 100,
                filter,
            })
            .await,
        "list_audit",
    );
    assert!(
        one.is_empty(),
        "qry_filtered_1's events are all bob's (odd i)"
    );
    let nothing = list(
        AuditFilter {
            actor: Some("nobody"),
            ..AuditFilter::default()
        },
        None,
        10,
    )
    .await;
    assert!(nothing.is_empty());
}

/// `prune_audit` removes the events beyond the retention, oldest first, and answers how many;
/// nothing else ever removes one.
pub async fn prune_keeps_the_newest_events_within_retention(storage: Arc<dyn Storage>) {
    for n in 0..6 {
        ok(
            storage
                .insert_database(plain_database(&format!("db {n}"), None), origin())
                .await,
            "insert_database",
        );
    }
    let all = trail(storage.as_ref()).await;
    let now = Timestamp::now();
    let unbounded = Retention::default();
    assert_eq!(
        ok(storage.prune_audit(unbounded, now).await, "prune_audit"),
        0
    );
    let recent = Retention {
        max_age_days: Some(30),
        max_events: None,
    };
    assert_eq!(ok(storage.prune_audit(recent, now).await, "prune_audit"), 0);
    let four = Retention {
        max_age_days: None,
        max_events: Some(4),
    };
    assert_eq!(ok(storage.prune_audit(four, now).await, "prune_audit"), 2);
    assert_eq!(trail(storage.as_ref()).await, all[..4]);
    // A year on, a 30-day retention keeps nothing.
    let later = Timestamp::from_micros(now.as_micros() + 365 * 86_400 * 1_000_000);
    assert_eq!(
        ok(storage.prune_audit(recent, later).await, "prune_audit"),
        4
    );
    assert_eq!(trail(storage.as_ref()).await, Vec::new());
}

/// Racing updates of one record, each retried by the backend as it needs: every one that
/// succeeded has exactly one event, and no attempt that lost left one.
pub async fn racing_writes_each_leave_exactly_one_event(storage: Arc<dyn Storage>) {
    const WRITERS: usize = 16;
    let database = plain_database("Contended", None);
    let id = database.id.as_str().to_owned();
    ok(
        storage.insert_database(database, origin()).await,
        "insert_database",
    );
    let results = race_all(WRITERS, |writer| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        async move {
            let edit = Box::new(move |stored: &Database| {
                std::thread::yield_now();
                let mut next = stored.clone();
                next.name = format!("writer {writer}");
                Ok(next)
            });
            storage.update_database(&id, edit, origin()).await
        }
    })
    .await;
    for result in results {
        ok(result, "update_database");
    }
    let updates = trail(storage.as_ref())
        .await
        .into_iter()
        .filter(|event| event.action == AuditAction::DatabaseUpdate)
        .count();
    assert_eq!(
        updates, WRITERS,
        "one event per update, none per lost attempt"
    );
}
