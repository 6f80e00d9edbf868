//! Property 2 (dashboards): fields left out of a PUT never move; panels and actions that carry
//! their id keep it.

use dbconsole_tests::DASHBOARDS;
use http::Method;
use proptest::prelude::*;

use crate::model::*;
use crate::strategies::*;
use crate::support::*;

async fn dashboard_update_keeps_left_out_fields(
    create: DashboardBody,
    update: DashboardBody,
) -> Checked {
    let api = fresh_api();
    let nothing = DashboardIds::default();
    let (body, expected) = create.resolve(&nothing);
    let answer = api.dash(Method::POST, DASHBOARDS, Some(&body)).await;
    let before = expect_status(answer, 200, "create")?;
    assert_id(&before["id"], "dash")?;
    for (key, given) in &create.fields {
        prop_assert_eq!(&before[*key], &given.expect, "{}", key);
    }
    assert_panels(&before["panels"], &expected.unwrap_or_default(), &nothing)?;

    let stored = DashboardIds::of(&before);
    let (body, expected) = update.resolve(&stored);
    let path = dashboard_path(str_of(&before["id"]));
    let answer = api.dash(Method::PUT, &path, Some(&body)).await;
    let after = expect_status(answer, 200, "update")?;
    let retrieved = expect_status(api.dash(Method::GET, &path, None).await, 200, "retrieve")?;
    prop_assert_eq!(&retrieved, &after);

    prop_assert_eq!(&after["id"], &before["id"]);
    for key in ["name", "restricted_access"] {
        let expected = expect_of(&update.fields, key).unwrap_or_else(|| before[key].clone());
        prop_assert_eq!(&after[key], &expected, "{}", key);
    }
    match expected {
        Some(expected) => assert_panels(&after["panels"], &expected, &stored),
        None => {
            prop_assert_eq!(&after["panels"], &before["panels"]);
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn dashboard_fields_left_out_of_an_update_never_move(
        create in dashboard_body(true),
        update in dashboard_body(false),
    ) {
        run(dashboard_update_keeps_left_out_fields(create, update))?;
    }
}
