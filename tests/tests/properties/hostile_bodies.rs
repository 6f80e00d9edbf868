//! Property 4 (bodies): hostile bodies never give a 5xx, and a refused request never changes
//! what is stored.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::stored::*;
use crate::strategies::*;
use crate::support::*;

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn hostile_bodies_never_fail_and_refusals_change_nothing(requests in vec(hostile_body(), 1..6)) {
        run(async {
            let stored = Stored::new().await;
            for request in &requests {
                stored.send_checked(request.request(&stored), &format!("{request:?}")).await?;
            }
            Ok(())
        })?;
    }
}
