//! Data protection on PostgreSQL (docs/data-protection.md, "How it is enforced"): the database
//! refuses. A run on a database with policies runs as a role verified ([`super::verify`]) to be
//! unable to read any protected column, so whatever form a statement takes, PostgreSQL's own
//! privilege checks refuse what it may not read. Masked columns are read through the role's
//! masking views, first on its `search_path`. Here, each result column's origin (the table and
//! column the row description names) says how it is written: a masking view's masked column is
//! typed `masked`; a protected column of a table (which the verified role can't read, so this
//! is a second wall) is hidden or masked.

use std::collections::BTreeMap;

use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

use super::verify::Kept;
use super::{Session, database_error};
use crate::model::ColumnAction;
use crate::run::RunError;
use crate::run::protect::Treatment;

/// The columns of the relations a result's columns come from.
const ORIGINS: &str = "\
SELECT a.attrelid, a.attnum, n.nspname::text, c.relname::text, a.attname::text
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attrelid = ANY($1) AND a.attnum > 0";

/// What happens to each column of `statement` under what the session verified (`kept`: the
/// protection as the catalog has it, and its masking views, by oid: the table each masks).
pub(super) async fn treatments(
    session: &mut Session,
    statement: &Statement,
    kept: &Kept,
) -> Result<Vec<Treatment>, RunError> {
    let (protection, masks) = (&kept.effective, &kept.masks);
    let oids: Vec<u32> = statement
        .columns()
        .iter()
        .filter_map(|c| c.table_oid())
        .filter(|oid| *oid != 0)
        .collect();
    let mut origins: BTreeMap<(u32, i16), (String, String, String)> = BTreeMap::new();
    if !oids.is_empty() {
        let prepared = session
            .prepare(ORIGINS)
            .await
            .map_err(|e| database_error(&e))?;
        let params: [&(dyn ToSql + Sync); 1] = [&oids];
        for row in session
            .client
            .query(&prepared, &params)
            .await
            .map_err(|e| database_error(&e))?
        {
            origins.insert(
                (row.get(0), row.get(1)),
                (row.get(2), row.get(3), row.get(4)),
            );
        }
    }
    Ok(statement
        .columns()
        .iter()
        .map(|column| {
            let Some((oid, (schema, table, name))) = column
                .table_oid()
                .zip(column.column_id())
                .and_then(|key| origins.get(&key).map(|origin| (key.0, origin)))
            else {
                return Treatment::Show;
            };
            match masks.get(&oid) {
                // A masking view's masked column holds its mask's text already.
                Some((schema, table)) => {
                    protection
                        .find(schema, table, name)
                        .map_or(Treatment::Show, |p| match p.action {
                            ColumnAction::Mask => Treatment::Masked,
                            ColumnAction::Hide => Treatment::Hide,
                        })
                }
                None => protection
                    .find(schema, table, name)
                    .map_or(Treatment::Show, |p| Treatment::from(p.action)),
            }
        })
        .collect())
}
