//! The check of a MySQL or MariaDB statement as the server rewrote it (docs/data-protection.md, "Data
//! protection"): after `EXPLAIN EXTENDED` (MariaDB) or `EXPLAIN` (MySQL), `SHOW WARNINGS`
//! holds the statement the optimizer will run, with views and derived tables merged, `*`
//! spelled out and every column written in full as `` `db`.`alias`.`column` ``, every table as
//! `` `db`.`table` `alias` `` and every stored function as `` `db`.`function`(…) ``. So:
//!
//! - a protected column may appear only as an item of the outermost select list, as itself
//!   (`` `db`.`t`.`email` AS `e` ``), in a statement that is no set operation and no `DISTINCT`;
//!   anywhere else (a function, an expression, a condition, an order, a group, a subquery) it
//!   is refused;
//! - a call of a stored function, a read of the column statistics (`mysql.column_stats`,
//!   `information_schema.COLUMN_STATISTICS`, which hold values) is refused;
//! - a protected table the optimizer read while planning (a `const` or `system` access: a row
//!   found by its key) has its columns replaced by their values in that text, which then shows
//!   nothing of what the statement does with them: refused too.
//!
//! The runner then checks that the tables are no unmerged views, and masks by the origin the
//! result columns report.

use super::{ProtectedColumn, Protection, Refused};

/// What the check leaves to the runner.
#[derive(Debug, Default)]
pub struct CanonicalFacts {
    /// For each item of the outermost select list: the protected column it is, as itself.
    pub outputs: Vec<Option<ProtectedColumn>>,
    /// Every table the statement reads, as `(database, table)`.
    pub tables: Vec<(String, String)>,
}

/// One row of `EXPLAIN`: the table (its alias) and how it is accessed.
#[derive(Clone, Debug, Default)]
pub struct ExplainRow {
    /// The `table` column: an alias, or `<derived2>` and the like.
    pub table: Option<String>,
    /// The `type` column: `ALL`, `ref`, `const`, `system`…
    pub access: Option<String>,
    /// The `Extra` column (`Impossible WHERE noticed after reading const tables`…).
    pub extra: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// A `` `quoted` `` name.
    Name(String),
    /// An unquoted word (a keyword or a built-in function), lower case.
    Word(String),
    Dot,
    Comma,
    Open,
    Close,
    /// A whole number (a position in `ORDER BY 2`).
    Number,
    /// A literal, an operator: nothing that names a column.
    Other,
}

fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '`' => {
                let (name, next) = super::quoted_name(&chars, i, '`');
                i = next;
                out.push(Token::Name(name));
            }
            '\'' | '"' => {
                i += 1;
                while i < chars.len() {
                    if chars[i] == '\\' {
                        i += 2;
                        continue;
                    }
                    if chars[i] == c {
                        if chars.get(i + 1) == Some(&c) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
                out.push(Token::Other);
            }
            // An executable comment (`/*! … */`, `/*!50100 … */`, `/*M! … */`) is code to
            // MariaDB and MySQL: read as code, its prefix and its end skipped.
            '/' if chars.get(i + 1) == Some(&'*')
                && (chars.get(i + 2) == Some(&'!')
                    || (chars.get(i + 2) == Some(&'M') && chars.get(i + 3) == Some(&'!'))) =>
            {
                i += if chars[i + 2] == 'M' { 4 } else { 3 };
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            '*' if chars.get(i + 1) == Some(&'/') => i += 2,
            // `# …` and `-- …` comments run to the end of their line (an apostrophe in one
            // opens no string).
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '-' if chars.get(i + 1) == Some(&'-')
                && chars
                    .get(i + 2)
                    .is_none_or(|c| c.is_whitespace() || c.is_control()) =>
            {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            '.' => {
                out.push(Token::Dot);
                i += 1;
            }
            ',' => {
                out.push(Token::Comma);
                i += 1;
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                out.push(Token::Close);
                i += 1;
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || "_$".contains(chars[i])) {
                    i += 1;
                }
                out.push(Token::Word(
                    chars[start..i].iter().collect::<String>().to_lowercase(),
                ));
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                out.push(Token::Number);
            }
            c if c.is_whitespace() => i += 1,
            _ => {
                out.push(Token::Other);
                i += 1;
            }
        }
    }
    out
}

/// A protected relation of the statement: its alias, and its protected columns.
struct Scope {
    alias: String,
    columns: Vec<ProtectedColumn>,
}

/// A column reference `` `db`.`alias`.`column` `` at tokens `start..start + 5`.
struct ColumnRef<'a> {
    start: usize,
    column: &'a ProtectedColumn,
}

/// A word of `statement` (as the client wrote it) that asks for more than rows: `PROCEDURE`
/// (whose result replaces the select list), `OUTFILE`, `DUMPFILE`.
pub fn forbidden_word(statement: &str) -> Option<&'static str> {
    let tokens = tokens(statement);
    ["procedure", "outfile", "dumpfile"]
        .into_iter()
        .find(|word| tokens.contains(&Token::Word((*word).to_owned())))
}

/// Checks the server's rewriting `text` of a statement (with its `explain` rows) against
/// `protection`.
pub fn check(
    text: &str,
    explain: &[ExplainRow],
    protection: &Protection,
) -> Result<CanonicalFacts, Refused> {
    let tokens = tokens(text);
    let mut facts = CanonicalFacts::default();
    let mut scopes: Vec<Scope> = Vec::new();
    // A stored function is a quoted name called: built-ins are written unquoted.
    if let Some(i) = (0..tokens.len().saturating_sub(1))
        .find(|&i| matches!(tokens[i], Token::Name(_)) && tokens[i + 1] == Token::Open)
    {
        let Token::Name(name) = &tokens[i] else {
            unreachable!("matched above")
        };
        return Err(Refused::undecided(
            protection,
            format!(
                "it calls the stored function {name}, which can read protected columns where \
                 the check can't see"
            ),
        ));
    }
    // Tables and stored functions: two names, not followed by a third.
    let mut i = 0;
    while i + 2 < tokens.len() {
        let (Token::Name(db), Token::Dot, Token::Name(name)) =
            (&tokens[i], &tokens[i + 1], &tokens[i + 2])
        else {
            i += 1;
            continue;
        };
        if tokens.get(i + 3) == Some(&Token::Dot) {
            i += 5;
            continue;
        }
        if (db.eq_ignore_ascii_case("mysql") && name.eq_ignore_ascii_case("column_stats"))
            || (db.eq_ignore_ascii_case("information_schema")
                && name.eq_ignore_ascii_case("column_statistics"))
        {
            return Err(Refused::undecided(
                protection,
                format!("it reads {db}.{name}, which holds values of other tables' columns"),
            ));
        }
        let alias = match (tokens.get(i + 3), tokens.get(i + 4)) {
            (Some(Token::Name(alias)), next) if next != Some(&Token::Dot) => alias.clone(),
            _ => name.clone(),
        };
        facts.tables.push((db.clone(), name.clone()));
        let columns: Vec<ProtectedColumn> = protection
            .columns
            .iter()
            .filter(|c| c.protects_table(db, name))
            .cloned()
            .collect();
        if !columns.is_empty() {
            scopes.push(Scope { alias, columns });
        }
        i += 3;
    }
    // What the rewritten text doesn't show, or shows by position or by alias, can't be
    // followed: with a protected table in the statement, it is refused.
    if let Some(scope) = scopes.first() {
        let refuse = |why: &str| Err(Refused::of(&scope.columns[0], why.to_owned()));
        if let Some(Token::Word(first)) = tokens.first()
            && ["update", "delete", "insert", "replace"].contains(&first.as_str())
        {
            return refuse(
                "it writes to a statement's protected table, whose errors and conflicts can \
                 quote its rows",
            );
        }
        if tokens.contains(&Token::Word("having".to_owned())) {
            return refuse(
                "it filters groups with HAVING, which the server's rewriting doesn't always show",
            );
        }
        if tokens
            .windows(2)
            .any(|pair| pair[0] == Token::Word("by".to_owned()) && pair[1] == Token::Number)
        {
            return refuse(
                "it orders or groups by a column's position, which the check can't follow",
            );
        }
        let filtered = explain.iter().any(|row| {
            row.extra
                .as_deref()
                .is_some_and(|e| e.to_ascii_lowercase().contains("using where"))
        });
        if filtered && !tokens.contains(&Token::Word("where".to_owned())) {
            return refuse(
                "the server filters rows by a condition its rewriting doesn't show; the check \
                 can't decide",
            );
        }
    }

    // A table read while planning (a row found by its key) has its columns replaced by their
    // values in the text, which then shows nothing of their use; and whether a row was found
    // shows in the plan. With a protected table in the statement, neither is checkable.
    let read_while_planning = explain.iter().any(|row| {
        row.access
            .as_deref()
            .is_some_and(|a| a.eq_ignore_ascii_case("const") || a.eq_ignore_ascii_case("system"))
            || row
                .extra
                .as_deref()
                .is_some_and(|e| e.to_ascii_lowercase().contains("const table"))
    });
    if let (true, Some(scope)) = (read_while_planning, scopes.first()) {
        return Err(Refused::of(
            &scope.columns[0],
            "the server reads a row by its key while planning, which hides what the statement \
             does with the protected table's columns; the check can't decide (select by a \
             range or a list instead)",
        ));
    }

    // Depth of each token, the outermost select list, and set operations.
    let mut depth = Vec::with_capacity(tokens.len());
    let mut level = 0usize;
    for token in &tokens {
        if *token == Token::Close {
            level = level.saturating_sub(1);
        }
        depth.push(level);
        if *token == Token::Open {
            level += 1;
        }
    }
    let word_at_top = |word: &str| {
        tokens
            .iter()
            .zip(&depth)
            .position(|(t, d)| *d == 0 && *t == Token::Word(word.to_owned()))
    };
    let select = word_at_top("select");
    let from = word_at_top("from").unwrap_or(tokens.len());
    let set_operation = ["union", "intersect", "except"]
        .iter()
        .any(|w| word_at_top(w).is_some());
    let distinct = select.is_some_and(|s| {
        matches!(tokens.get(s + 1), Some(Token::Word(w)) if w == "distinct" || w == "distinctrow")
    });

    // Every reference to a protected column.
    let mut references = Vec::new();
    let mut i = 0;
    while i + 4 < tokens.len() {
        if let (Token::Name(_), Token::Dot, Token::Name(alias), Token::Dot, Token::Name(column)) = (
            &tokens[i],
            &tokens[i + 1],
            &tokens[i + 2],
            &tokens[i + 3],
            &tokens[i + 4],
        ) {
            if let Some(protected) = scopes.iter().filter(|s| s.alias == *alias).find_map(|s| {
                s.columns
                    .iter()
                    .find(|c| c.column.eq_ignore_ascii_case(column))
            }) {
                references.push(ColumnRef {
                    start: i,
                    column: protected,
                });
            }
            i += 5;
        } else {
            i += 1;
        }
    }
    let plain = |reference: &ColumnRef<'_>| {
        let start = reference.start;
        let end = start + 5;
        let Some(select) = select else { return false };
        let opens_item = start > 0
            && (start - 1 == select
                || (tokens[start - 1] == Token::Comma && depth[start - 1] == 0));
        let closes_item = match tokens.get(end) {
            None | Some(Token::Comma) => true,
            Some(Token::Word(w)) if w == "from" => true,
            Some(Token::Word(w)) if w == "as" => {
                matches!(
                    (tokens.get(end + 1), tokens.get(end + 2)),
                    (Some(Token::Name(_)), None | Some(Token::Comma))
                ) || matches!(
                    (tokens.get(end + 1), tokens.get(end + 2)),
                    (Some(Token::Name(_)), Some(Token::Word(w))) if w == "from"
                )
            }
            _ => false,
        };
        depth[start] == 0
            && start > select
            && start < from
            && opens_item
            && closes_item
            && !set_operation
            && !distinct
    };
    // The aliases of protected select items: used by name later (`HAVING e`, `ORDER BY e`),
    // they are the column.
    let aliases: Vec<(&String, &ProtectedColumn)> = references
        .iter()
        .filter(|r| plain(r))
        .filter_map(
            |r| match (tokens.get(r.start + 5), tokens.get(r.start + 6)) {
                (Some(Token::Word(w)), Some(Token::Name(alias))) if w == "as" => {
                    Some((alias, r.column))
                }
                _ => None,
            },
        )
        .collect();
    for (i, token) in tokens.iter().enumerate().skip(from) {
        let Token::Name(name) = token else { continue };
        let qualified =
            (i > 0 && tokens[i - 1] == Token::Dot) || tokens.get(i + 1) == Some(&Token::Dot);
        let as_alias = i > 0 && tokens[i - 1] == Token::Word("as".to_owned());
        if qualified || as_alias {
            continue;
        }
        if let Some((_, column)) = aliases.iter().find(|(alias, _)| *alias == name)
            && !scopes.iter().any(|s| s.alias == *name)
        {
            return Err(Refused::of(
                column,
                "it uses the column by its alias outside the select list, which reveals its \
                 values",
            ));
        }
    }
    for reference in &references {
        if plain(reference) {
            continue;
        }
        let why = if set_operation && depth[reference.start] == 0 {
            "it passes the column through a set operation (UNION…), where where it came from is lost"
                .to_owned()
        } else if distinct && reference.start < from {
            "it asks for distinct values of the column, which reveals them".to_owned()
        } else if depth[reference.start] > 0 {
            "it uses the column in a function, an expression or a subquery, which can't be masked"
                .to_owned()
        } else {
            let clause = tokens[..reference.start]
                .iter()
                .zip(&depth)
                .rev()
                .find_map(|(t, d)| match t {
                    Token::Word(w)
                        if *d == 0
                            && ["where", "on", "having", "order", "group", "select"]
                                .contains(&w.as_str()) =>
                    {
                        Some(w.as_str())
                    }
                    _ => None,
                });
            match clause {
                Some("where" | "on" | "having") => {
                    "it filters or joins on the column, which reveals its values".to_owned()
                }
                Some("order") => "it sorts by the column, which reveals its order".to_owned(),
                Some("group") => "it groups by the column, which reveals its values".to_owned(),
                _ => "it derives a value from the column, which can't be masked; select the \
                      column itself"
                    .to_owned(),
            }
        };
        return Err(Refused::of(reference.column, why));
    }

    // The items of the outermost select list.
    if let Some(select) = select {
        let mut item_start = select + 1;
        for index in select + 1..=from.min(tokens.len()) {
            let ends = index == from.min(tokens.len())
                || (tokens[index] == Token::Comma && depth[index] == 0);
            if ends {
                facts.outputs.push(
                    references
                        .iter()
                        .find(|r| r.start == item_start)
                        .map(|r| r.column.clone()),
                );
                item_start = index + 1;
            }
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protection() -> Protection {
        super::super::users_email_masked()
    }

    fn checked(text: &str) -> Result<CanonicalFacts, Refused> {
        check(text, &[], &protection())
    }

    #[test]
    fn the_column_as_itself_passes() {
        let facts = checked(
            "/* select#1 */ select `app`.`u`.`id` AS `id`,`app`.`u`.`email` AS `e` from `app`.`users` `u` where `app`.`u`.`id` = 1",
        )
        .unwrap();
        assert!(facts.outputs[0].is_none());
        assert_eq!(facts.outputs[1].as_ref().unwrap().column, "email");
        assert_eq!(facts.tables, [("app".to_owned(), "users".to_owned())]);
        let bare = checked("select `app`.`users`.`email` AS `email` from `app`.`users`").unwrap();
        assert!(bare.outputs[0].is_some());
    }

    #[test]
    fn every_other_use_is_refused() {
        for (text, says) in [
            (
                "select ucase(`a`.`users`.`email`) AS `x` from `a`.`users`",
                "function",
            ),
            (
                "select `a`.`users`.`id` AS `id` from `a`.`users` where `a`.`users`.`email` like 'a%'",
                "filters",
            ),
            (
                "select `a`.`users`.`id` AS `id` from `a`.`users` order by `a`.`users`.`email`",
                "sorts",
            ),
            (
                "select `a`.`users`.`id` AS `id` from `a`.`users` group by `a`.`users`.`email`",
                "groups",
            ),
            (
                "select distinct `a`.`users`.`email` AS `email` from `a`.`users`",
                "distinct",
            ),
            (
                "select `a`.`users`.`email` AS `email` from `a`.`users` union all select 'x' AS `x`",
                "set operation",
            ),
            (
                "select `a`.`users`.`email` || '' AS `x` from `a`.`users`",
                "derives",
            ),
            ("select `a`.`leak`() AS `x`", "stored function"),
            ("select `leak`() AS `leak()`", "stored function"),
            (
                "select `a`.`users`.`id` AS `id`,`a`.`users`.`email` AS `e` from `a`.`users` having `e` like 'a%'",
                "HAVING",
            ),
            (
                "select `a`.`users`.`id` AS `id`,`a`.`users`.`email` AS `e` from `a`.`users` order by 2",
                "position",
            ),
            (
                "select `a`.`users`.`id` AS `id`,`a`.`users`.`email` AS `e` from `a`.`users` order by `e`",
                "alias",
            ),
            (
                "update `a`.`users` set `a`.`users`.`id` = NULL where `a`.`users`.`id` = 1",
                "writes",
            ),
            (
                "select `m`.`column_stats`.`min_value` AS `v` from `mysql`.`column_stats` `m`",
                "holds values",
            ),
        ] {
            let refused = checked(text).expect_err(says);
            assert!(refused.to_string().contains(says), "{text}: {refused}");
        }
        let constant = check(
            "select 'x' AS `email` from `a`.`users` `u` where 1",
            &[ExplainRow {
                table: Some("u".to_owned()),
                access: Some("const".to_owned()),
                extra: None,
            }],
            &protection(),
        );
        assert!(constant.is_err());
    }

    #[test]
    fn hidden_conditions_and_words_that_change_the_result_are_refused() {
        let hidden = check(
            "select `a`.`users`.`id` AS `id` from `a`.`users` group by `a`.`users`.`id`",
            &[ExplainRow {
                table: Some("users".to_owned()),
                access: Some("ALL".to_owned()),
                extra: Some("Using where; Using temporary".to_owned()),
            }],
            &protection(),
        );
        assert!(hidden.is_err());
        assert_eq!(
            forbidden_word("SELECT id FROM t PROCEDURE ANALYSE()"),
            Some("procedure")
        );
        assert_eq!(forbidden_word("SELECT 'procedure' FROM t"), None);
        // Executable comments are code; `#` and `-- ` comments hide no string's end.
        for hidden in [
            "SELECT id FROM t /*!PROCEDURE ANALYSE() */",
            "SELECT id FROM t /*!50000 PROCEDURE ANALYSE() */",
            "SELECT id FROM t /*M!100000 PROCEDURE ANALYSE() */",
            "SELECT id FROM t -- '\n PROCEDURE ANALYSE() -- '",
            "SELECT id FROM t # '\n PROCEDURE ANALYSE() # '",
            "SELECT id FROM t /*! INTO OUTFILE '/tmp/x' */",
        ] {
            assert!(forbidden_word(hidden).is_some(), "{hidden}");
        }
        assert_eq!(forbidden_word("SELECT id FROM t /* PROCEDURE */"), None);
        assert_eq!(forbidden_word("SELECT id --x FROM t"), None);
    }

    #[test]
    fn literals_comments_and_other_tables_do_not_count() {
        assert!(
            checked(
                "select '`a`.`users`.`email`' AS `x`, `a`.`o`.`email` AS `e` from `a`.`orders` `o`"
            )
            .is_ok()
        );
        assert!(checked("/* `a`.`users`.`email` */ select 1 AS `1`").is_ok());
    }
}
