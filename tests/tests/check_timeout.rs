//! The check-connection timeout, run once (the timeout is the service's whatever the store) on
//! the memory store with tokio's clock paused: the 1 s and 10 s bounds pass in no real time.

use std::sync::Arc;

use dbconsole_storage_memory::MemoryStorage;

#[tokio::test(start_paused = true)]
async fn check_connection_timeout() {
    dbconsole_tests::databases::check_connection_timeout(Arc::new(MemoryStorage::new())).await;
}
