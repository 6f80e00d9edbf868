//! Cases on databases: a whole record round-trips by id, by `api_id` and in listings; inserts
//! refuse a taken id or `api_id`; listings page by id; updates and upserts by `api_id` store
//! exactly what the edit returned or change nothing; deletes by id and by `api_id` return the
//! record and free its `api_id`.

use super::origin;
use crate::storage::Edits as _;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::check::{
    absent, assert_err, assert_same_database, check_listing, found, insertion_order, listing_ids,
    ok,
};
use super::fixtures::{
    all_databases, edit_errors, object, parameter, plain_dashboard, plain_database, rich_database,
    sealed,
};
use crate::model::{Database, DatabaseId, Timestamp};
use crate::seal::{Place, Sealer};
use crate::storage::{DatabaseKey, Page, Storage, StorageError};
use crate::validate::{ValidationErrors, database_from_body};

// ---------------------------------------------------------------------------------------------
// insert and read
// ---------------------------------------------------------------------------------------------

/// A database reads back exactly as inserted — every field, every secret, the order of
/// `connection_parameters` and `credentials` — by id, by `api_id` and in the listing.
pub async fn database_round_trips_whole_record(storage: Arc<dyn Storage>) {
    let with_api_id = rich_database(Some("ext-orders"));
    let mut without_api_id = rich_database(None);
    without_api_id.name = "Second".to_owned();
    without_api_id.credentials.reverse();
    without_api_id.connection_parameters.reverse();
    without_api_id.tls.client_key = None;
    without_api_id.port = None;

    for database in [&with_api_id, &without_api_id] {
        ok(
            storage.insert_database(database.clone(), origin()).await,
            "insert_database of a new record",
        );
    }
    for expected in [&with_api_id, &without_api_id] {
        let by_id = found(storage.database(expected.id.as_str()).await, "database(id)");
        assert_same_database(&by_id, expected, "database(id) after insert_database");
    }
    let by_api_id = found(
        storage.database_by_api_id("ext-orders").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &with_api_id,
        "database_by_api_id after insert_database",
    );

    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 2, "list_databases after two inserts");
    for (listed, expected) in listed.iter().zip([&with_api_id, &without_api_id]) {
        assert_same_database(listed, expected, "list_databases after insert_database");
    }
}

/// Reads of ids that are not stored are `None`, and ids, `api_id`s and dashboard ids are
/// separate keys.
pub async fn reads_of_missing_records_are_none(storage: Arc<dyn Storage>) {
    absent(
        storage.database("db_missing").await,
        "database on an empty store",
    );
    absent(
        storage.database_by_api_id("ext-missing").await,
        "database_by_api_id on an empty store",
    );
    absent(
        storage.dashboard("dash_missing").await,
        "dashboard on an empty store",
    );

    let database = plain_database("Orders", Some("ext-1"));
    let dashboard = plain_dashboard("Ops");
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );
    ok(
        storage.insert_dashboard(dashboard.clone(), origin()).await,
        "insert_dashboard",
    );

    absent(
        storage.database("db_missing").await,
        "database(an id that is not stored)",
    );
    absent(
        storage.database("ext-1").await,
        "database(a stored api_id): ids and api_ids are separate keys",
    );
    absent(
        storage.database_by_api_id(database.id.as_str()).await,
        "database_by_api_id(a stored id): ids and api_ids are separate keys",
    );
    absent(
        storage.database_by_api_id("EXT-1").await,
        "database_by_api_id compares with case",
    );
    absent(
        storage.database(dashboard.id.as_str()).await,
        "database(a dashboard's id)",
    );
    absent(
        storage.dashboard(database.id.as_str()).await,
        "dashboard(a database's id)",
    );
    absent(
        storage.dashboard("dash_missing").await,
        "dashboard(an id that is not stored)",
    );
}

/// Inserting a database whose id is taken fails with `AlreadyExists` and changes nothing.
pub async fn database_insert_with_taken_id_is_refused(storage: Arc<dyn Storage>) {
    let first = rich_database(Some("ext-first"));
    ok(
        storage.insert_database(first.clone(), origin()).await,
        "insert_database",
    );

    let mut impostor = plain_database("Impostor", Some("ext-impostor"));
    impostor.id = first.id.clone();
    assert_err!(
        storage.insert_database(impostor, origin()).await,
        StorageError::AlreadyExists,
        "insert_database with the id of a stored database"
    );

    let stored = found(storage.database(first.id.as_str()).await, "database");
    assert_same_database(
        &stored,
        &first,
        "the first database after a refused insert with its id",
    );
    absent(
        storage.database_by_api_id("ext-impostor").await,
        "database_by_api_id(the api_id of the refused insert)",
    );
    assert_eq!(
        all_databases(storage.as_ref()).await.len(),
        1,
        "list_databases after a refused insert"
    );
}

/// Inserting a database whose `api_id` is taken fails with `AlreadyExists` and changes
/// nothing.
pub async fn database_insert_with_taken_api_id_is_refused(storage: Arc<dyn Storage>) {
    let first = rich_database(Some("ext-shared"));
    ok(
        storage.insert_database(first.clone(), origin()).await,
        "insert_database",
    );

    let second = plain_database("Second", Some("ext-shared"));
    assert_err!(
        storage.insert_database(second.clone(), origin()).await,
        StorageError::AlreadyExists,
        "insert_database with the api_id of a stored database"
    );

    absent(
        storage.database(second.id.as_str()).await,
        "database(the id of the refused insert)",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-shared").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &first,
        "database_by_api_id after a refused insert with the same api_id",
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 1, "list_databases after a refused insert");
    assert_same_database(&listed[0], &first, "list_databases after a refused insert");
}

/// Any number of databases without an `api_id` can be stored: `None` is no key.
pub async fn databases_without_api_id_coexist(storage: Arc<dyn Storage>) {
    let databases: Vec<Database> = (0..3)
        .map(|index| plain_database(&format!("Local {index}"), None))
        .collect();
    for database in &databases {
        ok(
            storage.insert_database(database.clone(), origin()).await,
            "insert_database of a database without api_id, next to others without one",
        );
    }
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(
        listed, databases,
        "list_databases: every database without api_id"
    );
    absent(
        storage.database_by_api_id("").await,
        "database_by_api_id(\"\") when no database has an api_id",
    );
    let with_api_id = plain_database("External", Some("ext-1"));
    ok(
        storage.insert_database(with_api_id.clone(), origin()).await,
        "insert_database with an api_id next to databases without one",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-1").await,
        "database_by_api_id",
    );
    assert_same_database(&by_api_id, &with_api_id, "database_by_api_id");
}

/// `list_databases` is ordered by id, respects the limit, and pages with an exclusive `after`
/// that may be any string; an empty store lists nothing.
pub async fn database_listing_is_ordered_by_id_with_keyset_pages(storage: Arc<dyn Storage>) {
    for after in [None, Some("db_anything")] {
        let page = Page { after, limit: 10 };
        assert!(
            ok(
                storage.list_databases(page, Default::default()).await,
                "list_databases"
            )
            .is_empty(),
            "list_databases(after: {after:?}) on an empty store must be empty"
        );
    }

    let ids = listing_ids(|| DatabaseId::generate().as_str().to_owned());
    for id in insertion_order(&ids) {
        let mut database = plain_database(&format!("Listed {id}"), None);
        database.id = DatabaseId::from_stored(id);
        ok(
            storage.insert_database(database, origin()).await,
            "insert_database",
        );
    }
    let storage = storage.as_ref();
    check_listing(
        "list_databases",
        &ids,
        async |after: Option<&str>, limit: usize| {
            let call = format!("list_databases(after: {after:?}, limit: {limit})");
            ok(
                storage
                    .list_databases(Page { after, limit }, Default::default())
                    .await,
                &call,
            )
            .into_iter()
            .map(|database| database.id.as_str().to_owned())
            .collect()
        },
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// update
// ---------------------------------------------------------------------------------------------

/// `update_database` passes the stored record to the edit, stores exactly what the edit
/// returned, and returns it.
pub async fn database_update_applies_and_returns_stored(storage: Arc<dyn Storage>) {
    let original = rich_database(Some("ext-update"));
    let other = plain_database("Bystander", Some("ext-bystander"));
    ok(
        storage.insert_database(original.clone(), origin()).await,
        "insert_database",
    );
    ok(
        storage.insert_database(other.clone(), origin()).await,
        "insert_database",
    );

    let kept = original.credentials[2].id.as_str().to_owned();
    let body = object(json!({
        "name": "Orders (renamed)",
        "port": null,
        "group": "",
        "connection_parameters": [
            {"name": "search_path", "value": "other"},
            {"name": "lock_timeout", "value": "5s"},
        ],
        "credentials": [
            {"username": "auditor", "password": "aud1tor-pass"},
            {"id": kept, "password": "n3w-pässword", "timeout": 9},
        ],
    }));
    let now = Timestamp::now();
    let sealer = Sealer::ephemeral().expect("a random key");
    let seen: Arc<Mutex<Vec<Database>>> = Arc::default();
    let produced: Arc<Mutex<Option<Database>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        let produced = Arc::clone(&produced);
        let sealer = sealer.clone();
        Box::new(move |stored: &Database| {
            seen.lock().unwrap().push(stored.clone());
            let mut next = database_from_body(Some(stored), &body.clone().into(), now, &sealer)?;
            next.tls.client_key = Some(sealed(vec![0x01, 0x00, 0x02]));
            next.tls.client_cert = None;
            *produced.lock().unwrap() = Some(next.clone());
            Ok(next)
        })
    };
    let returned = ok(
        storage
            .update_database(original.id.as_str(), edit, origin())
            .await,
        "update_database",
    );

    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "update_database never called the edit");
    for stored in &seen {
        assert_same_database(
            stored,
            &original,
            "the record update_database passed to the edit",
        );
    }
    let produced = produced.lock().unwrap().clone().expect("the edit ran");
    assert_same_database(
        &returned,
        &produced,
        "update_database must return what the edit produced",
    );
    assert_eq!(returned.name, "Orders (renamed)");
    assert_eq!(returned.port, None);
    assert_eq!(returned.group, None);
    assert_eq!(
        returned.connection_parameters,
        vec![
            parameter("search_path", "other"),
            parameter("lock_timeout", "5s")
        ]
    );
    let usernames: Vec<&str> = returned
        .credentials
        .iter()
        .map(|c| c.username.as_str())
        .collect();
    assert_eq!(
        usernames,
        ["auditor", "reader"],
        "credentials in the new order"
    );
    assert_eq!(returned.credentials[1].id.as_str(), kept);
    let password = returned.credentials[1]
        .password
        .as_ref()
        .expect("the kept credential's new password");
    let place = Place::password(original.id.as_str(), &kept);
    assert!(
        sealer.open(password, &place).unwrap().expose() == "n3w-pässword".as_bytes(),
        "the kept credential's new password, sealed for its place"
    );

    let by_id = found(storage.database(original.id.as_str()).await, "database");
    assert_same_database(&by_id, &returned, "database(id) after update_database");
    let by_api_id = found(
        storage.database_by_api_id("ext-update").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &returned,
        "database_by_api_id after update_database",
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 2, "list_databases after update_database");
    assert_same_database(
        &listed[0],
        &returned,
        "list_databases after update_database",
    );
    assert_same_database(&listed[1], &other, "another database after update_database");
}

/// `update_database` of an id that is not stored fails with `NotFound` and creates nothing.
pub async fn database_update_of_missing_is_not_found(storage: Arc<dyn Storage>) {
    let edit = || Box::new(|stored: &Database| Ok(stored.clone()));
    assert_err!(
        storage
            .update_database("db_missing", edit(), origin())
            .await,
        StorageError::NotFound,
        "update_database on an empty store"
    );
    let database = plain_database("Orders", Some("ext-1"));
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );
    assert_err!(
        storage
            .update_database("db_missing", edit(), origin())
            .await,
        StorageError::NotFound,
        "update_database of an id that is not stored"
    );
    assert_err!(
        storage.update_database("ext-1", edit(), origin()).await,
        StorageError::NotFound,
        "update_database(a stored api_id): update_database takes an id"
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(
        listed,
        vec![database],
        "list_databases after failed updates"
    );
}

/// An edit that returns `Err` makes `update_database` fail with `Invalid` carrying those
/// errors, and nothing changes.
pub async fn database_update_rejected_by_edit_changes_nothing(storage: Arc<dyn Storage>) {
    let original = rich_database(Some("ext-rejected"));
    ok(
        storage.insert_database(original.clone(), origin()).await,
        "insert_database",
    );

    let edit = Box::new(|stored: &Database| {
        let mut next = stored.clone();
        next.name = "half-applied".to_owned();
        next.credentials.clear();
        Err(edit_errors().into())
    });
    match storage
        .update_database(original.id.as_str(), edit, origin())
        .await
    {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            edit_errors(),
            "StorageError::Invalid must carry the edit's own errors"
        ),
        other => panic!(
            "update_database with an edit that returns Err: expected Err(Invalid), got {other:?}"
        ),
    }
    let stored = found(storage.database(original.id.as_str()).await, "database");
    assert_same_database(&stored, &original, "database after a rejected edit");
    let by_api_id = found(
        storage.database_by_api_id("ext-rejected").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &original,
        "database_by_api_id after a rejected edit",
    );
}

/// An edit that changes the id or the `api_id` makes `update_database` fail with
/// `IdentityChanged`, and nothing changes under either identity.
pub async fn database_update_changing_identity_is_refused(storage: Arc<dyn Storage>) {
    let with_api_id = rich_database(Some("ext-a"));
    let without_api_id = plain_database("Local", None);
    ok(
        storage.insert_database(with_api_id.clone(), origin()).await,
        "insert_database",
    );
    ok(
        storage
            .insert_database(without_api_id.clone(), origin())
            .await,
        "insert_database",
    );
    let new_id = DatabaseId::generate();

    type Change = fn(&mut Database, &DatabaseId);
    let cases: [(&Database, &str, Change); 5] = [
        (&with_api_id, "changes the id", |d, new_id| {
            d.id = new_id.clone();
        }),
        (&with_api_id, "changes the api_id", |d, _| {
            d.api_id = Some("ext-b".to_owned());
        }),
        (&with_api_id, "clears the api_id", |d, _| d.api_id = None),
        (&without_api_id, "sets an api_id", |d, _| {
            d.api_id = Some("ext-b".to_owned());
        }),
        (&without_api_id, "changes the id", |d, new_id| {
            d.id = new_id.clone();
        }),
    ];
    for (original, what, change) in cases {
        let moved_to = new_id.clone();
        let edit = Box::new(move |stored: &Database| {
            let mut next = stored.clone();
            next.name = "moved".to_owned();
            change(&mut next, &moved_to);
            Ok(next)
        });
        assert_err!(
            storage
                .update_database(original.id.as_str(), edit, origin())
                .await,
            StorageError::IdentityChanged,
            "update_database with an edit that {what}"
        );
        let stored = found(storage.database(original.id.as_str()).await, "database");
        assert_same_database(
            &stored,
            original,
            &format!("database after a refused edit that {what}"),
        );
        absent(
            storage.database(new_id.as_str()).await,
            &format!("database(the new id) after a refused edit that {what}"),
        );
        absent(
            storage.database_by_api_id("ext-b").await,
            &format!("database_by_api_id(the new api_id) after a refused edit that {what}"),
        );
        let by_api_id = found(
            storage.database_by_api_id("ext-a").await,
            "database_by_api_id",
        );
        assert_same_database(
            &by_api_id,
            &with_api_id,
            &format!("database_by_api_id(the old api_id) after a refused edit that {what}"),
        );
        assert_eq!(
            all_databases(storage.as_ref()).await.len(),
            2,
            "list_databases after a refused edit that {what}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// upsert by api_id
// ---------------------------------------------------------------------------------------------

/// `upsert_database_by_api_id` with an `api_id` that is not stored passes `None` to the edit
/// and stores what it returns.
pub async fn upsert_creates_when_absent(storage: Arc<dyn Storage>) {
    let other = plain_database("Bystander", Some("ext-other"));
    ok(
        storage.insert_database(other.clone(), origin()).await,
        "insert_database",
    );

    let fresh = rich_database(Some("ext-new"));
    let seen: Arc<Mutex<Vec<Option<Database>>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        let fresh = fresh.clone();
        Box::new(move |stored: Option<&Database>| {
            seen.lock().unwrap().push(stored.cloned());
            Ok(fresh.clone())
        })
    };
    let returned = ok(
        storage
            .upsert_database_by_api_id("ext-new", edit, origin())
            .await,
        "upsert_database_by_api_id of a new api_id",
    );
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "upsert never called the edit");
    assert!(
        seen.iter().all(Option::is_none),
        "upsert of an api_id that is not stored must pass None to the edit, got {seen:?}"
    );
    assert_same_database(
        &returned,
        &fresh,
        "upsert must return what the edit produced",
    );

    let by_id = found(storage.database(fresh.id.as_str()).await, "database");
    assert_same_database(&by_id, &fresh, "database(id) after an upsert created it");
    let by_api_id = found(
        storage.database_by_api_id("ext-new").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &fresh,
        "database_by_api_id after an upsert created it",
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(
        listed.len(),
        2,
        "list_databases after an upsert created one"
    );
    let still = found(storage.database(other.id.as_str()).await, "database");
    assert_same_database(&still, &other, "another database after an upsert");
}

/// `upsert_database_by_api_id` with a stored `api_id` passes the stored record to the edit and
/// replaces it with what the edit returns; other databases stay as they were.
pub async fn upsert_updates_when_present(storage: Arc<dyn Storage>) {
    let target = rich_database(Some("ext-target"));
    let others = [
        plain_database("Other with api_id", Some("ext-other")),
        plain_database("Other without api_id", None),
    ];
    ok(
        storage.insert_database(target.clone(), origin()).await,
        "insert_database",
    );
    for other in &others {
        ok(
            storage.insert_database(other.clone(), origin()).await,
            "insert_database",
        );
    }

    fn apply(stored: &Database) -> Database {
        let mut next = stored.clone();
        next.updated_at = stored.updated_at.not_before_next(stored.updated_at);
        next.name = "Upserted".to_owned();
        next.connection_parameters
            .push(parameter("upserted", "yes"));
        next.credentials[0].password = Some(sealed("upserted-pässword"));
        next.tls.ca_cert = Some(sealed(vec![0xde, 0xad, 0x00, 0xbe, 0xef]));
        next
    }
    let expected = apply(&target);
    let seen: Arc<Mutex<Vec<Option<Database>>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        Box::new(move |stored: Option<&Database>| {
            seen.lock().unwrap().push(stored.cloned());
            match stored {
                Some(stored) => Ok(apply(stored)),
                None => Err(ValidationErrors::single("id", "the edit got None").into()),
            }
        })
    };
    let returned = ok(
        storage
            .upsert_database_by_api_id("ext-target", edit, origin())
            .await,
        "upsert_database_by_api_id of a stored api_id",
    );
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "upsert never called the edit");
    for stored in &seen {
        let stored = stored
            .as_ref()
            .expect("upsert of a stored api_id must pass the stored record to the edit, not None");
        assert_same_database(stored, &target, "the record upsert passed to the edit");
    }
    assert_same_database(
        &returned,
        &expected,
        "upsert must return what the edit produced",
    );
    let by_id = found(storage.database(target.id.as_str()).await, "database");
    assert_same_database(&by_id, &expected, "database(id) after an upsert updated it");
    let by_api_id = found(
        storage.database_by_api_id("ext-target").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &expected,
        "database_by_api_id after an upsert updated it",
    );
    for other in &others {
        let still = found(storage.database(other.id.as_str()).await, "database");
        assert_same_database(&still, other, "another database after an upsert");
    }
    assert_eq!(
        all_databases(storage.as_ref()).await.len(),
        3,
        "list_databases after an upsert that updated: no new record"
    );
}

/// An upsert whose edit returns `Err` fails with `Invalid` carrying those errors and changes
/// nothing, whether the `api_id` is stored or not.
pub async fn upsert_rejected_by_edit_changes_nothing(storage: Arc<dyn Storage>) {
    let rejecting = || Box::new(|_: Option<&Database>| Err(edit_errors().into()));
    match storage
        .upsert_database_by_api_id("ext-absent", rejecting(), origin())
        .await
    {
        Err(StorageError::Invalid(errors)) => assert_eq!(errors, edit_errors()),
        other => panic!(
            "upsert (absent api_id) with a rejecting edit: expected Err(Invalid), got {other:?}"
        ),
    }
    absent(
        storage.database_by_api_id("ext-absent").await,
        "database_by_api_id after a rejected upsert",
    );
    assert!(
        all_databases(storage.as_ref()).await.is_empty(),
        "list_databases after a rejected upsert must be empty"
    );

    let original = rich_database(Some("ext-present"));
    ok(
        storage.insert_database(original.clone(), origin()).await,
        "insert_database",
    );
    match storage
        .upsert_database_by_api_id("ext-present", rejecting(), origin())
        .await
    {
        Err(StorageError::Invalid(errors)) => assert_eq!(errors, edit_errors()),
        other => panic!(
            "upsert (stored api_id) with a rejecting edit: expected Err(Invalid), got {other:?}"
        ),
    }
    let stored = found(
        storage.database_by_api_id("ext-present").await,
        "database_by_api_id",
    );
    assert_same_database(&stored, &original, "database after a rejected upsert");
}

/// An upsert must keep the identity: updating, the edit keeps id and `api_id`; creating, the
/// new record has the requested `api_id` and an id that is free. Otherwise nothing changes.
pub async fn upsert_changing_identity_is_refused(storage: Arc<dyn Storage>) {
    let original = rich_database(Some("ext-present"));
    ok(
        storage.insert_database(original.clone(), origin()).await,
        "insert_database",
    );
    let new_id = DatabaseId::generate();

    let edit = {
        let new_id = new_id.clone();
        Box::new(move |stored: Option<&Database>| {
            let mut next = stored.cloned().expect("the stored record");
            next.id = new_id.clone();
            Ok(next)
        })
    };
    assert_err!(
        storage
            .upsert_database_by_api_id("ext-present", edit, origin())
            .await,
        StorageError::IdentityChanged,
        "upsert of a stored api_id with an edit that changes the id"
    );
    absent(
        storage.database(new_id.as_str()).await,
        "database(the new id) after a refused upsert",
    );

    let edit = Box::new(|stored: Option<&Database>| {
        let mut next = stored.cloned().expect("the stored record");
        next.api_id = Some("ext-elsewhere".to_owned());
        Ok(next)
    });
    assert_err!(
        storage
            .upsert_database_by_api_id("ext-present", edit, origin())
            .await,
        StorageError::IdentityChanged,
        "upsert of a stored api_id with an edit that changes the api_id"
    );
    absent(
        storage.database_by_api_id("ext-elsewhere").await,
        "database_by_api_id(the new api_id) after a refused upsert",
    );

    for (api_id, what) in [
        (Some("ext-elsewhere"), "another api_id"),
        (None, "no api_id"),
    ] {
        let mut wrong = plain_database("Wrong", api_id);
        wrong.id = new_id.clone();
        let edit = Box::new(move |_: Option<&Database>| Ok(wrong.clone()));
        assert_err!(
            storage
                .upsert_database_by_api_id("ext-absent", edit, origin())
                .await,
            StorageError::IdentityChanged,
            "upsert of an absent api_id with an edit that creates a database with {what}"
        );
        absent(
            storage.database(new_id.as_str()).await,
            &format!("database(id) after a refused upsert that created {what}"),
        );
    }

    let mut taken = plain_database("Taken id", Some("ext-absent"));
    taken.id = original.id.clone();
    let edit = Box::new(move |_: Option<&Database>| Ok(taken.clone()));
    assert_err!(
        storage
            .upsert_database_by_api_id("ext-absent", edit, origin())
            .await,
        StorageError::AlreadyExists,
        "upsert of an absent api_id with an edit that creates a database with a taken id"
    );
    absent(
        storage.database_by_api_id("ext-absent").await,
        "database_by_api_id after a refused upsert",
    );

    let stored = found(storage.database(original.id.as_str()).await, "database");
    assert_same_database(&stored, &original, "database after refused upserts");
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 1, "list_databases after refused upserts");
}

// ---------------------------------------------------------------------------------------------
// delete
// ---------------------------------------------------------------------------------------------

/// Checks a delete of `target` through `key`: it returns the record as it was, removes it from
/// every lookup, a second delete is `NotFound`, and its `api_id` can be used again.
async fn check_delete(storage: &dyn Storage, by_api_id: bool) {
    let target = rich_database(Some("ext-delete"));
    let other = plain_database("Bystander", Some("ext-keep"));
    ok(
        storage.insert_database(target.clone(), origin()).await,
        "insert_database",
    );
    ok(
        storage.insert_database(other.clone(), origin()).await,
        "insert_database",
    );
    let key = if by_api_id {
        DatabaseKey::ApiId("ext-delete")
    } else {
        DatabaseKey::Id(target.id.as_str())
    };

    let removed = ok(
        storage.delete_database(key, None, origin()).await,
        &format!("delete_database({key:?}, None)"),
    );
    assert_same_database(
        &removed,
        &target,
        &format!("delete_database({key:?}, None) must return the record as it was"),
    );
    absent(
        storage.database(target.id.as_str()).await,
        &format!("database(id) after delete_database({key:?}, None)"),
    );
    absent(
        storage.database_by_api_id("ext-delete").await,
        &format!("database_by_api_id after delete_database({key:?}, None)"),
    );
    let listed = all_databases(storage).await;
    assert_eq!(
        listed.len(),
        1,
        "list_databases after delete_database({key:?}, None)"
    );
    assert_same_database(
        &listed[0],
        &other,
        &format!("list_databases after delete_database({key:?}, None)"),
    );
    assert_err!(
        storage.delete_database(key, None, origin()).await,
        StorageError::NotFound,
        "a second delete_database({key:?}, None)"
    );

    let successor = plain_database("Successor", Some("ext-delete"));
    ok(
        storage.insert_database(successor.clone(), origin()).await,
        &format!("insert_database with the api_id of a database removed by {key:?}"),
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-delete").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &successor,
        "database_by_api_id after the api_id was used again",
    );
    let still = found(storage.database(other.id.as_str()).await, "database");
    assert_same_database(&still, &other, "another database after a delete");
}

/// `delete_database(Id, None)` returns the record as it was, removes it everywhere, and frees its
/// `api_id` for a new insert.
pub async fn delete_database_by_id_returns_it_and_frees_api_id(storage: Arc<dyn Storage>) {
    check_delete(storage.as_ref(), false).await;
}

/// `delete_database(ApiId, None)` returns the record as it was, removes it everywhere, and frees its
/// `api_id` for a new insert.
pub async fn delete_database_by_api_id_returns_it_and_frees_api_id(storage: Arc<dyn Storage>) {
    check_delete(storage.as_ref(), true).await;
}

/// Deleting a database that is not stored is `NotFound`; `Id` and `ApiId` keys do not cross.
pub async fn delete_missing_database_is_not_found(storage: Arc<dyn Storage>) {
    assert_err!(
        storage
            .delete_database(DatabaseKey::Id("db_missing"), None, origin())
            .await,
        StorageError::NotFound,
        "delete_database(Id, None) on an empty store"
    );
    assert_err!(
        storage
            .delete_database(DatabaseKey::ApiId("ext-missing"), None, origin())
            .await,
        StorageError::NotFound,
        "delete_database(ApiId, None) on an empty store"
    );

    let database = plain_database("Orders", Some("ext-1"));
    let local = plain_database("Local", None);
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );
    ok(
        storage.insert_database(local.clone(), origin()).await,
        "insert_database",
    );
    assert_err!(
        storage
            .delete_database(DatabaseKey::Id("ext-1"), None, origin())
            .await,
        StorageError::NotFound,
        "delete_database(Id(a stored api_id), None)"
    );
    assert_err!(
        storage
            .delete_database(DatabaseKey::ApiId(database.id.as_str()), None, origin())
            .await,
        StorageError::NotFound,
        "delete_database(ApiId(a stored id), None)"
    );
    assert_err!(
        storage
            .delete_database(DatabaseKey::ApiId(""), None, origin())
            .await,
        StorageError::NotFound,
        "delete_database(ApiId(\"\"), None) when one database has no api_id"
    );
    assert_eq!(
        all_databases(storage.as_ref()).await,
        vec![database, local],
        "list_databases after deletes that found nothing"
    );
}
