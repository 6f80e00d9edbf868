//! Callers' keys: `caller_keys` (key id → name, kind, scope, the SHA-256 digest of the secret,
//! times) and `caller_key_digests` (digest → key id), through which a presented secret is found.
//! The secrets themselves are never stored.

use dbconsole_core::model::{CallerKey, Timestamp};
use dbconsole_core::storage::{Page, StorageError, WriteLog, record};
use redb::ReadableTable;

use crate::tables::{CALLER_KEY_DIGESTS, CALLER_KEYS, OrBackend, page};
use crate::{RedbStorage, write_log};

/// [`Storage::create_caller_key`](dbconsole_core::storage::Storage::create_caller_key).
pub(crate) async fn create_caller_key(
    store: &RedbStorage,
    key: CallerKey,
    log: WriteLog,
) -> Result<(), StorageError> {
    store
        .write(move |_, txn| {
            let mut keys = txn.open_table(CALLER_KEYS).or_backend()?;
            let mut digests = txn.open_table(CALLER_KEY_DIGESTS).or_backend()?;
            let id = key.id.as_str();
            let id_taken = keys.get(id).or_backend()?.is_some();
            if id_taken || digests.get(&key.digest).or_backend()?.is_some() {
                return Err(StorageError::AlreadyExists);
            }
            let bytes = record::encode_caller_key(&key)?;
            keys.insert(id, bytes.as_slice()).or_backend()?;
            digests.insert(&key.digest, id).or_backend()?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::caller_key`](dbconsole_core::storage::Storage::caller_key).
pub(crate) async fn caller_key(
    store: &RedbStorage,
    id: &str,
) -> Result<Option<CallerKey>, StorageError> {
    store.read_now(|inner| {
        inner.read(|txn| {
            let keys = txn.open_table(CALLER_KEYS).or_backend()?;
            match keys.get(id).or_backend()? {
                None => Ok(None),
                Some(bytes) => Ok(Some(record::decode_caller_key(id, bytes.value())?)),
            }
        })
    })
}

/// [`Storage::caller_key_by_digest`](dbconsole_core::storage::Storage::caller_key_by_digest).
pub(crate) async fn caller_key_by_digest(
    store: &RedbStorage,
    digest: &[u8; 32],
) -> Result<Option<CallerKey>, StorageError> {
    store.read_recent(
        |recent| &mut recent.caller_keys,
        digest,
        |txn| {
            let digests = txn.open_table(CALLER_KEY_DIGESTS).or_backend()?;
            let Some(id) = digests.get(digest).or_backend()? else {
                return Ok(None);
            };
            let keys = txn.open_table(CALLER_KEYS).or_backend()?;
            match keys.get(id.value()).or_backend()? {
                None => Ok(None),
                Some(bytes) => Ok(Some(record::decode_caller_key(id.value(), bytes.value())?)),
            }
        },
    )
}

/// [`Storage::list_caller_keys`](dbconsole_core::storage::Storage::list_caller_keys).
pub(crate) async fn list_caller_keys(store: &RedbStorage) -> Result<Vec<CallerKey>, StorageError> {
    store
        .run(move |inner| {
            inner.read(|txn| {
                let keys = txn.open_table(CALLER_KEYS).or_backend()?;
                let every = Page {
                    after: None,
                    limit: usize::MAX,
                };
                page(&keys, every, record::decode_caller_key)
            })
        })
        .await
}

/// [`Storage::touch_caller_key`](dbconsole_core::storage::Storage::touch_caller_key).
pub(crate) async fn touch_caller_key(
    store: &RedbStorage,
    id: &str,
    at: Timestamp,
) -> Result<(), StorageError> {
    let id = id.to_owned();
    store
        .write(move |_, txn| {
            let mut keys = txn.open_table(CALLER_KEYS).or_backend()?;
            let mut key = match keys.get(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_caller_key(&id, bytes.value())?,
            };
            if key.last_used_at < Some(at) {
                key.last_used_at = Some(at);
                let bytes = record::encode_caller_key(&key)?;
                keys.insert(id.as_str(), bytes.as_slice()).or_backend()?;
            }
            Ok(())
        })
        .await
}

/// [`Storage::remove_caller_key`](dbconsole_core::storage::Storage::remove_caller_key).
pub(crate) async fn remove_caller_key(
    store: &RedbStorage,
    id: &str,
    log: WriteLog,
) -> Result<(), StorageError> {
    let id = id.to_owned();
    store
        .write(move |_, txn| {
            let mut keys = txn.open_table(CALLER_KEYS).or_backend()?;
            let mut digests = txn.open_table(CALLER_KEY_DIGESTS).or_backend()?;
            let removed = match keys.remove(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_caller_key(&id, bytes.value())?,
            };
            digests.remove(&removed.digest).or_backend()?;
            write_log::append(txn, &log)
        })
        .await
}
