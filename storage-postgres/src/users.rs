//! Users (table `users`, migration 11: the normalised name, the version a replace compares,
//! the record) and server settings (table `settings`).

use dbconsole_core::model::{Timestamp, User};
use dbconsole_core::storage::{StorageError, WriteLog, record};
use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use crate::PostgresStorage;
use crate::fault::Failure;
use crate::retry::{InFlight, begin, commit, serializable};
use crate::sql::{bytes, key, text};
use crate::write_log::append;

fn user_of(row: &Row) -> Result<User, StorageError> {
    Ok(record::decode_user(
        &text(row, "name")?,
        &bytes(row, "record")?,
    )?)
}

/// [`Storage::user`](dbconsole_core::storage::Storage::user).
pub(crate) async fn user(
    store: &PostgresStorage,
    name: &str,
) -> Result<Option<User>, StorageError> {
    let Some(name) = key(name) else {
        return Ok(None);
    };
    let sql = "SELECT name, record FROM users WHERE name = $1";
    store.one(sql, &[&name], user_of).await
}

/// [`Storage::list_users`](dbconsole_core::storage::Storage::list_users).
pub(crate) async fn list(store: &PostgresStorage) -> Result<Vec<User>, StorageError> {
    let sql = "SELECT name, record FROM users ORDER BY name";
    store.all(sql, &[], user_of).await
}

/// [`Storage::put_user`](dbconsole_core::storage::Storage::put_user).
pub(crate) async fn put(
    store: &PostgresStorage,
    user: User,
    expected: Option<Timestamp>,
    log: Option<WriteLog>,
) -> Result<(), StorageError> {
    if key(&user.name).is_none() {
        return Err(StorageError::Invalid(
            dbconsole_core::validate::ValidationErrors::single("name", "must not contain NUL"),
        ));
    }
    let bytes = record::encode_user(&user)?;
    serializable!(store, |client, in_flight| try_put(
        client,
        &user,
        &bytes,
        expected,
        log.as_ref(),
        &in_flight
    )
    .await)
}

async fn try_put(
    client: &mut Object,
    user: &User,
    bytes: &[u8],
    expected: Option<Timestamp>,
    log: Option<&WriteLog>,
    in_flight: &InFlight,
) -> Result<(), Failure> {
    let txn = begin(client).await?;
    match expected {
        None => {
            let insert = txn
                .prepare_cached("INSERT INTO users (name, updated_at, record) VALUES ($1, $2, $3)")
                .await?;
            let inserted = txn
                .execute(&insert, &[&user.name, &user.updated_at.as_micros(), &bytes])
                .await;
            match inserted {
                Ok(_) => {}
                Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    return Err(StorageError::AlreadyExists.into());
                }
                Err(error) => return Err(error.into()),
            }
        }
        Some(expected) => {
            let select = txn
                .prepare_cached("SELECT updated_at FROM users WHERE name = $1 FOR UPDATE")
                .await?;
            let row = txn
                .query_opt(&select, &[&user.name])
                .await?
                .ok_or(StorageError::NotFound)?;
            let stored: i64 = row.try_get("updated_at")?;
            if stored != expected.as_micros() {
                return Err(StorageError::Conflict.into());
            }
            let update = txn
                .prepare_cached("UPDATE users SET updated_at = $2, record = $3 WHERE name = $1")
                .await?;
            txn.execute(&update, &[&user.name, &user.updated_at.as_micros(), &bytes])
                .await?;
        }
    }
    match log {
        Some(log) => {
            append(&txn, log).await?;
            commit(txn, log.event.id.as_str(), in_flight).await
        }
        None => {
            // Bookkeeping (the time of a sign-in), with no event to confirm it: a lost answer
            // is a lost update, which the next sign-in writes again.
            txn.commit().await?;
            Ok(())
        }
    }
}

/// [`Storage::setting`](dbconsole_core::storage::Storage::setting).
pub(crate) async fn setting(
    store: &PostgresStorage,
    name: &str,
) -> Result<Option<String>, StorageError> {
    let Some(name) = key(name) else {
        return Ok(None);
    };
    let sql = "SELECT value FROM settings WHERE name = $1";
    store.one(sql, &[&name], |row| text(row, "value")).await
}

/// [`Storage::put_setting`](dbconsole_core::storage::Storage::put_setting).
pub(crate) async fn remove_setting(
    store: &PostgresStorage,
    name: &str,
) -> Result<(), StorageError> {
    let Some(name) = key(name) else {
        return Ok(());
    };
    store
        .rows("DELETE FROM settings WHERE name = $1", &[&name])
        .await
        .map(|_| ())
}

pub(crate) async fn put_setting(
    store: &PostgresStorage,
    name: &str,
    value: &str,
) -> Result<(), StorageError> {
    let (Some(name), Some(value)) = (key(name), key(value)) else {
        return Err(StorageError::Invalid(
            dbconsole_core::validate::ValidationErrors::single("value", "must not contain NUL"),
        ));
    };
    let sql = "INSERT INTO settings (name, value) VALUES ($1, $2)
               ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value";
    store.rows(sql, &[&name, &value]).await.map(|_| ())
}
