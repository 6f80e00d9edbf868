//! The storage conformance suite (`dbconsole_core::storage::testing`) over the in-memory
//! backend, the reference implementation of the `Storage` contract: directly, and through the
//! forwarding implementations of `Storage` for `Box<S>` and `Arc<S>` (every call of the suite
//! goes through the wrapper).

use std::sync::Arc;

use dbconsole_storage_memory::MemoryStorage;

dbconsole_core::storage_conformance_suite!(|| Arc::new(MemoryStorage::new()));

mod through_box {
    use std::sync::Arc;

    use dbconsole_storage_memory::MemoryStorage;

    dbconsole_core::storage_conformance_suite!(|| Arc::new(Box::new(MemoryStorage::new())));
}

mod through_arc {
    use std::sync::Arc;

    use dbconsole_storage_memory::MemoryStorage;

    dbconsole_core::storage_conformance_suite!(|| Arc::new(Arc::new(MemoryStorage::new())));
}
