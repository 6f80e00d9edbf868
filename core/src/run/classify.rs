//! Whether a statement only reads, as a SQL parser for its database's dialect reads it
//! ([`sqlparser`]), before it is sent: panels and AI agents run read-only, and so does every run on
//! a database with data protection (docs/queries.md, "Read-only runs").
//!
//! A read-only transaction is not enough on its own: MariaDB and Oracle commit before DDL and run
//! it outside the transaction, so a `DROP TABLE` sent "read-only" takes effect. So the statement
//! is classified first, and refused unless it is a query: `SELECT`, `WITH … SELECT`, `VALUES`,
//! `SHOW`, `DESCRIBE`, or `EXPLAIN` of one of those. Anything nested is read too: a
//! data-modifying `WITH` (`WITH d AS (DELETE …) SELECT …`), `SELECT … INTO` (a new table in
//! PostgreSQL, a variable or a file in MySQL) and `EXPLAIN ANALYZE` of a write are refused. A
//! statement the parser can't read is refused too: what isn't understood isn't sent.
//!
//! MySQL and MariaDB run the text of an executable comment (`/*! … */`, `/*!50110 … */`,
//! `/*M! … */`) as code, so [`super::statement`] reads it as code: it is parsed and classified
//! with the rest of the statement.
//!
//! The database enforces what it can as well: PostgreSQL's and MySQL's runs are in a read-only
//! transaction, ClickHouse's with `readonly = 2`.

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{Query, Select, SetExpr, Statement, Visit as _, Visitor};
use sqlparser::dialect::{
    ClickHouseDialect, Dialect as Parsed, MsSqlDialect, MySqlDialect, OracleDialect,
    PostgreSqlDialect,
};
use sqlparser::parser::Parser;

use super::statement::{Dialect, for_parsing};

/// Statements whose answer [`read_only`] keeps (then it forgets them all and starts again).
const KEPT: usize = 4096;

/// What [`read_only`] answered, by dialect and text: a panel's statement is classified once,
/// not at every run (the answer depends on nothing else).
#[allow(clippy::type_complexity, reason = "a memo, read here only")]
static KNOWN: std::sync::LazyLock<
    std::sync::Mutex<HashMap<Dialect, HashMap<String, Result<(), String>>>>,
> = std::sync::LazyLock::new(Default::default);

/// `Ok` when `text` (one statement, a panel's `${key}` inputs still in it) only reads; `Err`
/// says why not, as the end of a sentence that begins "… runs read-only: ".
pub fn read_only(text: &str, dialect: Dialect) -> Result<(), String> {
    remembered(&KNOWN, text, dialect, classified)
}

/// The answer `memo` keeps for `text` in `dialect`, or `classify`'s, then kept (the memo is
/// emptied when it holds [`KEPT`] answers).
#[allow(clippy::type_complexity, reason = "a memo, read here only")]
fn remembered(
    memo: &std::sync::Mutex<HashMap<Dialect, HashMap<String, Result<(), String>>>>,
    text: &str,
    dialect: Dialect,
    classify: fn(&str, Dialect) -> Result<(), String>,
) -> Result<(), String> {
    let known = memo
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&dialect)
        .and_then(|known| known.get(text))
        .cloned();
    if let Some(known) = known {
        return known;
    }
    let answer = classify(text, dialect);
    let mut kept = memo
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let kept = kept.entry(dialect).or_default();
    if kept.len() >= KEPT {
        kept.clear();
    }
    kept.insert(text.to_owned(), answer.clone());
    answer
}

/// `Ok` when `text`, a statement [`read_only`] admits, may also run on a database with data
/// protection; `Err` says why not, as the end of a sentence that begins "… with data protection:
/// ". A protected run returns no figure computed from protected values: `EXPLAIN` runs only as
/// PostgreSQL's `EXPLAIN (COSTS OFF)` without `ANALYZE` (row estimates, costs and actual rows
/// count protected values; other databases' `EXPLAIN` prints estimates it can't turn off), and
/// the `SHOW` statements that answer statistics or credentials are refused: `SHOW TABLE STATUS`
/// (row counts, a live checksum), `SHOW INDEX`/`KEYS` (cardinalities), `SHOW GRANTS` and
/// `SHOW CREATE USER` (the credential's password hash).
pub fn protected(text: &str, dialect: Dialect) -> Result<(), String> {
    remembered(&PROTECTED, text, dialect, protected_now)
}

/// What [`protected`] answered, by dialect and text (a panel's statement is read once).
#[allow(clippy::type_complexity, reason = "a memo, read here only")]
static PROTECTED: std::sync::LazyLock<
    std::sync::Mutex<HashMap<Dialect, HashMap<String, Result<(), String>>>>,
> = std::sync::LazyLock::new(Default::default);

/// [`protected`], read by the parser.
fn protected_now(text: &str, dialect: Dialect) -> Result<(), String> {
    for statement in &parsed(text, dialect)? {
        if let Statement::Explain {
            analyze, options, ..
        } = statement
        {
            let options: Vec<String> = options
                .iter()
                .flatten()
                .map(|option| option.to_string().to_ascii_uppercase())
                .collect();
            let analyzed = *analyze
                || options.iter().any(|option| {
                    option.starts_with("ANALYZE")
                        && !matches!(option.as_str(), "ANALYZE OFF" | "ANALYZE FALSE")
                });
            let costs_off = options
                .iter()
                .any(|option| matches!(option.as_str(), "COSTS OFF" | "COSTS FALSE"));
            if dialect != Dialect::Postgres || analyzed || !costs_off {
                return Err(match dialect {
                    Dialect::Postgres => "EXPLAIN runs only as EXPLAIN (COSTS OFF) without \
                        ANALYZE: estimates and actual rows count protected values"
                        .to_owned(),
                    _ => format!(
                        "EXPLAIN does not run: {}'s plans print row estimates, which count \
                         protected values",
                        dialect.name()
                    ),
                });
            }
        }
        let text = statement.to_string().to_ascii_uppercase();
        let words: Vec<&str> = text.split_whitespace().take(3).collect();
        let refused = match words.as_slice() {
            ["SHOW", "TABLE", "STATUS", ..] => Some("SHOW TABLE STATUS (row counts, checksums)"),
            ["SHOW", "INDEX" | "INDEXES" | "KEYS", ..] => Some("SHOW INDEX (cardinalities)"),
            ["SHOW", "GRANTS", ..] => Some("SHOW GRANTS (the credential's grants and hash)"),
            ["SHOW", "CREATE", "USER"] => Some("SHOW CREATE USER (the credential's password hash)"),
            _ => None,
        };
        if let Some(what) = refused {
            return Err(format!(
                "{what} does not run: it answers what protected values are, or the credential's \
                 secrets"
            ));
        }
    }
    Ok(())
}

/// The parser's dialect of `dialect`.
fn parser_dialect(dialect: Dialect) -> &'static dyn Parsed {
    match dialect {
        Dialect::Postgres => &PostgreSqlDialect {},
        Dialect::Mysql => &MySqlDialect {},
        Dialect::Clickhouse => &ClickHouseDialect {},
        Dialect::Sqlserver => &MsSqlDialect {},
        Dialect::Oracle => &OracleDialect {},
    }
}

/// [`read_only`], read by the parser.
fn classified(text: &str, dialect: Dialect) -> Result<(), String> {
    for statement in &parsed(text, dialect)? {
        if let ControlFlow::Break(what) = statement.visit(&mut Writes) {
            return Err(format!(
                "only queries are sent (SELECT, WITH, VALUES, SHOW, DESCRIBE, EXPLAIN), and \
                 this statement {what}"
            ));
        }
    }
    Ok(())
}

/// `text` as the parser of `dialect` reads it (its executable comments as code); what it can't
/// read is refused, saying why.
fn parsed(text: &str, dialect: Dialect) -> Result<Vec<Statement>, String> {
    let readable = for_parsing(text, dialect)?;
    Parser::parse_sql(parser_dialect(dialect), &readable).map_err(|error| {
        format!(
            "this statement can't be read as {} SQL ({}), and only a statement read to be a \
             query is sent",
            dialect.name(),
            one_line(&error.to_string())
        )
    })
}

/// The parser's message on one line, without the sqlparser prefix.
fn one_line(message: &str) -> String {
    message
        .trim_start_matches("sql parser error: ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Breaks with what a statement does that is not reading.
struct Writes;

impl Visitor for Writes {
    type Break = String;

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<String> {
        match statement {
            Statement::Query(_) | Statement::Explain { .. } | Statement::ExplainTable { .. } => {
                ControlFlow::Continue(())
            }
            other => {
                let text = other.to_string();
                if text.starts_with("SHOW ") {
                    return ControlFlow::Continue(());
                }
                ControlFlow::Break(format!("is {}", kind(&text)))
            }
        }
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<String> {
        match &*query.body {
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) => {
                ControlFlow::Break("changes data inside a query".to_owned())
            }
            _ => ControlFlow::Continue(()),
        }
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<String> {
        if select.into.is_some() {
            return ControlFlow::Break("writes its result somewhere (SELECT … INTO)".to_owned());
        }
        ControlFlow::Continue(())
    }
}

/// The statement's kind, from its first words: `a DROP TABLE statement`.
fn kind(text: &str) -> String {
    let words: Vec<&str> = text
        .split_whitespace()
        .take_while(|word| word.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .take(2)
        .collect();
    if words.is_empty() {
        "not a query".to_owned()
    } else {
        format!("a {} statement", words.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str, dialect: Dialect) -> String {
        read_only(text, dialect).expect_err(text)
    }

    #[test]
    fn queries_read() {
        for text in [
            "SELECT 1",
            "select id, email from users where id = ${id}",
            "SELECT * FROM t WHERE name = '${name}'",
            "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
            "VALUES (1), (2)",
            "SHOW search_path",
            "EXPLAIN SELECT 1",
            "SELECT x::int, ARRAY[1, 2], '{}'::jsonb ->> 'a' FROM t",
            "SELECT 1 /* a comment */ -- another\n",
            "SELECT $tag$ DROP TABLE t $tag$",
        ] {
            assert_eq!(read_only(text, Dialect::Postgres), Ok(()), "{text}");
        }
        for text in [
            "SELECT 1 FROM dual",
            "SHOW TABLES",
            "DESCRIBE t",
            "SELECT * FROM seq_0_to_10 # a comment",
            "SELECT /*!50000 1 + */ 1",
        ] {
            assert_eq!(read_only(text, Dialect::Mysql), Ok(()), "{text}");
        }
        assert_eq!(
            read_only("SELECT * FROM system.numbers LIMIT 3", Dialect::Clickhouse),
            Ok(())
        );
        assert_eq!(
            read_only("SELECT TOP 3 * FROM t", Dialect::Sqlserver),
            Ok(())
        );
        assert_eq!(
            read_only("SELECT * FROM t WHERE a = ${a}", Dialect::Oracle),
            Ok(())
        );
    }

    #[test]
    fn writes_and_ddl_are_refused_on_every_dialect() {
        for dialect in [
            Dialect::Postgres,
            Dialect::Mysql,
            Dialect::Clickhouse,
            Dialect::Sqlserver,
            Dialect::Oracle,
        ] {
            for text in [
                "DROP TABLE t",
                "TRUNCATE TABLE t",
                "CREATE VIEW v AS SELECT 1",
                "ALTER TABLE t ADD COLUMN c int",
                "DELETE FROM t",
                "INSERT INTO t VALUES (1)",
                "UPDATE t SET a = 1",
            ] {
                let why = refused(text, dialect);
                assert!(
                    why.contains("only queries are sent"),
                    "{dialect:?} {text}: {why}"
                );
            }
        }
        assert!(refused("DROP TABLE t", Dialect::Mysql).contains("a DROP TABLE statement"));
    }

    #[test]
    fn nested_writes_are_refused() {
        for text in [
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            "SELECT * INTO t2 FROM t",
            "EXPLAIN ANALYZE DELETE FROM t",
            "ALTER ROLE CURRENT_USER PASSWORD 'x'",
            "SET ROLE admin",
            "SET SESSION AUTHORIZATION admin",
            "GRANT SELECT ON t TO PUBLIC",
            "DO $$ BEGIN EXECUTE 'DROP TABLE t'; END $$",
            "COPY t TO STDOUT",
            "CALL p()",
        ] {
            refused(text, Dialect::Postgres);
        }
        for text in [
            "SELECT ssn INTO @v FROM rt_people",
            "SELECT ssn FROM rt_people INTO @v",
            "SELECT 1 INTO OUTFILE '/tmp/x'",
            "SET PASSWORD = PASSWORD('x')",
            "RENAME TABLE a TO b",
        ] {
            refused(text, Dialect::Mysql);
        }
    }

    #[test]
    fn executable_comments_are_read_as_code() {
        for text in [
            "SELECT 1 /*! ; DROP TABLE t */",
            "/*!32302 DROP TABLE t */",
            "/*M!100100 DROP TABLE t */",
            "SELECT 1 FROM dual WHERE 1 = /*!50000 (SELECT 1 INTO @v) */",
        ] {
            refused(text, Dialect::Mysql);
        }
        // Not in PostgreSQL, where it is a comment.
        assert_eq!(
            read_only("SELECT 1 /*! DROP TABLE t */", Dialect::Postgres),
            Ok(())
        );
    }

    #[test]
    fn protected_runs_answer_no_estimates_and_no_credentials() {
        for (text, dialect) in [
            ("SELECT id FROM t WHERE id = 2", Dialect::Postgres),
            (
                "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE id = 2",
                Dialect::Postgres,
            ),
            (
                "EXPLAIN (COSTS OFF, FORMAT JSON) SELECT id FROM t",
                Dialect::Postgres,
            ),
            (
                "EXPLAIN (ANALYZE OFF, COSTS FALSE) SELECT id FROM t",
                Dialect::Postgres,
            ),
            ("SHOW search_path", Dialect::Postgres),
            ("SHOW TABLES", Dialect::Mysql),
            ("SHOW COLUMNS FROM t", Dialect::Mysql),
            ("SELECT id FROM t", Dialect::Mysql),
        ] {
            assert_eq!(read_only(text, dialect), Ok(()), "{text}");
            assert_eq!(protected(text, dialect), Ok(()), "{text}");
        }
        for (text, dialect, says) in [
            (
                "EXPLAIN SELECT id FROM t WHERE id = 2",
                Dialect::Postgres,
                "COSTS OFF",
            ),
            (
                "EXPLAIN ANALYZE SELECT id FROM t",
                Dialect::Postgres,
                "COSTS OFF",
            ),
            (
                "EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM t",
                Dialect::Postgres,
                "ANALYZE",
            ),
            (
                "EXPLAIN (ANALYZE TRUE, COSTS OFF) SELECT id FROM t",
                Dialect::Postgres,
                "ANALYZE",
            ),
            (
                "EXPLAIN (FORMAT JSON) SELECT DISTINCT ssn FROM t",
                Dialect::Postgres,
                "COSTS OFF",
            ),
            ("EXPLAIN SELECT id FROM t", Dialect::Mysql, "row estimates"),
            ("SHOW TABLE STATUS", Dialect::Mysql, "SHOW TABLE STATUS"),
            ("SHOW INDEX FROM t", Dialect::Mysql, "SHOW INDEX"),
        ] {
            let refused = protected(text, dialect).expect_err(text);
            assert!(refused.contains(says), "{text}: {refused}");
        }
        // Either refused here or not read at all (then read_only refuses it first).
        for text in [
            "SHOW GRANTS",
            "SHOW GRANTS FOR CURRENT_USER",
            "SHOW CREATE USER checker",
        ] {
            assert!(
                read_only(text, Dialect::Mysql).is_err()
                    || protected(text, Dialect::Mysql).is_err(),
                "{text}"
            );
        }
        let refused = protected("EXPLAIN SELECT 1", Dialect::Clickhouse).expect_err("EXPLAIN");
        assert!(refused.contains("row estimates"), "{refused}");
    }

    #[test]
    fn what_does_not_parse_is_refused() {
        let why = refused("SELEC 1", Dialect::Postgres);
        assert!(why.contains("can't be read as PostgreSQL SQL"), "{why}");
    }
}
