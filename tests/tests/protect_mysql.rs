//! Data protection against someone trying to get around it, on a real MariaDB
//! (`.ci/db-servers-up.sh`): a table of attempts to read a protected column (masked `email`,
//! hidden `ssn`), each run in every format, asserting that no protected value appears in any
//! answer, that what can be masked runs masked, and that unprotected work still runs (docs/data-protection.md,
//! "Data protection").

mod run_support;

use mysql_async::prelude::Queryable as _;
use run_support::protect::{Expect, Fixture};
use run_support::*;
use serde_json::json;

const PORT: u16 = 3306;

async fn admin() -> mysql_async::Conn {
    mysql_async::Conn::new(
        mysql_async::OptsBuilder::default()
            .ip_or_hostname("127.0.0.1")
            .tcp_port(PORT)
            .user(Some("checker"))
            .pass(Some(PASSWORD))
            .db_name(Some("checkdb")),
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "MariaDB is not running on 127.0.0.1:{PORT} ({error}): start the test database \
             servers with `sudo bash .ci/db-servers-up.sh`"
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_columns_never_leak_and_unprotected_work_runs() {
    let mut server = admin().await;
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
    let fixture = Fixture::protected(
        "mysql",
        PORT,
        &t,
        json!([
            {"column": format!("{t}.email"), "action": "mask"},
            {"column": format!("checkdb.{t}.ssn"), "action": "hide"},
        ]),
    )
    .await;
    use Expect::{NoLeak, Refused, Runs};
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
        (
            format!("SELECT email FROM {t} WHERE id IN (1, 2) FOR UPDATE"),
            Runs(&["email"]),
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
    ];
    assert!(attempts.len() >= 30);
    let masked = fixture.attempt_all(&attempts).await;
    assert!(masked >= 8, "masked columns seen: {masked}");
    let result = fixture
        .attempt(
            &format!("SELECT email FROM {t} ORDER BY id"),
            Runs(&["email"]),
        )
        .await;
    assert_eq!(result["rows"], json!([["****"], ["****"], [null]]));
    assert_eq!(fixture.table, t);
    for statement in [
        format!("DROP VIEW {t}_v, {t}_tv"),
        format!("DROP FUNCTION {t}_leak"),
        format!("DROP TABLE {t}"),
    ] {
        server.query_drop(statement).await.unwrap();
    }
}
