//! The PostgreSQL wire door against the real binary, real PostgreSQL (the CI's, on
//! 127.0.0.1:5432: `checkdb`, `checker`/`checkpw`) and Debian's psql 15 (docs/door.md).
//! psql or the server missing fails these tests: they never pass without running.

mod support;

use std::time::Duration;

use serde_json::json;
use support::dbconsole;
use support::door::{Door, direct, driver, psql};
use support::request;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_connects_over_tls_only_and_sees_what_the_credential_sees() {
    let door = Door::start(&[]).await;
    door.database("checkdb", json!({})).await;
    let ann = door.key("ann@example.com").await;
    let who = door
        .psql(
            "ann@example.com",
            &ann,
            "checkdb",
            &["-Atc", "select current_user", "-c", "\\conninfo"],
        )
        .await;
    assert!(who.ok, "{who:?}");
    assert!(who.out.starts_with("checker\n"), "{who:?}");
    assert!(
        who.out.contains("SSL connection (protocol: TLSv1."),
        "{who:?}"
    );
    // psql's catalog commands print what they print connected directly as the same role.
    for command in ["\\dt", "\\l", "\\dn", "\\d pg_catalog.pg_am"] {
        let through = door
            .psql("ann@example.com", &ann, "checkdb", &["-c", command])
            .await;
        let there = direct(&["-c", command]).await;
        assert!(through.ok, "{command}: {through:?}");
        assert_eq!(through.out, there.out, "{command}");
    }
    // Two statements in one -c: both answered, in order.
    let two = door
        .psql(
            "ann@example.com",
            &ann,
            "checkdb",
            &["-Atc", "select 'first'; select 'second'"],
        )
        .await;
    assert_eq!(two.out, "first\nsecond\n", "{two:?}");

    let plain = psql(
        &door.conninfo("ann@example.com", "checkdb", "disable"),
        &ann,
        &["-c", "select 1"],
    )
    .await;
    assert!(!plain.ok);
    assert!(
        plain.err.contains("accepts connections over TLS only"),
        "{plain:?}"
    );
    let wrong = door
        .psql(
            "ann@example.com",
            "dbc_ak_wrong",
            "checkdb",
            &["-c", "select 1"],
        )
        .await;
    assert!(!wrong.ok);
    assert!(
        wrong
            .err
            .contains("password authentication failed for user \"ann@example.com\""),
        "{wrong:?}"
    );
    // Another person's key does not sign in as ann.
    let bo = door.key("bo@example.com").await;
    let borrowed = door
        .psql("ann@example.com", &bo, "checkdb", &["-c", "select 1"])
        .await;
    assert!(!borrowed.ok, "{borrowed:?}");
    let refused = door
        .admin("GET", "/api/v1/console/audit?action=session.refused", None)
        .await;
    let refusals = refused["data"].as_array().unwrap();
    assert!(refusals.len() >= 2, "{refused}");
    assert!(!refused.to_string().contains("dbc_ak_wrong"));
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_statements_run_nothing_and_say_why() {
    let door = Door::start(&[]).await;
    door.database("checkdb", json!({})).await;
    let ann = door.key("ann@example.com").await;
    let run = |args: &'static [&'static str]| door.psql("ann@example.com", &ann, "checkdb", args);
    let copy = run(&["-c", "\\copy (select 1) to stdout"]).await;
    assert!(!copy.ok);
    assert!(
        copy.err.contains("COPY does not go through the door"),
        "{copy:?}"
    );
    assert!(copy.err.contains("HINT:"), "{copy:?}");
    // One refused part refuses the whole text before any part runs.
    let mixed = run(&[
        "-Atc",
        "create temp table door_probe (n int); copy (select 1) to stdout",
    ])
    .await;
    assert!(!mixed.ok);
    let after = run(&[
        "-Atc",
        "select count(*) from pg_class where relname = 'door_probe'",
    ])
    .await;
    assert_eq!(after.out, "0\n", "{after:?}");
    for text in [
        "set role postgres",
        "set session authorization postgres",
        "select set_config('role', 'postgres', false)",
    ] {
        let refused = door
            .psql("ann@example.com", &ann, "checkdb", &["-c", text])
            .await;
        assert!(!refused.ok, "{text}");
        assert!(
            refused.err.contains("keeps the role of its credential"),
            "{text}: {refused:?}"
        );
    }
    // The door reads a text as the database does: what could make them read it otherwise
    // (standard strings off, a client encoding whose characters can hide a quote) is refused,
    // and a `$` after an identifier past ASCII opens no dollar quote that could hide a COPY.
    for text in [
        "set standard_conforming_strings = off",
        "select set_config('standard_conforming_strings', 'off', false)",
        "set client_encoding = 'SJIS'",
    ] {
        let refused = door
            .psql("ann@example.com", &ann, "checkdb", &["-c", text])
            .await;
        assert!(!refused.ok, "{text}: {refused:?}");
        assert!(
            refused
                .err
                .contains("standard strings and its client encoding"),
            "{text}: {refused:?}"
        );
    }
    let hidden = run(&[
        "-Atc",
        "select 1 as é$a$; copy (select 1) to stdout; select 2 as é$a$",
    ])
    .await;
    assert!(!hidden.ok);
    assert!(
        hidden.err.contains("COPY does not go through the door"),
        "{hidden:?}"
    );
    let sjis = psql(
        &format!(
            "{} client_encoding=SJIS",
            door.conninfo("ann@example.com", "checkdb", "require")
        ),
        &ann,
        &["-c", "select 1"],
    )
    .await;
    assert!(!sjis.ok);
    assert!(
        sjis.err.contains("does not take the client encoding"),
        "{sjis:?}"
    );
    // After a refusal inside a transaction, the transaction is aborted as PostgreSQL does.
    let tx = run(&[
        "-v",
        "ON_ERROR_STOP=0",
        "-Atc",
        "begin",
        "-c",
        "listen x",
        "-c",
        "select 1",
        "-c",
        "rollback",
    ])
    .await;
    assert!(
        tx.err.contains("LISTEN does not go through the door"),
        "{tx:?}"
    );
    assert!(tx.err.contains("current transaction is aborted"), "{tx:?}");
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_row_cap_holds_per_result_and_per_cursor() {
    let door = Door::start(&["--max-rows", "50"]).await;
    door.database("checkdb", json!({})).await;
    let ann = door.key("ann@example.com").await;
    let all = door
        .psql(
            "ann@example.com",
            &ann,
            "checkdb",
            &["-Atc", "select generate_series(1, 80)"],
        )
        .await;
    assert!(all.ok, "{all:?}");
    assert_eq!(all.out.lines().count(), 50, "{all:?}");
    assert!(
        all.err
            .contains("WARNING:  the row cap of 50 rows was reached"),
        "{all:?}"
    );
    // psql's FETCH_COUNT reads through a cursor, 20 rows a FETCH: the cap counts them all.
    let fetched = door
        .psql(
            "ann@example.com",
            &ann,
            "checkdb",
            &[
                "-v",
                "FETCH_COUNT=20",
                "-Atc",
                "select generate_series(1, 80)",
            ],
        )
        .await;
    assert!(fetched.ok, "{fetched:?}");
    let rows: Vec<&str> = fetched.out.lines().collect();
    assert_eq!(rows.len(), 50, "{fetched:?}");
    assert_eq!(rows.last(), Some(&"50"));
    assert!(fetched.err.contains("row cap of 50 rows"), "{fetched:?}");
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_holds_whatever_the_client_sets_and_a_cancel_reaches_the_database() {
    let door = Door::start(&[]).await;
    door.database(
        "short",
        json!({"credentials": [{"username": "checker", "password": "checkpw", "timeout": 1}]}),
    )
    .await;
    door.database("checkdb", json!({})).await;
    let ann = door.key("ann@example.com").await;
    let unset = door
        .psql(
            "ann@example.com",
            &ann,
            "short",
            &[
                "-c",
                "set statement_timeout = 0",
                "-c",
                "select pg_sleep(4)",
            ],
        )
        .await;
    assert!(!unset.ok);
    assert!(
        unset
            .err
            .contains("ran past its timeout of 1 s and was cancelled"),
        "{unset:?}"
    );
    // Ctrl-C: psql sends a cancel request with the key the door gave it.
    let mut sleeping = door.sleep("ann@example.com", &ann, "checkdb", "door cancel");
    sleeping.until("1").await;
    let application = direct(&[
        "-Atc",
        &format!(
            "select application_name from pg_stat_activity where query = '{}'",
            sleeping.marker.replace('\'', "''")
        ),
    ])
    .await;
    assert_eq!(application.out.trim(), "ann@example.com via psql");
    nix::sys::signal::kill(sleeping.pid(), nix::sys::signal::Signal::SIGINT).unwrap();
    sleeping.until("0").await;
    let (_, err) = sleeping.finish().await;
    assert!(
        err.contains("canceling statement due to user request"),
        "{err}"
    );
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn door_passwords_sign_in_until_revoked_and_access_rules_hold() {
    let door = Door::start(&[]).await;
    let open = door.database("checkdb", json!({})).await;
    door.database("locked", json!({"restrict_access": true}))
        .await;
    let cookie = door.signed_in("cy@example.com").await;
    let minted = door
        .browser(
            &cookie,
            "POST",
            "/api/v1/console/me/door/passwords",
            Some(json!({"lifetime_days": 2})),
        )
        .await;
    assert_eq!(minted.status, 201, "{}", minted.body);
    let password = minted.json()["password"].as_str().unwrap().to_owned();
    let id = minted.json()["id"].as_str().unwrap().to_owned();
    assert!(password.starts_with("dbc_dpw_"));
    let too_long = door
        .browser(
            &cookie,
            "POST",
            "/api/v1/console/me/door/passwords",
            Some(json!({"lifetime_days": 91})),
        )
        .await;
    assert_eq!(too_long.status, 422, "{}", too_long.body);
    // By the database's id, and by its name.
    for dbname in [open.as_str(), "checkdb", &format!("{open}:checker")] {
        let ok = door
            .psql(
                "cy@example.com",
                &password,
                dbname,
                &["-Atc", "select 7, now() is not null"],
            )
            .await;
        assert_eq!(ok.out, "7|t\n", "{dbname}: {ok:?}");
    }
    let unknown = door
        .psql(
            "cy@example.com",
            &password,
            "checkdb:nobody",
            &["-c", "select 1"],
        )
        .await;
    assert!(
        unknown.err.contains("has no credential nobody"),
        "{unknown:?}"
    );
    // A restricted database without a grant is not reachable.
    let locked = door
        .psql("cy@example.com", &password, "locked", &["-c", "select 1"])
        .await;
    assert!(!locked.ok);
    assert!(
        locked
            .err
            .contains("no database \"locked\" that you may query"),
        "{locked:?}"
    );
    // The console lists the password (never its secret) and, while one is open, the session.
    let listed = door
        .browser(&cookie, "GET", "/api/v1/console/me/door", None)
        .await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json()["passwords"][0]["id"], id.as_str());
    assert!(!listed.body.contains(&password));
    assert_eq!(
        listed.json()["address"].as_str().unwrap(),
        format!("localhost:{}", door.door.rsplit_once(':').unwrap().1)
    );
    // The audit trail has the sessions and statements, never their text.
    let audit = door
        .admin("GET", "/api/v1/console/audit?limit=200", None)
        .await;
    let actions: Vec<&str> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"door.session_open"), "{actions:?}");
    assert!(actions.contains(&"door.session_close"), "{actions:?}");
    assert!(actions.contains(&"door.statement"), "{actions:?}");
    assert!(actions.contains(&"door_password.create"), "{actions:?}");
    assert!(!audit.to_string().contains("select 7"));
    // A catalog read is counted for its session rather than audited alone.
    let catalog = door
        .psql(
            "cy@example.com",
            &password,
            "checkdb",
            &["-Atc", "select count(*) > 0 from pg_catalog.pg_class"],
        )
        .await;
    assert_eq!(catalog.out, "t\n");
    assert!(!audit.to_string().contains(&password));
    let statement = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "door.statement")
        .unwrap();
    assert_eq!(statement["run"]["outcome"], "succeeded", "{statement}");
    // Revoked: refused.
    let revoked = door
        .browser(
            &cookie,
            "DELETE",
            &format!("/api/v1/console/me/door/passwords/{id}"),
            None,
        )
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    let after = door
        .psql("cy@example.com", &password, "checkdb", &["-c", "select 1"])
        .await;
    assert!(!after.ok);
    assert!(
        after.err.contains("password authentication failed"),
        "{after:?}"
    );
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deactivated_person_is_put_out_of_an_open_session() {
    let door = Door::start(&[]).await;
    door.database("checkdb", json!({})).await;
    let ann = door.key("ann@example.com").await;
    let mut sleeping = door.sleep("ann@example.com", &ann, "checkdb", "door deactivated");
    sleeping.until("1").await;
    door.admin(
        "PATCH",
        "/api/v1/console/users/ann@example.com",
        Some(json!({"active": false})),
    )
    .await;
    let (status, err) = tokio::time::timeout(Duration::from_secs(30), sleeping.finish())
        .await
        .expect("the session stayed open");
    assert!(!status.success());
    assert!(err.contains("this door session was ended"), "{err}");
    let again = door
        .psql("ann@example.com", &ann, "checkdb", &["-c", "select 1"])
        .await;
    assert!(!again.ok, "{again:?}");
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewed_statement_waits_then_runs_once_for_its_author() {
    let door = Door::start(&[]).await;
    // provdb: `prov_reader` needs a review; `dp_app` needs none (catalog reads run as it).
    let db = door
        .database(
            "prov",
            json!({
                "database": "provdb",
                "credentials": [
                    {"username": "prov_reader", "password": "checkpw", "reviews_required": 1},
                    {"username": "dp_app", "password": "checkpw"},
                ],
            }),
        )
        .await;
    let ann = door.key("ann@example.com").await;
    let reviewer = door.key("bo@example.com").await;
    door.admin(
        "PUT",
        &format!("/api/v1/console/databases/{db}/permissions"),
        Some(json!({"permissions": [{"subject_kind": "user", "subject": "bo@example.com", "access": "review"}]})),
    )
    .await;
    let dbname = "prov:prov_reader";
    let text = "select current_user, now() is not null as fresh";
    let first = door
        .psql("ann@example.com", &ann, dbname, &["-Atc", text])
        .await;
    assert!(!first.ok);
    assert!(first.err.contains("needs 1 approval(s)"), "{first:?}");
    assert!(first.err.contains("/console/queries/qry_"), "{first:?}");
    let again = door
        .psql("ann@example.com", &ann, dbname, &["-Atc", text])
        .await;
    assert!(again.err.contains("waits for review"), "{again:?}");
    // Catalog reads run without review, as the credential without reviews.
    let tables = door
        .psql("ann@example.com", &ann, dbname, &["-c", "\\dt"])
        .await;
    assert!(tables.ok, "{tables:?}");
    let waiting = request(
        door.server.addr,
        "GET",
        "/api/v1/console/queries?status=awaiting_review&reviewer=me",
        &[("x-api-key", reviewer.as_str())],
        None,
    )
    .await
    .json();
    let queries = waiting["data"].as_array().unwrap();
    assert_eq!(queries.len(), 1, "one request for two sends: {waiting}");
    assert_eq!(queries[0]["query"], text);
    // It came without a title or a reason: made ones, which its author changes.
    assert!(
        text.starts_with(queries[0]["title"].as_str().unwrap().trim_end_matches('…')),
        "{}",
        queries[0]
    );
    assert!(
        queries[0]["description"]
            .as_str()
            .unwrap()
            .contains("PostgreSQL door"),
        "{}",
        queries[0]
    );
    let id = queries[0]["id"].as_str().unwrap();
    let approved = request(
        door.server.addr,
        "POST",
        &format!("/api/v1/console/queries/{id}/reviews"),
        &[
            ("x-api-key", reviewer.as_str()),
            ("content-type", "application/json"),
        ],
        Some(&json!({"decision": "approve"}).to_string()),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    // Another text is not approved by it.
    let other = door
        .psql(
            "ann@example.com",
            &ann,
            dbname,
            &["-Atc", &format!("{text} ")],
        )
        .await;
    assert!(!other.ok, "{other:?}");
    // Another person's identical text is not either.
    let bo = door
        .psql("bo@example.com", &reviewer, dbname, &["-Atc", text])
        .await;
    assert!(!bo.ok, "{bo:?}");
    let ran = door
        .psql("ann@example.com", &ann, dbname, &["-Atc", text])
        .await;
    assert!(ran.ok, "{ran:?}");
    assert_eq!(
        ran.out, "prov_reader|t\n",
        "it ran as the reviewed credential"
    );
    let run = request(
        door.server.addr,
        "GET",
        &format!("/api/v1/console/queries/{id}"),
        &[("x-api-key", reviewer.as_str())],
        None,
    )
    .await
    .json();
    assert_eq!(run["status"], "succeeded", "{run}");
    // Once: the next send is a new request.
    let once = door
        .psql("ann@example.com", &ann, dbname, &["-Atc", text])
        .await;
    assert!(!once.ok);
    assert!(once.err.contains("needs 1 approval(s)"), "{once:?}");
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_protection_holds_through_the_door_in_text_and_binary() {
    let postgres = support::postgres_admin().await;
    let t = format!("door_dp_{}", std::process::id());
    postgres
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {t} CASCADE;
             CREATE TABLE {t} (id int PRIMARY KEY, email text, ssn text);
             INSERT INTO {t} VALUES (1, 's3cr3t.door@leak.test', '999-00-0001'), (2, NULL, NULL);
             GRANT SELECT (id) ON {t} TO dp_reader;
             GRANT SELECT ON {t} TO dp_owner;
             SET ROLE dp_owner;
             CREATE VIEW dp_reader_mask_public.{t} AS SELECT id,
               CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email FROM public.{t};
             RESET ROLE;
             GRANT SELECT ON dp_reader_mask_public.{t} TO dp_reader;"
        ))
        .await
        .unwrap();
    let door = Door::start(&[]).await;
    let db = door
        .database(
            "protected",
            json!({"credentials": [{"username": "dp_reader", "password": "checkpw"}]}),
        )
        .await;
    door.admin(
        "PUT",
        &format!("/api/v1/console/databases/{db}/data-protection"),
        Some(json!({"policies": [{"name": "pii", "columns": [
            {"column": format!("{t}.email"), "action": "mask"},
            {"column": format!("{t}.ssn"), "action": "hide"},
        ]}]})),
    )
    .await;
    let ann = door.key("ann@example.com").await;
    // Text (psql's simple queries).
    let masked = door
        .psql(
            "ann@example.com",
            &ann,
            "protected",
            &["-Atc", &format!("select id, email from {t} order by id")],
        )
        .await;
    assert!(masked.ok, "{masked:?}");
    assert_eq!(masked.out, "1|****\n2|\n");
    let hidden = door
        .psql(
            "ann@example.com",
            &ann,
            "protected",
            &["-Atc", &format!("select ssn from {t}")],
        )
        .await;
    assert!(!hidden.ok);
    assert!(!hidden.out.contains("999-00"), "{hidden:?}");
    let write = door
        .psql(
            "ann@example.com",
            &ann,
            "protected",
            &["-Atc", &format!("delete from {t}")],
        )
        .await;
    assert!(write.err.contains("runs read-only"), "{write:?}");
    // Binary (tokio-postgres's extended protocol): the same mask, the same refusal.
    let client = driver(&door, "ann@example.com", &ann, "protected").await;
    let rows = client
        .query(&format!("select id, email from {t} order by id"), &[])
        .await
        .unwrap();
    let values: Vec<(i32, Option<String>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(values, vec![(1, Some("****".to_owned())), (2, None)]);
    let error = client
        .query(&format!("select ssn from {t} where id = $1"), &[&1i32])
        .await
        .unwrap_err();
    assert!(!error.to_string().contains("999-00"), "{error}");
    // A named statement, executed six times (pgjdbc switches to a named one at the fifth).
    let statement = client
        .prepare(&format!("select id from {t} where id = $1"))
        .await
        .unwrap();
    for _ in 0..6 {
        let row = client.query_one(&statement, &[&1i32]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 1);
    }
    // The role verified before each statement: a grant that would let it read the column
    // refuses the open session's next statement, and a new session at its start.
    postgres
        .batch_execute(&format!("GRANT SELECT (email) ON {t} TO dp_reader"))
        .await
        .unwrap();
    let refused = client
        .query(&format!("select id from {t} where id = $1"), &[&1i32])
        .await
        .unwrap_err();
    let said = refused.as_db_error().map(|e| e.message().to_owned());
    assert!(
        said.as_deref()
            .is_some_and(|m| m.contains("data protection refuses this session's role")),
        "{refused:?}"
    );
    let at_start = door
        .psql("ann@example.com", &ann, "protected", &["-Atc", "select 1"])
        .await;
    assert!(!at_start.ok);
    assert!(
        at_start.err.contains("data protection refuses"),
        "{at_start:?}"
    );
    postgres
        .batch_execute(&format!("REVOKE SELECT (email) ON {t} FROM dp_reader"))
        .await
        .unwrap();
    drop(client);
    // A role the session could SET ROLE to (by a function's plpgsql, which no judge reads) is
    // refused at the start: the verification counts memberships. (Past the start, the door
    // reads current_user after each statement: relay.rs, role_check_failed.)
    let alt = format!("door_alt_{}", std::process::id());
    postgres
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {alt}; CREATE ROLE {alt} NOLOGIN; GRANT {alt} TO dp_reader;"
        ))
        .await
        .unwrap();
    let member = door
        .psql("ann@example.com", &ann, "protected", &["-Atc", "select 2"])
        .await;
    postgres
        .batch_execute(&format!("REVOKE {alt} FROM dp_reader; DROP ROLE {alt};"))
        .await
        .unwrap();
    assert!(!member.ok, "{member:?}");
    assert!(
        member.err.contains(&format!("member of {alt}")),
        "{member:?}"
    );
    postgres
        .batch_execute(&format!("DROP TABLE IF EXISTS {t} CASCADE"))
        .await
        .unwrap();
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_forms_gssenc_direct_tls_cancel_and_replication() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let door = Door::start(&[]).await;
    door.database("checkdb", json!({})).await;
    let ann = door.key("ann@example.com").await;
    let addr: std::net::SocketAddr = door.door.parse().unwrap();
    let startup = |user: &str| {
        let mut body = Vec::new();
        body.extend_from_slice(&196_608i32.to_be_bytes());
        for (k, v) in [("user", user), ("database", "checkdb")] {
            body.extend_from_slice(k.as_bytes());
            body.push(0);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut packet = i32::try_from(body.len() + 4)
            .unwrap()
            .to_be_bytes()
            .to_vec();
        packet.extend_from_slice(&body);
        packet
    };
    let tls = || {
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(std::sync::Arc::new(AnyCertificate))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
    };
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();

    // GSSAPI encryption is declined with `N`; the client then asks for TLS on the same
    // connection and is asked for its password.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30])
        .await
        .unwrap();
    assert_eq!(tcp.read_u8().await.unwrap(), b'N');
    tcp.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
        .await
        .unwrap();
    assert_eq!(tcp.read_u8().await.unwrap(), b'S');
    let mut stream = tls().connect(name.clone(), tcp).await.unwrap();
    stream.write_all(&startup("ann@example.com")).await.unwrap();
    assert_eq!(stream.read_u8().await.unwrap(), b'R');
    let _length = stream.read_i32().await.unwrap();
    assert_eq!(
        stream.read_i32().await.unwrap(),
        3,
        "a cleartext password is asked"
    );

    // Direct TLS (sslnegotiation=direct: the handshake first, ALPN postgresql).
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut direct = tls().connect(name, tcp).await.unwrap();
    assert_eq!(
        direct.get_ref().1.alpn_protocol(),
        Some(&b"postgresql"[..]),
        "the door speaks postgresql by ALPN"
    );
    direct.write_all(&startup("ann@example.com")).await.unwrap();
    assert_eq!(direct.read_u8().await.unwrap(), b'R');

    // A cancel request for a key no session holds closes without an answer.
    let mut cancel = tokio::net::TcpStream::connect(addr).await.unwrap();
    cancel
        .write_all(&[0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e, 0, 0, 0, 1, 0, 0, 0, 2])
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), cancel.read_to_end(&mut rest))
        .await
        .expect("the cancel connection is closed");
    assert!(read.is_ok() && rest.is_empty());

    // A replication startup and startup options are refused.
    for extra in ["replication=database", "options='-c role=postgres'"] {
        let refused = psql(
            &format!(
                "{} {extra}",
                door.conninfo("ann@example.com", "checkdb", "require")
            ),
            &ann,
            &["-c", "select 1"],
        )
        .await;
        assert!(!refused.ok, "{extra}: {refused:?}");
        assert!(
            refused
                .err
                .contains("replication connections do not go through the door")
                || refused.err.contains("the door takes no startup options"),
            "{extra}: {refused:?}"
        );
    }
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_ends_their_door_session_and_a_client_that_goes_away_is_cancelled() {
    let door = Door::start(&[]).await;
    door.database("checkdb", json!({})).await;
    let cookie = door.signed_in("dee@example.com").await;
    let minted = door
        .browser(
            &cookie,
            "POST",
            "/api/v1/console/me/door/passwords",
            Some(json!({})),
        )
        .await;
    let password = minted.json()["password"].as_str().unwrap().to_owned();
    // Ended from the console: listed, ended, its statement cancelled, its client told.
    let mut sleeping = door.sleep("dee@example.com", &password, "checkdb", "door end");
    sleeping.until("1").await;
    let listed = door
        .browser(&cookie, "GET", "/api/v1/console/me/door", None)
        .await
        .json();
    let session = &listed["sessions"][0];
    assert_eq!(session["application_name"], "psql", "{listed}");
    let id = session["id"].as_str().unwrap();
    let ended = door
        .browser(
            &cookie,
            "DELETE",
            &format!("/api/v1/console/me/door/sessions/{id}"),
            None,
        )
        .await;
    assert_eq!(ended.status, 204, "{}", ended.body);
    sleeping.until("0").await;
    let (_, err) = sleeping.finish().await;
    assert!(err.contains("this door session was ended"), "{err}");
    // A client killed mid-statement: what it left running is cancelled.
    let mut gone = door.sleep("dee@example.com", &password, "checkdb", "door gone");
    gone.until("1").await;
    gone.child.kill().await.unwrap();
    gone.until("0").await;
    door.server.stop().await;
}

/// A verifier that takes any certificate (the test reads the door's own).
#[derive(Debug)]
struct AnyCertificate;

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::aws_lc_rs::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_puts_its_open_session_out() {
    let door = Door::start(&[]).await;
    door.database("checkdb", json!({})).await;
    let key = door.key("eve@example.com").await;
    let mut sleeping = door.sleep("eve@example.com", &key, "checkdb", "door revoked");
    sleeping.until("1").await;
    let data = door.data();
    let listed = dbconsole(
        &[("DBCONSOLE_STORAGE", "redb")],
        &["keys", "list", "--data-dir", &data],
    )
    .output()
    .await
    .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    let id = listed
        .lines()
        .find(|l| l.contains("eve@example.com"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no key of eve: {listed}"))
        .to_owned();
    let revoked = dbconsole(
        &[("DBCONSOLE_STORAGE", "redb")],
        &["keys", "revoke", "--data-dir", &data, &id],
    )
    .output()
    .await
    .unwrap();
    assert!(revoked.status.success(), "{revoked:?}");
    // Within the session's next check (every 15 s): put out, its statement cancelled.
    let (_, err) = tokio::time::timeout(Duration::from_secs(40), sleeping.finish())
        .await
        .expect("the session stayed open after its key was revoked");
    assert!(err.contains("the key of this session was revoked"), "{err}");
    assert_eq!(sleeping.active().await, "0");
    door.server.stop().await;
}
