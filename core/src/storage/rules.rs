//! The rules of the [`Storage`](super::Storage) contract that hold whatever the backend: what an
//! edit may change, where `inherits_from` may point, when a delete is refused. Each backend
//! calls these inside the transaction that stores the change and answers their errors as they
//! are; it supplies only lookups of its own records.

use super::{DatabaseRef, StorageError};
use crate::model::{AccessControl, Dashboard, Database};
use crate::seal::{SealKeys, sealed_keys, sealed_under};
use crate::validate::{ValidationErrors, message};

/// Checks that `updated`, an edit of `stored`, keeps its identity (`id` and `api_id`), and moves
/// its version (`updated_at`) past the stored one if the edit did not: the edit, or
/// [`StorageError::IdentityChanged`]. Core checks it before a replace, and every backend checks
/// the identity again against the record in its transaction.
pub fn edited_database(stored: &Database, mut updated: Database) -> Result<Database, StorageError> {
    check_identity(stored, &updated)?;
    updated.updated_at = updated.updated_at.not_before_next(stored.updated_at);
    Ok(updated)
}

/// [`StorageError::IdentityChanged`] unless `updated` has the `id` and `api_id` of `stored`.
pub fn check_identity(stored: &Database, updated: &Database) -> Result<(), StorageError> {
    if stored.id == updated.id && stored.api_id == updated.api_id {
        Ok(())
    } else {
        Err(StorageError::IdentityChanged)
    }
}

/// Checks an upsert by `api_id` of `stored` (the database with that `api_id`, or `None`): as
/// [`edited_database`] for an update; a created database must carry `api_id`.
pub fn upserted_database(
    api_id: &str,
    stored: Option<&Database>,
    updated: Database,
) -> Result<Database, StorageError> {
    match stored {
        Some(stored) => edited_database(stored, updated),
        None if updated.api_id.as_deref() == Some(api_id) => Ok(updated),
        None => Err(StorageError::IdentityChanged),
    }
}

/// Checks that an edit of a dashboard keeps its id; see [`edited_database`].
pub fn edited_dashboard(
    stored: &Dashboard,
    mut updated: Dashboard,
) -> Result<Dashboard, StorageError> {
    if stored.id == updated.id {
        updated.updated_at = updated.updated_at.not_before_next(stored.updated_at);
        Ok(updated)
    } else {
        Err(StorageError::IdentityChanged)
    }
}

/// The version check of a compare-and-swap: `Ok` when the stored record is at `expected`,
/// [`StorageError::Conflict`] otherwise.
pub fn check_version<T: PartialEq>(stored: &T, expected: &T) -> Result<(), StorageError> {
    if stored == expected {
        Ok(())
    } else {
        Err(StorageError::Conflict)
    }
}

/// Checks an access control about to be stored for database `database_id`: when it inherits
/// from another database, [`check_inheritance`] through `inherits_from_of` (see there), with the
/// records as they are in the storing transaction.
pub fn check_access_control(
    database_id: &str,
    access: &AccessControl,
    inherits_from_of: impl FnMut(&str) -> Result<Option<Option<String>>, StorageError>,
) -> Result<(), StorageError> {
    match &access.data_protection.inherits_from {
        Some(target) => check_inheritance(database_id, target, inherits_from_of),
        None => Ok(()),
    }
}

/// Checks that database `id` may inherit the data protection policies of `target`: `target`
/// exists, is not `id`, and following `inherits_from` from `target` never comes back to `id`.
/// `inherits_from_of(x)` answers `None` when database `x` does not exist, else its
/// `inherits_from`.
pub fn check_inheritance(
    id: &str,
    target: &str,
    mut inherits_from_of: impl FnMut(&str) -> Result<Option<Option<String>>, StorageError>,
) -> Result<(), StorageError> {
    let refuse = |text: &str| {
        Err(StorageError::Invalid(ValidationErrors::single(
            "inherits_from",
            text,
        )))
    };
    if id == target {
        return refuse(message::INHERITS_ITSELF);
    }
    let Some(mut next) = inherits_from_of(target)? else {
        return refuse(message::INHERITS_MISSING);
    };
    // Stored chains never loop (every write is checked), so this ends; the bound is a guard.
    for _ in 0..100_000 {
        match next {
            None => return Ok(()),
            Some(parent) if parent == id => return refuse(message::INHERITS_CYCLE),
            Some(parent) => next = inherits_from_of(&parent)?.flatten(),
        }
    }
    refuse(message::INHERITS_CYCLE)
}

/// The delete guard: [`StorageError::Inherited`] (heirs ordered by id) when other databases
/// inherit the data protection policies of the one to delete.
pub fn guard_delete(mut heirs: Vec<DatabaseRef>) -> Result<(), StorageError> {
    if heirs.is_empty() {
        return Ok(());
    }
    heirs.sort_by(|a, b| a.id.cmp(&b.id));
    heirs.dedup_by(|a, b| a.id == b.id);
    Err(StorageError::Inherited(heirs))
}

/// The seal rule of every database write: each of its secrets is sealed under the store's
/// current key ([`StorageError::SealKeyChanged`] otherwise).
pub fn check_sealed(database: &Database, keys: &SealKeys) -> Result<(), StorageError> {
    if sealed_under(database, keys.current) {
        Ok(())
    } else {
        Err(StorageError::SealKeyChanged(keys.current))
    }
}

/// The rules of [`Storage::replace_seal_keys`](super::Storage::replace_seal_keys): the stored
/// keys are the `expected` ones ([`StorageError::Conflict`] otherwise), the new current key is
/// one of the new keys, and no stored database (`databases`, every one) has a secret sealed
/// under a key that `keys` drops ([`StorageError::SealKeyInUse`]).
pub fn check_seal_keys<I>(
    stored: &SealKeys,
    expected: &SealKeys,
    keys: &SealKeys,
    databases: I,
) -> Result<(), StorageError>
where
    I: IntoIterator<Item = Result<Database, StorageError>>,
{
    check_version(stored, expected)?;
    if !keys.keys.contains_key(&keys.current) {
        return Err(StorageError::Invalid(ValidationErrors::single(
            "current",
            message::INVALID,
        )));
    }
    let dropped = |id: &u32| !keys.keys.contains_key(id);
    if !stored.keys.keys().any(dropped) {
        return Ok(());
    }
    for database in databases {
        if let Some(id) = sealed_keys(&database?).find(dropped) {
            return Err(StorageError::SealKeyInUse(id));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn chain(links: &[(&str, Option<&str>)]) -> HashMap<String, Option<String>> {
        links
            .iter()
            .map(|(id, parent)| ((*id).to_owned(), parent.map(str::to_owned)))
            .collect()
    }

    fn check(id: &str, target: &str, stored: &HashMap<String, Option<String>>) -> Option<String> {
        match check_inheritance(id, target, |x| Ok(stored.get(x).cloned())) {
            Ok(()) => None,
            Err(StorageError::Invalid(errors)) => {
                Some(serde_json::to_value(&errors).unwrap()["inherits_from"][0].to_string())
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn inheritance_refuses_itself_missing_and_cycles() {
        let stored = chain(&[("a", None), ("b", Some("a")), ("c", Some("b"))]);
        assert_eq!(check("d", "c", &stored), None);
        assert_eq!(
            check("a", "a", &stored).as_deref(),
            Some("\"can't be the database itself\"")
        );
        assert_eq!(
            check("a", "x", &stored).as_deref(),
            Some("\"does not exist\"")
        );
        assert_eq!(
            check("a", "c", &stored).as_deref(),
            Some("\"would create an inheritance cycle\"")
        );
    }

    #[test]
    fn guard_orders_heirs_by_id() {
        let heir = |id: &str| DatabaseRef {
            id: id.to_owned(),
            name: format!("n{id}"),
        };
        assert!(guard_delete(Vec::new()).is_ok());
        match guard_delete(vec![heir("b"), heir("a"), heir("b")]) {
            Err(StorageError::Inherited(heirs)) => {
                let ids: Vec<_> = heirs.iter().map(|h| h.id.as_str()).collect();
                assert_eq!(ids, ["a", "b"]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
