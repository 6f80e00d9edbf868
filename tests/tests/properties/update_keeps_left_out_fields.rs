//! Property 2 (databases): fields left out of a PATCH never move; credentials that carry their
//! id keep it, and their left-out fields (the password included) keep their values.

use std::sync::Arc;

use dbconsole_tests::DATABASES;
use http::Method;
use proptest::prelude::*;
use serde_json::Value;

use crate::model::*;
use crate::strategies::*;
use crate::support::*;

async fn update_keeps_left_out_fields(create: CreateBody, mut patch: Patch) -> Checked {
    verify_only_with_ca(
        &mut patch.fields,
        create.tls.ca.is_some() || patch.ca.is_some(),
    );
    let recorder = Arc::new(RecordingChecker::default());
    let api = api_checked_by(recorder.clone());
    let answer = api.db(Method::POST, DATABASES, Some(&create.json())).await;
    let before = expect_status(answer, 200, "create")?;
    let held: Vec<Held> = credentials_of(&before)
        .iter()
        .zip(create.passwords())
        .map(|(view, password)| Held {
            view: view.as_object().cloned().unwrap_or_default(),
            password,
            kept: true,
        })
        .collect();
    let resolved = patch.resolve(&held);
    let path = database_path(str_of(&before["id"]));
    let answer = api.db(Method::PATCH, &path, Some(&resolved.body)).await;

    if resolved.conflict {
        let refused = expect_status(answer, 422, "update with a username twice")?;
        prop_assert!(refused["errors"]["credentials"].is_array(), "{}", refused);
        let retrieved = api.db(Method::GET, &path, None).await.json();
        prop_assert_eq!(retrieved, before);
        return Ok(());
    }
    let after = expect_status(answer, 200, "update")?;
    let retrieved = expect_status(api.db(Method::GET, &path, None).await, 200, "retrieve")?;
    prop_assert_eq!(&retrieved, &after);

    for key in ["id", "api_id", "inserted_at"] {
        prop_assert_eq!(&after[key], &before[key], "{}", key);
    }
    for key in DATABASE_FIELDS {
        let expected = expect_of(&patch.fields, key).unwrap_or_else(|| before[key].clone());
        prop_assert_eq!(&after[key], &expected, "{}", key);
    }

    let held_after = match &resolved.credentials {
        None => {
            prop_assert_eq!(&after["credentials"], &before["credentials"]);
            held
        }
        Some(expected) => {
            let actual = credentials_of(&after);
            prop_assert_eq!(actual.len(), expected.len());
            let stored: Vec<&Value> = credentials_of(&before).iter().map(|c| &c["id"]).collect();
            for (actual, (kept_id, held)) in actual.iter().zip(expected) {
                match kept_id {
                    Some(id) => prop_assert_eq!(&actual["id"], id, "a kept credential's id"),
                    None => {
                        assert_id(&actual["id"], "crd")?;
                        prop_assert!(
                            !stored.contains(&&actual["id"]),
                            "a new one got a stored id"
                        );
                    }
                }
                prop_assert_eq!(without_id(actual), Value::Object(held.view.clone()));
            }
            expected.iter().map(|(_, held)| held.clone()).collect()
        }
    };

    // What is not in a response (passwords, certificates) is what the checker is handed.
    let tls = Tls {
        ca: patch.ca.clone().or(create.tls.ca.clone()),
        ..create.tls.clone()
    };
    // A kept password goes only where it was given for: one whose destination the update
    // moved (the adapter, its host, the port, tunnel or TLS, another CA certificate) is held
    // back.
    let stored: Vec<Value> = credentials_of(&before).to_vec();
    let passwords: Vec<Result<Option<String>, ()>> = held_after
        .into_iter()
        .zip(credentials_of(&after))
        .map(|(h, view)| {
            let moved = patch.ca.is_some()
                || stored
                    .iter()
                    .find(|c| c["id"] == view["id"])
                    .is_some_and(|c| destination(&before, c) != destination(&after, view));
            if h.kept && h.password.is_some() && moved {
                Err(())
            } else {
                Ok(h.password)
            }
        })
        .collect();
    assert_connections(&api, &recorder, &after, &passwords, &tls).await
}

/// Where `credential`'s password goes, as the responses show it: adapter, host (the
/// credential's, else the database's), effective port, tunnel, TLS and host name verification.
fn destination(db: &Value, credential: &Value) -> Value {
    let adapter = str_of(&db["adapter"]);
    let ssl = db["ssl"] == Value::Bool(true);
    let default = match adapter {
        "postgres" => 5432,
        "mysql" => 3306,
        "clickhouse" if ssl => 8443,
        "clickhouse" => 8123,
        "sqlserver" => 1433,
        _ => 1521,
    };
    let port = db["port"].as_u64().unwrap_or(default);
    serde_json::json!([
        adapter,
        if credential["hostname"].is_null() {
            &db["hostname"]
        } else {
            &credential["hostname"]
        },
        port,
        db["tunnel_id"],
        ssl,
        db["verify_server_hostname"]
    ])
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn fields_left_out_of_an_update_never_move(create in create_body(), patch in patch()) {
        run(update_keeps_left_out_fields(create, patch))?;
    }
}
