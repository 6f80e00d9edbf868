//! Users (`users`: normalised name → record) and server settings (`settings`: name → value).
//! Both go into backups: a restored store keeps its people and their passkeys (public keys).

use dbconsole_core::model::{Timestamp, User};
use dbconsole_core::storage::{Page, StorageError, WriteLog, record};
use redb::{ReadableTable, TableDefinition};

use crate::tables::{OrBackend, page};
use crate::{RedbStorage, write_log};

pub(crate) const USERS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("users");
pub(crate) const SETTINGS: TableDefinition<'static, &str, &str> = TableDefinition::new("settings");

/// [`Storage::user`](dbconsole_core::storage::Storage::user).
pub(crate) async fn user(store: &RedbStorage, name: &str) -> Result<Option<User>, StorageError> {
    let name = name.to_owned();
    store.read_now(|inner| {
        inner.read(|txn| {
            let users = txn.open_table(USERS).or_backend()?;
            match users.get(name.as_str()).or_backend()? {
                None => Ok(None),
                Some(bytes) => Ok(Some(record::decode_user(&name, bytes.value())?)),
            }
        })
    })
}

/// [`Storage::list_users`](dbconsole_core::storage::Storage::list_users).
pub(crate) async fn list_users(store: &RedbStorage) -> Result<Vec<User>, StorageError> {
    store
        .run(move |inner| {
            inner.read(|txn| {
                let users = txn.open_table(USERS).or_backend()?;
                let every = Page {
                    after: None,
                    limit: usize::MAX,
                };
                page(&users, every, record::decode_user)
            })
        })
        .await
}

/// [`Storage::put_user`](dbconsole_core::storage::Storage::put_user).
pub(crate) async fn put_user(
    store: &RedbStorage,
    user: User,
    expected: Option<Timestamp>,
    log: Option<WriteLog>,
) -> Result<(), StorageError> {
    let bytes = record::encode_user(&user)?;
    store
        .write(move |_, txn| {
            let mut users = txn.open_table(USERS).or_backend()?;
            let stored = match users.get(user.name.as_str()).or_backend()? {
                None => None,
                Some(bytes) => Some(record::decode_user(&user.name, bytes.value())?),
            };
            match (stored, expected) {
                (Some(_), None) => return Err(StorageError::AlreadyExists),
                (None, Some(_)) => return Err(StorageError::NotFound),
                (Some(stored), Some(expected)) if stored.updated_at != expected => {
                    return Err(StorageError::Conflict);
                }
                _ => {}
            }
            users
                .insert(user.name.as_str(), bytes.as_slice())
                .or_backend()?;
            match &log {
                Some(log) => write_log::append(txn, log),
                None => Ok(()),
            }
        })
        .await
}

/// [`Storage::setting`](dbconsole_core::storage::Storage::setting).
pub(crate) async fn setting(
    store: &RedbStorage,
    name: &str,
) -> Result<Option<String>, StorageError> {
    let name = name.to_owned();
    store.read_now(|inner| {
        inner.read(|txn| {
            let settings = txn.open_table(SETTINGS).or_backend()?;
            Ok(settings
                .get(name.as_str())
                .or_backend()?
                .map(|value| value.value().to_owned()))
        })
    })
}

/// [`Storage::put_setting`](dbconsole_core::storage::Storage::put_setting).
pub(crate) async fn remove_setting(store: &RedbStorage, name: &str) -> Result<(), StorageError> {
    let name = name.to_owned();
    store
        .write(move |_, txn| {
            let mut settings = txn.open_table(SETTINGS).or_backend()?;
            settings.remove(name.as_str()).or_backend()?;
            Ok(())
        })
        .await
}

pub(crate) async fn put_setting(
    store: &RedbStorage,
    name: &str,
    value: &str,
) -> Result<(), StorageError> {
    let (name, value) = (name.to_owned(), value.to_owned());
    store
        .write(move |_, txn| {
            let mut settings = txn.open_table(SETTINGS).or_backend()?;
            settings
                .insert(name.as_str(), value.as_str())
                .or_backend()?;
            Ok(())
        })
        .await
}
