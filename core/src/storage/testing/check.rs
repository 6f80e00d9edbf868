//! Assertions shared by the cases: results that must be `Ok` or must find a record, errors of
//! one kind, whole databases compared field by field with secrets named but never shown, the
//! refusal of an inheritance, and the check of a keyset-paged listing.

use std::fmt::Debug;

use super::fixtures::ALL;
use crate::model::{AccessControl, Database, SealedSecret, TlsMaterial};
use crate::storage::StorageError;
use crate::validate::ValidationErrors;

/// Asserts that `$result` is `Err` matching `$pattern`, naming the call in the message.
macro_rules! assert_err {
    ($result:expr, $pattern:pat, $($context:tt)+) => {
        match $result {
            Err($pattern) => {}
            Err(other) => panic!(
                "{}: expected Err({}), got Err({other:?})",
                format_args!($($context)+),
                stringify!($pattern),
            ),
            Ok(value) => panic!(
                "{}: expected Err({}), got Ok({value:?})",
                format_args!($($context)+),
                stringify!($pattern),
            ),
        }
    };
}
pub(super) use assert_err;

/// The value of a call that must succeed.
#[track_caller]
pub(super) fn ok<T>(result: Result<T, StorageError>, call: &str) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{call} failed: {error} ({error:?})"),
    }
}

/// The record a read that must find one returned.
#[track_caller]
pub(super) fn found<T>(result: Result<Option<T>, StorageError>, call: &str) -> T {
    match ok(result, call) {
        Some(value) => value,
        None => panic!("{call} returned None, but the record is stored"),
    }
}

/// Asserts that a read finds nothing.
#[track_caller]
pub(super) fn absent<T: Debug>(result: Result<Option<T>, StorageError>, call: &str) {
    if let Some(value) = ok(result, call) {
        panic!("{call} returned {value:?}, but no such record should be stored");
    }
}

/// How two secrets differ, without showing them; `None` when they are equal.
fn secret_difference(
    actual: Option<&SealedSecret>,
    expected: Option<&SealedSecret>,
) -> Option<String> {
    match (actual, expected) {
        (actual, expected) if actual == expected => None,
        (None, Some(expected)) => Some(format!(
            "missing (expected {} bytes)",
            expected.as_bytes().len()
        )),
        (Some(actual), None) => Some(format!(
            "present ({} bytes) where none was stored",
            actual.as_bytes().len()
        )),
        (Some(actual), Some(expected)) if actual.as_bytes().len() != expected.as_bytes().len() => {
            Some(format!(
                "{} bytes long, expected {} bytes",
                actual.as_bytes().len(),
                expected.as_bytes().len()
            ))
        }
        _ => Some("the same length but different bytes".to_owned()),
    }
}

/// The database with every secret replaced by an empty one: equal to another such copy when
/// everything but the secrets' bytes is equal (presence included).
fn masked(database: &Database) -> Database {
    let mask = |secret: &Option<SealedSecret>| {
        secret
            .as_ref()
            .map(|_| SealedSecret::from_stored(Vec::new()))
    };
    let mut masked = database.clone();
    masked.tls = TlsMaterial {
        ca_cert: mask(&database.tls.ca_cert),
        client_cert: mask(&database.tls.client_cert),
        client_key: mask(&database.tls.client_key),
    };
    for credential in &mut masked.credentials {
        credential.password = mask(&credential.password);
    }
    masked
}

/// Asserts two databases are equal: first that they are the same record, then every field but
/// the secrets' bytes (a readable diff), then each secret by name (secrets print redacted, so a
/// plain `assert_eq!` would show two identical dumps).
#[track_caller]
pub(super) fn assert_same_database(actual: &Database, expected: &Database, context: &str) {
    assert!(
        actual.id == expected.id,
        "{context}: got the database {} ({:?}), expected the database {} ({:?})",
        actual.id,
        actual.name,
        expected.id,
        expected.name
    );
    assert_eq!(
        masked(actual),
        masked(expected),
        "{context} (secrets masked; left: got, right: expected)"
    );
    let mut secrets = vec![
        (
            "tls.ca_cert".to_owned(),
            actual.tls.ca_cert.as_ref(),
            expected.tls.ca_cert.as_ref(),
        ),
        (
            "tls.client_cert".to_owned(),
            actual.tls.client_cert.as_ref(),
            expected.tls.client_cert.as_ref(),
        ),
        (
            "tls.client_key".to_owned(),
            actual.tls.client_key.as_ref(),
            expected.tls.client_key.as_ref(),
        ),
    ];
    for (index, (a, e)) in actual
        .credentials
        .iter()
        .zip(&expected.credentials)
        .enumerate()
    {
        secrets.push((
            format!("credentials[{index}].password ({})", e.username),
            a.password.as_ref(),
            e.password.as_ref(),
        ));
    }
    for (field, actual, expected) in secrets {
        if let Some(difference) = secret_difference(actual, expected) {
            panic!("{context}: secret {field} is {difference} (secrets print redacted)");
        }
    }
    assert_eq!(actual, expected, "{context}");
}

/// Asserts that `result` is the refusal of an `inherits_from` with this message.
#[track_caller]
pub(super) fn assert_inheritance_refused(
    result: Result<AccessControl, StorageError>,
    expected: &str,
    context: &str,
) {
    match result {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            ValidationErrors::single("inherits_from", expected),
            "{context}: StorageError::Invalid must carry `inherits_from: {expected}`"
        ),
        other => {
            panic!("{context}: expected Err(Invalid(inherits_from: {expected:?})), got {other:?}")
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Listings (shared by databases and dashboards)
// ---------------------------------------------------------------------------------------------

/// How many ids a listing case makes; records are stored for the odd indexes only, so the even
/// ones are ids that sort before, between and after the stored ones without being stored.
pub(super) const LISTING_IDS: usize = 11;

/// Checks ordering, the limit and keyset pagination of a listing of `ids[1], ids[3], …`, where
/// `ids` (sorted, generated in order) has [`LISTING_IDS`] entries. `list(after, limit)` returns
/// the ids of one page.
pub(super) async fn check_listing<L>(what: &str, ids: &[String], list: L)
where
    L: AsyncFn(Option<&str>, usize) -> Vec<String>,
{
    assert_eq!(ids.len(), LISTING_IDS);
    let stored: Vec<String> = ids.iter().skip(1).step_by(2).cloned().collect();
    let from = |index: usize| stored[index..].to_vec();

    assert_eq!(
        list(None, ALL).await,
        stored,
        "{what}(after: None): every record, ordered by id"
    );
    assert_eq!(
        list(None, 3).await,
        stored[..3].to_vec(),
        "{what}(after: None, limit: 3): the first 3 by id"
    );
    assert_eq!(
        list(None, 0).await,
        Vec::<String>::new(),
        "{what}(limit: 0): at most 0 records"
    );
    assert_eq!(
        list(Some(&stored[1]), ALL).await,
        from(2),
        "{what}(after: a stored id): `after` is exclusive"
    );
    assert_eq!(
        list(Some(&stored[0]), 2).await,
        stored[1..3].to_vec(),
        "{what}(after: the first id, limit: 2)"
    );
    assert_eq!(
        list(Some(&ids[4]), ALL).await,
        from(2),
        "{what}(after: an id that is not stored but sorts between stored ones)"
    );
    assert_eq!(
        list(Some(&ids[0]), ALL).await,
        stored,
        "{what}(after: an id that sorts before every stored one)"
    );
    assert_eq!(
        list(Some(""), ALL).await,
        stored,
        "{what}(after: \"\"): every id sorts after the empty string"
    );
    assert_eq!(
        list(Some(&ids[LISTING_IDS - 1]), ALL).await,
        Vec::<String>::new(),
        "{what}(after: an id that sorts after every stored one)"
    );
    assert_eq!(
        list(Some("zz"), ALL).await,
        Vec::<String>::new(),
        "{what}(after: \"zz\", a string that sorts after every id)"
    );
    assert_eq!(
        list(Some(&stored[stored.len() - 1]), ALL).await,
        Vec::<String>::new(),
        "{what}(after: the last stored id)"
    );

    let mut walked = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..=stored.len() {
        let page = list(after.as_deref(), 2).await;
        assert!(
            page.len() <= 2,
            "{what}(limit: 2) returned {} records: {page:?}",
            page.len()
        );
        let Some(last) = page.last().cloned() else {
            break;
        };
        walked.extend(page);
        after = Some(last);
    }
    assert_eq!(
        walked, stored,
        "{what}: walking pages of 2 with `after` = the last id of the previous page must visit \
         every record once, in order"
    );
}

/// [`LISTING_IDS`] ids of one kind, in generation (and sort) order.
pub(super) fn listing_ids(generate: impl Fn() -> String) -> Vec<String> {
    let ids: Vec<String> = (0..LISTING_IDS).map(|_| generate()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "generated ids sort in generation order");
    ids
}

/// The odd-indexed ids of `ids`, in an order that is neither sorted nor reversed.
pub(super) fn insertion_order(ids: &[String]) -> Vec<String> {
    let stored: Vec<&String> = ids.iter().skip(1).step_by(2).collect();
    [3, 0, 4, 2, 1]
        .into_iter()
        .map(|index| stored[index].clone())
        .collect()
}
