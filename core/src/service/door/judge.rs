//! What the door lets through, statement by statement, before any of a text is sent: the
//! console's rules for a run on the same credential (docs/door.md, "What is refused").
//!
//! - A text of several statements is judged whole: one refused part refuses them all, before
//!   any part runs.
//! - Always refused: `COPY` (the door relays no copy stream: download a result in the console),
//!   `LISTEN` (notifications would outlive the statement's rules), `SET ROLE`,
//!   `SET SESSION AUTHORIZATION` and their `RESET`s, and `set_config` unless its first argument
//!   is a plain literal naming another setting than `role` or `session_authorization` (a
//!   session keeps the role of its credential, whose privileges data protection verified).
//! - On a database with data protection: what a console run refuses there (only reads, no
//!   statistics: [`crate::run::classify`]).

use std::sync::LazyLock;

use regex::Regex;

use super::frame::Report;
use crate::run::classify;
use crate::run::statement::{Dialect, for_parsing, statements};

/// What the rows of a statement are counted under for the row cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Counted {
    /// Its own result.
    Own,
    /// A cursor's (`FETCH` from it): all its fetches together.
    Cursor(String),
}

/// A statement the door lets through, and what it does to the door's counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Judged {
    /// Its rows' count.
    pub(super) counted: Counted,
    /// The cursor it declares, whose count starts again.
    pub(super) declares: Option<String>,
    /// Whether it is a catalog read ([`is_catalog`]): counted per session, not audited alone.
    pub(super) catalog: bool,
}

/// The rules a text is judged under.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rules {
    /// The database has data protection: reads only, no statistics.
    pub(super) protected: bool,
}

/// Judges every statement of `text` (a simple query's whole text, or a `Parse`'s statement):
/// each one's counts, or the refusal of the whole.
pub(super) fn judge(text: &str, rules: Rules) -> Result<Vec<Judged>, Report> {
    let parts = statements(text, Dialect::Postgres)
        .map_err(|why| Report::error("42601", format!("the statement {why}")))?;
    parts.iter().map(|part| judge_one(part, rules)).collect()
}

fn judge_one(part: &str, rules: Rules) -> Result<Judged, Report> {
    let code = for_parsing(part, Dialect::Postgres)
        .map_err(|why| Report::error("42601", format!("the statement {why}")))?;
    // The first words as PostgreSQL reads them: `SET role='x'` and `SET "role" = x` are `set`,
    // `role`.
    let words: Vec<String> = code
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ';' | '='))
        .map(|w| w.trim_matches('"'))
        .filter(|w| !w.is_empty())
        .take(4)
        .map(str::to_lowercase)
        .collect();
    // A Unicode-escaped identifier (`U&"set\005fconfig"`) could name anything.
    if code.to_ascii_lowercase().contains("u&\"") {
        return Err(Report::error(
            "42601",
            "the door reads no Unicode-escaped identifier (U&\"…\"): spell the name out",
        ));
    }
    let first = |n: usize| words.iter().take(n).map(String::as_str).collect::<Vec<_>>();
    match first(1).as_slice() {
        ["copy"] => {
            return Err(Report::error(
                "0A000",
                "COPY does not go through the door: it relays no copy stream",
            )
            .hint(
                "read the rows with SELECT, or run the query in the console and download its \
                 result as CSV",
            ));
        }
        ["listen"] => {
            return Err(Report::error(
                "0A000",
                "LISTEN does not go through the door: a notification would reach you past the \
                 statement's rules",
            ));
        }
        _ => {}
    }
    let sets_role = matches!(
        first(2).as_slice(),
        ["set" | "reset", "role"] | ["set" | "reset", "session_authorization"]
    ) || matches!(
        first(3).as_slice(),
        ["set", "session" | "local", "role"]
            | ["set", "session", "authorization"]
            | ["reset", "session", "authorization"]
    ) || matches!(
        first(4).as_slice(),
        ["set", "session" | "local", "session", "authorization"]
    );
    if sets_role {
        return Err(role_refused());
    }
    // How the text is read must stay how the door reads it: standard strings, and no client
    // encoding whose characters can hold a quote or a backslash.
    let sets_lexing = matches!(
        first(2).as_slice(),
        [
            "set" | "reset",
            "standard_conforming_strings" | "client_encoding" | "backslash_quote" | "names"
        ]
    ) || matches!(
        first(3).as_slice(),
        [
            "set",
            "session" | "local",
            "standard_conforming_strings" | "client_encoding" | "backslash_quote" | "names"
        ]
    );
    if sets_lexing {
        return Err(lexing_refused());
    }
    if let Some(refused) = set_config_refused(&code) {
        return Err(refused);
    }
    if rules.protected {
        classify::read_only(part, Dialect::Postgres).map_err(|why| {
            Report::error(
                "25006",
                format!("a database with data protection runs read-only: {why}"),
            )
        })?;
        classify::protected(part, Dialect::Postgres).map_err(|why| {
            Report::error(
                "42501",
                format!("a database with data protection answers no statistics: {why}"),
            )
        })?;
    }
    let counted = match first(1).as_slice() {
        ["fetch"] => cursor_of_fetch(&code).map_or(Counted::Own, Counted::Cursor),
        _ => Counted::Own,
    };
    let declares = (words.first().map(String::as_str) == Some("declare"))
        .then(|| code.split_whitespace().nth(1).map(identifier))
        .flatten();
    Ok(Judged {
        counted,
        declares,
        catalog: is_catalog(part),
    })
}

/// The functions a catalog read may call: the catalog's own and plain value functions.
const CATALOG_FUNCTIONS: &[&str] = &[
    "array_agg",
    "array_length",
    "array_lower",
    "array_position",
    "array_to_string",
    "array_upper",
    "btrim",
    "coalesce",
    "col_description",
    "concat",
    "count",
    "current_database",
    "current_schema",
    "current_schemas",
    "current_setting",
    "current_user",
    "format_type",
    "generate_series",
    "has_column_privilege",
    "has_database_privilege",
    "has_function_privilege",
    "has_schema_privilege",
    "has_sequence_privilege",
    "has_table_privilege",
    "length",
    "lower",
    "max",
    "min",
    "nullif",
    "obj_description",
    "pg_encoding_to_char",
    "pg_function_is_visible",
    "pg_get_constraintdef",
    "pg_get_expr",
    "pg_get_function_arguments",
    "pg_get_function_identity_arguments",
    "pg_get_function_result",
    "pg_get_indexdef",
    "pg_get_keywords",
    "pg_get_partkeydef",
    "pg_get_ruledef",
    "pg_get_serial_sequence",
    "pg_get_statisticsobjdef_columns",
    "pg_get_triggerdef",
    "pg_get_userbyid",
    "pg_get_viewdef",
    "pg_has_role",
    "pg_is_in_recovery",
    "pg_opclass_is_visible",
    "pg_table_is_visible",
    "pg_tablespace_location",
    "pg_type_is_visible",
    "pg_collation_is_visible",
    "pg_conversion_is_visible",
    "pg_operator_is_visible",
    "pg_ts_config_is_visible",
    "quote_ident",
    "regexp_replace",
    "replace",
    "row_number",
    "session_user",
    "shobj_description",
    "string_agg",
    "substring",
    "translate",
    "trim",
    "unnest",
    "upper",
    "version",
];

/// Catalog relations that hold more than the catalog: password hashes, other servers'
/// credentials, column statistics (values of the data), large objects, the server's files.
const SENSITIVE: &[&str] = &[
    "pg_authid",
    "pg_shadow",
    "pg_user_mapping",
    "pg_user_mappings",
    "pg_subscription",
    "pg_statistic",
    "pg_statistic_ext_data",
    "pg_stats",
    "pg_stats_ext",
    "pg_largeobject",
    "pg_file_settings",
    "pg_hba_file_rules",
    "pg_ident_file_mappings",
];

/// Whether `text` only reads the catalog: a query naming only `pg_catalog` and
/// `information_schema` relations (qualified; none of [`SENSITIVE`]), no function in its
/// `FROM`, and calling only [`CATALOG_FUNCTIONS`]; what GUI clients send by the dozen on
/// connect.
pub(super) fn is_catalog(text: &str) -> bool {
    use std::ops::ControlFlow;

    use sqlparser::ast::{Expr, ObjectName, ObjectNamePart, TableFactor, Visit as _, Visitor};

    struct Catalog;

    fn parts(name: &ObjectName) -> Vec<String> {
        name.0
            .iter()
            .map(|part| match part {
                ObjectNamePart::Identifier(ident) => ident.value.to_lowercase(),
                other => other.to_string().to_lowercase(),
            })
            .collect()
    }

    impl Visitor for Catalog {
        type Break = ();

        fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
            let parts = parts(relation);
            // Qualified: an unqualified `pg_x` may be a table of the user's own.
            let ok = match parts.as_slice() {
                [schema, name] | [_, schema, name] => {
                    (schema == "pg_catalog" || schema == "information_schema")
                        && !SENSITIVE.contains(&name.as_str())
                }
                _ => false,
            };
            if ok {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        }

        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            // Tables, subqueries and parenthesised joins; never a function in FROM.
            match factor {
                TableFactor::Table { args: None, .. }
                | TableFactor::Derived { lateral: false, .. }
                | TableFactor::NestedJoin { .. } => ControlFlow::Continue(()),
                _ => ControlFlow::Break(()),
            }
        }

        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if let Expr::Function(function) = expr {
                let parts = parts(&function.name);
                let name = match parts.as_slice() {
                    [name] | [_, name] => name.as_str(),
                    _ => return ControlFlow::Break(()),
                };
                if parts.len() == 2 && parts[0] != "pg_catalog" {
                    return ControlFlow::Break(());
                }
                if !CATALOG_FUNCTIONS.contains(&name) {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }

    // Most statements read a table of their own: one that names a relation (`from`) but
    // neither the catalog's prefix nor its schema is none, without parsing it.
    let lower = text.to_ascii_lowercase();
    if lower.contains("from") && !lower.contains("pg_") && !lower.contains("information_schema") {
        return false;
    }
    if classify::read_only(text, Dialect::Postgres).is_err() {
        return false;
    }
    let Ok(code) = for_parsing(text, Dialect::Postgres) else {
        return false;
    };
    let Ok(parsed) =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &code)
    else {
        return false;
    };
    parsed.len() == 1
        && matches!(parsed[0], sqlparser::ast::Statement::Query(_))
        && parsed[0].visit(&mut Catalog).is_continue()
}

fn lexing_refused() -> Report {
    Report::error(
        "42501",
        "a door session keeps standard strings and its client encoding: the door reads each \
         statement as the database does",
    )
}

fn role_refused() -> Report {
    Report::error(
        "42501",
        "a door session keeps the role of its credential: SET ROLE and SET SESSION \
         AUTHORIZATION are refused",
    )
    .hint("connect with the credential you need: the database string's `:username`")
}

/// `set_config` calls: refused unless each one's first argument is a plain literal naming a
/// setting other than the role's.
fn set_config_refused(code: &str) -> Option<Report> {
    static CALL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?i)"?\bset_config"?\s*\(\s*('(?:[^'\\]|'')*'\s*,)?"#)
            .expect("the pattern is valid")
    });
    for call in CALL.captures_iter(code) {
        let setting = call.get(1).map(|m| {
            m.as_str()
                .trim_end_matches(',')
                .trim()
                .trim_matches('\'')
                .to_lowercase()
        });
        match setting.as_deref() {
            None => {
                return Some(Report::error(
                    "42501",
                    "set_config is let through only with a literal setting name",
                ));
            }
            Some("role" | "session_authorization") => return Some(role_refused()),
            Some("standard_conforming_strings" | "client_encoding" | "backslash_quote") => {
                return Some(lexing_refused());
            }
            Some(_) => {}
        }
    }
    None
}

/// The cursor a `FETCH` reads: its last word (`FETCH [direction] [FROM | IN] name`).
fn cursor_of_fetch(code: &str) -> Option<String> {
    code.split_whitespace()
        .last()
        .map(|w| w.trim_end_matches(';'))
        .filter(|w| !w.is_empty())
        .map(identifier)
}

/// A cursor's name as PostgreSQL folds it: quoted kept, else lower case.
fn identifier(word: &str) -> String {
    match word.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => word.to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: Rules = Rules { protected: false };
    const PROTECTED: Rules = Rules { protected: true };

    fn refused(text: &str, rules: Rules) -> String {
        judge(text, rules).unwrap_err().code.to_owned()
    }

    #[test]
    fn copy_listen_and_role_changes_are_refused_wherever_they_are() {
        assert_eq!(refused("COPY t TO STDOUT", OPEN), "0A000");
        assert_eq!(
            refused("select 1; /* x */ copy t from stdin", OPEN),
            "0A000"
        );
        assert_eq!(refused("LISTEN x", OPEN), "0A000");
        for text in [
            "SET ROLE admin",
            "set session role admin",
            "SET LOCAL ROLE admin",
            "RESET ROLE",
            "SET SESSION AUTHORIZATION postgres",
            "set session session authorization postgres",
            "RESET SESSION AUTHORIZATION",
            "SELECT set_config('role', 'admin', false)",
            "SELECT SET_CONFIG ( 'ROLE' , 'admin', false)",
            "SELECT \"set_config\"('session_authorization', 'x', false)",
            "SET role='postgres'",
            "SET \"role\" = postgres",
            "RESET \"role\"",
            "SELECT set_config(name, 'admin', false) FROM (SELECT 'role' AS name) s",
            "SELECT set_config(E'role', 'admin', false)",
        ] {
            assert_eq!(refused(text, OPEN), "42501", "{text}");
        }
        assert!(judge("SELECT set_config('search_path', 'a', false)", OPEN).is_ok());
        for text in [
            "SET standard_conforming_strings = off",
            "set standard_conforming_strings to off",
            "SET client_encoding = 'SJIS'",
            "SET NAMES 'BIG5'",
            "RESET client_encoding",
            "SELECT set_config('standard_conforming_strings', 'off', false)",
        ] {
            assert_eq!(refused(text, OPEN), "42501", "{text}");
        }
        assert_eq!(
            refused("SELECT U&\"set\\005fconfig\"('role', 'x', false)", OPEN),
            "42601"
        );
        assert!(judge("SET search_path = a; SELECT 'set role'", OPEN).is_ok());
        assert!(judge("-- SET ROLE x\nSELECT 1", OPEN).is_ok());
    }

    #[test]
    fn a_protected_database_reads_only() {
        assert_eq!(refused("DELETE FROM t", PROTECTED), "25006");
        assert_eq!(refused("SELECT 1; DELETE FROM t", PROTECTED), "25006");
        assert!(judge("DELETE FROM t", OPEN).is_ok());
        assert_eq!(
            refused("EXPLAIN ANALYZE SELECT * FROM t", PROTECTED),
            "42501"
        );
        assert!(judge("SELECT * FROM t", PROTECTED).is_ok());
    }

    #[test]
    fn fetches_count_under_their_cursor() {
        let judged = judge(
            "DECLARE \"C1\" CURSOR FOR SELECT 1; FETCH FORWARD 50 FROM \"C1\"; FETCH 5 c2",
            OPEN,
        )
        .unwrap();
        assert_eq!(judged[0].declares.as_deref(), Some("C1"));
        assert_eq!(judged[1].counted, Counted::Cursor("C1".to_owned()));
        assert_eq!(judged[2].counted, Counted::Cursor("c2".to_owned()));
        assert_eq!(judge("SELECT 1", OPEN).unwrap()[0].counted, Counted::Own);
        assert!(judge(" ; ", OPEN).unwrap().is_empty());
    }

    #[test]
    fn catalog_reads_name_only_the_catalog() {
        for text in [
            "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE pg_catalog.pg_table_is_visible(c.oid)",
            "select table_name from information_schema.tables",
            "SELECT version()",
            "SELECT * FROM pg_catalog.pg_settings",
        ] {
            assert!(is_catalog(text), "{text}");
        }
        for text in [
            "SELECT * FROM users",
            "SELECT pg_sleep(60)",
            "SELECT c.relname FROM pg_class c, public.orders o",
            "SELECT dblink('x')",
            "SET search_path = a",
            "SELECT * FROM pg_catalog.pg_class; SELECT 1",
            "SELECT * FROM pg_settings",
            "SELECT * FROM pg_catalog.query_to_xml('select * from salaries', true, false, '')",
            "SELECT * FROM pg_catalog.pg_class c, LATERAL public.purge() p",
            "SELECT rolpassword FROM pg_catalog.pg_authid",
            "SELECT * FROM pg_catalog.pg_stats",
            "SELECT * FROM pg_catalog.generate_series(1, 3)",
        ] {
            assert!(!is_catalog(text), "{text}");
        }
    }
}
