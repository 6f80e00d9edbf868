//! Property 1: a valid create reads back what was sent (blank optional strings as null,
//! left-out fields as their documented defaults), and retrieve answers what create answered.

use std::sync::Arc;

use dbconsole_tests::DATABASES;
use http::Method;
use proptest::prelude::*;

use crate::model::*;
use crate::strategies::*;
use crate::support::*;

async fn create_reads_back(body: CreateBody) -> Checked {
    let recorder = Arc::new(RecordingChecker::default());
    let api = api_checked_by(recorder.clone());
    let answer = api.db(Method::POST, DATABASES, Some(&body.json())).await;
    let created = expect_status(answer, 200, "create")?;

    assert_id(&created["id"], "db")?;
    assert_timestamp(&created["inserted_at"])?;
    prop_assert_eq!(&created["inserted_at"], &created["updated_at"]);
    for credential in credentials_of(&created) {
        assert_id(&credential["id"], "crd")?;
    }
    prop_assert_eq!(without_generated(&created), body.read_back());

    let path = database_path(str_of(&created["id"]));
    let retrieved = expect_status(api.db(Method::GET, &path, None).await, 200, "retrieve")?;
    prop_assert_eq!(&retrieved, &created);

    // What is not in a response (passwords, certificates) is what the checker is handed.
    let passwords: Vec<_> = body.passwords().into_iter().map(Ok).collect();
    assert_connections(&api, &recorder, &created, &passwords, &body.tls).await
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn a_valid_create_reads_back_what_was_sent(body in create_body()) {
        run(create_reads_back(body))?;
    }
}
