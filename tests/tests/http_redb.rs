//! The HTTP suite over the redb backend, twice: on a data file in a temporary directory, and on
//! redb's in-memory backend.

use std::sync::atomic::{AtomicUsize, Ordering};

use dbconsole_storage_redb::{RedbStorage, SecretKey};

/// A store on a fresh data file in the system's temporary directory. The file is unlinked as
/// soon as it is open: on Unix the open file stays usable (redb keeps writing and `fsync`ing
/// it) until the store is dropped, so no test leaves files behind.
fn on_file() -> RedbStorage {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "dbconsole-http-redb-{}-{}.redb",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&path);
    let storage = RedbStorage::open(&path, SecretKey::generate().expect("a key"))
        .expect("a new data file opens");
    let _ = std::fs::remove_file(&path);
    storage
}

fn in_memory() -> RedbStorage {
    RedbStorage::in_memory(SecretKey::generate().expect("a key")).expect("an in-memory store")
}

mod file {
    use std::sync::Arc;

    dbconsole_tests::http_suite!(|| Arc::new(super::on_file()));
}

mod memory {
    use std::sync::Arc;

    dbconsole_tests::http_suite!(|| Arc::new(super::in_memory()));
}
