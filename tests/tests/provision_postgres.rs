//! Provisioning on a real PostgreSQL (`.ci/db-servers-up.sh`; docs/data-protection.md,
//! "Provisioning"): on database `provdb`, whose tables belong to the non-superuser `dp_app`,
//! with only the provisioning credential (`dp_app`) and the policies set through the API, a
//! protected run answers masked values with no SQL typed by hand; the plan is the statements
//! with their reasons; applying twice leaves the second plan empty; a new column and a new
//! table are readable after the next apply while protected values stay out; two concurrent
//! applies end with one plan applied once.

mod run_support;

use run_support::provision::{Setup, statements};
use run_support::*;
use serde_json::{Value, json};

const PORT: u16 = 5432;

async fn app_owner() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={PORT} user=dp_app password={PASSWORD} dbname=provdb"),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "PostgreSQL's provdb is not reachable as dp_app ({error}): start the test database \
             servers with `sudo bash .ci/db-servers-up.sh`"
        )
    });
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisioning_sets_protection_up_and_keeps_it() {
    let owner = app_owner().await;
    let s = format!("app_{}", std::process::id());
    let masks = format!("prov_reader_mask_{s}");
    owner
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {masks} CASCADE; DROP SCHEMA IF EXISTS {s} CASCADE;
             CREATE SCHEMA {s};
             CREATE TABLE {s}.users (id int PRIMARY KEY, name text, email text, ssn text);
             INSERT INTO {s}.users VALUES
               (1, 'Alice', 's3cr3t.alice@leak.test', '999-11-0001'),
               (2, 'Bob', NULL, '999-11-0002');
             CREATE TABLE {s}.orders (id int PRIMARY KEY, user_id int, total numeric);
             INSERT INTO {s}.orders VALUES (10, 1, 12.50);
             CREATE VIEW {s}.contacts AS SELECT id, email FROM {s}.users;
             GRANT SELECT ON {s}.contacts TO PUBLIC;
             GRANT SELECT (id) ON {s}.contacts TO prov_reader;"
        ))
        .await
        .unwrap();
    let console = redb_run_console();
    let (db, credentials) = console
        .database(
            "postgres",
            PORT,
            json!({"database": "provdb",
                   "connection_parameters": [{"name": "search_path", "value": s}]}),
            json!([{"username": "prov_reader", "password": PASSWORD}]),
        )
        .await;
    let setup = Setup {
        console,
        db,
        credential: credentials[0].clone(),
    };
    // No plan without a provisioning credential.
    let refused = setup
        .console
        .send(
            http::Method::GET,
            &format!(
                "/api/v1/console/databases/{}/data-protection/plan",
                setup.db
            ),
            None,
            None,
            None,
        )
        .await
        .expect(422)
        .text();
    assert!(refused.contains("no provisioning credential"), "{refused}");
    let document = json!({
        "policies": [{"name": "pii", "columns": [
            {"column": "users.email", "action": "mask", "mask": "email"},
            {"column": "users.ssn", "action": "hide"},
        ]}],
        "provisioning": {"username": "dp_app", "password": PASSWORD, "schemas": [s]},
    });
    let saved = setup
        .send(http::Method::PUT, "/data-protection", Some(&document))
        .await;
    assert_eq!(
        saved["provisioning"],
        json!({"username": "dp_app", "schemas": [s], "auto_apply": false}),
        "the password is never answered: {saved}"
    );
    assert!(!saved.to_string().contains(PASSWORD), "{saved}");
    assert_eq!(
        setup
            .console
            .send(
                http::Method::GET,
                &format!(
                    "/api/v1/console/databases/{}/data-protection/provisioning/check-connection",
                    setup.db
                ),
                None,
                None,
                None,
            )
            .await
            .expect(200)
            .text(),
        "ok"
    );
    // Before: the login reads nothing.
    let (status, _) = setup.run("SELECT id FROM users").await;
    assert_eq!(status, 422);
    let plan = setup.plan().await;
    assert_eq!(plan["empty"], false, "{plan}");
    let sql = statements(&plan);
    for expected in [
        // A view that reads a protected column with its owner's rights: no one reads it.
        format!("REVOKE SELECT ON \"{s}\".\"contacts\" FROM PUBLIC"),
        format!("REVOKE SELECT (\"id\") ON \"{s}\".\"contacts\" FROM \"prov_reader\""),
        format!("GRANT USAGE ON SCHEMA \"{s}\" TO \"prov_reader\""),
        format!("GRANT SELECT (\"id\", \"name\") ON \"{s}\".\"users\" TO \"prov_reader\""),
        format!("GRANT SELECT ON \"{s}\".\"orders\" TO \"prov_reader\""),
        format!("CREATE SCHEMA \"{masks}\""),
        format!("GRANT SELECT ON \"{masks}\".\"users\" TO \"prov_reader\""),
    ] {
        assert!(sql.contains(&expected), "{expected} in {sql:#?}");
    }
    assert!(
        plan["roles"][0]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|step| !step["reason"].as_str().unwrap().is_empty()),
        "every statement has its reason: {plan}"
    );
    let applied = setup.apply().await;
    assert_eq!(applied["applied"], json!(sql.len()), "{applied}");
    let second = setup.plan().await;
    assert_eq!(
        second["empty"], true,
        "applying twice: the second plan is empty: {second}"
    );
    assert_eq!(setup.apply().await["applied"], 0);
    let audit = setup
        .console
        .send(
            http::Method::GET,
            &format!("/api/v1/console/audit?resource={}", setup.db),
            None,
            None,
            None,
        )
        .await
        .expect(200)
        .json();
    let applies: Vec<&Value> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "data_protection.apply")
        .collect();
    assert_eq!(
        applies.len(),
        1,
        "one event per apply that changed something: {audit}"
    );
    // Masked, with no SQL typed by hand.
    let status = setup
        .send(http::Method::GET, "/data-protection/status", None)
        .await;
    assert_eq!(status["credentials"][0]["status"], "verified", "{status}");
    let (code, rows) = setup.run("SELECT * FROM users ORDER BY id").await;
    assert_eq!(code, 200, "{rows}");
    assert_eq!(
        rows["rows"],
        json!([[1, "Alice", "****@leak.test"], [2, "Bob", null]]),
        "{rows}"
    );
    assert_eq!(rows["columns"][2]["type"], "masked");
    for sql in [
        "SELECT ssn FROM users".to_owned(),
        format!("SELECT email FROM {s}.users"),
    ] {
        let (code, answer) = setup.run(&sql).await;
        assert_eq!(code, 422, "{sql}: {answer}");
        assert!(!answer.to_string().contains("999-11"), "{answer}");
        assert!(!answer.to_string().contains("s3cr3t"), "{answer}");
    }
    // Exemptions: a policy may name who sees the values; an exempt caller runs as the
    // provisioning credential, unprotected (and its run event names that credential).
    let mut exempting = document.clone();
    exempting["policies"][0]["exempt"] = json!([{"subject_kind": "group", "subject": "auditors"}]);
    exempting["provisioning"]
        .as_object_mut()
        .unwrap()
        .remove("password");
    setup
        .send(http::Method::PUT, "/data-protection", Some(&exempting))
        .await;
    let carol = dbconsole_core::model::Principal::member("carol@example.com").groups(["auditors"]);
    let (_, answer) = setup
        .console
        .query(
            &carol,
            &setup.db,
            &setup.credential,
            "SELECT email, ssn FROM users ORDER BY id",
            None,
            None,
        )
        .await;
    let clear = answer.json();
    assert_eq!(
        clear["rows"],
        json!([
            ["s3cr3t.alice@leak.test", "999-11-0001"],
            [null, "999-11-0002"]
        ]),
        "{clear}"
    );
    let (code, masked) = setup.run("SELECT email FROM users ORDER BY id").await;
    assert_eq!(
        (code, masked["rows"].clone()),
        (200, json!([["****@leak.test"], [null]]))
    );
    // An exempt caller's query still waits for the approvals its credential needs.
    setup
        .console
        .send(
            http::Method::PATCH,
            &format!("/api/v1/console/databases/{}", setup.db),
            None,
            None,
            Some(&json!({"credentials": [{"id": setup.credential, "reviews_required": 1}]})),
        )
        .await
        .expect(200);
    let created = setup
        .console
        .create_query(
            &carol,
            &setup.db,
            &setup.credential,
            "SELECT ssn FROM users",
            None,
        )
        .await
        .expect(200)
        .json();
    let waiting = setup
        .console
        .send(
            http::Method::POST,
            &format!(
                "/api/v1/console/queries/{}/run",
                created["id"].as_str().unwrap()
            ),
            Some(carol.clone()),
            None,
            None,
        )
        .await;
    assert_eq!(waiting.status.as_u16(), 409, "{}", waiting.text());
    assert!(!waiting.text().contains("999-11"), "{}", waiting.text());
    setup
        .console
        .send(
            http::Method::PATCH,
            &format!("/api/v1/console/databases/{}", setup.db),
            None,
            None,
            Some(&json!({"credentials": [{"id": setup.credential, "reviews_required": 0}]})),
        )
        .await
        .expect(200);
    // Without the provisioning credential, exemptions are refused.
    let mut orphan = exempting.clone();
    orphan["provisioning"] = Value::Null;
    let refused = setup
        .console
        .send(
            http::Method::PUT,
            &format!("/api/v1/console/databases/{}/data-protection", setup.db),
            None,
            None,
            Some(&orphan),
        )
        .await
        .expect(422)
        .text();
    assert!(refused.contains("exempts someone"), "{refused}");
    setup
        .send(
            http::Method::PUT,
            "/data-protection",
            Some(&{
                let mut d = document.clone();
                d["provisioning"]
                    .as_object_mut()
                    .unwrap()
                    .remove("password");
                d
            }),
        )
        .await;
    // A new table: the login verifies (it can't read it) but is out of date, saying what
    // the plan would change.
    owner
        .batch_execute(&format!("CREATE TABLE {s}.extra (id int)"))
        .await
        .unwrap();
    let status = setup
        .send(http::Method::GET, "/data-protection/status", None)
        .await;
    let credential = &status["credentials"][0];
    assert_eq!(credential["status"], "out_of_date", "{status}");
    assert_eq!(credential["managed"], true, "{status}");
    assert_eq!(
        credential["plan"][0]["sql"],
        json!(format!(
            "GRANT SELECT ON \"{s}\".\"extra\" TO \"prov_reader\""
        )),
        "{status}"
    );
    assert_eq!(status["provisioning"]["empty"], false, "{status}");
    owner
        .batch_execute(&format!("DROP TABLE {s}.extra"))
        .await
        .unwrap();
    // The catalog moves: a column and a table. Runs are refused until the plan is applied
    // (the masking view is no longer the table's), then the new column and table read.
    owner
        .batch_execute(&format!(
            "ALTER TABLE {s}.users ADD COLUMN city text;
             UPDATE {s}.users SET city = 'Paris';
             CREATE TABLE {s}.invoices (id int, amount int); INSERT INTO {s}.invoices VALUES (7, 70);"
        ))
        .await
        .unwrap();
    let (code, _) = setup.run("SELECT id FROM orders").await;
    assert_eq!(code, 422, "refused while out of date");
    let moved = setup.plan().await;
    let sql = statements(&moved);
    assert!(
        sql.iter().any(|q| q.contains("\"city\"")) && sql.iter().any(|q| q.contains("invoices")),
        "{sql:#?}"
    );
    // Two applies at once (two nodes would do the same: the lock is the database's): the
    // plan is applied once.
    let (a, b) = tokio::join!(setup.apply(), setup.apply());
    assert_eq!(
        a["applied"].as_u64().unwrap() + b["applied"].as_u64().unwrap(),
        sql.len() as u64,
        "{a} {b}"
    );
    assert_eq!(setup.plan().await["empty"], true);
    let (code, rows) = setup
        .run("SELECT u.id, u.email, u.city, i.amount FROM users u, invoices i ORDER BY 1")
        .await;
    assert_eq!(code, 200, "{rows}");
    assert_eq!(
        rows["rows"],
        json!([[1, "****@leak.test", "Paris", 70], [2, null, "Paris", 70]])
    );
    let (code, answer) = setup.run("SELECT ssn FROM users").await;
    assert_eq!(code, 422, "{answer}");
    // With auto_apply, the status applies what moved before it checks.
    let mut document = document;
    document["provisioning"]["auto_apply"] = json!(true);
    document["provisioning"]
        .as_object_mut()
        .unwrap()
        .remove("password");
    setup
        .send(http::Method::PUT, "/data-protection", Some(&document))
        .await;
    owner
        .batch_execute(&format!(
            "CREATE TABLE {s}.later (id int); INSERT INTO {s}.later VALUES (5)"
        ))
        .await
        .unwrap();
    let status = setup
        .send(http::Method::GET, "/data-protection/status", None)
        .await;
    assert_eq!(status["credentials"][0]["status"], "verified", "{status}");
    assert_eq!(status["provisioning"]["empty"], true, "{status}");
    let (code, rows) = setup.run("SELECT id FROM later").await;
    assert_eq!((code, rows["rows"].clone()), (200, json!([[5]])), "{rows}");
    // Removing the policies: the plan drops the masking view and grants the columns back.
    let document = json!({
        "policies": [],
        "provisioning": {"username": "dp_app", "schemas": [s]},
    });
    setup
        .send(http::Method::PUT, "/data-protection", Some(&document))
        .await;
    let removed = statements(&setup.plan().await);
    assert!(
        removed.contains(&format!("DROP VIEW \"{masks}\".\"users\"")),
        "{removed:#?}"
    );
    owner
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {masks} CASCADE; DROP SCHEMA {s} CASCADE"
        ))
        .await
        .unwrap();
}
