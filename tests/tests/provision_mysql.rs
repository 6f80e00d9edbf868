//! Provisioning and masking on a real MariaDB (`.ci/db-servers-up.sh`; docs/data-protection.md,
//! "Provisioning" and "Masking on MariaDB"): on a fresh database `mprovdb_<pid>`, whose tables
//! belong to `mp_app` (no administrator), with only the provisioning credential (`mp_app`) and
//! the policies set through the API, a protected run answers masks (e-mail, partial, the full
//! mask of a generated column computed from a masked one) through the login's shadow database,
//! with no SQL typed by hand; applying twice leaves the second plan empty; a definer's view
//! made by hand in the shadow database that shows a value in clear is refused; a new column
//! and a new table are readable after the next apply while protected values stay out; two
//! concurrent applies apply the plan once; an exempt caller reads the values; a member applies
//! with an `admin` grant on the database and is refused without one; when the database moves,
//! the stored passwords go nowhere until they are given again.

mod run_support;

use mysql_async::prelude::Queryable as _;
use run_support::provision::{Setup, statements};
use run_support::*;
use serde_json::{Value, json};

const PORT: u16 = 3306;

/// A session of `mp_app`, the owner, on `database` (none: no default).
async fn owner(database: Option<&str>) -> mysql_async::Conn {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(PORT)
        .user(Some("mp_app"))
        .pass(Some(PASSWORD))
        .db_name(database)
        .prefer_socket(false);
    mysql_async::Conn::new(opts).await.unwrap_or_else(|error| {
        panic!(
            "MariaDB is not reachable as mp_app ({error}): start the test database servers with \
             `sudo bash .ci/db-servers-up.sh`"
        )
    })
}

fn assert_no_secret(answer: &Value) {
    let text = answer.to_string();
    for secret in ["s3cr3t", "999-11", "555-0100"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisioning_masks_on_mariadb_and_keeps_it() {
    let d = format!("mprovdb_{}", std::process::id());
    let shadow = format!("mprov_reader_mask_{d}");
    let mut root = owner(None).await;
    // What an earlier run left (its shadow database would be another of the login's views
    // with its definer's rights, which the verification refuses).
    let left: Vec<String> = root
        .query(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA \
             WHERE SCHEMA_NAME LIKE 'mprov\\_reader\\_mask\\_mprovdb\\_%' \
             OR SCHEMA_NAME LIKE 'mprovdb\\_%'",
        )
        .await
        .unwrap();
    let mut fresh: Vec<String> = left
        .iter()
        .map(|name| format!("DROP DATABASE `{name}`"))
        .collect();
    fresh.push(format!("CREATE DATABASE `{d}`"));
    seed(&mut root, &fresh).await;
    let mut app = owner(Some(&d)).await;
    seed(
        &mut app,
        &[
            "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(32), email VARCHAR(64), \
             phone VARCHAR(16), ssn VARCHAR(16), email_norm VARCHAR(64) AS (LOWER(email)) VIRTUAL)"
                .to_owned(),
            "INSERT INTO users (id, name, email, phone, ssn) VALUES \
             (1, 'Alice', 's3cr3t.alice@leak.test', '555-0100-4444', '999-11-0001'), \
             (2, 'Bob', NULL, '12', '999-11-0002')"
                .to_owned(),
            "CREATE TABLE orders (id INT PRIMARY KEY, user_id INT, total DECIMAL(8,2))".to_owned(),
            "INSERT INTO orders VALUES (10, 1, 12.50)".to_owned(),
        ],
    )
    .await;
    let console = redb_run_console();
    let (db, credentials) = console
        .database(
            "mysql",
            PORT,
            json!({"database": d}),
            json!([{"username": "mprov_reader", "password": PASSWORD}]),
        )
        .await;
    let setup = Setup {
        console,
        db,
        credential: credentials[0].clone(),
    };
    let document = json!({
        "policies": [{"name": "pii", "columns": [
            {"column": "users.email", "action": "mask", "mask": "email"},
            {"column": "users.phone", "action": "mask", "mask": "partial", "keep_last": 4},
            {"column": "users.ssn", "action": "hide"},
        ]}],
        "provisioning": {"username": "mp_app", "password": PASSWORD},
    });
    setup
        .send(http::Method::PUT, "/data-protection", Some(&document))
        .await;
    let checked = setup
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
        .text();
    assert_eq!(checked, "ok");
    // The catalog the column picker reads: every column, as the provisioning login sees it.
    let catalog = setup
        .send(http::Method::GET, "/data-protection/catalog", None)
        .await;
    let names: Vec<String> = catalog["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}.{}",
                c["table"].as_str().unwrap(),
                c["column"].as_str().unwrap()
            )
        })
        .collect();
    assert!(names.contains(&"users.ssn".to_owned()), "{names:?}");
    // Before: the login reads nothing.
    let (code, answer) = setup.run("SELECT id FROM orders").await;
    assert_ne!(code, 200, "{answer}");
    let plan = setup.plan().await;
    assert_eq!(plan["empty"], false, "{plan}");
    let sql = statements(&plan);
    let account = "'mprov_reader'@'%'";
    for expected in [
        format!("GRANT SELECT (`id`, `name`) ON `{d}`.`users` TO {account}"),
        format!("GRANT SELECT ON `{d}`.`orders` TO {account}"),
        format!("CREATE DATABASE `{shadow}`"),
        format!("GRANT SELECT, SHOW VIEW ON `{shadow}`.`users` TO {account}"),
        format!(
            "CREATE OR REPLACE SQL SECURITY INVOKER VIEW `{shadow}`.`orders` AS select \
             `{d}`.`orders`.`id` AS `id`,`{d}`.`orders`.`user_id` AS `user_id`,\
             `{d}`.`orders`.`total` AS `total` from `{d}`.`orders`"
        ),
    ] {
        assert!(sql.contains(&expected), "{expected} in {sql:#?}");
    }
    let masking = sql
        .iter()
        .find(|s| {
            s.starts_with(&format!(
                "CREATE OR REPLACE SQL SECURITY DEFINER VIEW `{shadow}`.`users`"
            ))
        })
        .unwrap_or_else(|| panic!("the masking view in {sql:#?}"));
    assert!(
        !masking.contains("ssn"),
        "a hidden column is left out: {masking}"
    );
    // A member applies only with an admin grant on the database (alice may query it, dana
    // administers it).
    setup
        .send(
            http::Method::PUT,
            "/permissions",
            Some(&json!({"permissions": [
                {"subject_kind": "user", "subject": "dana@example.com", "access": "admin"},
                {"subject_kind": "user", "subject": "alice@example.com", "access": "query"},
            ]})),
        )
        .await;
    let as_member = |who: &str| {
        let principal = dbconsole_core::model::Principal::member(who);
        let path = format!(
            "/api/v1/console/databases/{}/data-protection/apply",
            setup.db
        );
        let console = &setup.console;
        async move {
            console
                .send(http::Method::POST, &path, Some(principal), None, None)
                .await
        }
    };
    let refused = as_member("alice@example.com").await;
    assert_eq!(refused.status.as_u16(), 403, "{}", refused.text());
    assert!(refused.text().contains("admin grant"), "{}", refused.text());
    assert_eq!(
        setup.plan().await["empty"],
        false,
        "a refused apply changes nothing"
    );
    let applied = as_member("dana@example.com").await.expect(200).json();
    assert_eq!(applied["applied"], json!(sql.len()), "{applied}");
    let second = setup.plan().await;
    assert_eq!(
        second["empty"], true,
        "applying twice: the second plan is empty: {second}"
    );
    assert_eq!(setup.apply().await["applied"], 0);
    // Masked, with no SQL typed by hand.
    let status = setup.status().await;
    assert_eq!(status["credentials"][0]["status"], "verified", "{status}");
    let (code, rows) = setup.run("SELECT * FROM users ORDER BY id").await;
    assert_eq!(code, 200, "{rows}");
    assert_eq!(
        rows["rows"],
        json!([
            [1, "Alice", "****@leak.test", "****4444", "****"],
            [2, "Bob", null, "****", null]
        ]),
        "{rows}"
    );
    let types: Vec<&str> = rows["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types[2..], ["masked", "masked", "masked"], "{rows}");
    for sql in [
        "SELECT ssn FROM users".to_owned(),
        format!("SELECT email FROM `{d}`.users"),
        format!("SELECT id FROM `{d}`.users WHERE ssn LIKE '999%'"),
        format!("SELECT email_norm FROM `{d}`.users"),
    ] {
        let (code, answer) = setup.run(&sql).await;
        assert_ne!(code, 200, "{sql}: {answer}");
        assert_no_secret(&answer);
    }
    // A view made by hand in the shadow database, with the definer's rights, showing a value
    // in clear: refused, saying so; the next apply puts the masking view back.
    seed(
        &mut app,
        &[format!(
            "CREATE OR REPLACE SQL SECURITY DEFINER VIEW `{shadow}`.`users` AS \
             SELECT id, name, email FROM `{d}`.users"
        )],
    )
    .await;
    let (code, answer) = setup.run("SELECT id FROM orders").await;
    assert_eq!(code, 422, "{answer}");
    assert!(
        answer.to_string().contains("not what the policies make"),
        "{answer}"
    );
    assert_no_secret(&answer);
    assert_eq!(setup.apply().await["applied"], 1);
    // Exemptions: an exempt caller runs as the provisioning credential and reads the values.
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
    let (code, clear) = setup
        .run_as(&carol, "SELECT email, ssn FROM users ORDER BY id")
        .await;
    assert_eq!(code, 200, "{clear}");
    assert_eq!(
        clear["rows"],
        json!([
            ["s3cr3t.alice@leak.test", "999-11-0001"],
            [null, "999-11-0002"]
        ])
    );
    let (code, masked) = setup.run("SELECT email FROM users ORDER BY id").await;
    assert_eq!(
        (code, masked["rows"].clone()),
        (200, json!([["****@leak.test"], [null]]))
    );
    // The catalog moves: a column and a table. The login still verifies (it reads neither),
    // out of date with what the plan would change; after the apply both read, masks kept.
    seed(
        &mut app,
        &[
            "ALTER TABLE users ADD COLUMN city VARCHAR(16)".to_owned(),
            "UPDATE users SET city = 'Paris'".to_owned(),
            "CREATE TABLE invoices (id INT, amount INT)".to_owned(),
            "INSERT INTO invoices VALUES (7, 70)".to_owned(),
        ],
    )
    .await;
    let status = setup.status().await;
    assert_eq!(
        status["credentials"][0]["status"], "out_of_date",
        "{status}"
    );
    assert_eq!(status["credentials"][0]["managed"], true, "{status}");
    let moved = statements(&setup.plan().await);
    assert!(
        moved.iter().any(|q| q.contains("`city`")) && moved.iter().any(|q| q.contains("invoices")),
        "{moved:#?}"
    );
    let (a, b) = tokio::join!(setup.apply(), setup.apply());
    assert_eq!(
        a["applied"].as_u64().unwrap() + b["applied"].as_u64().unwrap(),
        moved.len() as u64,
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
    // Removing the policies: the plan grants the table back and drops the shadow database.
    setup
        .send(
            http::Method::PUT,
            "/data-protection",
            Some(&json!({"policies": [], "provisioning": {"username": "mp_app"}})),
        )
        .await;
    let removed = statements(&setup.plan().await);
    assert!(
        removed.contains(&format!("GRANT SELECT ON `{d}`.`users` TO {account}"))
            && removed.contains(&format!("DROP DATABASE `{shadow}`")),
        "{removed:#?}"
    );
    setup.apply().await;
    assert_eq!(setup.plan().await["empty"], true);
    let (code, rows) = setup.run("SELECT email FROM users ORDER BY id").await;
    assert_eq!(code, 200, "{rows}");
    assert_eq!(rows["rows"], json!([["s3cr3t.alice@leak.test"], [null]]));
    // The database moves (another host name for the same server): the stored passwords, the
    // credential's and the provisioning login's, go nowhere until they are given again.
    setup
        .send(
            http::Method::PATCH,
            "",
            Some(&json!({"hostname": "localhost"})),
        )
        .await;
    let (code, held) = setup.run("SELECT id FROM orders").await;
    assert_eq!(code, 422, "{held}");
    assert!(held.to_string().contains("given again"), "{held}");
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
    assert!(refused.contains("given again"), "{refused}");
    setup
        .send(
            http::Method::PUT,
            "/data-protection",
            Some(&json!({"policies": [],
                          "provisioning": {"username": "mp_app", "password": PASSWORD}})),
        )
        .await;
    assert_eq!(setup.plan().await["empty"], true);
    seed(
        &mut root,
        &[
            format!("DROP DATABASE IF EXISTS `{shadow}`"),
            format!("DROP DATABASE IF EXISTS `{d}`"),
        ],
    )
    .await;
}
