//! The storage conformance suite (`dbconsole_core::storage::testing`) over the redb backend,
//! twice: on a data file in a temporary directory, and on redb's in-memory backend.

use dbconsole_core::Sealer;
use dbconsole_storage_redb::RedbStorage;

/// A store on a fresh data file with a fresh key.
///
/// The temporary directory is removed as soon as the store is open: on Unix the open file stays
/// usable (and redb keeps writing and `fsync`ing it) until the store is dropped, so no test
/// leaves files behind.
fn on_file() -> RedbStorage {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sealer = Sealer::ephemeral().expect("a key");
    RedbStorage::open(&dir.path().join("dbconsole.redb"), &sealer).expect("a new data file opens")
}

fn in_memory() -> RedbStorage {
    let sealer = Sealer::ephemeral().expect("a key");
    RedbStorage::in_memory(&sealer).expect("an in-memory store")
}

mod file {
    use std::sync::Arc;

    dbconsole_core::storage_conformance_suite!(|| Arc::new(super::on_file()));
}

mod memory {
    use std::sync::Arc;

    dbconsole_core::storage_conformance_suite!(|| Arc::new(super::in_memory()));
}
