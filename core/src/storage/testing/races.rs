//! The concurrency cases: racing calls on one record or one `api_id` lose nothing, admit one
//! winner, and are all-or-nothing, including deletes racing inheritances. Every case starts its
//! racing calls through [`race`] (two calls) or [`race_all`] (many of one kind).

use super::origin;
use crate::storage::Edits as _;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::Barrier;
use tokio::task::JoinHandle;

use super::check::{absent, assert_inheritance_refused, assert_same_database, found, ok};
use super::fixtures::{
    access_of, all_databases, insert_named, parameter, permission, plain_dashboard, plain_database,
    query_panel, reference, rich_database, sealed, set_inheritance,
};
use crate::model::{AccessControl, AccessLevel, Dashboard, Database, PanelId, SubjectKind};
use crate::storage::{DatabaseKey, Storage, StorageError};
use crate::validate::{ValidationErrors, message};

/// Spawns `future` as a task of the runtime that first waits at `barrier`.
fn spawn_at<F>(barrier: &Arc<Barrier>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let barrier = Arc::clone(barrier);
    tokio::spawn(async move {
        barrier.wait().await;
        future.await
    })
}

/// Awaits a spawned task; a task's panic is re-raised with its own message.
async fn joined<T>(task: JoinHandle<T>) -> T {
    match task.await {
        Ok(value) => value,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("a task of the case did not finish: {error}"),
        },
    }
}

/// Runs `a` and `b` at the same moment, as two tasks of the multi-threaded runtime released by
/// one barrier, and returns both results once both are done.
async fn race<A, B>(a: A, b: B) -> (A::Output, B::Output)
where
    A: Future + Send + 'static,
    A::Output: Send + 'static,
    B: Future + Send + 'static,
    B::Output: Send + 'static,
{
    let barrier = Arc::new(Barrier::new(2));
    let (a, b) = (spawn_at(&barrier, a), spawn_at(&barrier, b));
    (joined(a).await, joined(b).await)
}

/// [`race`] for `count` calls, `call(0)` to `call(count - 1)`; the results in that order.
pub(super) async fn race_all<F, Fut>(count: usize, call: F) -> Vec<Fut::Output>
where
    F: Fn(usize) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let barrier = Arc::new(Barrier::new(count));
    let tasks: Vec<_> = (0..count)
        .map(|index| spawn_at(&barrier, call(index)))
        .collect();
    let mut results = Vec::with_capacity(count);
    for task in tasks {
        results.push(joined(task).await);
    }
    results
}

/// `delete_database` by `id`, or by `api_id` when `by_api_id`, as a future that owns what it
/// needs (for [`race`]).
fn delete_by(
    storage: &Arc<dyn Storage>,
    by_api_id: bool,
    id: &str,
    api_id: &str,
) -> impl Future<Output = Result<Database, StorageError>> + Send + 'static {
    let (storage, id, api_id) = (Arc::clone(storage), id.to_owned(), api_id.to_owned());
    async move {
        let key = if by_api_id {
            DatabaseKey::ApiId(&api_id)
        } else {
            DatabaseKey::Id(&id)
        };
        storage.delete_database(key, None, origin()).await
    }
}

// ---------------------------------------------------------------------------------------------
// Databases and dashboards
// ---------------------------------------------------------------------------------------------

/// How many updates race on one record.
const UPDATERS: usize = 32;
/// How many upserts or inserts race for one `api_id`.
const RACERS: usize = 16;
/// How many rounds a two-party race runs.
const ROUNDS: usize = 50;

/// Asserts that `names` holds exactly `prefix0 .. prefix{count-1}`, each once.
#[track_caller]
fn assert_each_once<'a>(
    names: impl IntoIterator<Item = &'a str>,
    prefix: &str,
    count: usize,
    what: &str,
) {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for name in names {
        *counts.entry(name.to_owned()).or_default() += 1;
    }
    let missing: Vec<String> = (0..count)
        .map(|index| format!("{prefix}{index}"))
        .filter(|name| !counts.contains_key(name))
        .collect();
    let repeated: Vec<&String> = counts
        .iter()
        .filter(|(_, seen)| **seen > 1)
        .map(|(name, _)| name)
        .collect();
    assert!(
        missing.is_empty() && repeated.is_empty() && counts.len() == count,
        "{what}: lost updates {missing:?}, applied twice {repeated:?}, all {counts:?}"
    );
}

/// 32 concurrent `update_database` calls on one record, each appending its own connection
/// parameter: afterwards every one of them is there, once.
pub async fn concurrent_database_updates_lose_nothing(storage: Arc<dyn Storage>) {
    let original = plain_database("Contended", Some("ext-contended"));
    let id = original.id.as_str().to_owned();
    ok(
        storage.insert_database(original, origin()).await,
        "insert_database",
    );

    let results = race_all(UPDATERS, |index| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        async move {
            let edit = Box::new(move |stored: &Database| {
                // Widens the window between read and write of a backend that has one.
                std::thread::yield_now();
                let mut next = stored.clone();
                next.connection_parameters
                    .push(parameter(&format!("p{index}"), &index.to_string()));
                Ok(next)
            });
            storage.update_database(&id, edit, origin()).await
        }
    })
    .await;
    for (index, result) in results.into_iter().enumerate() {
        let returned = ok(result, &format!("concurrent update_database #{index}"));
        assert!(
            returned
                .connection_parameters
                .iter()
                .any(|p| p.name == format!("p{index}")),
            "update_database #{index} returned a record without its own change p{index}"
        );
    }

    let stored = found(storage.database(&id).await, "database");
    assert_each_once(
        stored.connection_parameters.iter().map(|p| p.name.as_str()),
        "p",
        UPDATERS,
        "connection parameters after 32 concurrent update_database calls",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-contended").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &stored,
        "database_by_api_id after concurrent updates",
    );
}

/// 16 concurrent upserts with one `api_id`: exactly one database has it, every call returned
/// that database's id, and no call's change was lost.
pub async fn concurrent_upserts_create_one_database(storage: Arc<dyn Storage>) {
    let bystander = plain_database("Bystander", Some("ext-bystander"));
    ok(
        storage.insert_database(bystander.clone(), origin()).await,
        "insert_database",
    );

    let results = race_all(RACERS, |index| {
        let storage = Arc::clone(&storage);
        let fresh = plain_database(&format!("Created by {index}"), Some("ext-raced"));
        async move {
            let edit = Box::new(move |stored: Option<&Database>| {
                std::thread::yield_now();
                let mut next = stored.cloned().unwrap_or_else(|| fresh.clone());
                next.connection_parameters
                    .push(parameter(&format!("u{index}"), ""));
                Ok(next)
            });
            storage
                .upsert_database_by_api_id("ext-raced", edit, origin())
                .await
        }
    })
    .await;
    let ids: Vec<String> = results
        .into_iter()
        .enumerate()
        .map(|(index, result)| {
            ok(
                result,
                &format!("concurrent upsert_database_by_api_id #{index}"),
            )
            .id
            .as_str()
            .to_owned()
        })
        .collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "every racing upsert must return the one database with that api_id; got ids {ids:?}"
    );

    let listed = all_databases(storage.as_ref()).await;
    let raced: Vec<&Database> = listed
        .iter()
        .filter(|d| d.api_id.as_deref() == Some("ext-raced"))
        .collect();
    assert_eq!(
        raced.len(),
        1,
        "list_databases after {RACERS} racing upserts: databases with the api_id: {:?}",
        raced.iter().map(|d| d.id.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(raced[0].id.as_str(), ids[0]);
    assert_eq!(
        listed.len(),
        2,
        "list_databases: the upserted one and the bystander"
    );
    assert_each_once(
        raced[0]
            .connection_parameters
            .iter()
            .map(|p| p.name.as_str()),
        "u",
        RACERS,
        "changes of racing upserts",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-raced").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        raced[0],
        "database_by_api_id after racing upserts",
    );
    let still = found(storage.database(bystander.id.as_str()).await, "database");
    assert_same_database(&still, &bystander, "another database after racing upserts");
}

/// 16 concurrent inserts of different databases with one `api_id`: exactly one succeeds, the
/// others fail with `AlreadyExists`.
pub async fn concurrent_inserts_with_one_api_id_admit_one(storage: Arc<dyn Storage>) {
    let candidates: Vec<Database> = (0..RACERS)
        .map(|index| plain_database(&format!("Candidate {index}"), Some("ext-contested")))
        .collect();
    let results = race_all(RACERS, |index| {
        let storage = Arc::clone(&storage);
        let candidate = candidates[index].clone();
        async move { storage.insert_database(candidate, origin()).await }
    })
    .await;
    let mut winners = Vec::new();
    for (index, result) in results.into_iter().enumerate() {
        match result {
            Ok(()) => winners.push(index),
            Err(StorageError::AlreadyExists) => {}
            Err(other) => panic!(
                "concurrent insert_database #{index} with a contested api_id: expected Ok or \
                 Err(AlreadyExists), got Err({other:?})"
            ),
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one of {RACERS} racing inserts with one api_id must succeed; winners: {winners:?}"
    );
    let winner = &candidates[winners[0]];
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 1, "list_databases after racing inserts");
    assert_same_database(&listed[0], winner, "the stored database is the winner's");
    let by_api_id = found(
        storage.database_by_api_id("ext-contested").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        winner,
        "database_by_api_id after racing inserts",
    );
}

/// What the racing update of [`delete_racing_update_is_all_or_nothing`] does: several fields,
/// secrets included, so that a torn write shows.
fn race_update(stored: &Database) -> Database {
    let mut next = stored.clone();
    // An edit moves the version forward, as every edit of the service does.
    next.updated_at = stored.updated_at.not_before_next(stored.updated_at);
    next.name = "Updated".to_owned();
    next.hostname = "updated.internal".to_owned();
    next.connection_parameters.push(parameter("raced", "yes"));
    next.credentials[0].password = Some(sealed("upd4ted-pässword"));
    next.tls.client_key = Some(sealed(vec![0x42, 0x00, 0x42]));
    next
}

/// A delete racing an update, 50 rounds: the update either applied wholly before the delete
/// (and the delete returned the updated record) or found nothing (and the delete returned the
/// original); the record is gone either way.
pub async fn delete_racing_update_is_all_or_nothing(storage: Arc<dyn Storage>) {
    for round in 0..ROUNDS {
        let api_id = format!("ext-race-{round}");
        let original = rich_database(Some(&api_id));
        let updated = race_update(&original);
        let id = original.id.as_str().to_owned();
        ok(
            storage.insert_database(original.clone(), origin()).await,
            "insert_database",
        );
        let by_api_id = round % 2 == 1;

        let update = {
            let (storage, id) = (Arc::clone(&storage), id.clone());
            async move {
                let edit = Box::new(|stored: &Database| {
                    std::thread::yield_now();
                    Ok(race_update(stored))
                });
                storage.update_database(&id, edit, origin()).await
            }
        };
        let delete = delete_by(&storage, by_api_id, &id, &api_id);
        let (update, delete) = race(update, delete).await;
        let context = format!(
            "round {round}, delete by {}",
            if by_api_id { "api_id" } else { "id" }
        );

        let removed = ok(
            delete,
            &format!("{context}: delete_database racing an update"),
        );
        match update {
            Ok(returned) => {
                assert_same_database(
                    &returned,
                    &updated,
                    &format!("{context}: update_database that won the race returns the update"),
                );
                assert_same_database(
                    &removed,
                    &updated,
                    &format!(
                        "{context}: the update came first, so the delete must return the \
                         updated record"
                    ),
                );
            }
            Err(StorageError::NotFound) => assert_same_database(
                &removed,
                &original,
                &format!("{context}: the delete came first, so it must return the original record"),
            ),
            Err(other) => panic!(
                "{context}: update_database racing a delete: expected Ok or Err(NotFound), got \
                 Err({other:?})"
            ),
        }
        absent(
            storage.database(&id).await,
            &format!("{context}: database(id) after the race"),
        );
        absent(
            storage.database_by_api_id(&api_id).await,
            &format!("{context}: database_by_api_id after the race"),
        );
    }
    assert!(
        all_databases(storage.as_ref()).await.is_empty(),
        "list_databases after every round's delete must be empty"
    );
}

/// An upsert racing a delete of the same `api_id`, 50 rounds: either the upsert updated the
/// stored record and the delete then removed that updated record (nothing left), or the delete
/// removed the original and the upsert created a new record (that record left). Never a mix.
pub async fn upsert_racing_delete_is_all_or_nothing(storage: Arc<dyn Storage>) {
    for round in 0..ROUNDS {
        let api_id = format!("ext-upsert-race-{round}");
        let original = plain_database("Original", Some(&api_id));
        let fresh = plain_database("Recreated", Some(&api_id));
        let mark = |stored: &Database| {
            let mut next = stored.clone();
            next.updated_at = stored.updated_at.not_before_next(stored.updated_at);
            next.connection_parameters
                .push(parameter("upserted", "yes"));
            next
        };
        let (updated, recreated) = (mark(&original), mark(&fresh));
        ok(
            storage.insert_database(original.clone(), origin()).await,
            "insert_database",
        );
        let by_api_id = round % 2 == 0;

        let upsert = {
            let (storage, api_id, fresh) = (Arc::clone(&storage), api_id.clone(), fresh.clone());
            async move {
                let edit = Box::new(move |stored: Option<&Database>| {
                    std::thread::yield_now();
                    Ok(mark(stored.unwrap_or(&fresh)))
                });
                storage
                    .upsert_database_by_api_id(&api_id, edit, origin())
                    .await
            }
        };
        let delete = delete_by(&storage, by_api_id, original.id.as_str(), &api_id);
        let (upsert, delete) = race(upsert, delete).await;
        let context = format!(
            "round {round}, delete by {}",
            if by_api_id { "api_id" } else { "id" }
        );

        let returned = ok(upsert, &format!("{context}: upsert racing a delete"));
        let removed = ok(
            delete,
            &format!("{context}: delete_database racing an upsert"),
        );
        if returned.id == original.id {
            assert_same_database(
                &returned,
                &updated,
                &format!("{context}: the upsert came first and updated the original"),
            );
            assert_same_database(
                &removed,
                &updated,
                &format!("{context}: the upsert came first, so the delete returns its result"),
            );
            absent(
                storage.database_by_api_id(&api_id).await,
                &format!("{context}: database_by_api_id after upsert-then-delete"),
            );
        } else {
            assert_same_database(
                &returned,
                &recreated,
                &format!("{context}: the delete came first, so the upsert created a new record"),
            );
            assert_same_database(
                &removed,
                &original,
                &format!("{context}: the delete came first, so it returns the original"),
            );
            let stored = found(
                storage.database_by_api_id(&api_id).await,
                &format!("{context}: database_by_api_id after delete-then-upsert"),
            );
            assert_same_database(
                &stored,
                &recreated,
                &format!("{context}: database_by_api_id after delete-then-upsert"),
            );
        }
        absent(
            storage.database(original.id.as_str()).await,
            &format!("{context}: database(the original id) after the race"),
        );
        let listed = all_databases(storage.as_ref()).await;
        let with_api_id = listed
            .iter()
            .filter(|d| d.api_id.as_deref() == Some(api_id.as_str()))
            .count();
        assert!(
            with_api_id <= 1,
            "{context}: {with_api_id} databases with one api_id after the race"
        );
    }
}

/// 32 concurrent `update_dashboard` calls on one dashboard, each appending its own panel:
/// afterwards every one of them is there, once.
pub async fn concurrent_dashboard_updates_lose_nothing(storage: Arc<dyn Storage>) {
    let original = plain_dashboard("Contended");
    let id = original.id.as_str().to_owned();
    ok(
        storage.insert_dashboard(original, origin()).await,
        "insert_dashboard",
    );

    let results = race_all(UPDATERS, |index| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        let panel = query_panel(PanelId::generate(), &format!("t{index}"));
        async move {
            let edit = Box::new(move |stored: &Dashboard| {
                std::thread::yield_now();
                let mut next = stored.clone();
                next.panels.push(panel.clone());
                Ok(next)
            });
            storage.update_dashboard(&id, edit, origin()).await
        }
    })
    .await;
    for (index, result) in results.into_iter().enumerate() {
        let returned = ok(result, &format!("concurrent update_dashboard #{index}"));
        assert!(
            returned
                .panels
                .iter()
                .any(|p| p.title == format!("t{index}")),
            "update_dashboard #{index} returned a dashboard without its own panel t{index}"
        );
    }
    let stored = found(storage.dashboard(&id).await, "dashboard");
    assert_each_once(
        stored.panels.iter().map(|p| p.title.as_str()),
        "t",
        UPDATERS,
        "panels after 32 concurrent update_dashboard calls",
    );
}

// ---------------------------------------------------------------------------------------------
// Access control
// ---------------------------------------------------------------------------------------------

/// 16 concurrent `update_access_control` calls on one database, each appending its own
/// permission: afterwards every one of them is there, once.
pub async fn concurrent_access_control_updates_lose_nothing(storage: Arc<dyn Storage>) {
    let database = plain_database("Contended", None);
    let id = database.id.as_str().to_owned();
    ok(
        storage.insert_database(database, origin()).await,
        "insert_database",
    );

    let results = race_all(RACERS, |index| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        async move {
            let edit = Box::new(move |stored: &AccessControl| {
                std::thread::yield_now();
                let mut next = stored.clone();
                next.permissions.push(permission(
                    SubjectKind::User,
                    &format!("s{index}"),
                    AccessLevel::Query,
                ));
                Ok(next)
            });
            storage.update_access_control(&id, edit, origin()).await
        }
    })
    .await;
    for (index, result) in results.into_iter().enumerate() {
        let returned = ok(
            result,
            &format!("concurrent update_access_control #{index}"),
        );
        assert!(
            returned
                .permissions
                .iter()
                .any(|p| p.subject == format!("s{index}")),
            "update_access_control #{index} returned access control without its own \
             permission s{index}"
        );
    }
    let stored = access_of(storage.as_ref(), &id, "after concurrent updates").await;
    assert_each_once(
        stored.permissions.iter().map(|p| p.subject.as_str()),
        "s",
        RACERS,
        "permissions after 16 concurrent update_access_control calls",
    );
}

/// How many rounds the inheritance races run.
const INHERITANCE_ROUNDS: usize = 30;

/// A delete of A racing "B inherits from A", 30 rounds: either the inheritance came first (it
/// succeeded, the delete was refused naming B, A is still there) or the delete came first (A
/// is gone, the inheritance was refused with [`MISSING`](message::INHERITS_MISSING)). Never
/// an heir of a deleted database.
pub async fn delete_racing_inheritance_never_leaves_a_dangling_heir(storage: Arc<dyn Storage>) {
    for round in 0..INHERITANCE_ROUNDS {
        let api_id = format!("ext-inherit-race-{round}");
        let target = plain_database(&format!("Target {round}"), Some(&api_id));
        let heir = plain_database(&format!("Heir {round}"), None);
        for database in [&target, &heir] {
            ok(
                storage.insert_database(database.clone(), origin()).await,
                "insert_database",
            );
        }
        let (a, b) = (target.id.as_str().to_owned(), heir.id.as_str().to_owned());
        let by_api_id = round % 2 == 1;

        let inherit = {
            let (storage, a, b) = (Arc::clone(&storage), a.clone(), b.clone());
            async move {
                let edit = Box::new(move |stored: &AccessControl| {
                    std::thread::yield_now();
                    let mut next = stored.clone();
                    next.data_protection.inherits_from = Some(a.clone());
                    Ok(next)
                });
                storage.update_access_control(&b, edit, origin()).await
            }
        };
        let delete = delete_by(&storage, by_api_id, &a, &api_id);
        let (inherit, delete) = race(inherit, delete).await;
        let context = format!(
            "round {round}, delete by {}",
            if by_api_id { "api_id" } else { "id" }
        );

        let stored_a = ok(
            storage.database(&a).await,
            &format!("{context}: database(A)"),
        );
        let inherits = access_of(storage.as_ref(), &b, &format!("{context}: of B"))
            .await
            .data_protection
            .inherits_from;
        match (&inherit, &delete) {
            (Ok(returned), Err(StorageError::Inherited(heirs))) => {
                assert_eq!(
                    returned.data_protection.inherits_from.as_deref(),
                    Some(a.as_str()),
                    "{context}: the inheritance that won returns it"
                );
                assert_eq!(
                    heirs,
                    &vec![reference(&heir)],
                    "{context}: the refused delete names B"
                );
                assert!(
                    stored_a.is_some(),
                    "{context}: the delete was refused, but A is gone"
                );
                assert_eq!(
                    inherits.as_deref(),
                    Some(a.as_str()),
                    "{context}: the inheritance succeeded, but B does not inherit from A"
                );
                ok(
                    set_inheritance(storage.as_ref(), &b, None).await,
                    &format!("{context}: B clears its inheritance"),
                );
                ok(
                    storage
                        .delete_database(DatabaseKey::Id(&a), None, origin())
                        .await,
                    &format!("{context}: delete_database(A, None) once B no longer inherits"),
                );
            }
            (Err(StorageError::Invalid(errors)), Ok(removed)) => {
                assert_eq!(
                    errors,
                    &ValidationErrors::single("inherits_from", message::INHERITS_MISSING),
                    "{context}: the inheritance that lost the race is refused: A is missing"
                );
                assert_same_database(removed, &target, &format!("{context}: the deleted A"));
                assert!(
                    stored_a.is_none(),
                    "{context}: the delete succeeded, but A is still there"
                );
                assert_eq!(
                    inherits, None,
                    "{context}: B inherits from a deleted database"
                );
            }
            _ => panic!(
                "{context}: expected (Ok, Err(Inherited)) or (Err(Invalid), Ok), got \
                 inheritance {inherit:?} and delete {delete:?}"
            ),
        }
        ok(
            storage
                .delete_database(DatabaseKey::Id(&b), None, origin())
                .await,
            &format!("{context}: delete_database(B, None)"),
        );
    }
    assert!(
        all_databases(storage.as_ref()).await.is_empty(),
        "list_databases after every round"
    );
}

/// "A inherits from B" racing "B inherits from A", 30 rounds: exactly one succeeds, the other
/// is refused with [`CYCLE`](message::INHERITS_CYCLE); never a cycle.
pub async fn racing_inheritances_never_make_a_cycle(storage: Arc<dyn Storage>) {
    for round in 0..INHERITANCE_ROUNDS {
        let pair = insert_named(storage.as_ref(), &["A", "B"]).await;
        let ids: Vec<String> = pair.iter().map(|d| d.id.as_str().to_owned()).collect();
        let results = race_all(2, |index| {
            let storage = Arc::clone(&storage);
            let (id, target) = (ids[index].clone(), ids[1 - index].clone());
            async move { set_inheritance(storage.as_ref(), &id, Some(&target)).await }
        })
        .await;
        let context = format!("round {round}");
        let winners: Vec<usize> = (0..2).filter(|&i| results[i].is_ok()).collect();
        assert_eq!(
            winners.len(),
            1,
            "{context}: exactly one of two crossing inheritances must succeed; got {results:?}"
        );
        let loser = 1 - winners[0];
        let result = results.into_iter().nth(loser).expect("two results");
        assert_inheritance_refused(
            result,
            message::INHERITS_CYCLE,
            &format!("{context}: the crossing inheritance that lost"),
        );
        let links: Vec<Option<String>> = {
            let mut links = Vec::new();
            for id in &ids {
                let access = access_of(storage.as_ref(), id, &context).await;
                links.push(access.data_protection.inherits_from);
            }
            links
        };
        assert_eq!(
            links[winners[0]].as_deref(),
            Some(ids[loser].as_str()),
            "{context}: the winner inherits"
        );
        assert_eq!(links[loser], None, "{context}: the loser does not inherit");
    }
}

/// What the writes of [`reads_racing_writes_never_see_what_a_write_replaced`] have answered,
/// as its readers see it: for each kind, the round of the last write that answered (0: none
/// yet), and whether the delete of the database and of the key has begun (a read may find
/// nothing) and answered (a read begun after must find nothing).
#[derive(Default)]
struct Answered {
    database: std::sync::atomic::AtomicU32,
    dashboard: std::sync::atomic::AtomicU32,
    access: std::sync::atomic::AtomicU32,
    key: std::sync::atomic::AtomicU32,
    database_deleting: std::sync::atomic::AtomicBool,
    database_deleted: std::sync::atomic::AtomicBool,
    key_deleting: std::sync::atomic::AtomicBool,
    key_deleted: std::sync::atomic::AtomicBool,
}

/// How many rounds of writes [`reads_racing_writes_never_see_what_a_write_replaced`] makes.
const READ_ROUNDS: u32 = 40;
/// The first name of the database and the dashboard of that case; round `r` names them
/// `"{READ_NAME} {r}"`.
const READ_NAME: &str = "Read while written";
/// The key's last use as round `r` touches it: this plus `r` microseconds.
const TOUCHED: i64 = 1_800_000_000_000_000;

/// The round whose write gave `name` (0: the name inserted), if any did.
fn round_of_name(name: &str) -> Option<u32> {
    if name == READ_NAME {
        return Some(0);
    }
    let round: u32 = name
        .strip_prefix(READ_NAME)?
        .strip_prefix(' ')?
        .parse()
        .ok()?;
    (1..=READ_ROUNDS).contains(&round).then_some(round)
}

/// What one reader found of one kind, read after read: the state of each read (the round of
/// the write that made it, `None` once gone) and every distinct record it read, with its
/// round, to compare with what that round's write produced once every write is done.
struct Track<T> {
    what: &'static str,
    last: Option<Option<u32>>,
    kept: Vec<(u32, T)>,
}

impl<T: PartialEq> Track<T> {
    fn new(what: &'static str) -> Self {
        Self {
            what,
            last: None,
            kept: Vec::new(),
        }
    }

    /// One read: `found` (its `round`), begun after the write of round `floor` had answered,
    /// and, when `deleted` (the delete had answered before the read began), after the delete;
    /// `deleting`: the delete had begun when the read returned.
    #[track_caller]
    fn read(&mut self, floor: u32, deleted: bool, deleting: bool, found: Option<(u32, T)>) {
        let what = self.what;
        let state = found.as_ref().map(|(round, _)| *round);
        match state {
            None => assert!(
                deleting,
                "a reader found no {what} while it was neither deleted nor being deleted"
            ),
            Some(round) => {
                assert!(
                    !deleted,
                    "a reader read the {what} of round {round} after its delete had answered"
                );
                assert!(
                    round >= floor,
                    "a reader read the {what} of round {round}, begun after the write of round \
                     {floor} had answered: what a write replaced"
                );
            }
        }
        // Gone comes after every round: a reader never goes back.
        let rank = |state: Option<u32>| state.unwrap_or(u32::MAX);
        if let Some(last) = self.last {
            assert!(
                rank(state) >= rank(last),
                "a reader read the {what} as {state:?} (round; None: gone) after it had read it \
                 as {last:?}"
            );
        }
        self.last = Some(state);
        if let Some((round, record)) = found
            && self.kept.last().is_none_or(|(_, kept)| *kept != record)
        {
            self.kept.push((round, record));
        }
    }
}

/// What one reader of [`reads_racing_writes_never_see_what_a_write_replaced`] found.
struct Reads {
    count: u64,
    databases: Track<Database>,
    dashboards: Track<Dashboard>,
    access: Track<AccessControl>,
    keys: Track<crate::model::CallerKey>,
}

/// Asserts that every record of `track` is the one its round's write produced (`written`,
/// by round).
#[track_caller]
fn assert_written<T>(track: &Track<T>, written: &[T], same: impl Fn(&T, &T, &str)) {
    for (round, record) in &track.kept {
        let context = format!(
            "the {} a reader read as round {round}: what that round's write produced",
            track.what
        );
        same(record, &written[*round as usize], &context);
    }
}

/// Reads racing writes never answer what a write replaced once it has answered: while four
/// tasks keep reading a database, its dashboard, its access control and a caller key (filling
/// any cache a backend keeps), every update is read back at once as written, and a revoked key
/// and a deleted database read as gone. Each reader's reads are checked too: every record it
/// read is one a write produced (or the one inserted), never older than the last write that
/// had answered when the read began nor than what that reader read before, and gone only once
/// its delete had begun (and always once it had answered).
pub async fn reads_racing_writes_never_see_what_a_write_replaced(storage: Arc<dyn Storage>) {
    use std::sync::atomic::{AtomicBool, Ordering};

    let database = plain_database(READ_NAME, None);
    let id = database.id.as_str().to_owned();
    ok(
        storage.insert_database(database, origin()).await,
        "insert_database",
    );
    let dashboard = plain_dashboard(READ_NAME);
    let dashboard_id = dashboard.id.as_str().to_owned();
    ok(
        storage.insert_dashboard(dashboard, origin()).await,
        "insert_dashboard",
    );
    let key = super::fixtures::caller_keys().remove(0);
    let (key_id, digest) = (key.id.as_str().to_owned(), key.digest);
    ok(
        storage.insert_caller_key(key, origin()).await,
        "insert_caller_key",
    );
    // What each write produced, by round; round 0 is what was inserted.
    let mut databases = vec![found(storage.database(&id).await, "database as inserted")];
    let mut dashboards = vec![found(
        storage.dashboard(&dashboard_id).await,
        "dashboard as inserted",
    )];
    let mut accesses = vec![access_of(storage.as_ref(), &id, "as inserted").await];
    let mut keys = vec![found(
        storage.caller_key_by_digest(&digest).await,
        "caller key as inserted",
    )];
    let inserted_use = keys[0].last_used_at;
    let key_round = move |key: &crate::model::CallerKey| match key.last_used_at {
        at if at == inserted_use => 0,
        Some(at) => u32::try_from(at.as_micros() - TOUCHED)
            .ok()
            .filter(|round| (1..=READ_ROUNDS).contains(round))
            .unwrap_or_else(|| panic!("a reader read a key last used at {at}: no write did")),
        None => panic!("a reader read a key with no last use: no write did"),
    };
    let access_round = |access: &AccessControl| match access.permissions.as_slice() {
        [permission] => permission
            .subject
            .strip_prefix("reader-")
            .and_then(|rest| rest.strip_suffix("@example.com"))
            .and_then(|round| round.parse().ok())
            .unwrap_or(0),
        _ => 0,
    };

    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(Answered::default());
    // How many readers read once: the writes start when all have, so that they race.
    let reading = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (storage, stop) = (Arc::clone(&storage), Arc::clone(&stop));
            let (reading, answered) = (Arc::clone(&reading), Arc::clone(&answered));
            let (id, dashboard_id) = (id.clone(), dashboard_id.clone());
            tokio::spawn(async move {
                let mut reads = Reads {
                    count: 0,
                    databases: Track::new("database"),
                    dashboards: Track::new("dashboard"),
                    access: Track::new("access control"),
                    keys: Track::new("caller key"),
                };
                let name_round = |name: &str, what: &str| {
                    round_of_name(name).unwrap_or_else(|| {
                        panic!("a reader read a {what} named {name:?}: no write did")
                    })
                };
                while !stop.load(Ordering::SeqCst) {
                    let (floor, deleted) = (
                        answered.database.load(Ordering::SeqCst),
                        answered.database_deleted.load(Ordering::SeqCst),
                    );
                    let read = ok(storage.database(&id).await, "database, racing writes");
                    let deleting = answered.database_deleting.load(Ordering::SeqCst);
                    let read = read.map(|db| (name_round(&db.name, "database"), db));
                    reads.databases.read(floor, deleted, deleting, read);

                    let floor = answered.dashboard.load(Ordering::SeqCst);
                    let read = found(
                        storage.dashboard(&dashboard_id).await,
                        "dashboard, racing writes",
                    );
                    let round = name_round(&read.name, "dashboard");
                    reads
                        .dashboards
                        .read(floor, false, false, Some((round, read)));

                    let (floor, deleted) = (
                        answered.access.load(Ordering::SeqCst),
                        answered.database_deleted.load(Ordering::SeqCst),
                    );
                    let read = ok(
                        storage.access_control(&id).await,
                        "access_control, racing writes",
                    );
                    let deleting = answered.database_deleting.load(Ordering::SeqCst);
                    let read = read.map(|access| (access_round(&access), access));
                    reads.access.read(floor, deleted, deleting, read);

                    let (floor, deleted) = (
                        answered.key.load(Ordering::SeqCst),
                        answered.key_deleted.load(Ordering::SeqCst),
                    );
                    let read = ok(
                        storage.caller_key_by_digest(&digest).await,
                        "caller_key_by_digest, racing writes",
                    );
                    let deleting = answered.key_deleting.load(Ordering::SeqCst);
                    let read = read.map(|key| (key_round(&key), key));
                    reads.keys.read(floor, deleted, deleting, read);

                    reads.count += 1;
                    if reads.count == 1 {
                        reading.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::task::yield_now().await;
                }
                reads
            })
        })
        .collect();
    while reading.load(Ordering::SeqCst) < readers.len() {
        tokio::task::yield_now().await;
    }

    for round in 1..=READ_ROUNDS {
        let context = format!("round {round}, with reads racing");
        let name = format!("{READ_NAME} {round}");
        let edited = ok(
            storage
                .update_database(
                    &id,
                    |db| {
                        let mut db = db.clone();
                        db.name.clone_from(&name);
                        Ok(db)
                    },
                    origin(),
                )
                .await,
            "update_database",
        );
        answered.database.store(round, Ordering::SeqCst);
        let read = found(storage.database(&id).await, "database after its update");
        assert_same_database(&read, &edited, &context);
        databases.push(edited);
        let edited = ok(
            storage
                .update_dashboard(
                    &dashboard_id,
                    |dashboard| {
                        let mut dashboard = dashboard.clone();
                        dashboard.name.clone_from(&name);
                        Ok(dashboard)
                    },
                    origin(),
                )
                .await,
            "update_dashboard",
        );
        answered.dashboard.store(round, Ordering::SeqCst);
        let read = found(
            storage.dashboard(&dashboard_id).await,
            "dashboard after its update",
        );
        assert_eq!(read, edited, "{context}: the dashboard as updated");
        dashboards.push(edited);
        let subject = format!("reader-{round}@example.com");
        let edited = ok(
            storage
                .update_access_control(
                    &id,
                    |_| {
                        Ok(AccessControl {
                            permissions: vec![permission(
                                SubjectKind::User,
                                &subject,
                                AccessLevel::Query,
                            )],
                            ..AccessControl::default()
                        })
                    },
                    origin(),
                )
                .await,
            "update_access_control",
        );
        answered.access.store(round, Ordering::SeqCst);
        let read = access_of(storage.as_ref(), &id, "after its update").await;
        assert_eq!(read, edited, "{context}: the access control as updated");
        accesses.push(edited);
        let at = crate::model::Timestamp::from_micros(TOUCHED + i64::from(round));
        ok(
            storage.touch_caller_key(&key_id, at).await,
            "touch_caller_key",
        );
        answered.key.store(round, Ordering::SeqCst);
        let read = found(
            storage.caller_key_by_digest(&digest).await,
            "caller_key_by_digest after a touch",
        );
        assert_eq!(
            read.last_used_at,
            Some(at),
            "{context}: the key's last use as touched"
        );
        keys.push(read);
    }
    answered.key_deleting.store(true, Ordering::SeqCst);
    ok(
        storage.delete_caller_key(&key_id, origin()).await,
        "delete_caller_key",
    );
    answered.key_deleted.store(true, Ordering::SeqCst);
    absent(
        storage.caller_key_by_digest(&digest).await,
        "caller_key_by_digest of a revoked key, with reads racing",
    );
    answered.database_deleting.store(true, Ordering::SeqCst);
    ok(
        storage
            .delete_database(DatabaseKey::Id(&id), None, origin())
            .await,
        "delete_database",
    );
    answered.database_deleted.store(true, Ordering::SeqCst);
    absent(
        storage.database(&id).await,
        "database once deleted, with reads racing",
    );
    absent(
        storage.access_control(&id).await,
        "access_control of a deleted database, with reads racing",
    );
    stop.store(true, Ordering::SeqCst);
    for reader in readers {
        let reads = joined(reader).await;
        assert!(reads.count > 0, "every reader read");
        assert_written(&reads.databases, &databases, |a, b, context| {
            assert_same_database(a, b, context);
        });
        let same = |a: &Dashboard, b: &Dashboard, context: &str| assert_eq!(a, b, "{context}");
        assert_written(&reads.dashboards, &dashboards, same);
        let same = |a: &AccessControl, b: &AccessControl, context: &str| {
            assert_eq!(a, b, "{context}");
        };
        assert_written(&reads.access, &accesses, same);
        let same = |a: &crate::model::CallerKey, b: &crate::model::CallerKey, context: &str| {
            assert!(a == b, "{context}: {a:?} is not {b:?}");
        };
        assert_written(&reads.keys, &keys, same);
    }
}
