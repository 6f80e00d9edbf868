//! The rules of the [`Storage`](super::Storage) contract that hold whatever the backend: what an
//! edit may change, where `inherits_from` may point, when a delete is refused. Each backend
//! calls these inside the transaction that stores the change and answers their errors as they
//! are; it supplies only lookups of its own records.

use super::{
    AccessEdit, DashboardEdit, DatabaseEdit, DatabaseRef, DatabaseUpsert, DeleteCheck, StorageError,
};
use crate::model::{AccessControl, Dashboard, Database};
use crate::validate::{ValidationErrors, message};

/// Runs an edit of a stored database: its result, the edit's error when it refuses, or [`StorageError::IdentityChanged`] when it changed the id or `api_id`.
pub fn edit_database(stored: &Database, edit: &mut DatabaseEdit) -> Result<Database, StorageError> {
    let updated = edit(stored)?;
    if stored.id == updated.id && stored.api_id == updated.api_id {
        Ok(updated)
    } else {
        Err(StorageError::IdentityChanged)
    }
}

/// Runs an upsert by `api_id` on the stored database with that `api_id` (or `None`): as
/// [`edit_database`] for an update; a created database must carry `api_id`. Whether a created
/// database's id is free is the backend's to check.
pub fn upsert_database(
    api_id: &str,
    stored: Option<&Database>,
    edit: &mut DatabaseUpsert,
) -> Result<Database, StorageError> {
    let updated = edit(stored)?;
    let same = match stored {
        Some(stored) => stored.id == updated.id && stored.api_id == updated.api_id,
        None => updated.api_id.as_deref() == Some(api_id),
    };
    if same {
        Ok(updated)
    } else {
        Err(StorageError::IdentityChanged)
    }
}

/// Runs an edit of a stored dashboard; see [`edit_database`].
pub fn edit_dashboard(
    stored: &Dashboard,
    edit: &mut DashboardEdit,
) -> Result<Dashboard, StorageError> {
    let updated = edit(stored)?;
    if stored.id == updated.id {
        Ok(updated)
    } else {
        Err(StorageError::IdentityChanged)
    }
}

/// Runs an edit of a database's access control: its result, or the edit's error when it
/// refuses. Check the result with [`check_access_control`] before storing it.
pub fn edit_access_control(
    stored: &AccessControl,
    edit: &mut AccessEdit,
) -> Result<AccessControl, StorageError> {
    edit(stored)
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

/// Runs the condition of a delete, if any, on the stored record (before the delete guard).
pub fn check_delete<T>(stored: &T, check: &mut Option<DeleteCheck<T>>) -> Result<(), StorageError> {
    match check {
        Some(check) => check(stored),
        None => Ok(()),
    }
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
