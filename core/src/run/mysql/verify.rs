//! The verification of a protected MySQL or MariaDB database's user (docs/data-protection.md,
//! "The user (MySQL, MariaDB)"): before each run on a database with data protection policies,
//! the session is checked, as the user it logged in as, to be unable to read any protected
//! column, before anything of the statement reaches the server. A masked column is as
//! unreadable as a hidden one in its table; its mask is read through the login's shadow
//! database ([`super::masking`]), whose views running with their definer's rights are read
//! here item by item.
//!
//! What it asks the server: the user's grants and `PUBLIC`'s (`SHOW GRANTS`): only `USAGE` and
//! `SELECT` (on tables or columns), no global privilege (`FILE` reads data files, `PROCESS`
//! shows others' statements), no role (`SET ROLE` would reach its rights); the protected
//! columns it may read (`information_schema.COLUMNS` lists a column with the privileges the
//! user has on it, from every level); the views and routines it may use that run with their
//! definer's rights; and whether it may read the `mysql` schema (`mysql.column_stats` holds
//! minimum and maximum values and histograms). Grants change what a session may do at its next
//! statement, so this runs at every checkout: it has no cache to go stale.

use std::collections::{BTreeMap, BTreeSet};

use mysql_async::prelude::Queryable as _;
use mysql_async::{Conn, Value};

use super::database_error;
use super::masking::check_view;
use crate::run::RunError;
use crate::run::protect::{Problem, Protection, Refused};

/// The masked columns of a verified shadow database's views: by view, the columns (lower
/// case) whose values are masks.
pub(super) type Masked = BTreeMap<String, BTreeSet<String>>;

/// Where a protected session reads: its database, and the login's shadow database when the
/// session uses it as its default ([`super::masking`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Home<'a> {
    /// The credential's database.
    pub(super) database: &'a str,
    /// The shadow database in use.
    pub(super) shadow: Option<&'a str>,
}

/// Checks that `conn`'s user can't read a column `protection` protects, and that the views of
/// its shadow database (in `home`) mask what they show; refused, naming what to change, when it
/// can. `Ok` with the shadow views' masked columns.
pub(super) async fn ensure(
    conn: &mut Conn,
    protection: &Protection,
    home: Home<'_>,
) -> Result<Masked, RunError> {
    let mut problems: Vec<Problem> = Vec::new();
    let user: String = conn
        .query_first("SELECT CURRENT_USER()")
        .await
        .map_err(|e| database_error(&e))?
        .unwrap_or_default();
    let account = account(&user);
    let own: Vec<String> = conn
        .query("SHOW GRANTS")
        .await
        .map_err(|e| database_error(&e))?;
    for grant in own {
        problems.extend(grant_problem(&grant, &account));
    }
    // MariaDB 10.11 has PUBLIC; a server without it answers an error, and has no such grants.
    if let Ok(public) = conn.query::<String, _>("SHOW GRANTS FOR PUBLIC").await {
        for grant in public {
            problems.extend(grant_problem(&grant, "PUBLIC"));
        }
    }
    let (filter, mut params) = column_filter(protection);
    // The shadow database's views are read below, item by item.
    let shadow = home.shadow.unwrap_or("");
    params.push(Value::from(shadow));
    params.push(Value::from(shadow));
    let readable: Vec<(String, String, String, String)> = conn
        .exec(
            format!(
                "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, PRIVILEGES \
                 FROM information_schema.COLUMNS WHERE ({filter}) \
                 AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema') \
                 AND NOT (TABLE_SCHEMA = ? AND TABLE_NAME IN (SELECT TABLE_NAME \
                   FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ?))"
            ),
            params,
        )
        .await
        .map_err(|e| database_error(&e))?;
    for (schema, table, column, privileges) in readable {
        if !privileges
            .split(',')
            .any(|p| p.trim().eq_ignore_ascii_case("select"))
        {
            continue;
        }
        let policy = protection
            .find(&schema, &table, &column)
            .map(|c| c.policy.clone())
            .unwrap_or_default();
        problems.push((
            format!("the user can read `{schema}`.`{table}`.`{column}` (policy \"{policy}\")"),
            Some(format!(
                "REVOKE SELECT ON `{schema}`.`{table}` FROM {account}, then GRANT SELECT (<the \
                 unprotected columns>) ON `{schema}`.`{table}` TO {account}"
            )),
        ));
    }
    let (schema, unmatched) = schema_problems(conn, protection, shadow).await?;
    problems.extend(schema);
    let masked = match home.shadow {
        Some(shadow) => {
            shadow_views(conn, protection, home.database, shadow, &mut problems).await?
        }
        None => Masked::new(),
    };
    let definers: Vec<(String, String, String)> = conn
        .exec(
            "SELECT 'view', TABLE_SCHEMA, TABLE_NAME FROM information_schema.VIEWS \
             WHERE SECURITY_TYPE = 'DEFINER' AND TABLE_SCHEMA <> ? \
             UNION ALL \
             SELECT LOWER(ROUTINE_TYPE), ROUTINE_SCHEMA, ROUTINE_NAME \
             FROM information_schema.ROUTINES WHERE SECURITY_TYPE = 'DEFINER' \
             AND ROUTINE_SCHEMA NOT IN ('sys', 'mysql')",
            (shadow,),
        )
        .await
        .map_err(|e| database_error(&e))?;
    for (kind, schema, name) in definers {
        let fix = if kind == "view" {
            format!("ALTER SQL SECURITY INVOKER VIEW `{schema}`.`{name}` AS …, or REVOKE")
        } else {
            format!(
                "REVOKE EXECUTE ON {} `{schema}`.`{name}` FROM {account}",
                kind.to_uppercase()
            )
        };
        problems.push((
            format!(
                "the user may use the {kind} `{schema}`.`{name}`, which runs with its definer's \
                 rights"
            ),
            Some(fix),
        ));
    }
    let system: Option<String> = conn
        .query_first(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql' LIMIT 1",
        )
        .await
        .map_err(|e| database_error(&e))?;
    if let Some(table) = system {
        problems.push((
            format!(
                "the user may read the mysql schema (`mysql`.`{table}`; `column_stats` holds \
                 values of every column)"
            ),
            Some(format!("REVOKE ALL ON mysql.* FROM {account}")),
        ));
    }
    if problems.is_empty() {
        return Ok(masked);
    }
    let mut refused = Refused::unverified(
        protection,
        &format!("the user {account}"),
        &problems,
        "as an administrator",
    );
    refused.unmatched = unmatched;
    Err(RunError::Protected(refused))
}

/// Reads the definer's-rights views of the login's shadow database `shadow` (of its database
/// `home`) item by item ([`check_view`]): what each masks, or a problem for each that shows
/// more than the login may read itself or than the policies' masks.
async fn shadow_views(
    conn: &mut Conn,
    protection: &Protection,
    home: &str,
    shadow: &str,
    problems: &mut Vec<Problem>,
) -> Result<Masked, RunError> {
    let readable: Vec<(String, String, String)> = conn
        .exec(
            "SELECT TABLE_NAME, COLUMN_NAME, PRIVILEGES FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ?",
            (home,),
        )
        .await
        .map_err(|e| database_error(&e))?;
    let mut by_table: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (table, column, privileges) in readable {
        if privileges
            .split(',')
            .any(|p| p.trim().eq_ignore_ascii_case("select"))
        {
            by_table
                .entry(table.to_lowercase())
                .or_default()
                .insert(column.to_lowercase());
        }
    }
    let views: Vec<(String, Option<String>)> = conn
        .exec(
            "SELECT TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS \
             WHERE TABLE_SCHEMA = ? AND SECURITY_TYPE = 'DEFINER'",
            (shadow,),
        )
        .await
        .map_err(|e| database_error(&e))?;
    let empty = BTreeSet::new();
    let mut masked = Masked::new();
    for (view, definition) in views {
        let readable = by_table.get(&view.to_lowercase()).unwrap_or(&empty);
        match check_view(
            definition.as_deref().unwrap_or(""),
            home,
            &view,
            protection,
            readable,
        ) {
            Ok(columns) => {
                masked.insert(view.to_lowercase(), columns);
            }
            Err(why) => problems.push((
                format!(
                    "the masking view `{shadow}`.`{view}` runs with its definer's rights and is                      not what the policies make: {why}"
                ),
                Some(
                    "apply the data protection plan (it makes the login's masking views), or                      GRANT SHOW VIEW on it when its definition is unreadable"
                        .to_owned(),
                ),
            )),
        }
    }
    Ok(masked)
}

/// What the schema lets the user learn of a protected column without naming it, where the
/// user's privileges can't close it: a generated column computed from one that it may read, a
/// partitioning expression over one (`PARTITION (p)` and the partitions' names and row counts
/// tell which rows hold which values), and a policy naming a view (it protects no table's
/// column). An index holding a protected column is invisible to the user (MariaDB lists only
/// the index parts it may read), so it is not found here (docs/data-protection.md, "What is not
/// covered").
async fn schema_problems(
    conn: &mut Conn,
    protection: &Protection,
    shadow: &str,
) -> Result<(Vec<Problem>, Vec<String>), RunError> {
    let mut problems = Vec::new();
    let mut unmatched = Vec::new();
    let generated: Vec<(String, String, String, String, String)> = conn
        .query(
            "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, GENERATION_EXPRESSION, PRIVILEGES \
             FROM information_schema.COLUMNS WHERE GENERATION_EXPRESSION IS NOT NULL \
             AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema', 'mysql', 'sys')",
        )
        .await
        .map_err(|e| database_error(&e))?;
    for (schema, table, column, expression, privileges) in generated {
        let readable = privileges
            .split(',')
            .any(|p| p.trim().eq_ignore_ascii_case("select"));
        if let Some(source) = mentioned(protection, &schema, &table, &expression)
            && readable
            && protection.find(&schema, &table, &column).is_none()
        {
            problems.push((
                format!(
                    "the user can read `{schema}`.`{table}`.`{column}`, computed from the \
                     protected column `{}` (policy \"{}\")",
                    source.column, source.policy
                ),
                Some(format!(
                    "REVOKE SELECT (`{column}`) ON `{schema}`.`{table}` FROM <the user>, or \
                     protect `{table}`.`{column}` too"
                )),
            ));
        }
    }
    let partitions: Vec<(String, String, Option<String>, Option<String>)> = conn
        .query(
            "SELECT DISTINCT TABLE_SCHEMA, TABLE_NAME, PARTITION_EXPRESSION, \
             SUBPARTITION_EXPRESSION FROM information_schema.PARTITIONS \
             WHERE PARTITION_NAME IS NOT NULL \
             AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema', 'mysql', 'sys')",
        )
        .await
        .map_err(|e| database_error(&e))?;
    for (schema, table, expression, sub) in partitions {
        let key = [expression, sub].into_iter().flatten().collect::<Vec<_>>();
        if let Some(source) = key
            .iter()
            .find_map(|k| mentioned(protection, &schema, &table, k))
        {
            problems.push((
                format!(
                    "the partitioning of `{schema}`.`{table}` is by the protected column `{}` \
                     (policy \"{}\"): `PARTITION (p)` and the partitions' names and row counts \
                     tell which rows hold which values, whatever the user's privileges",
                    source.column, source.policy
                ),
                Some(format!(
                    "ALTER TABLE `{schema}`.`{table}` REMOVE PARTITIONING, or partition it by a \
                     column no policy protects"
                )),
            ));
        }
    }
    let views: Vec<(String, String)> = conn
        .exec(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES \
             WHERE TABLE_TYPE = 'VIEW' AND TABLE_SCHEMA <> ?",
            (shadow,),
        )
        .await
        .map_err(|e| database_error(&e))?;
    for column in &protection.columns {
        let Some(table) = &column.table else { continue };
        if let Some((schema, view)) = views.iter().find(|(schema, view)| {
            view.eq_ignore_ascii_case(table)
                && column
                    .schema
                    .as_deref()
                    .is_none_or(|s| s.eq_ignore_ascii_case(schema))
        }) {
            problems.push((
                format!(
                    "policy \"{}\" names {}, a column of the view `{schema}`.`{view}`, which \
                     protects no table's column: name the column of the table it reads",
                    column.policy, column.named
                ),
                None,
            ));
            unmatched.push(column.named.clone());
        }
    }
    Ok((problems, unmatched))
}

/// The protected column of `schema.table` that `expression` (as MariaDB prints a generation
/// or partitioning expression: names in backquotes, or bare) names, if any.
pub(super) fn mentioned<'a>(
    protection: &'a Protection,
    schema: &str,
    table: &str,
    expression: &str,
) -> Option<&'a crate::run::protect::ProtectedColumn> {
    let lower = expression.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
        .collect();
    protection.columns.iter().find(|c| {
        c.protects_table(schema, table) && words.contains(&c.column.to_ascii_lowercase().as_str())
    })
}

/// `user@host` as an account name: `'user'@'host'`.
fn account(user: &str) -> String {
    match user.rsplit_once('@') {
        Some((name, host)) => format!("'{name}'@'{host}'"),
        None => format!("'{user}'"),
    }
}

/// What is wrong with one line of `SHOW GRANTS` (of `account`): a role, a global privilege,
/// or any privilege but `SELECT` and `USAGE`. The line is never quoted: it may hold the
/// account's password hash.
fn grant_problem(grant: &str, account: &str) -> Option<Problem> {
    let rest = grant.strip_prefix("GRANT ")?;
    let Some((privileges, object)) = rest.split_once(" ON ") else {
        // `GRANT role TO user`: SET ROLE reaches its rights.
        let role = rest.split(" TO ").next().unwrap_or(rest).trim();
        return Some((
            format!("{account} is granted the role {role} (SET ROLE reaches its rights)"),
            Some(format!("REVOKE {role} FROM {account}")),
        ));
    };
    let object = object.split(" TO ").next().unwrap_or(object).trim();
    let names: Vec<String> = split_privileges(privileges);
    let global = object == "*.*";
    let wrong: Vec<&String> = names
        .iter()
        .filter(|p| {
            let p = p.to_ascii_uppercase();
            // SHOW VIEW reads a view's definition (the shadow database's, verified here).
            !(p == "USAGE"
                || (!global && (p == "SELECT" || p.starts_with("SELECT (") || p == "SHOW VIEW")))
        })
        .collect();
    if wrong.is_empty() && !grant.contains("WITH GRANT OPTION") {
        return None;
    }
    let what = if wrong.is_empty() {
        "GRANT OPTION".to_owned()
    } else {
        wrong
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some((
        format!(
            "{account} holds {what} on {object} (a protected database's user reads only, and \
             holds no global privilege)"
        ),
        Some(format!("REVOKE {what} ON {object} FROM {account}")),
    ))
}

/// `SELECT (`a`, `b`), INSERT` → `["SELECT (`a`, `b`)", "INSERT"]`.
fn split_privileges(privileges: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in privileges.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut current).trim().to_owned()),
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// The `WHERE` condition that finds the protected columns in `information_schema.COLUMNS`
/// (names compared without regard to case), and its parameters.
fn column_filter(protection: &Protection) -> (String, Vec<Value>) {
    let mut parts = Vec::new();
    let mut params = Vec::new();
    for column in &protection.columns {
        let mut part = "LOWER(COLUMN_NAME) = LOWER(?)".to_owned();
        params.push(Value::from(column.column.as_str()));
        if let Some(table) = &column.table {
            part.push_str(" AND LOWER(TABLE_NAME) = LOWER(?)");
            params.push(Value::from(table.as_str()));
        }
        if let Some(schema) = &column.schema {
            part.push_str(" AND LOWER(TABLE_SCHEMA) = LOWER(?)");
            params.push(Value::from(schema.as_str()));
        }
        parts.push(format!("({part})"));
    }
    if parts.is_empty() {
        return ("FALSE".to_owned(), params);
    }
    (parts.join(" OR "), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_of_select_and_usage_only_pass() {
        let me = "'r'@'%'";
        assert!(
            grant_problem(
                "GRANT USAGE ON *.* TO `r`@`%` IDENTIFIED BY PASSWORD '*AB'",
                me
            )
            .is_none()
        );
        assert!(grant_problem("GRANT SELECT (`id`, `name`) ON `db`.`t` TO `r`@`%`", me).is_none());
        assert!(grant_problem("GRANT SELECT ON `db`.`other` TO `r`@`%`", me).is_none());
        for bad in [
            "GRANT SELECT ON *.* TO `r`@`%`",
            "GRANT FILE ON *.* TO `r`@`%`",
            "GRANT SELECT, INSERT ON `db`.* TO `r`@`%`",
            "GRANT SELECT (`id`), UPDATE (`id`) ON `db`.`t` TO `r`@`%`",
            "GRANT SELECT ON `db`.`t` TO `r`@`%` WITH GRANT OPTION",
            "GRANT `admin` TO `r`@`%`",
        ] {
            let (problem, _) = grant_problem(bad, me).expect(bad);
            assert!(!problem.contains("*AB"), "{problem}");
        }
    }
}
