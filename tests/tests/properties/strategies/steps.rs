//! Sequences of successful updates (database PATCH, setup, dashboard PUT).

use proptest::prelude::*;
use serde_json::Value;

use crate::model::*;
use crate::strategies::*;

/// One successful update.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    PatchDatabase(Fields),
    Setup(Value),
    PutDashboard(Value),
}

pub(crate) fn step() -> BoxedStrategy<Step> {
    prop_oneof![
        3 => some_of(database_fields(), 0.3, &[]).prop_map(|mut fields| {
            verify_only_with_ca(&mut fields, false);
            Step::PatchDatabase(fields)
        }),
        2 => setup_body().prop_map(Step::Setup),
        3 => dashboard_body(false)
            .prop_map(|body| Step::PutDashboard(body.resolve(&DashboardIds::default()).0)),
    ]
    .boxed()
}
