//! The storage conformance suite (`dbconsole_core::storage::testing`) over the in-memory
//! backend, the reference implementation of the `Storage` contract.

use std::sync::Arc;

use dbconsole_storage_memory::MemoryStorage;

dbconsole_core::storage_conformance_suite!(|| Arc::new(MemoryStorage::new()));
