//! Cases on dashboards: a whole record round-trips by id and in listings; inserts refuse a taken
//! id; listings page by id; updates store exactly what the edit returned or change nothing;
//! deletes return the record.

use super::origin;
use crate::storage::Edits as _;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::check::{absent, assert_err, check_listing, found, insertion_order, listing_ids, ok};
use super::fixtures::{all_dashboards, edit_errors, object, plain_dashboard, rich_dashboard};
use crate::model::{Dashboard, DashboardId, Timestamp};
use crate::storage::{Page, Storage, StorageError};
use crate::validate::dashboard_from_body;

/// A dashboard reads back exactly as inserted, by id and in the listing.
pub async fn dashboard_round_trips_whole_record(storage: Arc<dyn Storage>) {
    let rich = rich_dashboard();
    let plain = plain_dashboard("Plain");
    for dashboard in [&rich, &plain] {
        ok(
            storage.insert_dashboard(dashboard.clone(), origin()).await,
            "insert_dashboard",
        );
    }
    for expected in [&rich, &plain] {
        let stored = found(storage.dashboard(expected.id.as_str()).await, "dashboard");
        assert_eq!(&stored, expected, "dashboard(id) after insert_dashboard");
    }
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![rich, plain],
        "list_dashboards after insert_dashboard"
    );
}

/// Inserting a dashboard whose id is taken fails with `AlreadyExists` and changes nothing.
pub async fn dashboard_insert_with_taken_id_is_refused(storage: Arc<dyn Storage>) {
    let first = rich_dashboard();
    ok(
        storage.insert_dashboard(first.clone(), origin()).await,
        "insert_dashboard",
    );
    let mut impostor = plain_dashboard("Impostor");
    impostor.id = first.id.clone();
    assert_err!(
        storage.insert_dashboard(impostor, origin()).await,
        StorageError::AlreadyExists,
        "insert_dashboard with the id of a stored dashboard"
    );
    let stored = found(storage.dashboard(first.id.as_str()).await, "dashboard");
    assert_eq!(stored, first, "the first dashboard after a refused insert");
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![first],
        "list_dashboards after a refused insert"
    );
}

/// `list_dashboards` is ordered by id, respects the limit, and pages with an exclusive `after`
/// that may be any string; an empty store lists nothing.
pub async fn dashboard_listing_is_ordered_by_id_with_keyset_pages(storage: Arc<dyn Storage>) {
    for after in [None, Some("dash_anything")] {
        let page = Page { after, limit: 10 };
        assert!(
            ok(
                storage.list_dashboards(page, Default::default()).await,
                "list_dashboards"
            )
            .is_empty(),
            "list_dashboards(after: {after:?}) on an empty store must be empty"
        );
    }

    let ids = listing_ids(|| DashboardId::generate().as_str().to_owned());
    for id in insertion_order(&ids) {
        let mut dashboard = plain_dashboard(&format!("Listed {id}"));
        dashboard.id = DashboardId::from_stored(id);
        ok(
            storage.insert_dashboard(dashboard, origin()).await,
            "insert_dashboard",
        );
    }
    let storage = storage.as_ref();
    check_listing(
        "list_dashboards",
        &ids,
        async |after: Option<&str>, limit: usize| {
            let call = format!("list_dashboards(after: {after:?}, limit: {limit})");
            ok(
                storage
                    .list_dashboards(Page { after, limit }, Default::default())
                    .await,
                &call,
            )
            .into_iter()
            .map(|dashboard| dashboard.id.as_str().to_owned())
            .collect()
        },
    )
    .await;
}

/// `update_dashboard` passes the stored record to the edit, stores exactly what the edit
/// returned, and returns it.
pub async fn dashboard_update_applies_and_returns_stored(storage: Arc<dyn Storage>) {
    let original = rich_dashboard();
    let other = plain_dashboard("Bystander");
    ok(
        storage.insert_dashboard(original.clone(), origin()).await,
        "insert_dashboard",
    );
    ok(
        storage.insert_dashboard(other.clone(), origin()).await,
        "insert_dashboard",
    );

    let kept_panel = original.panels[1].id.as_str().to_owned();
    let body = object(json!({
        "name": "Ops (renamed)",
        "restricted_access": false,
        "panels": [
            {
                "title": "New first",
                "details": {"__type__": "query", "query": "select now()", "credential_id": "crd_1"},
                "actions": [{"label": "Go", "input_mappings": [
                    {"workflow_input_key": "who", "prompt_user": true, "prompt": "Who?"}
                ]}],
            },
            {
                "id": kept_panel,
                "title": "Kept",
                "details": {"__type__": "query", "query": "select 2", "credential_id": "crd_2"},
            },
        ],
    }));
    let now = Timestamp::now();
    let seen: Arc<Mutex<Vec<Dashboard>>> = Arc::default();
    let produced: Arc<Mutex<Option<Dashboard>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        let produced = Arc::clone(&produced);
        Box::new(move |stored: &Dashboard| {
            seen.lock().unwrap().push(stored.clone());
            let next = dashboard_from_body(Some(stored), &body, now)?;
            *produced.lock().unwrap() = Some(next.clone());
            Ok(next)
        })
    };
    let returned = ok(
        storage
            .update_dashboard(original.id.as_str(), edit, origin())
            .await,
        "update_dashboard",
    );

    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "update_dashboard never called the edit");
    for stored in &seen {
        assert_eq!(
            stored, &original,
            "the record update_dashboard passed to the edit"
        );
    }
    let produced = produced.lock().unwrap().clone().expect("the edit ran");
    assert_eq!(
        returned, produced,
        "update_dashboard must return what the edit produced"
    );
    assert_eq!(returned.name, "Ops (renamed)");
    assert!(!returned.restricted_access);
    let titles: Vec<&str> = returned.panels.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["New first", "Kept"]);
    assert_eq!(returned.panels[1].id.as_str(), kept_panel);

    let stored = found(storage.dashboard(original.id.as_str()).await, "dashboard");
    assert_eq!(stored, returned, "dashboard(id) after update_dashboard");
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![returned, other],
        "list_dashboards after update_dashboard: the updated one and the other, unchanged"
    );
}

/// `update_dashboard` of an id that is not stored fails with `NotFound` and creates nothing.
pub async fn dashboard_update_of_missing_is_not_found(storage: Arc<dyn Storage>) {
    let edit = || Box::new(|stored: &Dashboard| Ok(stored.clone()));
    assert_err!(
        storage
            .update_dashboard("dash_missing", edit(), origin())
            .await,
        StorageError::NotFound,
        "update_dashboard on an empty store"
    );
    let dashboard = plain_dashboard("Ops");
    ok(
        storage.insert_dashboard(dashboard.clone(), origin()).await,
        "insert_dashboard",
    );
    assert_err!(
        storage
            .update_dashboard("dash_missing", edit(), origin())
            .await,
        StorageError::NotFound,
        "update_dashboard of an id that is not stored"
    );
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![dashboard],
        "list_dashboards after failed updates"
    );
}

/// An edit that returns `Err` makes `update_dashboard` fail with `Invalid`; one that changes
/// the id fails with `IdentityChanged`. Either way nothing changes.
pub async fn dashboard_update_rejected_or_changing_id_changes_nothing(storage: Arc<dyn Storage>) {
    let original = rich_dashboard();
    ok(
        storage.insert_dashboard(original.clone(), origin()).await,
        "insert_dashboard",
    );

    let edit = Box::new(|stored: &Dashboard| {
        let mut next = stored.clone();
        next.panels.clear();
        Err(edit_errors().into())
    });
    match storage
        .update_dashboard(original.id.as_str(), edit, origin())
        .await
    {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            edit_errors(),
            "StorageError::Invalid must carry the edit's own errors"
        ),
        other => panic!(
            "update_dashboard with an edit that returns Err: expected Err(Invalid), got {other:?}"
        ),
    }
    let stored = found(storage.dashboard(original.id.as_str()).await, "dashboard");
    assert_eq!(stored, original, "dashboard after a rejected edit");

    let new_id = DashboardId::generate();
    let edit = {
        let new_id = new_id.clone();
        Box::new(move |stored: &Dashboard| {
            let mut next = stored.clone();
            next.id = new_id.clone();
            next.name = "moved".to_owned();
            Ok(next)
        })
    };
    assert_err!(
        storage
            .update_dashboard(original.id.as_str(), edit, origin())
            .await,
        StorageError::IdentityChanged,
        "update_dashboard with an edit that changes the id"
    );
    absent(
        storage.dashboard(new_id.as_str()).await,
        "dashboard(the new id) after a refused edit",
    );
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![original],
        "list_dashboards after refused edits"
    );
}

/// `delete_dashboard` returns the record as it was and removes it; deleting it again, or an id
/// that was never stored, is `NotFound`.
pub async fn dashboard_delete_returns_it_and_removes_it(storage: Arc<dyn Storage>) {
    assert_err!(
        storage
            .delete_dashboard("dash_missing", None, origin())
            .await,
        StorageError::NotFound,
        "delete_dashboard on an empty store"
    );
    let target = rich_dashboard();
    let other = plain_dashboard("Bystander");
    ok(
        storage.insert_dashboard(target.clone(), origin()).await,
        "insert_dashboard",
    );
    ok(
        storage.insert_dashboard(other.clone(), origin()).await,
        "insert_dashboard",
    );

    let removed = ok(
        storage
            .delete_dashboard(target.id.as_str(), None, origin())
            .await,
        "delete_dashboard",
    );
    assert_eq!(
        removed, target,
        "delete_dashboard must return the record as it was"
    );
    absent(
        storage.dashboard(target.id.as_str()).await,
        "dashboard(id) after delete_dashboard",
    );
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![other],
        "list_dashboards after delete_dashboard"
    );
    assert_err!(
        storage
            .delete_dashboard(target.id.as_str(), None, origin())
            .await,
        StorageError::NotFound,
        "a second delete_dashboard"
    );
    assert_err!(
        storage
            .delete_dashboard("dash_missing", None, origin())
            .await,
        StorageError::NotFound,
        "delete_dashboard of an id that is not stored"
    );
}
