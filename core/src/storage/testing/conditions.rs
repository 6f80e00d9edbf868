//! The conditional writes: an edit closure or a [`DeleteCheck`](crate::storage::DeleteCheck)
//! that refuses (with [`StorageError::PreconditionFailed`], as an `If-Match` that does not
//! match does) is answered as it is and changes nothing; a check sees the stored record, runs
//! before the delete guard, and racing conditional updates on one version admit exactly one.

use super::origin;
use super::races::race_all;
use crate::storage::Edits as _;
use std::sync::{Arc, Mutex};

use super::check::{found, ok};
use super::fixtures::{plain_dashboard, plain_database, rich_database, set_inheritance};
use crate::model::{Dashboard, Database, Timestamp};
use crate::storage::{DatabaseKey, DeleteCheck, Storage, StorageError};

/// A check that refuses as a stale `If-Match` does.
fn refuse<T>() -> Option<DeleteCheck<T>> {
    Some(Box::new(|_: &T| Err(StorageError::PreconditionFailed)))
}

#[track_caller]
fn assert_precondition_failed<T: std::fmt::Debug>(result: Result<T, StorageError>, call: &str) {
    assert!(
        matches!(result, Err(StorageError::PreconditionFailed)),
        "{call}: expected PreconditionFailed, got {result:?}"
    );
}

/// A delete whose check refuses answers the check's error and deletes nothing, by id and by
/// `api_id`, databases and dashboards; a check that lets it go on was given the stored record.
pub async fn refused_delete_checks_delete_nothing(storage: Arc<dyn Storage>) {
    let database = rich_database(Some("ext-checked"));
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );
    let dashboard = plain_dashboard("Checked");
    ok(
        storage.insert_dashboard(dashboard.clone(), origin()).await,
        "insert_dashboard",
    );

    let by_id = storage
        .delete_database(DatabaseKey::Id(database.id.as_str()), refuse(), origin())
        .await;
    assert_precondition_failed(by_id, "delete_database by id");
    let by_api_id = storage
        .delete_database(DatabaseKey::ApiId("ext-checked"), refuse(), origin())
        .await;
    assert_precondition_failed(by_api_id, "delete_database by api_id");
    assert_precondition_failed(
        storage
            .delete_dashboard(dashboard.id.as_str(), refuse(), origin())
            .await,
        "delete_dashboard",
    );
    assert_eq!(
        found(storage.database(database.id.as_str()).await, "database"),
        database
    );
    assert_eq!(
        found(
            storage.database_by_api_id("ext-checked").await,
            "database_by_api_id"
        ),
        database
    );
    assert_eq!(
        found(storage.dashboard(dashboard.id.as_str()).await, "dashboard"),
        dashboard
    );

    let seen: Arc<Mutex<Vec<Database>>> = Arc::default();
    let check = {
        let seen = Arc::clone(&seen);
        Box::new(move |stored: &Database| {
            seen.lock().unwrap().push(stored.clone());
            Ok(())
        })
    };
    let deleted = ok(
        storage
            .delete_database(DatabaseKey::ApiId("ext-checked"), Some(check), origin())
            .await,
        "delete_database with a check that passes",
    );
    assert_eq!(deleted, database);
    assert!(
        seen.lock().unwrap().iter().all(|seen| *seen == database),
        "the check is given the stored record"
    );
    let kept = dashboard.clone();
    let check = Box::new(move |stored: &Dashboard| {
        assert_eq!(*stored, kept, "the check is given the stored dashboard");
        Ok(())
    });
    let deleted = ok(
        storage
            .delete_dashboard(dashboard.id.as_str(), Some(check), origin())
            .await,
        "delete_dashboard with a check that passes",
    );
    assert_eq!(deleted, dashboard);
    assert!(
        storage
            .dashboard(dashboard.id.as_str())
            .await
            .unwrap()
            .is_none()
    );
}

/// An edit or an upsert that refuses with `PreconditionFailed` is answered with it and changes
/// nothing.
pub async fn edits_refusing_a_precondition_change_nothing(storage: Arc<dyn Storage>) {
    let database = plain_database("Versioned", Some("ext-versioned"));
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );
    let dashboard = plain_dashboard("Versioned");
    ok(
        storage.insert_dashboard(dashboard.clone(), origin()).await,
        "insert_dashboard",
    );
    let update = storage
        .update_database(
            database.id.as_str(),
            Box::new(|_: &Database| Err(StorageError::PreconditionFailed)),
            origin(),
        )
        .await;
    assert_precondition_failed(update, "update_database");
    let upsert = storage
        .upsert_database_by_api_id(
            "ext-versioned",
            Box::new(|_: Option<&Database>| Err(StorageError::PreconditionFailed)),
            origin(),
        )
        .await;
    assert_precondition_failed(upsert, "upsert_database_by_api_id");
    let absent = storage
        .upsert_database_by_api_id(
            "ext-absent",
            Box::new(|_: Option<&Database>| Err(StorageError::PreconditionFailed)),
            origin(),
        )
        .await;
    assert_precondition_failed(absent, "upsert_database_by_api_id of a new api_id");
    let board = storage
        .update_dashboard(
            dashboard.id.as_str(),
            Box::new(|_: &Dashboard| Err(StorageError::PreconditionFailed)),
            origin(),
        )
        .await;
    assert_precondition_failed(board, "update_dashboard");

    assert_eq!(
        found(storage.database(database.id.as_str()).await, "database"),
        database
    );
    assert!(
        storage
            .database_by_api_id("ext-absent")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        found(storage.dashboard(dashboard.id.as_str()).await, "dashboard"),
        dashboard
    );
}

/// A delete's check runs before the inheritance guard: a refused check answers its own error
/// even for a database others inherit from.
pub async fn delete_checks_run_before_the_inheritance_guard(storage: Arc<dyn Storage>) {
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
    assert_precondition_failed(
        storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()), refuse(), origin())
            .await,
        "delete_database of an inherited database",
    );
    assert!(matches!(
        storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()), None, origin())
            .await,
        Err(StorageError::Inherited(_))
    ));
}

/// How many conditional updates race.
const EDITORS: usize = 16;

/// Many updates, each accepting only the version they all read first (as `If-Match` does):
/// exactly one succeeds, every other answers `PreconditionFailed`, and the stored record is the
/// winner's.
pub async fn racing_conditional_updates_admit_exactly_one(storage: Arc<dyn Storage>) {
    let original = plain_database("Contended", None);
    let id = original.id.as_str().to_owned();
    let version = original.updated_at;
    ok(
        storage.insert_database(original, origin()).await,
        "insert_database",
    );
    let results = race_all(EDITORS, |editor| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        async move {
            let edit = Box::new(move |stored: &Database| {
                if stored.updated_at != version {
                    return Err(StorageError::PreconditionFailed);
                }
                std::thread::yield_now();
                Ok(Database {
                    name: format!("editor {editor}"),
                    updated_at: Timestamp::now().not_before_next(stored.updated_at),
                    ..stored.clone()
                })
            });
            storage.update_database(&id, edit, origin()).await
        }
    })
    .await;
    let mut winners = Vec::new();
    for (editor, result) in results.into_iter().enumerate() {
        match result {
            Ok(stored) => winners.push((editor, stored)),
            Err(StorageError::PreconditionFailed) => {}
            Err(other) => panic!("editor {editor}: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one conditional update wins");
    let (editor, won) = winners.remove(0);
    assert_eq!(won.name, format!("editor {editor}"));
    assert_eq!(found(storage.database(&id).await, "database"), won);
}
