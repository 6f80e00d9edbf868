//! The seal keys a store keeps ([`Storage::seal_keys`]): every database write must seal under
//! the current key, the keys are replaced only from the expected ones, and a key is dropped only
//! when no stored secret needs it, even while writers race the rotation. The stores never open
//! a sealed value, so these cases label made-up bytes with key ids.

use std::sync::Arc;

use super::check::{found, ok};
use super::fixtures::{all_databases, plain_database};
use super::origin;
use super::races::race_all;
use crate::model::{AuditEvent, Database, SealedSecret};
use crate::seal::{SealKeys, sealed_keys};
use crate::storage::{AuditQuery, Edits as _, Storage, StorageError, audit};

/// `database` with one credential's password and its CA certificate sealed under `key`.
fn sealed_under(mut database: Database, key: u32) -> Database {
    let bytes = format!("sealed under {key}").into_bytes();
    if let Some(credential) = database.credentials.first_mut() {
        credential.password = Some(SealedSecret::new(key, bytes.clone()));
    }
    database.tls.ca_cert = Some(SealedSecret::new(key, bytes));
    database
}

/// The stored database `stored`, its secrets sealed under `key`, one version on.
fn resealed(stored: &Database, key: u32) -> Database {
    let mut next = sealed_under(stored.clone(), key);
    next.updated_at = stored.updated_at.not_before_next(stored.updated_at);
    next
}

async fn all_events(storage: &dyn Storage) -> Vec<AuditEvent> {
    let query = AuditQuery {
        resource: None,
        after: None,
        limit: 10_000,
        ..Default::default()
    };
    ok(storage.list_audit(query).await, "list_audit")
}

/// `keys` with `id` added (with a made-up check value) and made current.
fn with_current(keys: &SealKeys, id: u32) -> SealKeys {
    let mut next = keys.clone();
    next.keys.insert(id, format!("check of {id}").into_bytes());
    next.current = id;
    next
}

fn changed(result: Result<(), StorageError>, current: u32, call: &str) {
    assert!(
        matches!(result, Err(StorageError::SealKeyChanged(key)) if key == current),
        "{call} of a database sealed under another key than {current} must be \
         SealKeyChanged({current}), got {result:?}"
    );
}

/// A database sealed under another key than the current one is refused (create and replace)
/// and changes nothing; the keys are replaced only from the expected ones; a key a stored
/// secret needs is not dropped; once every secret is sealed under the new key, the old one is.
pub async fn database_writes_seal_under_the_current_key(storage: Arc<dyn Storage>) {
    let storage = storage.as_ref();
    let keys = ok(storage.seal_keys().await, "seal_keys");
    assert!(
        keys.keys.contains_key(&keys.current),
        "seal_keys must list the current key: {keys:?}"
    );
    let old = keys.current;
    let new = old + 1;

    let stale = sealed_under(plain_database("Sealed", Some("ext-sealed")), new);
    let event = audit::database_created(origin(), &stale);
    changed(
        storage.create_database(stale.clone(), event.into()).await,
        old,
        "create_database",
    );
    assert_eq!(
        ok(storage.database(stale.id.as_str()).await, "database"),
        None
    );
    assert!(
        all_events(storage).await.is_empty(),
        "a refused create logged"
    );

    let database = sealed_under(plain_database("Sealed", Some("ext-sealed")), old);
    let id = database.id.as_str().to_owned();
    ok(
        storage.insert_database(database.clone(), origin()).await,
        "insert_database",
    );

    // A rotation starts: the new key is current.
    let rotating = with_current(&keys, new);
    ok(
        storage.replace_seal_keys(&keys, rotating.clone()).await,
        "replace_seal_keys",
    );
    assert_eq!(ok(storage.seal_keys().await, "seal_keys"), rotating);
    assert!(
        matches!(
            storage.replace_seal_keys(&keys, keys.only_current()).await,
            Err(StorageError::Conflict)
        ),
        "replace_seal_keys from keys that are no longer stored must be a Conflict"
    );

    // The stored database, unchanged but for its version, is now sealed under an old key.
    let events = all_events(storage).await;
    let stored = found(storage.database(&id).await, "database");
    let mut same = stored.clone();
    same.updated_at = stored.updated_at.not_before_next(stored.updated_at);
    let event = audit::database_updated(origin(), &stored, &same);
    changed(
        storage
            .replace_database(same, stored.updated_at, event.into())
            .await,
        new,
        "replace_database",
    );
    assert!(
        matches!(
            storage
                .replace_seal_keys(&rotating, rotating.only_current())
                .await,
            Err(StorageError::SealKeyInUse(key)) if key == old
        ),
        "dropping a key a stored secret needs must be SealKeyInUse"
    );
    assert_eq!(ok(storage.seal_keys().await, "seal_keys"), rotating);
    assert_eq!(found(storage.database(&id).await, "database"), stored);
    assert_eq!(all_events(storage).await, events, "a refused write logged");

    // Sealed again under the new key, the old key is no longer needed.
    let updated = ok(
        storage
            .update_database(&id, |db: &Database| Ok(resealed(db, new)), origin())
            .await,
        "update_database",
    );
    assert!(sealed_keys(&updated).all(|key| key == new));
    ok(
        storage
            .replace_seal_keys(&rotating, rotating.only_current())
            .await,
        "replace_seal_keys",
    );
    assert_eq!(
        ok(storage.seal_keys().await, "seal_keys"),
        rotating.only_current()
    );
    // A database without secrets needs no key.
    let mut plain = plain_database("No secrets", None);
    for credential in &mut plain.credentials {
        credential.password = None;
    }
    plain.tls = Default::default();
    ok(
        storage.insert_database(plain, origin()).await,
        "insert_database",
    );
}

const WRITERS: usize = 16;

/// Writers still sealing under the old key race a rotation that switches the key, seals every
/// database again and drops the old key: whatever the order, a dropped key is needed by no
/// stored secret, and every write either landed or was refused as `SealKeyChanged`.
pub async fn racing_writers_never_strand_a_dropped_key(storage: Arc<dyn Storage>) {
    let keys = ok(storage.seal_keys().await, "seal_keys");
    let old = keys.current;
    let new = old + 1;
    let mut ids = Vec::new();
    for n in 0..WRITERS {
        let database = sealed_under(plain_database(&format!("Racing {n}"), None), old);
        ids.push(database.id.as_str().to_owned());
        ok(
            storage.insert_database(database, origin()).await,
            "insert_database",
        );
    }

    let ids = Arc::new(ids);
    race_all(WRITERS + 1, |index| {
        let storage = Arc::clone(&storage);
        let ids = Arc::clone(&ids);
        let keys = keys.clone();
        async move {
            match ids.get(index) {
                Some(id) => stale_writer(storage.as_ref(), id, old).await,
                None => rotation(storage.as_ref(), &keys, new).await,
            }
        }
    })
    .await;

    let stored = ok(storage.seal_keys().await, "seal_keys");
    assert_eq!(stored.keys.keys().copied().collect::<Vec<_>>(), vec![new]);
    for database in all_databases(storage.as_ref()).await {
        assert!(
            sealed_keys(&database).all(|key| key == new),
            "{} needs a dropped key after the rotation",
            database.id
        );
    }
}

/// A writer that has not met the new key yet: it seals under `key` until a write is refused,
/// then under the key the store names.
async fn stale_writer(storage: &dyn Storage, id: &str, mut key: u32) {
    for _ in 0..4 {
        let result = storage
            .update_database(id, |db: &Database| Ok(resealed(db, key)), origin())
            .await;
        match result {
            Ok(_) => {}
            Err(StorageError::SealKeyChanged(current)) => key = current,
            Err(error) => panic!("update_database during a rotation: {error:?}"),
        }
    }
}

/// Makes `new` current, seals every database again under it and drops the other keys, passing
/// again while a stale writer's write still needs one.
async fn rotation(storage: &dyn Storage, keys: &SealKeys, new: u32) {
    let rotating = with_current(keys, new);
    ok(
        storage.replace_seal_keys(keys, rotating.clone()).await,
        "replace_seal_keys",
    );
    loop {
        for database in all_databases(storage).await {
            if sealed_keys(&database).any(|key| key != new) {
                ok(
                    storage
                        .update_database(
                            database.id.as_str(),
                            |db: &Database| Ok(resealed(db, new)),
                            origin(),
                        )
                        .await,
                    "update_database",
                );
            }
        }
        match storage
            .replace_seal_keys(&rotating, rotating.only_current())
            .await
        {
            Ok(()) => return,
            Err(StorageError::SealKeyInUse(_)) => {}
            Err(error) => panic!("replace_seal_keys: {error:?}"),
        }
    }
}
