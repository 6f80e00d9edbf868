//! Cases on caller keys (docs/api.md, *Caller credentials*): insert, lookup by digest, listing by id,
//! touch (the later time wins) and delete (revoked at once); a taken id or digest is refused.

use super::origin;
use crate::storage::Edits as _;
use std::sync::Arc;

use super::check::{absent, assert_err, found, ok};
use super::fixtures::caller_keys;
use crate::model::{CallerKey, Timestamp};
use crate::storage::{Storage, StorageError};

/// Asserts two caller keys are equal, naming the digest when it differs (it prints redacted).
#[track_caller]
fn assert_same_key(actual: &CallerKey, expected: &CallerKey, context: &str) {
    assert!(
        actual.digest == expected.digest,
        "{context}: the key {} has another digest than expected (digests print redacted)",
        actual.id
    );
    assert_eq!(actual, expected, "{context}");
}

#[track_caller]
fn assert_same_keys(actual: &[CallerKey], expected: &[CallerKey], context: &str) {
    let ids = |keys: &[CallerKey]| -> Vec<String> {
        keys.iter().map(|k| k.id.as_str().to_owned()).collect()
    };
    assert_eq!(
        ids(actual),
        ids(expected),
        "{context}: the keys' ids, in order"
    );
    for (actual, expected) in actual.iter().zip(expected) {
        assert_same_key(actual, expected, context);
    }
}

/// Caller keys read back exactly as inserted, by digest and in the listing (ordered by id);
/// an unknown digest is `None`.
pub async fn caller_keys_round_trip_by_digest_and_listing(storage: Arc<dyn Storage>) {
    assert!(
        ok(storage.list_caller_keys().await, "list_caller_keys").is_empty(),
        "list_caller_keys on an empty store must be empty"
    );
    absent(
        storage.caller_key_by_digest(&[0; 32]).await,
        "caller_key_by_digest on an empty store",
    );
    let keys = caller_keys();
    for index in [2, 0, 1] {
        ok(
            storage
                .insert_caller_key(keys[index].clone(), origin())
                .await,
            "insert_caller_key",
        );
    }
    for key in &keys {
        let by_digest = found(
            storage.caller_key_by_digest(&key.digest).await,
            "caller_key_by_digest",
        );
        assert_same_key(
            &by_digest,
            key,
            "caller_key_by_digest after insert_caller_key",
        );
    }
    let mut unknown = keys[0].digest;
    unknown[31] ^= 1;
    absent(
        storage.caller_key_by_digest(&unknown).await,
        "caller_key_by_digest(a digest one bit away from a stored one)",
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &keys,
        "list_caller_keys: every key, ordered by id",
    );
}

/// Inserting a caller key whose id or digest is taken fails with `AlreadyExists` and changes
/// nothing.
pub async fn caller_key_insert_with_taken_id_or_digest_is_refused(storage: Arc<dyn Storage>) {
    let keys = caller_keys();
    ok(
        storage.insert_caller_key(keys[0].clone(), origin()).await,
        "insert_caller_key",
    );

    let mut same_id = keys[1].clone();
    same_id.id = keys[0].id.clone();
    assert_err!(
        storage.insert_caller_key(same_id.clone(), origin()).await,
        StorageError::AlreadyExists,
        "insert_caller_key with the id of a stored key"
    );
    let mut same_digest = keys[2].clone();
    same_digest.digest = keys[0].digest;
    assert_err!(
        storage
            .insert_caller_key(same_digest.clone(), origin())
            .await,
        StorageError::AlreadyExists,
        "insert_caller_key with the digest of a stored key"
    );

    absent(
        storage.caller_key_by_digest(&same_id.digest).await,
        "caller_key_by_digest(the digest of a key refused for its id)",
    );
    let by_digest = found(
        storage.caller_key_by_digest(&keys[0].digest).await,
        "caller_key_by_digest",
    );
    assert_same_key(&by_digest, &keys[0], "the stored key after refused inserts");
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &keys[..1],
        "list_caller_keys after refused inserts",
    );
    // Neither refused insert left its id behind.
    ok(
        storage.insert_caller_key(keys[2].clone(), origin()).await,
        "insert_caller_key of the key whose id a refused insert used",
    );
}

/// `touch_caller_key` keeps the later of the stored time and the given one, changes nothing
/// else, and is `NotFound` for a key that is not stored.
pub async fn caller_key_touch_keeps_the_later_time(storage: Arc<dyn Storage>) {
    let keys = caller_keys();
    for key in &keys {
        ok(
            storage.insert_caller_key(key.clone(), origin()).await,
            "insert_caller_key",
        );
    }
    let (t1, t2, t3) = (
        Timestamp::from_micros(1_800_000_000_000_001),
        Timestamp::from_micros(1_800_000_000_000_002),
        Timestamp::from_micros(1_800_000_060_000_000),
    );
    let fresh = &keys[1];
    assert_eq!(fresh.last_used_at, None);
    let mut expected = keys.clone();
    for (at, kept, what) in [
        (t2, t2, "a first use"),
        (t1, t2, "an earlier time (kept the later one)"),
        (t2, t2, "the same time"),
        (t3, t3, "a later time"),
    ] {
        ok(
            storage.touch_caller_key(fresh.id.as_str(), at).await,
            &format!("touch_caller_key with {what}"),
        );
        expected[1].last_used_at = Some(kept);
        let by_digest = found(
            storage.caller_key_by_digest(&fresh.digest).await,
            "caller_key_by_digest",
        );
        assert_same_key(
            &by_digest,
            &expected[1],
            &format!("caller_key_by_digest after touch_caller_key with {what}"),
        );
    }
    // The already used key goes back in time: its stored time stays.
    ok(
        storage
            .touch_caller_key(keys[0].id.as_str(), Timestamp::from_micros(5))
            .await,
        "touch_caller_key with a time before the stored one",
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &expected,
        "list_caller_keys after touches: only the touched key's last_used_at moved",
    );
    assert_err!(
        storage.touch_caller_key("key_missing", t3).await,
        StorageError::NotFound,
        "touch_caller_key of a key that is not stored"
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &expected,
        "list_caller_keys after a touch of a missing key (it creates nothing)",
    );
}

/// `delete_caller_key` returns the key as it was and revokes it: not found by its digest, not
/// listed, not touchable; a second delete is `NotFound`.
pub async fn caller_key_delete_returns_it_and_revokes_it(storage: Arc<dyn Storage>) {
    let mut keys = caller_keys();
    for key in &keys {
        ok(
            storage.insert_caller_key(key.clone(), origin()).await,
            "insert_caller_key",
        );
    }
    let at = Timestamp::from_micros(1_800_000_000_000_000);
    ok(
        storage.touch_caller_key(keys[1].id.as_str(), at).await,
        "touch_caller_key",
    );
    keys[1].last_used_at = Some(at);

    let removed = ok(
        storage
            .delete_caller_key(keys[1].id.as_str(), origin())
            .await,
        "delete_caller_key",
    );
    assert_same_key(
        &removed,
        &keys[1],
        "delete_caller_key must return the key as it was",
    );
    absent(
        storage.caller_key_by_digest(&keys[1].digest).await,
        "caller_key_by_digest of a deleted key",
    );
    let remaining = vec![keys[0].clone(), keys[2].clone()];
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &remaining,
        "list_caller_keys after delete_caller_key",
    );
    assert_err!(
        storage.touch_caller_key(keys[1].id.as_str(), at).await,
        StorageError::NotFound,
        "touch_caller_key of a deleted key"
    );
    assert_err!(
        storage
            .delete_caller_key(keys[1].id.as_str(), origin())
            .await,
        StorageError::NotFound,
        "a second delete_caller_key"
    );
    assert_err!(
        storage.delete_caller_key("key_missing", origin()).await,
        StorageError::NotFound,
        "delete_caller_key of a key that is not stored"
    );
    for key in &remaining {
        let by_digest = found(
            storage.caller_key_by_digest(&key.digest).await,
            "caller_key_by_digest of a key that was not deleted",
        );
        assert_same_key(&by_digest, key, "another key after delete_caller_key");
    }
    // The deleted key's id and digest are free again.
    ok(
        storage.insert_caller_key(keys[1].clone(), origin()).await,
        "insert_caller_key with the id and digest of a deleted key",
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &keys,
        "list_caller_keys after the key was stored again",
    );
}

/// `record_counts` counts every kind of record, and follows inserts and deletes.
pub async fn record_counts_follow_inserts_and_deletes(storage: Arc<dyn Storage>) {
    use super::fixtures::{insert_named, plain_dashboard};
    use crate::storage::{DatabaseKey, RecordCounts};

    let counts = |databases, dashboards, caller_keys| RecordCounts {
        databases,
        dashboards,
        caller_keys,
    };
    assert_eq!(
        ok(storage.record_counts().await, "record_counts"),
        counts(0, 0, 0),
        "an empty store"
    );
    let databases = insert_named(&*storage, &["a", "b", "c"]).await;
    let dashboard = plain_dashboard("d");
    ok(
        storage.insert_dashboard(dashboard.clone(), origin()).await,
        "insert_dashboard",
    );
    for key in caller_keys().into_iter().take(2) {
        ok(
            storage.insert_caller_key(key, origin()).await,
            "insert_caller_key",
        );
    }
    assert_eq!(
        ok(storage.record_counts().await, "record_counts"),
        counts(3, 1, 2)
    );
    ok(
        storage
            .delete_database(DatabaseKey::Id(databases[1].id.as_str()), None, origin())
            .await,
        "delete_database",
    );
    ok(
        storage
            .delete_dashboard(dashboard.id.as_str(), None, origin())
            .await,
        "delete_dashboard",
    );
    assert_eq!(
        ok(storage.record_counts().await, "record_counts"),
        counts(2, 0, 2),
        "after deleting a database and the dashboard"
    );
}
