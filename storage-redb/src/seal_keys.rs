//! The seal keys, kept in `meta` under `seal_keys`: the current key's id and a key check value
//! of each key the stored secrets may need (see the crate documentation, "Secrets at rest").
//! They are checked and, for a new file, written when the file is opened (`file`); a database
//! write checks its secrets against them (`databases`).

use dbconsole_core::seal::SealKeys;
use dbconsole_core::storage::record::{self, RecordError};
use dbconsole_core::storage::{StorageError, rules};
use redb::ReadableTable;

use crate::RedbStorage;
use crate::tables::{DATABASES, META, OrBackend};

pub(crate) const META_SEAL_KEYS: &str = "seal_keys";

/// The seal keys, as stored in the meta table of this transaction.
pub(crate) fn seal_keys_of(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<SealKeys, StorageError> {
    let bytes = meta
        .get(META_SEAL_KEYS)
        .or_backend()?
        .ok_or_else(|| StorageError::backend(RecordError::Empty))?;
    Ok(record::decode_seal_keys(bytes.value())?)
}

/// [`Storage::seal_keys`](dbconsole_core::storage::Storage::seal_keys).
pub(crate) async fn seal_keys(store: &RedbStorage) -> Result<SealKeys, StorageError> {
    store.read_now(|inner| {
        inner.read(|txn| {
            let meta = txn.open_table(META).or_backend()?;
            seal_keys_of(&meta)
        })
    })
}

/// [`Storage::replace_seal_keys`](dbconsole_core::storage::Storage::replace_seal_keys).
pub(crate) async fn replace_seal_keys(
    store: &RedbStorage,
    expected: &SealKeys,
    keys: SealKeys,
) -> Result<(), StorageError> {
    let expected = expected.clone();
    store
        .write(move |_, txn| {
            let mut meta = txn.open_table(META).or_backend()?;
            let stored = seal_keys_of(&meta)?;
            let databases = txn.open_table(DATABASES).or_backend()?;
            let all = databases.iter().or_backend()?.map(|entry| {
                let (key, value) = entry.or_backend()?;
                Ok(record::decode_database(key.value(), value.value())?)
            });
            rules::check_seal_keys(&stored, &expected, &keys, all)?;
            let bytes = record::encode_seal_keys(&keys)?;
            meta.insert(META_SEAL_KEYS, bytes.as_slice()).or_backend()?;
            Ok(())
        })
        .await
}
