//! The check of a PostgreSQL plan (`EXPLAIN (VERBOSE, FORMAT JSON)`) against the protected
//! columns (docs/data-protection.md, "Data protection"). The planner has resolved every name (views expanded,
//! `search_path` applied, `*` spelled out), so what each node reads is in its expressions,
//! qualified by the alias of the relation it comes from:
//!
//! - every scan of a protected relation (or of a partition or child of one) is found by its
//!   schema and name;
//! - a protected column may appear only as itself in an `Output` list, and only flow upward
//!   through nodes that name what they pass on (joins, sorts, limits…); used in any other
//!   expression (a function, an operator, an aggregate, a window, a filter, a join or sort key),
//!   passed through a node that passes columns by position (a subquery scan, a set operation, a
//!   CTE or sub-plan value), or read as a whole row, it is refused;
//! - the relations of PostgreSQL's statistics (which hold sample values) are refused.
//!
//! What is left (the functions and operators the plan calls, the columns of the result) is
//! checked by the runner against the catalog.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{ProtectedColumn, Protection, Refused};

/// Keys of a plan node that are not expressions.
const METADATA: &[&str] = &[
    "Node Type",
    "Parent Relationship",
    "Parallel Aware",
    "Async Capable",
    "Relation Name",
    "Schema",
    "Alias",
    "Startup Cost",
    "Total Cost",
    "Plan Rows",
    "Plan Width",
    "Strategy",
    "Partial Mode",
    "Join Type",
    "Inner Unique",
    "Index Name",
    "Scan Direction",
    "Subplan Name",
    "CTE Name",
    "Operation",
    "Sort Method",
    "Command",
    "Workers Planned",
    "Single Copy",
    "Function Name",
    "Custom Plan Provider",
    "Conflict Resolution",
    "Tuplestore Name",
    "Sampling Method",
    "Cache Mode",
    "Plans",
];

/// Nodes whose expressions name every column they pass on, by its relation's alias: a
/// protected column can be followed through them.
const NAMING: &[&str] = &[
    "Nested Loop",
    "Hash Join",
    "Merge Join",
    "Hash",
    "Materialize",
    "Memoize",
    "Sort",
    "Incremental Sort",
    "Limit",
    "Gather",
    "Gather Merge",
    "Result",
    "LockRows",
    "Aggregate",
    "Group",
    "WindowAgg",
    "Unique",
    "ProjectSet",
];

/// Nodes whose every expression EXPLAIN prints. Any other node (a `Values Scan`, whose lists
/// it doesn't print; a `Foreign Scan`, a `Custom Scan`…) could hide a use of a protected
/// column, so a plan that reads one refuses them.
const PRINTED: &[&str] = &[
    "Seq Scan",
    "Index Scan",
    "Index Only Scan",
    "Bitmap Heap Scan",
    "Bitmap Index Scan",
    "BitmapAnd",
    "BitmapOr",
    "Tid Scan",
    "Tid Range Scan",
    "Function Scan",
    "Subquery Scan",
    "CTE Scan",
    "WorkTable Scan",
    "Append",
    "Merge Append",
    "Recursive Union",
    "SetOp",
    "ModifyTable",
];

/// Relations whose rows hold sample values of other relations' columns.
const STATISTICS: &[&str] = &["pg_statistic", "pg_statistic_ext", "pg_statistic_ext_data"];

/// Built-in functions that run SQL given as text, where the plan can't see what it reads.
pub const SQL_RUNNING_FUNCTIONS: &[&str] = &[
    "ts_stat",
    "ts_rewrite",
    "query_to_xml",
    "query_to_xmlschema",
    "query_to_xml_and_xmlschema",
    "cursor_to_xml",
    "cursor_to_xmlschema",
    "table_to_xml",
    "table_to_xmlschema",
    "table_to_xml_and_xmlschema",
    "schema_to_xml",
    "schema_to_xmlschema",
    "schema_to_xml_and_xmlschema",
    "database_to_xml",
    "database_to_xmlschema",
    "database_to_xml_and_xmlschema",
];

/// The relations a plan scans, as `(schema, name)`.
pub fn relations(explain: &Value) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for node in nodes(explain) {
        if let (Some(schema), Some(name)) = (text(node, "Schema"), text(node, "Relation Name")) {
            found.insert((schema.to_owned(), name.to_owned()));
        }
    }
    found
}

/// What the check leaves to the runner.
#[derive(Debug, Default)]
pub struct PlanFacts {
    /// For each output of the plan's top node, in order: the protected column it is, as
    /// itself, when it is one.
    pub outputs: Vec<Option<ProtectedColumn>>,
}

/// What a plan calls, to be looked up in the catalog.
#[derive(Debug, Default)]
pub struct PlanCalls {
    /// Every name the plan calls as a function.
    pub functions: BTreeSet<String>,
    /// Every operator the plan uses.
    pub operators: BTreeSet<String>,
}

/// The functions and operators `explain` calls.
pub fn calls(explain: &Value) -> PlanCalls {
    let mut calls = PlanCalls::default();
    for node in nodes(explain) {
        if let Some(function) = text(node, "Function Name") {
            calls.functions.insert(function.to_ascii_lowercase());
        }
        for (_, expression) in expressions(node) {
            collect_calls(&tokens(expression), &mut calls);
        }
    }
    calls
}

/// The indexes a plan scans in their order, as `(schema, index name)`.
pub fn ordered_indexes(explain: &Value) -> BTreeSet<(String, String)> {
    nodes(explain)
        .into_iter()
        .filter(|node| {
            matches!(
                text(node, "Node Type"),
                Some("Index Scan" | "Index Only Scan")
            )
        })
        .filter_map(|node| {
            Some((
                text(node, "Schema")?.to_owned(),
                text(node, "Index Name")?.to_owned(),
            ))
        })
        .collect()
}

/// What the catalog says of the relations and indexes a plan reads.
#[derive(Debug, Default)]
pub struct Catalog {
    /// For a scanned relation, the relations it is a partition or child of (their protected
    /// columns are its own).
    pub ancestors: BTreeMap<(String, String), Vec<(String, String)>>,
    /// For an index scanned in its order, `(schema, index)`: its columns, `None` for an
    /// expression.
    pub index_columns: BTreeMap<(String, String), Vec<Option<String>>>,
}

/// Checks `explain` against `protection`, with what `catalog` says of what it reads.
pub fn check(
    explain: &Value,
    protection: &Protection,
    catalog: &Catalog,
) -> Result<PlanFacts, Refused> {
    let ancestors = &catalog.ancestors;
    let root = explain
        .get(0)
        .and_then(|first| first.get("Plan"))
        .ok_or_else(|| Refused::undecided(protection, "the plan could not be read"))?;
    // The protected relations the plan scans: alias → its protected columns.
    let mut scopes: Vec<Scope> = Vec::new();
    for node in nodes(explain) {
        let (Some(schema), Some(name)) = (text(node, "Schema"), text(node, "Relation Name")) else {
            continue;
        };
        if schema == "pg_catalog" && STATISTICS.contains(&name) {
            return Err(Refused::undecided(
                protection,
                format!("it reads {name}, which holds sample values of every column"),
            ));
        }
        let mut family = vec![(schema.to_owned(), name.to_owned())];
        if let Some(up) = ancestors.get(&(schema.to_owned(), name.to_owned())) {
            family.extend(up.iter().cloned());
        }
        let columns: Vec<ProtectedColumn> = protection
            .columns
            .iter()
            .filter(|c| family.iter().any(|(s, t)| c.protects_table(s, t)))
            .cloned()
            .collect();
        if columns.is_empty() {
            continue;
        }
        let node_type = text(node, "Node Type").unwrap_or_default();
        if node_type == "ModifyTable" {
            return Err(Refused::of(
                &columns[0],
                "it writes to a protected table, whose errors and conflicts can quote its rows",
            ));
        }
        if let Some(index) = text(node, "Index Name")
            && matches!(node_type, "Index Scan" | "Index Only Scan")
        {
            let indexed = catalog
                .index_columns
                .get(&(schema.to_owned(), index.to_owned()));
            let ordered_by_protected = indexed.is_none_or(|indexed| {
                indexed.iter().any(|column| {
                    column.as_deref().is_none_or(|column| {
                        columns
                            .iter()
                            .any(|c| c.column.eq_ignore_ascii_case(column))
                    })
                })
            });
            if ordered_by_protected {
                return Err(Refused::of(
                    &columns[0],
                    format!(
                        "it reads the table in the order of the index {index}, which holds a \
                         protected column (or an expression), and that order reveals its values"
                    ),
                ));
            }
        }
        scopes.push(Scope {
            alias: text(node, "Alias").unwrap_or(name).to_owned(),
            columns,
        });
    }
    if let Some(scope) = scopes.first()
        && let Some(hidden) = nodes(explain).into_iter().find_map(|node| {
            text(node, "Node Type").filter(|t| !PRINTED.contains(t) && !NAMING.contains(t))
        })
    {
        return Err(Refused::of(
            &scope.columns[0],
            format!(
                "the plan holds a {hidden}, whose expressions PostgreSQL doesn't show, beside a \
                 protected table; the check can't decide"
            ),
        ));
    }
    let mut facts = PlanFacts::default();
    walk(root, &scopes)?;
    let outputs = root
        .get("Output")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for output in outputs {
        let plain = output
            .as_str()
            .and_then(|expression| plain_reference(&tokens(expression), &scopes));
        facts.outputs.push(plain);
    }
    Ok(facts)
}

/// A protected relation as the plan names it.
struct Scope {
    alias: String,
    columns: Vec<ProtectedColumn>,
}

/// Checks `node` and its children; whether `node` passes a protected column on (as itself,
/// in its `Output`).
fn walk(node: &Value, scopes: &[Scope]) -> Result<bool, Refused> {
    let node_type = text(node, "Node Type").unwrap_or_default();
    let mut carries = false;
    for (key, expression) in expressions(node) {
        let tokens = tokens(expression);
        let found = references(&tokens, scopes);
        let Some(first) = found.first() else {
            continue;
        };
        match first {
            Reference::WholeRow(column) => {
                return Err(Refused::of(
                    column,
                    "it reads the whole row of a protected table (as a record or JSON), \
                     which can't be masked",
                ));
            }
            Reference::Column(column) if key != "Output" => {
                return Err(Refused::of(column, use_of(key)));
            }
            Reference::Column(column) => {
                if plain_reference(&tokens, scopes).is_none() {
                    return Err(Refused::of(
                        column,
                        "it derives a value from the column (an expression, a function, an \
                         aggregate or a window), which can't be masked; select the column \
                         itself",
                    ));
                }
                carries = true;
            }
        }
    }
    for child in node
        .get("Plans")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let relationship = text(child, "Parent Relationship").unwrap_or_default();
        if walk(child, scopes)? {
            let carried = carried_column(child, scopes);
            if matches!(relationship, "InitPlan" | "SubPlan") {
                return Err(Refused::of(
                    &carried,
                    "it uses the column as the value of a subquery, where it can't be masked",
                ));
            }
            if !NAMING.contains(&node_type) {
                return Err(Refused::of(
                    &carried,
                    format!(
                        "it passes the column through a {node_type} (a subquery, a set \
                         operation or a CTE), where where it came from is lost"
                    ),
                ));
            }
        }
    }
    Ok(carries)
}

/// The first protected column `node` passes on (it passes one).
fn carried_column(node: &Value, scopes: &[Scope]) -> ProtectedColumn {
    node.get("Output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find_map(|expression| plain_reference(&tokens(expression), scopes))
        .unwrap_or_else(|| scopes[0].columns[0].clone())
}

/// What using a protected column in the expression under `key` does.
fn use_of(key: &str) -> String {
    match key {
        "Filter" | "Join Filter" | "Index Cond" | "Recheck Cond" | "Hash Cond" | "Merge Cond"
        | "TID Cond" | "One-Time Filter" | "Run Condition" => {
            "it filters or joins on the column, which reveals its values".to_owned()
        }
        "Sort Key" | "Presorted Key" => {
            "it sorts by the column, which reveals its order".to_owned()
        }
        "Group Key" => "it groups by the column, which reveals its values".to_owned(),
        other => format!("it uses the column in {other}, where it can't be masked"),
    }
}

/// A reference to a protected column found in an expression.
enum Reference<'a> {
    /// `alias.column`, or the column's name alone.
    Column(&'a ProtectedColumn),
    /// `alias.*`, or a protected relation's alias alone (a whole-row value).
    WholeRow(&'a ProtectedColumn),
}

/// Every reference to a protected column of `scopes` in `tokens`.
fn references<'a>(tokens: &[Token], scopes: &'a [Scope]) -> Vec<Reference<'a>> {
    let mut found = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let Token::Ident(name) = token else { continue };
        let before_dot = i > 0 && tokens[i - 1] == Token::Dot;
        let next = tokens.get(i + 1);
        let after = tokens.get(i + 2);
        if before_dot {
            continue;
        }
        match (next, after) {
            (Some(Token::Dot), Some(Token::Ident(column))) => {
                for scope in scopes.iter().filter(|s| s.alias.eq_ignore_ascii_case(name)) {
                    if let Some(c) = scope
                        .columns
                        .iter()
                        .find(|c| c.column.eq_ignore_ascii_case(column))
                    {
                        found.push(Reference::Column(c));
                    }
                }
            }
            (Some(Token::Dot), Some(Token::Star)) => {
                if let Some(scope) = scopes.iter().find(|s| s.alias.eq_ignore_ascii_case(name)) {
                    found.push(Reference::WholeRow(&scope.columns[0]));
                }
            }
            (Some(Token::LParen), _) => {}
            _ => {
                for scope in scopes {
                    if scope.alias.eq_ignore_ascii_case(name) {
                        found.push(Reference::WholeRow(&scope.columns[0]));
                    }
                    if let Some(c) = scope
                        .columns
                        .iter()
                        .find(|c| c.column.eq_ignore_ascii_case(name))
                    {
                        found.push(Reference::Column(c));
                    }
                }
            }
        }
    }
    // A whole row first: it is the worse use.
    found.sort_by_key(|r| matches!(r, Reference::Column(_)));
    found
}

/// The protected column `tokens` is, when it is exactly one (`alias.column` or `column`).
fn plain_reference(tokens: &[Token], scopes: &[Scope]) -> Option<ProtectedColumn> {
    let (alias, column) = match tokens {
        [Token::Ident(column)] => (None, column),
        [Token::Ident(alias), Token::Dot, Token::Ident(column)] => (Some(alias), column),
        _ => return None,
    };
    scopes
        .iter()
        .filter(|s| alias.is_none_or(|a| s.alias.eq_ignore_ascii_case(a)))
        .find_map(|s| {
            s.columns
                .iter()
                .find(|c| c.column.eq_ignore_ascii_case(column))
                .cloned()
        })
}

/// Records the functions and operators `tokens` call.
fn collect_calls(tokens: &[Token], facts: &mut PlanCalls) {
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Ident(name) if tokens.get(i + 1) == Some(&Token::LParen) => {
                facts.functions.insert(name.to_ascii_lowercase());
            }
            Token::Operator(op) => {
                facts.operators.insert(op.clone());
            }
            _ => {}
        }
    }
}

/// A token of a deparsed expression.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// A name, unquoted or `"quoted"` (without its quotes).
    Ident(String),
    Dot,
    Star,
    LParen,
    /// An operator (`=`, `~~`, `||`, `OPERATOR(…)` parts…).
    Operator(String),
    /// A literal, a number, a `::` cast, punctuation: nothing that names a column.
    Other,
}

/// The tokens of a deparsed expression; string literals are skipped whole.
fn tokens(expression: &str) -> Vec<Token> {
    let chars: Vec<char> = expression.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                // A literal: quoted as a name is, skipped whole.
                let (_, next) = super::quoted_name(&chars, i, '\'');
                i = next;
                out.push(Token::Other);
            }
            '"' => {
                let (name, next) = super::quoted_name(&chars, i, '"');
                i = next;
                out.push(Token::Ident(name));
            }
            '.' => {
                out.push(Token::Dot);
                i += 1;
            }
            '*' if !is_operator_char(chars.get(i + 1).copied().unwrap_or(' ')) => {
                out.push(Token::Star);
                i += 1;
            }
            '(' => {
                out.push(Token::LParen);
                i += 1;
            }
            ':' if chars.get(i + 1) == Some(&':') => {
                // A cast. Its type name is read as names like any other: a column named like
                // a type refuses more, never less.
                i += 2;
                out.push(Token::Other);
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
                {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                out.push(Token::Other);
            }
            c if is_operator_char(c) => {
                let start = i;
                while i < chars.len() && is_operator_char(chars[i]) {
                    i += 1;
                }
                out.push(Token::Operator(chars[start..i].iter().collect()));
            }
            _ => {
                if !c.is_whitespace() {
                    out.push(Token::Other);
                }
                i += 1;
            }
        }
    }
    out
}

fn is_operator_char(c: char) -> bool {
    "+-*/<>=~!@#%^&|`?".contains(c)
}

/// Every expression of a plan node, with its key: every string, and every string of a list,
/// under a key that is not [`METADATA`].
fn expressions(node: &Value) -> impl Iterator<Item = (&str, &str)> {
    /// Every string inside `value`, however deep (`Grouping Sets` nest objects and lists).
    fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::String(text) => out.push(text),
            Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
            Value::Object(members) => members.values().for_each(|member| strings(member, out)),
            _ => {}
        }
    }
    node.as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| !METADATA.contains(&key.as_str()))
        .flat_map(|(key, value)| {
            let mut items = Vec::new();
            strings(value, &mut items);
            items.into_iter().map(move |item| (key.as_str(), item))
        })
}

/// Every node of a plan, depth first.
fn nodes(explain: &Value) -> Vec<&Value> {
    fn visit<'a>(node: &'a Value, out: &mut Vec<&'a Value>) {
        out.push(node);
        for child in node
            .get("Plans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            visit(child, out);
        }
    }
    let mut out = Vec::new();
    if let Some(root) = explain.get(0).and_then(|first| first.get("Plan")) {
        visit(root, &mut out);
    }
    out
}

fn text<'a>(node: &'a Value, key: &str) -> Option<&'a str> {
    node.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn protection() -> Protection {
        super::super::users_email_masked()
    }

    fn scan(alias: &str, output: &[&str], extra: Value) -> Value {
        let mut node = json!({
            "Node Type": "Seq Scan", "Relation Name": "users", "Schema": "public",
            "Alias": alias, "Output": output,
        });
        for (k, v) in extra.as_object().unwrap() {
            node[k] = v.clone();
        }
        node
    }

    fn plan(root: Value) -> Value {
        json!([{ "Plan": root }])
    }

    fn checked(root: Value) -> Result<PlanFacts, Refused> {
        check(&plan(root), &protection(), &Catalog::default())
    }

    #[test]
    fn the_column_as_itself_passes_and_is_found_in_the_outputs() {
        let facts = checked(scan("u", &["u.id", "u.email"], json!({}))).unwrap();
        assert!(facts.outputs[0].is_none());
        assert_eq!(facts.outputs[1].as_ref().unwrap().column, "email");
        let sorted = json!({"Node Type": "Limit", "Output": ["users.email"], "Plans": [
            scan("users", &["users.email", "users.id"], json!({"Parent Relationship": "Outer"}))
        ]});
        assert!(checked(sorted).is_ok());
    }

    #[test]
    fn derived_values_filters_keys_and_whole_rows_are_refused() {
        for (root, says) in [
            (scan("u", &["upper(u.email)"], json!({})), "derives"),
            (
                scan("u", &["u.id"], json!({"Filter": "(u.email ~~ 'a%'::text)"})),
                "filters",
            ),
            (scan("u", &["row_to_json(u.*)"], json!({})), "whole row"),
            (
                scan("u", &["(u.email)::character varying"], json!({})),
                "derives",
            ),
            (
                json!({"Node Type": "Aggregate", "Output": ["string_agg(email, ','::text)"],
                       "Plans": [scan("users", &["id", "email"], json!({"Parent Relationship": "Outer"}))]}),
                "derives",
            ),
            (
                json!({"Node Type": "Sort", "Output": ["u.id"], "Sort Key": ["u.email"],
                       "Plans": [scan("u", &["u.id", "u.email"], json!({"Parent Relationship": "Outer"}))]}),
                "sorts",
            ),
            (
                json!({"Node Type": "Append", "Output": ["users.email"],
                       "Plans": [scan("users", &["users.email"], json!({"Parent Relationship": "Member"}))]}),
                "Append",
            ),
            (
                json!({"Node Type": "Result", "Output": ["$0"],
                       "Plans": [scan("users", &["users.email"], json!({"Parent Relationship": "InitPlan"}))]}),
                "subquery",
            ),
        ] {
            let refused = checked(root).expect_err(says);
            assert!(refused.to_string().contains(says), "{refused}");
            assert_eq!(refused.policy, "pii");
            assert_eq!(refused.column, "users.email");
        }
    }

    #[test]
    fn opaque_nodes_writes_ordered_indexes_and_nested_keys_are_refused() {
        let values = json!({"Node Type": "Nested Loop", "Output": ["\"*VALUES*\".column1"],
            "Plans": [scan("u", &["u.email"], json!({"Parent Relationship": "Outer"})),
                      {"Node Type": "Values Scan", "Parent Relationship": "Inner",
                       "Alias": "*VALUES*", "Output": ["\"*VALUES*\".column1"]}]});
        assert!(
            checked(values)
                .unwrap_err()
                .to_string()
                .contains("Values Scan")
        );
        let write = json!({"Node Type": "ModifyTable", "Operation": "Update",
            "Relation Name": "users", "Schema": "public", "Alias": "users",
            "Plans": [scan("users", &["NULL::integer", "users.ctid"], json!({"Parent Relationship": "Outer"}))]});
        assert!(checked(write).unwrap_err().to_string().contains("writes"));
        let grouping = json!({"Node Type": "Aggregate", "Output": ["count(*)"],
            "Grouping Sets": [{"Hash Keys": [["users.email"]]}],
            "Plans": [scan("users", &["users.email"], json!({"Parent Relationship": "Outer"}))]});
        assert!(checked(grouping).is_err());
        let cast = scan(
            "u",
            &["CASE WHEN (u.id < 0) THEN 'x'::text ELSE u.email END"],
            json!({}),
        );
        assert!(checked(cast).unwrap_err().to_string().contains("derives"));
        let ordered = json!({"Node Type": "Index Scan", "Relation Name": "users",
            "Schema": "public", "Alias": "users", "Index Name": "users_email_idx",
            "Output": ["users.id"]});
        let catalog = |column: Option<&str>| Catalog {
            ancestors: BTreeMap::new(),
            index_columns: BTreeMap::from([(
                ("public".to_owned(), "users_email_idx".to_owned()),
                vec![column.map(str::to_owned)],
            )]),
        };
        for column in [Some("email"), None] {
            let refused = check(&plan(ordered.clone()), &protection(), &catalog(column));
            assert!(
                refused
                    .unwrap_err()
                    .to_string()
                    .contains("order of the index")
            );
        }
        assert!(check(&plan(ordered), &protection(), &catalog(Some("id"))).is_ok());
    }

    #[test]
    fn literals_and_other_relations_do_not_count() {
        let other = json!({"Node Type": "Seq Scan", "Relation Name": "orders", "Schema": "public",
            "Alias": "o", "Output": ["upper(o.email)"], "Filter": "(o.note = 'users.email'::text)"});
        assert!(checked(other).is_ok());
        let literal = scan(
            "u",
            &["u.id"],
            json!({"Filter": "(u.id = ANY ('{email}'::text[]))"}),
        );
        assert!(checked(literal).is_ok());
        let counted = scan("u", &["count(*)", "u.id"], json!({}));
        assert!(checked(counted).is_ok());
    }

    #[test]
    fn statistics_and_partitions_are_seen() {
        let stats = json!({"Node Type": "Seq Scan", "Relation Name": "pg_statistic",
            "Schema": "pg_catalog", "Alias": "s", "Output": ["s.stavalues1"]});
        assert!(checked(stats).is_err());
        let partition = json!({"Node Type": "Seq Scan", "Relation Name": "users_2024",
            "Schema": "public", "Alias": "users", "Output": ["lower(users.email)"]});
        let catalog = Catalog {
            ancestors: BTreeMap::from([(
                ("public".to_owned(), "users_2024".to_owned()),
                vec![("public".to_owned(), "users".to_owned())],
            )]),
            index_columns: BTreeMap::new(),
        };
        assert!(check(&plan(partition.clone()), &protection(), &catalog).is_err());
        assert!(check(&plan(partition), &protection(), &Catalog::default()).is_ok());
    }

    #[test]
    fn functions_and_operators_are_collected() {
        let facts = calls(&plan(scan(
            "u",
            &["leak(u.id)", "public.other(u.id, 'x(y)')"],
            json!({"Filter": "(u.id OPERATOR(public.===) 1)"}),
        )));
        assert!(facts.functions.contains("leak"));
        assert!(facts.functions.contains("other"));
        assert!(!facts.functions.contains("x"));
        assert!(facts.operators.contains("==="));
    }
}
