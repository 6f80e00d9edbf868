//! Data protection against someone trying to get around it, on a real PostgreSQL
//! (`.ci/db-servers-up.sh`): a table of attempts to read a protected column (masked `email`,
//! hidden `ssn`), each run in every format (JSON, NDJSON, CSV), asserting that no protected
//! value appears in any answer, that what can be masked runs masked, and that unprotected work
//! still runs (docs/data-protection.md). The guarantee is PostgreSQL's: queries run as
//! `dp_reader`, granted the unprotected columns only and the masking views of `dp_owner`; the
//! tests then change the catalog between runs (a grant, a membership, a view, a function, a new
//! column, the policies) and check that nothing the policies hide becomes readable.

mod run_support;

use run_support::protect::{Expect, Fixture, assert_known_secrets};
use run_support::*;
use serde_json::json;

const PORT: u16 = 5432;

/// The role protected runs log in as, and its masking schema for `public`.
const READER: &str = "dp_reader";
const MASKS: &str = "dp_reader_mask_public";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_columns_never_leak_whatever_the_statement() {
    let postgres = postgres_admin().await;
    let t = format!("dp_users_{}", std::process::id());
    postgres
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {t} CASCADE; DROP TABLE IF EXISTS {t}_p CASCADE;
             DROP TABLE IF EXISTS {t}_sink CASCADE;
             CREATE TABLE {t}_sink (e text);
             CREATE TABLE {t} (id int PRIMARY KEY, email text, name text, ssn text);
             INSERT INTO {t} VALUES
               (1, 's3cr3t.alice@leak.test', 'Alice', '999-11-0001'),
               (2, 's3cr3t.bob@leak.test', 'Bob', '999-11-0002'),
               (3, NULL, 'Carol', NULL);
             ANALYZE {t};
             CREATE VIEW {t}_v AS SELECT id, email FROM {t};
             CREATE TABLE {t}_p (id int, email text) PARTITION BY RANGE (id);
             CREATE TABLE {t}_p1 PARTITION OF {t}_p FOR VALUES FROM (0) TO (100);
             INSERT INTO {t}_p VALUES (1, 's3cr3t.part@leak.test');
             CREATE OR REPLACE FUNCTION {t}_leak() RETURNS text LANGUAGE plpgsql AS
               $$ BEGIN RETURN (SELECT email FROM {t} WHERE id = 1); END $$;
             GRANT SELECT (id, name) ON {t} TO {READER};
             GRANT SELECT (id) ON {t}_p TO {READER};
             GRANT SELECT ON {t}_sink TO {READER};
             GRANT SELECT ON {t}, {t}_p TO dp_owner;
             SET ROLE dp_owner;
             CREATE VIEW {MASKS}.{t} AS SELECT id,
               CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email, name FROM public.{t};
             CREATE VIEW {MASKS}.{t}_p AS SELECT id,
               CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email FROM public.{t}_p;
             RESET ROLE;
             GRANT SELECT ON {MASKS}.{t}, {MASKS}.{t}_p TO {READER};"
        ))
        .await
        .unwrap();
    let seeded = postgres
        .query(
            &format!(
                "SELECT email FROM {t} UNION ALL SELECT ssn FROM {t} UNION ALL \
                 SELECT email FROM {t}_p"
            ),
            &[],
        )
        .await
        .unwrap();
    assert_known_secrets(
        &seeded
            .iter()
            .filter_map(|row| row.get::<_, Option<String>>(0))
            .collect::<Vec<_>>(),
    );
    let fixture = Fixture::protected_as(
        "postgres",
        PORT,
        &t,
        json!([
            {"column": format!("{t}.email"), "action": "mask"},
            {"column": format!("public.{t}.ssn"), "action": "hide"},
            {"column": format!("{t}_p.email"), "action": "mask"},
        ]),
        READER,
    )
    .await;
    // The editor's schema is read as the protected role: the hidden column is not listed, the
    // others are; a second read in the minute is the kept answer (one catalog run, one event).
    let path = format!(
        "/api/v1/console/me/databases/{}/schema?credential_id={}",
        fixture.db, fixture.credential
    );
    let schema = fixture
        .console
        .send(http::Method::GET, &path, Some(alice()), None, None)
        .await
        .expect(200)
        .json();
    let table = schema["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|table| table["schema"] == "public" && table["table"] == t.as_str())
        .unwrap_or_else(|| panic!("{t} in the schema: {schema}"));
    let names: Vec<&str> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        ["email", "id", "name"],
        "the role's columns, and the masked one once: {table}"
    );
    let masked: Vec<&str> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["masked"] == true)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(masked, ["email"], "the masked badge: {table}");
    assert!(
        !schema.to_string().contains("ssn"),
        "the hidden column is nowhere: {schema}"
    );
    let again = fixture
        .console
        .send(http::Method::GET, &path, Some(alice()), None, None)
        .await
        .expect(200)
        .json();
    assert_eq!(again, schema, "the kept answer");
    // A policy that now hides `name` (which the role may still read): the kept answer is not
    // served (it would list the column for up to a minute); the read is refused as a run is.
    fixture
        .protect_columns(json!([
            {"column": format!("{t}.email"), "action": "mask"},
            {"column": format!("public.{t}.ssn"), "action": "hide"},
            {"column": format!("{t}_p.email"), "action": "mask"},
            {"column": format!("{t}.name"), "action": "hide"},
        ]))
        .await;
    let moved = fixture
        .console
        .send(http::Method::GET, &path, Some(alice()), None, None)
        .await;
    assert_eq!(moved.status.as_u16(), 422, "{}", moved.text());
    fixture
        .protect_columns(json!([
            {"column": format!("{t}.email"), "action": "mask"},
            {"column": format!("public.{t}.ssn"), "action": "hide"},
            {"column": format!("{t}_p.email"), "action": "mask"},
        ]))
        .await;
    // The databases screen's status: the protected role is verified; a role that can read
    // what the policies protect (checker) is refused, with what to change.
    let verified = fixture.status().await;
    assert_eq!(verified["protected"], true, "{verified}");
    assert_eq!(
        verified["credentials"][0]["status"], "verified",
        "{verified}"
    );
    let loose = Fixture::protected(
        "postgres",
        PORT,
        &t,
        json!([{"column": format!("public.{t}.ssn"), "action": "hide"}]),
    )
    .await;
    let refused = loose.status().await;
    assert_eq!(refused["credentials"][0]["status"], "refused", "{refused}");
    let problems = refused["credentials"][0]["problems"].to_string();
    assert!(
        problems.contains("ssn"),
        "the problem names the column: {problems}"
    );
    let bob = dbconsole_core::model::Principal::member("bob@example.com");
    fixture
        .console
        .send(http::Method::GET, &path, Some(bob), None, None)
        .await
        .expect(200);
    use Expect::{Denied, NoLeak, Refused, Runs};
    let ssn_gone = Refused;
    let attempts: Vec<(String, Expect)> = vec![
        // Runs: a masked column through its masking view, the hidden one gone.
        (
            format!("SELECT email FROM {t} ORDER BY id"),
            Runs(&["email"]),
        ),
        (
            format!("SELECT * FROM {t} ORDER BY id"),
            Runs(&["id", "email", "name"]),
        ),
        (format!("SELECT email AS e FROM {t}"), Runs(&["e"])),
        (format!("SELECT EMAIL FROM {t}"), Runs(&["email"])),
        (
            format!("SELECT * FROM (SELECT * FROM {t}) s"),
            Runs(&["id", "email", "name"]),
        ),
        (
            format!("SELECT u.email FROM {t} u JOIN {t} v ON u.id = v.id"),
            Runs(&["email"]),
        ),
        (format!("SELECT email FROM {t} LIMIT 2"), Runs(&["email"])),
        (
            format!("SELECT id /* email */ FROM {t} -- ssn"),
            Runs(&["id"]),
        ),
        // H16: a partitioned parent reads masked through its view, not refused.
        (format!("SELECT email FROM {t}_p"), Runs(&["email"])),
        (format!("SELECT * FROM {t}_p"), Runs(&["id", "email"])),
        (
            format!("SELECT set_config('search_path', 'pg_catalog', true), email FROM {t}"),
            Runs(&["set_config", "email"]),
        ),
        // Unprotected work.
        (
            format!("SELECT id, name FROM {t} ORDER BY id"),
            Runs(&["id", "name"]),
        ),
        (format!("SELECT count(*) FROM {t}"), Runs(&["count"])),
        (
            format!("SELECT name FROM {t} WHERE id = 1"),
            Runs(&["name"]),
        ),
        (
            format!(
                "SELECT column_name FROM information_schema.columns WHERE table_name = '{t}' \
                 ORDER BY ordinal_position"
            ),
            Runs(&["column_name"]),
        ),
        // The hidden column does not exist for the role; the table itself can't be read.
        (format!("SELECT ssn FROM {t}"), ssn_gone),
        (format!("SELECT length(ssn) FROM {t}"), ssn_gone),
        (format!("SELECT id FROM {t} WHERE ssn IS NOT NULL"), ssn_gone),
        (format!("SELECT * FROM public.{t}"), Refused),
        (format!("SELECT email FROM public.{t}"), Refused),
        (format!("SELECT ssn FROM public.{t}"), Refused),
        (format!("SELECT count(ssn) FROM public.{t}"), Refused),
        (format!("SELECT id FROM public.{t} ORDER BY email"), Refused),
        (format!("SELECT * FROM {t}_p1"), Refused),
        (format!("SELECT * FROM {t}_v"), Refused),
        // Runs with the role's rights: its `{t}` is the masking view.
        (format!("SELECT {t}_leak()"), NoLeak),
        (format!("SELECT email FROM {t} FOR UPDATE"), Refused),
        (
            format!("SELECT query_to_xml('SELECT email FROM public.{t}', true, false, '')"),
            Refused,
        ),
        (
            format!("SELECT * FROM ts_stat('SELECT to_tsvector(''simple'', email) FROM public.{t}')"),
            Refused,
        ),
        // H1: a protected column in a LIMIT/OFFSET of a correlated subquery.
        (
            format!(
                "SELECT p.id, (SELECT string_agg((SELECT chr(g) FROM generate_series(32, 255) g \
                 OFFSET greatest(ascii(substr(p.ssn, k, 1)) - 32, 0) LIMIT 1), '' ORDER BY k) \
                 FROM generate_series(1, 11) k) AS v FROM public.{t} p"
            ),
            Refused,
        ),
        (
            format!(
                "SELECT p.id, (SELECT string_agg((SELECT chr(g) FROM generate_series(32, 255) g \
                 OFFSET greatest(ascii(substr(p.ssn, k, 1)) - 32, 0) LIMIT 1), '' ORDER BY k) \
                 FROM generate_series(1, 11) k) AS v FROM {t} p"
            ),
            ssn_gone,
        ),
        (
            format!(
                "SELECT p.id, (SELECT string_agg((SELECT chr(g) FROM generate_series(32, 255) g \
                 OFFSET greatest(ascii(substr(p.email, k, 1)) - 32, 0) LIMIT 1), '' ORDER BY k) \
                 FROM generate_series(1, 22) k) AS v FROM {t} p"
            ),
            Runs(&["id", "v"]),
        ),
        (
            format!(
                "SELECT x.n FROM {t} p, LATERAL (SELECT g AS n FROM generate_series(0, 255) g \
                 OFFSET ascii(substr(p.email, 1, 1)) LIMIT 1) x"
            ),
            Runs(&["n"]),
        ),
        (
            format!(
                "SELECT id, sum(id) OVER (ORDER BY id ROWS BETWEEN ascii(email) PRECEDING AND \
                 CURRENT ROW) FROM public.{t}"
            ),
            NoLeak,
        ),
        // H2: evaluated while planning, as the role.
        (
            format!(
                "SELECT 1 LIMIT length(current_setting(table_to_xml('public.{t}'::regclass, \
                 false, false, '')::text))"
            ),
            Refused,
        ),
        (
            "SELECT 1 LIMIT length(current_setting(schema_to_xml('public', false, false, '')::text))"
                .to_owned(),
            NoLeak,
        ),
        // Estimates and actual rows count protected values: EXPLAIN only without them.
        (
            format!("EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM {t} WHERE id = 2"),
            Denied("EXPLAIN runs only as EXPLAIN (COSTS OFF) without ANALYZE"),
        ),
        (
            format!("EXPLAIN SELECT id FROM {t}"),
            Denied("EXPLAIN runs only as EXPLAIN (COSTS OFF) without ANALYZE"),
        ),
        (
            format!("EXPLAIN (COSTS OFF) SELECT id FROM {t}"),
            Runs(&["QUERY PLAN"]),
        ),
        // H3: SQL given as text, where EXPLAIN doesn't print it.
        (
            format!(
                "SELECT 1 AS one LIMIT (query_to_xml('select ssn, email from public.{t}', false, \
                 false, '')::text)::int"
            ),
            Refused,
        ),
        (
            format!(
                "SELECT 1 AS one OFFSET (SELECT count(*) FROM public.{t} WHERE ssn LIKE '999%')"
            ),
            Refused,
        ),
        (
            format!(
                "SELECT g FROM generate_series(1, 3) g FETCH FIRST (length(query_to_xml('select \
                 email from public.{t}', false, false, '')::text)) ROWS ONLY"
            ),
            Refused,
        ),
        // Expressions over a masked column read the mask.
        (format!("SELECT upper(email) FROM {t}"), Runs(&["upper"])),
        (format!("SELECT email || '' AS e FROM {t}"), Runs(&["e"])),
        (format!("SELECT row_to_json(u) FROM {t} u"), Runs(&["row_to_json"])),
        (format!("SELECT string_agg(email, ',') FROM {t}"), Runs(&["string_agg"])),
        (format!("SELECT DISTINCT email FROM {t}"), Runs(&["email"])),
        (format!("SELECT id, email FROM {t} ORDER BY email"), Runs(&["id", "email"])),
        (
            format!("SELECT lag(email) OVER (ORDER BY id) FROM {t}"),
            Runs(&["lag"]),
        ),
        (
            format!("SELECT email FROM {t} UNION SELECT 'x'"),
            Runs(&["email"]),
        ),
        (
            format!("WITH c AS MATERIALIZED (SELECT email FROM {t}) SELECT * FROM c"),
            Runs(&["email"]),
        ),
        (format!("SELECT email::text FROM {t}"), NoLeak),
        // Statistics hold sample values: only of what the role may read.
        (
            format!("SELECT most_common_vals::text FROM pg_stats WHERE tablename = '{t}'"),
            NoLeak,
        ),
        (
            "SELECT s.stavalues1::text FROM pg_statistic s".to_owned(),
            Refused,
        ),
        (
            format!("SELECT * FROM pg_stats_ext WHERE tablename = '{t}'"),
            NoLeak,
        ),
        // Not a query: refused before it is sent (a protected database runs read-only).
        (format!("COPY {t} TO STDOUT"), Refused),
        (format!("PREPARE p_{t} AS SELECT email FROM {t}"), Refused),
        (format!("TABLE {t}"), Refused),
        (format!("UPDATE {t} SET id = NULL WHERE id = 1"), Refused),
        (format!("CREATE TABLE {t}_copy AS SELECT email AS e FROM {t}"), Refused),
        (format!("SELECT email INTO {t}_copy2 FROM {t}"), Refused),
        (format!("INSERT INTO {t}_sink SELECT email FROM public.{t}"), Refused),
        ("ALTER ROLE CURRENT_USER PASSWORD 'stolen'".to_owned(), Refused),
        (format!("ALTER ROLE {READER} SET search_path = public"), Refused),
        ("SET ROLE checker".to_owned(), Refused),
        ("SET SESSION AUTHORIZATION checker".to_owned(), Refused),
        (
            "DO $$ BEGIN EXECUTE 'ALTER ROLE CURRENT_USER PASSWORD ''x'''; END $$".to_owned(),
            Refused,
        ),
        (format!("SELECT e FROM {t}_sink"), Runs(&["e"])),
    ];
    assert!(attempts.len() >= 60, "{}", attempts.len());
    let masked = fixture.attempt_all(&attempts).await;
    assert!(masked >= 10, "masked columns seen: {masked}");
    // NULL stays NULL.
    let result = fixture
        .attempt(
            &format!("SELECT email FROM {t} ORDER BY id"),
            Runs(&["email"]),
        )
        .await;
    assert_eq!(result["rows"], json!([["****"], ["****"], [null]]));
    let result = fixture
        .attempt(&format!("SELECT * FROM {t}_p"), Runs(&["id", "email"]))
        .await;
    assert_eq!(result["rows"], json!([[1, "****"]]));
    // One character's code a row is one number, which the leak check can't tell from any
    // other: the rows must be the mask's (`*` is 42; NULL reads no offset).
    let result = fixture
        .attempt(
            &format!(
                "SELECT x.n FROM {t} p, LATERAL (SELECT g AS n FROM generate_series(0, 255) g \
                 OFFSET ascii(substr(p.email, 1, 1)) LIMIT 1) x ORDER BY p.id"
            ),
            Runs(&["n"]),
        )
        .await;
    assert_eq!(result["rows"], json!([[42], [42], [0]]));
    // A refusal of the database names the policy.
    let answer = fixture
        .attempt(&format!("SELECT email FROM public.{t}"), Refused)
        .await;
    assert!(answer.is_null());

    // Oracles: a guess that matches answers what a guess that doesn't does.
    for (right, wrong) in [
        (
            format!("SELECT count(*) FROM {t} WHERE email LIKE 's3cr3t.a%'"),
            format!("SELECT count(*) FROM {t} WHERE email LIKE 'zzz%'"),
        ),
        (
            format!("SELECT id FROM {t} WHERE email = 's3cr3t.alice@leak.test'"),
            format!("SELECT id FROM {t} WHERE email = 'nobody@example.com'"),
        ),
        (
            format!(
                "SELECT 1 / (CASE WHEN email LIKE 's%' THEN 0 ELSE 1 END) FROM {t} WHERE id = 1"
            ),
            format!(
                "SELECT 1 / (CASE WHEN email LIKE 'z%' THEN 0 ELSE 1 END) FROM {t} WHERE id = 1"
            ),
        ),
        (
            format!(
                "SELECT pg_sleep(CASE WHEN email LIKE 's%' THEN 0 ELSE 0 END) FROM {t} WHERE id = 1"
            ),
            format!(
                "SELECT pg_sleep(CASE WHEN email LIKE 'z%' THEN 0 ELSE 0 END) FROM {t} WHERE id = 1"
            ),
        ),
        (
            format!("SELECT count(*) AS n FROM {t} GROUP BY email ORDER BY n"),
            format!("SELECT count(*) AS n FROM {t} GROUP BY email IS NULL ORDER BY n"),
        ),
    ] {
        let right_answer = fixture.attempt(&right, NoLeak).await;
        let wrong_answer = fixture.attempt(&wrong, NoLeak).await;
        assert_eq!(
            right_answer["rows"], wrong_answer["rows"],
            "{right} answers other rows than {wrong}"
        );
    }

    // Between two runs, nothing that changes the catalog makes a hidden value readable.
    let runs_again = || async {
        fixture
            .attempt(
                &format!("SELECT id, email FROM {t} ORDER BY id"),
                Runs(&["id", "email"]),
            )
            .await;
    };
    let refused_until = |change: String, undo: String, says: &'static str| {
        let postgres = &postgres;
        let fixture = &fixture;
        let t = &t;
        async move {
            postgres
                .batch_execute(&change)
                .await
                .unwrap_or_else(|e| panic!("{change}: {e}"));
            for sql in [
                format!("SELECT id FROM {t}"),
                format!("SELECT * FROM {t}"),
                format!("SELECT ssn FROM public.{t}"),
            ] {
                let (_, answer) = fixture
                    .console
                    .query(&alice(), &fixture.db, &fixture.credential, &sql, None, None)
                    .await;
                let text = answer.expect(422).text();
                assert!(text.contains(says), "after {change}, {sql}: {text}");
                assert_eq!(fixture.leaks(&text), None, "{text}");
            }
            postgres
                .batch_execute(&undo)
                .await
                .unwrap_or_else(|e| panic!("{undo}: {e}"));
        }
    };
    // A grant added by someone else.
    refused_until(
        format!("GRANT SELECT (ssn) ON {t} TO {READER}"),
        format!("REVOKE SELECT (ssn) ON {t} FROM {READER}"),
        "can read",
    )
    .await;
    runs_again().await;
    refused_until(
        format!("GRANT SELECT ON {t} TO PUBLIC"),
        format!("REVOKE SELECT ON {t} FROM PUBLIC"),
        "can read",
    )
    .await;
    runs_again().await;
    // A membership (SET ROLE reaches its rights whatever INHERIT says).
    refused_until(
        format!("GRANT dp_owner TO {READER}"),
        format!("REVOKE dp_owner FROM {READER}"),
        "member of",
    )
    .await;
    runs_again().await;
    // A masking view redefined to select the protected column.
    refused_until(
        format!(
            "SET ROLE dp_owner; CREATE OR REPLACE VIEW {MASKS}.{t} AS SELECT id, email, name \
             FROM public.{t}; RESET ROLE"
        ),
        format!(
            "SET ROLE dp_owner; CREATE OR REPLACE VIEW {MASKS}.{t} AS SELECT id, CASE WHEN email \
             IS NULL THEN NULL ELSE '****'::text END AS email, name FROM public.{t}; RESET ROLE"
        ),
        "not defined as dbconsole defines it",
    )
    .await;
    runs_again().await;
    // Another view, owned by someone who can read the column, granted to the role.
    refused_until(
        format!("GRANT SELECT ON {t}_v TO {READER}"),
        format!("REVOKE SELECT ON {t}_v FROM {READER}"),
        "with its owner's rights",
    )
    .await;
    runs_again().await;
    // A function replaced by one that runs with its owner's rights.
    refused_until(
        format!(
            "CREATE OR REPLACE FUNCTION {t}_leak() RETURNS text LANGUAGE sql SECURITY DEFINER AS \
             $$ SELECT email FROM public.{t} WHERE id = 1 $$"
        ),
        format!(
            "CREATE OR REPLACE FUNCTION {t}_leak() RETURNS text LANGUAGE sql SECURITY INVOKER AS \
             $$ SELECT email FROM public.{t} WHERE id = 1 $$"
        ),
        "runs with the rights of",
    )
    .await;
    runs_again().await;
    // A new column on a protected table: the masking view no longer is what it must be.
    refused_until(
        format!("ALTER TABLE {t} ADD COLUMN extra text"),
        format!("ALTER TABLE {t} DROP COLUMN extra"),
        "not defined as dbconsole defines it",
    )
    .await;
    runs_again().await;
    // The policies change: a column the role may read becomes protected.
    fixture
        .console
        .protect(
            &fixture.db,
            &json!({"policies": [{"name": "pii", "columns": [
                {"column": format!("{t}.email"), "action": "mask"},
                {"column": format!("public.{t}.ssn"), "action": "hide"},
                {"column": format!("{t}_p.email"), "action": "mask"},
                {"column": format!("{t}.name"), "action": "hide"},
            ]}]}),
        )
        .await;
    let (_, answer) = fixture
        .console
        .query(
            &alice(),
            &fixture.db,
            &fixture.credential,
            &format!("SELECT id FROM {t}"),
            None,
            None,
        )
        .await;
    let text = answer.expect(422).text();
    assert!(text.contains("can read"), "{text}");
    fixture
        .console
        .protect(
            &fixture.db,
            &json!({"policies": [{"name": "pii", "columns": [
                {"column": format!("{t}.email"), "action": "mask"},
                {"column": format!("public.{t}.ssn"), "action": "hide"},
                {"column": format!("{t}_p.email"), "action": "mask"},
            ]}]}),
        )
        .await;
    runs_again().await;

    // A database that inherits the policies is protected the same way.
    let (heir, heir_credentials) = fixture
        .console
        .database(
            "postgres",
            PORT,
            json!({}),
            json!([
                {"username": READER, "password": PASSWORD},
                {"username": "checker", "password": PASSWORD},
            ]),
        )
        .await;
    fixture
        .console
        .protect(&heir, &json!({"inherits_from": fixture.db, "policies": []}))
        .await;
    let heir_fixture = Fixture {
        console: fixture.console,
        db: heir.clone(),
        credential: heir_credentials[0].clone(),
        table: t.clone(),
    };
    let inherited = heir_fixture
        .attempt(
            &format!("SELECT * FROM {t} ORDER BY id"),
            Runs(&["id", "email", "name"]),
        )
        .await;
    assert_eq!(inherited["rows"][0], json!([1, "****", "Alice"]));
    heir_fixture
        .attempt(&format!("SELECT ssn FROM public.{t}"), Refused)
        .await;
    // A credential that can read the protected columns runs nothing, and says what to change.
    let (_, answer) = heir_fixture
        .console
        .query(
            &alice(),
            &heir,
            &heir_credentials[1],
            "SELECT 1",
            None,
            None,
        )
        .await;
    let text = answer.expect(422).text();
    assert!(
        text.contains("could read what its policies protect"),
        "{text}"
    );
    assert!(text.contains("REVOKE"), "the fix is printed: {text}");
    assert_eq!(heir_fixture.leaks(&text), None, "{text}");

    // Panels: a masked column comes back masked; an input probing it learns nothing.
    let console = &heir_fixture.console;
    let dashboard = panels_dashboard(
        console,
        "protected panels",
        &heir_fixture.credential,
        &[
            format!("SELECT id, email FROM {t} WHERE id = ${{v}}"),
            format!("SELECT id FROM {t} WHERE email = ${{v}}"),
            format!("SELECT id FROM public.{t} WHERE ssn = ${{v}}"),
        ],
        json!([{"key": "v", "description": ""}]),
    )
    .await;
    let run_panel = |index: usize, value: &str| {
        let body = json!({"inputs": {"v": value}});
        let dashboard = &dashboard;
        async move { run_panel(console, dashboard, index, &body).await }
    };
    let shown = run_panel(0, "2").await.expect(200);
    assert_eq!(heir_fixture.leaks(&shown.text()), None, "{}", shown.text());
    assert_eq!(shown.json()["rows"], json!([[2, "****"]]));
    let right = run_panel(1, "s3cr3t.alice@leak.test").await.expect(200);
    let wrong = run_panel(1, "nobody@example.com").await.expect(200);
    assert_eq!(right.json()["rows"], wrong.json()["rows"]);
    let probe = run_panel(2, "999-11-0001").await.expect(422);
    assert!(probe.text().contains("data protection"), "{}", probe.text());
    postgres
        .batch_execute(&format!(
            "DROP VIEW {MASKS}.{t}, {MASKS}.{t}_p; DROP TABLE {t} CASCADE;
             DROP TABLE {t}_p CASCADE; DROP TABLE {t}_sink; DROP FUNCTION {t}_leak()"
        ))
        .await
        .unwrap();
}

/// What a protected panel keeps between runs (its session's verification, its statement's
/// prepared columns) never outlives a change: after each change below, the same panel on the
/// same pooled session is refused, never answering what its first run masked or was refused;
/// after the change is undone it runs masked again. The changes: a masking view redefined to
/// select the protected column, a column added, columns renamed so that the protected name is
/// a column the role may read, a function
/// replaced by one with its owner's rights, the policies, and the credential rotated to a role
/// that can read the column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_panel_keeps_nothing_across_a_change() {
    let postgres = postgres_admin().await;
    let t = format!("dp_stale_{}", std::process::id());
    postgres
        .batch_execute(&format!(
            "DROP VIEW IF EXISTS {MASKS}.{t}; DROP TABLE IF EXISTS {t} CASCADE;
             CREATE TABLE {t} (id int PRIMARY KEY, email text, name text);
             INSERT INTO {t} VALUES (1, 's3cr3t.alice@leak.test', 'Alice'), (2, NULL, 'Bob');
             CREATE OR REPLACE FUNCTION {t}_leak() RETURNS text LANGUAGE sql SECURITY INVOKER AS
               $$ SELECT email FROM public.{t} WHERE id = 1 $$;
             GRANT SELECT (id, name) ON {t} TO {READER};
             GRANT SELECT ON {t} TO dp_owner;
             SET ROLE dp_owner;
             CREATE VIEW {MASKS}.{t} AS SELECT id,
               CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email, name FROM public.{t};
             RESET ROLE;
             GRANT SELECT ON {MASKS}.{t} TO {READER};"
        ))
        .await
        .unwrap();
    let seeded = postgres
        .query(&format!("SELECT email FROM {t}"), &[])
        .await
        .unwrap();
    assert_known_secrets(
        &seeded
            .iter()
            .filter_map(|row| row.get::<_, Option<String>>(0))
            .collect::<Vec<_>>(),
    );
    let fixture = Fixture::protected_as(
        "postgres",
        PORT,
        &t,
        json!([{"column": format!("{t}.email"), "action": "mask"}]),
        READER,
    )
    .await;
    let dashboard = fixture
        .panels(&[
            format!("SELECT id, email, name FROM {t} ORDER BY id"),
            format!("SELECT {t}_leak() AS leak"),
        ])
        .await;
    let run = |index: usize| fixture.run_unleaked(&dashboard, index);
    let masked = json!([[1, "****", "Alice"], [2, null, "Bob"]]);
    let runs_masked = || async {
        // Twice: the second run is the one that uses what the first kept.
        for _ in 0..2 {
            assert_eq!(run(0).await.expect(200).json()["rows"], masked);
            let refused = run(1).await.expect(422).text();
            assert!(refused.contains("data protection"), "{refused}");
        }
    };
    runs_masked().await;
    for (change, undo, says) in [
        (
            format!(
                "SET ROLE dp_owner; CREATE OR REPLACE VIEW {MASKS}.{t} AS SELECT id, email, name \
                 FROM public.{t}; RESET ROLE"
            ),
            format!(
                "SET ROLE dp_owner; CREATE OR REPLACE VIEW {MASKS}.{t} AS SELECT id, CASE WHEN \
                 email IS NULL THEN NULL ELSE '****'::text END AS email, name FROM public.{t}; \
                 RESET ROLE"
            ),
            "not defined as dbconsole defines it",
        ),
        (
            format!("ALTER TABLE {t} ADD COLUMN extra text"),
            format!("ALTER TABLE {t} DROP COLUMN extra"),
            "not defined as dbconsole defines it",
        ),
        // The protected name moves to a column the role may read.
        (
            format!(
                "ALTER TABLE {t} RENAME COLUMN email TO mail; \
                 ALTER TABLE {t} RENAME COLUMN name TO email"
            ),
            format!(
                "ALTER TABLE {t} RENAME COLUMN email TO name; \
                 ALTER TABLE {t} RENAME COLUMN mail TO email"
            ),
            "can read",
        ),
        (
            format!(
                "CREATE OR REPLACE FUNCTION {t}_leak() RETURNS text LANGUAGE sql SECURITY DEFINER \
                 AS $$ SELECT email FROM public.{t} WHERE id = 1 $$"
            ),
            format!(
                "CREATE OR REPLACE FUNCTION {t}_leak() RETURNS text LANGUAGE sql SECURITY INVOKER \
                 AS $$ SELECT email FROM public.{t} WHERE id = 1 $$"
            ),
            "runs with the rights of",
        ),
    ] {
        postgres
            .batch_execute(&change)
            .await
            .unwrap_or_else(|e| panic!("{change}: {e}"));
        for index in [0, 1] {
            let text = run(index).await.expect(422).text();
            assert!(text.contains(says), "after {change}, panel {index}: {text}");
        }
        postgres
            .batch_execute(&undo)
            .await
            .unwrap_or_else(|e| panic!("{undo}: {e}"));
        runs_masked().await;
    }
    // The policies (a column the role may read becomes hidden), then the credential rotated
    // to a role that can read the protected column (its owner).
    fixture
        .policy_and_rotation_refuse(&t, READER, run, runs_masked)
        .await;
    postgres
        .batch_execute(&format!(
            "DROP VIEW {MASKS}.{t}; DROP TABLE {t} CASCADE; DROP FUNCTION {t}_leak()"
        ))
        .await
        .unwrap();
}
