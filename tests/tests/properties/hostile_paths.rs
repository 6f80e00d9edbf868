//! Property 4 (paths): hostile paths, query strings and caller credentials never give a 5xx,
//! and a refused request never changes what is stored.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::stored::*;
use crate::strategies::*;
use crate::support::*;

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn hostile_paths_and_queries_never_fail(requests in vec(hostile_path(), 1..8)) {
        run(async {
            let stored = Stored::new().await;
            for request in &requests {
                stored.send_checked(request.request(&stored), &format!("{request:?}")).await?;
            }
            Ok(())
        })?;
    }
}
