//! Data protection and read-only runs against someone trying to get around them, on a real
//! MariaDB (`.ci/db-servers-up.sh`). Protected queries run as `dp_reader`, granted the
//! unprotected columns only, and MariaDB's own privileges refuse the rest
//! (docs/data-protection.md): every attempt of the table (reads of a masked `email` and a hidden
//! `ssn` in every form, including the ones a statement check let through: scalar subqueries
//! folded away, conditions evaluated while explaining, `SELECT … INTO @v`) leaks nothing in any
//! format; a user that could read more runs nothing; grants added between runs refuse every run
//! until undone. Panels run read-only: DDL, which MariaDB commits outside any transaction, is
//! refused before it is sent, executable comments included.

mod run_support;

use mysql_async::prelude::Queryable as _;
use run_support::protect::{Expect, Fixture, assert_known_secrets};
use run_support::*;
use serde_json::json;

const PORT: u16 = 3306;

/// Everything `tables` hold, as the admin reads it: each one's definition and every row (all
/// its columns, in key order), to compare before and after what must change nothing.
async fn contents(server: &mut mysql_async::Conn, tables: &[String]) -> Vec<String> {
    let mut contents = Vec::new();
    for table in tables {
        let created: Vec<(String, String)> = server
            .query(format!("SHOW CREATE TABLE {table}"))
            .await
            .unwrap_or_else(|error| panic!("SHOW CREATE TABLE {table}: {error}"));
        contents.extend(created.into_iter().map(|(_, definition)| definition));
        let rows: Vec<mysql_async::Row> = server
            .query(format!("SELECT * FROM {table} ORDER BY 1"))
            .await
            .unwrap_or_else(|error| panic!("SELECT * FROM {table}: {error}"));
        // Each value whole, as SQL (a value's `Debug` cuts long bytes short).
        contents.extend(rows.into_iter().map(|row| {
            let values: Vec<String> = row.unwrap().iter().map(|v| v.as_sql(false)).collect();
            values.join(", ")
        }));
    }
    contents
}

/// The tables and views named `{t}…`, and everything table `t` holds ([`contents`]).
async fn state(server: &mut mysql_async::Conn, t: &str) -> (Vec<(String, String)>, Vec<String>) {
    let tables: Vec<(String, String)> = server
        .query(format!(
            "SELECT table_name, table_type FROM information_schema.tables \
             WHERE table_schema = 'checkdb' AND table_name LIKE '{t}%' ORDER BY 1"
        ))
        .await
        .unwrap();
    (tables, contents(server, &[t.to_owned()]).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_columns_never_leak_and_unprotected_work_runs() {
    let mut server = mysql_admin().await;
    let t = format!("dp_users_{}", std::process::id());
    for statement in [
        format!("DROP VIEW IF EXISTS {t}_v, {t}_tv"),
        format!("DROP FUNCTION IF EXISTS {t}_leak"),
        format!("DROP TABLE IF EXISTS {t}"),
        format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, email VARCHAR(64), name VARCHAR(64), \
             ssn VARCHAR(16))"
        ),
        format!(
            "INSERT INTO {t} VALUES (1, 's3cr3t.alice@leak.test', 'Alice', '999-11-0001'), \
             (2, 's3cr3t.bob@leak.test', 'Bob', '999-11-0002'), (3, NULL, 'Carol', NULL)"
        ),
        format!("CREATE VIEW {t}_v AS SELECT id, email FROM {t}"),
        format!("CREATE ALGORITHM = TEMPTABLE VIEW {t}_tv AS SELECT id, email FROM {t}"),
        format!(
            "CREATE FUNCTION {t}_leak() RETURNS VARCHAR(64) READS SQL DATA \
             RETURN (SELECT email FROM {t} WHERE id = 1)"
        ),
    ] {
        server.query_drop(&statement).await.unwrap_or_else(|error| {
            panic!("{statement}: {error}");
        });
    }
    let seeded: Vec<Option<String>> = server
        .query(format!(
            "SELECT email FROM {t} UNION ALL SELECT ssn FROM {t}"
        ))
        .await
        .unwrap();
    assert_known_secrets(&seeded.into_iter().flatten().collect::<Vec<_>>());
    for host in ["localhost", "127.0.0.1"] {
        // What an interrupted run may have left (there may be nothing to revoke).
        let _ = server
            .query_drop(format!(
                "REVOKE SELECT ON checkdb.* FROM 'dp_reader'@'{host}'"
            ))
            .await;
        server
            .query_drop(format!(
                "GRANT SELECT (id, name) ON checkdb.{t} TO 'dp_reader'@'{host}'"
            ))
            .await
            .unwrap();
    }
    let fixture = Fixture::protected_as(
        "mysql",
        PORT,
        &t,
        json!([
            {"column": format!("{t}.email"), "action": "mask"},
            {"column": format!("checkdb.{t}.ssn"), "action": "hide"},
        ]),
        "dp_reader",
    )
    .await;
    use Expect::{Denied, NoLeak, Refused, Runs};
    let attempts: Vec<(String, Expect)> = vec![
        // Runs: the column as itself, masked; the hidden one gone.
        (
            format!("SELECT email FROM {t} ORDER BY id"),
            Runs(&["email"]),
        ),
        (
            format!("SELECT * FROM {t} ORDER BY id"),
            Runs(&["id", "email", "name"]),
        ),
        (format!("SELECT email AS e FROM {t}"), Runs(&["e"])),
        (
            format!("SELECT u.email FROM {t} u JOIN {t} v ON u.id = v.id"),
            Runs(&["email"]),
        ),
        (format!("SELECT email FROM {t} LIMIT 2"), Runs(&["email"])),
        // A protected database runs read-only, console queries too: no locking read.
        (
            format!("SELECT email FROM {t} WHERE id IN (1, 2) FOR UPDATE"),
            Denied("READ ONLY transaction"),
        ),
        (format!("SELECT ssn FROM {t}"), Runs(&[])),
        (
            format!("SELECT id /* email */ FROM {t} -- ssn"),
            Runs(&["id"]),
        ),
        (format!("SELECT `email` FROM `{t}`"), Runs(&["email"])),
        // Unprotected work.
        (
            format!("SELECT id, name FROM {t} ORDER BY id"),
            Runs(&["id", "name"]),
        ),
        (format!("SELECT count(*) FROM {t}"), Runs(&["count(*)"])),
        (
            format!("SELECT name FROM {t} WHERE id IN (1, 2)"),
            Runs(&["name"]),
        ),
        (
            format!("SELECT name FROM {t} WHERE name LIKE 'A%'"),
            Runs(&["name"]),
        ),
        // Refused: derived values, filters, keys, set operations, functions, views.
        (format!("SELECT upper(email) FROM {t}"), Refused),
        (format!("SELECT UPPER(`email`) FROM {t}"), Refused),
        (format!("SELECT concat(email, '') FROM {t}"), Refused),
        (format!("SELECT JSON_OBJECT('e', email) FROM {t}"), Refused),
        (format!("SELECT group_concat(email) FROM {t}"), Refused),
        (format!("SELECT count(email) FROM {t}"), Refused),
        (format!("SELECT length(ssn) FROM {t}"), Refused),
        (
            format!("SELECT CASE WHEN email LIKE 's%' THEN 1 ELSE 0 END FROM {t}"),
            Refused,
        ),
        (format!("SELECT id FROM {t} WHERE email LIKE 's%'"), Refused),
        (
            format!("SELECT count(*) FROM {t} WHERE email = 'x'"),
            Refused,
        ),
        (format!("SELECT id FROM {t} WHERE ssn IS NOT NULL"), Refused),
        (format!("SELECT id FROM {t} ORDER BY email"), Refused),
        (
            format!("SELECT email, count(*) FROM {t} GROUP BY email"),
            Refused,
        ),
        (format!("SELECT DISTINCT email FROM {t}"), Refused),
        (
            format!("SELECT lag(email) OVER (ORDER BY id) FROM {t}"),
            Refused,
        ),
        (
            format!("SELECT email FROM {t} UNION ALL SELECT 'x'"),
            Refused,
        ),
        (
            format!("SELECT (SELECT email FROM {t} WHERE id IN (1, 2) LIMIT 1)"),
            Refused,
        ),
        (
            format!("SELECT id FROM {t} WHERE email IN (SELECT 'a')"),
            Refused,
        ),
        (
            format!("SELECT u.id FROM {t} u JOIN {t} v USING (email)"),
            Refused,
        ),
        (format!("SELECT {t}_leak()"), Refused),
        (format!("SELECT * FROM {t}_tv"), Refused),
        (format!("SHOW CREATE TABLE {t}"), Refused),
        // Statistics of protected values: row estimates, counts, cardinalities.
        (
            format!("EXPLAIN SELECT id FROM {t}"),
            Denied("row estimates"),
        ),
        ("SHOW TABLE STATUS".to_owned(), Denied("SHOW TABLE STATUS")),
        (format!("SHOW INDEX FROM {t}"), Denied("SHOW INDEX")),
        (format!("SELECT name FROM {t} WHERE id = 1"), Refused),
        (
            format!("SELECT name FROM {t} WHERE id = 1 AND email LIKE 'z%'"),
            Refused,
        ),
        (
            format!("SELECT name FROM {t} WHERE id = 1 AND email LIKE 's%'"),
            Refused,
        ),
        (format!("SELECT name FROM {t} WHERE id = 99"), Refused),
        // Found by review: what the rewriting hides, positions, aliases, writes.
        (
            format!("SELECT id,id,id,id,id,id,id,id,id,id,email FROM {t} PROCEDURE ANALYSE()"),
            Refused,
        ),
        (
            format!("SELECT id, email AS e FROM {t} HAVING e LIKE 'a%'"),
            Refused,
        ),
        (
            format!("SELECT id, email AS e FROM {t} GROUP BY id HAVING e > 'b'"),
            Refused,
        ),
        (format!("SELECT id, email FROM {t} ORDER BY 2"), Refused),
        (
            format!("SELECT email, count(*) FROM {t} GROUP BY 1"),
            Refused,
        ),
        (
            format!("SELECT id, email AS e FROM {t} ORDER BY e"),
            Refused,
        ),
        (format!("UPDATE {t} SET id = NULL WHERE id IN (1)"), Refused),
        (
            format!("INSERT INTO {t} VALUES (99, 'x', 'y', 'z')"),
            Refused,
        ),
        (
            format!("SELECT email FROM {t} INTO OUTFILE '/tmp/{t}.out'"),
            Refused,
        ),
        // Found by the second review: executable comments and line comments hiding words.
        (
            format!("SELECT id,id,id,id,id,id,id,id,id,email FROM {t} /*!PROCEDURE ANALYSE() */"),
            Refused,
        ),
        (
            format!(
                "SELECT id,id,id,id,id,id,id,id,id,id,email FROM {t} /*!PROCEDURE ANALYSE() */"
            ),
            Refused,
        ),
        (
            format!(
                "SELECT id,id,id,id,id,id,id,id,id,id,email FROM {t} -- '\n PROCEDURE ANALYSE() -- '"
            ),
            Refused,
        ),
        (
            format!("SELECT email FROM {t} /*! INTO OUTFILE '/tmp/{t}.out2' */"),
            Refused,
        ),
        // Either masked or refused, never shown.
        (format!("SELECT * FROM {t}_v"), NoLeak),
        (format!("SELECT * FROM (SELECT * FROM {t}) s"), NoLeak),
        (
            format!("WITH c AS (SELECT email FROM {t}) SELECT * FROM c"),
            NoLeak,
        ),
        (format!("SELECT EMAIL FROM {t}"), NoLeak),
        (
            "SELECT min_value FROM mysql.column_stats".to_owned(),
            NoLeak,
        ),
        (
            format!("PREPARE p_{t} FROM 'SELECT email FROM {t}'"),
            NoLeak,
        ),
        (format!("SET @e = (SELECT email FROM {t} LIMIT 1)"), NoLeak),
        (format!("SELECT email INTO @e FROM {t} LIMIT 1"), NoLeak),
        // H4: an uncorrelated scalar subquery that EXPLAIN EXTENDED folds into its value.
        (
            format!(
                "SELECT 1 AS hit FROM dual WHERE (SELECT ssn FROM {t} WHERE id IN (1, 99) LIMIT 1) \
                 LIKE '999-11-0001%'"
            ),
            Refused,
        ),
        (
            format!(
                "SELECT seq FROM seq_0_to_255 WHERE seq = CONV(HEX(SUBSTRING((SELECT email FROM {t} \
                 WHERE id IN (1, 99) LIMIT 1), 1, 1)), 16, 10)"
            ),
            Refused,
        ),
        // H5: a condition on a row pinned by its key, evaluated while explaining.
        (
            format!(
                "SELECT p.id FROM {t} p WHERE p.id = 1 AND IF(p.ssn LIKE '999-11%', exp(1000), 1)"
            ),
            Refused,
        ),
        // H14: a protected value into a variable.
        (format!("SELECT ssn INTO @v FROM {t} WHERE id = 1"), Refused),
        (format!("SELECT ssn FROM {t} WHERE id = 1 INTO @v"), Refused),
    ];
    assert!(attempts.len() >= 60);
    // MariaDB's privileges refuse every read of a protected column, masked ones too (there are no
    // masking views there): what a statement check once masked is refused naming the policy,
    // what it refused either runs (reading only what the user may) or is refused, and what reads
    // only unprotected columns runs.
    let _ = NoLeak;
    // What is refused whatever it reads, and how: a write (the service runs a protected database
    // read-only, and sends only queries), and what reads the protected column with its
    // definer's rights (a function, a TEMPTABLE view), which MariaDB refuses the user.
    // (Quoted as the JSON answer quotes it.)
    let leaked = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
    let denied = [
        (
            format!("UPDATE {t} SET id = NULL WHERE id IN (1)"),
            "runs read-only: only queries are sent (SELECT, WITH, VALUES, SHOW, DESCRIBE, \
             EXPLAIN), and this statement is a UPDATE statement",
        ),
        (
            format!("INSERT INTO {t} VALUES (99, 'x', 'y', 'z')"),
            "runs read-only: only queries are sent (SELECT, WITH, VALUES, SHOW, DESCRIBE, \
             EXPLAIN), and this statement is a INSERT INTO statement",
        ),
        (
            format!("SELECT {t}_leak()"),
            leaked(format!(
                "execute command denied to user 'dp_reader'@'localhost' for routine \
                 'checkdb.{t}_leak'"
            )),
        ),
        (
            format!("SELECT * FROM {t}_tv"),
            leaked(format!(
                "data protection policy \\\"pii\\\" on {t}.email, checkdb.{t}.ssn: the \
                 server refused it (ERROR 1142: SELECT command denied to user \
                 'dp_reader'@'localhost' for table `checkdb`.`{t}_tv`)"
            )),
        ),
    ];
    for (sql, _) in &denied {
        assert!(
            attempts
                .iter()
                .any(|(attempt, expect)| attempt == sql && *expect == Refused),
            "{sql} is an attempt of the table, listed as refused"
        );
    }
    let before = contents(&mut server, std::slice::from_ref(&t)).await;
    let expected: Vec<(String, Expect)> = attempts
        .into_iter()
        .map(|(sql, expect)| {
            if let Some((_, says)) = denied.iter().find(|(denied, _)| *denied == sql) {
                return (sql, Expect::Denied(says));
            }
            let expect = match expect {
                Runs(columns)
                    if columns.is_empty() || columns.iter().any(|c| ["email", "e"].contains(c)) =>
                {
                    Refused
                }
                Runs(columns) => Runs(columns),
                Refused if sql.contains("ssn") || sql.contains("email") => Refused,
                _ => NoLeak,
            };
            (sql, expect)
        })
        .collect();
    let masked = fixture.attempt_all(&expected).await;
    assert_eq!(masked, 0);
    // What runs reads what the user may.
    let result = fixture
        .attempt(
            &format!("SELECT id, name FROM {t} WHERE id = 1"),
            Runs(&["id", "name"]),
        )
        .await;
    assert_eq!(result["rows"], json!([[1, "Alice"]]));
    // Nothing was changed: the table holds what it held, row for row, and no file was written.
    assert_eq!(
        contents(&mut server, std::slice::from_ref(&t)).await,
        before,
        "the table after the attempts"
    );
    assert_eq!(before.len(), 4, "its definition and its 3 rows: {before:?}");
    for file in [format!("/tmp/{t}.out"), format!("/tmp/{t}.out2")] {
        assert!(!std::path::Path::new(&file).exists(), "{file} was written");
    }

    // A user that can read a protected column runs nothing, and is told what to change.
    let unverified = Fixture::protected(
        "mysql",
        PORT,
        &t,
        json!([{"column": format!("{t}.ssn"), "action": "hide"}]),
    )
    .await;
    let (_, answer) = unverified
        .console
        .query(
            &alice(),
            &unverified.db,
            &unverified.credential,
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
    assert!(text.contains("REVOKE"), "{text}");
    assert!(
        !text.contains("PASSWORD"),
        "no grant line is quoted: {text}"
    );

    // Between two runs, a grant added by someone else, or a definer's view granted to the
    // user, refuses every run until undone.
    for (change, undo, says) in [
        (
            format!("GRANT SELECT (ssn) ON checkdb.{t} TO 'dp_reader'@'localhost'"),
            format!("REVOKE SELECT (ssn) ON checkdb.{t} FROM 'dp_reader'@'localhost'"),
            "can read",
        ),
        (
            format!("GRANT SELECT ON checkdb.{t}_v TO 'dp_reader'@'localhost'"),
            format!("REVOKE SELECT ON checkdb.{t}_v FROM 'dp_reader'@'localhost'"),
            "definer's rights",
        ),
        (
            "GRANT SELECT ON checkdb.* TO 'dp_reader'@'localhost'".to_owned(),
            "REVOKE SELECT ON checkdb.* FROM 'dp_reader'@'localhost'".to_owned(),
            "can read",
        ),
        (
            format!("GRANT INSERT ON checkdb.{t} TO 'dp_reader'@'localhost'"),
            format!("REVOKE INSERT ON checkdb.{t} FROM 'dp_reader'@'localhost'"),
            "reads only",
        ),
    ] {
        for host in ["localhost", "127.0.0.1"] {
            let change = change.replace("'localhost'", &format!("'{host}'"));
            server
                .query_drop(&change)
                .await
                .unwrap_or_else(|e| panic!("{change}: {e}"));
        }
        // A database-level grant reaches a session at its next connection: the database's
        // pools are replaced when it changes (a rename will do).
        fixture
            .console
            .send(
                http::Method::PATCH,
                &format!("/api/v1/console/databases/{}", fixture.db),
                None,
                None,
                Some(&json!({"name": format!("renamed {change}")})),
            )
            .await
            .expect(200);
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
        assert!(text.contains(says), "after {change}: {text}");
        assert_eq!(fixture.leaks(&text), None, "{text}");
        for host in ["localhost", "127.0.0.1"] {
            let undo = undo.replace("'localhost'", &format!("'{host}'"));
            server
                .query_drop(&undo)
                .await
                .unwrap_or_else(|e| panic!("{undo}: {e}"));
        }
        fixture
            .attempt(&format!("SELECT id FROM {t} ORDER BY id"), Runs(&["id"]))
            .await;
    }
    assert_eq!(fixture.table, t);
    for statement in [
        format!("REVOKE ALL PRIVILEGES ON checkdb.{t} FROM 'dp_reader'@'localhost'"),
        format!("REVOKE ALL PRIVILEGES ON checkdb.{t} FROM 'dp_reader'@'127.0.0.1'"),
        format!("DROP VIEW {t}_v, {t}_tv"),
        format!("DROP FUNCTION {t}_leak"),
        format!("DROP TABLE {t}"),
    ] {
        server.query_drop(statement).await.unwrap();
    }
}

/// H6: a panel runs read-only, and MariaDB commits DDL outside any transaction, so a statement
/// that is not a query is refused before it is sent: the tables are still there after each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panels_never_change_data_on_mariadb() {
    let mut server = mysql_admin().await;
    let t = format!("ro_items_{}", std::process::id());
    for statement in [
        format!("DROP VIEW IF EXISTS {t}_v"),
        format!("DROP TABLE IF EXISTS {t}, {t}_renamed"),
        format!("CREATE TABLE {t} (id INT PRIMARY KEY, name VARCHAR(16))"),
        format!("INSERT INTO {t} VALUES (1, 'one'), (2, 'two')"),
    ] {
        server.query_drop(&statement).await.unwrap();
    }
    let before = state(&mut server, &t).await;
    assert_eq!(
        before.0,
        [(t.clone(), "BASE TABLE".to_owned())],
        "the one table"
    );
    assert_eq!(
        before.1.len(),
        3,
        "its definition and its 2 rows: {:?}",
        before.1
    );
    let console = run_console();
    let (db, credentials) = console
        .database(
            "mysql",
            PORT,
            json!({}),
            json!([{"username": "checker", "password": PASSWORD}]),
        )
        .await;
    let writes = [
        format!("DROP TABLE {t}"),
        format!("TRUNCATE TABLE {t}"),
        format!("CREATE VIEW {t}_v AS SELECT 1"),
        format!("ALTER TABLE {t} ADD COLUMN extra INT"),
        format!("RENAME TABLE {t} TO {t}_renamed"),
        format!("DELETE FROM {t}"),
        format!("/*!32302 DROP TABLE {t} */"),
        format!("/*M!100100 TRUNCATE TABLE {t} */"),
        format!("SELECT 1 /*! ; DROP TABLE {t} */"),
        format!("SELECT name FROM {t} INTO @v"),
        format!("SELECT 1 INTO OUTFILE '/tmp/{t}.out'"),
    ];
    let panels: Vec<serde_json::Value> = writes
        .iter()
        .chain(std::iter::once(&format!(
            "SELECT id, name FROM {t} ORDER BY id"
        )))
        .map(|query| {
            json!({"title": "p", "details": {"__type__": "query", "query": query,
                   "credential_id": credentials[0]}})
        })
        .collect();
    let dashboard = console
        .send(
            http::Method::POST,
            "/v1/dashboards",
            Some(root()),
            None,
            Some(&json!({"name": "read-only", "restricted_access": false, "panels": panels})),
        )
        .await
        .expect(200)
        .json();
    let _ = &db;
    let run = |index: usize| {
        let path = format!(
            "/v1/dashboards/{}/panels/{}/run",
            dashboard["id"].as_str().unwrap(),
            dashboard["panels"][index]["id"].as_str().unwrap()
        );
        let console = &console;
        async move {
            console
                .send(
                    http::Method::POST,
                    &path,
                    Some(alice()),
                    None,
                    Some(&json!({})),
                )
                .await
        }
    };
    for (index, statement) in writes.iter().enumerate() {
        let answer = run(index).await.expect(422);
        // Refused as not a query, or (an executable comment's `;`) as a second statement.
        assert!(
            answer.text().contains("panels and AI agents run read-only")
                || answer.text().contains("more than one statement"),
            "{statement}: {}",
            answer.text()
        );
        assert_eq!(state(&mut server, &t).await, before, "after {statement}");
    }
    assert!(
        !std::path::Path::new(&format!("/tmp/{t}.out")).exists(),
        "INTO OUTFILE wrote its file"
    );
    let read = run(writes.len()).await.expect(200);
    assert_eq!(read.json()["rows"], json!([[1, "one"], [2, "two"]]));
    server.query_drop(format!("DROP TABLE {t}")).await.unwrap();
}

/// Between two runs of the same protected panel, a change never lets the second read what the
/// first was refused (MariaDB verifies the user at every checkout: nothing is kept to go stale):
/// a view redefined to select the protected column with its definer's rights, a function with
/// its definer's rights granted to the user, columns renamed so that the protected name is one
/// the user may read, a policy change, and the credential rotated to a user that can read the
/// column each refuse the panel until undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_panel_keeps_nothing_across_a_change() {
    let mut server = mysql_admin().await;
    // One name for every run: what an interrupted run left is cleared below.
    let t = "dp_stale".to_owned();
    let hosts = ["localhost", "127.0.0.1"];
    let each_host = |statement: String| {
        hosts
            .iter()
            .map(|host| statement.replace("{host}", host))
            .collect::<Vec<_>>()
    };
    let mut setup = vec![
        format!("DROP VIEW IF EXISTS {t}_v"),
        format!("DROP FUNCTION IF EXISTS {t}_leak"),
        format!("DROP TABLE IF EXISTS {t}"),
        format!("CREATE TABLE {t} (id INT PRIMARY KEY, email VARCHAR(64), name VARCHAR(64))"),
        format!("INSERT INTO {t} VALUES (1, 's3cr3t.alice@leak.test', 'Alice'), (2, NULL, 'Bob')"),
        format!("CREATE SQL SECURITY INVOKER VIEW {t}_v AS SELECT id, name FROM {t}"),
    ];
    for grant in [
        format!("GRANT SELECT (id, name) ON checkdb.{t} TO 'dp_reader'@'{{host}}'"),
        format!("GRANT SELECT ON checkdb.{t}_v TO 'dp_reader'@'{{host}}'"),
    ] {
        setup.extend(each_host(grant));
    }
    // What an interrupted run of this test may have left (there may be nothing to revoke).
    for host in hosts {
        for what in [
            format!("ALL PRIVILEGES ON checkdb.{t}"),
            format!("ALL PRIVILEGES ON checkdb.{t}_v"),
            format!("EXECUTE ON FUNCTION checkdb.{t}_leak"),
        ] {
            let _ = server
                .query_drop(format!("REVOKE {what} FROM 'dp_reader'@'{host}'"))
                .await;
        }
    }
    for statement in setup {
        server
            .query_drop(&statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let seeded: Vec<Option<String>> = server
        .query(format!("SELECT email FROM {t}"))
        .await
        .unwrap();
    assert_known_secrets(&seeded.into_iter().flatten().collect::<Vec<_>>());
    let fixture = Fixture::protected_as(
        "mysql",
        PORT,
        &t,
        json!([{"column": format!("{t}.email"), "action": "mask"}]),
        "dp_reader",
    )
    .await;
    let dashboard = fixture
        .panels(&[
            format!("SELECT id, name FROM {t}_v ORDER BY id"),
            format!("SELECT id, email FROM {t}"),
        ])
        .await;
    let run = |index: usize| fixture.run_unleaked(&dashboard, index);
    let runs = || async {
        for _ in 0..2 {
            assert_eq!(
                run(0).await.expect(200).json()["rows"],
                json!([[1, "Alice"], [2, "Bob"]])
            );
            // MariaDB's privileges refuse the protected column itself.
            run(1).await.expect(422);
        }
    };
    runs().await;
    for (change, undo, says) in [
        (
            vec![format!(
                "CREATE OR REPLACE SQL SECURITY DEFINER VIEW {t}_v AS SELECT id, email AS name \
                 FROM {t}"
            )],
            vec![format!(
                "CREATE OR REPLACE SQL SECURITY INVOKER VIEW {t}_v AS SELECT id, name FROM {t}"
            )],
            "definer's rights",
        ),
        (
            [format!(
                "CREATE FUNCTION {t}_leak() RETURNS VARCHAR(64) READS SQL DATA SQL SECURITY \
                 DEFINER RETURN (SELECT email FROM {t} WHERE id = 1)"
            )]
            .into_iter()
            .chain(each_host(format!(
                "GRANT EXECUTE ON FUNCTION checkdb.{t}_leak TO 'dp_reader'@'{{host}}'"
            )))
            .collect(),
            each_host(format!(
                "REVOKE EXECUTE ON FUNCTION checkdb.{t}_leak FROM 'dp_reader'@'{{host}}'"
            ))
            .into_iter()
            .chain([format!("DROP FUNCTION {t}_leak")])
            .collect(),
            "EXECUTE",
        ),
    ] {
        for statement in &change {
            server
                .query_drop(statement)
                .await
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
        for index in [0, 1] {
            let text = run(index).await.expect(422).text();
            assert!(
                text.contains(says),
                "after {change:?}, panel {index}: {text}"
            );
        }
        for statement in &undo {
            server
                .query_drop(statement)
                .await
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
        runs().await;
    }
    // The protected name moves to the column the user may read: the user can read it.
    let (away, back) = (
        format!("ALTER TABLE {t} RENAME COLUMN email TO mail, RENAME COLUMN name TO email"),
        format!("ALTER TABLE {t} RENAME COLUMN email TO name, RENAME COLUMN mail TO email"),
    );
    server
        .query_drop(&away)
        .await
        .unwrap_or_else(|e| panic!("{away}: {e}"));
    let answer = run(0).await;
    assert_ne!(answer.status, 200, "after {away}: {}", answer.text());
    server
        .query_drop(&back)
        .await
        .unwrap_or_else(|e| panic!("{back}: {e}"));
    runs().await;
    // The policies (a column the user may read becomes hidden), then the credential rotated
    // to a user that can read the protected column.
    fixture
        .policy_and_rotation_refuse(&t, "dp_reader", run, runs)
        .await;
    let mut cleanup = each_host(format!(
        "REVOKE ALL PRIVILEGES ON checkdb.{t} FROM 'dp_reader'@'{{host}}'"
    ));
    cleanup.extend(each_host(format!(
        "REVOKE ALL PRIVILEGES ON checkdb.{t}_v FROM 'dp_reader'@'{{host}}'"
    )));
    cleanup.extend([format!("DROP VIEW {t}_v"), format!("DROP TABLE {t}")]);
    for statement in cleanup {
        server
            .query_drop(&statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
}
