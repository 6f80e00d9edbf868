//! The HTTP suite over the in-memory backend.

use std::sync::Arc;

use dbconsole_storage_memory::MemoryStorage;

dbconsole_tests::http_suite!(|| Arc::new(MemoryStorage::new()));
