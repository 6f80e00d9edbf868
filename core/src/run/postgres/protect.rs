//! Data protection on PostgreSQL (docs/data-protection.md, "Data protection"): before a statement runs on a
//! database with policies, its plan is read (`EXPLAIN (VERBOSE, FORMAT JSON)`, which runs
//! nothing) and checked ([`crate::run::protect::plan`]); the functions, operators and casts
//! it may call are looked up in the catalog; and each result column's origin (the table and
//! column the row description names) decides whether it is shown, hidden or masked. Any doubt
//! refuses the statement.

use std::collections::BTreeMap;

use tokio_postgres::Statement;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use super::{Raw, Session, TextParam, database_error};
use crate::run::RunError;
use crate::run::protect::plan::{self, SQL_RUNNING_FUNCTIONS};
use crate::run::protect::{Protection, Refused, Treatment};

/// For each scanned relation (schema, name), every relation it is a partition or child of.
const ANCESTORS: &str = "\
WITH RECURSIVE rel AS (
  SELECT c.oid, s.nsp, s.name
  FROM unnest($1::text[], $2::text[]) AS s(nsp, name)
  JOIN pg_namespace n ON n.nspname = s.nsp
  JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.name
), up AS (
  SELECT rel.nsp, rel.name, i.inhparent AS parent
  FROM rel JOIN pg_inherits i ON i.inhrelid = rel.oid
  UNION
  SELECT up.nsp, up.name, i.inhparent FROM up JOIN pg_inherits i ON i.inhrelid = up.parent
)
SELECT up.nsp, up.name, pn.nspname::text, pc.relname::text
FROM up JOIN pg_class pc ON pc.oid = up.parent JOIN pg_namespace pn ON pn.oid = pc.relnamespace";

/// The first thing defined in the database that the statement may call where the plan can't
/// show what it reads: a function or operator it names, an immutable function (PostgreSQL may
/// run it while planning), a cast through a function. What a database defines has an oid from
/// 16384 on (`FirstNormalObjectId`); the built-ins, `information_schema` included, are below,
/// so each part reads an index range, not the catalog.
const CALLS: &str = "\
SELECT what FROM (
  SELECT format('function %s', p.oid::regproc) AS what
  FROM pg_proc p WHERE p.oid >= 16384 AND p.proname = ANY($1::text[])
  UNION ALL
  SELECT format('function %s, immutable (PostgreSQL may run it while planning)', p.oid::regproc)
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
  WHERE p.oid >= 16384 AND p.provolatile = 'i' AND p.prokind = 'f'
    AND l.lanname NOT IN ('c', 'internal')
  UNION ALL
  SELECT format('operator %s', o.oid::regoperator)
  FROM pg_operator o WHERE o.oid >= 16384 AND o.oprname = ANY($2::text[])
  UNION ALL
  SELECT format('cast through %s', c.castfunc::regprocedure)
  FROM pg_cast c WHERE c.oid >= 16384 AND c.castfunc <> 0
) calls LIMIT 1";

/// The columns of the indexes a plan reads in their order (NULL for an expression).
const INDEX_COLUMNS: &str = "\
SELECT s.nsp, s.name, a.attname::text
FROM unnest($1::text[], $2::text[]) AS s(nsp, name)
JOIN pg_namespace n ON n.nspname = s.nsp
JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.name
JOIN pg_index i ON i.indexrelid = c.oid
CROSS JOIN LATERAL unnest(i.indkey::int2[]) AS k(attnum)
LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0";

/// The columns of the relations a result's columns come from.
const ORIGINS: &str = "\
SELECT a.attrelid, a.attnum, n.nspname::text, c.relname::text, a.attname::text
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attrelid = ANY($1) AND a.attnum > 0";

/// What happens to each column of `statement` (the prepared `text`, with `params`) under
/// `protection`; refused when the statement would read a protected column in a way that can't
/// be masked, or when the check can't decide.
pub(super) async fn treatments(
    session: &mut Session,
    text: &str,
    statement: &Statement,
    params: &[TextParam<'_>],
    protection: &Protection,
) -> Result<Vec<Treatment>, RunError> {
    let refused = |refusal: Refused| RunError::Protected(refusal);
    // Planning runs code: PostgreSQL folds stable functions of constants while it estimates
    // (`table_to_xml('users'::regclass, …)::int` fails quoting the whole table). So a planning
    // error's message is shown only when it can name nothing but the statement's own words
    // (class 42: syntax, names, types); any other is refused without it.
    let unexplained = |error: tokio_postgres::Error| match error.code() {
        Some(code) if *code == SqlState::SYNTAX_ERROR => refused(Refused::undecided(
            protection,
            "the statement is not one PostgreSQL can explain (SHOW, SET, COPY…), so the check \
             can't read it",
        )),
        Some(code) if code.code().starts_with("42") => database_error(&error),
        Some(code) => refused(Refused::undecided(
            protection,
            format!(
                "PostgreSQL could not plan it (SQLSTATE {}); on a database with data \
                 protection policies that message is not shown, as planning may quote table \
                 data",
                code.code()
            ),
        )),
        None => refused(Refused::undecided(
            protection,
            "PostgreSQL could not plan it; on a database with data protection policies the \
             reason is not shown",
        )),
    };
    // One round trip: the plan, with the statement's parameters as it will run.
    let typed: Vec<(&(dyn ToSql + Sync), tokio_postgres::types::Type)> = params
        .iter()
        .zip(statement.params())
        .map(|(p, ty)| (p as &(dyn ToSql + Sync), ty.clone()))
        .collect();
    let rows = session
        .client
        .query_typed(&format!("EXPLAIN (VERBOSE, FORMAT JSON) {text}"), &typed)
        .await
        .map_err(unexplained)?;
    let found = rows
        .first()
        .and_then(|row| row.try_get::<_, Raw<'_>>(0).ok())
        .and_then(|Raw(raw)| raw)
        .and_then(|raw| serde_json::from_slice::<serde_json::Value>(raw).ok());
    let Some(explained) = found else {
        return Err(refused(Refused::undecided(
            protection,
            "PostgreSQL's plan of the statement could not be read",
        )));
    };

    // One more: the catalog's answers, pipelined (statements kept prepared per session).
    let (schemas, names): (Vec<String>, Vec<String>) =
        plan::relations(&explained).into_iter().unzip();
    let calls = plan::calls(&explained);
    if let Some(function) = calls
        .functions
        .iter()
        .find(|f| SQL_RUNNING_FUNCTIONS.contains(&f.as_str()))
    {
        return Err(refused(Refused::undecided(
            protection,
            format!("it calls {function}, which runs SQL given as text that the check can't see"),
        )));
    }
    let functions: Vec<&String> = calls.functions.iter().collect();
    let operators: Vec<&String> = calls.operators.iter().collect();
    let oids: Vec<u32> = statement
        .columns()
        .iter()
        .filter_map(|c| c.table_oid())
        .filter(|oid| *oid != 0)
        .collect();
    let (index_schemas, index_names): (Vec<String>, Vec<String>) =
        plan::ordered_indexes(&explained).into_iter().unzip();
    let ancestors_statement = session.prepare(ANCESTORS).await?;
    let calls_statement = session.prepare(CALLS).await?;
    let origins_statement = session.prepare(ORIGINS).await?;
    let indexes_statement = session.prepare(INDEX_COLUMNS).await?;
    let client = &session.client;
    let ancestor_params: [&(dyn ToSql + Sync); 2] = [&schemas, &names];
    let call_params: [&(dyn ToSql + Sync); 2] = [&functions, &operators];
    let origin_params: [&(dyn ToSql + Sync); 1] = [&oids];
    let index_params: [&(dyn ToSql + Sync); 2] = [&index_schemas, &index_names];
    let (ancestor_rows, call_rows, origin_rows, index_rows) = tokio::join!(
        client.query(&ancestors_statement, &ancestor_params),
        client.query(&calls_statement, &call_params),
        client.query(&origins_statement, &origin_params),
        client.query(&indexes_statement, &index_params),
    );
    let mut catalog = plan::Catalog::default();
    for row in ancestor_rows.map_err(|e| database_error(&e))? {
        catalog
            .ancestors
            .entry((row.get(0), row.get(1)))
            .or_default()
            .push((row.get(2), row.get(3)));
    }
    for row in index_rows.map_err(|e| database_error(&e))? {
        catalog
            .index_columns
            .entry((row.get(0), row.get(1)))
            .or_default()
            .push(row.get(2));
    }
    let ancestors = &catalog.ancestors;
    if let Some(row) = call_rows.map_err(|e| database_error(&e))?.first() {
        let what: String = row.get(0);
        return Err(refused(Refused::undecided(
            protection,
            format!(
                "the statement may call {what}, defined in the database: the check can't see \
                 what it reads"
            ),
        )));
    }
    let mut origins: BTreeMap<(u32, i16), (String, String, String)> = BTreeMap::new();
    for row in origin_rows.map_err(|e| database_error(&e))? {
        origins.insert(
            (row.get(0), row.get(1)),
            (row.get(2), row.get(3), row.get(4)),
        );
    }
    let facts = plan::check(&explained, protection, &catalog).map_err(refused)?;
    // A statement that answers no columns but reads a protected table copies what it reads
    // somewhere the masking never sees (CREATE TABLE … AS, SELECT … INTO, CREATE MATERIALIZED
    // VIEW, INSERT … SELECT): refused.
    if statement.columns().is_empty() {
        let protects = |schema: &String, name: &String| {
            protection.protects_table(schema, name)
                || ancestors
                    .get(&(schema.clone(), name.clone()))
                    .into_iter()
                    .flatten()
                    .any(|(s, t)| protection.protects_table(s, t))
        };
        if let Some((schema, name)) = schemas
            .iter()
            .zip(&names)
            .find(|(schema, name)| protects(schema, name))
        {
            return Err(refused(Refused::undecided(
                protection,
                format!(
                    "it reads protected table {schema}.{name} and answers no result (CREATE \
                     TABLE … AS, SELECT … INTO, INSERT … SELECT…): what it copies could not be \
                     masked"
                ),
            )));
        }
    }

    let mut treatments = Vec::with_capacity(statement.columns().len());
    for (i, column) in statement.columns().iter().enumerate() {
        let origin = column
            .table_oid()
            .zip(column.column_id())
            .and_then(|key| origins.get(&key));
        let protected = origin.and_then(|(schema, table, name)| {
            protection.find(schema, table, name).or_else(|| {
                ancestors
                    .get(&(schema.clone(), table.clone()))
                    .into_iter()
                    .flatten()
                    .find_map(|(s, t)| protection.find(s, t, name))
            })
        });
        let itself = facts.outputs.get(i).cloned().flatten();
        treatments.push(Treatment::of(protected, itself).map_err(refused)?);
    }
    Ok(treatments)
}
