//! Cases on the access control of a database (docs/api.md, *Permissions*): the
//! default for a new database, updates that store exactly what the edit returned or change
//! nothing, `inherits_from` refused for itself, a missing database or a cycle, and the delete
//! guard that keeps an inherited database, by id and by `api_id`.

use super::origin;
use crate::storage::Edits as _;
use std::sync::{Arc, Mutex};

use super::check::{
    absent, assert_err, assert_inheritance_refused, assert_same_database, found, ok,
};
use super::fixtures::{
    access_of, all_databases, edit_errors, insert_named, plain_database, put_access, reference,
    rich_access_control, set_inheritance,
};
use crate::model::{AccessControl, DataProtection, Database, DatabaseId};
use crate::storage::{DatabaseKey, DatabaseRef, Storage, StorageError};
use crate::validate::message;

// ---------------------------------------------------------------------------------------------
// Permissions and data protection
// ---------------------------------------------------------------------------------------------

/// `access_control` is `None` for a database that is not stored (on an empty store, for an id
/// never stored, for an `api_id`), and the default, empty access control for a new database.
pub async fn access_control_is_default_for_new_database_and_none_for_missing(
    storage: Arc<dyn Storage>,
) {
    absent(
        storage.access_control("db_missing").await,
        "access_control on an empty store",
    );
    let database = plain_database("Orders", Some("ext-1"));
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );
    let access = access_of(storage.as_ref(), database.id.as_str(), "of a new database").await;
    assert_eq!(
        access,
        AccessControl::default(),
        "access_control of a new database: no permissions, no policies, no inheritance"
    );
    absent(
        storage.access_control("db_missing").await,
        "access_control(an id that is not stored)",
    );
    absent(
        storage.access_control("ext-1").await,
        "access_control(a stored api_id): access_control takes an id",
    );
}

/// `update_access_control` passes the stored access control to the edit (the default one
/// first), stores exactly what the edit returned, and returns it; each database has its own.
pub async fn access_control_update_applies_and_returns_stored(storage: Arc<dyn Storage>) {
    let [target, parent, other] = <[Database; 3]>::try_from(
        insert_named(storage.as_ref(), &["Target", "Parent", "Bystander"]).await,
    )
    .expect("three databases");
    let id = target.id.as_str();
    let produced = rich_access_control(Some(parent.id.as_str()));

    let seen: Arc<Mutex<Vec<AccessControl>>> = Arc::default();
    let edit = {
        let (seen, produced) = (Arc::clone(&seen), produced.clone());
        Box::new(move |stored: &AccessControl| {
            seen.lock().unwrap().push(stored.clone());
            Ok(produced.clone())
        })
    };
    let returned = ok(
        storage.update_access_control(id, edit, origin()).await,
        "update_access_control",
    );
    let seen = seen.lock().unwrap().clone();
    assert!(
        !seen.is_empty(),
        "update_access_control never called the edit"
    );
    for stored in &seen {
        assert_eq!(
            stored,
            &AccessControl::default(),
            "the first update_access_control must pass the default access control to the edit"
        );
    }
    assert_eq!(
        returned, produced,
        "update_access_control must return what the edit produced"
    );
    assert_eq!(
        access_of(storage.as_ref(), id, "after update_access_control").await,
        produced,
        "access_control after update_access_control: exactly what the edit returned, in order"
    );

    // A second edit sees the first one's result, and may empty every part.
    let seen_second: Arc<Mutex<Option<AccessControl>>> = Arc::default();
    let edit = {
        let seen_second = Arc::clone(&seen_second);
        Box::new(move |stored: &AccessControl| {
            *seen_second.lock().unwrap() = Some(stored.clone());
            let mut next = stored.clone();
            next.permissions.truncate(1);
            next.data_protection.policies.clear();
            next.data_protection.inherits_from = None;
            Ok(next)
        })
    };
    let second = ok(
        storage.update_access_control(id, edit, origin()).await,
        "a second update_access_control",
    );
    assert_eq!(
        seen_second.lock().unwrap().clone(),
        Some(produced.clone()),
        "a second update_access_control must pass the stored access control to the edit"
    );
    let expected = AccessControl {
        permissions: produced.permissions[..1].to_vec(),
        data_protection: DataProtection::default(),
    };
    assert_eq!(
        second, expected,
        "the second update_access_control's result"
    );
    assert_eq!(
        access_of(storage.as_ref(), id, "after a second update_access_control").await,
        expected
    );

    for bystander in [&parent, &other] {
        assert_eq!(
            access_of(
                storage.as_ref(),
                bystander.id.as_str(),
                "of another database"
            )
            .await,
            AccessControl::default(),
            "update_access_control of one database must not touch another's"
        );
    }
    // The database record itself is untouched.
    let stored = found(storage.database(id).await, "database");
    assert_same_database(&stored, &target, "database after update_access_control");
}

/// `update_access_control` of a database that is not stored fails with `NotFound`, without
/// calling the edit into a stored record: a database inserted later with that id starts with
/// the default access control.
pub async fn access_control_update_of_missing_database_is_not_found(storage: Arc<dyn Storage>) {
    let edit = || Box::new(|_: &AccessControl| Ok(rich_access_control(None)));
    assert_err!(
        storage
            .update_access_control("db_missing", edit(), origin())
            .await,
        StorageError::NotFound,
        "update_access_control on an empty store"
    );
    let stored = plain_database("Orders", Some("ext-1"));
    ok(
        storage.insert_database(stored.clone(), origin()).await,
        "insert_database",
    );
    let late_id = DatabaseId::generate();
    assert_err!(
        storage
            .update_access_control(late_id.as_str(), edit(), origin())
            .await,
        StorageError::NotFound,
        "update_access_control of an id that is not stored"
    );
    assert_err!(
        storage
            .update_access_control("ext-1", edit(), origin())
            .await,
        StorageError::NotFound,
        "update_access_control(a stored api_id): update_access_control takes an id"
    );
    absent(
        storage.access_control(late_id.as_str()).await,
        "access_control of the id a failed update_access_control named",
    );

    let mut late = plain_database("Late", None);
    late.id = late_id.clone();
    ok(
        storage.insert_database(late, origin()).await,
        "insert_database",
    );
    assert_eq!(
        access_of(
            storage.as_ref(),
            late_id.as_str(),
            "of a database inserted later"
        )
        .await,
        AccessControl::default(),
        "an update_access_control that failed with NotFound must not have stored anything"
    );
    assert_eq!(
        access_of(storage.as_ref(), stored.id.as_str(), "of a bystander").await,
        AccessControl::default()
    );
}

/// An edit that returns `Err` makes `update_access_control` fail with `Invalid` carrying those
/// errors, and nothing changes.
pub async fn access_control_update_rejected_by_edit_changes_nothing(storage: Arc<dyn Storage>) {
    let [database, parent] =
        <[Database; 2]>::try_from(insert_named(storage.as_ref(), &["Orders", "Parent"]).await)
            .expect("two databases");
    let id = database.id.as_str();
    let original = put_access(storage.as_ref(), id, rich_access_control(None)).await;

    let parent_id = parent.id.as_str().to_owned();
    let edit = Box::new(move |stored: &AccessControl| {
        let mut next = stored.clone();
        next.permissions.clear();
        next.data_protection.inherits_from = Some(parent_id.clone());
        Err(edit_errors().into())
    });
    match storage.update_access_control(id, edit, origin()).await {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            edit_errors(),
            "StorageError::Invalid must carry the edit's own errors"
        ),
        other => panic!(
            "update_access_control with an edit that returns Err: expected Err(Invalid), got \
             {other:?}"
        ),
    }
    assert_eq!(
        access_of(storage.as_ref(), id, "after a rejected edit").await,
        original,
        "access_control after a rejected edit"
    );
    // The rejected edit named `parent`, but nothing inherits it: it can be deleted.
    ok(
        storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()), None, origin())
            .await,
        "delete_database of the database a rejected edit wanted to inherit from",
    );
}

// ---------------------------------------------------------------------------------------------
// Inheritance
// ---------------------------------------------------------------------------------------------

/// A database cannot inherit its own policies: `Invalid` on `inherits_from` with
/// [`ITSELF`](message::INHERITS_ITSELF), and nothing changes.
pub async fn inheritance_from_itself_is_refused(storage: Arc<dyn Storage>) {
    let [database] = <[Database; 1]>::try_from(insert_named(storage.as_ref(), &["Self"]).await)
        .expect("one database");
    let id = database.id.as_str();
    let original = put_access(storage.as_ref(), id, rich_access_control(None)).await;
    assert_inheritance_refused(
        set_inheritance(storage.as_ref(), id, Some(id)).await,
        message::INHERITS_ITSELF,
        "update_access_control setting inherits_from to the database itself",
    );
    assert_eq!(
        access_of(storage.as_ref(), id, "after a refused inheritance").await,
        original,
        "access_control after a refused inheritance from itself"
    );
    ok(
        storage
            .delete_database(DatabaseKey::Id(id), None, origin())
            .await,
        "delete_database after a refused inheritance from itself (nothing inherits it)",
    );
}

/// A database cannot inherit from a database that is not stored — never stored, deleted, or
/// named by its `api_id`: `Invalid` on `inherits_from` with
/// [`MISSING`](message::INHERITS_MISSING), and nothing changes.
pub async fn inheritance_from_missing_database_is_refused(storage: Arc<dyn Storage>) {
    let heir = plain_database("Heir", None);
    let external = plain_database("External", Some("ext-parent"));
    let deleted = plain_database("Deleted", None);
    for database in [&heir, &external, &deleted] {
        ok(
            storage.insert_database(database.clone(), origin()).await,
            "insert_database",
        );
    }
    ok(
        storage
            .delete_database(DatabaseKey::Id(deleted.id.as_str()), None, origin())
            .await,
        "delete_database",
    );
    let id = heir.id.as_str();
    let original = put_access(storage.as_ref(), id, rich_access_control(None)).await;

    for (target, what) in [
        ("db_missing", "an id that was never stored"),
        (deleted.id.as_str(), "a deleted database"),
        ("ext-parent", "a stored api_id (inherits_from takes an id)"),
    ] {
        assert_inheritance_refused(
            set_inheritance(storage.as_ref(), id, Some(target)).await,
            message::INHERITS_MISSING,
            &format!("update_access_control setting inherits_from to {what}"),
        );
        assert_eq!(
            access_of(storage.as_ref(), id, "after a refused inheritance").await,
            original,
            "access_control after a refused inheritance from {what}"
        );
    }
    ok(
        storage
            .delete_database(DatabaseKey::ApiId("ext-parent"), None, origin())
            .await,
        "delete_database of a database only named by its api_id in a refused inheritance",
    );
}

/// No inheritance cycle: with A → B stored, B → A is refused; with A → B → C stored, C → A is
/// refused (`Invalid` on `inherits_from` with [`CYCLE`](message::INHERITS_CYCLE)); nothing
/// changes. Chains and several heirs of one database are fine.
pub async fn inheritance_cycles_are_refused(storage: Arc<dyn Storage>) {
    let databases = insert_named(storage.as_ref(), &["A", "B", "C", "D"]).await;
    let [a, b, c, d] = [0, 1, 2, 3].map(|index| databases[index].id.as_str().to_owned());

    ok(
        set_inheritance(storage.as_ref(), &a, Some(&b)).await,
        "update_access_control: A inherits from B",
    );
    let b_before = put_access(storage.as_ref(), &b, rich_access_control(None)).await;
    assert_inheritance_refused(
        set_inheritance(storage.as_ref(), &b, Some(&a)).await,
        message::INHERITS_CYCLE,
        "update_access_control: B inherits from A while A inherits from B",
    );
    assert_eq!(
        access_of(storage.as_ref(), &b, "after a refused cycle").await,
        b_before,
        "B's access control after its refused inheritance from A"
    );

    ok(
        set_inheritance(storage.as_ref(), &b, Some(&c)).await,
        "update_access_control: B inherits from C (A → B → C)",
    );
    let c_before = put_access(storage.as_ref(), &c, rich_access_control(None)).await;
    for (heir, name) in [(&c, "C"), (&b, "B")] {
        assert_inheritance_refused(
            set_inheritance(storage.as_ref(), heir, Some(&a)).await,
            message::INHERITS_CYCLE,
            &format!("update_access_control: {name} inherits from A while A → B → C"),
        );
    }
    assert_eq!(
        access_of(storage.as_ref(), &c, "after a refused cycle").await,
        c_before,
        "C's access control after its refused inheritance from A"
    );
    let chain = [(&a, Some(&b)), (&b, Some(&c)), (&c, None)];
    for (id, parent) in chain {
        assert_eq!(
            access_of(storage.as_ref(), id, "after refused cycles")
                .await
                .data_protection
                .inherits_from
                .as_ref(),
            parent,
            "inherits_from of {id} after refused cycles: A → B → C stays as it was"
        );
    }

    // Not a cycle: a second heir of A, and an heir of the end of the chain.
    ok(
        set_inheritance(storage.as_ref(), &d, Some(&a)).await,
        "update_access_control: D inherits from A (D → A → B → C)",
    );
    assert_inheritance_refused(
        set_inheritance(storage.as_ref(), &c, Some(&d)).await,
        message::INHERITS_CYCLE,
        "update_access_control: C inherits from D while D → A → B → C",
    );
    // Setting the same target again is no cycle.
    ok(
        set_inheritance(storage.as_ref(), &a, Some(&b)).await,
        "update_access_control: A inherits from B again",
    );
}

/// `inherits_from` can be cleared and pointed elsewhere; after that, the old links no longer
/// count for cycles or for the delete guard.
pub async fn inheritance_can_be_cleared_and_repointed(storage: Arc<dyn Storage>) {
    let databases = insert_named(storage.as_ref(), &["A", "B", "C"]).await;
    let [a, b, c] = [0, 1, 2].map(|index| databases[index].id.as_str().to_owned());
    let original = put_access(storage.as_ref(), &a, rich_access_control(Some(b.as_str()))).await;

    let cleared = ok(
        set_inheritance(storage.as_ref(), &a, None).await,
        "update_access_control clearing inherits_from",
    );
    let mut expected = original.clone();
    expected.data_protection.inherits_from = None;
    assert_eq!(
        cleared, expected,
        "clearing inherits_from keeps everything else"
    );
    assert_eq!(
        access_of(storage.as_ref(), &a, "after clearing inherits_from").await,
        expected
    );
    ok(
        set_inheritance(storage.as_ref(), &b, Some(&a)).await,
        "update_access_control: B inherits from A once A no longer inherits from B",
    );

    // Re-point C from A to B; then A is inherited by B only.
    ok(
        set_inheritance(storage.as_ref(), &c, Some(&a)).await,
        "update_access_control: C inherits from A",
    );
    ok(
        set_inheritance(storage.as_ref(), &c, Some(&b)).await,
        "update_access_control: C inherits from B instead",
    );
    match storage
        .delete_database(DatabaseKey::Id(&a), None, origin())
        .await
    {
        Err(StorageError::Inherited(heirs)) => assert_eq!(
            heirs,
            vec![reference(&databases[1])],
            "delete_database of A: only B still inherits from A (C was re-pointed to B)"
        ),
        other => {
            panic!("delete_database of an inherited database: expected Inherited, got {other:?}")
        }
    }
    ok(
        set_inheritance(storage.as_ref(), &b, None).await,
        "update_access_control: B clears its inheritance",
    );
    ok(
        storage
            .delete_database(DatabaseKey::Id(&a), None, origin())
            .await,
        "delete_database of A once no database inherits from it",
    );
}

// ---------------------------------------------------------------------------------------------
// The delete guard, and the delete's cascade
// ---------------------------------------------------------------------------------------------

/// Asserts that deleting `parent` through `key` is refused with `Inherited(expected)` and that
/// the parent is still there.
async fn assert_delete_refused(
    storage: &dyn Storage,
    key: DatabaseKey<'_>,
    parent: &Database,
    expected: &[DatabaseRef],
    context: &str,
) {
    match storage.delete_database(key, None, origin()).await {
        Err(StorageError::Inherited(named)) => assert_eq!(
            named, expected,
            "{context}: StorageError::Inherited must name every heir (id and name), ordered by id"
        ),
        other => panic!("{context}: expected Err(Inherited), got {other:?}"),
    }
    let stored = found(
        storage.database(parent.id.as_str()).await,
        &format!("database(id) after {context}"),
    );
    assert_same_database(&stored, parent, &format!("the parent after {context}"));
    let by_api_id = found(
        storage.database_by_api_id("ext-parent").await,
        &format!("database_by_api_id after {context}"),
    );
    assert_same_database(&by_api_id, parent, &format!("the parent after {context}"));
}

/// Checks the delete guard through `Id` or `ApiId`: refused with every heir named (ordered by
/// id) and nothing deleted; allowed once the heirs are gone or no longer inherit, and then the
/// access control goes with the database.
async fn check_delete_guard(storage: &dyn Storage, by_api_id: bool) {
    let mut parent = plain_database("Parent", Some("ext-parent"));
    parent.restrict_access = true;
    ok(
        storage.insert_database(parent.clone(), origin()).await,
        "insert_database",
    );
    // Heirs made in id order but linked in another order; a bystander inheriting elsewhere.
    let heirs = insert_named(storage, &["Heir one", "Heir two ✓", "Heir three"]).await;
    let [other_parent, bystander] =
        <[Database; 2]>::try_from(insert_named(storage, &["Other parent", "Bystander"]).await)
            .expect("two databases");
    let parent_access = put_access(storage, parent.id.as_str(), rich_access_control(None)).await;
    for index in [2, 0, 1] {
        ok(
            set_inheritance(storage, heirs[index].id.as_str(), Some(parent.id.as_str())).await,
            "update_access_control: an heir inherits from the parent",
        );
    }
    ok(
        set_inheritance(
            storage,
            bystander.id.as_str(),
            Some(other_parent.id.as_str()),
        )
        .await,
        "update_access_control: the bystander inherits from another database",
    );
    let key = if by_api_id {
        DatabaseKey::ApiId("ext-parent")
    } else {
        DatabaseKey::Id(parent.id.as_str())
    };

    let all_heirs: Vec<DatabaseRef> = heirs.iter().map(reference).collect();
    assert_delete_refused(
        storage,
        key,
        &parent,
        &all_heirs,
        &format!("delete_database({key:?}, None) of a database three others inherit from"),
    )
    .await;
    assert_eq!(
        access_of(storage, parent.id.as_str(), "after a refused delete").await,
        parent_access,
        "the parent's access control after a refused delete"
    );
    for heir in &heirs {
        let access = access_of(storage, heir.id.as_str(), "after a refused delete").await;
        assert_eq!(
            access.data_protection.inherits_from.as_deref(),
            Some(parent.id.as_str()),
            "an heir's inheritance after a refused delete of its parent"
        );
    }
    assert_eq!(
        all_databases(storage).await.len(),
        6,
        "list_databases after a refused delete"
    );

    // One heir drops its inheritance, another is deleted (its access control with it).
    ok(
        set_inheritance(storage, heirs[1].id.as_str(), None).await,
        "update_access_control: an heir clears its inheritance",
    );
    ok(
        storage
            .delete_database(DatabaseKey::Id(heirs[0].id.as_str()), None, origin())
            .await,
        "delete_database of an heir (nothing inherits from it)",
    );
    assert_delete_refused(
        storage,
        key,
        &parent,
        &all_heirs[2..],
        &format!("delete_database({key:?}, None) with one heir left"),
    )
    .await;
    ok(
        set_inheritance(storage, heirs[2].id.as_str(), Some(heirs[1].id.as_str())).await,
        "update_access_control: the last heir inherits from another database instead",
    );

    let removed = ok(
        storage.delete_database(key, None, origin()).await,
        &format!("delete_database({key:?}, None) once no database inherits from it"),
    );
    assert_same_database(
        &removed,
        &parent,
        &format!("delete_database({key:?}, None) must return the record as it was"),
    );
    absent(
        storage.database(parent.id.as_str()).await,
        "database(id) after the delete",
    );
    absent(
        storage.access_control(parent.id.as_str()).await,
        "access_control of a deleted database",
    );
    assert_inheritance_refused(
        set_inheritance(storage, heirs[1].id.as_str(), Some(parent.id.as_str())).await,
        message::INHERITS_MISSING,
        "update_access_control inheriting from a deleted database",
    );

    // The access control went with the database: a database stored again under the same ids
    // (the deleted parent's, the deleted heir's) starts with the default.
    for (old, name) in [(&parent, "the parent"), (&heirs[0], "the deleted heir")] {
        let mut again = plain_database("Again", None);
        again.id = old.id.clone();
        ok(
            storage.insert_database(again, origin()).await,
            &format!("insert_database with the id of {name}"),
        );
        assert_eq!(
            access_of(storage, old.id.as_str(), "of a database stored again").await,
            AccessControl::default(),
            "a delete must remove the access control of {name} with it: a database stored \
             again under its id must not see the old one"
        );
    }
    // And the re-stored parent is not held by its old heirs.
    ok(
        storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()), None, origin())
            .await,
        "delete_database of a database stored again under a deleted parent's id",
    );
    let bystander_access = access_of(storage, bystander.id.as_str(), "of the bystander").await;
    assert_eq!(
        bystander_access.data_protection.inherits_from.as_deref(),
        Some(other_parent.id.as_str()),
        "another database's inheritance after the delete"
    );
}

/// `delete_database(Id, None)` of a database others inherit from is refused with `Inherited` naming
/// them, and changes nothing; once they no longer inherit, the delete succeeds and takes the
/// access control with it.
pub async fn delete_of_inherited_database_by_id_is_refused(storage: Arc<dyn Storage>) {
    check_delete_guard(storage.as_ref(), false).await;
}

/// The same as [`delete_of_inherited_database_by_id_is_refused`], through `ApiId`.
pub async fn delete_of_inherited_database_by_api_id_is_refused(storage: Arc<dyn Storage>) {
    check_delete_guard(storage.as_ref(), true).await;
}
