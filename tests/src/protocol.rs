//! Cases of the HTTP suite: protocol (filled in by the suite's author).

use std::sync::Arc;

use dbconsole_core::Storage;

use crate::Api;

/// Placeholder case so that the macro has something to expand.
pub async fn protocol_placeholder(storage: Arc<dyn Storage>) {
    let _api = Api::new(storage);
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! protocol_tests {
    ($storage:expr) => {
        $crate::suite_cases!(protocol, $storage, [protocol_placeholder]);
    };
}
