//! Whether a masking view is defined as dbconsole defines it, decided without writing anything
//! (so that it works on a hot standby, and needs no `TEMPORARY` right): PostgreSQL's own
//! printing of the view (`pg_get_viewdef`) and dbconsole's definition are both parsed, brought
//! to one form, and compared whole.
//!
//! The form drops only what PostgreSQL adds when it prints a definition and what can't change
//! a value: parentheses (the tree keeps the order of operations), casts to `text` (`'@'::text`,
//! `NULL::text`, `(n)::text`: a masking view's values are text either way), the table's name
//! before a column (a masking view reads one table, checked here: no join, no alias, no
//! function), the quoting of names PostgreSQL prints bare only when they are lower case, and a
//! column's alias equal to its name. Anything else — another expression, a subquery, a
//! `WHERE`, another function (a qualified name stays qualified), another column — differs.

use std::ops::ControlFlow;

use sqlparser::ast::{
    DataType, Expr, Ident, ObjectName, ObjectNamePart, SelectItem, SetExpr, Statement, TableFactor,
    visit_expressions_mut,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Whether `printed` (as `pg_get_viewdef` prints a view) defines what `expected` (dbconsole's
/// masking view definition) does.
pub(super) fn same_view(printed: &str, expected: &str) -> bool {
    match (normalized(printed), normalized(expected)) {
        // The trees, not their text: the text without parentheses could read two groupings
        // the same way (spans are not compared).
        (Some(printed), Some(expected)) => printed == expected,
        _ => false,
    }
}

/// `name` as a quoted name, however it was written (PostgreSQL prints a name bare only when it
/// is lower case and no keyword, so the bare and the quoted one are the same name; a quoted
/// name never equals a literal or a keyword).
fn bare(name: &Ident) -> Ident {
    Ident::with_quote('"', name.value.clone())
}

/// The one form of a masking view's definition; `None` when it is not a plain select of
/// expressions from one table.
fn normalized(sql: &str) -> Option<Statement> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let [Statement::Query(query)] = &mut statements[..] else {
        return None;
    };
    if query.with.is_some()
        || query.order_by.is_some()
        || query.limit_clause.is_some()
        || query.fetch.is_some()
    {
        return None;
    }
    let _ = visit_expressions_mut(query, |expr| {
        normalize(expr);
        ControlFlow::<()>::Continue(())
    });
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let [from] = &mut select.from[..] else {
        return None;
    };
    if !from.joins.is_empty() {
        return None;
    }
    let TableFactor::Table {
        name,
        alias: None,
        args: None,
        ..
    } = &mut from.relation
    else {
        return None;
    };
    let ObjectNamePart::Identifier(table) = name.0.last()? else {
        return None;
    };
    *name = ObjectName(vec![ObjectNamePart::Identifier(bare(table))]);
    for item in &mut select.projection {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(column)) => {
                let column = bare(column);
                *item = SelectItem::ExprWithAlias {
                    expr: Expr::Identifier(column.clone()),
                    alias: column,
                };
            }
            SelectItem::ExprWithAlias { alias, .. } => *alias = bare(alias),
            _ => return None,
        }
    }
    statements.pop()
}

/// One expression brought to the form (its parts already are: the visit is post-order).
fn normalize(expr: &mut Expr) {
    let replaced = match expr {
        Expr::Nested(inner) => Some(std::mem::replace(
            inner.as_mut(),
            Expr::value(sqlparser::ast::Value::Null),
        )),
        Expr::Cast {
            expr: inner,
            data_type: DataType::Text,
            ..
        } => Some(std::mem::replace(
            inner.as_mut(),
            Expr::value(sqlparser::ast::Value::Null),
        )),
        Expr::CompoundIdentifier(parts) => parts.last().map(|c| Expr::Identifier(bare(c))),
        Expr::Identifier(column) => Some(Expr::Identifier(bare(column))),
        Expr::Function(function) => {
            for part in &mut function.name.0 {
                if let ObjectNamePart::Identifier(ident) = part {
                    *ident = bare(ident);
                }
            }
            None
        }
        _ => None,
    };
    if let Some(replaced) = replaced {
        *expr = replaced;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PostgreSQL 15 printed for a masking view of every mask (`pg_get_viewdef`).
    const PRINTED: &str = r#" SELECT users.id,
    users."Name",
        CASE
            WHEN (users.email IS NULL) THEN NULL::text
            WHEN (strpos(users.email, '@'::text) > 0) THEN regexp_replace(users.email, '^.*@'::text, '****@'::text)
            ELSE '****'::text
        END AS email,
        CASE
            WHEN (users.card IS NULL) THEN NULL::text
            WHEN (length(users.card) <= 4) THEN '****'::text
            ELSE (("left"(users.card, 0) || '****'::text) || "right"(users.card, 4))
        END AS card,
        CASE
            WHEN (users.n IS NULL) THEN NULL::text
            ELSE '****'::text
        END AS n,
    NULL::text AS tok
   FROM users;"#;

    const EXPECTED: &str = r#"SELECT "id", "Name", CASE WHEN "email" IS NULL THEN NULL WHEN strpos("email"::text, '@') > 0 THEN regexp_replace("email"::text, '^.*@', '****@') ELSE '****'::text END AS "email", CASE WHEN "card" IS NULL THEN NULL WHEN length("card"::text) <= 4 THEN '****'::text ELSE left("card"::text, 0) || '****' || right("card"::text, 4) END AS "card", CASE WHEN "n" IS NULL THEN NULL ELSE '****'::text END AS "n", NULL::text AS "tok" FROM "app"."users""#;

    #[test]
    fn postgres_printing_of_the_definition_is_the_same_view() {
        assert!(same_view(PRINTED, EXPECTED));
    }

    #[test]
    fn any_other_definition_differs() {
        for (from, to) in [
            // The column itself where its mask belongs.
            (
                "ELSE '****'::text\n        END AS n",
                "ELSE (users.n)::text\n        END AS n",
            ),
            // Another column's value.
            ("NULL::text AS tok", "users.email AS tok"),
            // Keeping more characters.
            ("\"right\"(users.card, 4)", "\"right\"(users.card, 5)"),
            // A function of another schema.
            ("\"left\"(users.card, 0)", "public.\"left\"(users.card, 0)"),
            // A filter, a join, a subquery, a column more or less.
            ("FROM users;", "FROM users WHERE (users.id > 0);"),
            ("FROM users;", "FROM users, other;"),
            (
                "NULL::text AS tok",
                "(SELECT users.email FROM users LIMIT 1) AS tok",
            ),
            ("    users.\"Name\",\n", ""),
            ("users.\"Name\"", "users.name"),
            // A quoted name where a literal belongs.
            (
                "ELSE '****'::text\n        END AS n",
                "ELSE \"'****'\"\n        END AS n",
            ),
            // Another grouping of the same operators.
            (
                "((\"left\"(users.card, 0) || '****'::text) || \"right\"(users.card, 4))",
                "(\"left\"(users.card, 0) || ('****'::text || \"right\"(users.card, 4)))",
            ),
            // A limit, an order.
            ("FROM users;", "FROM users LIMIT 1;"),
        ] {
            assert!(PRINTED.contains(from), "{from}");
            let changed = PRINTED.replace(from, to);
            assert!(!same_view(&changed, EXPECTED), "{to}");
        }
        assert!(!same_view("not sql", EXPECTED));
    }
}
