//! MariaDB's masking views (docs/data-protection.md, "Masking on MariaDB"). MariaDB has no
//! search path, but a session has a default database: a login's **shadow database**
//! (`<login>_mask_<database>`) holds a view for each table of its database, named as the
//! table, and protected runs use it as their default database. A table with a masked column
//! has a view that runs with its definer's rights and selects each masked column as its mask
//! (hidden columns left out); the others have views with the invoker's rights over the columns
//! the login may read. So `SELECT email FROM users` answers the mask, and
//! `SELECT email FROM app.users` the server's privilege refusal.
//!
//! A definition is written as MariaDB 10.11 prints it back (`information_schema.VIEWS`): every
//! column qualified by database and table, functions in lower case, no spaces after commas. The
//! provisioning compares the printed text with what it would make; the verification reads a
//! masking view item by item ([`check_view`]) and admits only what the login may read anyway and
//! the exact masks the policies ask for: a view made by hand any other way is refused.

use std::collections::BTreeSet;

use crate::model::{ColumnAction, Mask, MaskKind};
use crate::run::protect::{MASK, ProtectedColumn, Protection};

/// The infix of a login's shadow database: `<login>_mask_<database>`.
pub(super) const MASK_INFIX: &str = "_mask_";

/// The longest database name MariaDB takes.
pub(super) const NAME_MAX: usize = 64;

/// The shadow database of `login` for its database `home`.
pub(super) fn shadow(login: &str, home: &str) -> String {
    format!("{login}{MASK_INFIX}{home}")
}

/// `name` as a quoted identifier.
pub(super) fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `text` as a string literal.
pub(super) fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// A column as MariaDB prints it in a view: `` `db`.`t`.`c` ``.
fn column_ref(home: &str, table: &str, column: &str) -> String {
    format!("{}.{}.{}", quote(home), quote(table), quote(column))
}

/// The expression of a masked column `c` (printed as a column reference): NULL stays NULL,
/// anything else becomes its mask's text.
fn mask_sql(c: &str, mask: Mask) -> String {
    match mask.kind {
        MaskKind::Full => format!("case when {c} is null then NULL else '{MASK}' end"),
        MaskKind::Null => "NULL".to_owned(),
        MaskKind::Email => format!(
            "case when {c} is null then NULL when locate('@',{c}) > 0 then \
             concat('{MASK}@',substring_index({c},'@',-1)) else '{MASK}' end"
        ),
        // A value no longer than what is kept would be shown whole: it is the full mask.
        MaskKind::Partial => format!(
            "case when {c} is null then NULL when char_length({c}) <= {kept} then '{MASK}' \
             else concat(left({c},{first}),'{MASK}',right({c},{last})) end",
            kept = u32::from(mask.keep_first) + u32::from(mask.keep_last),
            first = mask.keep_first,
            last = mask.keep_last,
        ),
    }
}

/// One item of a view's select list: `expression AS alias`.
fn item(expression: &str, column: &str) -> String {
    format!("{expression} AS {}", quote(column))
}

/// The shadow view of `home.table` (columns in order) under `effective`: its definition and
/// whether it runs with its definer's rights (it masks a column); `None` when every column is
/// hidden.
pub(super) fn view_sql(
    home: &str,
    table: &str,
    columns: &[String],
    effective: &Protection,
) -> Option<(String, bool)> {
    let mut definer = false;
    let items: Vec<String> = columns
        .iter()
        .filter_map(|column| {
            let c = column_ref(home, table, column);
            match effective.find(home, table, column) {
                Some(p) if p.action == ColumnAction::Hide => None,
                Some(p) => {
                    definer = true;
                    Some(item(&mask_sql(&c, p.mask), column))
                }
                None => Some(item(&c, column)),
            }
        })
        .collect();
    if items.is_empty() {
        return None;
    }
    Some((
        format!(
            "select {} from {}.{}",
            items.join(","),
            quote(home),
            quote(table)
        ),
        definer,
    ))
}

/// The generated columns of `home` computed from a protected column (`generated`: table,
/// column, expression), protected as their source: masked in full when it is masked, hidden
/// when it is hidden.
pub(super) fn derived(
    protection: &Protection,
    home: &str,
    generated: &[(String, String, String)],
) -> Vec<ProtectedColumn> {
    generated
        .iter()
        .filter(|(table, column, _)| protection.find(home, table, column).is_none())
        .filter_map(|(table, column, expression)| {
            let source = super::verify::mentioned(protection, home, table, expression)?;
            Some(ProtectedColumn {
                policy: source.policy.clone(),
                database_id: source.database_id.clone(),
                schema: Some(home.to_owned()),
                table: Some(table.clone()),
                column: column.clone(),
                action: source.action,
                mask: Mask::default(),
                exempt: source.exempt.clone(),
                named: format!("{home}.{table}.{column} (computed from {})", source.named),
            })
        })
        .collect()
}

/// Splits a printed select list at its top-level commas (outside quotes and parentheses).
fn split_items(list: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    for (i, c) in list.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '`' | '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items
}

/// Reads the definer's-rights view `view` of the login's shadow database (its printed
/// `definition`) item by item. It must select from `home`.`view` alone, and each item must be
/// a column the login may read itself (`readable`, by column name, lower case) or a mask:
/// the exact mask the policies give the column, or, for a column no policy names, the full
/// mask (a generated column computed from a protected one is masked so). `Ok` with the masked
/// columns (lower case); `Err` with what is wrong.
pub(super) fn check_view(
    definition: &str,
    home: &str,
    view: &str,
    protection: &Protection,
    readable: &BTreeSet<String>,
) -> Result<BTreeSet<String>, String> {
    let from = format!(" from {}.{}", quote(home), quote(view));
    let list = definition
        .strip_prefix("select ")
        .and_then(|rest| rest.strip_suffix(&from))
        .ok_or_else(|| format!("it does not select from {home}.{view} alone"))?;
    let mut masked = BTreeSet::new();
    for text in split_items(list) {
        let column = text
            .rsplit_once(" AS `")
            .and_then(|(_, alias)| alias.strip_suffix('`'))
            .map(|alias| alias.replace("``", "`"))
            .ok_or_else(|| format!("it selects {text} without a name"))?;
        let c = column_ref(home, view, &column);
        let lower = column.to_lowercase();
        let allowed = match protection.find(home, view, &column) {
            Some(p) if p.action == ColumnAction::Hide => vec![],
            Some(p) => vec![(item(&mask_sql(&c, p.mask), &column), true)],
            None => {
                let mut allowed = vec![(item(&mask_sql(&c, Mask::default()), &column), true)];
                if readable.contains(&lower) {
                    allowed.push((item(&c, &column), false));
                }
                allowed
            }
        };
        let Some((_, is_mask)) = allowed.iter().find(|(expected, _)| expected == text) else {
            return Err(format!(
                "it selects {column} as {text}, not as the policies mask it"
            ));
        };
        if *is_mask {
            masked.insert(lower);
        }
    }
    Ok(masked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ColumnRule, DataProtection, Policy};

    fn protection() -> Protection {
        let rule = |column: &str, action, mask| ColumnRule {
            column: column.to_owned(),
            action,
            mask,
        };
        let document = DataProtection {
            inherits_from: None,
            policies: vec![Policy {
                name: "pii".to_owned(),
                description: None,
                columns: vec![
                    rule(
                        "users.email",
                        ColumnAction::Mask,
                        Mask {
                            kind: MaskKind::Email,
                            ..Mask::default()
                        },
                    ),
                    rule(
                        "users.phone",
                        ColumnAction::Mask,
                        Mask {
                            kind: MaskKind::Partial,
                            keep_first: 0,
                            keep_last: 4,
                        },
                    ),
                    rule("users.ssn", ColumnAction::Hide, Mask::default()),
                ],
                exempt: vec![],
            }],
            provisioning: None,
        };
        Protection::of_chain([("db_1", &document)])
    }

    #[test]
    fn the_made_view_reads_back_as_allowed_and_nothing_else_does() {
        let p = protection();
        let columns: Vec<String> = ["id", "email", "phone", "ssn", "na,me`x"]
            .iter()
            .map(|c| (*c).to_owned())
            .collect();
        let (sql, definer) = view_sql("app", "users", &columns, &p).unwrap();
        assert!(definer);
        assert!(!sql.contains("ssn"), "{sql}");
        let readable: BTreeSet<String> =
            ["id", "na,me`x"].iter().map(|c| (*c).to_owned()).collect();
        let masked = check_view(&sql, "app", "users", &p, &readable).unwrap();
        assert_eq!(
            masked,
            ["email", "phone"].iter().map(|c| (*c).to_owned()).collect()
        );
        // The login can't read `na,me`x` itself: selected plain, it is refused.
        let only_id: BTreeSet<String> = ["id"].iter().map(|c| (*c).to_owned()).collect();
        assert!(check_view(&sql, "app", "users", &p, &only_id).is_err());
        for bad in [
            // A hidden column, in any form.
            sql.replace(
                " from `app`.`users`",
                ",case when `app`.`users`.`ssn` is null then NULL else '****' end AS `ssn` from \
                 `app`.`users`",
            ),
            // A masked column in clear, or under another mask.
            sql.replace(
                &item(
                    &mask_sql(
                        "`app`.`users`.`email`",
                        Mask {
                            kind: MaskKind::Email,
                            ..Mask::default()
                        },
                    ),
                    "email",
                ),
                "`app`.`users`.`email` AS `email`",
            ),
            sql.replace(
                "right(`app`.`users`.`phone`,4)",
                "right(`app`.`users`.`phone`,9)",
            ),
            // Another table, or a join.
            sql.replace(" from `app`.`users`", " from `app`.`users2`"),
            format!("{sql} join `app`.`x`"),
        ] {
            assert_ne!(bad, sql);
            assert!(
                check_view(&bad, "app", "users", &p, &readable).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn items_split_outside_quotes_and_parentheses() {
        assert_eq!(
            split_items("a AS `x,y`,concat('a,b',f(c,d)) AS `z`"),
            vec!["a AS `x,y`", "concat('a,b',f(c,d)) AS `z`"]
        );
    }
}
