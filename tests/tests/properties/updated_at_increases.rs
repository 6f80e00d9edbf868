//! Property 3: `updated_at` strictly increases over any sequence of successful updates;
//! `inserted_at` never changes.

use dbconsole_tests::{Api, DATABASES};
use http::Method;
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::strategies::*;
use crate::support::*;

/// A record's timestamps: what it had when created, and the last `updated_at` seen.
struct Clock {
    inserted_at: Value,
    updated_at: Value,
}

impl Clock {
    fn of(record: &Value) -> Result<Self, TestCaseError> {
        assert_timestamp(&record["inserted_at"])?;
        Ok(Self {
            inserted_at: record["inserted_at"].clone(),
            updated_at: record["updated_at"].clone(),
        })
    }

    /// `record` is a later version: same `inserted_at`, strictly later `updated_at`.
    fn advance(&mut self, record: &Value, call: &str) -> Result<(), TestCaseError> {
        prop_assert_eq!(&record["inserted_at"], &self.inserted_at, "{}", call);
        assert_timestamp(&record["updated_at"])?;
        prop_assert!(
            str_of(&record["updated_at"]) > str_of(&self.updated_at),
            "{}: updated_at went from {} to {}",
            call,
            self.updated_at,
            record["updated_at"]
        );
        self.updated_at = record["updated_at"].clone();
        Ok(())
    }
}

/// A stored dashboard's timestamps (dashboard responses do not carry them).
async fn stored_timestamps(api: &Api, id: &str) -> Value {
    let stored = api.service.storage().dashboard(id).await;
    let stored = stored
        .expect("storage answers")
        .expect("the dashboard is stored");
    json!({
        "inserted_at": stored.inserted_at.to_string(),
        "updated_at": stored.updated_at.to_string(),
    })
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn updated_at_strictly_increases_and_inserted_at_stays(steps in vec(step(), 1..8)) {
        run(async {
            let api = fresh_api();
            let db = api.create_database(&dbconsole_tests::minimal_database()).await;
            let db_path = database_path(str_of(&db["id"]));
            let setup_path = format!("{DATABASES}/setup");
            let answer = api.db(Method::PUT, &setup_path, Some(&setup_database())).await;
            let setup = expect_status(answer, 200, "setup")?;
            let dash = api.create_dashboard(&dbconsole_tests::minimal_dashboard()).await;
            let dash_path = dashboard_path(str_of(&dash["id"]));

            let mut db_clock = Clock::of(&db)?;
            let mut setup_clock = Clock::of(&setup)?;
            let mut dash_clock = Clock::of(&stored_timestamps(&api, str_of(&dash["id"])).await)?;

            for step in &steps {
                match step {
                    Step::PatchDatabase(fields) => {
                        let body = Value::Object(fields_json(fields));
                        let answer = api.db(Method::PATCH, &db_path, Some(&body)).await;
                        let updated = expect_status(answer, 200, "update")?;
                        db_clock.advance(&updated, "update")?;
                        let retrieved = api.db(Method::GET, &db_path, None).await.json();
                        prop_assert_eq!(&retrieved, &updated);
                    }
                    Step::Setup(body) => {
                        let answer = api.db(Method::PUT, &setup_path, Some(body)).await;
                        let updated = expect_status(answer, 200, "setup")?;
                        prop_assert_eq!(&updated["id"], &setup["id"], "setup made a new database");
                        setup_clock.advance(&updated, "setup")?;
                    }
                    Step::PutDashboard(body) => {
                        let answer = api.dash(Method::PUT, &dash_path, Some(body)).await;
                        expect_status(answer, 200, "dashboard update")?;
                        // Dashboard responses carry no timestamps: read them from the store.
                        let record = stored_timestamps(&api, str_of(&dash["id"])).await;
                        dash_clock.advance(&record, "dashboard update")?;
                    }
                }
            }
            Ok(())
        })?;
    }
}
