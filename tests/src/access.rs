//! Cases of the HTTP suite: permissions, data protection, the delete guard, stored caller keys
//! (filled in by the suite's author).

use std::sync::Arc;

use dbconsole_core::Storage;

use crate::Api;

/// Placeholder case so that the macro has something to expand.
pub async fn access_placeholder(storage: Arc<dyn Storage>) {
    let _api = Api::new(storage);
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! access_tests {
    ($storage:expr) => {
        $crate::suite_cases!(access, $storage, [access_placeholder]);
    };
}
